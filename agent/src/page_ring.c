/* page_ring.c — lock-free multi-writer ring of ftrace-format pages.
 *
 * How it works (seed 001)
 * ================================
 *
 * The ring is a fixed circle of `pages` pages of `page_size` bytes, each in
 * the Linux ftrace ring-buffer page layout (u64 timestamp, u64 commit with
 * bit 31 = records lost before this page, then packed records). All
 * coordination state lives outside the page bytes:
 *
 *   ring word   bit 63 enabled, bits 0..62 reservations + reads in progress
 *   tail word   bits 0..19 index of the page writers append to,
 *               bits 20..63 generation (+1 on every move)
 *   head word   bits 0..19 index of the oldest page, bit 20 owner,
 *               bits 21..63 generation (+1 on every move)
 *   per page:   claim word  bits 0..16 bytes of records claimed, bit 17
 *                           closed, bits 18..63 low 46 bits of the time of
 *                           the last record claimed (about 19.5 hours)
 *               writer state  bit 31 open, bits 0..30 active writers
 *               first time  time of the page's first record (flush, and
 *                           the long-gap check below)
 *   lost flag   set when records or pages were lost since the last read
 *   reader flag set while a read runs
 *
 * Pages from the head up to the tail hold data; pages after the tail and
 * before the head are reset and free. Full: the page after the tail is the
 * head. Nothing finished: the head is the tail.
 *
 * Reserve. A writer enters the ring (fetch_add on the ring word, backed out
 * if the enabled bit is clear), reads the tail word, joins the tail page
 * (fetch_add on its writer state) and reads the tail word again: if it
 * changed, the page may have been recycled, so it leaves and starts over.
 * A joined writer pins the page: nobody resets a page with active writers.
 * It then reads the claim word and the clock, stamps the record (below),
 * and CASes the claim word from the value it read to (offset + length,
 * record time). A failed CAS means another claim succeeded; it re-reads the
 * clock and tries again. Time and position are decided by that one CAS.
 *
 * Close. A writer whose record does not fit (or that starts a new page after
 * a long gap) closes the page with an atomic OR of the closed bit, which also
 * returns the final offset. Claims before the OR lie inside that offset;
 * claims after it see the bit and fail. The one writer whose OR found the
 * bit clear writes commit = final offset into the page header and then
 * clears the open bit (release). Then every such writer leaves the page and
 * moves the tail: it reads the head word, re-reads the tail word (if the
 * tail moved, the pair was not current; start over), and unless the next
 * page is the head it CASes the tail from the exact value it read to (next,
 * gen + 1). Win or lose, it starts over on the new tail.
 *
 * Full. With overwrite off the writer fails with Full. With overwrite on it
 * takes the head's owner bit by CAS from the exact head word it read,
 * checks the head page is finished (writer state: closed, no writers) and
 * the tail still holds the value that showed the ring full, then counts the
 * page's records as lost, resets the page and stores the next head word
 * with the owner bit clear (release). A head page with an active (maybe
 * paused) writer, or a head already owned, makes it drop its own record
 * (Dropped) rather than wait.
 *
 * Commit. The writer leaves the page (release fetch_sub on the writer state)
 * and the ring (release fetch_sub on the ring word).
 *
 * Read. The reader takes the reader flag (else Busy), takes the head's owner
 * bit by CAS, checks that the head is not the tail and that its writer state
 * reads closed with no writers (acquire), copies the page out, clears the
 * lost flag (setting bit 31 in the copy if it was set), resets the page and
 * stores the next head word (release).
 *
 * Reset. Store claim = 0 (empty, open, no time), first time = unset, zero
 * the header, then OR the open bit into the writer state with release. It
 * is an OR, not a store, because a writer that reads a stale tail may join
 * the closed page for a moment; its increment must survive (it sees the
 * page closed, or sees the tail changed, and leaves).
 *
 * Stamping. On each claim attempt the writer reads the claim word, then the
 * clock. Because it reads the clock after an acquire read of the claim word
 * and every claim CAS is a release, the previous record's time is not after
 * `now` for a clock monotonic across threads. Then:
 *   - empty page: time = now, delta 0 (the page timestamp carries it);
 *   - d = (now - last) mod 2^46 < 2^27: a plain record with delta d;
 *   - 2^27 <= d < 2^45: a TIME_EXTEND (8 bytes) in front, record delta 0;
 *   - d >= 2^46 - 2^27 (the previous record is stamped a little after now,
 *     only with a clock that is not monotonic across CPUs): delta 0, time =
 *     the previous record's time;
 *   - otherwise, or if the page's first record is 2^45 ns (9.7 h) or more
 *     old, the 46 low bits could be ambiguous: close the page and start a
 *     new one, whose timestamp is absolute. No TIME_STAMP records, no
 *     padding records.
 * A first record never needs a TIME_EXTEND, so any record that fits the
 * record area fits on an empty page.
 *
 * Reader-side flush. The seed lets only a writer
 * whose record does not fit close the tail page, so the newest records wait
 * for the next page to start. orbit__page_flush closes the tail page for
 * the reader by the same path a writer takes: it joins the tail page, checks
 * the tail word again, and if the page holds records ORs the closed bit;
 * exactly one party's OR finds the bit clear and writes commit. Then it
 * moves the tail like a writer (never discarding the head). Against the
 * guarantees: 1 and 3 hold because the commit is the offset the OR returned
 * and claims after the OR fail; 2 because the page still becomes readable
 * only when its writer state shows no writers; 4 because the flusher is a
 * joined writer (the page cannot be reset under it) that rechecked the tail,
 * and its tail CAS carries the generation; 5, 11 because it never moves the
 * head; 12 because writers on the page commit exactly as before; 13 because
 * it is one OR and at most one CAS, and nobody waits for it. The price the
 * seed names is real: a flushed page is partly empty.
 *
 * Why the ring word is entered with fetch_add rather than the seed's CAS:
 * an entrant that finds the enabled bit clear backs out with a fetch_sub
 * and touches nothing else, so disable's "no accesses in progress" argument
 * is unchanged (an entrant that saw the bit set is counted until its release
 * decrement, which disable's acquire read of zero synchronises with), and
 * a fetch_add never retries under contention.
 *
 * The guarantees (numbered; tests cite them)
 * ========================================================
 *  1. A delivered page's commit equals the bytes of its records, packed
 *     from the start of the record area; bytes past commit are not records
 *     (the reader zeroes them in its copy).
 *  2. A reader never sees a record whose writer has not committed it.
 *  3. No record overlaps another or crosses a page boundary.
 *  4. No writer writes into a page after it was reset for a later use, and
 *     nobody acts on a stale head or tail word (generations make stale
 *     CASes fail).
 *  5. Every committed record is delivered at most once, pages in ring order.
 *  6. Every reserve that did not deliver its record is counted: Full and
 *     Dropped reservations, and the records of pages discarded by overwrite
 *     (and, at disable, of pages still in the ring). The first page
 *     delivered after any loss has bit 31 of commit set.
 *     records reserved == records read + records counted lost, exactly.
 *  7. Record times decode exactly from the page timestamp and the deltas
 *     (TIME_EXTEND included); times on a page never go backwards.
 *  8. The page timestamp is the time of the page's first record.
 *  9. Disable returns only after no reservation or read is in progress,
 *     then frees the memory; nothing touches it afterwards.
 * 10. Enable starts from empty: nothing from an earlier enable is delivered.
 * 11. Only the holder of the owner bit moves the head; a page is never both
 *     delivered and discarded.
 * 12. Commit always succeeds, and a writer commits every reservation.
 * 13. No writer or reader waits for another thread to be scheduled.
 *
 * Known limit: the long-gap check reads the page's first time, which its
 * writer stores just after its claim; a second writer arriving 19.5 hours
 * later while the first is still paused inside reserve would decode an
 * ambiguous delta. Times stay monotonic on the page even then.
 */
