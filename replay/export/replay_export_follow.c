/*
 * replay_export_follow.c — the terminal live view (--follow): about once a
 * second, while a capture is being written and read, a table of the scopes
 * by their total time in the last second, with their count and total and
 * their count, p50 and p99 since the start, under one line of the stream's
 * events so far and per second, its loss so far and its threads. On a
 * terminal the table is redrawn in place; to a pipe or a file each one is
 * printed after the last, under a line starting "--- follow". The ordinary
 * summary follows at the end (docs/replay.md, "Following a capture").
 *
 * "The last second" is what was read in it: the scopes that ended in the
 * stream's newest second or so, as the agent sends a frame about every
 * 100 ms.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"
#include "replay_export.h"

#define DRAW_NS 1000000000ull /* a table this often */
#define NAME_SHOWN 60u

/* One name's scopes since the last table. */
struct recent {
	uint64_t count, total;
};

struct follow {
	struct recent *by_name; /* by name id */
	uint32_t n;
	struct recent other;            /* names past the limit, or out of memory */
	uint64_t last_draw, first_draw; /* CLOCK_MONOTONIC of this process */
	uint64_t records_then;          /* the streams' records at the last table */
	int tty;
	uint64_t tables;
};

static const char *wanted(const struct orbit_replay_options *o)
{
	return o->follow ? "-" : NULL;
}

static int begin(struct orbit_rp_export *x)
{
	struct follow *f = x->state;
	f->tty = x->out->f != NULL && isatty(fileno(x->out->f));
	f->first_draw = f->last_draw = orbit__clock_ns(CLOCK_MONOTONIC);
	return 0;
}

static struct recent *recent_of(struct follow *f, uint32_t id)
{
	if (id == ORBIT_RP_NAME_NONE)
		return &f->other;
	if (id >= f->n) {
		uint32_t n = f->n ? f->n : 64;
		while (n <= id)
			n *= 2;
		struct recent *a = realloc(f->by_name, (size_t)n * sizeof *a);
		if (a == NULL)
			return &f->other;
		memset(a + f->n, 0, (size_t)(n - f->n) * sizeof *a);
		f->by_name = a;
		f->n = n;
	}
	return &f->by_name[id];
}

static void scope(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct recent *r = recent_of(x->state, s->name_id);
	r->count++;
	r->total += s->end > s->start ? s->end - s->start : 0;
}

