/*
 * replay_export_clickhouse_load.c — orbit-replay --clickhouse URL: the
 * loader. Creates the schema when asked (--clickhouse-create), checks that
 * the tables have the columns this orbit-replay writes, then loads each
 * capture file in its own replay run with the ClickHouse exporter
 * (replay_export_clickhouse.c), and says on one line per file what was
 * loaded, what was there already and what was not loaded.
 *
 * Retries: a failure that may pass (the server or a shard unreachable, a
 * timeout, too many parts) is retried after 0.5 s, 1 s, 2 s ... (at most
 * 30 s), --clickhouse-retries times; each attempt reads the file again
 * and loads its streams with fresh load ids, and streams committed by an
 * earlier attempt are found already loaded. When the retries run out the
 * server is taken to be down: the files not yet tried are listed as not
 * loaded, for the next run. Any other failure (ClickHouse refused a batch)
 * skips that file and goes on with the next. Either way what a failed
 * attempt sent has no captures row and counts nowhere.
 *
 * Exit status: 3 when a capture was not loaded, else 2 when an input was
 * damaged or incomplete (loaded as far as it could be read), else 0.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "replay_export_clickhouse.h"

void orbit__rp_ch_defaults(struct orbit_rp_ch_options *c)
{
	memset(c, 0, sizeof *c);
	c->batch_rows = ORBIT_RP_CH_BATCH_DEFAULT;
	c->retries = ORBIT_RP_CH_RETRIES_DEFAULT;
	c->backoff_ms = ORBIT_RP_CH_BACKOFF_MS;
	c->timeout_s = ORBIT_RP_CH_TIMEOUT_S;
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0)
		;
}

struct loader {
	const struct orbit_replay_options *o;
	const struct orbit_rp_ch_options *c;
	struct orbit_rp_ch_http *h;
	FILE *out, *err;
	uint64_t loaded, present, not_loaded;
	int damaged;
	int newer; /* a capture held a stream of a newer protocol (said) */
};