#include "page_ring.h"
#include "ftrace_page.h" /* the page and record layout */
#include "record.h"      /* orbit__le32 and kin */

#include "segment.h" /* the page state as a reader of a segment takes it */

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "page_ring writes little-endian ftrace pages with native stores"
#endif

/* ring word */
#define RING_ENABLED (1ull << 63)
#define RING_COUNT (RING_ENABLED - 1)

/* tail and head words */
#define INDEX_BITS 20u
#define INDEX_MASK ((1ull << INDEX_BITS) - 1)
#define HEAD_OWNER (1ull << INDEX_BITS)
#define HEAD_GEN_SHIFT (INDEX_BITS + 1)

/* claim word (its low bits as format/segment.h tells a reader of a segment) */
#define CLAIM_OFF_BITS ORBIT__SEG_PAGE_CLAIM_BITS
#define CLAIM_OFF_MASK ORBIT__SEG_PAGE_CLAIM_BYTES
#define CLAIM_CLOSED ORBIT__SEG_PAGE_CLAIM_CLOSED
#define CLAIM_TIME_SHIFT (CLAIM_OFF_BITS + 1)
#define TIME_BITS (64u - CLAIM_TIME_SHIFT)
#define TIME_RANGE (1ull << TIME_BITS)
#define TIME_MASK (TIME_RANGE - 1)
#define TIME_HALF (TIME_RANGE >> 1)
#define DELTA_LIMIT (1ull << ORBIT__FTRACE_TS_BITS) /* a record header's time_delta field */

/* writer state (as format/segment.h tells a reader of a segment) */
#define WRITERS_OPEN ORBIT__SEG_PAGE_WRITERS_OPEN

#define FIRST_UNSET UINT64_MAX

#define CACHE_LINE 64

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free");
_Static_assert(sizeof(unsigned long long) == 8, "ring words are 64-bit");
_Static_assert(ORBIT__PAGE_MAX_PAGES <= (1u << INDEX_BITS), "index field too small");
_Static_assert(ORBIT__PAGE_MAX_SIZE - ORBIT__FTRACE_HEADER <= CLAIM_OFF_MASK,
               "claim offset field too small for the largest page");
_Static_assert(TIME_BITS == 46, "claim word keeps 46 time bits");
_Static_assert(ORBIT__PAGE_MAX_SIZE - ORBIT__FTRACE_HEADER <= ORBIT__FTRACE_SIZE_MASK,
               "commit size must fit bits 0..26");