/* "123 ns", "1.23 us", "12.3 ms", "1.23 s": short, for a terminal. */
static void out_dur(struct orbit_rp_out *o, uint64_t ns)
{
	char b[32];
	if (ns < 1000)
		snprintf(b, sizeof b, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(b, sizeof b, "%.2f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(b, sizeof b, "%.2f ms", (double)ns / 1e6);
	else
		snprintf(b, sizeof b, "%.2f s", (double)ns / 1e9);
	orbit__rp_out_printf(o, " %11s", b);
}

struct row {
	uint32_t id;
	const struct recent *recent;
	const struct orbit_rp_stat *since;
};

static int row_cmp(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	if (a->recent->total != b->recent->total)
		return a->recent->total > b->recent->total ? -1 : 1;
	if (a->since->total != b->since->total)
		return a->since->total > b->since->total ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* The line over the table: the streams' events, loss and threads. */
static void head(struct orbit_rp_export *x, struct follow *f, uint64_t now)
{
	const struct orbit_rp_view *v = x->view;
	uint64_t records = 0, lost = 0;
	unsigned live = 0, ended = 0;
	for (size_t i = 0; i < v->ncaps; i++)
		for (const struct orbit_rp_stream *s = v->caps[i].streams; s != NULL; s = s->next) {
			struct orbit__loss l = orbit__rp_stream_loss(s);
			records += s->records;
			lost += orbit__loss_sum(&l);
			if (s->ended)
				ended++;
			else
				live++;
		}
	double secs = (double)(now - f->last_draw) / 1e9;
	double rate = secs > 0 ? (double)(records - f->records_then) / secs : 0;
	f->records_then = records;
	struct orbit_rp_out *o = x->out;
	if (f->tty)
		orbit__rp_out_s(o, "\033[H\033[J"); /* home, clear below */
	else if (f->tables > 0)
		orbit__rp_out_c(o, '\n');
	orbit__rp_out_printf(o,
	                     "--- follow %s, %.1f s: %" PRIu64 " events (%.0f/s), %" PRIu64
	                     " lost, %" PRIu32 " threads, %u stream%s live, %u ended\n",
	                     v->ncaps ? v->caps[0].path : "-", (double)(now - f->first_draw) / 1e9,
	                     records, rate, lost, v->threads->n, live, live == 1 ? "" : "s", ended);
}

static void draw(struct orbit_rp_export *x, struct follow *f, uint64_t now)
{
	const struct orbit_rp_view *v = x->view;
	const struct orbit_rp_stats *st = v->stats;
	struct orbit_rp_out *o = x->out;
	head(x, f, now);
	uint32_t n = st->nscope;
	struct row *rows = n ? malloc((size_t)n * sizeof *rows) : NULL;
	static const struct recent none = {0, 0};
	size_t k = 0;
	for (uint32_t id = 0; rows != NULL && id < n; id++)
		if (st->scope[id].count > 0)
			rows[k++] =
			    (struct row){id, id < f->n ? &f->by_name[id] : &none, &st->scope[id]};
	if (k > 1)
		qsort(rows, k, sizeof *rows, row_cmp);
	size_t shown = orbit__rp_top(v->o, k);
	orbit__rp_out_printf(o, "%10s %11s %10s %11s %11s %11s  %s\n", "last s", "total", "since",
	                     "total", "p50", "p99", "scope");
	for (size_t i = 0; i < shown; i++) {
		const struct orbit_rp_stat *s = rows[i].since;
		const struct orbit_rp_name *nm = orbit__rp_name(v->names, rows[i].id);
		orbit__rp_out_printf(o, "%10" PRIu64, rows[i].recent->count);
		out_dur(o, rows[i].recent->total);
		orbit__rp_out_printf(o, " %10" PRIu64, s->count);
		out_dur(o, s->total);
		out_dur(o, orbit__rp_hist_pct(&s->hist, 50, s->min, s->max));
		out_dur(o, orbit__rp_hist_pct(&s->hist, 99, s->min, s->max));
		orbit__rp_out_s(o, "  ");
		orbit__rp_out_text(o, nm->bytes, nm->len > NAME_SHOWN ? NAME_SHOWN : nm->len);
		orbit__rp_out_c(o, '\n');
	}
	if (k > shown)
		orbit__rp_out_printf(o, "%10s (%zu more names)\n", "", k - shown);
	free(rows);
	orbit__rp_out_flush(o);
	if (o->f != NULL && fflush(o->f) != 0 && o->err == 0)
		o->err = EIO; /* said when the output is closed */
	if (f->by_name != NULL)
		memset(f->by_name, 0, (size_t)f->n * sizeof *f->by_name);
	f->other = none;
	f->last_draw = now;
	f->tables++;
}

static void tick(struct orbit_rp_export *x)
{
	struct follow *f = x->state;
	uint64_t now = orbit__clock_ns(CLOCK_MONOTONIC);
	if (now - f->last_draw >= DRAW_NS)
		draw(x, f, now);
}

static void end(struct orbit_rp_export *x)
{
	struct follow *f = x->state;
	if (f->tables > 0)
		orbit__rp_out_c(x->out, '\n'); /* the summary below the last table */
}

static void release(struct orbit_rp_export *x)
{
	struct follow *f = x->state;
	free(f->by_name);
}

const struct orbit_rp_exporter orbit__rp_export_follow = {
    .name = "follow",
    .wanted = wanted,
    .needs = ORBIT_RP_NEED_STDOUT,
    .state_size = sizeof(struct follow),
    .begin = begin,
    .scope = scope,
    .tick = tick,
    .end = end,
    .free = release,
};
