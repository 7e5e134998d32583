/* clock.c — choosing the producers' clock and converting it; the guarantees
 * are in clock.h. */
#include "clock.h"

#include "segment_clock.h" /* orbit__seg_clock_slack_ns: when a counter jumped */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static int clocksource_is(const char *want)
{
	char buf[64] = {0};
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f == NULL)
		return 0;
	int ok = fgets(buf, sizeof buf, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok && strcmp(buf, want) == 0;
}

uint32_t orbit__clock_choose(enum orbit__config_clock want)
{
	if (want == ORBIT__CONFIG_CLOCK_MONOTONIC)
		return ORBIT__CLOCK_MONOTONIC;
	int force = want == ORBIT__CONFIG_CLOCK_TSC;
#if defined(__x86_64__)
	/* tsc: trust an invariant TSC even when the kernel chose another
	 * clocksource (conversion still goes through CLOCK_MONOTONIC). */
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) &&
	    (force || clocksource_is("tsc")))
		return ORBIT__CLOCK_TSC;
#elif defined(__aarch64__)
	if (force || clocksource_is("arch_sys_counter"))
		return ORBIT__CLOCK_CNTVCT;
#endif
	if (force)
		fprintf(stderr, "orbit: ORBIT_CLOCK=tsc: no invariant counter here; using "
		                "CLOCK_MONOTONIC\n");
	return ORBIT__CLOCK_MONOTONIC;
}

uint64_t orbit__clock_ticks(uint32_t source)
{
#if defined(__x86_64__)
	if (source == ORBIT__CLOCK_TSC)
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	if (source == ORBIT__CLOCK_CNTVCT) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	(void)source;
	return orbit__monotonic_ns();
}

/* ---- the pieces, as one sequence: history, the open chord, recent -------- */

/* Whether a chord is open: pairs have left the recent ring since the last
 * vertex. It starts at that vertex, so there is one (retire makes the first
 * pair a vertex; thinning keeps the newest); saying so here also lets the
 * compiler see that E's hist[nhist - 1] is in bounds. */
static int chord_open(const struct orbit__clock_conv *c)
{
	return c->npend > 0 && c->nhist > 0;
}

/* Points: the history's vertices, then E if a chord is open, then the
 * recent pairs. */
static uint32_t total(const struct orbit__clock_conv *c)
{
	return c->nhist + (uint32_t)chord_open(c) + c->count;
}

static struct orbit__clock_pair chord_end(const struct orbit__clock_conv *c);

static struct orbit__clock_pair at(const struct orbit__clock_conv *c, uint32_t i)
{
	if (i < c->nhist)
		return c->hist[i];
	i -= c->nhist;
	if (chord_open(c) && i-- == 0)
		return chord_end(c);
	return c->pair[(c->head + i) % ORBIT__CLOCK_PAIRS];
}

void orbit__clock_init(struct orbit__clock_conv *c, uint32_t source)
{
	memset(c, 0, sizeof *c);
	c->source = source;
	c->thin_ns = ORBIT__CLOCK_THIN_NS;
	c->lo = (struct orbit__clock_slope){0, 1};
	c->hi = (struct orbit__clock_slope){0, 0};
}

/* ---- thinning (guarantees 1, 2 and 5 of clock.h) -------------------------
 *
 * The history is a polyline whose vertices sit at ticks of past pairs, each
 * at a time in [exact, exact + tol], exact being the interpolation between
 * all the pairs ever taken. From its last vertex a, the pairs that have left
 * the recent ring since (the pending pairs p) are the interior of the next
 * chord: a chord of slope s fits while, for every p,
 *
 *     p.ns <= a.ns + s (p.ticks - a.ticks) <= p.ns + tol,
 *
 * that is while the interval [lo, hi] of such s (s >= 0) is not empty. A pair
 * narrows it in O(1), so the pending pairs need not be kept: the map over
 * them is the chord of slope lo, the lowest that fits, up to E, the point of
 * that chord at the last pending pair. When a pair would empty the interval,
 * the chord closes at E (rounded up) and that pair starts the next one.
 *
 * Why the map only ever rises (guarantee 2): lo only grows while a chord is
 * open, and the chord of slope lo lies at or above every pending pair, so
 * when a pair joins the pending ones the chord over it lies above the piece
 * that converted it before (from E to that pair), and everything before it
 * rises with lo. Closing a chord rounds E up. Between E and the recent pairs
 * the pieces are clamped at E's time (E may lie up to tol above the next
 * pair). So no tick converts lower after a pass than before it, and one
 * thread's later record (later ticks, converted at the same pass or later)
 * never converts earlier than its earlier record.
 */

