/*
 * drain_pass.h — one drain pass of the agent: copy what the scope rings
 * hold into the staging area, take a calibration pair, convert the records'
 * times to CLOCK_MONOTONIC ns there, and hand the runs to the stream and to
 * a test sink; then the log pages and the kernel's pages, and the end of
 * the pass on the stream.
 *
 * What a pass holds. The drain copies straight into a staging area of
 * ORBIT__PASS_STAGE records (scope_ring.c), allocated at the first pass
 * that has records and freed after SHRINK_NS without any. Memory is
 * therefore bounded by the staging area, the frame being built (stream.c)
 * and the send queue (ORBIT_SEND_BUFFER), whatever the producers do.
 *
 * Agent thread only.
 */
#ifndef ORBIT_AGENT_DRAIN_PASS_H
#define ORBIT_AGENT_DRAIN_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "sched_reader.h"
#include "scope_ring.h"
#include "segment_state.h"

#define ORBIT__PASS_STAGE 32768u /* records one pass copies at most */

/* Where drained records go besides the stream (tests, demo-drain). Called
 * on the agent thread; records' time fields are CLOCK_MONOTONIC ns. */
struct orbit__sink {
	void (*records)(void *ctx, uint32_t ring, uint64_t first_claim, const uint8_t *records,
	                uint32_t n);
	/* A log page (ftrace layout, times in ns), or NULL. */
	void (*page)(void *ctx, uint32_t ring, const uint8_t *page, size_t len);
	void *ctx;
};

struct orbit__logs;
struct orbit__stream;

/* Consecutive claims of one ring in the staging area. */
struct orbit__pass_run {
	uint32_t ring;
	uint32_t n;
	uint64_t first;
	const uint8_t *records;
};

struct orbit__pass {
	struct orbit__segment *seg;
	struct orbit__drain *drain;
	struct orbit__clock_conv *clock;
	struct orbit__state_writer *state; /* the segment's state area */
	struct orbit__logs *logs;          /* NULL: no log page rings */
	struct orbit__stream *stream;      /* NULL: no output */
	struct orbit__sched_reader *sched;
	uint8_t *stage;
	uint64_t stage_used_ns; /* when the staging area last held records */
	struct orbit__pass_run runs[ORBIT__PASS_STAGE / 16 + ORBIT_MAX_RINGS];
	size_t nruns;
	/* Claims below old_until[ring] may have read the clock before the
	 * last reset (clock.h guarantee 4): each ring's cursor when it was
	 * found. old_any: some ring's drain is still below its bound. */
	uint64_t old_until[ORBIT_MAX_RINGS];
	int old_any;
};

/* Takes a calibration pair now; two pairs at least 2 ms apart the first
 * time, so that the rate a Handshake states is not far off. */
void orbit__pass_calibrate(struct orbit__pass *p);

/* One pass: drain, convert, hand out to the stream and the sink. final: the
 * last pass of a stream (it empties the rings, however many staging areas
 * that takes); flush: log pages of any age go out, and the frame is closed.
 * What the drain found is added into *res. Returns 1 if rings were left
 * unread. */
int orbit__pass_run(struct orbit__pass *p, const struct orbit__sink *sink, int final, int flush,
                    struct orbit__drain_result *res);

/* Frees the staging area. */
void orbit__pass_free(struct orbit__pass *p);

#endif
