/*
 * loss.h — the one loss account of a stream (docs/format.md section 6 and
 * 4.10): which fields of the loss packets are loss, their one sum, and the
 * equations a reader checks with them. Every program that says how much a
 * stream lost (orbit-collector, orbit-replay, orbit-dump, the test tools)
 * says it from here, so they say the same numbers for the same stream.
 *
 * The packets are cumulative: a ring's (or CPU's) last packet holds its
 * totals, and one without any lost nothing.
 *
 *   scope ring r:  claimed_per_ring[r] == records in its RingBatch packets
 *                  + lapped + writer_gone + backstop + at_end + flight_dropped
 *                  (Loss.unsent is not loss of this stream: it is not in it)
 *   page ring r:   reserved_per_page_ring[r] == data records in its
 *                  FtracePage packets + PageLoss.records
 *   kernel CPU c:  read_events == records on its KernelPage packets (when
 *                  it sent every page it read: unsent_pages == 0); the
 *                  kernel itself lost overrun + dropped more
 *
 * A stream's loss, as every program states it, is the three totals of
 * struct orbit__loss_totals: records of the scope rings, log records, and
 * kernel events.
 */
#ifndef ORBIT_FORMAT_LOSS_H
#define ORBIT_FORMAT_LOSS_H

#include <stdint.h>

#include "capture.h"

/* One scope ring's Loss (4.6). */
struct orbit__loss {
	uint64_t lapped, writer_gone, backstop, at_end, flight_dropped; /* in the equation */
	uint64_t unsent; /* informational: records of earlier streams; not in it */
};

/* One CPU's KernelLoss (4.10). */
struct orbit__kernel_loss {
	uint64_t overrun, dropped;           /* lost in the kernel */
	uint64_t flagged_pages, stored_lost; /* where: pages with the lost-events bit */
	uint64_t read_events;                /* handed to the agent */
	uint64_t unsent_pages;               /* read and not sent */
};

/* The fields of each, named as in the packets: the one list every copy,
 * sum and report of them goes by (X(field) for each). */
#define ORBIT__LOSS_FIELDS(X)                                                                      \
	X(lapped) X(writer_gone) X(backstop) X(at_end) X(unsent) X(flight_dropped)
#define ORBIT__KERNEL_LOSS_FIELDS(X)                                                               \
	X(overrun) X(dropped) X(flagged_pages) X(stored_lost) X(read_events) X(unsent_pages)

void orbit__loss_of(struct orbit__loss *l, const Orbit__Loss *p);
/* The packet of ring `ring` that says l (a writer's). */
void orbit__loss_packet(Orbit__Loss *p, uint32_t ring, const struct orbit__loss *l);
/* The records l counts as lost: the one sum of the equation's terms. */
uint64_t orbit__loss_sum(const struct orbit__loss *l);
/* Field by field, into t (a stream's rings added up). */
void orbit__loss_add(struct orbit__loss *t, const struct orbit__loss *l);
/* The scope ring equation: claimed == delivered + orbit__loss_sum(l). */
int orbit__loss_holds(uint64_t claimed, uint64_t delivered, const struct orbit__loss *l);
/* The page ring equation: reserved == delivered + lost (PageLoss.records). */
int orbit__loss_page_holds(uint64_t reserved, uint64_t delivered, uint64_t lost);

void orbit__kernel_loss_of(struct orbit__kernel_loss *k, const Orbit__KernelLoss *p);
void orbit__kernel_loss_add(struct orbit__kernel_loss *t, const struct orbit__kernel_loss *k);
/* The events the kernel lost: overrun + dropped. */
uint64_t orbit__kernel_loss_sum(const struct orbit__kernel_loss *k);
/* The kernel equation on k (one CPU's or their totals) and the records
 * delivered on the pages: 1 holds, 0 fails, -1 unknown (pages were read and
 * not sent: their records are not known). */
int orbit__kernel_loss_holds(const struct orbit__kernel_loss *k, uint64_t delivered);

/* ---- the account of one stream: its latest loss packets ---- */

#define ORBIT_LOSS_PAGE_RINGS 4096u /* page rings and CPUs a stream may have */

struct orbit__loss_totals {
	uint64_t records;       /* of the scope rings: Σ orbit__loss_sum */
	uint64_t log_records;   /* of the page rings: Σ PageLoss.records */
	uint64_t kernel_events; /* of the kernel: Σ overrun + dropped */
};

static inline uint64_t orbit__loss_total(const struct orbit__loss_totals *t)
{
	return t->records + t->log_records + t->kernel_events;
}

struct orbit__loss_account {
	struct orbit__loss *ring; /* ORBIT_MAX_RINGS, made at the first Loss */
	uint8_t *ring_seen;       /* a Loss of that ring came */
	uint64_t *page;           /* ORBIT_LOSS_PAGE_RINGS: the latest PageLoss.records */
	uint64_t *kernel;         /* ORBIT_LOSS_PAGE_RINGS CPUs: the latest overrun + dropped */
	struct orbit__loss_totals total;
};

/* Takes a Loss, PageLoss or KernelLoss packet (one that passed
 * orbit__packet_validate; a page ring at or past ORBIT_LOSS_PAGE_RINGS is
 * left out): 1 taken, 0 not a loss packet, -ENOMEM (its numbers are then
 * not in the totals). Start from a zeroed account. */
int orbit__loss_account_packet(struct orbit__loss_account *a, const Orbit__Packet *p);
/* Ring r's latest Loss, zeros if none came. */
struct orbit__loss orbit__loss_account_ring(const struct orbit__loss_account *a, uint32_t r);
void orbit__loss_account_free(struct orbit__loss_account *a);

#endif