/* Per-page state, one cache line, in memory separate from the pages. */
struct orbit__page_state {
	/* claim word: CAS by joined writers, OR by closers, store by reset
	 * (page finished, no writers). Read by joined writers, flush. */
	alignas(CACHE_LINE) _Atomic uint64_t claim;
	/* first time: relaxed store by the page's first writer and by reset;
	 * relaxed reads by later writers and flush (a hint, see limits). */
	_Atomic uint64_t first_time;
	/* writer state: fetch_add/fetch_sub by writers (join/leave), fetch_and
	 * by the closer, fetch_or by reset; acquire reads by reader/overwriter.
	 * Only read-modify-writes, so every release leave heads a release
	 * sequence that the reader's acquire load of a later value joins. */
	_Atomic uint32_t writers;
};

_Static_assert(sizeof(struct orbit__page_state) == CACHE_LINE, "page state is one line");
_Static_assert(offsetof(struct orbit__page_state, claim) == 0, "claim first");
_Static_assert(offsetof(struct orbit__page_state, first_time) == 8, "layout");
_Static_assert(offsetof(struct orbit__page_state, writers) == 16, "layout");
_Static_assert(sizeof(struct orbit__page_state) == ORBIT__SEG_PAGE_STATE &&
                   offsetof(struct orbit__page_state, writers) == ORBIT__SEG_PAGE_WRITERS_AT,
               "format/segment.h describes the page state a dump reads");

struct orbit__page_ring {
	/* ring word: fetch_add/fetch_sub by every reserve/commit/read/flush,
	 * fetch_or/fetch_and by enable/disable (controller). */
	alignas(CACHE_LINE) _Atomic uint64_t ring_word;
	/* tail word: CAS by writers and flush; loads by everyone. */
	alignas(CACHE_LINE) _Atomic uint64_t tail;
	/* head word: CAS to take the owner bit, store by the owner. */
	alignas(CACHE_LINE) _Atomic uint64_t head;
	/* lost flag: set by losing writers, exchanged by the reader.
	 * reader flag: exchanged by read, stored 0 when it ends. */
	alignas(CACHE_LINE) _Atomic uint32_t lost_flag;
	_Atomic uint32_t reader_flag;
	/* counters: relaxed fetch_add on the loss paths, read by disable and
	 * stats; reset by enable while the ring is closed. */
	_Atomic uint64_t full, dropped, overwritten_records, overwritten_pages;
	_Atomic uint64_t pages_read, pages_flushed;

	/* Written by enable/disable under ctl while the ring is closed; read
	 * by ring members, ordered by the ring word (release fetch_or at
	 * enable, acquire fetch_add at entry). */
	alignas(CACHE_LINE) uint8_t *pages;
	struct orbit__page_state *state;
	struct orbit__page_config cfg; /* constant after create */
	uint32_t area;                 /* page_size - 16 */
	uint32_t max_payload;

	/* controller only */
	pthread_mutex_t ctl;
	int enabled;
};

_Static_assert(offsetof(struct orbit__page_ring, tail) % CACHE_LINE == 0, "tail on its line");
_Static_assert(offsetof(struct orbit__page_ring, head) - offsetof(struct orbit__page_ring, tail) ==
                   CACHE_LINE,
               "head and tail on separate lines");

#define HOOK(ring, point)                                                                          \
	do {                                                                                       \
		if ((ring)->cfg.hook != NULL)                                                      \
			(ring)->cfg.hook((ring)->cfg.hook_arg, (point));                           \
	} while (0)

/* ---- small helpers ---- */

static uint32_t next_index(const struct orbit__page_ring *ring, uint32_t idx)
{
	return idx + 1 == ring->cfg.pages ? 0 : idx + 1;
}

static uint32_t word_index(uint64_t word)
{
	return (uint32_t)(word & INDEX_MASK);
}

static uint64_t next_tail(const struct orbit__page_ring *ring, uint64_t tail)
{
	uint64_t gen = (tail >> INDEX_BITS) + 1;

	return gen << INDEX_BITS | next_index(ring, word_index(tail));
}

static uint64_t next_head(const struct orbit__page_ring *ring, uint64_t head)
{
	uint64_t gen = (head >> HEAD_GEN_SHIFT) + 1;

	return gen << HEAD_GEN_SHIFT | next_index(ring, word_index(head));
}

static uint8_t *page_at(const struct orbit__page_ring *ring, uint32_t idx)
{
	return ring->pages + (size_t)idx * ring->cfg.page_size;
}

static uint32_t round4(uint32_t n)
{
	return (n + 3) & ~3u;
}

/* Bytes of the data record for a payload of len bytes. */
static uint32_t record_bytes(uint32_t len)
{
	return (len <= ORBIT__FTRACE_MAX_SMALL ? 4 : 8) + round4(len);
}

static void note_loss(struct orbit__page_ring *ring)
{
	/* The reader exchanges the flag (an RMW, reading the latest value);
	 * the test avoids bouncing the line while every writer is losing. */
	if (atomic_load_explicit(&ring->lost_flag, memory_order_relaxed) == 0)
		atomic_store_explicit(&ring->lost_flag, 1, memory_order_relaxed);
}

/* Counts the data records in `bytes` bytes of our own records. Only used
 * on finished pages of this ring, which hold what we wrote. */