static int slope_le(struct orbit__clock_slope a, struct orbit__clock_slope b)
{
	if (b.den == 0)
		return 1;
	if (a.den == 0)
		return 0;
	return (unsigned __int128)a.num * b.den <= (unsigned __int128)b.num * a.den;
}

static const struct orbit__clock_slope SLOPE_MIN = {0, 1}, SLOPE_MAX = {0, 0};

/* Narrows [lo, hi] by the pair p seen from vertex a; 1 if a chord still
 * fits. */
static int constrain(const struct orbit__clock_pair *a, const struct orbit__clock_pair *p,
                     uint64_t tol, struct orbit__clock_slope *lo, struct orbit__clock_slope *hi)
{
	uint64_t dt = p->ticks - a->ticks; /* > 0: ticks strictly increase */
	uint64_t top = p->ns + tol < p->ns ? UINT64_MAX : p->ns + tol;
	struct orbit__clock_slope l = {p->ns > a->ns ? p->ns - a->ns : 0, dt};
	struct orbit__clock_slope h = {top > a->ns ? top - a->ns : 0, dt};
	struct orbit__clock_slope nl = slope_le(*lo, l) ? l : *lo;
	struct orbit__clock_slope nh = slope_le(h, *hi) ? h : *hi;
	if (!slope_le(nl, nh))
		return 0;
	*lo = nl;
	*hi = nh;
	return 1;
}

/* The time at ticks on the chord of slope s from a, rounded down or up. */
static uint64_t chord(const struct orbit__clock_pair *a, struct orbit__clock_slope s,
                      uint64_t ticks, int up)
{
	unsigned __int128 rise = (unsigned __int128)s.num * (ticks - a->ticks);
	rise = (rise + (up ? s.den - 1 : 0)) / s.den;
	return rise > UINT64_MAX - a->ns ? UINT64_MAX : a->ns + (uint64_t)rise;
}

/* Thins vertices v[0..m) in place within [v, v + tol]; returns how many are
 * left. The first stays as it is; the last keeps its ticks. */
static uint32_t tube_fit(struct orbit__clock_pair *v, uint32_t m, uint64_t tol)
{
	if (m <= 2)
		return m;
	uint32_t w = 0;
	struct orbit__clock_slope lo = SLOPE_MIN, hi = SLOPE_MAX;
	for (uint32_t r = 1; r < m; r++) {
		if (constrain(&v[w], &v[r], tol, &lo, &hi))
			continue;
		v[w + 1] =
		    (struct orbit__clock_pair){v[r - 1].ticks, chord(&v[w], lo, v[r - 1].ticks, 1)};
		w++;
		lo = SLOPE_MIN;
		hi = SLOPE_MAX;
		constrain(&v[w], &v[r], tol, &lo, &hi);
	}
	v[w + 1] = (struct orbit__clock_pair){v[m - 1].ticks, chord(&v[w], lo, v[m - 1].ticks, 1)};
	return w + 2;
}

/*
 * The history is full (guarantee 5). It is kept in levels, oldest first in
 * the array: level L holds vertices within thin_ns << L of the exact map,
 * new vertices join level 0. Compacting level L moves its older half, thinned
 * again with a tube of thin_ns << L (so within thin_ns << (L + 1) now), to
 * the newest end of level L + 1; a level over its share of the array
 * (ORBIT__CLOCK_HISTORY >> (L + 1)) is compacted in turn. Each vertex is
 * thinned once per level, so a record a few hours late still converts within
 * thin_ns, and the bound doubles per level of age. The moved part ends at a
 * vertex whose next one lies at least the new tolerance later: that vertex
 * may rise so much and the map still never decreases there.
 */
static uint32_t level_start(const struct orbit__clock_conv *c, uint32_t L)
{
	uint32_t start = 0;
	for (uint32_t j = ORBIT__CLOCK_LEVELS - 1; j > L; j--)
		start += c->level[j];
	return start;
}

