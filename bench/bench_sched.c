/* bench_sched.c — orbit-bench-sched: what recording kernel scheduling
 * (agent/src/sched_tracefs.c) costs, per context switch recorded, beside
 * baselines measured in the same run. Root and tracefs needed (prints why
 * and exits 77 otherwise). Prints medians of several runs; never passes or
 * fails.
 *
 * Usage: orbit-bench-sched [runs [round_trips]]   (default 5, 20000)
 *
 * Workload: two threads of this process ping-pong a byte over two pipes;
 * each round trip blocks and wakes both, so the instance records a few
 * sched_switch and sched_waking events per round trip, as fast as the host
 * switches (a stress: hundreds of thousands of events per second). The
 * "agent" is a third thread that, like the agent thread, calls
 * orbit__sched_read every pass and copies each page into a 1 MiB buffer
 * (what the stream writer will do); its CPU time (CLOCK_THREAD_CPUTIME_ID)
 * over the run, divided by the events the kernel handed it (per_cpu/cpuN/
 * stats "read events"), is the cost per event recorded.
 *
 * Two settings: "1 ms, 4 MiB" (passes every 1 ms, 4 MiB per CPU: nothing
 * lost, so every event is paid for) and the defaults "10 ms, 256 KiB"
 * (ORBIT_DRAIN_MS's default and ORBIT__SCHED_DEFAULT_BUFFER_KB), whose loss
 * at this rate is printed.
 *
 * Rows:
 *   ping-pong, not recorded     round trip, the same agent passes but no
 *                               instance (the baseline: a thread waking
 *                               every pass changes how fast an idle VM
 *                               wakes, so it is part of both)
 *   ping-pong, recorded         round trip with the instance on: the
 *                               kernel's tracing cost lands on the threads
 *   events per round trip       read by the agent (lost ones not counted)
 *   agent: read + copy          the reading thread's CPU per event, per page
 *   events lost                 overrun + dropped, as a share of all
 *   agent: idle pass            a pass over empty buffers (EAGAIN per CPU),
 *                               what recording costs a process that does
 *                               not switch
 *   open / close                creating and removing the instance
 *   replay: decode + states     orbit-replay's side, on the last run's pages
 *                               of the first setting: decoding them
 *                               (replay_sched_decode.c) and building the
 *                               timeline (replay_sched_states.c), per event
 *   replay: times of a scope    orbit__rp_sched_times on 1 000 000 random
 *                               intervals of the ping-pong threads, and
 *                               orbit__rp_sched_cursor_times on 1 000 000
 *                               intervals in start order (a thread's scopes)
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "replay_sched.h"
#include "sched_tracefs.h"

#define MAX_RUNS 31
#define COPY_BUF (1u << 20)

static uint64_t now_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the workload ---- */

struct pong {
	int in, out, rounds;
};

static int ping_tid, pong_tid; /* of the last ping_pong */

static void *pong_main(void *arg)
{
	struct pong *p = arg;
	char c;

	pong_tid = gettid();
	for (int i = 0; i < p->rounds; i++) {
		if (read(p->in, &c, 1) != 1 || write(p->out, &c, 1) != 1)
			abort();
	}
	return NULL;
}

/* ns per round trip of `rounds` ping-pongs. */
static double ping_pong(int rounds)
{
	int a[2], b[2];
	struct pong p;
	pthread_t t;
	char c = 'x';
	uint64_t t0, t1;

	if (pipe(a) != 0 || pipe(b) != 0)
		abort();
	p = (struct pong){a[0], b[1], rounds};
	ping_tid = gettid();
	pthread_create(&t, NULL, pong_main, &p);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < rounds; i++) {
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			abort();
	}
	t1 = now_ns(CLOCK_MONOTONIC);
	pthread_join(t, NULL);
	close(a[0]);
	close(a[1]);
	close(b[0]);
	close(b[1]);
	return (double)(t1 - t0) / rounds;
}

/* ---- the agent ---- */

struct kept {
	uint32_t cpu;
	uint8_t *page;
	size_t len;
};

