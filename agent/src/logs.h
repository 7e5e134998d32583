/*
 * logs.h — the agent side of ORBIT_LOG and orbit_marker: one page ring
 * (page_ring.h) per configured CPU, written by whichever thread runs on that
 * CPU, read and retimed by the agent thread.
 *
 * Records. Each is one page-ring record whose payload is a log record
 * (format/log_record.h): its type (a line, a line with its call site, a
 * marker), the writer's tid, then the text or the marker's bytes. The ring
 * zeroes the bytes that round a record up to 4, so a marker's length is
 * known only to that rounding.
 *
 * Clock. Made with clock_kind ORBIT__CLOCK_TSC (the producers' clock),
 * the rings stamp raw TSC ticks, else CLOCK_MONOTONIC ns.
 * orbit__logs_read hands out pages in CLOCK_MONOTONIC ns only.
 *
 * Configuration (struct orbit__config, when the instance is made):
 *	ORBIT_PAGE_RING_PAGES      pages per ring, 2..1048576 (default 64)
 *	ORBIT_PAGE_RING_OVERWRITE  1: discard the oldest page when full (default 0)
 * Pages are the system page size.
 *
 * An instance (struct orbit__logs) is the process's rings: the root
 * (lifecycle.c) makes one and publishes it for the writers
 * (producers.h), who have no handle. orbit_log / orbit_marker write into
 * the published instance.
 *
 * Threads. orbit__logs_start / _stop are serialised by a mutex of the
 * instance (the root calls them under its lock). orbit__logs_read belongs
 * to one reader at a time (a second concurrent call waits for the first).
 * orbit_log / orbit_marker run on any thread at any time, also concurrently
 * with start, stop and read; they never block. An instance, once made,
 * stays allocated for the life of the process (its pages are freed by
 * stop), so a writer racing stop is safe.
 */
#ifndef ORBIT_AGENT_LOGS_H
#define ORBIT_AGENT_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "log_record.h" /* the record's payload: enum orbit__logs_type, ORBIT__LOGS_HEADER */

#define ORBIT__LOGS_LINE_STACK 4096u /* orbit_log's stack buffer, NUL included */

struct orbit__logs;

/* The rings' memory in the segment (docs/format.md 1.9): count rings of
 * pages pages of page_size bytes, then a 64-byte state per page, stride
 * bytes apart. */
struct orbit__logs_memory {
	uint8_t *base;
	uint64_t stride;
	uint32_t count, pages, page_size;
};

/* How many rings an instance made with configuration c has, of how many
 * pages of what size (for the segment, which holds them). */
void orbit__logs_geometry(const struct orbit__config *c, uint32_t *count, uint32_t *pages,
                          uint32_t *page_size);

/*
 * Makes the rings, not yet enabled: one per configured CPU, of c's pages,
 * stamped with clock_kind (ORBIT__CLOCK_TSC or CLOCK_MONOTONIC ns). Their
 * pages go in mem if it describes exactly these rings (the environment may
 * have changed since the segment was made), else on the heap at each
 * start. 0, or a negative errno after one stderr line (-ENOMEM, -EINVAL).
 */
int orbit__logs_create(struct orbit__logs **out, const struct orbit__config *c, uint32_t clock_kind,
                       const struct orbit__logs_memory *mem);

/* Enables the rings. Idempotent: 0 when they run already. On failure prints
 * one stderr line and returns a negative errno; logs stay off, nothing else
 * is affected. */
int orbit__logs_start(struct orbit__logs *l);

/* Disables the rings: waits for writers inside them (guarantee 9 of
 * page_ring.c), counts what is still unread as lost and frees the pages. A
 * later start begins from empty rings; totals keep counting. */
void orbit__logs_stop(struct orbit__logs *l);

/* Converts one time stamped by the rings (ticks) to CLOCK_MONOTONIC ns. */
typedef uint64_t (*orbit__logs_to_ns_fn)(void *ctx, uint64_t ticks);
/* Receives one page: `len` bytes in the ftrace page layout, times in
 * CLOCK_MONOTONIC ns, from ring `ring`. The bytes are valid during the call. */
typedef void (*orbit__logs_page_fn)(void *arg, uint32_t ring, const uint8_t *page, size_t len);

/*
 * For every ring: closes the page being written if its first record is at
 * least flush_age_ns old (0: closes it whatever its age, and keeps reading
 * and closing until the ring is empty, for the last read at exit), reads the
 * ready pages, rewrites their times to ns with to_ns (only when the rings
 * stamp TSC ticks; with CLOCK_MONOTONIC it is not called) and hands each to
 * `page`. Reads at most twice a ring's pages per ring per call, so writers
 * cannot keep it reading forever.
 *
 * Returns the number of pages delivered, or -EINVAL when to_ns or page is
 * NULL.
 */
int orbit__logs_read(struct orbit__logs *l, orbit__logs_to_ns_fn to_ns, void *ctx,
                     orbit__logs_page_fn page, void *arg, uint64_t flush_age_ns);

/* Number of rings. */
uint32_t orbit__logs_ring_count(const struct orbit__logs *l);

/*
 * Ring `ring`'s counters since the instance was made, over every start/stop
 * period: reserve calls that reached the enabled ring (succeeded, or failed
 * Full / Dropped), records counted lost (Full, Dropped, overwritten, left
 * unread at stop) and pages lost (overwritten, left unread at stop). When no
 * writer is inside orbit_log / orbit_marker:
 *	reserved == records delivered by orbit__logs_read + lost_records
 * exactly (guarantee 6 of page_ring.c). Any pointer may be NULL; an unknown
 * ring gives zeros.
 */
void orbit__logs_totals(struct orbit__logs *l, uint32_t ring, uint64_t *reserved,
                        uint64_t *lost_records, uint64_t *lost_pages);

/* Records whose converted time did not fit the page and was clamped
 * (orbit__ftrace_retime); 0 unless the tick rate is below 1 GHz. */
uint64_t orbit__logs_clamped(const struct orbit__logs *l);

/* The configuration in use. */
void orbit__logs_config(const struct orbit__logs *l, uint32_t *pages, uint32_t *page_size,
                        int *overwrite);

#endif
