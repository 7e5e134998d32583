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
 * each the narrowest of a few (ticks, ns, ticks) readings, at every pass
 * (one that drains takes it after copying the records it will convert, so
 * every record copied lies before the newest pair; one that cannot send
 * takes it all the same). A time is interpolated between the pairs around
 * it, however old it is (a record may be published long after its clock
 * read). The map is one polyline:
 *
 *   history: closed chords between    | the open chord, | recent: the last
 *   vertices, one where the rate bent | from the last   | ORBIT__CLOCK_PAIRS
 *   more than the tube allows         | vertex to E     | pairs, exact
 *
 * A pair leaving the recent ring joins the open chord; the chord closes into
 * a vertex only when one more pair would not let a single chord stay within
 * the tube [exact, exact + tol] of all of them (tol = thin_ns, 100 ns to
 * start; clock.c says how, in O(1) per pair and no memory per pair). So:
 *
 *  1. Among the recent pairs a time converts exactly as between its own two
 *     pairs (their error, tens of ns); an older one at most tol above that.
 *     Nothing inside the epoch is extrapolated, whatever the record's age.
 *  2. The map is non-decreasing in ticks, and a tick's converted time never
 *     decreases from one pass to the next (the history only ever raises the
 *     map, by at most tol), so a thread's times never go backwards, whenever
 *     each of its records is converted.
 *  3. A counter that goes backwards, or jumps against CLOCK_MONOTONIC by more
 *     than 100 µs + 2000 ppm of the time between two pairs (TSC reset on
 *     resume, a VM moved to another host; orbit__seg_clock_slack_ns in
 *     format/segment_clock.h, which orbit-dump's conversion applies too),
 *     starts the conversion again from scratch (a new epoch): one line on stderr the
 *     first time, and a count (orbit__clock_resets).
 *  4. A time outside the current epoch's pairs could not be converted
 *     honestly: the cursor counts it (orbit__clock_untrusted), says so
 *     (orbit__clock_cursor_untrusted) and keeps it between the epoch's
 *     bounds: not before the last pair of the epoch before, not after the
 *     newest pair. So is a time whose ticks both epochs used, when the
 *     caller says the record may be from before the reset (the cursor's
 *     maybe_old: drain_pass.c sets it for claims below each ring's cursor
 *     at the reset): a counter that went back (or fell behind) reads again
 *     values the epoch before read, and a record read then and drained
 *     later, when the new epoch's pairs reach its ticks, cannot say which
 *     epoch it is from. At each reset the ticks the earlier epoch can have
 *     read (from its first pair, or the new pair less the time since the
 *     last pair if later, to the last pair plus that time, at the old rate)
 *     join that range (amb_lo, amb_hi), for the agent's life.
 *  5. When the history fills, its older vertices are thinned again with twice
 *     the tolerance, level by level of age (still only raising the map):
 *     memory is bounded, and the error bound doubles per level for the
 *     oldest times only (orbit__clock_tolerance_at).
 */
#ifndef ORBIT_AGENT_CLOCK_H
#define ORBIT_AGENT_CLOCK_H

#include <stdint.h>

#include "config.h"
#include "orbit.h"

#define ORBIT__CLOCK_PAIRS 1024u   /* recent pairs, exact: 10 s at the default period */
#define ORBIT__CLOCK_HISTORY 4096u /* history vertices */
#define ORBIT__CLOCK_THIN_NS 100u  /* tolerance of the history's newest level */
#define ORBIT__CLOCK_LEVELS 12u    /* level L: within ORBIT__CLOCK_THIN_NS << L */

struct orbit__clock_pair {
	uint64_t ticks;
	uint64_t ns;
};

/* A slope, ns per tick, as a fraction; den 0 is +infinity. */
struct orbit__clock_slope {
	uint64_t num, den;
};

struct orbit__clock_conv {
	uint32_t source; /* enum orbit__clock */
	/* recent pairs: a ring, oldest at head (drain_pass.c reads these three) */
	uint32_t count;
	uint32_t head;
	struct orbit__clock_pair pair[ORBIT__CLOCK_PAIRS];
	/* history vertices (ticks of a past pair, converted time), oldest
	 * first; the last is where the open chord starts */
	uint32_t nhist;
	struct orbit__clock_pair hist[ORBIT__CLOCK_HISTORY];
	/* the open chord: pairs that left the ring since the last vertex */
	uint32_t npend;                      /* how many (0: no chord open) */
	struct orbit__clock_pair pend_last;  /* the last of them, as taken */
	struct orbit__clock_slope lo, hi;    /* the slopes that fit them all; the chord is lo */
	uint32_t thin_ns;                    /* ORBIT__CLOCK_THIN_NS */
	uint32_t level[ORBIT__CLOCK_LEVELS]; /* vertices per level, newest (0) last in hist */
	/* trouble */
	uint64_t resets;         /* epochs started again: counter backwards or jumped */
	uint64_t untrusted;      /* times the cursor converted outside the epoch */
	uint64_t floor_ns;       /* the last pair of the epoch before (0: none) */
	uint64_t amb_lo, amb_hi; /* ticks an earlier epoch read too (amb_hi > amb_lo): 4. */
	int said;                /* the first reset was said: the count says the rest */
};

/* The clock producers should read on this machine, honouring ORBIT_CLOCK
 * (want: struct orbit__config's clock). */
uint32_t orbit__clock_choose(enum orbit__config_clock want);

/* A reading of the raw source, as producers make it. */
uint64_t orbit__clock_ticks(uint32_t source);

void orbit__clock_init(struct orbit__clock_conv *c, uint32_t source);

/* What orbit__clock_add_pair and orbit__clock_calibrate did. */
enum orbit__clock_added {
	ORBIT__CLOCK_ADDED = 0,
	ORBIT__CLOCK_REFUSED = 1, /* ns before the last pair's, or ticks equal: not used */
	ORBIT__CLOCK_RESET = 2,   /* counter backwards or jumped: a new epoch began with it */
};
/* Takes a calibration pair now (no-op, ORBIT__CLOCK_ADDED, for
 * CLOCK_MONOTONIC). */
int orbit__clock_calibrate(struct orbit__clock_conv *c);
/* Adds a pair read elsewhere (tests inject counter trouble this way). */
int orbit__clock_add_pair(struct orbit__clock_conv *c, struct orbit__clock_pair p);

/* Ticks to CLOCK_MONOTONIC ns, exactly, counting nothing. Outside the
 * epoch's pairs the end pieces are extended (log pages may hold records
 * read after the newest pair), never below floor_ns. */
uint64_t orbit__clock_to_ns(const struct orbit__clock_conv *c, uint64_t ticks);

/* A cursor over the conversion of a pass's records, all read before the
 * newest pair: the piece between two pairs as a 32.32 fixed-point slope, so
 * a time in the same piece as the last costs a multiply, not a search and a
 * division. Within a piece it rounds down, so it never exceeds the next
 * pair: still non-decreasing. History chords convert exactly (guarantee 2
 * needs the exact value there). A time outside the epoch is untrusted
 * (guarantee 4). */
struct orbit__clock_cursor {
	struct orbit__clock_conv *conv;
	uint64_t lo, hi;   /* ticks the piece covers, [lo, hi) */
	uint64_t base_ns;  /* ns at lo */
	uint64_t num, den; /* exact: ns per tick as a fraction */
	uint64_t mult;     /* ns per tick << 32 */
	uint64_t min_ns;   /* no time in the piece converts below this */
	int exact;         /* a chord of the history, or the open one */
	int valid;
	int untrusted; /* the last time converted was outside the epoch */
	int maybe_old; /* the caller's: the next times may predate a reset (4.) */
};
void orbit__clock_cursor_init(struct orbit__clock_cursor *c, struct orbit__clock_conv *conv);
uint64_t orbit__clock_cursor_to_ns(struct orbit__clock_cursor *c, uint64_t ticks);
static inline int orbit__clock_cursor_untrusted(const struct orbit__clock_cursor *c)
{
	return c->untrusted;
}

/* The conversion's points for a reader outside the process (the segment's
 * state area, format/segment.h): the epoch's first point, then its newest
 * max - 1, in order (all of them when there are no more); how many. 0 for
 * CLOCK_MONOTONIC. */
uint32_t orbit__clock_points(const struct orbit__clock_conv *c, struct orbit__clock_pair *out,
                             uint32_t max);

/* Ticks per second over the epoch's pairs (0 for CLOCK_MONOTONIC or too
 * few). */
uint64_t orbit__clock_rate(const struct orbit__clock_conv *c);

/* Since orbit__clock_init: epochs started again, and times converted by a
 * cursor that could not be trusted. */
static inline uint64_t orbit__clock_resets(const struct orbit__clock_conv *c)
{
	return c->resets;
}
static inline uint64_t orbit__clock_untrusted(const struct orbit__clock_conv *c)
{
	return c->untrusted;
}
/* The most a time at ticks may lie above the exact interpolation between
 * the pairs around it: 0 from the second recent pair on, thin_ns << L in
 * level L of the history. */
uint64_t orbit__clock_tolerance_at(const struct orbit__clock_conv *c, uint64_t ticks);
/* The largest of those: that of the oldest level in use. */
static inline uint64_t orbit__clock_tolerance(const struct orbit__clock_conv *c)
{
	uint32_t L = ORBIT__CLOCK_LEVELS - 1;
	while (L > 0 && c->level[L] == 0)
		L--;
	return (uint64_t)c->thin_ns << L;
}

#endif
