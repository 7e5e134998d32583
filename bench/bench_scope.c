/*
 * bench_scope.c — orbit-bench-scope: what a scope costs on the scope rings
 * (seed 000), taken apart, beside a floor measured in the same run.
 *
 *   orbit-bench-scope [-n iterations] [-r runs] [-m]
 *
 * Prints a table; never passes or fails on time.
 *
 * What it measures, all in ns per operation from clock_gettime around loops
 * of -n iterations (default 2 000 000), repeated -r times (default 9),
 * reporting medians. The clock is the thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID), which leaves out the time other processes hold
 * a pinned thread's CPU on a shared machine; -m uses CLOCK_MONOTONIC.
 * Ratios to the floor are medians of per-run ratios, each run's job timed
 * right beside its floor.
 *
 *  1. The parts of the write path (orbit/internal.h), each in a loop of its
 *     own, on the real segment: the clock read (orbit__ticks(), and clock_gettime),
 *     the claim (orbit__claim(): the relaxed fetch_add on the ring cursor
 *     and the marker store), the payload (orbit__fill() with a 5-byte literal
 *     name, and the record's check) and the publish (orbit__publish(): the
 *     release store of the stamp).
 *  2. A whole scope: ORBIT_START("bench") + ORBIT_STOP(), and ORBIT_SCOPE
 *     alone in a loop body, for 1 and 2 writing threads and 1, 8, 16 and 128
 *     rings.
 *  3. The macros with the capture off (orbit_init() never called).
 *  4. The floor, measured in the same process and interleaved run by run
 *     with what it is compared to: per event one rdtsc, one uncontended
 *     relaxed fetch_add on a private counter, and one 64-byte slot store
 *     (56 bytes of plain stores, then the 8-byte stamp as a release store)
 *     into a private array of 64-byte slots sized like a ring of the
 *     segment. A scope is two events, so its floor is two of those.
 *
 * Rings are fixed per process by orbit_init() (ORBIT_RINGS), so each ring
 * count runs in a child: the parent, which never calls orbit_init(), execs
 * itself with "--child" and ORBIT_RINGS set, and reads "key value"
 * lines back through a pipe ("--child" is the bench's own plumbing, not
 * an option). One writing thread is pinned to CPU 0, two to CPUs 0 and 1;
 * with more than one ring, the two are placed on distinct rings (threads
 * are respawned until their tids hash apart), as 1 ring shows the shared
 * case. The agent thread is pinned to CPU 1 and drains every
 * ORBIT_DRAIN_MS (10 ms) as it always does, concurrently with the writer:
 * a thread writing flat out laps its ring between drains and the loss is
 * counted, which is real. The last column parks the drain (ORBIT_DRAIN_MS
 * 60000) to show the write path without it, and a row gives how busy the
 * agent thread was (its CPU time over the child's wall time, from
 * /proc/self/task): the drain copying a ring while its writer fills it
 * costs the writer cache-line transfers, which is what separates the two.
 *
 * The claim loop hands out claims it never publishes; it then republishes
 * the last lap of its ring's slots (outside the timed loop) so the drain
 * sees lapped claims rather than a stall. The fill and publish loops leave
 * stamps that do not match what the slots hold (the drain counts such
 * copies as lapped), and repair the ring the same way afterwards.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "lifecycle.h"
#include "orbit.h"
#include "producers.h"
#include "segment_create.h"

#define DEFAULT_ITERS 2000000L
#define DEFAULT_RUNS 9
#define MAX_RUNS 99
#define OFF_MULT 25 /* capture-off loops run this many times longer */
#define MAX_JOBS 12
#define NAME "bench"

#define CLOBBER() __asm__ __volatile__("" ::: "memory")
#define KEEP(x) __asm__ __volatile__("" : : "r"(x))

static long g_iters = DEFAULT_ITERS;
static int g_runs = DEFAULT_RUNS;

/* One child each; the last parks the drain to show what it costs. */
static const struct config {
	uint32_t rings;
	const char *drain_ms; /* ORBIT_DRAIN_MS, NULL: the default */
	const char *label;
} g_configs[] = {
    {1, NULL, "1"},
    {8, NULL, "8"},
    {16, NULL, "16"},
    {128, NULL, "128"},
    {8, "60000", "8, no drain"},
};
#define NCONFIGS (sizeof g_configs / sizeof g_configs[0])
#define HEADLINE 1 /* 8 rings, the default */
#define DEFAULT_RINGS 8u

/* What the loops are timed with: the thread's CPU time unless -m, so that
 * other processes preempting a pinned thread on a shared machine are not
 * counted as the write path's cost. */
