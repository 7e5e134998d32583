/* logs_agent.c — the agent side of ORBIT_LOG / orbit_marker (logs.h), in
 * process, without orbit_init: the test picks the producers' clock
 * (orbit__clock_choose, so ORBIT_CLOCK=monotonic or tsc in a ctest entry's
 * environment selects that clock), starts the rings and turns the capture
 * flag on itself. Guarantees cited by number are logs.c's.
 *
 * Usage: logs_agent CASE, or logs_agent env VALUE */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "logs.h"
#include "orbit.h"
#include "parse.h"
#include "producers.h"
#include "unit/page_util.h"

#define MAXT 8
#define MAXRING 1024

/* ---- clock conversion: two calibration pairs taken by the test ---- */

struct cal {
	struct orbit__clock_pair a, b;
};

static struct orbit__clock_pair take_pair(void)
{
	struct orbit__clock_pair best = {0, 0};
	uint64_t width = UINT64_MAX;

	for (int i = 0; i < 15; i++) {
		uint64_t t0 = orbit__clock_ticks(orbit__clock_kind);
		uint64_t ns = orbit__monotonic_ns();
		uint64_t t1 = orbit__clock_ticks(orbit__clock_kind);

		if (t1 - t0 < width) {
			width = t1 - t0;
			best.ticks = t0 + (t1 - t0) / 2;
			best.ns = ns;
		}
	}
	return best;
}

static uint64_t cal_to_ns(void *ctx, uint64_t t)
{
	const struct cal *c = ctx;
	__int128 dt = (__int128)t - (__int128)c->a.ticks;

	return (uint64_t)((__int128)c->a.ns +
	                  dt * (__int128)(c->b.ns - c->a.ns) / (__int128)(c->b.ticks - c->a.ticks));
}

/* For cases that do not check times: any increasing map will do. */
static uint64_t live_to_ns(void *ctx, uint64_t t)
{
	(void)ctx;
	return t;
}

/* The rings under test: made as orbit_init makes them (from the
 * environment, the producers' clock chosen), on the heap, and published for
 * orbit_log and orbit_marker. */
static struct orbit__logs *L;

static int make(void)
{
	static struct orbit__config cfg;
	orbit__config_read(&cfg, NULL);
	orbit__clock_kind = orbit__clock_choose(cfg.clock);
	int err = L != NULL ? 0 : orbit__logs_create(&L, &cfg, orbit__clock_kind, NULL);
	if (err == 0) {
		err = orbit__logs_start(L);
		orbit__producers_logs(L);
	}
	return err;
}

static void start(void)
{
	CHECK(make() == 0);
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
}

/* The CPUs this process may run on, in order; threads are pinned to these
 * so each writes one ring (the order checks need that). */
static unsigned cpus[CPU_SETSIZE], ncpus;

static unsigned ncpu(void)
{
	cpu_set_t set;

	if (ncpus == 0) {
		CHECK(sched_getaffinity(0, sizeof(set), &set) == 0);
		for (unsigned i = 0; i < CPU_SETSIZE; i++)
			if (CPU_ISSET(i, &set))
				cpus[ncpus++] = i;
		CHECK(ncpus > 0);
	}
	return ncpus;
}

/* Pins the calling thread to the i-th allowed CPU; skips the test if it
 * cannot (its records could then move between rings). */
static int pin(unsigned i)
{
	cpu_set_t set;
	unsigned cpu = cpus[i % ncpu()];

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
		SKIP("cannot pin a thread to CPU %u", cpu);
	return 1;
}

/* ---- what the reader saw ---- */

struct got {
	uint32_t ntid;
	int32_t tid[MAXT];
	int64_t next[MAXT];        /* next sequence expected per thread */
	int64_t first[MAXT];       /* first sequence delivered per thread */
	uint64_t per_thread[MAXT]; /* records delivered */
	uint64_t per_ring[MAXRING];
	uint64_t total;
	uint64_t pages, missed_pages;
	int exact;         /* no gaps allowed */
	int ring_of[MAXT]; /* -1: any */
	/* times (threads case) */
	const uint64_t *before[MAXT], *after[MAXT];
	uint64_t worst_early, worst_late;
	int check_times;
};

static int thread_of(struct got *g, int32_t tid)
{
	for (uint32_t i = 0; i < g->ntid; i++)
		if (g->tid[i] == tid)
			return (int)i;
	return -1;
}

/* Text "t<thread> s<seq> <filler>", marker bytes: u32 thread, u32 seq,
 * then 24 bytes of (seq + i). Returns the sequence. */
