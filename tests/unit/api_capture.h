/*
 * api_capture.h — a small C interface to an in-process capture, for the
 * tests of what the macros write (scope_names.c; api_cpp.cpp, which cannot
 * include the agent's C11 headers: <stdatomic.h> is not C++).
 * api_capture.c installs a sink that keeps every record in the batches the
 * agent delivered, flushes, and runs them through the reconstructor.
 */
#ifndef ORBIT_TEST_API_CAPTURE_H
#define ORBIT_TEST_API_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One reconstructed event, names copied (NUL-terminated for printing). */
struct capture_event {
	int type; /* ORBIT_EVENT_* of reconstruct.h: 1 scope, 2 async, 3 value, 4 thread name */
	uint32_t tid, end_tid, depth;
	int unfinished, name_incomplete, time_untrusted;
	uint64_t id;
	uint64_t start, end;
	uint64_t open_until; /* unfinished: how long it was seen open */
	char *name;
	size_t name_len;
	int has_attrs;
	uint32_t color;
	uint64_t group;
	uint8_t value_kind;
	uint64_t value_bits;
};

struct capture_stats {
	uint64_t records;   /* reached the sink */
	uint64_t sink_gaps; /* batches that did not start at their ring's next claim (from 0) */
	uint64_t claimed;   /* the agent's sum of ring cursors */
	uint64_t drained;   /* the agent's */
	uint64_t lost;      /* lapped + dead + backstop */
	uint64_t stalled_rings;
	/* the reconstructor's */
	uint64_t reconstructed, bad_records, unmatched_stops, unfinished, incomplete_names,
	    orphan_continuations, gaps;
};

/* Installs the sink; before orbit_init(), so that no drain pass of the
 * agent runs without it (orbit_init() is the caller's business). */
void capture_install(void);
/* orbit_flush(), then reconstructs every record received since the last
 * capture_collect(). Returns orbit_flush()'s result. */
int capture_collect(struct capture_stats *st);
size_t capture_count(void);
const struct capture_event *capture_get(size_t i);
/* The first event of that type and name at or after index from; -1 if none. */
long capture_find(int type, const char *name, size_t from);
/* The calling thread's id, as records carry it. */
uint32_t capture_tid(void);

#ifdef __cplusplus
}
#endif

#endif
