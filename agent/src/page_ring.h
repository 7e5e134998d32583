/* page_ring.h — lock-free multi-writer ring whose pages are Linux ftrace
 * ring-buffer pages (seed 001). The algorithm and its numbered
 * guarantees are explained at the top of page_ring.c.
 *
 * Roles and their calls:
 *   controller  orbit__page_create / _enable / _disable / _destroy; rare,
 *               serialised by a mutex no writer or reader touches
 *   writers     orbit__page_reserve, then write the payload, then
 *               orbit__page_commit; any number at once, from any thread
 *   reader      orbit__page_read and orbit__page_flush; one read at a time
 *               (a second concurrent read gets -EBUSY)
 *
 * Errors are negative errno values, distinct within each call:
 *   reserve   -ENOSPC    Full: no space and overwrite is off
 *             -ENOBUFS   Dropped: overwrite is on but the oldest page is
 *                        held by the reader or a paused writer
 *             -ESHUTDOWN Disabled
 *             -EMSGSIZE  Invalid size (0, or larger than
 *                        orbit__page_max_payload())
 *   read      -EAGAIN    Nothing ready
 *             -ESHUTDOWN Disabled
 *             -EBUSY     another read is in progress
 *             -ERANGE    the buffer is smaller than a page
 *   enable    -ENOMEM    out of memory; the ring stays disabled
 *   create    -EINVAL    bad configuration, -ENOMEM
 * Full and Dropped are counted as lost records and set bit 31 (records lost)
 * in the commit word of the next page read.
 *
 * Example (a writer):
 *
 *	struct orbit__page_reservation res;
 *	if (orbit__page_reserve(ring, len, &res) == 0) {
 *		memcpy(res.data, payload, len);
 *		orbit__page_commit(ring, &res);
 *	}
 *
 * A reservation must be committed promptly, always, and from any thread:
 * orbit__page_disable waits for every outstanding reservation.
 */
#ifndef ORBIT_PAGE_RING_H
#define ORBIT_PAGE_RING_H

#include <stddef.h>
#include <stdint.h>

#include "segment.h" /* the bounds a page ring in a segment keeps */

/* Pages per ring, and bytes per page (a power of two): what the segment
 * format accepts, so that any ring can live in a segment. */
#define ORBIT__PAGE_MAX_PAGES ORBIT__SEG_MAX_LOG_PAGES
#define ORBIT__PAGE_MIN_SIZE ORBIT__SEG_MIN_LOG_PAGE_SIZE
#define ORBIT__PAGE_MAX_SIZE ORBIT__SEG_MAX_PAGE_SIZE

/* A clock returning nanoseconds, monotonic across threads (the agent passes
 * CLOCK_MONOTONIC; tests pass a counter they can jump). */
typedef uint64_t (*orbit__page_clock_fn)(void *arg);

/* Where the test hook is called; see orbit__page_config.hook. */
enum orbit__page_hook_point {
	ORBIT__PAGE_HOOK_JOINED,  /* writer joined the tail page, tail not rechecked */
	ORBIT__PAGE_HOOK_STAMPED, /* writer read the clock, claim CAS not done */
	ORBIT__PAGE_HOOK_CLAIMED, /* writer owns its space, reserve not returned */
	ORBIT__PAGE_HOOK_READING, /* reader owns the head page, copy not done */
};

struct orbit__page_config {
	uint32_t pages;     /* 2 .. ORBIT__PAGE_MAX_PAGES */
	uint32_t page_size; /* power of two, MIN_SIZE .. MAX_SIZE */
	int overwrite;      /* nonzero: discard the oldest page when full */
	orbit__page_clock_fn clock;
	void *clock_arg;
	/* Optional allocator for the pages and their state (tests inject
	 * failures); NULL means aligned_alloc/free. `align` is a power of two. */
	void *(*alloc)(size_t align, size_t size);
	void (*free)(void *p);
	/* Optional memory the owner provides for the ring's whole life (the
	 * segment's page-ring area): pages * page_size bytes of pages, aligned
	 * to page_size, then a 64-byte state per page (ORBIT__SEG_PAGE_STATE).
	 * Enable and disable then use it instead of alloc and free. */
	uint8_t *memory;
	/* Optional test hook, NULL in production: called at the points above
	 * with the thread inside the ring, so a test can pause a writer or the
	 * reader there for as long as it likes. */
	void (*hook)(void *arg, enum orbit__page_hook_point point);
	void *hook_arg;
};

