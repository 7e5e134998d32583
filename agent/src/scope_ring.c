/*
 * scope_ring.c — the drain of the scope rings.
 *
 * How it works. A segment holds ring_count rings of 2^k 64-byte slots. A
 * thread writes only to the ring its tid hashes to (orbit.h). The cursor
 * never wraps; a claim number names one slot (claim mod slots) and one lap.
 * A slot's stamp says what the slot holds (docs/format.md 1.5):
 *
 *   0                    never written
 *   c + 1                claim c's marker: claimed, its record being written
 *   c + 1 + check        claim c's record, complete; check = orbit__check()
 *                        of its seven words (low 32 bits 0, bit 32 set)
 *
 * The slot protocol. A producer (orbit.h):
 *   W1  c = fetch_add(cursor, 1)            relaxed
 *   W2  stamp = c + 1                       relaxed (the marker)
 *   W3  the seven record words              relaxed
 *   W4  stamp = c + 1 + check(record)       release
 * The drain, at the claim `next` it has to read:
 *   R1  s = stamp                           acquire: pairs with W4
 *   R2  if s says "claim next's record": copy the seven words (relaxed) and
 *       keep the copy iff s == next + 1 + check(copy);
 *   R3  after a run of copies, the cursor once (relaxed, after the R1 loads):
 *       which of them were read before their slot's next lap was handed out
 *       (`clean`, guarantee 7).
 * and otherwise, by what s says:
 *   a later lap's marker or record   the drain was lapped: skip to the oldest
 *                       claim still resident (cursor - slots) plus a margin
 *                       (slots / 8), count the skipped claims lost (lapped),
 *                       and read on: the margin keeps the drain off the lines
 *                       the producer is writing now, so a producer that never
 *                       pauses is still delivered from between its laps;
 *   claim next's marker, or 0 (never written), or the record of claim
 *                       next - slots that this drain delivered clean: claim
 *                       next is handed out and will be published; if the
 *                       cursor is past it, the ring stalls there, the other
 *                       rings go on. Whether to wait is decided by liveness:
 *                       while the producing process lives the claim may
 *                       still be published; once it is gone the claim is
 *                       written off at once (lost, dead). A wait on one
 *                       claim longer than the backstop (30 s) drops that one
 *                       event, counted and reported (lost, backstop);
 *   anything else of an earlier lap   a producer of an earlier lap wrote the
 *                       slot after claim next was handed out (it was
 *                       descheduled inside its write for a lap or more):
 *                       claim next's record, if it was ever there, is gone,
 *                       and nothing will be published for it that this slot
 *                       could still show. Written off at once (lapped).
 *   claim next's record failing the check   torn: as a lap, dropping at
 *                       least that one claim.
 * R1..R3 and the verdicts above are format/scope_slot.c's, the one reading
 * side of the protocol (orbit-dump reads its copies of a segment's rings
 * with it too); what follows a verdict (waiting, liveness, the margin) is
 * this drain's.
 * One pass reads no further than the cursor it found at the start (or, after
 * a lap, the cursor it found then: once per ring and pass), so a producer
 * faster than the drain cannot keep it in one ring forever.
 *
 * Why a check rather than an order of stores. Two producers can write one
 * slot at once: a producer descheduled between W1 and W4 for a whole lap of
 * its ring resumes writing over the record of a later lap that another
 * producer has published there meanwhile, and a producer of the next lap may
 * start on a slot the drain is copying. Nothing on the producers' side that
 * is only stores and fences closes the first case: whatever the late
 * producer stored before its record (its marker, a second word) the newer
 * producer's own stores overwrite, and its record's words then land under
 * the newer stamp until its own W4 lands. A copy taken in between is the
 * newer record with some words replaced, which no re-read of the stamp or
 * the cursor can see (and on arm64 nothing orders W1 before W3 either, so
 * the cursor does not even say that a next-lap producer has started). The
 * check makes the copy its own evidence: it is kept only if its seven words
 * are the ones its stamp was computed from.
 *
 * Where copies go. With a staging area (orbit__drain_stage) the records are
 * copied straight into it, word by word (no stack copy read back with wider
 * loads: that stalls on store forwarding), and the callback only learns
 * where they are; a full staging area ends the pass early, the rings not
 * read keep their place (orbit__drain_result.full). Without one, a batch
 * of 256 on the stack goes to the callback.
 *
 * Guarantees (tests cite them by number):
 *  1. Producers never wait: the write path has no lock, no CAS loop and no
 *     branch on the ring being full; the drain never writes to a ring.
 *  2. Every record delivered for claim c is exactly the record c's producer
 *     published, except with probability about 2^-31 for a copy another
 *     producer wrote into: R1 reads c's W4 (the stamp c + 1 + check names
 *     the claim), and acquire/release makes c's W3 happen before the copy,
 *     so each copied word is c's store or a later one to that word
 *     (coherence); a later one is another producer's, and unless it stored
 *     the same value the copy fails the check. This holds in the C11 model
 *     whatever order the other producers' stores become visible in (x86-64,
 *     where the locked fetch_add orders W1 first, and arm64, where nothing
 *     does). A record that a late producer published over a newer lap is
 *     delivered only as its own claim, never as the newer one.
 *  3. A ring's records are delivered in claim order, hence each thread's
 *     records in the order the thread wrote them.
 *  4. Every claim below next is either delivered or counted lost, once:
 *     next == drained + lost_lapped + lost_dead + lost_backstop, so after a
 *     final drain claimed == drained + lost exactly.
 *  5. An unpublished claim stalls its own ring only.
 *  6. A claim whose process is gone is written off at once, but only after
 *     its stamp is read again once the process is known dead (a record
 *     published just before the end is delivered); a live one is waited for,
 *     at most the backstop, which drops one event per firing.
 *  7. A ring stalls only on a claim that will still be published, never on
 *     a stamp a late producer of an earlier lap left: it waits on claim c
 *     when the slot shows c's marker, or 0, or the record of c - slots that
 *     the drain delivered clean (its R3 cursor was at most c: c was not yet
 *     handed out). In the last case c's producer has not published: had its
 *     W4 come before that record's W4 in the stamp's coherence order, then
 *     W1(c) -> W4(c) (release) -> that record's W4 -> the drain's R1 that
 *     delivered it (acquire) -> its R3 would have seen the cursor past c.
 *     That chain is multi-copy atomicity, which x86-TSO and ARMv8 (other-
 *     multi-copy-atomic) give and C11 alone does not; without it the cost
 *     would be a stall ended by the slot's next lap or the backstop, never a
 *     wrong record. Any other earlier-lap stamp is written off at once.
 *
 * The limits, stated. The check is a 31-bit hash of the record: a copy
 * another producer wrote into passes it with probability about 2^-31 (such a
 * copy needs that race at that slot in the first place). It is no defence
 * against a hostile writer, who can compute it: readers of records treat them
 * as hostile bytes anyway (format/). Guarantee 7's write-off can count as
 * lapped a claim whose producer is between W1 and W2 at that instant, when a
 * record of that slot was lost in the lap before; its record, published
 * later, is then not delivered (counted once, as lapped).
 */
