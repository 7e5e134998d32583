/*
 * segment_state.h — the agent thread keeps the segment's state area up to
 * date for orbit-dump (format/segment.h, docs/format.md 1.7): the clock
 * conversion after each calibration, the thread names once a second.
 */
#ifndef ORBIT_AGENT_SEGMENT_STATE_H
#define ORBIT_AGENT_SEGMENT_STATE_H

#include <stdint.h>

#include "clock.h"
#include "segment.h"

/* The writer of one segment's state area (the agent thread's). Zero is a
 * writer whose next names call writes at once (a new segment). */
struct orbit__state_writer {
	struct orbit__seg_state *st;
	uint64_t clock_gen, names_gen; /* of the last block written, per part */
	uint64_t names_at;             /* when the names were written last */
};

/* Writes st from now on, starting afresh. */
void orbit__segment_state_init(struct orbit__state_writer *w, struct orbit__seg_state *st);
/* The conversion's points, now (one block write, about 4 KiB). */
void orbit__segment_state_clock(struct orbit__state_writer *w, const struct orbit__clock_conv *c);
/* The threads' names, if a second has passed since the last time. */
void orbit__segment_state_names(struct orbit__state_writer *w, uint64_t now_ns);

#endif
