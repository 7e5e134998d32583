/*
 * dump_rings.c — what a segment's scope rings still hold that no frame of
 * its flight ring did (dump.h; docs/format.md 4.11). For each ring, the
 * claims from where the flight ring's frames leave off (the stream's
 * ring_end, format/flight.h; without a flight ring, the oldest claim still
 * resident) up to the cursor the dump read after the flight ring:
 *
 *   1. neither the cursor nor where the frames leave off is trusted beyond
 *      start <= from <= cursor (dump_read.c): claims more than one ring's
 *      worth below the cursor cannot be resident and count lapped, so at
 *      most slots_per_ring claims are visited;
 *   2. their slots are copied with pread into a private array (two reads
 *      at most: the claims wrap around the ring once), the cursor read
 *      again after them for R3;
 *   3. the copy is read with format/scope_slot.h, the drain's own reader:
 *      runs of records each checked against its stamp, and a verdict on
 *      each claim a run stops at. Unlike the drain, the dump never waits
 *      and never skips more than that claim: the copy does not change, so
 *      each later claim is judged by its own stamp. Lapped, torn and gone
 *      claims count lapped; a pending one (a marker, or nothing) counts
 *      writer_gone when the process is proven dead, else at_end (a live
 *      process may still publish it, after this snapshot);
 *      On a live segment the copy is what pread saw, in whatever order the
 *      kernel copied the bytes while producers wrote: the acquire loads of
 *      step 3 pair with nothing then (the copy is private), and what vouches
 *      for each record is its check alone — a stamp newer or older than the
 *      words beside it fails it (but for about 2^-31) and the claim counts
 *      lapped, never as a wrong record (scope_ring.c guarantee 2's argument,
 *      with pread's copy as the racing reader);
 *   4. the records go out in RingBatch packets of at most 256 (well under
 *      ORBIT_PACKET_MAX), first_claim their claim, times converted to
 *      CLOCK_MONOTONIC with the calibration the agent left (d->conv), the
 *      untrusted flag set where the conversion extrapolated.
 *
 * So every claim below the cursor is, once: in a kept frame, overwritten in
 * the flight ring, lost before it was framed, or here (delivered, lapped,
 * gone, at_end) — claimed == delivered + lost holds in orbit-replay.
 */
#include <stdlib.h>
#include <string.h>

#include "dump.h"
#include "record.h"
#include "scope_slot.h"

#define RUN 256u /* records in one RingBatch */

/* Converts and encodes n records of ring r from claim first. */
static void emit(struct orbit_dump *d, uint32_t ring, uint64_t first, uint8_t *recs, uint32_t n,
                 struct orbit_dump_ring *res)
{
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *p = recs + (size_t)i * ORBIT_RECORD_SIZE;
		uint64_t t;
		int untrusted = 0;
		memcpy(&t, p, 8);
		t = orbit__seg_conv_ns(&d->conv, t, &untrusted);
		memcpy(p, &t, 8);
		if (untrusted) { /* flags: byte 21 (format.md 4.3) */
			p[21] |= ORBIT_REC_FLAG_TIME_UNTRUSTED;
			d->untrusted++;
		}
	}
	uint32_t framed = orbit__sw_records(d->out.sw, ring, first, recs, n);
	res->pending += n - framed; /* out of memory: at_end */
	res->delivered += framed;
	d->ring_records += framed;
}

/* The slots of claims next .. end - 1 (at most `slots` of them) into copy,
 * each at its index claim & mask; 0 or -1 (said: the segment was cut). */
static int read_slots(struct orbit_dump *d, uint32_t ring, uint64_t next, uint64_t end,
                      struct orbit__seg_slot *copy)
{
	const uint64_t slots = d->l.slots_per_ring, mask = slots - 1;
	const uint64_t at = d->l.rings_offset + ring * d->l.ring_stride + ORBIT__RING_HEADER;
	uint64_t i = next & mask, n = end - next, first = n < slots - i ? n : slots - i;
	if (orbit__dump_pread(d, copy + i, first * ORBIT__SLOT_SIZE, at + i * ORBIT__SLOT_SIZE) !=
	    0)
		return -1;
	if (n > first && orbit__dump_pread(d, copy, (n - first) * ORBIT__SLOT_SIZE, at) != 0)
		return -1;
	return 0;
}

static void walk(struct orbit_dump *d, uint32_t ring, const struct orbit__seg_slot *copy,
                 uint64_t cursor2, struct orbit_dump_ring *res)
{
	const uint64_t slots = d->l.slots_per_ring, mask = slots - 1, end = res->end;
	uint8_t recs[RUN * ORBIT_RECORD_SIZE];
	uint64_t next = res->next, clean = next;
	while (next < end) {
		enum orbit__slots_stop why;
		uint64_t stamp = 0;
		uint32_t n = orbit__slots_copy(copy, mask, next, end, recs, RUN, &why, &stamp);
		if (n > 0) {
			clean = orbit__slots_clean(clean, next, n, cursor2, slots);
			emit(d, ring, next, recs, n, res);
			next += n;
		}
		if (why == ORBIT__SLOTS_DONE)
			continue;
		switch (orbit__slot_verdict(why, stamp, next, slots, clean)) {
		case ORBIT__SLOT_LAPPED:
		case ORBIT__SLOT_GONE:
			res->lapped++;
			break;
		case ORBIT__SLOT_PENDING:
			if (d->life == ORBIT__SEG_DEAD)
				res->gone++;
			else
				res->pending++;
			break;
		}
		next++;
		clean = next;
	}
	res->next = next;
}

void orbit__dump_rings(struct orbit_dump *d, const uint64_t *cursor, struct orbit_dump_ring *res)
{
	const uint64_t slots = d->l.slots_per_ring;
	struct orbit__seg_slot *copy = NULL; /* made for the first ring with claims to read */
	int cut = 0, nomem = 0;
	for (uint32_t r = 0; r < d->l.ring_count; r++) {
		struct orbit_dump_ring *rr = &res[r];
		*rr = (struct orbit_dump_ring){.end = cursor[r], .next = d->from[r]};
		if (nomem || cut)
			continue; /* not read: at_end */
		uint64_t lo = rr->end > slots ? rr->end - slots : 0;
		if (rr->next < lo) { /* not resident any more (1.) */
			rr->lapped += lo - rr->next;
			rr->next = lo;
		}
		if (rr->next >= rr->end)
			continue;
		if (copy == NULL) {
			if (orbit__dump_affords(d, slots * ORBIT__SLOT_SIZE, d->l.rings_offset,
			                        "scope rings") != 0) {
				cut = 1;
				continue;
			}
			copy = aligned_alloc(64, slots * ORBIT__SLOT_SIZE);
			nomem = copy == NULL;
			if (nomem)
				continue;
		}
		uint64_t cursor2 = 0;
		if (read_slots(d, r, rr->next, rr->end, copy) != 0 ||
		    orbit__dump_pread(d, &cursor2, 8, d->l.rings_offset + r * d->l.ring_stride) !=
		        0) {
			cut = 1;
			continue;
		}
		if (cursor2 < rr->end)
			cursor2 = rr->end; /* a cursor does not go back: hostile */
		walk(d, r, copy, cursor2, rr);
	}
	if (nomem)
		orbit__dump_problem(d, d->l.rings_offset, "out of memory for the scope rings");
	free(copy);
}
