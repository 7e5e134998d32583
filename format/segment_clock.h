/*
 * segment_clock.h — converting ticks a segment holds (records and log pages
 * no agent converted) to CLOCK_MONOTONIC ns, with the calibration the agent
 * left in the segment's state area (struct orbit__seg_clock; docs/format.md
 * 1.7): a polyline through the stored points, and the reader's own pair
 * (ticks, ns) read on the same host at the end, when the counter still
 * agrees with the stored rate.
 *
 *  1. Between two points a time is interpolated, rounded down: the agent's
 *     own conversion there, within its pieces' rounding (1 ns).
 *  2. Past the last stored point and up to the reader's pair, interpolated
 *     to that pair when it agrees with the stored rate within 100 µs +
 *     2000 ppm of the gap (the agent's rule for a counter that jumped,
 *     agent/src/clock.h guarantee 3); otherwise extrapolated with the last
 *     rate and untrusted.
 *  3. Before the first point, or with fewer than two points, untrusted:
 *     extrapolated from the nearest piece (or the reader's own rate), never
 *     below 0.
 *  4. Non-decreasing in ticks.
 *  5. Ticks the agent's earlier epochs read too (the block's amb_lo to
 *     amb_hi: a counter that went back reads values again) are untrusted,
 *     whatever the points say.
 */
#ifndef ORBIT_FORMAT_SEGMENT_CLOCK_H
#define ORBIT_FORMAT_SEGMENT_CLOCK_H

#include <stdint.h>

#include "segment.h"

/* How far a counter may stray from its rate against CLOCK_MONOTONIC over
 * gap_ns before it counts as jumped: 100 µs + 2000 ppm of the gap (NTP
 * slews far less). The agent's rule for starting a new epoch
 * (agent/src/clock.h, guarantee 3) and this reader's for its own pair (2). */
#define ORBIT__SEG_CLOCK_JUMP_NS 100000u
static inline uint64_t orbit__seg_clock_slack_ns(uint64_t gap_ns)
{
	return ORBIT__SEG_CLOCK_JUMP_NS + gap_ns / 500;
}

struct orbit__seg_conv {
	uint32_t source;         /* ORBIT__SEG_CLOCK_*; MONOTONIC converts nothing */
	uint32_t n;              /* points in p */
	uint32_t stored;         /* of them, from the segment */
	uint64_t amb_lo, amb_hi; /* ticks an earlier epoch read too: 5. */
	int now_agrees;          /* the last point is the reader's own, and agrees */
	struct orbit__seg_point p[ORBIT__SEG_CLOCK_POINTS + 2];
	uint64_t fallback_num, fallback_den; /* the reader's own rate, for 3.; 0: none */
	struct orbit__seg_point fallback_at; /* and its pair */
};

/* From a complete clock block (a private copy). The points must increase
 * in ticks and not decrease in ns: 0, or ORBIT__SEG_EBADSEG with why (the
 * offset within the block). */
int orbit__seg_conv_init(struct orbit__seg_conv *c, const struct orbit__seg_clock *b,
                         struct orbit__seg_problem *why);
/* The reader's own pairs, read now on this host: `now` after everything in
 * the segment was written, and `earlier` (ticks and ns some milliseconds
 * before it) for a rate of its own. Returns 1 if `now` agrees with the
 * stored rate (guarantee 2). */
int orbit__seg_conv_now(struct orbit__seg_conv *c, struct orbit__seg_point earlier,
                        struct orbit__seg_point now);
/* ticks to ns; *untrusted (may be NULL) set to 1 for 2.'s and 3.'s
 * extrapolations, else 0. */
uint64_t orbit__seg_conv_ns(const struct orbit__seg_conv *c, uint64_t ticks, int *untrusted);

#endif
