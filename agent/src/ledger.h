/*
 * ledger.h — the loss ledger: how every claim a stream accounts for ends up
 * delivered or counted, per scope ring and per page ring.
 *
 * How the counters add up (scope rings). The drain keeps, per ring, the next
 * claim it reads and cumulative counters (scope_ring.c, guarantee 4):
 *
 *     next == drained + lost_lapped + lost_dead + lost_backstop
 *
 * A stream begins where the drain stands (orbit__ledger_begin):
 * ring_start = next, and the counters of that moment are the base. Every
 * claim from ring_start on is then, exactly once, one of:
 *
 *   delivered  drained since the start and put in one of the stream's frames
 *              (orbit__ledger_framed): a reader counts them itself, from the
 *              RingBatch packets it finds;
 *   lapped     lost_lapped - base (overwritten before the drain read it, a
 *              copy discarded as torn, or drained with no memory to keep);
 *   gone       lost_dead - base (the writer's process died; 0 in-process);
 *   backstop   lost_backstop - base (written off after 30 s unpublished);
 *   at_end     end - next at the final pass: claimed, not yet published.
 *
 * and the stream's EndOfStream says claimed = end - ring_start, so a reader
 * checks
 *
 *     claimed == delivered + lapped + gone + backstop + at_end
 *
 * (docs/format.md, section 6). `end` is the cursor the final pass read (or
 * the drain's position, if a lap skip took it further).
 *
 * What breaks the equation, and is counted as `unsent` instead (cumulative
 * since the agent started, informational, reported in every Loss packet):
 * records drained that could not be put in a frame (no memory) and records of
 * frames an output took but never settled as written (orbit__ledger_settled
 * with ok == 0: a connection lost with the frame in its queue). Frames are
 * tracked one by one from the moment they are finished until the output
 * says what became of them, so an output that learns later (a collector's
 * acknowledgement) settles them later, in order.
 *
 * Page rings. A page ring's stream begins where its reader is: what was read
 * or lost before belongs to earlier streams, what is still in the ring
 * (reserved before or after the start) to this one. Per ring,
 *
 *     reserved == records delivered + lost records
 *
 * with reserved and lost taken from orbit__logs_totals minus the base at the
 * start, and records delivered counted by the reader from the FtracePage
 * packets (page_read here is the agent's own count of them).
 *
 * Runs on the agent thread only.
 */
#ifndef ORBIT_AGENT_LEDGER_H
#define ORBIT_AGENT_LEDGER_H

#include <stdint.h>

#include "capture.h"
#include "scope_ring.h"

/* One scope ring's loss in the stream so far (cumulative). */
struct orbit__ring_loss {
	uint64_t lapped, gone, backstop;
	uint64_t unsent; /* since the agent started; not in the equation */
	uint64_t at_end;
};

/* One page ring's counts in the stream so far. */
struct orbit__page_count {
	uint64_t reserved, records, pages;
};

/* A finished frame whose fate is not known yet. */
struct orbit__ledger_frame {
	struct orbit__ledger_frame *next;
	uint64_t seq;
	uint32_t n; /* entries */
	struct {
		uint32_t ring;
		uint32_t records;
	} e[];
};

struct orbit__ledger {
	const struct orbit__drain *drain;
	uint32_t rings;
	struct {
		uint64_t start; /* ring_start: the drain's next when the stream began */
		struct orbit__ring_loss base, sent;
		uint64_t unsent;  /* since the agent started */
		uint32_t framing; /* records in the frame being built */
	} ring[ORBIT_MAX_RINGS];
	struct orbit__ledger_frame *head, *tail; /* in flight, oldest first */

	uint32_t page_rings;
	struct orbit__page_count *page_base, *page_sent;
	struct orbit__page_count *page_seen; /* loss totals at the last pass */
	uint64_t *page_read;                 /* records read from each ring, ever */
};

int orbit__ledger_init(struct orbit__ledger *l, const struct orbit__drain *d, uint32_t page_rings);
void orbit__ledger_free(struct orbit__ledger *l);

/* A stream begins at the drain's position. */
void orbit__ledger_begin(struct orbit__ledger *l);
/* The stream's first claim of ring r (Handshake.ring_start). */
static inline uint64_t orbit__ledger_start(const struct orbit__ledger *l, uint32_t r)
{
	return l->ring[r].start;
}

/* n records of ring r were put in the frame being built. */
void orbit__ledger_framed(struct orbit__ledger *l, uint32_t r, uint32_t n);
/* n records of ring r were drained and could not be put in a frame. */
void orbit__ledger_unsent(struct orbit__ledger *l, uint32_t r, uint64_t n);
/* The frame being built was finished as frame seq of the stream. */
void orbit__ledger_frame_done(struct orbit__ledger *l, uint64_t seq);
/* The frame being built was dropped (it could not be compressed). */
void orbit__ledger_frame_dropped(struct orbit__ledger *l);
/* The output says what became of frame seq and every earlier one still in
 * flight: written (ok) or never will be. */
void orbit__ledger_settled(struct orbit__ledger *l, uint64_t seq, int ok);
/* Frame seq alone was not taken by the output. */
void orbit__ledger_lost(struct orbit__ledger *l, uint64_t seq);
/* Every frame in flight is lost (the stream is gone). */
void orbit__ledger_settle_all(struct orbit__ledger *l, int ok);

/* Ring r's loss in the stream now; at_end: claims below the last cursor the
 * drain read and not read (the final packets). Returns 1 if a Loss packet is
 * due (something changed since the last one; at the end, anything non-zero)
 * and notes it as sent. */
int orbit__ledger_loss_due(struct orbit__ledger *l, uint32_t r, int at_end,
                           struct orbit__ring_loss *out);
/* Ring r's loss now, whether or not it changed (the keepalive). */
struct orbit__ring_loss orbit__ledger_loss(const struct orbit__ledger *l, uint32_t r);
/* Claims the stream accounts for on ring r: end - ring_start. */
uint64_t orbit__ledger_claimed(const struct orbit__ledger *l, uint32_t r);

/* A page of ring r holding records records was read (stream or not). */
void orbit__ledger_page_read(struct orbit__ledger *l, uint32_t r, uint64_t records);
/* Page ring r's counts in the stream now; 1 if a PageLoss is due (changed
 * since the last one), noted as sent. */
int orbit__ledger_page_loss_due(struct orbit__ledger *l, uint32_t r, struct orbit__page_count *out);
/* Page ring r's counts in the stream now. */
struct orbit__page_count orbit__ledger_page_now(const struct orbit__ledger *l, uint32_t r);

#endif