struct agent {
	struct orbit__sched *s;
	unsigned interval_ms;
	atomic_int stop;
	uint8_t *buf;
	size_t at;
	uint64_t cpu_ns, passes;
	int keep;                 /* also keep every page (untimed copy) for the replay rows */
	int kept_ping, kept_pong; /* the threads of the kept run */
	struct kept *kept;
	size_t nkept, kept_cap;
};

static int copy_page(void *ctx, uint32_t cpu, const uint8_t *page, size_t len)
{
	struct agent *a = ctx;

	if (a->at + len > COPY_BUF)
		a->at = 0;
	memcpy(a->buf + a->at, page, len);
	a->at += len;
	if (a->keep) {
		if (a->nkept == a->kept_cap) {
			a->kept_cap = a->kept_cap ? a->kept_cap * 2 : 1024;
			a->kept = realloc(a->kept, a->kept_cap * sizeof *a->kept);
			if (a->kept == NULL)
				abort();
		}
		a->kept[a->nkept].page = malloc(len);
		if (a->kept[a->nkept].page == NULL)
			abort();
		memcpy(a->kept[a->nkept].page, page, len);
		a->kept[a->nkept].cpu = cpu;
		a->kept[a->nkept].len = len;
		a->nkept++;
	}
	return 0;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {0, (long)ms * 1000000L};

	nanosleep(&ts, NULL);
}

static void *agent_main(void *arg)
{
	struct agent *a = arg;

	while (!atomic_load(&a->stop)) {
		uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);

		if (a->s != NULL) /* NULL: the baseline, same passes, nothing read */
			orbit__sched_read(a->s, 0, copy_page, a);
		a->cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		a->passes++;
		sleep_ms(a->interval_ms);
	}
	if (a->s == NULL)
		return NULL;
	/* The final pass, as at the end of a stream. */
	uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	orbit__sched_stop(a->s);
	while (orbit__sched_read(a->s, 0, copy_page, a) > 0)
		;
	a->cpu_ns += now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	return NULL;
}

struct totals {
	uint64_t events, pages, lost;
};

static struct totals totals(struct orbit__sched *s)
{
	const struct orbit__sched_formats *f = orbit__sched_formats(s);
	struct totals t = {0, 0, 0};

	for (uint32_t cpu = 0; cpu < f->cpu_count; cpu++) {
		struct orbit__sched_cpu c;

		if (orbit__sched_stats(s, cpu, &c) != 0)
			continue;
		t.events += c.read_events;
		t.pages += c.pages;
		t.lost += c.overrun + c.dropped;
	}
	return t;
}

static struct orbit__sched *open_or_skip(uint32_t kb, double *ms)
{
	struct orbit__sched_params p = {.buffer_kb = kb};
	struct orbit__sched *s;
	char why[ORBIT__SCHED_WHY];
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	int r = orbit__sched_open(&p, &s, why, sizeof why);

	if (r < 0) {
		printf("orbit-bench-sched: kernel scheduling cannot be recorded here: %s\n", why);
		exit(77);
	}
	*ms = (now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
	return s;
}

/* The formats of an instance, copied for after its close. */
struct formats_copy {
	char *header;
	size_t header_len;
	char *text[16], *system[16];
	size_t len[16];
	uint32_t n;
};

static void copy_formats(struct orbit__sched *s, struct formats_copy *c)
{
	const struct orbit__sched_formats *f = orbit__sched_formats(s);

	c->header = strndup(f->header_page, f->header_page_len);
	c->header_len = f->header_page_len;
	for (c->n = 0; c->n < f->event_count && c->n < 16; c->n++) {
		c->text[c->n] = strndup(f->events[c->n].text, f->events[c->n].len);
		c->system[c->n] = strdup(f->events[c->n].system);
		c->len[c->n] = f->events[c->n].len;
	}
}

/* ns per event to decode the kept pages and build the timeline, and ns per
 * orbit__rp_sched_times of a random interval. */
static void replay_rows(const struct agent *a, const struct formats_copy *c, double *per_event,
                        double *per_query, double *per_sorted, uint64_t *events)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	const struct orbit__rp_sched_thread *th[2];
	uint64_t t0 = now_ns(CLOCK_PROCESS_CPUTIME_ID), rng = 12345, sink = 0, lo, hi;
	int q = 1000000;