/* 1 if level L gave vertices to level L + 1. */
static int compact(struct orbit__clock_conv *c, uint32_t L)
{
	uint64_t delta = (uint64_t)c->thin_ns << L;
	uint32_t start = level_start(c, L), n = c->level[L], k = n / 2;
	while (k + 1 < n && c->hist[start + k].ns - c->hist[start + k - 1].ns < delta)
		k++;
	if (k < 3 || k + 1 >= n) /* the newest vertex of a level never moves */
		return 0;
	uint32_t m = tube_fit(&c->hist[start], k, delta);
	memmove(&c->hist[start + m], &c->hist[start + k],
	        (c->nhist - start - k) * sizeof c->hist[0]);
	c->nhist -= k - m;
	c->level[L] -= k;
	c->level[L + 1] += m;
	return 1;
}

static void rethin(struct orbit__clock_conv *c)
{
	for (int round = 0; round < 64 && c->nhist > ORBIT__CLOCK_HISTORY * 3 / 4; round++) {
		uint32_t L = 0;
		while (L + 2 < ORBIT__CLOCK_LEVELS &&
		       c->level[L] <= ORBIT__CLOCK_HISTORY >> (L + 1))
			L++;
		if (c->level[L] <= ORBIT__CLOCK_HISTORY >> (L + 1))
			L = 0;
		if (!compact(c, L) && !compact(c, 0))
			break;
	}
	if (c->nhist >= ORBIT__CLOCK_HISTORY - 1) { /* cannot happen: forget the oldest */
		uint32_t L = ORBIT__CLOCK_LEVELS - 1, drop = c->nhist / 2;
		while (drop > 0) {
			uint32_t d = c->level[L] < drop ? c->level[L] : drop;
			c->level[L] -= d;
			drop -= d;
			L--;
		}
		drop = c->nhist / 2;
		memmove(c->hist, c->hist + drop, (c->nhist - drop) * sizeof c->hist[0]);
		c->nhist -= drop;
	}
}

/* E: where the open chord ends, at the last pending pair. */
static struct orbit__clock_pair chord_end(const struct orbit__clock_conv *c)
{
	return (struct orbit__clock_pair){
	    c->pend_last.ticks, chord(&c->hist[c->nhist - 1], c->lo, c->pend_last.ticks, 0)};
}

/* A pair leaves the recent ring. */
static void retire(struct orbit__clock_conv *c, struct orbit__clock_pair q)
{
	if (c->nhist == 0) {
		c->hist[c->nhist++] = q;
		c->level[0] = 1;
		return;
	}
	if (!constrain(&c->hist[c->nhist - 1], &q, c->thin_ns, &c->lo, &c->hi)) {
		/* The chord closes at E, rounded up; q starts the next one. */
		if (c->nhist >= ORBIT__CLOCK_HISTORY - 1)
			rethin(c);
		struct orbit__clock_pair a = c->hist[c->nhist - 1];
		c->hist[c->nhist++] = (struct orbit__clock_pair){
		    c->pend_last.ticks, chord(&a, c->lo, c->pend_last.ticks, 1)};
		c->level[0]++;
		c->lo = SLOPE_MIN;
		c->hi = SLOPE_MAX;
		c->npend = 0;
		constrain(&c->hist[c->nhist - 1], &q, c->thin_ns, &c->lo, &c->hi);
	}
	c->pend_last = q;
	c->npend++;
}

/* ---- adding pairs, and counter trouble (guarantee 3) --------------------- */

/* Whether p, after last, is off the epoch's rate by more than a jump. */
static int jumped(const struct orbit__clock_conv *c, const struct orbit__clock_pair *last,
                  struct orbit__clock_pair p, int64_t *off_ns)
{
	struct orbit__clock_pair first = at(c, 0);
	if (last->ns - first.ns < 1000000 || last->ticks == first.ticks)
		return 0; /* no rate to judge by yet */
	unsigned __int128 span_t = last->ticks - first.ticks, span_ns = last->ns - first.ns;
	uint64_t dns = p.ns - last->ns, dt = p.ticks - last->ticks;
	unsigned __int128 expect = (unsigned __int128)dns * span_t / span_ns;
	int ahead = dt >= expect;
	unsigned __int128 dev = ahead ? dt - expect : expect - dt;
	if (dev > UINT64_MAX) {
		*off_ns = ahead ? INT64_MAX : INT64_MIN;
		return 1;
	}
	unsigned __int128 dev_ns = dev * span_ns / span_t;
	if (dev_ns <= orbit__seg_clock_slack_ns(dns))
		return 0;
	*off_ns = dev_ns > INT64_MAX ? (ahead ? INT64_MAX : INT64_MIN)
	                             : (ahead ? (int64_t)dev_ns : -(int64_t)dev_ns);
	return 1;
}

