/* drain_pass.c — one drain pass of the agent; see drain_pass.h. */
#include "drain_pass.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "logs.h"
#include "stream.h"

#define MIN_CALIBRATION_NS 2000000ull /* first two pairs at least 2 ms apart */
#define SHRINK_NS 2000000000ull       /* staging freed after 2 s without records */
#define LOG_FLUSH_AGE_NS 100000000ull /* a page holding records 100 ms goes out */

/* The drain tells where it put a run of records (in the staging area):
 * consecutive runs of one ring become one batch on the wire. */
static void collect(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	struct orbit__pass *p = ctx;
	struct orbit__pass_run *last = p->nruns ? &p->runs[p->nruns - 1] : NULL;
	if (last != NULL && last->ring == ring && last->first + last->n == first &&
	    last->records + (size_t)last->n * ORBIT_RECORD_SIZE == recs &&
	    last->n + n <= ORBIT_BATCH_MAX) {
		last->n += n;
		return;
	}
	if (p->nruns == sizeof p->runs / sizeof p->runs[0]) {
		/* Runs break only at skips and stalls; a pass with more than
		 * this many (a pathological ring) counts the rest as lapped, as
		 * they were drained and cannot be kept. */
		p->drain->ring[ring].drained -= n;
		p->drain->ring[ring].lost_lapped += n;
		return;
	}
	p->runs[p->nruns++] =
	    (struct orbit__pass_run){.ring = ring, .n = n, .first = first, .records = recs};
}

/* A reset was found: every claim handed out so far may have read the clock
 * before it. */
static void note_reset(struct orbit__pass *p)
{
	for (uint32_t r = 0; r < p->seg->layout.ring_count; r++)
		p->old_until[r] = orbit__ring_claimed(p->seg, r);
	p->old_any = 1;
}

void orbit__pass_calibrate(struct orbit__pass *p)
{
	struct orbit__clock_conv *c = p->clock;
	if (orbit__clock_calibrate(c) == ORBIT__CLOCK_RESET)
		note_reset(p);
	if (c->source == ORBIT__CLOCK_MONOTONIC)
		return;
	/* A rate from two pairs a few µs apart would be far off. Bounded: a
	 * counter that resets at every pair must not hold the agent here. */
	for (int tries = 0;
	     tries < 200 &&
	     (c->count < 2 ||
	      c->pair[(c->head + c->count - 1) % ORBIT__CLOCK_PAIRS].ns - c->pair[c->head].ns <
	          MIN_CALIBRATION_NS);
	     tries++) {
		struct timespec ts = {0, 500000};
		nanosleep(&ts, NULL);
		if (orbit__clock_calibrate(c) == ORBIT__CLOCK_RESET)
			note_reset(p);
	}
}

/* Whether a ring's drain is still below its bound of note_reset. */
static void old_done(struct orbit__pass *p)
{
	int any = 0;
	for (uint32_t r = 0; r < p->seg->layout.ring_count; r++)
		any |= p->drain->ring[r].next < p->old_until[r];
	p->old_any = any;
}

static uint64_t page_to_ns(void *ctx, uint64_t ticks)
{
	return orbit__clock_to_ns(ctx, ticks);
}

struct page_out {
	const struct orbit__sink *sink;
	struct orbit__stream *stream;
};

static void on_page(void *arg, uint32_t ring, const uint8_t *page, size_t len)
{
	const struct page_out *o = arg;
	if (o->sink->page != NULL)
		o->sink->page(o->sink->ctx, ring, page, len);
	if (o->stream != NULL)
		orbit__stream_page(o->stream, ring, page, len);
}

static void mirror_capture_flag(const struct orbit__segment *seg)
{
	/* Relaxed both ways: the flag only gates whether producers write;
	 * the segment they write to was published by orbit_init. */
	uint32_t want = atomic_load_explicit(&seg->control->capture, memory_order_relaxed);
	if (atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed) != want)
		atomic_store_explicit(&orbit__capture_flag, want, memory_order_relaxed);
}

/* Copies what the rings hold (at most the staging area), converts it and
 * hands it on; 1 if the staging area filled and rings were left unread. */