static uint64_t count_records(const uint8_t *rec, uint32_t bytes)
{
	uint64_t n = 0;
	uint32_t off = 0;

	while (bytes - off >= 4) {
		uint32_t word = orbit__le32(rec + off), type_len = word & ORBIT__FTRACE_TYPE_MASK;

		if (type_len == ORBIT__FTRACE_TYPE_TIME_EXTEND) {
			off += 8;
			continue;
		}
		if (type_len == 0) {
			if (bytes - off < 8)
				break;
			off += 4 + orbit__le32(rec + off + 4);
		} else if (type_len <= ORBIT__FTRACE_TYPE_DATA_MAX) {
			off += 4 + type_len * 4;
		} else {
			break; /* we never write these */
		}
		n++;
		if (off > bytes)
			break;
	}
	return n;
}

/* ---- entering and leaving ---- */

static int ring_enter(struct orbit__page_ring *ring)
{
	/* acquire: pairs with enable's release fetch_or of the enabled bit,
	 * so the pages, state and reset words enable wrote are visible. */
	uint64_t w = atomic_fetch_add_explicit(&ring->ring_word, 1, memory_order_acquire);

	if (w & RING_ENABLED)
		return 0;
	/* Not inside: touched nothing, so nothing to publish. */
	atomic_fetch_sub_explicit(&ring->ring_word, 1, memory_order_relaxed);
	return -ESHUTDOWN;
}

static void ring_leave(struct orbit__page_ring *ring)
{
	/* release: pairs with disable's acquire load that sees no one inside;
	 * every access this thread made happens before the free. */
	atomic_fetch_sub_explicit(&ring->ring_word, 1, memory_order_release);
}

static void page_leave(struct orbit__page_state *st)
{
	/* release: pairs with the acquire load of the writer state by the
	 * reader and the overwriter; our record bytes (and the commit field,
	 * for a closer) happen before their copy or reset. */
	atomic_fetch_sub_explicit(&st->writers, 1, memory_order_release);
}

/* ---- pages ---- */

static void reset_page(struct orbit__page_ring *ring, uint32_t idx)
{
	struct orbit__page_state *st = &ring->state[idx];

	/* Relaxed: no one uses these until the open bit below is seen. */
	atomic_store_explicit(&st->claim, 0, memory_order_relaxed);
	atomic_store_explicit(&st->first_time, FIRST_UNSET, memory_order_relaxed);
	memset(page_at(ring, idx), 0, ORBIT__FTRACE_HEADER);
	/* release: pairs with the acquire fetch_add of a joining writer; a
	 * writer that sees the page open sees the reset claim word and
	 * header. An OR, not a store: see "Reset" above. */
	atomic_fetch_or_explicit(&st->writers, WRITERS_OPEN, memory_order_release);
}

/* Closes page idx through the OR on its claim word. Returns 1 if this call
 * closed it (and wrote commit), 0 if someone else had. The caller must be
 * joined to the page. */
static int close_page(struct orbit__page_ring *ring, uint32_t idx)
{
	struct orbit__page_state *st = &ring->state[idx];
	/* acq_rel: acquire the claims before it (so times on the next page
	 * follow them, see Stamping); release to the tail movers that see the
	 * closed bit through their acquire loads of the claim word. */
	uint64_t old = atomic_fetch_or_explicit(&st->claim, CLAIM_CLOSED, memory_order_acq_rel);

	if (old & CLAIM_CLOSED)
		return 0;
	orbit__put_le64(page_at(ring, idx) + 8, old & CLAIM_OFF_MASK);
	/* release: pairs with the reader's acquire load of the writer state;
	 * commit is visible with the records. Also stops new joins. */
	atomic_fetch_and_explicit(&st->writers, ~WRITERS_OPEN, memory_order_release);
	return 1;
}

/* Finished: closed (open bit clear) and no writer inside. */
static int page_finished(struct orbit__page_state *st)
{
	/* acquire: pairs with every writer's release leave and the closer's
	 * release fetch_and (guarantee 2). */
	return atomic_load_explicit(&st->writers, memory_order_acquire) == 0;
}

/* ---- moving the tail, full, overwrite ---- */

/* The ring was full at tail; overwrite on. Returns 0 to start over, or
 * -ENOBUFS to drop the record. */
static int discard_head(struct orbit__page_ring *ring, uint64_t head, uint64_t tail)
{
	struct orbit__page_state *st;
	uint32_t idx = word_index(head);
	uint64_t n;

	if (head & HEAD_OWNER)
		return -ENOBUFS; /* the reader or another writer holds it */
	/* acquire: pairs with the previous owner's release store of the head
	 * word; we see the pages as it left them (guarantee 11). */
	if (!atomic_compare_exchange_strong_explicit(&ring->head, &head, head | HEAD_OWNER,
	                                             memory_order_acquire, memory_order_relaxed))
		return 0;
	st = &ring->state[idx];
	if (atomic_load_explicit(&ring->tail, memory_order_acquire) != tail) {
		/* release: pairs with the next owner's acquire CAS. */
		atomic_store_explicit(&ring->head, head, memory_order_release);
		return 0;
	}
	if (!page_finished(st)) {
		atomic_store_explicit(&ring->head, head, memory_order_release);
		return -ENOBUFS; /* a (maybe paused) writer is still on it */
	}
	n = count_records(
	    page_at(ring, idx) + ORBIT__FTRACE_HEADER,
	    (uint32_t)(atomic_load_explicit(&st->claim, memory_order_relaxed) & CLAIM_OFF_MASK));
	reset_page(ring, idx);
	atomic_fetch_add_explicit(&ring->overwritten_records, n, memory_order_relaxed);
	atomic_fetch_add_explicit(&ring->overwritten_pages, 1, memory_order_relaxed);
	note_loss(ring);
	/* release: pairs with the acquire loads of the head by tail movers
	 * (the freed page is reset) and with the next owner's CAS. */
	atomic_store_explicit(&ring->head, next_head(ring, head), memory_order_release);
	return 0;
}