static const char *source_name(uint32_t source)
{
	return source == ORBIT__CLOCK_CNTVCT ? "CNTVCT" : "TSC";
}

/* A new epoch: nothing before it says anything about the counter now.
 * off_s: how far the counter moved against CLOCK_MONOTONIC (0: unknown). */
static void restart(struct orbit__clock_conv *c, uint64_t floor_ns, int backwards, double off_s)
{
	if (!c->said)
		fprintf(stderr,
		        "orbit: the %s counter %s by about %.3f s against CLOCK_MONOTONIC; clock "
		        "conversion starts again, and times read around it are marked untrusted\n",
		        source_name(c->source),
		        backwards   ? "went backwards"
		        : off_s < 0 ? "fell behind"
		                    : "jumped ahead",
		        off_s < 0 ? -off_s : off_s);
	uint32_t source = c->source;
	uint64_t resets = c->resets, untrusted = c->untrusted, amb_lo = c->amb_lo,
	         amb_hi = c->amb_hi;
	orbit__clock_init(c, source);
	c->resets = resets + 1;
	c->untrusted = untrusted;
	c->amb_lo = amb_lo;
	c->amb_hi = amb_hi;
	c->floor_ns = floor_ns;
	c->said = 1;
}

/* Guarantee 4: the ticks both counters may have read around the reset
 * between last and p: the old one up to last plus the time between them,
 * the new one from p less it (at rate, ticks per second; the pairs alone
 * without one), joined to what earlier resets left. */
static void ambiguous(struct orbit__clock_conv *c, struct orbit__clock_pair last,
                      struct orbit__clock_pair p, uint64_t rate)
{
	unsigned __int128 d = (unsigned __int128)(p.ns - last.ns) * rate / 1000000000u;
	uint64_t dt = d > UINT64_MAX ? UINT64_MAX : (uint64_t)d;
	uint64_t old_hi = last.ticks > UINT64_MAX - dt ? UINT64_MAX : last.ticks + dt;
	uint64_t new_lo = p.ticks > dt ? p.ticks - dt : 0;
	uint64_t old_first = at(c, 0).ticks; /* the epoch ending read nothing below */
	new_lo = new_lo > old_first ? new_lo : old_first;
	if (new_lo > old_hi)
		return; /* a jump ahead past all the old counter read: none */
	if (c->amb_hi > c->amb_lo) {
		new_lo = new_lo < c->amb_lo ? new_lo : c->amb_lo;
		old_hi = old_hi > c->amb_hi ? old_hi : c->amb_hi;
	}
	c->amb_lo = new_lo;
	c->amb_hi = old_hi > new_lo ? old_hi : new_lo + 1;
}

int orbit__clock_add_pair(struct orbit__clock_conv *c, struct orbit__clock_pair p)
{
	int ret = ORBIT__CLOCK_ADDED;
	uint32_t n = total(c);
	if (n > 0) {
		struct orbit__clock_pair last = at(c, n - 1);
		if (p.ns < last.ns || p.ticks == last.ticks)
			return ORBIT__CLOCK_REFUSED;
		int64_t off = 0;
		int backwards = p.ticks < last.ticks;
		if (backwards || jumped(c, &last, p, &off)) {
			double off_s = (double)off / 1e9;
			uint64_t rate = orbit__clock_rate(c);
			if (backwards && rate != 0)
				off_s = -(double)(last.ticks - p.ticks) / (double)rate;
			ambiguous(c, last, p, rate);
			restart(c, last.ns, backwards, off_s);
			ret = ORBIT__CLOCK_RESET;
		}
	}
	if (c->count == ORBIT__CLOCK_PAIRS) {
		struct orbit__clock_pair old = c->pair[c->head];
		c->pair[c->head] = p;
		c->head = (c->head + 1) % ORBIT__CLOCK_PAIRS;
		retire(c, old);
	} else {
		c->pair[(c->head + c->count) % ORBIT__CLOCK_PAIRS] = p;
		c->count++;
	}
	return ret;
}