static clockid_t g_clock = CLOCK_THREAD_CPUTIME_ID;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(g_clock);
}

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double s[MAX_RUNS];
	memcpy(s, v, (size_t)n * sizeof *s);
	qsort(s, (size_t)n, sizeof *s, cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

/* ---- the floor: the same instructions with nothing else ------------------ */

struct floor_slot {
	_Atomic uint64_t seq;
	uint64_t w[7];
} __attribute__((aligned(64)));

struct floor {
	_Alignas(64) _Atomic uint64_t ctr; /* private to one thread */
	struct floor_slot *slots;
	uint64_t mask;
	char pad[40];
};

_Static_assert(sizeof(struct floor_slot) == 64, "a floor slot is a ring slot");
_Static_assert(sizeof(struct floor) == 64, "a floor counter has its line");

static struct floor *floor_new(uint64_t slots)
{
	struct floor *f = aligned_alloc(64, sizeof *f);
	if (f == NULL)
		return NULL;
	memset(f, 0, sizeof *f);
	f->slots = aligned_alloc(64, slots * sizeof *f->slots);
	if (f->slots == NULL) {
		free(f);
		return NULL;
	}
	memset(f->slots, 0, slots * sizeof *f->slots);
	f->mask = slots - 1;
	return f;
}

static void floor_free(struct floor *f)
{
	if (f != NULL)
		free(f->slots);
	free(f);
}

/* One event of the floor: clock, claim, 56 bytes of payload, stamp. */
static inline __attribute__((always_inline)) void floor_event(struct floor *f, uint64_t id)
{
	uint64_t t = __builtin_ia32_rdtsc();
	uint64_t c = atomic_fetch_add_explicit(&f->ctr, 1, memory_order_relaxed);
	struct floor_slot *s = &f->slots[c & f->mask];
	s->w[0] = t;
	s->w[1] = id;
	s->w[2] = 0x0000000501001234ull; /* tid, kind, flags, len */
	s->w[3] = 0x68636e6562ull;       /* "bench" */
	s->w[4] = 0;
	s->w[5] = 0;
	s->w[6] = 0;
	atomic_store_explicit(&s->seq, c + 1, memory_order_release);
}

static __attribute__((noinline)) uint64_t job_floor_scope(void *ctx, long n)
{
	struct floor *f = ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		floor_event(f, (uint64_t)i);
		floor_event(f, (uint64_t)i);
	}
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_floor_event(void *ctx, long n)
{
	struct floor *f = ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		floor_event(f, (uint64_t)i);
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_floor_rdtsc(void *ctx, long n)
{
	(void)ctx;
	uint64_t acc = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		acc += __builtin_ia32_rdtsc();
	uint64_t t1 = now_ns();
	KEEP(acc);
	return t1 - t0;
}

static __attribute__((noinline)) uint64_t job_floor_fadd(void *ctx, long n)
{
	struct floor *f = ctx;
	uint64_t acc = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		acc += atomic_fetch_add_explicit(&f->ctr, 1, memory_order_relaxed);
	uint64_t t1 = now_ns();
	KEEP(acc);
	return t1 - t0;
}

static __attribute__((noinline)) uint64_t job_floor_store64(void *ctx, long n)
{
	struct floor *f = ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		struct floor_slot *s = &f->slots[(uint64_t)i & f->mask];
		atomic_store_explicit(&s->seq, (uint64_t)i, memory_order_relaxed);
		s->w[0] = (uint64_t)i;
		s->w[1] = (uint64_t)i;
		s->w[2] = 0x0000000501001234ull;
		s->w[3] = 0x68636e6562ull;
		s->w[4] = 0;
		s->w[5] = 0;
		s->w[6] = 0;
		CLOBBER();
	}
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_floor_release(void *ctx, long n)
{
	struct floor *f = ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		atomic_store_explicit(&f->slots[(uint64_t)i & f->mask].seq, (uint64_t)i + 1,
		                      memory_order_release);
	return now_ns() - t0;
}

/* ---- the write path (orbit/internal.h) ---------------------------------- */

static __attribute__((noinline)) uint64_t job_startstop(void *ctx, long n)
{
	(void)ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		ORBIT_START(NAME);
		ORBIT_STOP();
	}
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_scope(void *ctx, long n)
{
	(void)ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		ORBIT_SCOPE(NAME);
	}
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_empty(void *ctx, long n)
{
	(void)ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		__asm__ __volatile__("");
	return now_ns() - t0;
}

static __attribute__((noinline)) uint64_t job_ticks(void *ctx, long n)
{
	(void)ctx;
	uint64_t acc = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		acc += orbit__ticks();
	uint64_t t1 = now_ns();
	KEEP(acc);
	return t1 - t0;
}

static __attribute__((noinline)) uint64_t job_gettime(void *ctx, long n)
{
	(void)ctx;
	uint64_t acc = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		acc += (uint64_t)ts.tv_nsec;
	}
	uint64_t t1 = now_ns();
	KEEP(acc);
	return t1 - t0;
}

/* Republishes the last lap of the ring with the stamps its claims would
 * carry for what the slots hold, so the drain counts the unpublished claims
 * as lapped rather than waiting on their markers. */
static void ring_repair(struct orbit__thread *t)
{
	uint64_t cursor = atomic_load_explicit(&t->ring->cursor, memory_order_relaxed);
	uint64_t slots = t->mask + 1;
	for (uint64_t c = cursor > slots ? cursor - slots : 0; c < cursor; c++) {
		struct orbit__slot *s = &t->ring->slots[c & t->mask];
		uint64_t name[4];
		for (int i = 0; i < 4; i++)
			name[i] = atomic_load_explicit(&s->name[i], memory_order_relaxed);
		orbit__publish(s, c,
		               orbit__check(atomic_load_explicit(&s->time, memory_order_relaxed),
		                            atomic_load_explicit(&s->id, memory_order_relaxed),
		                            atomic_load_explicit(&s->meta, memory_order_relaxed),
		                            name));
	}
}

static __attribute__((noinline)) uint64_t job_claim(void *ctx, long n)
{
	struct orbit__thread *t = ctx;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint64_t claim;
		struct orbit__slot *s = orbit__claim(t, &claim);
		KEEP(s);
	}
	uint64_t t1 = now_ns();
	ring_repair(t);
	return t1 - t0;
}

