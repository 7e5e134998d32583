/*
 * scope_ring.c — the drain of the scope rings.
 *
 * How it works. A segment holds ring_count rings of 2^k 64-byte slots. A
 * thread writes only to the ring its tid hashes to (orbit.h). To write, it
 * claims a claim number with one relaxed fetch_add on the ring's cursor,
 * stores the 56-byte record into slot (claim mod slots) with plain stores,
 * and publishes it with a release store of claim + 1 into the slot's stamp.
 * The cursor never wraps; a claim number names one slot and one lap, so the
 * stamp tells a slot's current occupant from the one a lap before.
 *
 * The drain keeps, per ring, the next claim it has to read and walks forward
 * in claim order:
 *   stamp == next + 1   the record of claim next: copy it (a batch of up to
 *                       256 at a time), then check that no producer had
 *                       started overwriting them (below), deliver;
 *   stamp >  next + 1   a producer lapped the drain: skip to the oldest claim
 *                       still resident (cursor - slots) plus a margin
 *                       (slots / 8), count the skipped claims as lost
 *                       (lapped), and read on: the margin keeps the drain
 *                       off the lines the producer is writing now, so a
 *                       producer that never pauses is still delivered from
 *                       between its laps;
 *   stamp <  next + 1   claim next is not published. If the cursor is not
 *                       past it, the ring is drained. Otherwise the claim was
 *                       handed out and the ring stalls there: the other rings
 *                       go on. Whether to wait is decided by liveness: while
 *                       the producing process lives the claim may still be
 *                       published; once it is gone the claim is written off
 *                       at once (lost, dead). A wait on one claim longer than
 *                       the backstop (30 s) drops that one event, counted
 *                       and reported (lost, backstop).
 * One pass reads no further than the cursor it found at the start (or, after
 * a lap, the cursor it found then: once per ring and pass), so a producer
 * faster than the drain cannot keep it in one ring forever.
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
 *  2. Every record delivered is exactly the record its producer published
 *     for that claim: the acquire load of the stamp pairs with the producer's
 *     release store (orbit__publish), so the payload stores are visible; a
 *     copy that a lapping producer may have overwritten meanwhile is
 *     discarded (stamp changed, or cursor more than a lap past the claim).
 *  3. A ring's records are delivered in claim order, hence each thread's
 *     records in the order the thread wrote them.
 *  4. Every claim below next is either delivered or counted lost, once:
 *     next == drained + lost_lapped + lost_dead + lost_backstop, so after a
 *     final drain claimed == drained + lost exactly.
 *  5. An unpublished claim stalls its own ring only.
 *  6. A claim whose process is gone is written off at once; a live one is
 *     waited for, at most the backstop, which drops one event per firing.
 *
 * On guarantee 2, its one limit. The discard check relies on a producer's
 * claim being visible no later than its payload stores (x86-64: the locked
 * fetch_add orders them; elsewhere the stamp re-check still catches a
 * finished overwrite). And with one stamp store per record, a producer that
 * is descheduled in the middle of its own record for a whole lap of its ring
 * finishes writing over the slot's newer record when it resumes: a copy
 * taken in the few nanoseconds between that resumption and its (stale) stamp
 * store cannot be told from the newer record. This needs the ring to be
 * lapped (loss is already being counted) and the drain to be at that very
 * slot; readers of records treat them as hostile bytes anyway (format/).
 */
#include "scope_ring.h"

#include <string.h>
#include <time.h>

#define BATCH 256u /* records handed to the callback at once */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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

/* Relaxed loads of the seven record words, each stored at once to its place
 * (the host is little-endian, as the record format). */
static inline void copy_record(struct orbit__slot *slot, uint8_t *dst)
{
	uint64_t w;
	w = atomic_load_explicit(&slot->time, memory_order_relaxed);
	memcpy(dst, &w, 8);
	w = atomic_load_explicit(&slot->id, memory_order_relaxed);
	memcpy(dst + 8, &w, 8);
	w = atomic_load_explicit(&slot->meta, memory_order_relaxed);
	memcpy(dst + 16, &w, 8);
	for (int i = 0; i < 4; i++) {
		w = atomic_load_explicit(&slot->name[i], memory_order_relaxed);
		memcpy(dst + 24 + 8 * i, &w, 8);
	}
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
	s->next = oldest;
}

/* Decides a stall on claim next: 1 to stop this ring for now, 0 if claims
 * were written off and the walk goes on. */
