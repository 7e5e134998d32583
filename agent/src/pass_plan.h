/*
 * pass_plan.h — when the agent's next drain pass comes.
 *
 * Each scope ring's claim rate is measured at every pass (claims since the
 * last pass over the time since) and remembered with a slow decay
 * (RATE_FADE_NS): a quiet pass does not reset it, so a producer that
 * pauses and resumes at its old rate is still covered. The next pass is
 * planned for when the fastest-filling ring would be a quarter full at its
 * rate (counting what it still holds unread), at least MIN_GAP_NS and at
 * most ORBIT_DRAIN_MS later; the kernel's buffers count the same way
 * (sched_reader.h). Gaps shrink at once but grow at most twofold from one
 * pass to the next, starting from FIRST_GAP_NS.
 *
 * Agent thread only.
 */
#ifndef ORBIT_AGENT_PASS_PLAN_H
#define ORBIT_AGENT_PASS_PLAN_H

#include <stdint.h>

#include "sched_reader.h"
#include "scope_ring.h"

struct orbit__pass_plan {
	uint64_t period_ns;                 /* ORBIT_DRAIN_MS */
	uint64_t last_end[ORBIT_MAX_RINGS]; /* cursors at the last pass */
	double rate[ORBIT_MAX_RINGS];       /* claims per ns, remembered */
	uint64_t last_pass_ns;
	uint64_t last_gap_ns; /* the gap planned last */
};

/* A new start: rates forgotten, gaps from FIRST_GAP_NS; new_segment: the
 * cursors counted from 0. */
void orbit__pass_plan_start(struct orbit__pass_plan *p, uint64_t period_ns, int new_segment,
                            uint64_t now);
/* The gap until the next pass, planned at now after a pass of d. */
uint64_t orbit__pass_plan_next(struct orbit__pass_plan *p, const struct orbit__drain *d,
                               struct orbit__sched_reader *k, uint64_t now);

#endif