int orbit__clock_calibrate(struct orbit__clock_conv *c)
{
	if (c->source == ORBIT__CLOCK_MONOTONIC)
		return ORBIT__CLOCK_ADDED;
	struct orbit__clock_pair best = {0, 0};
	uint64_t best_width = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = orbit__clock_ticks(c->source);
		uint64_t ns = orbit__monotonic_ns();
		uint64_t t1 = orbit__clock_ticks(c->source);
		if (t1 - t0 < best_width) {
			best_width = t1 - t0;
			best.ticks = t0 + (t1 - t0) / 2;
			best.ns = ns;
		}
	}
	return orbit__clock_add_pair(c, best);
}

/* ---- conversion ---------------------------------------------------------- */

/* Piece i, from point i to point i + 1, as the cursor keeps it: a chord of
 * the history or the open chord (exact: base + num (t - lo) / den, rounded
 * down), or a recent piece (32.32 fixed point, rounded down), never below
 * min. */
struct piece {
	uint64_t lo, hi, base, num, den, mult, min;
	int exact;
};

static struct piece piece_of(const struct orbit__clock_conv *c, uint32_t i)
{
	struct orbit__clock_pair a = at(c, i), b = at(c, i + 1);
	struct piece p = {.lo = a.ticks, .hi = b.ticks, .base = a.ns, .min = c->floor_ns};
	if (i + 1 < c->nhist) { /* a closed chord */
		p.exact = 1;
		p.num = b.ns - a.ns;
		p.den = b.ticks - a.ticks;
	} else if (chord_open(c) && i + 1 == c->nhist) { /* the open chord, to E */
		p.exact = 1;
		p.num = c->lo.num;
		p.den = c->lo.den;
	} else { /* from the last vertex or E to the recent pairs, and among them */
		uint32_t ends = c->nhist + (uint32_t)chord_open(c); /* the history's points, E */
		if (ends > 0) {
			uint64_t m = at(c, ends - 1).ns; /* may lie above the next pair */
			p.min = m > p.min ? m : p.min;
		}
		p.num = b.ns > a.ns ? b.ns - a.ns : 0;
		p.den = b.ticks - a.ticks;
		p.mult = (uint64_t)(((unsigned __int128)p.num << 32) / p.den);
	}
	return p;
}

/* Exactly, rounded down. */
static uint64_t piece_exact(const struct piece *p, uint64_t ticks)
{
	uint64_t ns = p->base + (uint64_t)((unsigned __int128)p->num * (ticks - p->lo) / p->den);
	return ns < p->min ? p->min : ns;
}

static uint64_t piece_fast(const struct piece *p, uint64_t ticks)
{
	if (p->exact)
		return piece_exact(p, ticks);
	uint64_t ns = p->base + (uint64_t)(((unsigned __int128)(ticks - p->lo) * p->mult) >> 32);
	return ns < p->min ? p->min : ns;
}