static __attribute__((noinline)) uint64_t job_fill(void *ctx, long n)
{
	struct orbit__thread *t = ctx;
	uint64_t acc = 0;
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++)
		acc += orbit__fill(&t->ring->slots[(uint64_t)i & t->mask], (uint64_t)i,
		                   ORBIT__SCOPE_START, (uint64_t)i, t->tid, NAME, sizeof NAME - 1);
	uint64_t t1 = now_ns();
	KEEP(acc);
	ring_repair(t); /* the stamps say what the slots hold again */
	return t1 - t0;
}

/* The release store of a stamp, with a check from outside the loop; the
 * ring is repaired afterwards, as after the claim loop. */
static __attribute__((noinline)) uint64_t job_publish(void *ctx, long n)
{
	struct orbit__thread *t = ctx;
	uint64_t cursor = atomic_load_explicit(&t->ring->cursor, memory_order_relaxed);
	uint64_t base = cursor - (t->mask + 1); /* after ring_repair: a full lap */
	const uint64_t name[4] = {0x68636e6562ull, 0, 0, 0};
	uint64_t check = orbit__check(cursor, cursor, t->tid, name);
	KEEP(check);
	uint64_t t0 = now_ns();
	for (long i = 0; i < n; i++) {
		uint64_t c = base + ((uint64_t)i & t->mask);
		orbit__publish(&t->ring->slots[c & t->mask], c, check);
	}
	uint64_t t1 = now_ns();
	ring_repair(t);
	return t1 - t0;
}

/* ---- running jobs on pinned threads ------------------------------------- */

typedef uint64_t (*job_fn)(void *ctx, long n);

struct job {
	const char *key; /* child output key */
	job_fn fn;
	int ctx_kind; /* CTX_* */
	long iters;
	double ns[MAX_RUNS]; /* per operation, one per run */
};

enum { CTX_NONE, CTX_FLOOR, CTX_THREAD };

struct worker {
	pthread_t thread;
	int cpu;
	int pinned;
	uint32_t ring; /* index of the ring this thread writes */
	struct job jobs[MAX_JOBS];
	int njobs;
	uint64_t floor_slots;
	pthread_barrier_t *handshake; /* with the spawner: ring known */
	pthread_barrier_t *start;     /* among the workers: before each job */
	_Atomic int *go;
	int failed;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->pinned = pin(w->cpu) == 0;
	struct orbit__thread *t = orbit__self(); /* attach: picks the ring */
	const struct orbit__segment *seg = orbit__own_segment();
	if (t != NULL && seg != NULL)
		w->ring = (uint32_t)(((uint8_t *)t->ring - (seg->base + seg->layout.rings_offset)) /
		                     seg->layout.ring_stride);
	if (w->handshake != NULL) {
		pthread_barrier_wait(w->handshake);
		pthread_barrier_wait(w->handshake);
		if (!atomic_load(w->go))
			return NULL;
	}
	struct floor *f = floor_new(w->floor_slots);
	if (f == NULL || t == NULL) {
		w->failed = 1;
		floor_free(f);
		return NULL;
	}
	void *ctxs[] = {[CTX_NONE] = NULL, [CTX_FLOOR] = f, [CTX_THREAD] = t};
	/* Warm-up: fault in the ring and the floor's slots, train branches. */
	for (int j = 0; j < w->njobs; j++) {
		pthread_barrier_wait(w->start);
		w->jobs[j].fn(ctxs[w->jobs[j].ctx_kind], w->jobs[j].iters / 4);
	}
	for (int r = 0; r < g_runs; r++) {
		for (int j = 0; j < w->njobs; j++) {
			struct job *jb = &w->jobs[j];
			pthread_barrier_wait(w->start);
			uint64_t ns = jb->fn(ctxs[jb->ctx_kind], jb->iters);
			jb->ns[r] = (double)ns / (double)jb->iters;
		}
	}
	floor_free(f);
	return NULL;
}

