/*
 * reconstruct.h — from scope-ring records back to scopes, spans and values.
 *
 * Feed records in each ring's claim order (rings may interleave in any way:
 * all of a thread's records are in one ring, in the order it wrote them).
 * The reconstructor
 *  - rebuilds names from a head record and its continuations, keyed by
 *    (tid, id); a name whose continuation never came is delivered as far as
 *    it got, flagged incomplete;
 *  - matches scope starts and stops by (tid, scope id). A scope's depth is
 *    the number of the thread's own scopes around it: open at its start,
 *    then stopped after it, or still open when nothing more is known of
 *    them (the input ended, the thread's id was reused). A start whose stop
 *    never comes costs nothing but itself: when the stop of a scope around
 *    it comes, or its thread's end record, it ends unfinished, open no later
 *    than the first scope started after it (or than that stop or end), and
 *    counts in no scope's depth. So a finished scope waits until every
 *    scope open under it is decided, and scopes come out in the order they
 *    finished within a thread, not across threads. At most MAX_HELD
 *    finished scopes of a thread (65536) and MAX_HELD_ALL of all (262144)
 *    wait: past that the thread's undecided open scopes are taken as around
 *    the scopes above them (depth_assumed), and one of them turning out
 *    never stopped after all is counted in depth_misplaced, one for each
 *    scope it made one level too deep. A stop with no start is counted,
 *    never invented into a scope;
 *  - follows thread lifetimes: a thread ends at its thread-end record (kind
 *    13, from the agent's per-thread destructor), or, when that never came,
 *    after its last scope start or stop before a scope start whose id is
 *    not above the thread's last (per-thread ids start at 1 and only increase, so that
 *    start is a new thread with the old one's id), or at the end of input.
 *    A new thread under an old id starts at depth 0 with nothing open;
 *  - follows loss: records come in batches of consecutive claims of one ring
 *    (orbit__reconstruct_batch); a batch that does not start where the ring's
 *    last one ended is a gap, where stops may have been lost. Scopes open on
 *    that ring's threads at a gap become suspect: they still match a stop that
 *    comes later, but no longer count in the depth of scopes started after,
 *    so a start whose stop was lost skews nothing after it;
 *  - matches async spans by id across threads and rings, whichever of start
 *    and stop is read first (a stop pairs with a start no later than it).
 * Memory is bounded by what is open: threads, their open scopes, open spans,
 * and the finished scopes waiting (above).
 */
#ifndef ORBIT_FORMAT_RECONSTRUCT_H
#define ORBIT_FORMAT_RECONSTRUCT_H

#include <stddef.h>
#include <stdint.h>

#include "record.h"
#include "wire_limits.h" /* ORBIT_MAX_RINGS */

enum orbit_event_type {
	ORBIT_EVENT_SCOPE = 1, /* start..end on tid, at depth */
	ORBIT_EVENT_ASYNC = 2, /* start on tid, end on end_tid */
	ORBIT_EVENT_VALUE = 3, /* value_kind, value_bits at start */
	ORBIT_EVENT_THREAD_NAME = 4,
};

struct orbit_event {
	enum orbit_event_type type;
	uint32_t tid;
	uint32_t end_tid;
	uint32_t depth;
	/* Flags: what is uncertain about the event (docs/format.md, 2). */
	int unfinished;      /* scope or span whose own stop never came: end ==
	                      * start, and open_until says how long it ran */
	int name_incomplete; /* a continuation of the name was lost */
	int time_untrusted;  /* the agent could not trust a time's conversion (the
	                      * start's or the stop's: record flag bit 1) */
	uint64_t id;
	uint64_t start;
	uint64_t end;
	/* The latest time it is known to have been open: end, or for an
	 * unfinished one the stop of a scope around it, its thread's end, or
	 * (end of input) its thread's last record, the input's for a span; for
	 * a scope open across a gap, no later than its thread's last record
	 * before the gap (its stop may have been lost there); never before
	 * start (a value or thread name: its time). */
	uint64_t open_until;
	const char *name; /* not NUL-terminated; valid during the callback */
	size_t name_len;
	int has_attrs;
	uint32_t color;
	uint64_t group;
	uint64_t site;      /* where it was written: the start's or value's call site
	                     * (record flag bit 2), an address in the traced process
	                     * that the stream's SourceLocation packets name; 0: none */
	uint8_t value_kind; /* ORBIT_REC_INT ... ORBIT_REC_DOUBLE */
	uint64_t value_bits;
};

struct orbit_reconstruct_stats {
	uint64_t records;
	uint64_t bad_records;     /* unknown kind or flags */
	uint64_t unmatched_stops; /* stop (or async stop) with no start */
	uint64_t unfinished;      /* scopes and spans reported unfinished */
	uint64_t incomplete_names;
	uint64_t orphan_continuations;
	uint64_t gaps;             /* batches that did not follow their ring's last */
	uint64_t untrusted_events; /* events reported with time_untrusted */
	uint64_t thread_ends;      /* thread-end records */
	uint64_t reused_tids;      /* new threads found by their scope ids under an old id */
	uint64_t depth_assumed;    /* open scopes taken as around the scopes above them
	                            * before it was known (too many waited) */
	uint64_t depth_misplaced;  /* scopes given one level too many: such a scope
	                            * turned out never stopped */
};

typedef void (*orbit_event_fn)(void *ctx, const struct orbit_event *ev);

struct orbit_reconstruct;

struct orbit_reconstruct *orbit__reconstruct_new(orbit_event_fn fn, void *ctx);
/* Returns 0, or -ENOMEM (the record is then not taken into account). */
int orbit__reconstruct_add(struct orbit_reconstruct *rc, const struct orbit_record *rec);
/* Consecutive records of one ring (n records of ORBIT_RECORD_SIZE bytes,
 * claims first_claim ...); ring < ORBIT_MAX_RINGS. Returns 0, -EINVAL for a
 * ring out of range, or -ENOMEM. */
int orbit__reconstruct_batch(struct orbit_reconstruct *rc, uint32_t ring, uint64_t first_claim,
                             const uint8_t *records, size_t n);
/* Reports everything still open as unfinished. */
void orbit__reconstruct_finish(struct orbit_reconstruct *rc);
const struct orbit_reconstruct_stats *orbit__reconstruct_stats(const struct orbit_reconstruct *rc);
void orbit__reconstruct_free(struct orbit_reconstruct *rc);

#endif
