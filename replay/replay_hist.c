/*
 * replay_hist.c — log-bucketed histograms for percentiles within 1 %.
 *
 * Values under 64 have a bucket each. Above, every power of two [2^k,
 * 2^(k+1)) is cut into 64 equal buckets, so a bucket [lo, hi] is never
 * wider than lo / 64; its midpoint is within 1/128 (0.78 %) of any value in
 * it. 3776 buckets cover all of u64.
 *
 * A histogram holds its first ORBIT_RP_HIST_INLINE values as they are (most
 * names of a real trace are rare, and their percentiles are then exact),
 * then only the range of buckets between its smallest and largest value.
 * Memory comes out of a budget the caller owns; a histogram that cannot
 * grow clamps new values into its range and says it is approximate.
 */
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

void orbit__rp_hist_range(uint32_t b, uint64_t *lo, uint64_t *hi)
{
	if (b < (1u << ORBIT_RP_HIST_SUB)) {
		*lo = *hi = b;
		return;
	}
	unsigned shift = (b >> ORBIT_RP_HIST_SUB) - 1u;
	uint64_t sub = b & ((1u << ORBIT_RP_HIST_SUB) - 1);
	*lo = (((uint64_t)1 << ORBIT_RP_HIST_SUB) | sub) << shift;
	*hi = *lo + (((uint64_t)1 << shift) - 1);
}

/* Makes room for bucket b; 0, or -1 when the budget or memory says no. */
static int hist_reach(struct orbit_rp_hist *h, uint32_t b, int64_t *budget)
{
	if (h->n > 0 && b >= h->lo && b < h->lo + h->n)
		return 0;
	uint32_t lo = h->n ? (b < h->lo ? b : h->lo) : b;
	uint32_t end = h->n ? (b >= h->lo + h->n ? b + 1 : h->lo + h->n) : b + 1;
	/* Slack on the side that grew, so a drifting range reallocates rarely. */
	if (h->n && lo < h->lo)
		lo = lo > 16 ? lo - 16 : 0;
	if (h->n && end > h->lo + h->n)
		end = end + 16 < ORBIT_RP_HIST_BUCKETS ? end + 16 : ORBIT_RP_HIST_BUCKETS;
	int64_t more = (int64_t)(end - lo - h->n) * (int64_t)sizeof(uint32_t);
	if (more > *budget)
		return -1;
	uint32_t *c = calloc(end - lo, sizeof *c);
	if (c == NULL)
		return -1;
	if (h->n)
		memcpy(c + (h->lo - lo), h->counts, h->n * sizeof *c);
	free(h->counts);
	h->counts = c;
	h->lo = lo;
	h->n = end - lo;
	*budget -= more;
	return 0;
}

static void hist_count(struct orbit_rp_hist *h, uint64_t v, int64_t *budget)
{
	uint32_t b = orbit__rp_hist_bucket(v);
	if (hist_reach(h, b, budget) != 0) {
		h->approx = 1;
		if (h->n == 0)
			return; /* nothing to clamp into: the value is not counted */
		b = b < h->lo ? h->lo : h->lo + h->n - 1;
	}
	uint32_t *c = &h->counts[b - h->lo];
	if (*c == UINT32_MAX)
		h->approx = 1;
	else
		(*c)++;
}

void orbit__rp_hist_add(struct orbit_rp_hist *h, uint64_t v, int64_t *budget)
{
	uint32_t b = orbit__rp_hist_bucket(v);
	if (b - h->lo < h->n && h->counts[b - h->lo] != UINT32_MAX) { /* the usual case */
		h->counts[b - h->lo]++;
		return;
	}
	if (h->n == 0 && h->ninline < ORBIT_RP_HIST_INLINE) {
		h->inl[h->ninline++] = v;
		return;
	}
	if (h->ninline > 0) { /* the inline values move into buckets */
		uint32_t k = h->ninline;
		h->ninline = 0;
		for (uint32_t i = 0; i < k; i++)
			hist_count(h, h->inl[i], budget);
	}
	hist_count(h, v, budget);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p % of the values at or
 * below it. */
static uint64_t rank_of(uint64_t total, double p)
{
	double r = p / 100.0 * (double)total;
	uint64_t k = (uint64_t)r;
	if ((double)k < r)
		k++;
	return k < 1 ? 1 : k > total ? total : k;
}

uint64_t orbit__rp_hist_pct(const struct orbit_rp_hist *h, double p, uint64_t min, uint64_t max)
{
	if (h->ninline > 0) {
		uint64_t v[ORBIT_RP_HIST_INLINE];
		memcpy(v, h->inl, h->ninline * sizeof *v);
		qsort(v, h->ninline, sizeof *v, cmp_u64);
		return v[rank_of(h->ninline, p) - 1];
	}
	uint64_t total = 0;
	for (uint32_t i = 0; i < h->n; i++)
		total += h->counts[i];
	if (total == 0)
		return 0;
	uint64_t want = rank_of(total, p), seen = 0;
	uint32_t i = 0;
	for (; i < h->n; i++) {
		seen += h->counts[i];
		if (seen >= want)
			break;
	}
	uint64_t lo, hi;
	orbit__rp_hist_range(h->lo + (i < h->n ? i : h->n - 1), &lo, &hi);
	uint64_t mid = lo + (hi - lo) / 2;
	if (mid < min)
		mid = min;
	if (mid > max)
		mid = max;
	return mid;
}

void orbit__rp_hist_free(struct orbit_rp_hist *h)
{
	free(h->counts);
	memset(h, 0, sizeof *h);
}