/* ns at ticks on the line through a and b (a.ticks < b.ticks), extended. */
static uint64_t line(struct orbit__clock_pair a, struct orbit__clock_pair b, uint64_t ticks)
{
	__int128 dt = (__int128)ticks - (__int128)a.ticks;
	__int128 span_t = (__int128)b.ticks - (__int128)a.ticks;
	__int128 span_ns = (__int128)b.ns - (__int128)a.ns;
	__int128 ns = (__int128)a.ns + dt * span_ns / span_t;
	return ns < 0 ? 0 : ns > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

/* The last piece starting at or before ticks: point i <= ticks < point
 * i + 1, for point 0 <= ticks < point n - 1. */
static uint32_t find(const struct orbit__clock_conv *c, uint32_t n, uint64_t ticks)
{
	uint32_t lo = 0, hi = n - 1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (at(c, mid).ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

uint64_t orbit__clock_to_ns(const struct orbit__clock_conv *c, uint64_t ticks)
{
	if (c->source == ORBIT__CLOCK_MONOTONIC)
		return ticks;
	uint32_t n = total(c);
	if (n == 0)
		return c->floor_ns;
	struct orbit__clock_pair first = at(c, 0), last = at(c, n - 1);
	uint64_t ns;
	if (n == 1) /* no rate yet: the agent converts only with two */
		ns = first.ns;
	else if (ticks < first.ticks) /* the first piece, extended back */
		ns = line(first, at(c, 1), ticks);
	else if (ticks >= last.ticks) /* the last, extended forward */
		ns = line(at(c, n - 2), last, ticks);
	else {
		struct piece p = piece_of(c, find(c, n, ticks));
		return piece_exact(&p, ticks);
	}
	return ns < c->floor_ns ? c->floor_ns : ns;
}

uint64_t orbit__clock_rate(const struct orbit__clock_conv *c)
{
	uint32_t n = total(c);
	if (c->source == ORBIT__CLOCK_MONOTONIC || n < 2)
		return 0;
	struct orbit__clock_pair a = at(c, 0), b = at(c, n - 1);
	if (b.ns == a.ns)
		return 0;
	return (uint64_t)((__int128)(b.ticks - a.ticks) * 1000000000 / (b.ns - a.ns));
}

void orbit__clock_cursor_init(struct orbit__clock_cursor *c, struct orbit__clock_conv *conv)
{
	memset(c, 0, sizeof *c);
	c->conv = conv;
}

/* Ticks both an earlier epoch and this one read (guarantee 4). */
static int ambiguous_at(const struct orbit__clock_conv *v, uint64_t ticks)
{
	return v->amb_hi > v->amb_lo && ticks >= v->amb_lo && ticks <= v->amb_hi;
}

uint64_t orbit__clock_cursor_to_ns(struct orbit__clock_cursor *c, uint64_t ticks)
{
	struct orbit__clock_conv *v = c->conv;
	c->untrusted = 0;
	if (v->source == ORBIT__CLOCK_MONOTONIC)
		return ticks;
	if (!c->valid || ticks < c->lo || ticks >= c->hi ||
	    (c->maybe_old && ambiguous_at(v, ticks))) {
		uint32_t n = total(v);
		struct orbit__clock_pair last = n ? at(v, n - 1) : (struct orbit__clock_pair){0, 0};
		if (n == 0 || ticks < at(v, 0).ticks || ticks > last.ticks ||
		    (c->maybe_old && ambiguous_at(v, ticks))) {
			/* Outside the epoch (guarantee 4): read before it began,
			 * or, past the newest pair, not by this counter as it
			 * runs now; or ticks an earlier epoch read too. Kept
			 * between the epoch's bounds. */
			c->untrusted = 1;
			v->untrusted++;
			return orbit__clock_to_ns(v, ticks > last.ticks ? last.ticks : ticks);
		}
		if (ticks == last.ticks)
			return orbit__clock_to_ns(v, ticks);
		struct piece p = piece_of(v, find(v, n, ticks));
		c->lo = p.lo;
		c->hi = p.hi;
		c->base_ns = p.base;
		c->num = p.num;
		c->den = p.den;
		c->mult = p.mult;
		c->min_ns = p.min;
		c->exact = p.exact;
		c->valid = 1;
	}
	struct piece p = {.lo = c->lo,
	                  .base = c->base_ns,
	                  .num = c->num,
	                  .den = c->den,
	                  .mult = c->mult,
	                  .min = c->min_ns,
	                  .exact = c->exact};
	return piece_fast(&p, ticks);
}

uint64_t orbit__clock_tolerance_at(const struct orbit__clock_conv *c, uint64_t ticks)
{
	/* From the second recent pair on, pieces are exact (the first starts
	 * at the history's end, which may lie up to thin_ns high). */
	uint32_t n = total(c);
	if (c->source == ORBIT__CLOCK_MONOTONIC || c->nhist == 0 ||
	    (c->count >= 2 && ticks >= at(c, n - c->count + 1).ticks))
		return 0;
	/* A piece between two levels is within the older one's bound. */
	uint32_t end = 0;
	for (uint32_t L = ORBIT__CLOCK_LEVELS; L-- > 0;) {
		end += c->level[L];
		if (c->level[L] > 0 && end < c->nhist && ticks < c->hist[end].ticks)
			return (uint64_t)c->thin_ns << L;
	}
	return c->thin_ns;
}

uint32_t orbit__clock_points(const struct orbit__clock_conv *c, struct orbit__clock_pair *out,
                             uint32_t max)
{
	uint32_t n = total(c);
	if (c->source == ORBIT__CLOCK_MONOTONIC || max == 0)
		return 0;
	if (n <= max) {
		for (uint32_t i = 0; i < n; i++)
			out[i] = at(c, i);
		return n;
	}
	out[0] = at(c, 0);
	for (uint32_t i = 1; i < max; i++)
		out[i] = at(c, n - max + i);
	return max;
}