#include "scope_ring.h"

#include <stddef.h>
#include <string.h>
#include <time.h>

#include "clock_ns.h"
#include "scope_slot.h"

#define BATCH 256u /* records handed to the callback at once */

void orbit__drain_init(struct orbit__drain *d, const struct orbit__segment *seg, int in_process)
{
	memset(d, 0, sizeof *d);
	d->seg = seg;
	d->in_process = in_process;
	d->backstop_ns = ORBIT__BACKSTOP_NS;
}

uint64_t orbit__ring_claimed(const struct orbit__segment *seg, uint32_t ring)
{
	return atomic_load_explicit(&orbit__segment_ring(seg, ring)->cursor, memory_order_relaxed);
}

uint64_t orbit__drain_lapped(const struct orbit__drain *d)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < d->seg->layout.ring_count; i++)
		n += d->ring[i].lost_lapped;
	return n;
}

uint64_t orbit__drain_unread(const struct orbit__drain *d)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < d->seg->layout.ring_count; i++) {
		uint64_t c = orbit__ring_claimed(d->seg, i);
		n += c > d->ring[i].next ? c - d->ring[i].next : 0;
	}
	return n;
}

/* Where a batch of copies goes: the staging area, or a stack batch. */
struct batch {
	uint8_t *bytes; /* BATCH records of room at least */
	uint64_t first;
	uint32_t n;
};