	orbit__rp_sched_header_page(d, c->header, c->header_len);
	for (uint32_t i = 0; i < c->n; i++)
		orbit__rp_sched_format(d, c->system[i], c->text[i], c->len[i]);
	if (orbit__rp_sched_ready(d) != 0)
		abort();
	t0 = now_ns(CLOCK_PROCESS_CPUTIME_ID); /* the formats are parsed once per capture */
	for (size_t i = 0; i < a->nkept; i++)
		orbit__rp_sched_add_page(tl, d, a->kept[i].cpu, a->kept[i].page, a->kept[i].len);
	*events = orbit__rp_sched_stats(tl)->events;
	orbit__rp_sched_finish(tl, 0);
	*per_event = *events ? (double)(now_ns(CLOCK_PROCESS_CPUTIME_ID) - t0) / *events : 0;
	th[0] = orbit__rp_sched_thread(tl, a->kept_ping);
	th[1] = orbit__rp_sched_thread(tl, a->kept_pong);
	if (th[0] == NULL || th[1] == NULL || th[0]->span_count == 0) {
		*per_query = *per_sorted = 0;
		goto out;
	}
	lo = th[0]->spans[0].start;
	hi = th[0]->end;
	t0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < q; i++) {
		struct orbit__rp_sched_times t;
		uint64_t start, len;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		start = lo + rng % (hi - lo + 1);
		len = (rng >> 20) % 100000;
		orbit__rp_sched_times(th[i & 1], start, start + len, &t);
		sink += t.oncpu_ns;
	}
	*per_query = (double)(now_ns(CLOCK_PROCESS_CPUTIME_ID) - t0) / q;
	/* Scopes in start order, 1 us to 100 us long, through cursors. */
	struct orbit__rp_sched_cursor cur[2];
	uint64_t at = lo;

	orbit__rp_sched_cursor_init(&cur[0], th[0]);
	orbit__rp_sched_cursor_init(&cur[1], th[1]);
	t0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < q; i++) {
		struct orbit__rp_sched_times t;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		at += (hi - lo) / (uint64_t)q;
		orbit__rp_sched_cursor_times(&cur[i & 1], at, at + 1000 + rng % 99000, &t);
		sink += t.oncpu_ns;
	}
	*per_sorted = (double)(now_ns(CLOCK_PROCESS_CPUTIME_ID) - t0) / q;
	if (sink == 1)
		printf(" ");
out:
	orbit__rp_sched_timeline_free(tl);
	orbit__rp_sched_decoder_free(d);
}

struct setting {
	const char *name;
	unsigned interval_ms;
	uint32_t kb;
	double base[MAX_RUNS], rec[MAX_RUNS], per_event[MAX_RUNS], per_page[MAX_RUNS],
	    events_per_rt[MAX_RUNS], lost_share[MAX_RUNS], open_ms[MAX_RUNS], close_ms[MAX_RUNS];
	struct formats_copy formats;
};

/* The workload with the agent's passes at st's interval and no instance:
 * the baseline of run r. */
static void baseline_run(struct setting *st, int r, int rounds, struct agent *a)
{
	pthread_t th;

	a->s = NULL;
	a->interval_ms = st->interval_ms;
	atomic_store(&a->stop, 0);
	pthread_create(&th, NULL, agent_main, a);
	st->base[r] = ping_pong(rounds);
	atomic_store(&a->stop, 1);
	pthread_join(th, NULL);
}

