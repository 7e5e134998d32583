/* segment_clock.c — converting a segment's ticks with its stored
 * calibration; the guarantees are in segment_clock.h. */
#include "segment_clock.h"

#include <stdio.h>
#include <string.h>

int orbit__seg_conv_init(struct orbit__seg_conv *c, const struct orbit__seg_clock *b,
                         struct orbit__seg_problem *why)
{
	memset(c, 0, sizeof *c);
	c->source = b->source;
	if (b->source > ORBIT__SEG_CLOCK_CNTVCT || b->count > ORBIT__SEG_CLOCK_POINTS) {
		if (why != NULL) {
			why->offset = offsetof(struct orbit__seg_clock, source);
			snprintf(why->what, sizeof why->what,
			         "calibration: clock source %u with %u points", b->source,
			         b->count);
		}
		return ORBIT__SEG_EBADSEG;
	}
	for (uint32_t i = 0; i < b->count; i++) {
		if (i > 0 && (b->point[i].ticks <= b->point[i - 1].ticks ||
		              b->point[i].ns < b->point[i - 1].ns)) {
			if (why != NULL) {
				why->offset = offsetof(struct orbit__seg_clock, point) + 16ull * i;
				snprintf(why->what, sizeof why->what,
				         "calibration point %u does not follow point %u", i, i - 1);
			}
			return ORBIT__SEG_EBADSEG;
		}
		c->p[i] = b->point[i];
	}
	c->n = c->stored = b->count;
	c->amb_lo = b->amb_lo;
	c->amb_hi = b->amb_hi;
	return 0;
}

/* ns at ticks on the line through a and b (a.ticks < b.ticks), extended;
 * clamped to [0, 2^64). */
static uint64_t line(struct orbit__seg_point a, struct orbit__seg_point b, uint64_t ticks)
{
	/* Saturated to 63 bits each, so the product fits (hostile points:
	 * real ones are far smaller). */
	__int128 dt = (__int128)ticks - (__int128)a.ticks;
	__int128 span_t = (__int128)b.ticks - (__int128)a.ticks;
	__int128 span_ns = (__int128)b.ns - (__int128)a.ns;
	const __int128 lim = INT64_MAX;
	dt = dt > lim ? lim : dt < -lim ? -lim : dt;
	span_ns = span_ns > lim ? lim : span_ns < -lim ? -lim : span_ns;
	__int128 ns = (__int128)a.ns + (dt * span_ns - (dt < 0 ? span_t - 1 : 0)) / span_t;
	return ns < 0 ? 0 : ns > (__int128)UINT64_MAX ? UINT64_MAX : (uint64_t)ns;
}

int orbit__seg_conv_now(struct orbit__seg_conv *c, struct orbit__seg_point earlier,
                        struct orbit__seg_point now)
{
	if (c->source == ORBIT__SEG_CLOCK_MONOTONIC)
		return 1;
	if (now.ticks > earlier.ticks && now.ns > earlier.ns) {
		c->fallback_num = now.ns - earlier.ns;
		c->fallback_den = now.ticks - earlier.ticks;
		c->fallback_at = now;
	}
	c->n = c->stored;
	c->now_agrees = 0;
	if (c->stored < 2)
		return 0;
	struct orbit__seg_point first = c->p[0], last = c->p[c->stored - 1];
	if (now.ticks <= last.ticks || now.ns < last.ns)
		return 0; /* the counter went back (reset) */
	uint64_t expect = line(first, last, now.ticks);
	uint64_t dns = now.ns - last.ns;
	uint64_t dev = expect > now.ns ? expect - now.ns : now.ns - expect;
	if (dev > orbit__seg_clock_slack_ns(dns))
		return 0;
	c->p[c->stored] = now; /* the reader's pair: the last, replaced by a later one */
	c->n = c->stored + 1;
	c->now_agrees = 1;
	return 1;
}

static uint64_t fallback(const struct orbit__seg_conv *c, uint64_t ticks)
{
	if (c->fallback_den == 0)
		return 0;
	struct orbit__seg_point a = c->n >= 1 ? c->p[c->n - 1] : c->fallback_at;
	struct orbit__seg_point b = {a.ticks + c->fallback_den, a.ns + c->fallback_num};
	return line(a, b, ticks);
}

uint64_t orbit__seg_conv_ns(const struct orbit__seg_conv *c, uint64_t ticks, int *untrusted)
{
	int u = 0;
	uint64_t ns;
	if (c->source == ORBIT__SEG_CLOCK_MONOTONIC) {
		ns = ticks;
	} else if (c->n < 2) {
		u = 1;
		ns = fallback(c, ticks);
	} else if (ticks < c->p[0].ticks) {
		u = 1;
		ns = line(c->p[0], c->p[1], ticks);
	} else if (ticks >= c->p[c->n - 1].ticks) {
		/* Past every point: past the reader's own pair, or no pair
		 * that agrees (guarantee 2). */
		u = ticks > c->p[c->n - 1].ticks || !c->now_agrees;
		ns = line(c->p[c->n - 2], c->p[c->n - 1], ticks);
		if (ns < c->p[c->n - 1].ns)
			ns = c->p[c->n - 1].ns;
	} else {
		uint32_t lo = 0, hi = c->n - 1; /* p[lo].ticks <= ticks < p[hi].ticks */
		while (hi - lo > 1) {
			uint32_t mid = lo + (hi - lo) / 2;
			if (c->p[mid].ticks <= ticks)
				lo = mid;
			else
				hi = mid;
		}
		ns = line(c->p[lo], c->p[hi], ticks);
		if (ns > c->p[hi].ns)
			ns = c->p[hi].ns;
	}
	if (c->source != ORBIT__SEG_CLOCK_MONOTONIC && c->amb_hi > c->amb_lo &&
	    ticks >= c->amb_lo && ticks <= c->amb_hi)
		u = 1; /* an earlier epoch read these ticks too (5.) */
	if (untrusted != NULL)
		*untrusted = u;
	return ns;
}
