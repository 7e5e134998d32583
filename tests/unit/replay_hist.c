/* replay_hist.c — orbit-replay's histograms: every percentile within 1 %
 * of the exact nearest-rank value, for distributions that stress the
 * buckets; exact while few values; honest (flagged) when the memory budget
 * runs out. One case per run: replay_hist CASE. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_internal.h"

#define N 200000

static uint64_t rng = 88172645463325252ull;

static double unit(void)
{
	return (double)(test_rand(&rng) >> 11) / 9007199254740992.0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t exact(const uint64_t *v, size_t n, double p)
{
	double r = p / 100.0 * (double)n;
	size_t k = (size_t)r;
	if ((double)k < r)
		k++;
	if (k < 1)
		k = 1;
	return v[k - 1];
}

/* Adds the values, then checks p1 .. p100 against the sorted values. */
static void check_values(uint64_t *v, size_t n)
{
	struct orbit_rp_hist h;
	int64_t budget = 1 << 30;
	uint64_t min = UINT64_MAX, max = 0;
	memset(&h, 0, sizeof h);
	for (size_t i = 0; i < n; i++) {
		orbit__rp_hist_add(&h, v[i], &budget);
		min = v[i] < min ? v[i] : min;
		max = v[i] > max ? v[i] : max;
	}
	CHECK(!h.approx);
	qsort(v, n, sizeof *v, cmp);
	static const double ps[] = {1, 10, 25, 50, 75, 90, 95, 99, 99.9, 100};
	for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
		uint64_t want = exact(v, n, ps[i]);
		uint64_t got = orbit__rp_hist_pct(&h, ps[i], min, max);
		double err = want ? fabs((double)got - (double)want) / (double)want : (double)got;
		if (err > 0.01) {
			fprintf(stderr, "p%g: got %llu, want %llu (%.3f %%)\n", ps[i],
			        (unsigned long long)got, (unsigned long long)want, err * 100);
			exit(1);
		}
	}
	orbit__rp_hist_free(&h);
}

static void fill(uint64_t *v, size_t n, uint64_t (*gen)(void))
{
	for (size_t i = 0; i < n; i++)
		v[i] = gen();
}

static uint64_t g_uniform(void)
{
	return 1 + test_rand(&rng) % 1000000;
}

static uint64_t g_lognormal(void)
{
	double u = unit(), w = unit();
	double z = sqrt(-2 * log(u + 1e-300)) * cos(2 * 3.14159265358979 * w);
	return (uint64_t)exp(9 + 2.5 * z) + 1;
}

static uint64_t g_constant(void)
{
	return 123457;
}

static uint64_t g_small(void)
{
	return test_rand(&rng) % 200;
}

static uint64_t g_huge(void)
{
	return UINT64_MAX - test_rand(&rng) % (UINT64_MAX / 3);
}

static uint64_t g_bimodal(void)
{
	return test_rand(&rng) % 10 ? 20 + test_rand(&rng) % 10
	                            : 50000000 + test_rand(&rng) % 1000000;
}

static void bucket_bounds(void)
{
	/* Buckets tile u64: each starts right after the previous one ends,
	 * values map into the bucket that holds them, and no bucket is
	 * wider than 1/64 of its start. */
	uint64_t prev_hi = 0;
	for (uint32_t b = 0; b < ORBIT_RP_HIST_BUCKETS; b++) {
		uint64_t lo, hi;
		orbit__rp_hist_range(b, &lo, &hi);
		CHECK(b == 0 ? lo == 0 : lo == prev_hi + 1);
		CHECK(hi >= lo);
		CHECK(lo < 64 || (hi - lo + 1) * 64 <= lo);
		CHECK(orbit__rp_hist_bucket(lo) == b && orbit__rp_hist_bucket(hi) == b);
		prev_hi = hi;
	}
	CHECK(prev_hi == UINT64_MAX);
}

static void inline_exact(void)
{
	uint64_t v[3] = {500, 100, 300};
	struct orbit_rp_hist h;
	int64_t budget = 0; /* nothing allowed: inline values need none */
	memset(&h, 0, sizeof h);
	for (int i = 0; i < 3; i++)
		orbit__rp_hist_add(&h, v[i], &budget);
	CHECK_EQ_U64(orbit__rp_hist_pct(&h, 50, 100, 500), 300);
	CHECK_EQ_U64(orbit__rp_hist_pct(&h, 1, 100, 500), 100);
	CHECK_EQ_U64(orbit__rp_hist_pct(&h, 100, 100, 500), 500);
	CHECK(!h.approx);
}

static void budget(void)
{
	struct orbit_rp_hist h;
	int64_t budget = 64; /* 16 buckets */
	memset(&h, 0, sizeof h);
	for (uint64_t v = 1000; v < 1000000; v += 997)
		orbit__rp_hist_add(&h, v, &budget);
	CHECK(h.approx);
	CHECK(budget >= 0);
	CHECK(h.n <= 16);
	orbit__rp_hist_free(&h);
}

/* A distribution: every percentile of N values, and of a few only (below
 * the inline count and just above). */
static const struct dist {
	const char *name;
	uint64_t (*gen)(void);
} dists[] = {{"uniform", g_uniform}, {"lognormal", g_lognormal}, {"constant", g_constant},
             {"small", g_small},     {"huge", g_huge},           {"bimodal", g_bimodal}};

static void run_dist(const void *entry)
{
	static uint64_t v[N];
	const struct dist *d = entry;
	fill(v, N, d->gen);
	check_values(v, N);
	for (size_t n = 1; n < 9; n++) {
		fill(v, n, d->gen);
		check_values(v, n);
	}
}

static const struct test_case cases[] = {
    {"buckets", bucket_bounds},
    {"inline", inline_exact},
    {"budget", budget},
};

TEST_MAIN_WITH(cases, .family = TEST_FAMILY(dists, run_dist))