/* The tail page at `tail` is closed. Moves the tail to the next page if it
 * is free. Returns 0 to start over, -ENOSPC (full, no overwrite) or
 * -ENOBUFS. With may_discard 0 (flush) a full ring just returns 0. */
static int advance_tail(struct orbit__page_ring *ring, uint64_t tail, int may_discard)
{
	uint32_t next = next_index(ring, word_index(tail));
	/* acquire: pairs with the release store of the head after a reset, so
	 * the page we move onto is seen reset (guarantee 4). */
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);

	/* Head and tail were current together only if the tail is unchanged. */
	if (atomic_load_explicit(&ring->tail, memory_order_acquire) != tail)
		return 0;
	if (word_index(head) != next) {
		/* acq_rel: release the close we saw (and the head we read) to
		 * writers that acquire the new tail; a stale tail fails. */
		atomic_compare_exchange_strong_explicit(&ring->tail, &tail, next_tail(ring, tail),
		                                        memory_order_acq_rel, memory_order_relaxed);
		return 0;
	}
	if (!may_discard)
		return 0;
	if (!ring->cfg.overwrite)
		return -ENOSPC;
	return discard_head(ring, head, tail);
}

/* ---- reserve ---- */

struct stamp {
	uint64_t time;
	uint64_t delta;
	uint32_t extend; /* bytes of TIME_EXTEND in front: 0 or 8 */
};

/* Decides the time of a record claimed on a page whose claim word is cw.
 * Returns 0, or 1 when the page must be closed for a new one. */
static int stamp_record(const struct orbit__page_state *st, uint64_t cw, uint64_t now,
                        struct stamp *s)
{
	uint64_t d, back, first;

	s->extend = 0;
	s->delta = 0;
	s->time = now;
	if ((cw & CLAIM_OFF_MASK) == 0)
		return 0;
	d = (now - (cw >> CLAIM_TIME_SHIFT)) & TIME_MASK;
	if (d >= TIME_HALF) {
		back = TIME_RANGE - d;
		if (back >= DELTA_LIMIT)
			return 1;
		s->time = now + back; /* the previous record's time */
		return 0;
	}
	first = atomic_load_explicit(&st->first_time, memory_order_relaxed);
	if (first != FIRST_UNSET && (int64_t)(now - first) >= (int64_t)TIME_HALF)
		return 1;
	s->delta = d;
	if (d >= DELTA_LIMIT)
		s->extend = 8;
	return 0;
}

/* Writes the TIME_EXTEND, record header and page timestamp for a claim at
 * `off` and fills res. */
static void write_record(struct orbit__page_ring *ring, uint32_t idx, uint32_t off, uint32_t len,
                         const struct stamp *s, struct orbit__page_reservation *res)
{
	uint8_t *page = page_at(ring, idx);
	uint8_t *rec = page + ORBIT__FTRACE_HEADER + off;
	uint32_t delta = (uint32_t)s->delta;

	if (off == 0) {
		orbit__put_le64(page, s->time); /* guarantee 8 */
		atomic_store_explicit(&ring->state[idx].first_time, s->time, memory_order_relaxed);
	}
	if (s->extend) {
		orbit__put_le32(rec, ORBIT__FTRACE_TYPE_TIME_EXTEND |
		                         (uint32_t)(s->delta & (DELTA_LIMIT - 1))
		                             << ORBIT__FTRACE_TYPE_BITS);
		orbit__put_le32(rec + 4, (uint32_t)(s->delta >> 27));
		rec += 8;
		delta = 0;
	}
	if (len <= ORBIT__FTRACE_MAX_SMALL) {
		orbit__put_le32(rec, round4(len) / 4 | delta << ORBIT__FTRACE_TYPE_BITS);
		rec += 4;
	} else {
		orbit__put_le32(rec, delta << ORBIT__FTRACE_TYPE_BITS);
		orbit__put_le32(rec + 4, round4(len) + 4);
		rec += 8;
	}
	if (round4(len) != len)
		orbit__put_le32(rec + round4(len) - 4, 0); /* no stale bytes in the padding */
	res->data = rec;
	res->len = len;
	res->page = idx;
	res->time = s->time;
	res->delta = s->delta;
	res->state_ = &ring->state[idx];
}

/* Claims space on the joined page idx. Returns 0 with the space claimed,
 * or 1 if the page is closed (the caller has left it). */
static int claim_space(struct orbit__page_ring *ring, uint32_t idx, uint32_t len,
                       struct orbit__page_reservation *res)
{
	struct orbit__page_state *st = &ring->state[idx];
	uint32_t bytes = record_bytes(len);
	/* acquire: pairs with the release of the claim CAS that wrote this
	 * value; the clock read below comes after that claim's clock read. */
	uint64_t cw = atomic_load_explicit(&st->claim, memory_order_acquire);
	struct stamp s;