static void batch_flush(struct batch *b, uint32_t ring, orbit__drain_fn fn, void *ctx)
{
	if (b->n > 0)
		fn(ctx, ring, b->first, b->bytes, b->n);
	b->n = 0;
}

/* The ring's slots as format/scope_slot.h reads them (segment_create.c
 * asserts the layouts agree). */
static inline const struct orbit__seg_slot *slots_of(const struct orbit__ring *r)
{
	return (const struct orbit__seg_slot *)(const void *)r->slots;
}

/* After a lap: the oldest claim still resident, a margin past it so that the
 * drain reads lines the producer will not write for a while. */
static void skip_lapped(struct orbit__ring_state *s, struct orbit__ring *r, uint64_t slots)
{
	uint64_t cursor = atomic_load_explicit(&r->cursor, memory_order_relaxed);
	uint64_t margin = slots / 8;
	uint64_t oldest = cursor > slots - margin ? cursor - slots + margin : 0;
	if (oldest <= s->next)
		oldest = s->next + 1; /* the copy at next was torn: drop it alone */
	s->lost_lapped += oldest - s->next;
	s->next = s->clean = oldest;
}

/* What the stamp of claim c says now (acquire: pairs with W4, as R1). */
static struct orbit__stamp stamp_now(struct orbit__ring *r, uint64_t c, uint64_t mask)
{
	return orbit__stamp_read(
	    atomic_load_explicit(&r->slots[c & mask].seq, memory_order_acquire), c);
}

/* Decides a stall on claim next: 1 to stop this ring for now, 0 if the walk
 * goes on (claims written off, or the claim's record is there now). */
static int stall(struct orbit__drain *d, struct orbit__ring_state *s, struct orbit__ring *r,
                 uint64_t end, uint64_t slots, int *gone, struct orbit__drain_result *res)
{
	uint64_t now = orbit__clock_ns(CLOCK_MONOTONIC);
	if (!s->stalled || s->stall_claim != s->next) {
		s->stalled = 1;
		s->stall_claim = s->next;
		s->stall_since = now;
	}
	const struct orbit__seg_layout *l = &d->seg->layout;
	/* Liveness once per ring per pass (*gone: -1 not asked yet). */
	if (!d->in_process && *gone < 0)
		*gone = !orbit__process_alive((pid_t)l->pid, l->start_time);
	int dead = *gone > 0;
	if (!dead && now - s->stall_since < d->backstop_ns)
		return 1;
	/* About to write it off: read the stamp again. A process that published
	 * and then died between the first read and the liveness answer has
	 * left the record there (guarantee 6); the copy goes on from it. */
	if (stamp_now(r, s->next, slots - 1).kind == ORBIT__STAMP_RECORD) {
		s->stalled = 0;
		return 0;
	}
	if (dead) {
		/* Nothing of a dead process will be published. Claims more
		 * than a lap behind its cursor cannot be resident either: they
		 * go in one step, so a hostile cursor cannot keep us here. */
		uint64_t upto = end > slots && end - slots > s->next ? end - slots : s->next + 1;
		s->lost_dead += upto - s->next;
		s->next = upto;
	} else {
		s->lost_backstop++;
		res->backstops++;
		s->next++;
	}
	s->clean = s->next;
	s->stalled = 0;
	return 0;
}