/*
 * Runs the jobs on nthreads threads pinned to CPUs 0..nthreads-1, all
 * starting each job together; out[j] is the median over runs of the
 * threads' mean ns per operation, ratio[j] the median over runs of that
 * mean divided by job 0's in the same run (job 0 is the floor). With
 * distinct set, threads are respawned until they write distinct rings.
 * Returns 0, or -1 if a thread failed.
 */
static int run_jobs(const struct job *jobs, int njobs, int nthreads, int distinct,
                    uint64_t floor_slots, double *out, double *ratio, struct worker *info)
{
	struct worker w[2];
	pthread_barrier_t hs, start;
	_Atomic int go = 0;
	for (int attempt = 0;; attempt++) {
		pthread_barrier_init(&hs, NULL, (unsigned)nthreads + 1);
		pthread_barrier_init(&start, NULL, (unsigned)nthreads);
		for (int i = 0; i < nthreads; i++) {
			memset(&w[i], 0, sizeof w[i]);
			w[i].cpu = i;
			memcpy(w[i].jobs, jobs, (size_t)njobs * sizeof *jobs);
			w[i].njobs = njobs;
			w[i].floor_slots = floor_slots;
			w[i].handshake = &hs;
			w[i].start = &start;
			w[i].go = &go;
			if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) != 0)
				return -1;
		}
		pthread_barrier_wait(&hs);
		int ok = !distinct || nthreads < 2 || w[0].ring != w[1].ring || attempt >= 64;
		atomic_store(&go, ok);
		pthread_barrier_wait(&hs);
		for (int i = 0; i < nthreads; i++)
			pthread_join(w[i].thread, NULL);
		pthread_barrier_destroy(&hs);
		pthread_barrier_destroy(&start);
		if (ok)
			break;
	}
	for (int i = 0; i < nthreads; i++)
		if (w[i].failed)
			return -1;
	double per_run[MAX_JOBS][MAX_RUNS];
	for (int j = 0; j < njobs; j++) {
		for (int r = 0; r < g_runs; r++) {
			per_run[j][r] = 0;
			for (int i = 0; i < nthreads; i++)
				per_run[j][r] += w[i].jobs[j].ns[r];
			per_run[j][r] /= nthreads;
		}
		out[j] = median(per_run[j], g_runs);
	}
	for (int j = 0; j < njobs; j++) {
		double q[MAX_RUNS];
		for (int r = 0; r < g_runs; r++)
			q[r] = per_run[j][r] / per_run[0][r];
		ratio[j] = median(q, g_runs);
	}
	if (info != NULL)
		memcpy(info, w, (size_t)nthreads * sizeof *w);
	return 0;
}

/* ---- the child: one ring count ------------------------------------------ */

/* ns on a CPU of every thread of this process but the calling one: after
 * the workers are joined, the agent thread's. From /proc/self/task. */
static uint64_t other_threads_cpu_ns(void)
{
	uint64_t sum = 0;
	long self = (long)gettid();
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || atol(e->d_name) == self)
			continue;
		char path[300];
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
		FILE *f = fopen(path, "re");
		unsigned long long ns;
		if (f != NULL && fscanf(f, "%llu", &ns) == 1)
			sum += ns;
		if (f != NULL)
			fclose(f);
	}
	closedir(d);
	return sum;
}