	for (;;) {
		uint64_t off = cw & CLAIM_OFF_MASK, next;
		int new_page;

		if (cw & CLAIM_CLOSED) {
			page_leave(st);
			return 1;
		}
		new_page = stamp_record(st, cw, ring->cfg.clock(ring->cfg.clock_arg), &s);
		HOOK(ring, ORBIT__PAGE_HOOK_STAMPED);
		if (new_page || off + s.extend + bytes > ring->area) {
			close_page(ring, idx);
			page_leave(st);
			return 1;
		}
		next = (off + s.extend + bytes) | (s.time & TIME_MASK) << CLAIM_TIME_SHIFT;
		/* acq_rel on success: release our time to later claimers
		 * (see Stamping), acquire theirs. On failure, acquire the
		 * winner's claim for the same reason. */
		if (atomic_compare_exchange_strong_explicit(
		        &st->claim, &cw, next, memory_order_acq_rel, memory_order_acquire)) {
			write_record(ring, idx, (uint32_t)off, len, &s, res);
			return 0;
		}
	}
}

/* Joins the tail page named by `tail`. Returns 0 joined (tail rechecked),
 * 1 the page is closed (not joined), 2 the tail moved (not joined). */
static int join_tail(struct orbit__page_ring *ring, uint64_t tail)
{
	struct orbit__page_state *st = &ring->state[word_index(tail)];
	/* acquire: pairs with reset's release fetch_or of the open bit. */
	uint32_t w = atomic_fetch_add_explicit(&st->writers, 1, memory_order_acquire);

	HOOK(ring, ORBIT__PAGE_HOOK_JOINED);
	if (!(w & WRITERS_OPEN)) {
		page_leave(st);
		return 1;
	}
	/* The page was open when we joined; it is the page we meant only if
	 * the tail still names it with the same generation (guarantee 4). */
	if (atomic_load_explicit(&ring->tail, memory_order_acquire) != tail) {
		page_leave(st);
		return 2;
	}
	return 0;
}

static int reserve_inside(struct orbit__page_ring *ring, uint32_t len,
                          struct orbit__page_reservation *res)
{
	for (;;) {
		/* acquire: pairs with the release CAS that moved the tail. */
		uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
		int r = join_tail(ring, tail);

		if (r == 2)
			continue;
		if (r == 0) {
			if (claim_space(ring, word_index(tail), len, res) == 0) {
				HOOK(ring, ORBIT__PAGE_HOOK_CLAIMED);
				return 0;
			}
		}
		r = advance_tail(ring, tail, 1);
		if (r == -ENOSPC) {
			atomic_fetch_add_explicit(&ring->full, 1, memory_order_relaxed);
			note_loss(ring);
			return r;
		}
		if (r == -ENOBUFS) {
			atomic_fetch_add_explicit(&ring->dropped, 1, memory_order_relaxed);
			note_loss(ring);
			return r;
		}
	}
}

int orbit__page_reserve(struct orbit__page_ring *ring, uint32_t len,
                        struct orbit__page_reservation *res)
{
	int err = ring_enter(ring);

	if (err < 0)
		return err;
	if (len == 0 || len > ring->max_payload) {
		ring_leave(ring);
		return -EMSGSIZE;
	}
	err = reserve_inside(ring, len, res);
	if (err < 0)
		ring_leave(ring);
	return err; /* on success we stay inside the ring until commit */
}

void orbit__page_commit(struct orbit__page_ring *ring, const struct orbit__page_reservation *res)
{
	page_leave(res->state_);
	ring_leave(ring);
}

/* ---- read and flush ---- */

/* Owns the head; copies it out if finished and not the tail. */
static int take_head(struct orbit__page_ring *ring, uint8_t *buf)
{
	/* acquire (load and CAS): pairs with the previous owner's release
	 * store of the head word (guarantee 11). */
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_acquire);
	uint32_t idx, size;
	uint64_t commit;
	uint8_t *page;

	do {
		if (head & HEAD_OWNER)
			return -EAGAIN; /* an overwriting writer holds it */
	} while (!atomic_compare_exchange_weak_explicit(
	    &ring->head, &head, head | HEAD_OWNER, memory_order_acquire, memory_order_acquire));
	idx = word_index(head);
	if (word_index(atomic_load_explicit(&ring->tail, memory_order_acquire)) == idx ||
	    !page_finished(&ring->state[idx])) {
		/* release: pairs with the next owner's acquire CAS. */
		atomic_store_explicit(&ring->head, head, memory_order_release);
		return -EAGAIN;
	}
	HOOK(ring, ORBIT__PAGE_HOOK_READING);
	page = page_at(ring, idx);
	size = (uint32_t)orbit__le64(page + 8);
	if (size > ring->area)
		size = ring->area; /* cannot happen; never copy past the page */
	memcpy(buf, page, ORBIT__FTRACE_HEADER + size);
	memset(buf + ORBIT__FTRACE_HEADER + size, 0, ring->area - size); /* guarantee 1 */
	commit = size;
	if (atomic_exchange_explicit(&ring->lost_flag, 0, memory_order_relaxed))
		commit |= ORBIT__FTRACE_MISSED_EVENTS; /* guarantee 6 */
	orbit__put_le64(buf + 8, commit);
	reset_page(ring, idx);
	atomic_fetch_add_explicit(&ring->pages_read, 1, memory_order_relaxed);
	/* release: pairs with tail movers' acquire load (the page is reset)
	 * and the next owner's CAS. */
	atomic_store_explicit(&ring->head, next_head(ring, head), memory_order_release);
	return (int)ring->cfg.page_size;
}