uint64_t orbit__drain_ring(struct orbit__drain *d, uint32_t ring, orbit__drain_fn fn, void *ctx,
                           struct orbit__drain_result *res)
{
	if (!orbit__segment_ring_usable(d->seg, ring))
		return 0; /* no thread has taken it: no claim can be there */
	struct orbit__ring *r = orbit__segment_ring(d->seg, ring);
	struct orbit__ring_state *s = &d->ring[ring];
	const uint64_t slots = d->seg->layout.slots_per_ring, mask = slots - 1;
	const uint64_t lost_before = orbit__ring_lost(s);
	uint64_t delivered = 0;
	uint8_t stack[BATCH * ORBIT_RECORD_SIZE];
	struct batch b = {.bytes = stack};
	int gone = -1, extended = 0;
	uint64_t end = atomic_load_explicit(&r->cursor, memory_order_relaxed);
	s->end = end;
	while (s->next < end) {
		uint32_t room = BATCH;
		if (d->stage != NULL) {
			if (d->stage_len == d->stage_cap) {
				res->full = 1; /* the rest waits for the next pass */
				break;
			}
			b.bytes = d->stage + d->stage_len * ORBIT_RECORD_SIZE;
			if (d->stage_cap - d->stage_len < room)
				room = (uint32_t)(d->stage_cap - d->stage_len);
		}
		enum orbit__slots_stop why;
		uint64_t stop_stamp = 0;
		uint32_t n = orbit__slots_copy(slots_of(r), mask, s->next, end, b.bytes, room, &why,
		                               &stop_stamp);
		if (n > 0) {
			/* R3: after the R1 loads (each acquire). */
			uint64_t cursor = atomic_load_explicit(&r->cursor, memory_order_relaxed);
			s->clean = orbit__slots_clean(s->clean, s->next, n, cursor, slots);
			b.first = s->next;
			b.n = n;
			d->stage_len += d->stage != NULL ? n : 0;
			batch_flush(&b, ring, fn, ctx);
			s->next += n;
			s->drained += n;
			s->stalled = 0;
			delivered += n;
		}
		if (why == ORBIT__SLOTS_DONE)
			continue; /* a full batch: go on to end */
		enum orbit__slot_verdict v =
		    orbit__slot_verdict(why, stop_stamp, s->next, slots, s->clean);
		if (v == ORBIT__SLOT_LAPPED) {
			/* Overwritten while we copied, or lapped: on from the
			 * oldest resident claim plus the margin, up to the cursor
			 * as it is now (once per pass). */
			skip_lapped(s, r, slots);
			if (!extended) {
				uint64_t now =
				    atomic_load_explicit(&r->cursor, memory_order_relaxed);
				if (now > end)
					end = s->end = now;
				extended = 1;
			}
			continue;
		}
		if (v == ORBIT__SLOT_GONE) {
			/* A late producer of an earlier lap wrote the slot
			 * (guarantee 7): claim next is gone, not pending. */
			s->lost_lapped++;
			s->next++;
			s->clean = s->next;
			continue;
		}
		if (stall(d, s, r, end, slots, &gone, res)) { /* not published yet */
			res->stalled_rings++;
			break;
		}
	}
	if (s->end < s->next) /* a lap skip went past the snapshot */
		s->end = s->next;
	res->records += delivered;
	res->lost += orbit__ring_lost(s) - lost_before;
	return delivered;
}

void orbit__drain_all(struct orbit__drain *d, orbit__drain_fn fn, void *ctx,
                      struct orbit__drain_result *res)
{
	memset(res, 0, sizeof *res);
	const uint32_t rings = d->seg->layout.ring_count;
	/* A pass that filled the staging area starts the next one where it
	 * stopped, so that no ring waits behind the others for long. */
	uint32_t first = d->first_ring < rings ? d->first_ring : 0;
	for (uint32_t i = 0; i < rings; i++) {
		uint32_t ring = (first + i) % rings;
		orbit__drain_ring(d, ring, fn, ctx, res);
		if (res->full) {
			d->first_ring = ring;
			return;
		}
	}
	d->first_ring = 0;
}

void orbit__drain_stage(struct orbit__drain *d, uint8_t *stage, size_t cap)
{
	d->stage = stage;
	d->stage_cap = cap;
	d->stage_len = 0;
}