static int child_main(void)
{
	/* The agent thread inherits this thread's CPU: CPU 1, the other core
	 * from the one writer, so it drains concurrently as on a machine with
	 * cores to spare, and never preempts the writer it measures. */
	int agent_pinned = sysconf(_SC_NPROCESSORS_ONLN) > 1 && pin(1) == 0;
	uint64_t wall0 = clock_ns(CLOCK_MONOTONIC);
	int err = orbit_init();
	if (err) {
		fprintf(stderr, "orbit-bench-scope: orbit_init: %s\n", orbit_strerror(err));
		return 1;
	}
	const struct orbit__segment *seg = orbit__own_segment();
	uint32_t rings = seg->layout.ring_count;
	uint64_t slots = seg->layout.slots_per_ring;
	const long n = g_iters;
	printf("rings %u\nslots %llu\nclock %u\nagent_pinned %d\n", rings,
	       (unsigned long long)slots, orbit__clock_kind, agent_pinned);

	/* Whole scopes, beside their floor, run by run. */
	const struct job scope_jobs[] = {
	    {"floor", job_floor_scope, CTX_FLOOR, n, {0}},
	    {"startstop", job_startstop, CTX_NONE, n, {0}},
	    {"scope", job_scope, CTX_NONE, n, {0}},
	};
	const int nscope = (int)(sizeof scope_jobs / sizeof scope_jobs[0]);
	double res[MAX_JOBS], ratio[MAX_JOBS];
	struct worker info[2];
	for (int threads = 1; threads <= 2; threads++) {
		if (run_jobs(scope_jobs, nscope, threads, 1, slots, res, ratio, info) != 0) {
			fprintf(stderr, "orbit-bench-scope: a thread failed\n");
			return 1;
		}
		for (int j = 0; j < nscope; j++)
			printf("%s%d %.4f\nr_%s%d %.4f\n", scope_jobs[j].key, threads, res[j],
			       scope_jobs[j].key, threads, ratio[j]);
		printf("pinned%d %d\n", threads, info[0].pinned && (threads < 2 || info[1].pinned));
		printf("ring%d %u %u\n", threads, info[0].ring, threads > 1 ? info[1].ring : 0);
	}

	/* The parts, on the real segment, beside the floor's parts. The claim
	 * job leaves its ring consistent for the publish job after it. */
	const struct job part_jobs[] = {
	    {"p_ticks", job_ticks, CTX_NONE, n, {0}},
	    {"p_gettime", job_gettime, CTX_NONE, n, {0}},
	    {"p_claim", job_claim, CTX_THREAD, n, {0}},
	    {"p_fill", job_fill, CTX_THREAD, n, {0}},
	    {"p_publish", job_publish, CTX_THREAD, n, {0}},
	    {"f_rdtsc", job_floor_rdtsc, CTX_NONE, n, {0}},
	    {"f_fadd", job_floor_fadd, CTX_FLOOR, n, {0}},
	    {"f_store64", job_floor_store64, CTX_FLOOR, n, {0}},
	    {"f_release", job_floor_release, CTX_FLOOR, n, {0}},
	    {"f_event", job_floor_event, CTX_FLOOR, n, {0}},
	};
	const int nparts = (int)(sizeof part_jobs / sizeof part_jobs[0]);
	if (run_jobs(part_jobs, nparts, 1, 0, slots, res, ratio, NULL) != 0) {
		fprintf(stderr, "orbit-bench-scope: a thread failed\n");
		return 1;
	}
	for (int j = 0; j < nparts; j++)
		printf("%s %.4f\n", part_jobs[j].key, res[j]);

	uint64_t wall = clock_ns(CLOCK_MONOTONIC) - wall0;
	printf("agent_cpu %.4f\n", wall ? (double)other_threads_cpu_ns() / (double)wall : 0);
	orbit_flush();
	struct orbit__agent_stats st;
	orbit__agent_stats(orbit__root_agent(), &st);
	printf("claimed %llu\ndrained %llu\nlost %llu\n", (unsigned long long)st.claimed,
	       (unsigned long long)st.drained,
	       (unsigned long long)(st.lost_lapped + st.lost_dead + st.lost_backstop));
	fflush(stdout);
	orbit_shutdown();
	return 0;
}

/* ---- the parent: capture off, children, the table ------------------------ */

struct result {
	uint32_t rings;
	uint64_t slots;
	uint32_t clock;
	double floor[3], startstop[3], scope[3]; /* [threads] */
	double r_startstop[3], r_scope[3];       /* medians of per-run ratios */
	int pinned[3];
	int agent_pinned;
	uint32_t ring2[2];
	double p_ticks, p_gettime, p_claim, p_fill, p_publish;
	double f_rdtsc, f_fadd, f_store64, f_release, f_event;
	unsigned long long claimed, drained, lost;
	double agent_cpu; /* the agent thread's CPU time / the child's wall time */
	int ok;
};