/* A granted reservation: the payload area and how the record is stamped. */
struct orbit__page_reservation {
	void *data;     /* payload, `len` bytes rounded up to 4, 4-aligned */
	uint32_t len;   /* bytes asked for */
	uint32_t page;  /* index of the page holding the record */
	uint64_t time;  /* the record's absolute time (clock ns) */
	uint64_t delta; /* time since the previous record on the page (0 for
	                 * the first); over 27 bits it went to a TIME_EXTEND */
	void *state_;   /* private: the page state commit leaves */
};

/* Returned by disable: what this enable period lost. */
struct orbit__page_loss {
	uint64_t records; /* Full + Dropped + records on discarded pages */
	uint64_t pages;   /* pages discarded by overwrite or by disable */
};

/* Counters for tests and the agent's statistics (relaxed snapshots). */
struct orbit__page_stats {
	uint64_t full;    /* reserves that returned -ENOSPC */
	uint64_t dropped; /* reserves that returned -ENOBUFS */
	uint64_t overwritten_records;
	uint64_t overwritten_pages;
	uint64_t pages_read;
	uint64_t pages_flushed; /* tail pages closed by orbit__page_flush */
};

struct orbit__page_ring;

/* Allocates the ring's control block (not the pages) and validates cfg.
 * Returns 0 and *out, -EINVAL or -ENOMEM. The ring starts disabled. */
int orbit__page_create(struct orbit__page_ring **out, const struct orbit__page_config *cfg);

/* Disables (if needed) and frees the control block. */
void orbit__page_destroy(struct orbit__page_ring *ring);

/* Allocates and resets the pages and opens the ring. Returns 0 (also when
 * already enabled: no change), or -ENOMEM leaving the ring disabled. */
int orbit__page_enable(struct orbit__page_ring *ring);

/* Closes the ring to new reserves and reads, waits until none is in
 * progress (guarantee 9), counts the records still in the ring as lost,
 * frees the pages. `loss` (may be NULL) receives this enable period's
 * losses; zeros if the ring was already disabled. Returns 0. */
int orbit__page_disable(struct orbit__page_ring *ring, struct orbit__page_loss *loss);

/* Reserves space for a record with a `len`-byte payload. Returns 0 and
 * fills *res, or -ENOSPC, -ENOBUFS, -ESHUTDOWN, -EMSGSIZE. Never blocks. */
int orbit__page_reserve(struct orbit__page_ring *ring, uint32_t len,
                        struct orbit__page_reservation *res);

/* Publishes a reservation's record. Always succeeds (guarantee 12). */
void orbit__page_commit(struct orbit__page_ring *ring, const struct orbit__page_reservation *res);

/* Copies the oldest finished page into buf (at least the page size) and
 * frees it in the ring. Bytes past the page's commit are zeroed. Returns
 * the page size, or -EAGAIN, -ESHUTDOWN, -EBUSY, -ERANGE. Never blocks. */
int orbit__page_read(struct orbit__page_ring *ring, void *buf, size_t len);

/* Reader side: closes the tail page, if it holds records and its first
 * record is at least min_age_ns old by the ring's clock, and moves the tail
 * on when the page is closed (by anyone) and the next page is free, so the
 * next reads can deliver it. Returns 1 if it closed the page or the tail
 * moved on, 0 if there was nothing to do, -ESHUTDOWN. Never blocks; never
 * discards. Pass 0 to flush everything. At exit, drain with
 *	do { while (orbit__page_read(...) > 0) ...; }
 *	while (orbit__page_flush(ring, 0) == 1);
 * (a closed tail page in a full ring moves on once a read frees a page). */
int orbit__page_flush(struct orbit__page_ring *ring, uint64_t min_age_ns);

/* Largest payload a record can carry: page_size - 24 (header, the type-0
 * length word and the record header). */
uint32_t orbit__page_max_payload(const struct orbit__page_ring *ring);

uint32_t orbit__page_size(const struct orbit__page_ring *ring);

void orbit__page_stats(const struct orbit__page_ring *ring, struct orbit__page_stats *st);

#endif
