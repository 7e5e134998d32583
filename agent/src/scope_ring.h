/*
 * scope_ring.h — draining the scope rings of a segment (seed 000).
 *
 * The write path is inline in orbit/internal.h; scope_ring.c explains the
 * algorithm and numbers its guarantees. A drain works on a segment mapped by its owner
 * (the in-process agent) or by another process (orbit__segment_open); it only
 * ever reads the rings.
 */
#ifndef ORBIT_AGENT_SCOPE_RING_H
#define ORBIT_AGENT_SCOPE_RING_H

#include <stdint.h>

#include "orbit.h"
#include "segment.h"

#define ORBIT__BACKSTOP_NS (30ull * 1000000000ull)

/* Records of one ring, in claim order, claims first_claim .. first_claim + n - 1,
 * each ORBIT_RECORD_SIZE bytes (the slot without its stamp). */
typedef void (*orbit__drain_fn)(void *ctx, uint32_t ring, uint64_t first_claim,
                                const uint8_t *records, uint32_t n);

struct orbit__ring_state {
	uint64_t next;          /* the next claim to read */
	uint64_t end;           /* the cursor the last pass drained towards */
	uint64_t drained;       /* records handed to the callback */
	uint64_t lost_lapped;   /* overwritten before they were read */
	uint64_t lost_dead;     /* claimed by a process that died before publishing */
	uint64_t lost_backstop; /* written off by the 30 s backstop */
	uint64_t clean;         /* claims clean .. next - 1 were all delivered, each
	                         * before its slot's next lap was handed out
	                         * (scope_ring.c, guarantee 7) */
	uint64_t stall_claim;   /* claim the ring is waiting on, if stalled */
	uint64_t stall_since;   /* CLOCK_MONOTONIC ns when that wait began */
	int stalled;
};

struct orbit__drain {
	const struct orbit__segment *seg;
	int in_process;       /* the producers are this process: always alive */
	uint64_t backstop_ns; /* ORBIT__BACKSTOP_NS unless a test shortens it */
	uint8_t *stage;       /* copies go here when set (orbit__drain_stage) */
	size_t stage_cap;     /* records of room */
	size_t stage_len;     /* records copied since orbit__drain_stage */
	uint32_t first_ring;  /* where the next orbit__drain_all begins */
	struct orbit__ring_state ring[ORBIT_MAX_RINGS];
};

/* What one drain pass found. */
struct orbit__drain_result {
	uint64_t records;
	uint64_t lost;
	uint32_t stalled_rings;
	uint32_t backstops; /* events the backstop dropped in this pass */
	int full;           /* the staging area filled: rings were left unread */
};

void orbit__drain_init(struct orbit__drain *d, const struct orbit__segment *seg, int in_process);

/* Copies go straight into stage (room for cap records) from now on, and
 * the callback is told where they are (records points into stage); the
 * pass stops when it is full. Call again to empty it. */
void orbit__drain_stage(struct orbit__drain *d, uint8_t *stage, size_t cap);

/* Drains every ring up to the cursor it finds there; a ring stalled on a
 * claim that is still to be published stops, the others go on. */
void orbit__drain_all(struct orbit__drain *d, orbit__drain_fn fn, void *ctx,
                      struct orbit__drain_result *res);

/* One ring; returns the records delivered. */
uint64_t orbit__drain_ring(struct orbit__drain *d, uint32_t ring, orbit__drain_fn fn, void *ctx,
                           struct orbit__drain_result *res);

/* The ring's cursor: how many events were ever claimed on it. */
uint64_t orbit__ring_claimed(const struct orbit__segment *seg, uint32_t ring);

/* Claims the drain found overwritten, every ring's, since it began. */
uint64_t orbit__drain_lapped(const struct orbit__drain *d);
/* Claims still in the rings that the drain never read (cursors now). */
uint64_t orbit__drain_unread(const struct orbit__drain *d);

static inline uint64_t orbit__ring_lost(const struct orbit__ring_state *s)
{
	return s->lost_lapped + s->lost_dead + s->lost_backstop;
}

#endif