static int64_t check_payload(const struct orbit__ftrace_record *rec, int *thread)
{
	const uint8_t *p = rec->data;
	uint16_t type;
	int32_t tid;
	unsigned t, s;

	CHECK(rec->len >= ORBIT__LOGS_HEADER);
	memcpy(&type, p, 2);
	memcpy(&tid, p + 4, 4);
	CHECK(p[2] == 0 && p[3] == 0); /* flags, preempt count */
	(void)tid;
	if (type == ORBIT__LOGS_LINE) {
		char text[256];
		size_t n = strnlen((const char *)p + 8, rec->len - 8);

		CHECK(n < sizeof(text));
		memcpy(text, p + 8, n);
		text[n] = '\0';
		CHECK(sscanf(text, "t%u s%u", &t, &s) == 2);
		char want[256];
		snprintf(want, sizeof(want), "t%u s%u %.*s", t, s, (int)(s % 40),
		         "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG");
		CHECK(strcmp(text, want) == 0);
		CHECK(s % 2 == 0);
	} else {
		uint32_t u[2];

		CHECK(type == ORBIT__LOGS_MARKER);
		CHECK(rec->len == 8 + 32);
		memcpy(u, p + 8, 8);
		t = u[0];
		s = u[1];
		CHECK(s % 2 == 1);
		for (uint32_t i = 0; i < 24; i++)
			CHECK(p[16 + i] == (uint8_t)(s + i));
	}
	*thread = (int)t;
	return s;
}

static void on_record(void *arg, const struct orbit__ftrace_record *rec)
{
	struct got *g = arg;
	int t, by_tid;
	int32_t tid;
	int64_t s = check_payload(rec, &t);

	memcpy(&tid, rec->data + 4, 4);
	by_tid = thread_of(g, tid);
	CHECK(by_tid >= 0 && by_tid == t);
	/* Exactly once, in the thread's order (guarantee 4). */
	if (g->exact)
		CHECK_EQ_U64(s, g->next[t]);
	else
		CHECK(s >= g->next[t]);
	if (g->per_thread[t] == 0)
		g->first[t] = s;
	g->next[t] = s + 1;
	g->per_thread[t]++;
	if (g->check_times) {
		uint64_t lo = g->before[t][s], hi = g->after[t][s];

		if (rec->time < lo && lo - rec->time > g->worst_early)
			g->worst_early = lo - rec->time;
		if (rec->time > hi && rec->time - hi > g->worst_late)
			g->worst_late = rec->time - hi;
	}
}

static uint32_t g_ring_now;

static void on_page(void *arg, uint32_t ring, const uint8_t *page, size_t len)
{
	struct got *g = arg;
	struct orbit__ftrace_header hdr;
	uint64_t n;

	CHECK(ring < orbit__logs_ring_count(L) && ring < MAXRING);
	g_ring_now = ring;
	/* Guarantees 1, 3, 7, 8 of page_ring.c on the retimed page. */
	n = page_walk(page, (uint32_t)len, on_record, g, &hdr);
	g->per_ring[ring] += n;
	g->total += n;
	g->pages++;
	g->missed_pages += hdr.missed;
}

/* Reserved == read + lost, per ring (guarantee 2). */
static void check_totals(const struct got *g, uint64_t *lost_all, uint64_t *pages_all)
{
	uint64_t sum = 0;

	*lost_all = *pages_all = 0;
	for (uint32_t i = 0; i < orbit__logs_ring_count(L); i++) {
		uint64_t res, lost, pages;

		orbit__logs_totals(L, i, &res, &lost, &pages);
		if (res != g->per_ring[i] + lost)
			fprintf(stderr,
			        "ring %u: reserved %" PRIu64 " read %" PRIu64 " lost %" PRIu64 "\n",
			        i, res, g->per_ring[i], lost);
		CHECK_EQ_U64(res, g->per_ring[i] + lost);
		*lost_all += lost;
		*pages_all += pages;
		sum += res;
	}
	CHECK(sum > 0);
}

/* ---- writers ---- */

struct writer {
	unsigned index;
	unsigned cpu; /* index into the allowed CPUs */
	int pinned;
	int32_t tid;
	uint32_t count; /* records to write */
	int timed;
	int paced; /* pause now and then, so the reader keeps up */
	uint64_t *before, *after;
	uint64_t ok, full, dropped;
	int ran_on; /* sched_getcpu after pinning */
	pthread_barrier_t *go;
};

