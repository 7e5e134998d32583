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
 * Streams that die. With acknowledgements (docs/format.md section 7), an
 * output settles a frame when the collector says the frame is in its file,
 * so when a connection dies the ledger knows, per ring, the records in
 * acknowledged frames, those in frames written but never acknowledged
 * (which may or may not be in the file: the collector may have written
 * frames it had not acknowledged yet), and those certainly lost (lapped,
 * gone, backstop, never sent, or after a last Ack that ended the stream).
 * Per ring, exactly:
 *
 *     claimed == acknowledged + unacknowledged + lost
 *
 * with claimed = the drain's next at the death - ring_start (nothing is
 * drained between streams, so it is also the next stream's ring_start -
 * this one's). orbit__ledger_died keeps that as the one pending report;
 * orbit__ledger_handshake puts it in the next stream's Handshake
 * (PreviousStream), and it is dropped once the collector answers that
 * Handshake: the report is then in a capture. Only a stream the collector
 * answered drains records (stream.c), so at most one report is ever
 * pending: a stream that carries it is answered before it can die with
 * records of its own. A report still pending at exit is the end-of-run
 * line's (orbit__ledger_undelivered).
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
#include "output.h" /* struct orbit__fate */
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

/* The report on a stream that died (Handshake.previous_stream). */
struct orbit__ledger_report {
	int pending;
	struct orbit__fate fate;
	uint64_t monotonic_ns; /* its Handshake's */
	uint64_t claimed[ORBIT_MAX_RINGS], acked[ORBIT_MAX_RINGS];
	uint64_t unacked[ORBIT_MAX_RINGS], lost[ORBIT_MAX_RINGS];
	Orbit__PreviousStream msg; /* points into the arrays above */
};

struct orbit__ledger {
	const struct orbit__drain *drain;
	uint32_t rings;
	struct {
		uint64_t start; /* ring_start: the drain's next when the stream began */
		struct orbit__ring_loss base, sent;
		uint64_t unsent;   /* since the agent started */
		uint32_t framing;  /* records in the frame being built */
		uint64_t acked;    /* this stream's records in frames settled as written */
		uint64_t s_unsent; /* this stream's records never sent, or certainly lost */
	} ring[ORBIT_MAX_RINGS];
	struct orbit__ledger_frame *head, *tail; /* in flight, oldest first */
	uint64_t stream_ns;                      /* the open stream's Handshake.monotonic_ns */
	int ended;                               /* the open stream's final packets were made */
	struct orbit__ledger_report report;

	struct orbit__logs *logs; /* the page rings (NULL: none) */
	uint32_t page_rings;
	struct orbit__page_count *page_base, *page_sent;
	struct orbit__page_count *page_seen; /* loss totals at the last pass */
	uint64_t *page_read;                 /* records read from each ring, ever */
};

struct orbit__logs;
/* The ledger of the streams that drain d and read the page rings of logs
 * (NULL: none). */
int orbit__ledger_init(struct orbit__ledger *l, const struct orbit__drain *d,
                       struct orbit__logs *logs);
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

/* The stream whose Handshake h is begins: the ledger notes which one it is
 * and puts the pending report in it (h->previous_stream), if there is one. */
void orbit__ledger_handshake(struct orbit__ledger *l, Orbit__Handshake *h);
/* The destination answered the open stream's Handshake: a pending report is
 * in a capture now. */
void orbit__ledger_answered(struct orbit__ledger *l);
/* The open stream ended before every frame was settled (its connection
 * died, or the stop gave up waiting): frames in flight are unacknowledged,
 * or lost when fate->certain, and the stream's account becomes the pending
 * report. answered: the stream had drained records (else nothing is owed
 * and a report already pending stays). */
void orbit__ledger_died(struct orbit__ledger *l, const struct orbit__fate *fate, int answered);
/* Records of the pending report's stream that are in no acknowledged frame
 * (claimed - acknowledged), 0 without one: for the end-of-run line. */
uint64_t orbit__ledger_undelivered(const struct orbit__ledger *l);
/* Records never sent, or certainly lost, since the agent started: the
 * rings' unsent, summed. */
uint64_t orbit__ledger_unsent_total(const struct orbit__ledger *l);

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