static int stall(struct orbit__drain *d, struct orbit__ring_state *s, uint64_t end, uint64_t slots,
                 int *gone, struct orbit__drain_result *res)
{
	uint64_t now = now_ns();
	if (!s->stalled || s->stall_claim != s->next) {
		s->stalled = 1;
		s->stall_claim = s->next;
		s->stall_since = now;
	}
	const struct orbit__seg_layout *l = &d->seg->layout;
	/* Liveness once per ring per pass (*gone: -1 not asked yet). */
	if (!d->in_process && *gone < 0)
		*gone = !orbit__process_alive((pid_t)l->pid, l->start_time);
	if (*gone > 0) {
		/* Nothing of a dead process will be published. Claims more
		 * than a lap behind its cursor cannot be resident either: they
		 * go in one step, so a hostile cursor cannot keep us here. */
		uint64_t upto = end > slots && end - slots > s->next ? end - slots : s->next + 1;
		s->lost_dead += upto - s->next;
		s->next = upto;
	} else if (now - s->stall_since >= d->backstop_ns) {
		s->lost_backstop++;
		res->backstops++;
		s->next++;
	} else {
		return 1;
	}
	s->stalled = 0;
	return 0;
}

/*
 * Copies the published records from claim next on, at most room and no
 * further than end, into b; returns how many. *stopped says whether a stamp
 * that was not the claim's stopped it (its value in *stop_seq), rather than
 * the count or end.
 */
static uint32_t copy_published(struct orbit__ring *r, uint64_t next, uint64_t end, uint64_t mask,
                               struct batch *b, uint32_t room, int *stopped, uint64_t *stop_seq)
{
	uint32_t n = 0;
	*stopped = 0;
	while (n < room && next + n < end) {
		struct orbit__slot *slot = &r->slots[(next + n) & mask];
		/* The lines were written on another core: ask for them early. */
		__builtin_prefetch(&r->slots[(next + n + 8) & mask]);
		/* Acquire: pairs with the release store in orbit__publish; the
		 * record of that claim is complete once its stamp shows. */
		uint64_t seq = atomic_load_explicit(&slot->seq, memory_order_acquire);
		if (seq != next + n + 1) {
			*stopped = 1;
			*stop_seq = seq;
			break;
		}
		copy_record(slot, b->bytes + (size_t)n * ORBIT__RECORD_SIZE);
		n++;
	}
	return n;
}

/*
 * How many of the n records copied from claim next are certainly the ones
 * published for their claims: a record whose stamp changed since, or whose
 * slot a producer may have claimed again (cursor more than a lap past it),
 * and everything after it, are not.
 */
static uint32_t still_valid(struct orbit__ring *r, uint64_t next, uint32_t n, uint64_t mask,
                            uint64_t slots)
{
	/* Acquire fence: the copies happen before the re-checks below. One
	 * cursor load for the whole batch: its line is the producers'. */
	atomic_thread_fence(memory_order_acquire);
	uint64_t cursor = atomic_load_explicit(&r->cursor, memory_order_relaxed);
	uint32_t k = 0;
	while (k < n && cursor <= next + k + slots &&
	       atomic_load_explicit(&r->slots[(next + k) & mask].seq, memory_order_relaxed) ==
	           next + k + 1)
		k++;
	return k;
}

uint64_t orbit__drain_ring(struct orbit__drain *d, uint32_t ring, orbit__drain_fn fn, void *ctx,
                           struct orbit__drain_result *res)
{
	struct orbit__ring *r = orbit__segment_ring(d->seg, ring);
	struct orbit__ring_state *s = &d->ring[ring];
	const uint64_t slots = d->seg->layout.slots_per_ring, mask = slots - 1;
	const uint64_t lost_before = orbit__ring_lost(s);
	uint64_t delivered = 0;
	uint8_t stack[BATCH * ORBIT__RECORD_SIZE];
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
			b.bytes = d->stage + d->stage_len * ORBIT__RECORD_SIZE;
			if (d->stage_cap - d->stage_len < room)
				room = (uint32_t)(d->stage_cap - d->stage_len);
		}
		int stopped;
		uint64_t stop_seq = 0;
		uint32_t n = copy_published(r, s->next, end, mask, &b, room, &stopped, &stop_seq);
		uint32_t k = n ? still_valid(r, s->next, n, mask, slots) : 0;
		if (k > 0) {
			b.first = s->next;
			b.n = k;
			d->stage_len += d->stage != NULL ? k : 0;
			batch_flush(&b, ring, fn, ctx);
			s->next += k;
			s->drained += k;
			s->stalled = 0;
			delivered += k;
		}
		if (k < n || (stopped && stop_seq > s->next + 1)) {
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
		} else if (!stopped) {
			continue;                                 /* a full batch: go on to end */
		} else if (stall(d, s, end, slots, &gone, res)) { /* not published yet */
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