static void parse_line(struct result *r, const char *line)
{
	char key[32];
	double v;
	unsigned a, b;
	if (sscanf(line, "ring2 %u %u", &a, &b) == 2) {
		r->ring2[0] = a;
		r->ring2[1] = b;
		return;
	}
	if (sscanf(line, "%31s %lf", key, &v) != 2)
		return;
	static const struct {
		const char *key;
		size_t off;
	} dbl[] = {
#define F(k, field) {k, offsetof(struct result, field)}
	    F("floor1", floor[1]),
	    F("floor2", floor[2]),
	    F("startstop1", startstop[1]),
	    F("startstop2", startstop[2]),
	    F("scope1", scope[1]),
	    F("scope2", scope[2]),
	    F("r_startstop1", r_startstop[1]),
	    F("r_startstop2", r_startstop[2]),
	    F("r_scope1", r_scope[1]),
	    F("r_scope2", r_scope[2]),
	    F("p_ticks", p_ticks),
	    F("p_gettime", p_gettime),
	    F("p_claim", p_claim),
	    F("p_fill", p_fill),
	    F("p_publish", p_publish),
	    F("f_rdtsc", f_rdtsc),
	    F("f_fadd", f_fadd),
	    F("f_store64", f_store64),
	    F("f_release", f_release),
	    F("f_event", f_event),
#undef F
	};
	for (size_t i = 0; i < sizeof dbl / sizeof dbl[0]; i++)
		if (strcmp(key, dbl[i].key) == 0) {
			*(double *)((char *)r + dbl[i].off) = v;
			return;
		}
	if (strcmp(key, "rings") == 0)
		r->rings = (uint32_t)v;
	else if (strcmp(key, "slots") == 0)
		r->slots = (uint64_t)v;
	else if (strcmp(key, "clock") == 0)
		r->clock = (uint32_t)v;
	else if (strcmp(key, "agent_pinned") == 0)
		r->agent_pinned = (int)v;
	else if (strcmp(key, "pinned1") == 0)
		r->pinned[1] = (int)v;
	else if (strcmp(key, "pinned2") == 0)
		r->pinned[2] = (int)v;
	else if (strcmp(key, "agent_cpu") == 0)
		r->agent_cpu = v;
	else if (strcmp(key, "claimed") == 0)
		r->claimed = (unsigned long long)v;
	else if (strcmp(key, "drained") == 0)
		r->drained = (unsigned long long)v;
	else if (strcmp(key, "lost") == 0)
		r->lost = (unsigned long long)v;
}

static int run_child(const char *self, const struct config *cfg, struct result *r)
{
	int fd[2];
	if (pipe(fd) != 0)
		return -errno;
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char rs[16], ns[32], runs[16];
		snprintf(rs, sizeof rs, "%u", cfg->rings);
		snprintf(ns, sizeof ns, "%ld", g_iters);
		snprintf(runs, sizeof runs, "%d", g_runs);
		close(fd[0]);
		if (dup2(fd[1], STDOUT_FILENO) < 0)
			_exit(127);
		close(fd[1]);
		setenv("ORBIT_RINGS", rs, 1);
		if (cfg->drain_ms != NULL)
			setenv("ORBIT_DRAIN_MS", cfg->drain_ms, 1);
		execl(self, self, "-n", ns, "-r", runs, "--child",
		      g_clock == CLOCK_MONOTONIC ? "-m" : (char *)NULL, (char *)NULL);
		fprintf(stderr, "orbit-bench-scope: exec %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	close(fd[1]);
	FILE *in = fdopen(fd[0], "r");
	if (in == NULL) {
		close(fd[0]);
		waitpid(pid, NULL, 0);
		return -errno;
	}
	memset(r, 0, sizeof *r);
	char line[256];
	while (fgets(line, sizeof line, in) != NULL)
		parse_line(r, line);
	fclose(in);
	int status;
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	r->ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && r->rings == cfg->rings;
	return r->ok ? 0 : -1;
}

struct off_result {
	double empty, startstop, scope; /* ns per loop iteration */
	int pinned;
};

static void *capture_off_main(void *arg)
{
	struct off_result *o = arg;
	o->pinned = pin(0) == 0;
	const long n = g_iters * OFF_MULT;
	double e[MAX_RUNS], s[MAX_RUNS], c[MAX_RUNS];
	job_empty(NULL, n / 4);
	job_startstop(NULL, n / 4);
	job_scope(NULL, n / 4);
	for (int r = 0; r < g_runs; r++) {
		e[r] = (double)job_empty(NULL, n) / (double)n;
		s[r] = (double)job_startstop(NULL, n) / (double)n;
		c[r] = (double)job_scope(NULL, n) / (double)n;
	}
	o->empty = median(e, g_runs);
	o->startstop = median(s, g_runs);
	o->scope = median(c, g_runs);
	return NULL;
}

static void machine(char *model, size_t len)
{
	snprintf(model, len, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "re");
	if (f == NULL)
		return;
	char line[256];
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');
			if (p != NULL) {
				p += 1 + strspn(p + 1, " \t");
				p[strcspn(p, "\n")] = '\0';
				snprintf(model, len, "%s", p);
			}
			break;
		}
	}
	fclose(f);
}

static void clocksource(char *buf, size_t len)
{
	snprintf(buf, len, "unknown");
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) != NULL)
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

static const char *clock_name(uint32_t k)
{
	switch (k) {
	case ORBIT__CLOCK_TSC:
		return "tsc (rdtsc)";
	case ORBIT__CLOCK_CNTVCT:
		return "arm64 virtual counter";
	default:
		return "clock_gettime(CLOCK_MONOTONIC)";
	}
}

/* " 12.34 (1.07x)" */
static void cell(double v, double ratio)
{
	if (v <= 0) {
		printf(" %14s", "-");
		return;
	}
	if (ratio > 0)
		printf(" %6.2f (%.2fx)", v, ratio);
	else
		printf(" %14.2f", v);
}