static const char filler[] = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";

static int write_one(unsigned t, uint32_t s)
{
	if (s % 2 == 0) {
		/* Through the macro: the capture flag is on. */
		int r = 0;

		if (orbit__on())
			r = orbit_log("t%u s%u %.*s", t, s, (int)(s % 40), filler);
		return r;
	} else {
		uint8_t m[32];
		uint32_t u[2] = {t, s};

		memcpy(m, u, 8);
		for (uint32_t i = 0; i < 24; i++)
			m[8 + i] = (uint8_t)(s + i);
		return orbit_marker(m, sizeof(m));
	}
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;

	/* release: the main thread acquires it before the barrier. */
	__atomic_store_n(&w->tid, (int32_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	w->pinned = pin(w->cpu);
	w->ran_on = sched_getcpu();
	pthread_barrier_wait(w->go);
	for (uint32_t s = 0; s < w->count; s++) {
		int r;

		if (w->timed)
			w->before[s] = orbit__monotonic_ns();
		r = write_one(w->index, s);
		if (w->timed)
			w->after[s] = orbit__monotonic_ns();
		if (w->paced && s % 128 == 127) {
			struct timespec ts = {0, 100000};

			nanosleep(&ts, NULL);
		}
		if (r == 0)
			w->ok++;
		else if (r == -ENOSPC)
			w->full++;
		else if (r == -ENOBUFS)
			w->dropped++;
		else
			CHECK(!"unexpected return");
	}
	return NULL;
}

static void run_writers(struct writer *w, unsigned n, pthread_barrier_t *go)
{
	pthread_t th[MAXT];

	for (unsigned i = 0; i < n; i++)
		CHECK(pthread_create(&th[i], NULL, writer_main, &w[i]) == 0);
	pthread_barrier_wait(go);
	for (unsigned i = 0; i < n; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
}

/* Several threads on different CPUs, no loss: every record exactly once,
 * in order, on its CPU's ring, type and tid right, times within 1 us of
 * clock_gettime readings around each write. */
static void case_threads(void)
{
	enum { K = 3000 };
	unsigned nc = ncpu(), n = nc < 2 ? 2 : nc > 4 ? 4 : nc;
	struct writer w[MAXT];
	struct got g;
	struct cal c;
	pthread_barrier_t go;
	uint64_t lost, pages;

	start();
	memset(&g, 0, sizeof(g));
	memset(w, 0, sizeof(w));
	CHECK(pthread_barrier_init(&go, NULL, n + 1) == 0);
	c.a = take_pair();
	test_sleep_ms(20);
	for (unsigned i = 0; i < n; i++) {
		w[i].index = i;
		w[i].cpu = i;
		w[i].count = K;
		w[i].timed = 1;
		w[i].before = calloc(K, 8);
		w[i].after = calloc(K, 8);
		w[i].go = &go;
		CHECK(w[i].before && w[i].after);
	}
	run_writers(w, n, &go);
	test_sleep_ms(20);
	c.b = take_pair();

	g.ntid = n;
	g.exact = 1;
	g.check_times = 1;
	for (unsigned i = 0; i < n; i++) {
		g.tid[i] = w[i].tid;
		g.before[i] = w[i].before;
		g.after[i] = w[i].after;
		CHECK_EQ_U64(w[i].ok, K);
	}
	CHECK(orbit__logs_read(L, cal_to_ns, &c, on_page, &g, 0) > 0);
	for (unsigned i = 0; i < n; i++)
		CHECK_EQ_U64(g.per_thread[i], K);
	check_totals(&g, &lost, &pages);
	CHECK_EQ_U64(lost, 0);
	CHECK_EQ_U64(g.missed_pages, 0);
	CHECK_EQ_U64(orbit__logs_clamped(L), 0);
	/* Pinned threads wrote to their CPU's ring only. */
	for (unsigned i = 0; i < n; i++) {
		if (!w[i].pinned || w[i].ran_on < 0)
			continue;
		uint32_t ring = (uint32_t)w[i].ran_on % orbit__logs_ring_count(L);
		uint64_t sum = 0;

		for (unsigned j = 0; j < n; j++)
			if (w[j].pinned &&
			    (uint32_t)w[j].ran_on % orbit__logs_ring_count(L) == ring)
				sum += K;
		CHECK_EQ_U64(g.per_ring[ring], sum);
	}
	fprintf(stderr,
	        "%u threads on %u CPUs, clock %s: %" PRIu64 " records, %" PRIu64
	        " pages; worst %" PRIu64 " ns early, %" PRIu64 " ns late\n",
	        n, nc, orbit__clock_kind == ORBIT__CLOCK_TSC ? "tsc" : "monotonic", g.total,
	        g.pages, g.worst_early, g.worst_late);
	CHECK(g.worst_early <= 1000);
	CHECK(g.worst_late <= 1000);
	/* Nothing left. */
	CHECK_EQ_U64(orbit__logs_read(L, cal_to_ns, &c, on_page, &g, 0), 0);
	orbit__logs_stop(L);
	check_totals(&g, &lost, &pages);
	CHECK_EQ_U64(lost, 0);
	for (unsigned i = 0; i < n; i++) {
		free(w[i].before);
		free(w[i].after);
	}
}

/* ---- concurrent reader (label concurrency) ---- */

struct reader {
	struct got *g;
	struct cal *c;
	atomic_int stop;
	uint64_t reads;
};

static void *reader_main(void *arg)
{
	struct reader *r = arg;

	while (!atomic_load_explicit(&r->stop, memory_order_acquire)) {
		CHECK(orbit__logs_read(L, live_to_ns, NULL, on_page, r->g, 1000000) >= 0);
		r->reads++;
		nanosleep(&(struct timespec){0, 100000}, NULL);
	}
	return NULL;
}

/* Writers (two sharing a CPU's ring) against a reader that reads and
 * flushes as the agent does, on small rings: loss happens and is counted
 * exactly; what is delivered is exactly what writers were told succeeded
 * (overwrite off), in each thread's order, each at most once. */
static void run_concurrent(int overwrite)
{
	enum { K = 20000 };
	unsigned n = 3;
	struct writer w[MAXT];
	struct got g;
	struct reader rd;
	pthread_t rt;
	pthread_barrier_t go;
	uint64_t lost, pages, ok = 0, failed = 0;

	setenv("ORBIT_PAGE_RING_PAGES", "4", 1);
	setenv("ORBIT_PAGE_RING_OVERWRITE", overwrite ? "1" : "0", 1);
	start();
	memset(&g, 0, sizeof(g));
	memset(w, 0, sizeof(w));
	memset(&rd, 0, sizeof(rd));
	rd.g = &g;
	CHECK(pthread_barrier_init(&go, NULL, n + 1) == 0);
	for (unsigned i = 0; i < n; i++) {
		w[i].index = i;
		w[i].cpu = i;
		w[i].count = K;
		w[i].paced = 1;
		w[i].go = &go;
	}
	g.ntid = 0;
	/* tids are known once the threads run; the reader starts after. */
	pthread_t th[MAXT];
	for (unsigned i = 0; i < n; i++)
		CHECK(pthread_create(&th[i], NULL, writer_main, &w[i]) == 0);
	/* Wait for every writer to reach the barrier's other side: take the
	 * tids after they are stored (before the barrier, in writer_main). */
	while (1) {
		unsigned have = 0;

		for (unsigned i = 0; i < n; i++)
			have += __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE) != 0;
		if (have == n)
			break;
		test_sleep_ms(1);
	}
	for (unsigned i = 0; i < n; i++)
		g.tid[i] = __atomic_load_n(&w[i].tid, __ATOMIC_ACQUIRE);
	g.ntid = n;
	CHECK(pthread_create(&rt, NULL, reader_main, &rd) == 0);
	pthread_barrier_wait(&go);
	for (unsigned i = 0; i < n; i++)
		CHECK(pthread_join(th[i], NULL) == 0);
	atomic_store_explicit(&rd.stop, 1, memory_order_release);
	CHECK(pthread_join(rt, NULL) == 0);
	CHECK(orbit__logs_read(L, live_to_ns, NULL, on_page, &g, 0) >= 0);

	check_totals(&g, &lost, &pages);
	for (unsigned i = 0; i < n; i++) {
		ok += w[i].ok;
		failed += w[i].full + w[i].dropped;
		if (!overwrite) {
			/* Overwrite off: a granted record is never lost. */
			CHECK_EQ_U64(g.per_thread[i], w[i].ok);
			CHECK_EQ_U64(w[i].dropped, 0);
		} else {
			CHECK(g.per_thread[i] <= w[i].ok);
			CHECK_EQ_U64(w[i].full, 0);
		}
	}
	CHECK_EQ_U64(ok + failed, (uint64_t)n * K);
	CHECK_EQ_U64(g.total + lost, (uint64_t)n * K);
	if (lost > 0)
		CHECK(g.missed_pages > 0);
	fprintf(stderr,
	        "%u writers, overwrite %d: %" PRIu64 " delivered in %" PRIu64 " pages (%" PRIu64
	        " reads), %" PRIu64 " lost, %" PRIu64 " pages lost\n",
	        n, overwrite, g.total, g.pages, rd.reads, lost, pages);
	orbit__logs_stop(L);
	check_totals(&g, &lost, &pages);
	CHECK_EQ_U64(g.total + lost, (uint64_t)n * K);
}

static void case_concurrent(void)
{
	run_concurrent(0);
}

static void case_concurrent_overwrite(void)
{
	run_concurrent(1);
}

/* ---- single-thread cases ---- */

static void one_writer(struct got *g)
{
	memset(g, 0, sizeof(*g));
	g->ntid = 1;
	g->tid[0] = (int32_t)syscall(SYS_gettid);
}

/* Overwrite on, two pages: the newest lines survive, consecutive up to the
 * last; the rest counted lost with their pages; bit 31 on the first page. */
static void case_overwrite(void)
{
	enum { N = 1000 };
	struct got g;
	uint64_t lost, pages, res;
	uint32_t p, ps;
	int ow;

	setenv("ORBIT_PAGE_RING_PAGES", "2", 1);
	setenv("ORBIT_PAGE_RING_OVERWRITE", "1", 1);
	pin(0);
	start();
	orbit__logs_config(L, &p, &ps, &ow);
	CHECK(p == 2 && ow == 1);
	one_writer(&g);
	for (uint32_t s = 0; s < N; s++)
		CHECK(write_one(0, s) == 0);
	CHECK(orbit__logs_read(L, live_to_ns, NULL, on_page, &g, 0) > 0);
	CHECK_EQ_U64(g.next[0], N); /* the last one is there */
	CHECK(g.total < N);
	check_totals(&g, &lost, &pages);
	CHECK_EQ_U64(g.total + lost, N);
	CHECK(pages > 0);
	CHECK(g.missed_pages >= 1);
	orbit__logs_totals(L, 0, &res, NULL, NULL);
	CHECK_EQ_U64(res, N);
	/* Consecutive: increasing, and as many as first .. N - 1. */
	CHECK_EQ_U64(g.first[0] + g.total, N);
}

/* Overwrite off, two pages: writes fail with -ENOSPC once full, counted;
 * reading frees the ring; bit 31 on the page read after the loss. */
static void case_full(void)
{
	struct got g;
	uint64_t lost, pages;
	uint32_t s = 0, ok;
	int r;

	setenv("ORBIT_PAGE_RING_PAGES", "2", 1);
	pin(0);
	start();
	one_writer(&g);
	g.exact = 1;
	while ((r = write_one(0, s)) == 0)
		s++;
	CHECK(r == -ENOSPC);
	ok = s;
	CHECK(ok > 10);
	CHECK(orbit_log("more") == -ENOSPC);
	CHECK(orbit_marker("x", 1) == -ENOSPC);
	CHECK(orbit__logs_read(L, live_to_ns, NULL, on_page, &g, 0) > 0);
	CHECK_EQ_U64(g.total, ok);
	CHECK(g.missed_pages >= 1);
	check_totals(&g, &lost, &pages);
	CHECK_EQ_U64(lost, 3);
	CHECK_EQ_U64(pages, 0);
	/* Room again; the line that failed was not delivered. */
	g.next[0] = s + 1;
	CHECK(write_one(0, s + 1) == 0);
	CHECK_EQ_U64(orbit__logs_read(L, live_to_ns, NULL, on_page, &g, 0), 1);
	CHECK_EQ_U64(g.total, ok + 1);
	check_totals(&g, &lost, &pages);
}

static int evaluated;

static int side(int v)
{
	evaluated++;
	return v;
}

struct one_line {
	char text[8192];
	size_t len;
	uint16_t type;
	int32_t tid;
	uint64_t site; /* type 3: the call site's address */
	int n;
};

static void grab(void *arg, const struct orbit__ftrace_record *rec)
{
	struct one_line *o = arg;

	memcpy(&o->type, rec->data, 2);
	memcpy(&o->tid, rec->data + 4, 4);
	size_t at = 8;
	o->site = 0;
	if (o->type == ORBIT__LOGS_LINE_AT) {
		memcpy(&o->site, rec->data + 8, 8);
		at = 16;
	}
	o->len = rec->len - at;
	memcpy(o->text, rec->data + at, o->len);
	o->n++;
}

static void grab_page(void *arg, uint32_t ring, const uint8_t *page, size_t len)
{
	(void)ring;
	page_walk(page, (uint32_t)len, grab, arg, NULL);
}

/* Return codes, the macro's gating, truncation, stop / restart. */
static void case_errors(void)
{
	static char big[10000];
	uint8_t m[8192];
	struct one_line o;
	uint32_t pages, ps;
	int ow;
	uint64_t res, lost, lp;

	pin(0); /* one ring, so the order of reading is the order of writing */
	/* Before any rings are published. */
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
	CHECK(orbit_log("x") == ORBIT_EDISABLED);
	CHECK(orbit_marker("x", 1) == ORBIT_EDISABLED);

	start();
	CHECK(orbit__logs_start(L) == 0); /* idempotent */
	orbit__logs_config(L, &pages, &ps, &ow);
	CHECK(pages == ORBIT__CONFIG_PAGE_RING_PAGES && ow == 0);
	CHECK_EQ_U64(ps, (uint64_t)sysconf(_SC_PAGESIZE));
	CHECK(orbit__logs_ring_count(L) == (uint32_t)sysconf(_SC_NPROCESSORS_CONF));

	/* Capture flag off: ORBIT_LOG evaluates nothing, the functions say
	 * disabled. */
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
	ORBIT_LOG("%d", side(1));
	CHECK(evaluated == 0);
	CHECK(orbit_log("x") == ORBIT_EDISABLED);
	CHECK(orbit_marker("x", 1) == ORBIT_EDISABLED);
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
	ORBIT_LOG("v=%d", side(42));
	ORBIT_LOG("plain");
	CHECK(evaluated == 1);
	memset(&o, 0, sizeof(o));
	CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) >= 1);
	CHECK(o.n == 2);
	CHECK(o.type == ORBIT__LOGS_LINE_AT); /* ORBIT_LOG: with its call site */
	CHECK(o.site != 0);
	CHECK(o.tid == (int32_t)syscall(SYS_gettid));
	CHECK(strncmp(o.text, "plain", o.len) == 0 && o.len == 8); /* padded to 4 */

	/* Markers: sizes. */
	uint32_t max = (uint32_t)ps - 24 - ORBIT__LOGS_HEADER;
	memset(m, 0xab, sizeof(m));
	CHECK(orbit_marker(m, max + 1) == -EMSGSIZE);
	CHECK(orbit_marker(NULL, 3) == -EINVAL);
	CHECK(orbit_marker(NULL, 0) == 0);
	CHECK(orbit_marker(m, max) == 0);
	memset(&o, 0, sizeof(o));
	CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) >= 1);
	CHECK(o.n == 2 && o.type == ORBIT__LOGS_MARKER && o.len == max);
	CHECK(memcmp(o.text, m, max) == 0);

	/* A line longer than a record is cut. */
	memset(big, 'q', sizeof(big) - 1);
	CHECK(orbit_log("%s!", big) == 0);
	memset(&o, 0, sizeof(o));
	CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) >= 1);
	size_t keep = max < ORBIT__LOGS_LINE_STACK - 1 ? max : ORBIT__LOGS_LINE_STACK - 1;
	CHECK(o.n == 1 && strnlen(o.text, o.len) == keep);
	CHECK(o.text[0] == 'q' && o.text[keep - 1] == 'q');

	/* Stop counts unread records lost and disables; start again. */
	CHECK(orbit_log("a") == 0 && orbit_log("b") == 0 && orbit_log("c") == 0);
	orbit__logs_stop(L);
	CHECK(orbit_log("x") == ORBIT_EDISABLED);
	CHECK(orbit_marker("x", 1) == ORBIT_EDISABLED);
	CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) == 0);
	res = lost = 0;
	for (uint32_t i = 0; i < orbit__logs_ring_count(L); i++) {
		uint64_t r1, l1;

		orbit__logs_totals(L, i, &r1, &l1, &lp);
		res += r1;
		lost += l1;
	}
	CHECK_EQ_U64(res, 2 + 2 + 1 + 3);
	CHECK_EQ_U64(lost, 3);
	CHECK(orbit__logs_start(L) == 0);
	CHECK(orbit_log("after") == 0);
	memset(&o, 0, sizeof(o));
	CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) >= 1);
	CHECK(o.n == 1 && strncmp(o.text, "after", 5) == 0); /* nothing from before */
	orbit__logs_totals(L, UINT32_MAX, &res, &lost, &lp);
	CHECK(res == 0 && lost == 0 && lp == 0);
	orbit__logs_stop(L);
}