int orbit__page_read(struct orbit__page_ring *ring, void *buf, size_t len)
{
	int err = ring_enter(ring);

	if (err < 0)
		return err;
	if (len < ring->cfg.page_size) {
		ring_leave(ring);
		return -ERANGE;
	}
	/* acquire: pairs with the previous read's release store of 0. */
	if (atomic_exchange_explicit(&ring->reader_flag, 1, memory_order_acquire)) {
		ring_leave(ring);
		return -EBUSY;
	}
	err = take_head(ring, buf);
	atomic_store_explicit(&ring->reader_flag, 0, memory_order_release);
	ring_leave(ring);
	return err;
}

/* Closes the tail page if it holds records old enough. Returns 1 if this
 * call closed it, 0 otherwise; *closed tells whether the page is closed
 * (by anyone), in which case the caller helps move the tail. */
static int flush_close(struct orbit__page_ring *ring, uint64_t tail, uint64_t min_age_ns,
                       int *closed)
{
	uint32_t idx = word_index(tail);
	struct orbit__page_state *st = &ring->state[idx];
	uint64_t cw, first;
	int r = join_tail(ring, tail), won = 0;

	*closed = r == 1;
	if (r != 0)
		return 0;
	cw = atomic_load_explicit(&st->claim, memory_order_acquire);
	if (cw & CLAIM_CLOSED) {
		*closed = 1;
	} else if ((cw & CLAIM_OFF_MASK) != 0) {
		first = atomic_load_explicit(&st->first_time, memory_order_relaxed);
		if (min_age_ns == 0 || (first != FIRST_UNSET &&
		                        (int64_t)(ring->cfg.clock(ring->cfg.clock_arg) - first) >=
		                            (int64_t)min_age_ns)) {
			won = close_page(ring, idx);
			*closed = 1;
		}
	}
	page_leave(st);
	return won;
}

int orbit__page_flush(struct orbit__page_ring *ring, uint64_t min_age_ns)
{
	int err = ring_enter(ring), won, closed;
	uint64_t tail;

	if (err < 0)
		return err;
	/* acquire: pairs with the release CAS that moved the tail. */
	tail = atomic_load_explicit(&ring->tail, memory_order_acquire);
	won = flush_close(ring, tail, min_age_ns, &closed);
	if (won)
		atomic_fetch_add_explicit(&ring->pages_flushed, 1, memory_order_relaxed);
	if (closed) {
		advance_tail(ring, tail, 0);
		if (atomic_load_explicit(&ring->tail, memory_order_relaxed) != tail)
			won = 1;
	}
	ring_leave(ring);
	return won;
}

/* ---- controller ---- */

static int config_valid(const struct orbit__page_config *cfg)
{
	uint32_t ps = cfg->page_size;

	return cfg->pages >= ORBIT__SEG_MIN_LOG_PAGES && cfg->pages <= ORBIT__PAGE_MAX_PAGES &&
	       ps >= ORBIT__PAGE_MIN_SIZE && ps <= ORBIT__PAGE_MAX_SIZE && (ps & (ps - 1)) == 0 &&
	       cfg->clock != NULL && (cfg->alloc == NULL) == (cfg->free == NULL);
}

static void *default_alloc(size_t align, size_t size)
{
	return aligned_alloc(align, size);
}

int orbit__page_create(struct orbit__page_ring **out, const struct orbit__page_config *cfg)
{
	struct orbit__page_ring *ring;

	*out = NULL;
	if (!config_valid(cfg))
		return -EINVAL;
	ring = aligned_alloc(CACHE_LINE, sizeof(*ring));
	if (ring == NULL)
		return -ENOMEM;
	memset(ring, 0, sizeof(*ring));
	ring->cfg = *cfg;
	if (ring->cfg.alloc == NULL) {
		ring->cfg.alloc = default_alloc;
		ring->cfg.free = free;
	}
	ring->area = cfg->page_size - ORBIT__FTRACE_HEADER;
	ring->max_payload = ring->area - 8;
	atomic_init(&ring->ring_word, 0);
	atomic_init(&ring->tail, 0);
	atomic_init(&ring->head, 0);
	atomic_init(&ring->lost_flag, 0);
	atomic_init(&ring->reader_flag, 0);
	if (pthread_mutex_init(&ring->ctl, NULL) != 0) {
		free(ring);
		return -ENOMEM;
	}
	*out = ring;
	return 0;
}

void orbit__page_destroy(struct orbit__page_ring *ring)
{
	if (ring == NULL)
		return;
	orbit__page_disable(ring, NULL);
	pthread_mutex_destroy(&ring->ctl);
	free(ring);
}

static void reset_counters(struct orbit__page_ring *ring)
{
	atomic_store_explicit(&ring->full, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->dropped, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->overwritten_records, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->overwritten_pages, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->pages_read, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->pages_flushed, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->lost_flag, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->reader_flag, 0, memory_order_relaxed);
}