/* One recorded run of the workload under setting st, as run r. */
static void recorded_run(struct setting *st, int r, int rounds, struct agent *a)
{
	struct totals t;
	pthread_t th;
	uint64_t t0;

	a->s = open_or_skip(st->kb, &st->open_ms[r]);
	if (a->keep && st->formats.n == 0)
		copy_formats(a->s, &st->formats);
	a->interval_ms = st->interval_ms;
	atomic_store(&a->stop, 0);
	a->cpu_ns = a->passes = 0;
	pthread_create(&th, NULL, agent_main, a);
	st->rec[r] = ping_pong(rounds);
	if (a->keep) {
		a->kept_ping = ping_tid;
		a->kept_pong = pong_tid;
	}
	atomic_store(&a->stop, 1);
	pthread_join(th, NULL);
	t = totals(a->s);
	st->per_event[r] = t.events ? (double)a->cpu_ns / t.events : 0;
	st->per_page[r] = t.pages ? (double)a->cpu_ns / t.pages : 0;
	st->events_per_rt[r] = (double)t.events / rounds;
	st->lost_share[r] = t.events + t.lost ? 100.0 * t.lost / (t.events + t.lost) : 0;
	t0 = now_ns(CLOCK_MONOTONIC);
	orbit__sched_close(a->s);
	st->close_ms[r] = (now_ns(CLOCK_MONOTONIC) - t0) / 1e6;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 5;
	int rounds = argc > 2 ? atoi(argv[2]) : 20000;
	static struct setting set[2] = {
	    {.name = "1 ms, 4 MiB", .interval_ms = 1, .kb = 4096},
	    {.name = "10 ms, 256 KiB", .interval_ms = 10, .kb = ORBIT__SCHED_DEFAULT_BUFFER_KB},
	};
	double idle_pass[MAX_RUNS];
	struct agent a;

	if (runs < 1 || runs > MAX_RUNS || rounds < 100) {
		fprintf(stderr, "usage: orbit-bench-sched [runs 1..%d [round_trips >= 100]]\n",
		        MAX_RUNS);
		return 2;
	}
	memset(&a, 0, sizeof a);
	a.buf = malloc(COPY_BUF);
	if (a.buf == NULL)
		return 1;
	for (int r = 0; r < runs; r++) {
		double unused;
		struct orbit__sched *s;
		uint64_t c0;
		int n = 200;

		for (int k = 0; k < 2; k++) {
			baseline_run(&set[k], r, rounds, &a);
			a.keep = k == 0 && r == runs - 1;
			recorded_run(&set[k], r, rounds, &a);
			a.keep = 0;
		}
		/* Idle passes: the instance on, nothing of ours switching. */
		s = open_or_skip(0, &unused);
		orbit__sched_read(s, 0, copy_page, &a); /* what opening left */
		c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
		for (int i = 0; i < n; i++)
			orbit__sched_read(s, 0, copy_page, &a);
		idle_pass[r] = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / n;
		orbit__sched_close(s);
	}
	printf("orbit-bench-sched: %d runs of %d round trips, medians (%ld CPUs online)\n", runs,
	       rounds, sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-32s %16s %16s\n", "", set[0].name, set[1].name);
#define ROW(label, field, fmt, unit)                                                               \
	printf("%-32s " fmt " %s " fmt " %s\n", label, median(set[0].field, runs), unit,           \
	       median(set[1].field, runs), unit)
	ROW("ping-pong, not recorded", base, "%13.0f", "ns");
	ROW("ping-pong, recorded", rec, "%13.0f", "ns");
	ROW("events read per round trip", events_per_rt, "%13.2f", "  ");
	ROW("agent: read + copy, per event", per_event, "%13.1f", "ns");
	ROW("agent: read + copy, per page", per_page, "%13.0f", "ns");
	ROW("events lost (share)", lost_share, "%13.1f", " %");
	ROW("open (create + configure)", open_ms, "%13.1f", "ms");
	ROW("close (disable + remove)", close_ms, "%13.1f", "ms");
#undef ROW
	printf("%-32s %13.0f ns\n", "agent: idle pass (all CPUs)", median(idle_pass, runs));
	double dec, query, sorted;
	uint64_t events;

	replay_rows(&a, &set[0].formats, &dec, &query, &sorted, &events);
	printf("%-32s %13.0f ns   (%llu events, last run of \"%s\")\n",
	       "replay: decode + states, per event", dec, (unsigned long long)events, set[0].name);
	printf("%-32s %13.0f ns\n", "replay: times of a scope, random", query);
	printf("%-32s %13.0f ns\n", "replay: times of a scope, in order", sorted);
	free(a.buf);
	return 0;
}