/* The reader closes a page only once its first record is flush_age_ns old,
 * in ns also when the rings count TSC ticks (logs.c, Read). Judged by the
 * order of clock readings, not by sleeping for set times: every read is
 * bracketed by two readings, and
 *   - a read that closed the page ended no earlier than the record's age
 *     after the record was written,
 *   - a read that left it open began before that age had passed.
 * A stall anywhere only moves the readings; no outcome depends on how long
 * anything took. The slack is for the tick rate logs.c measures from the
 * rings' creation (a stall inside the start, between its two clock reads,
 * adds to it); ticks taken for ns (a TSC at 2 GHz or more) would close the
 * page at half the age or sooner. With ORBIT_CLOCK=tsc the rings count
 * ticks; without an invariant TSC that entry skips. */
#define FLUSH_AGE_NS ((uint64_t)200000000)
#define FLUSH_AGE_SLACK_NS (FLUSH_AGE_NS / 4)

static void case_flush_age(void)
{
	struct one_line o;
	uint64_t starting, created, before, after, r0, r1;
	int n, reads = 0;
	const char *clock = getenv("ORBIT_CLOCK");

	pin(0);
	starting = test_now_ns(CLOCK_MONOTONIC);
	start();
	created = test_now_ns(CLOCK_MONOTONIC);
	if (clock != NULL && strcmp(clock, "tsc") == 0 && orbit__clock_kind != ORBIT__CLOCK_TSC)
		SKIP("ORBIT_CLOCK=tsc: no invariant TSC here");
	/* Before 1 ms of rate measurement logs.c may close early; let it
	 * pass. */
	while (test_now_ns(CLOCK_MONOTONIC) - created < 2000000)
		test_sleep_ms(1);
	memset(&o, 0, sizeof(o));
	before = test_now_ns(CLOCK_MONOTONIC);
	CHECK(orbit_log("aged") == 0);
	after = test_now_ns(CLOCK_MONOTONIC);
	do {
		r0 = test_now_ns(CLOCK_MONOTONIC);
		n = orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, FLUSH_AGE_NS);
		r1 = test_now_ns(CLOCK_MONOTONIC);
		reads++;
		CHECK(n == 0 || n == 1);
		if (n == 0 &&
		    r0 - after >= FLUSH_AGE_NS + FLUSH_AGE_SLACK_NS + (created - starting)) {
			fprintf(stderr,
			        "read %d began %" PRIu64 " ms after the record and left its "
			        "page open (age %" PRIu64 " ms)\n",
			        reads, (r0 - after) / 1000000, FLUSH_AGE_NS / 1000000);
			exit(1);
		}
		if (n == 1 && r1 - before < FLUSH_AGE_NS - FLUSH_AGE_SLACK_NS) {
			fprintf(stderr,
			        "read %d ended %" PRIu64 " ms after the record and closed its "
			        "page (age %" PRIu64 " ms)\n",
			        reads, (r1 - before) / 1000000, FLUSH_AGE_NS / 1000000);
			exit(1);
		}
		if (n == 0)
			test_sleep_ms(1);
	} while (n == 0);
	printf("clock %s: the page closed at read %d, %" PRIu64 " to %" PRIu64
	       " ms after the record (age %" PRIu64 " ms)\n",
	       orbit__clock_kind == ORBIT__CLOCK_TSC ? "tsc" : "monotonic", reads,
	       (r0 - after) / 1000000, (r1 - before) / 1000000, FLUSH_AGE_NS / 1000000);
	CHECK(o.n == 1 && strncmp(o.text, "aged", 4) == 0);
	orbit__logs_stop(L);
}