static void row_parts(const char *label, const struct result *res, size_t off)
{
	printf("%-36s", label);
	for (size_t k = 0; k < NCONFIGS; k++) {
		double v = *(const double *)((const char *)&res[k] + off);
		if (res[k].ok)
			printf(" %14.2f", v);
		else
			printf(" %14s", "-");
	}
	printf("\n");
}

static void usage(void)
{
	fprintf(stderr, "usage: orbit-bench-scope [-n iterations] [-r runs] [-m]\n"
	                "  -m  time loops with CLOCK_MONOTONIC, not the thread's CPU time\n");
}

int main(int argc, char **argv)
{
	int child = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--child") == 0) {
			child = 1;
		} else if (strcmp(argv[i], "-n") == 0 && i + 1 < argc) {
			g_iters = atol(argv[++i]);
		} else if (strcmp(argv[i], "-r") == 0 && i + 1 < argc) {
			g_runs = atoi(argv[++i]);
		} else if (strcmp(argv[i], "-m") == 0) {
			g_clock = CLOCK_MONOTONIC;
		} else {
			usage();
			return 2;
		}
	}
	if (g_iters < 1000 || g_runs < 1 || g_runs > MAX_RUNS) {
		usage();
		return 2;
	}
	if (child)
		return child_main();

	/* The parent never traces: capture off is measured here. */
	if (atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed)) {
		fprintf(stderr, "orbit-bench-scope: ORBIT_COLLECTOR/ORBIT_CAPTURE started a "
		                "capture; stopping it for the benchmark\n");
		orbit_shutdown();
	}
	unsetenv("ORBIT_COLLECTOR");
	unsetenv("ORBIT_CAPTURE");

	char model[128], cs[64];
	machine(model, sizeof model);
	clocksource(cs, sizeof cs);
	uint64_t t_start = clock_ns(CLOCK_MONOTONIC);

	struct off_result off;
	pthread_t th;
	if (pthread_create(&th, NULL, capture_off_main, &off) != 0) {
		fprintf(stderr, "orbit-bench-scope: pthread_create failed\n");
		return 1;
	}
	pthread_join(th, NULL);

	struct result res[NCONFIGS];
	for (size_t k = 0; k < NCONFIGS; k++)
		if (run_child("/proc/self/exe", &g_configs[k], &res[k]) != 0)
			fprintf(stderr, "orbit-bench-scope: the child for %s ring(s) failed\n",
			        g_configs[k].label);

	const struct result *h = res[HEADLINE].ok ? &res[HEADLINE] : NULL;
	uint32_t clock = ORBIT__CLOCK_MONOTONIC;
	int pinned = 1;
	for (size_t k = 0; k < NCONFIGS; k++)
		if (res[k].ok) {
			clock = res[k].clock;
			pinned &= res[k].pinned[1] && res[k].pinned[2] && res[k].agent_pinned;
		}

	printf("orbit-bench-scope: ns per operation, median of %d runs of %ld iterations, "
	       "timed with %s\n",
	       g_runs, g_iters,
	       g_clock == CLOCK_MONOTONIC ? "CLOCK_MONOTONIC" : "the thread's CPU time");
	printf("machine: %s, %ld CPUs, clocksource %s; producers' clock: %s\n", model,
	       sysconf(_SC_NPROCESSORS_ONLN), cs, clock_name(clock));
	printf("1 writing thread on CPU 0, 2 on CPUs 0 and 1; the agent thread on CPU 1 "
	       "drains every 10 ms meanwhile%s\n",
	       pinned ? "" : " (pinning FAILED)");

	printf("\nParts of the write path, 1 thread, each in a loop of its own (ns per event)\n");
	printf("%-36s", "rings");
	for (size_t k = 0; k < NCONFIGS; k++)
		printf(" %14s", g_configs[k].label);
	printf("\n%-36s", "slots per ring");
	for (size_t k = 0; k < NCONFIGS; k++)
		printf(" %14llu", (unsigned long long)res[k].slots);
	printf("\n");
#define ROWP(label, field) row_parts(label, res, offsetof(struct result, field))
	ROWP("clock: orbit__ticks()", p_ticks);
	ROWP("clock: clock_gettime(MONOTONIC)", p_gettime);
	ROWP("claim: orbit__claim() (+ marker)", p_claim);
	ROWP("payload: orbit__fill() (+ check)", p_fill);
	ROWP("publish: orbit__publish()", p_publish);
	printf("%-36s", "sum of the four");
	for (size_t k = 0; k < NCONFIGS; k++)
		printf(" %14.2f",
		       res[k].p_ticks + res[k].p_claim + res[k].p_fill + res[k].p_publish);
	printf("\n");
	ROWP("floor: rdtsc", f_rdtsc);
	ROWP("floor: relaxed fetch_add, private", f_fadd);
	ROWP("floor: 64-byte slot store, private", f_store64);
	ROWP("floor: release store of a stamp", f_release);
	ROWP("floor: one event, all four in one", f_event);
