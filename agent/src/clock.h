/*
 * clock.h — what producers read, and how the agent turns it into
 * CLOCK_MONOTONIC nanoseconds (seed 002; seed 000, "conversion, not
 * substitution").
 *
 * On x86-64 with an invariant TSC (CPUID 0x80000007 EDX bit 8) and the
 * kernel's clocksource tsc, producers store raw TSC ticks; on arm64 with the
 * architected timer as clocksource, the virtual counter. Otherwise, or with
 * ORBIT_CLOCK=monotonic, they call clock_gettime(CLOCK_MONOTONIC).
 *
 * Conversion: the agent takes calibration pairs (ticks, CLOCK_MONOTONIC ns),
 * each the narrowest of a few (ticks, ns, ticks) readings, at every drain,
 * after copying the records it will convert. A time is interpolated between
 * the two pairs around it, so the error is the pairs' own (tens of ns), the
 * mapping is continuous and increasing (a thread's times never go backwards),
 * and NTP's slewing of CLOCK_MONOTONIC is followed pair by pair.
 */
#ifndef ORBIT_AGENT_CLOCK_H
#define ORBIT_AGENT_CLOCK_H

#include <stdint.h>

#include "orbit.h"

#define ORBIT__CLOCK_PAIRS 1024u /* 10 s of pairs at the default drain period */

struct orbit__clock_pair {
	uint64_t ticks;
	uint64_t ns;
};

struct orbit__clock_conv {
	uint32_t source; /* enum orbit__clock */
	uint32_t count;  /* pairs held, at most ORBIT__CLOCK_PAIRS */
	uint32_t head;   /* index of the oldest pair */
	struct orbit__clock_pair pair[ORBIT__CLOCK_PAIRS];
};

/* The clock producers should read on this machine, honouring ORBIT_CLOCK. */
uint32_t orbit__clock_choose(void);

/* A reading of the raw source, as producers make it. */
uint64_t orbit__clock_ticks(uint32_t source);

void orbit__clock_init(struct orbit__clock_conv *c, uint32_t source);
/* Takes a calibration pair now (no-op for CLOCK_MONOTONIC). */
void orbit__clock_calibrate(struct orbit__clock_conv *c);
/* Adds a pair read elsewhere; ignored unless later than the last in both
 * coordinates. */
void orbit__clock_add_pair(struct orbit__clock_conv *c, struct orbit__clock_pair p);
/* Ticks to CLOCK_MONOTONIC ns. */
uint64_t orbit__clock_to_ns(const struct orbit__clock_conv *c, uint64_t ticks);
/* A cursor over the conversion for many times in a row: the segment between
 * two pairs as a 32.32 fixed-point slope, so a time in the same segment as
 * the last costs a multiply, not a search and a division. Within a segment
 * it rounds down, so it never exceeds the next pair: still increasing. */
struct orbit__clock_cursor {
	const struct orbit__clock_conv *conv;
	uint64_t lo, hi;  /* ticks the segment covers, [lo, hi) */
	uint64_t base_ns; /* ns at lo */
	uint64_t mult;    /* ns per tick << 32 */
	int valid;
};
void orbit__clock_cursor_init(struct orbit__clock_cursor *c, const struct orbit__clock_conv *conv);
uint64_t orbit__clock_cursor_to_ns(struct orbit__clock_cursor *c, uint64_t ticks);

/* Ticks per second over the pairs held (0 for CLOCK_MONOTONIC or too few). */
uint64_t orbit__clock_rate(const struct orbit__clock_conv *c);

#endif
