/* pass_plan.c — when the next pass comes; see pass_plan.h. */
#include "pass_plan.h"

#include <string.h>

#define MIN_GAP_NS 200000ull     /* passes at most this close (and pairs) */
#define RATE_FADE_NS 500000000.0 /* a ring's rate fades to half in 0.5 s */
#define RATE_WINDOW_NS 500000.0  /* the shortest time a rate is measured over */
#define FIRST_GAP_NS 1000000ull  /* the first planned gap; gaps at most double */

void orbit__pass_plan_start(struct orbit__pass_plan *p, uint64_t period_ns, int new_segment,
                            uint64_t now)
{
	if (new_segment)
		memset(p->last_end, 0, sizeof p->last_end);
	memset(p->rate, 0, sizeof p->rate);
	p->period_ns = period_ns;
	p->last_gap_ns = FIRST_GAP_NS / 2;
	p->last_pass_ns = now;
}

/*
 * For each ring, the time until it is a quarter full at its remembered
 * rate, counting the claims it holds unread now; the soonest of them,
 * between MIN_GAP_NS and ORBIT_DRAIN_MS.
 */
uint64_t orbit__pass_plan_next(struct orbit__pass_plan *p, const struct orbit__drain *d,
                               struct orbit__sched_reader *k, uint64_t now)
{
	const uint32_t rings = d->seg->layout.ring_count;
	const double quarter = (double)(d->seg->layout.slots_per_ring / 4);
	double dt = (double)(now - p->last_pass_ns);
	double fade = RATE_FADE_NS / (RATE_FADE_NS + dt);
	double soonest = (double)p->period_ns;
	/* A rate seen over less than RATE_WINDOW_NS counts as over that long:
	 * a producer that writes in bursts would otherwise look faster than it
	 * is between two close passes, and the remembered rate is a maximum. */
	double window = dt > RATE_WINDOW_NS ? dt : RATE_WINDOW_NS;
	for (uint32_t i = 0; i < rings; i++) {
		const struct orbit__ring_state *s = &d->ring[i];
		double seen = (double)(s->end - p->last_end[i]) / window;
		p->last_end[i] = s->end;
		p->rate[i] = seen > p->rate[i] * fade ? seen : p->rate[i] * fade;
		if (p->rate[i] <= 0)
			continue;
		/* What the ring holds now, not when the pass began: a long pass
		 * (a frame compressed, the thread descheduled) brings the next
		 * one forward. */
		uint64_t cursor = orbit__ring_claimed(d->seg, i);
		double unread = cursor > s->next ? (double)(cursor - s->next) : 0;
		double t = unread >= quarter ? 0 : (quarter - unread) / p->rate[i];
		if (t < soonest)
			soonest = t;
	}
	soonest = orbit__sched_reader_soonest(k, window, fade, soonest);
	p->last_pass_ns = now;
	/* Gaps shrink at once but grow at most twofold a pass, from 1 ms at
	 * the start: a rate measured over a window the producer entered half
	 * way (the first pass of a program that writes flat out from
	 * orbit_init on) reads low, and the next pass must come before the
	 * ring laps, not ORBIT_DRAIN_MS later. */
	uint64_t gap = soonest < (double)MIN_GAP_NS ? MIN_GAP_NS : (uint64_t)soonest;
	if (gap > 2 * p->last_gap_ns)
		gap = 2 * p->last_gap_ns;
	p->last_gap_ns = gap;
	return gap;
}