#undef ROWP

	printf("\nWhole scope = 2 events (ns per scope; median ratio to the floor run beside "
	       "it)\n");
	printf("%-36s", "rings");
	for (size_t k = 0; k < NCONFIGS; k++)
		printf(" %14s", g_configs[k].label);
	printf("\n");
	for (int t = 1; t <= 2; t++) {
		printf("%-36s", t == 1 ? "floor, 1 thread" : "floor, 2 threads");
		for (size_t k = 0; k < NCONFIGS; k++)
			cell(res[k].ok ? res[k].floor[t] : 0, 0);
		printf("\n%-36s", t == 1 ? "ORBIT_START+ORBIT_STOP, 1 thread"
		                         : "ORBIT_START+ORBIT_STOP, 2 threads");
		for (size_t k = 0; k < NCONFIGS; k++)
			cell(res[k].ok ? res[k].startstop[t] : 0, res[k].r_startstop[t]);
		printf("\n%-36s", t == 1 ? "ORBIT_SCOPE, 1 thread" : "ORBIT_SCOPE, 2 threads");
		for (size_t k = 0; k < NCONFIGS; k++)
			cell(res[k].ok ? res[k].scope[t] : 0, res[k].r_scope[t]);
		printf("\n");
	}
	printf("%-36s", "rings of the 2 threads");
	for (size_t k = 0; k < NCONFIGS; k++) {
		char b[32];
		snprintf(b, sizeof b, "%u, %u", res[k].ring2[0], res[k].ring2[1]);
		printf(" %14s", res[k].ok ? b : "-");
	}
	printf("\n%-36s", "lost to lapping, whole child");
	for (size_t k = 0; k < NCONFIGS; k++) {
		char b[32];
		snprintf(b, sizeof b, "%.1f %%",
		         res[k].claimed ? 100.0 * (double)res[k].lost / (double)res[k].claimed : 0);
		printf(" %14s", res[k].ok ? b : "-");
	}
	printf("\n%-36s", "agent thread busy, whole child");
	for (size_t k = 0; k < NCONFIGS; k++) {
		char b[32];
		snprintf(b, sizeof b, "%.1f %%", 100.0 * res[k].agent_cpu);
		printf(" %14s", res[k].ok ? b : "-");
	}
	printf("\n%-36s", "claimed == drained + lost");
	for (size_t k = 0; k < NCONFIGS; k++)
		printf(" %14s", !res[k].ok                                       ? "-"
		                : res[k].claimed == res[k].drained + res[k].lost ? "yes"
		                                                                 : "NO");
	printf("\n");

	printf("\nCapture off (orbit_init() never called), ns per macro, %ld iterations\n",
	       g_iters * OFF_MULT);
	printf("%-36s %9.2f\n", "empty loop, per iteration", off.empty);
	printf("%-36s %9.2f   (net of the loop %.2f)\n", "ORBIT_START / ORBIT_STOP, each",
	       off.startstop / 2, (off.startstop - off.empty) / 2);
	printf("%-36s %9.2f   (net of the loop %.2f)\n", "ORBIT_SCOPE", off.scope,
	       off.scope - off.empty);

	double worst = off.startstop / 2 > off.scope ? off.startstop / 2 : off.scope;
	printf("\nTargets (%u rings, the default, 1 thread; ratios to the floor beside them)\n",
	       DEFAULT_RINGS);
	for (size_t k = 0; k < NCONFIGS; k++) {
		const struct result *r = &res[k];
		if (!r->ok || r->rings != DEFAULT_RINGS)
			continue;
		double ss = r->r_startstop[1], sc = r->r_scope[1];
		printf("  whole scope <= 1.10 x floor, %-22s START+STOP %.2fx, ORBIT_SCOPE "
		       "%.2fx: %s\n",
		       g_configs[k].drain_ms ? "drain parked:" : "drain concurrent:", ss, sc,
		       ss <= 1.10 && sc <= 1.10 ? "holds" : "MISSED");
	}
	printf("  capture off <= 1 ns per macro: %.2f ns: %s\n", worst,
	       worst <= 1.0 ? "holds" : "MISSED");
	if (h != NULL) {
		printf("\nPeers per scope, 1 thread (limits-and-peers.md, same kind of machine)\n");
		printf("  LTTng-UST ~200 ns, Perfetto SDK ~320 ns, Tracy ~48 ns: START+STOP here "
		       "(%.2f ns) is %.1fx, %.1fx, %.1fx cheaper\n",
		       h->startstop[1], 200 / h->startstop[1], 320 / h->startstop[1],
		       48 / h->startstop[1]);
	}
	printf("\n(%.1f s)\n", (double)(clock_ns(CLOCK_MONOTONIC) - t_start) / 1e9);
	return 0;
}