/* ---- environment ---- */

/* What follows "env" on the command line: the value of ORBIT_PAGE_RING_PAGES
 * ("unset" leaves it unset, "empty" sets it empty), or "ow:VALUE" for
 * ORBIT_PAGE_RING_OVERWRITE. */
static const char *env_value;

/* Checks the pages in use and the one stderr line a bad value costs. */
static void case_env(void)
{
	const char *arg = env_value;
	char path[] = "/tmp/orbit-logs-env-XXXXXX", out[1024] = {0};
	int fd = mkstemp(path), saved = dup(2);
	uint32_t pages, ps, want_pages = 64;
	int ow, want_ow = 0, bad = 0;
	char want[512] = {0};
	FILE *f;
	size_t n;

	CHECK(arg != NULL); /* logs_agent env VALUE */
	CHECK(fd >= 0 && saved >= 0);
	unlink(path);
	if (strcmp(arg, "empty") == 0)
		arg = "";
	if (strncmp(arg, "ow:", 3) == 0) {
		setenv("ORBIT_PAGE_RING_OVERWRITE", arg + 3, 1);
		if (orbit__parse_bool(arg + 3, &want_ow) != 0) {
			bad = 1;
			want_ow = 0;
			snprintf(
			    want, sizeof(want),
			    "orbit: ORBIT_PAGE_RING_OVERWRITE=%s is not 1/0, yes/no, true/false "
			    "or on/off; using 0\n",
			    arg + 3);
		}
	} else if (strcmp(arg, "unset") != 0) {
		char *end;
		unsigned long v = strtoul(arg, &end, 10);

		setenv("ORBIT_PAGE_RING_PAGES", arg, 1);
		if (*arg >= '0' && *arg <= '9' && *end == '\0' && v >= 2 && v <= 1048576) {
			want_pages = (uint32_t)v;
		} else {
			bad = 1;
			snprintf(want, sizeof(want),
			         "orbit: ORBIT_PAGE_RING_PAGES=%s is not a number of pages from 2 "
			         "to 1048576; using 64\n",
			         arg);
		}
	}
	fflush(stderr);
	CHECK(dup2(fd, 2) == 2);
	start();
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	f = fdopen(fd, "r");
	CHECK(f != NULL);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	fclose(f);
	out[n] = '\0';
	if (bad) {
		if (strcmp(out, want) != 0)
			fprintf(stderr, "got:  %swant: %s", out, want);
		CHECK(strcmp(out, want) == 0);
	} else {
		CHECK(n == 0);
	}
	orbit__logs_config(L, &pages, &ps, &ow);
	CHECK_EQ_U64(pages, want_pages);
	CHECK_EQ_U64(ow, want_ow);
	/* The rings work with it. */
	CHECK(orbit_log("hello %d", 1) == 0);
	{
		struct one_line o;

		memset(&o, 0, sizeof(o));
		CHECK(orbit__logs_read(L, live_to_ns, NULL, grab_page, &o, 0) == 1);
		CHECK(o.n == 1 && strncmp(o.text, "hello 1", 7) == 0);
	}
	orbit__logs_stop(L);
}