int orbit__page_enable(struct orbit__page_ring *ring)
{
	size_t n = ring->cfg.pages;

	pthread_mutex_lock(&ring->ctl);
	if (ring->enabled) {
		pthread_mutex_unlock(&ring->ctl);
		return 0;
	}
	if (ring->cfg.memory != NULL) {
		ring->pages = ring->cfg.memory;
		ring->state =
		    (struct orbit__page_state *)(ring->cfg.memory + n * ring->cfg.page_size);
	} else {
		ring->pages = ring->cfg.alloc(ring->cfg.page_size, n * ring->cfg.page_size);
		ring->state = ring->cfg.alloc(CACHE_LINE, n * sizeof(*ring->state));
	}
	if (ring->pages == NULL || ring->state == NULL) {
		if (ring->pages != NULL)
			ring->cfg.free(ring->pages);
		if (ring->state != NULL)
			ring->cfg.free(ring->state);
		ring->pages = NULL;
		ring->state = NULL;
		pthread_mutex_unlock(&ring->ctl);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < n; i++) {
		atomic_init(&ring->state[i].writers, 0);
		reset_page(ring, i);
	}
	reset_counters(ring);
	/* Relaxed: published by the release fetch_or below. Generations start
	 * over; no thread from an earlier enable is left (guarantee 9). */
	atomic_store_explicit(&ring->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&ring->head, 0, memory_order_relaxed);
	ring->enabled = 1;
	/* release: pairs with ring_enter's acquire fetch_add (guarantee 10:
	 * every later call sees the reset pages). */
	atomic_fetch_or_explicit(&ring->ring_word, RING_ENABLED, memory_order_release);
	pthread_mutex_unlock(&ring->ctl);
	return 0;
}

static void nap(void)
{
	struct timespec ts = {0, 50000};

	nanosleep(&ts, NULL);
}

/* Counts what is still in the ring when it is disabled. */
static void count_leftovers(struct orbit__page_ring *ring, uint64_t *records, uint64_t *pages)
{
	uint32_t idx = word_index(atomic_load_explicit(&ring->head, memory_order_relaxed));
	uint32_t tail = word_index(atomic_load_explicit(&ring->tail, memory_order_relaxed));

	*records = 0;
	*pages = 0;
	for (;;) {
		uint32_t bytes =
		    (uint32_t)(atomic_load_explicit(&ring->state[idx].claim, memory_order_relaxed) &
		               CLAIM_OFF_MASK);

		if (bytes != 0) {
			*records += count_records(page_at(ring, idx) + ORBIT__FTRACE_HEADER, bytes);
			(*pages)++;
		}
		if (idx == tail)
			break;
		idx = next_index(ring, idx);
	}
}

int orbit__page_disable(struct orbit__page_ring *ring, struct orbit__page_loss *loss)
{
	uint64_t rec, pages;

	if (loss != NULL)
		memset(loss, 0, sizeof(*loss));
	pthread_mutex_lock(&ring->ctl);
	if (!ring->enabled) {
		pthread_mutex_unlock(&ring->ctl);
		return 0;
	}
	atomic_fetch_and_explicit(&ring->ring_word, ~RING_ENABLED, memory_order_relaxed);
	/* acquire: pairs with every ring_leave's release; once the count
	 * reads zero every reservation and read happened before what follows
	 * (guarantee 9). Controller-only waiting; writers commit promptly. */
	while (atomic_load_explicit(&ring->ring_word, memory_order_acquire) & RING_COUNT)
		nap();
	count_leftovers(ring, &rec, &pages);
	if (loss != NULL) {
		loss->records =
		    atomic_load_explicit(&ring->full, memory_order_relaxed) +
		    atomic_load_explicit(&ring->dropped, memory_order_relaxed) +
		    atomic_load_explicit(&ring->overwritten_records, memory_order_relaxed) + rec;
		loss->pages =
		    atomic_load_explicit(&ring->overwritten_pages, memory_order_relaxed) + pages;
	}
	if (ring->cfg.memory == NULL) {
		ring->cfg.free(ring->pages);
		ring->cfg.free(ring->state);
	}
	ring->pages = NULL;
	ring->state = NULL;
	ring->enabled = 0;
	pthread_mutex_unlock(&ring->ctl);
	return 0;
}

uint32_t orbit__page_max_payload(const struct orbit__page_ring *ring)
{
	return ring->max_payload;
}

uint32_t orbit__page_size(const struct orbit__page_ring *ring)
{
	return ring->cfg.page_size;
}

void orbit__page_stats(const struct orbit__page_ring *ring, struct orbit__page_stats *st)
{
	st->full = atomic_load_explicit(&ring->full, memory_order_relaxed);
	st->dropped = atomic_load_explicit(&ring->dropped, memory_order_relaxed);
	st->overwritten_records =
	    atomic_load_explicit(&ring->overwritten_records, memory_order_relaxed);
	st->overwritten_pages =
	    atomic_load_explicit(&ring->overwritten_pages, memory_order_relaxed);
	st->pages_read = atomic_load_explicit(&ring->pages_read, memory_order_relaxed);
	st->pages_flushed = atomic_load_explicit(&ring->pages_flushed, memory_order_relaxed);
}
