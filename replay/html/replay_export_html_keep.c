/*
 * replay_export_html_keep.c — the spans the --html page keeps: all of
 * them, or with --html-max-scopes N the N longest, and for the others how
 * many there were per lane and where (a density the page draws as a
 * strip under the lane).
 *
 * With a cap, the kept spans are a min-heap by duration: a span longer
 * than the shortest kept one takes its place, which is then left out;
 * a span not longer is left out itself. Unfinished spans (no duration)
 * rank above every finished one: they are what a reader looks for. A
 * scope is never shorter than a scope inside it, so what is kept is closed
 * under "the scope around it" except between scopes of equal duration.
 * Memory is the cap's: N spans, the heap, and the extras of kept spans
 * (slots of left-out spans are reused through a free list).
 */
#include <stdlib.h>
#include <string.h>

#include "replay_html.h"

static uint64_t rank(const struct orbit_rp_html_span *s)
{
	if ((s->depth_flags >> 24) & ORBIT_RP_UNFINISHED)
		return UINT64_MAX;
	return s->end - s->start;
}

static int below(const struct orbit_rp_html_keep *k, uint32_t a, uint32_t b)
{
	return rank(&k->spans[a]) < rank(&k->spans[b]);
}

static void sift_down(struct orbit_rp_html_keep *k, size_t i)
{
	uint32_t *h = k->heap;
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < k->n && below(k, h[l], h[m]))
			m = l;
		if (l + 1 < k->n && below(k, h[l + 1], h[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void sift_up(struct orbit_rp_html_keep *k, size_t i)
{
	uint32_t *h = k->heap;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!below(k, h[i], h[p]))
			return;
		uint32_t t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

/* ---- where the left-out spans were ---- */

static void density_add(struct orbit_rp_html_density *d, uint64_t t)
{
	const uint64_t n = ORBIT_RP_HTML_DENSITY_BINS;
	if (d->width == 0) {
		d->width = 1;
		d->lo = t;
	}
	if (t < d->lo || (t - d->lo) / d->width >= n) {
		/* Wider bins, aligned to their width, until the old range and t
		 * fit: every old bin then lies inside one new bin. */
		uint64_t need_lo = t < d->lo ? t : d->lo;
		uint64_t old_hi = d->lo + n * d->width, need_hi = t + 1 > old_hi ? t + 1 : old_hi;
		uint64_t w = d->width, lo;
		do {
			w *= 2;
			lo = need_lo - need_lo % w;
		} while (lo + n * w < need_hi && w <= UINT64_MAX / (4 * n));
		uint32_t c[ORBIT_RP_HTML_DENSITY_BINS] = {0};
		for (uint64_t i = 0; i < n; i++) {
			uint64_t j = (d->lo + i * d->width - lo) / w;
			c[j < n ? j : n - 1] += d->count[i];
		}
		memcpy(d->count, c, sizeof c);
		d->lo = lo;
		d->width = w;
	}
	uint64_t i = t >= d->lo ? (t - d->lo) / d->width : 0;
	d->count[i < n ? i : n - 1]++;
}

static int grow_lanes(struct orbit_rp_html_keep *k, uint32_t lane)
{
	if (lane < k->nlanes)
		return 0;
	uint32_t n = k->nlanes ? k->nlanes : 64;
	while (n <= lane)
		n *= 2;
	uint64_t *m = realloc(k->lane_merged, n * sizeof *m);
	if (m == NULL)
		return -1;
	k->lane_merged = m;
	struct orbit_rp_html_density **d = realloc(k->density, n * sizeof *d);
	if (d == NULL)
		return -1;
	k->density = d;
	memset(m + k->nlanes, 0, (n - k->nlanes) * sizeof *m);
	memset(d + k->nlanes, 0, (n - k->nlanes) * sizeof *d);
	k->nlanes = n;
	return 0;
}

static void left_out(struct orbit_rp_html_keep *k, const struct orbit_rp_html_span *s)
{
	uint64_t dur = s->end - s->start;
	k->merged++;
	if (dur > k->merged_max)
		k->merged_max = dur;
	if (grow_lanes(k, s->lane) != 0) {
		k->oom = 1;
		return;
	}
	k->lane_merged[s->lane]++;
	struct orbit_rp_html_density **d = &k->density[s->lane];
	if (*d == NULL && k->ndensity < ORBIT_RP_HTML_DENSITY_LANES) {
		*d = calloc(1, sizeof **d);
		k->ndensity += *d != NULL;
	}
	if (*d != NULL)
		density_add(*d, s->start + dur / 2);
}

/* ---- extras ---- */

static uint32_t extra_take(struct orbit_rp_html_keep *k, const struct orbit_rp_html_extra *e)
{
	uint32_t i;
	if (k->free_extra != ORBIT_RP_HTML_NO_EXTRA) {
		i = k->free_extra;
		k->free_extra = k->extras[i].end_tid;
	} else {
		if (k->nextra == k->extra_alloc) {
			uint32_t n = k->extra_alloc ? k->extra_alloc * 2 : 256;
			struct orbit_rp_html_extra *x = realloc(k->extras, n * sizeof *x);
			if (x == NULL)
				return ORBIT_RP_HTML_NO_EXTRA;
			k->extras = x;
			k->extra_alloc = n;
		}
		i = k->nextra++;
	}
	k->extras[i] = *e;
	return i;
}

static void extra_give_back(struct orbit_rp_html_keep *k, uint32_t i)
{
	if (i == ORBIT_RP_HTML_NO_EXTRA)
		return;
	k->extras[i].end_tid = k->free_extra;
	k->free_extra = i;
}

/* ---- keeping ---- */

static int append(struct orbit_rp_html_keep *k, const struct orbit_rp_html_span *s)
{
	if (k->n == k->alloc) {
		size_t n = k->alloc ? k->alloc * 2 : 4096;
		if (k->cap && n > k->cap)
			n = k->cap;
		struct orbit_rp_html_span *sp = realloc(k->spans, n * sizeof *sp);
		if (sp == NULL)
			return -1;
		k->spans = sp;
		if (k->cap) {
			uint32_t *h = realloc(k->heap, n * sizeof *h);
			if (h == NULL)
				return -1;
			k->heap = h;
		}
		k->alloc = n;
	}
	k->spans[k->n] = *s;
	if (k->cap) {
		k->heap[k->n] = (uint32_t)k->n;
		k->n++;
		sift_up(k, k->n - 1);
	} else {
		k->n++;
	}
	return 0;
}

int orbit__rp_html_keep(struct orbit_rp_html_keep *k, const struct orbit_rp_html_span *s,
                        const struct orbit_rp_html_extra *extra)
{
	struct orbit_rp_html_span sp = *s;
	if (k->cap && k->n == k->cap) {
		uint32_t top = k->heap[0];
		if (rank(&sp) <= rank(&k->spans[top])) {
			left_out(k, &sp);
			return k->oom ? -1 : 0;
		}
		left_out(k, &k->spans[top]);
		extra_give_back(k, k->spans[top].extra);
		sp.extra = extra ? extra_take(k, extra) : ORBIT_RP_HTML_NO_EXTRA;
		k->spans[top] = sp;
		sift_down(k, 0);
		return k->oom ? -1 : 0;
	}
	sp.extra = extra ? extra_take(k, extra) : ORBIT_RP_HTML_NO_EXTRA;
	if (extra && sp.extra == ORBIT_RP_HTML_NO_EXTRA)
		return -1;
	return append(k, &sp);
}

void orbit__rp_html_keep_evict(struct orbit_rp_html_keep *k, uint64_t cutoff)
{
	size_t w = 0;
	for (size_t r = 0; r < k->n; r++) {
		const struct orbit_rp_html_span *s = &k->spans[r];
		if (s->end < cutoff && !((s->depth_flags >> 24) & ORBIT_RP_UNFINISHED)) {
			extra_give_back(k, s->extra);
			continue;
		}
		if (w != r)
			k->spans[w] = *s;
		w++;
	}
	k->n = w;
	if (k->cap == 0)
		return;
	for (size_t i = 0; i < k->n; i++)
		k->heap[i] = (uint32_t)i;
	for (size_t i = k->n / 2; i-- > 0;)
		sift_down(k, i);
}

void orbit__rp_html_keep_init(struct orbit_rp_html_keep *k, size_t cap)
{
	memset(k, 0, sizeof *k);
	k->cap = cap > UINT32_MAX ? UINT32_MAX : cap;
	k->free_extra = ORBIT_RP_HTML_NO_EXTRA;
}

void orbit__rp_html_keep_free(struct orbit_rp_html_keep *k)
{
	for (uint32_t i = 0; i < k->nlanes; i++)
		free(k->density[i]);
	free(k->density);
	free(k->lane_merged);
	free(k->spans);
	free(k->heap);
	free(k->extras);
	memset(k, 0, sizeof *k);
}
