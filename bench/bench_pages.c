/* bench_pages.c — orbit-bench-pages: the page ring's reserve+commit cost and
 * the reader's page rate, beside a scope-ring-like baseline measured in the
 * same run (a 64-byte slot write: relaxed fetch_add, rdtsc, plain stores,
 * release store). Prints medians of several runs; never passes or fails.
 *
 * Usage: orbit-bench-pages [runs]   (default 7)
 *
 * Writer rows: a batch of records per thread into a ring big enough that
 * overwrite-off never fills (reset between runs, untimed), or a 64-page ring
 * that wraps continuously with overwrite on. "same" = both threads on one
 * ring, "separate" = one ring each. Two clocks: CLOCK_MONOTONIC (what the
 * agent passes) and raw rdtsc (the ring's own cost, as the scope ring
 * pays for its clock). Dropped records (overwrite on, the head held by the
 * other writer) are cheap, so rows with drops print their share. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "page_ring.h"

#if defined(__x86_64__)
#include <x86intrin.h>
static inline uint64_t ticks(void)
{
	return __rdtsc();
}
#else
static inline uint64_t ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
#endif

#define PAGE 4096u
#define MAX_RUNS 31

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_clock(void *arg)
{
	(void)arg;
	return now_ns();
}

static uint64_t tsc_clock(void *arg)
{
	(void)arg;
	return ticks();
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the baseline: a scope-ring event ---- */

struct slot {
	_Atomic uint64_t seq;
	uint64_t ts;
	uint8_t payload[48];
};

struct slot_ring {
	_Alignas(64) _Atomic uint64_t head;
	_Alignas(64) struct slot slots[8192];
};

static struct slot_ring slot_rings[2];

static inline void slot_write(struct slot_ring *r, const uint8_t *payload)
{
	uint64_t i = atomic_fetch_add_explicit(&r->head, 1, memory_order_relaxed);
	struct slot *s = &r->slots[i & 8191];

	s->ts = ticks();
	memcpy(s->payload, payload, sizeof(s->payload));
	atomic_store_explicit(&s->seq, i, memory_order_release);
}

/* ---- threads ---- */

struct job {
	struct orbit__page_ring *ring; /* NULL: baseline */
	struct slot_ring *slots;
	uint32_t len;
	uint64_t count;
	pthread_barrier_t *start;
	double ns_per_rec;
	uint64_t failed;
};

static void *job_main(void *p)
{
	struct job *j = p;
	uint8_t payload[256];
	struct orbit__page_reservation res;
	uint64_t t0, t1;

	memset(payload, 0xab, sizeof(payload));
	pthread_barrier_wait(j->start);
	t0 = now_ns();
	if (j->ring == NULL) {
		for (uint64_t i = 0; i < j->count; i++)
			slot_write(j->slots, payload);
	} else {
		for (uint64_t i = 0; i < j->count; i++) {
			if (orbit__page_reserve(j->ring, j->len, &res) != 0) {
				j->failed++;
				continue;
			}
			memcpy(res.data, payload, j->len);
			orbit__page_commit(j->ring, &res);
		}
	}
	t1 = now_ns();
	j->ns_per_rec = (double)(t1 - t0) / (double)j->count;
	return NULL;
}