/* Start fails (pages cannot be allocated): one stderr line, logs stay off
 * (guarantee 5). */
static void case_start_fails(void)
{
	char path[] = "/tmp/orbit-logs-fail-XXXXXX", out[512] = {0};
	int fd = mkstemp(path), saved = dup(2);
	FILE *f;
	size_t n;

	CHECK(fd >= 0 && saved >= 0);
	unlink(path);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	SKIP("sanitizers abort on allocation failure");
#endif
	/* 4 GiB of pages per ring, 2 GiB of address space. */
	setenv("ORBIT_PAGE_RING_PAGES", "1048576", 1);
	{
		struct rlimit rl = {1ull << 31, 1ull << 31};

		if (setrlimit(RLIMIT_AS, &rl) != 0)
			SKIP("cannot lower RLIMIT_AS");
	}
	fflush(stderr);
	CHECK(dup2(fd, 2) == 2);
	int r = make();
	fflush(stderr);
	CHECK(dup2(saved, 2) == 2);
	f = fdopen(fd, "r");
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	fclose(f);
	out[n] = '\0';
	fprintf(stderr, "start: %d, said: %s", r, out);
	CHECK(r == -ENOMEM);
	CHECK(strncmp(out, "orbit: cannot allocate ", 23) == 0);
	CHECK(strchr(out, '\n') == out + n - 1); /* one line */
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
	CHECK(orbit_log("x") == ORBIT_EDISABLED);
	CHECK(orbit_marker("x", 1) == ORBIT_EDISABLED);
}

static const struct test_case cases[] = {
    {"threads", case_threads},
    {"concurrent", case_concurrent},
    {"concurrent_overwrite", case_concurrent_overwrite},
    {"overwrite", case_overwrite},
    {"full", case_full},
    {"errors", case_errors},
    {"start_fails", case_start_fails},
    {"flush_age", case_flush_age},
    {"env", case_env},
};

static void begin(void)
{
	ncpu(); /* before any thread: the list is read without a lock */
}

TEST_MAIN_WITH(cases, .args = "[VALUE]", .arg = &env_value, .begin = begin)