/* The wait before attempt k + 1 (k from 1). */
static uint32_t backoff(const struct loader *L, uint32_t k)
{
	uint64_t ms = L->c->backoff_ms;
	for (uint32_t i = 1; i < k && ms < ORBIT_RP_CH_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms > ORBIT_RP_CH_BACKOFF_MAX_MS ? ORBIT_RP_CH_BACKOFF_MAX_MS : (uint32_t)ms;
}

/* Says that attempt k failed and waits, when another attempt is due. */
static int again(struct loader *L, const char *what, const struct orbit_rp_ch_error *e, uint32_t k)
{
	if (!e->transient || k > L->c->retries)
		return 0;
	uint32_t ms = backoff(L, k);
	fprintf(L->err, "orbit-replay: %s: %s; retrying in %.1f s (attempt %u of %u)\n", what,
	        e->text, ms / 1000.0, k + 1, L->c->retries + 1);
	sleep_ms(ms);
	return 1;
}

static const char *plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

static void say_loaded(struct loader *L, const char *path, const struct orbit_rp_ch_load *l)
{
	fprintf(L->out, "clickhouse: %s: ", path);
	if (l->streams_loaded == 0 && l->streams_present == 0) {
		fprintf(L->out, "nothing loaded: no stream in it could be read\n");
		return;
	}
	if (l->streams_loaded == 0) {
		fprintf(L->out, "already loaded (capture %" PRIu64 "%s)\n", l->first_id,
		        l->streams_present > 1 ? ", ..." : "");
		return;
	}
	const uint64_t *r = l->rows;
	fprintf(L->out,
	        "loaded %" PRIu64 " %s (capture %" PRIu64 "%s): %" PRIu64 " scopes, %" PRIu64
	        " async spans, %" PRIu64 " values, %" PRIu64 " log lines, %" PRIu64
	        " threads in %" PRIu64 " %s",
	        l->streams_loaded, plural(l->streams_loaded, "stream", "streams"), l->first_id,
	        l->streams_loaded + l->streams_present > 1 ? ", ..." : "", r[ORBIT_RP_CH_SCOPES],
	        r[ORBIT_RP_CH_ASYNC], r[ORBIT_RP_CH_VALUES], r[ORBIT_RP_CH_LOGS],
	        r[ORBIT_RP_CH_THREADS], l->batches, plural(l->batches, "insert", "inserts"));
	if (l->streams_present)
		fprintf(L->out, "; %" PRIu64 " %s already loaded", l->streams_present,
		        plural(l->streams_present, "stream", "streams"));
	if (l->streams_incomplete)
		fprintf(L->out, "; %" PRIu64 " without an end of stream (complete = 0)",
		        l->streams_incomplete);
	fputc('\n', L->out);
}

/* Loads one file, with its retries. 0 loaded (or already there), 1 not
 * loaded (go on), -1 not loaded and the server is down (stop). */
static int load_file(struct loader *L, size_t i)
{
	const char *path = L->o->inputs[i];
	for (uint32_t k = 1;; k++) {
		struct orbit_rp_ch_load l = {.opt = L->c, .http = L->h, .file = path};
		struct orbit_rp_ch_options c = *L->c;
		c.load = &l;
		struct orbit_replay_options ro = *L->o;
		ro.inputs = &L->o->inputs[i];
		ro.ninputs = 1;
		ro.quiet = 1;
		ro.exporters = NULL;
		ro.clickhouse = &c;
		int status = orbit__replay_run(&ro);
		if (!l.failed && status == ORBIT_REPLAY_OUTPUT) {
			l.failed = 1;
			snprintf(l.e.text, sizeof l.e.text, "could not be read to the end");
		}
		if (!l.failed) {
			L->damaged |= status == ORBIT_REPLAY_DAMAGED;
			L->newer |= status == ORBIT_REPLAY_NEWER;
			L->loaded += l.streams_loaded;
			L->present += l.streams_present;
			say_loaded(L, path, &l);
			return 0;
		}
		if (again(L, path, &l.e, k))
			continue;
		fprintf(L->err, "orbit-replay: %s: not loaded: %s\n", path, l.e.text);
		return l.e.transient ? -1 : 1;
	}
}

/* The schema check, with retries: the first contact with the server. */
static int check(struct loader *L)
{
	struct orbit_rp_ch_error e = {0};
	for (uint32_t k = 1;; k++) {
		if (orbit__rp_ch_check(L->h, &e) == 0)
			return 0;
		if (!again(L, "checking the schema", &e, k))
			break;
	}
	fprintf(L->err, "orbit-replay: %s\n", e.text);
	return -1;
}

int orbit__replay_clickhouse(const struct orbit_replay_options *o)
{
	struct loader L = {.o = o, .c = o->clickhouse};
	L.out = o->out ? o->out : stdout;
	L.err = o->err ? o->err : stderr;
	struct orbit_rp_ch_error e = {0};
	L.h = orbit__rp_ch_http_new(L.c->url, L.c->timeout_s, &e);
	if (L.h == NULL) {
		fprintf(L.err, "orbit-replay: %s\n", e.text);
		return ORBIT_REPLAY_USAGE;
	}
	int status = ORBIT_REPLAY_OK;
	if (L.c->create) {
		if (orbit__rp_ch_create(L.h, L.c->cluster, &e) != 0) {
			fprintf(L.err, "orbit-replay: cannot create the schema: %s\n", e.text);
			status = ORBIT_REPLAY_OUTPUT;
			goto out;
		}
		const char *db = orbit__rp_ch_http_database(L.h);
		fprintf(L.out, "clickhouse: schema ready in database %s at %s%s%s\n",
		        *db ? db : "default", orbit__rp_ch_http_server(L.h),
		        L.c->cluster ? ", Distributed over cluster " : "",
		        L.c->cluster ? L.c->cluster : "");
	}
	if (o->ninputs == 0)
		goto out;
	size_t i = 0;
	if (check(&L) == 0) {
		for (; i < o->ninputs; i++) {
			int r = load_file(&L, i);
			if (r != 0)
				L.not_loaded++;
			if (r < 0) {
				i++;
				break;
			}
		}
	}
	for (; i < o->ninputs; i++, L.not_loaded++)
		fprintf(L.err,
		        "orbit-replay: %s: not loaded: not tried (ClickHouse at %s failing)\n",
		        o->inputs[i], orbit__rp_ch_http_server(L.h));
	fprintf(L.out,
	        "clickhouse: %zu %s: %" PRIu64 " %s loaded, %" PRIu64 " already loaded, %" PRIu64
	        " %s not loaded\n",
	        o->ninputs, plural(o->ninputs, "capture file", "capture files"), L.loaded,
	        plural(L.loaded, "stream", "streams"), L.present, L.not_loaded,
	        plural(L.not_loaded, "file", "files"));
	status = L.not_loaded ? ORBIT_REPLAY_OUTPUT
	         : L.damaged  ? ORBIT_REPLAY_DAMAGED
	         : L.newer    ? ORBIT_REPLAY_NEWER
	                      : ORBIT_REPLAY_OK;
out:
	orbit__rp_ch_http_free(L.h);
	fflush(L.out);
	return status;
}