/* Runs `threads` jobs at once; returns the mean ns per record. */
static double run_jobs(struct job *jobs, int threads)
{
	pthread_barrier_t start;
	pthread_t t[2];
	double sum = 0;

	pthread_barrier_init(&start, NULL, (unsigned)threads);
	for (int i = 0; i < threads; i++) {
		jobs[i].start = &start;
		pthread_create(&t[i], NULL, job_main, &jobs[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		sum += jobs[i].ns_per_rec;
	}
	pthread_barrier_destroy(&start);
	return sum / threads;
}

static struct orbit__page_ring *new_ring(uint32_t pages, int overwrite, orbit__page_clock_fn clk)
{
	struct orbit__page_config cfg = {
	    .pages = pages, .page_size = PAGE, .overwrite = overwrite, .clock = clk};
	struct orbit__page_ring *ring;

	if (orbit__page_create(&ring, &cfg) != 0 || orbit__page_enable(ring) != 0) {
		fprintf(stderr, "orbit-bench-pages: cannot create a ring of %u pages\n", pages);
		exit(1);
	}
	return ring;
}

static uint32_t rec_bytes(uint32_t len)
{
	return (len <= 112 ? 4 : 8) + ((len + 3) & ~3u);
}

/* One writer configuration, median of `runs`. */
static double bench_writers(uint32_t len, int threads, int same, int overwrite,
                            orbit__page_clock_fn clk, int runs, double *failed_pct)
{
	uint32_t pages = overwrite ? 64 : 2048;
	int nrings = same ? 1 : threads;
	uint64_t per_ring = (uint64_t)pages * ((PAGE - 16) / rec_bytes(len)) * 8 / 10;
	uint64_t count = overwrite ? 200000 : per_ring / (uint64_t)(same ? threads : 1);
	struct orbit__page_ring *rings[2];
	double v[MAX_RUNS];
	uint64_t failed = 0;

	for (int i = 0; i < nrings; i++)
		rings[i] = new_ring(pages, overwrite, clk);
	for (int r = 0; r < runs; r++) {
		struct job jobs[2];

		memset(jobs, 0, sizeof(jobs));
		for (int i = 0; i < threads; i++) {
			jobs[i].ring = rings[same ? 0 : i];
			jobs[i].len = len;
			jobs[i].count = count;
		}
		v[r] = run_jobs(jobs, threads);
		for (int i = 0; i < threads; i++)
			failed += jobs[i].failed;
		for (int i = 0; i < nrings; i++) { /* empty again, untimed */
			orbit__page_disable(rings[i], NULL);
			orbit__page_enable(rings[i]);
		}
	}
	for (int i = 0; i < nrings; i++)
		orbit__page_destroy(rings[i]);
	*failed_pct = 100.0 * (double)failed / ((double)count * threads * runs);
	return median(v, runs);
}

static double bench_baseline(int threads, int same, int runs)
{
	double v[MAX_RUNS];

	for (int r = 0; r < runs; r++) {
		struct job jobs[2];

		memset(jobs, 0, sizeof(jobs));
		for (int i = 0; i < threads; i++) {
			jobs[i].slots = &slot_rings[same ? 0 : i];
			jobs[i].count = 2000000;
		}
		v[r] = run_jobs(jobs, threads);
	}
	return median(v, runs);
}

/* Reader: pages per second out of a full 2048-page ring of 64-byte records. */
static double bench_reader(int runs)
{
	struct orbit__page_ring *ring = new_ring(2048, 0, mono_clock);
	static uint8_t page[PAGE];
	uint8_t payload[64] = {0};
	double v[MAX_RUNS];

	for (int r = 0; r < runs; r++) {
		struct orbit__page_reservation res;
		uint64_t n = 0, t0;

		while (orbit__page_reserve(ring, sizeof(payload), &res) == 0) {
			memcpy(res.data, payload, sizeof(payload));
			orbit__page_commit(ring, &res);
		}
		t0 = now_ns();
		do {
			while (orbit__page_read(ring, page, sizeof(page)) > 0)
				n++;
		} while (orbit__page_flush(ring, 0) == 1);
		v[r] = (double)n * 1e9 / (double)(now_ns() - t0);
		orbit__page_disable(ring, NULL);
		orbit__page_enable(ring);
	}
	orbit__page_destroy(ring);
	return median(v, runs);
}

int main(int argc, char **argv)
{
	static const uint32_t lens[] = {16, 64, 256};
	static const struct {
		int threads, same;
		const char *name;
	} cfgs[] = {{1, 1, "1 thread"}, {2, 1, "2 thr same ring"}, {2, 0, "2 thr separate"}};
	int runs = argc > 1 ? atoi(argv[1]) : 7;

	if (runs < 1 || runs > MAX_RUNS)
		runs = 7;
	printf("orbit-bench-pages: medians of %d runs, ns per record (per thread)\n\n", runs);
	printf("%-16s %-9s %7s | %9s %9s | %9s | %7s %7s\n", "threads", "overwrite", "payload",
	       "mono clk", "rdtsc clk", "baseline", "x mono", "x rdtsc");
	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		double base = bench_baseline(cfgs[c].threads, cfgs[c].same, runs);

		for (int ow = 0; ow < 2; ow++) {
			for (size_t l = 0; l < 3; l++) {
				double f1, f2;
				double m = bench_writers(lens[l], cfgs[c].threads, cfgs[c].same, ow,
				                         mono_clock, runs, &f1);
				double t = bench_writers(lens[l], cfgs[c].threads, cfgs[c].same, ow,
				                         tsc_clock, runs, &f2);

				printf("%-16s %-9s %7u | %9.1f %9.1f | %9.1f | %7.2f %7.2f",
				       cfgs[c].name, ow ? "on" : "off", lens[l], m, t, base,
				       m / base, t / base);
				if (f1 + f2 > 0)
					printf("  dropped %.1f%% / %.1f%%", f1, f2);
				printf("\n");
			}
		}
	}
	printf("\nreader: %.0f pages/s (4 KiB pages of 64-byte records, copy + reset)\n",
	       bench_reader(runs));
	return 0;
}