static int drain_once(struct orbit__pass *p, const struct orbit__sink *sink,
                      struct orbit__drain_result *res)
{
	uint64_t now = orbit__monotonic_ns();
	if (p->stage == NULL) {
		p->stage = malloc((size_t)ORBIT__PASS_STAGE * ORBIT_RECORD_SIZE);
		p->stage_used_ns = now;
	}
	if (p->stage == NULL) { /* no memory: the rings keep it until there is */
		memset(res, 0, sizeof *res);
		return 0;
	}
	p->nruns = 0;
	orbit__drain_stage(p->drain, p->stage, ORBIT__PASS_STAGE);
	orbit__drain_all(p->drain, collect, p, res);
	size_t n = p->drain->stage_len;
	/* The pair is taken after the copy: every record copied has ticks
	 * before it, so conversion interpolates (clock.h). */
	orbit__pass_calibrate(p);
	orbit__segment_state_clock(p->state, p->clock); /* for a dump */
	if (n > 0) {
		p->stage_used_ns = now;
		struct orbit__clock_cursor cur;
		orbit__clock_cursor_init(&cur, p->clock);
		for (size_t i = 0; i < p->nruns; i++) { /* what goes out: the runs */
			const struct orbit__pass_run *run = &p->runs[i];
			uint8_t *r = (uint8_t *)run->records;
			/* Claims from old_until on took their ticks after the
			 * reset was found; below it they may be older. */
			uint64_t old = p->old_any && run->first < p->old_until[run->ring]
			                   ? p->old_until[run->ring] - run->first
			                   : 0;
			for (uint32_t k = 0; k < run->n; k++, r += ORBIT_RECORD_SIZE) {
				uint64_t t;
				memcpy(&t, r, 8);
				cur.maybe_old = k < old;
				t = orbit__clock_cursor_to_ns(&cur, t);
				memcpy(r, &t, 8);
				if (orbit__clock_cursor_untrusted(&cur)) /* flags: byte 21 */
					r[21] |= ORBIT__FLAG_TIME_UNTRUSTED;
			}
		}
		if (p->old_any)
			old_done(p);
	}
	for (size_t i = 0; i < p->nruns; i++) {
		const struct orbit__pass_run *r = &p->runs[i];
		if (sink->records != NULL)
			sink->records(sink->ctx, r->ring, r->first, r->records, r->n);
		if (p->stream != NULL)
			orbit__stream_records(p->stream, r->ring, r->first, r->records, r->n);
	}
	if (n == 0 && now - p->stage_used_ns >= SHRINK_NS) {
		free(p->stage); /* a quiet agent holds no staging */
		p->stage = NULL;
	}
	return res->full;
}

int orbit__pass_run(struct orbit__pass *p, const struct orbit__sink *sink, int final, int flush,
                    struct orbit__drain_result *all)
{
	mirror_capture_flag(p->seg);
	orbit__segment_state_names(p->state, orbit__monotonic_ns());
	/* With no stream, or a full queue, the rings are left alone: producers
	 * lap them and the loss is counted when draining resumes. The clock is
	 * followed all the same, so an outage is not one long chord (a jump
	 * inside it would hide in the chord's slack, clock.h guarantee 3). */
	if (p->stream != NULL && !orbit__stream_ready(p->stream, final)) {
		orbit__pass_calibrate(p);
		orbit__segment_state_clock(p->state, p->clock); /* for a dump */
		return 0;
	}
	struct orbit__drain_result res;
	/* A flush or a final pass reads everything there was when it began,
	 * staging area after staging area (not what producers add meanwhile:
	 * they could keep it here forever). */
	uint64_t rounds =
	    final || flush ? orbit__drain_unread(p->drain) / ORBIT__PASS_STAGE + 1 : 1;
	int more;
	do {
		more = drain_once(p, sink, &res);
		all->records += res.records;
		all->lost += res.lost;
		all->backstops += res.backstops;
		all->stalled_rings = res.stalled_rings;
	} while (more && --rounds > 0);
	/* Log pages: those full, and those holding records for 100 ms; at a
	 * flush everything. */
	if (p->logs != NULL) {
		struct page_out o = {.sink = sink, .stream = p->stream};
		orbit__logs_read(p->logs, page_to_ns, p->clock, on_page, &o,
		                 flush ? 0 : LOG_FLUSH_AGE_NS);
	}
	more |= orbit__sched_reader_pass(p->sched, p->stream, final);
	if (p->stream != NULL)
		orbit__stream_pass_done(p->stream, flush || final);
	if (all->backstops)
		fprintf(stderr,
		        "orbit: %u event(s) claimed but unpublished for 30 s were dropped "
		        "(backstop)\n",
		        all->backstops);
	return more;
}

void orbit__pass_free(struct orbit__pass *p)
{
	free(p->stage);
	p->stage = NULL;
}
