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
 * Clock. With orbit__clock_kind == ORBIT__CLOCK_TSC (chosen before the first
 * orbit__logs_start) the rings stamp raw TSC ticks, else CLOCK_MONOTONIC ns.
 * orbit__logs_read hands out pages in CLOCK_MONOTONIC ns only.
 *
 * Configuration, read from the environment at the first start:
 *	ORBIT_PAGE_RING_PAGES      pages per ring, 2..1048576 (default 64)
 *	ORBIT_PAGE_RING_OVERWRITE  1: discard the oldest page when full (default 0)
 * Pages are the system page size. A bad value costs one stderr line and
 * the default.
 *
 * Threads. orbit__logs_start / _stop are serialised by a mutex of their own
 * (the agent calls them under orbit_init's lock). orbit__logs_read belongs
 * to one reader at a time (a second concurrent call waits for the first).
 * orbit_log / orbit_marker run on any thread at any time, also concurrently
 * with start, stop and read; they never block. The rings, once created, stay
 * allocated for the life of the process (their pages are freed by stop), so
 * a writer racing stop is safe.
 */
#ifndef ORBIT_AGENT_LOGS_H
#define ORBIT_AGENT_LOGS_H

#include <stddef.h>
#include <stdint.h>

#include "log_record.h" /* the record's payload: enum orbit__logs_type, ORBIT__LOGS_HEADER */

#define ORBIT__LOGS_PAGES_DEFAULT 64u
#define ORBIT__LOGS_LINE_STACK 4096u /* orbit_log's stack buffer, NUL included */

/*
 * Creates the rings (first call) and enables them. Idempotent: 0 when they
 * run already. On failure prints one stderr line and returns a negative
 * errno (-ENOMEM, -EINVAL); logs stay off, nothing else is affected.
 */
int orbit__logs_start(void);

/* Disables the rings: waits for writers inside them (guarantee 9 of
 * page_ring.c), counts what is still unread as lost and frees the pages. A
 * later start begins from empty rings; totals keep counting. */
void orbit__logs_stop(void);

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
 * Returns the number of pages delivered, ORBIT_EDISABLED when the rings
 * were never created, or -EINVAL when to_ns or page is NULL.
 */
int orbit__logs_read(orbit__logs_to_ns_fn to_ns, void *ctx, orbit__logs_page_fn page, void *arg,
                     uint64_t flush_age_ns);

struct orbit__config;
/* How many rings the first start makes, of how many pages of what size,
 * with configuration c (for the segment, which holds them). */
void orbit__logs_geometry(const struct orbit__config *c, uint32_t *count, uint32_t *pages,
                          uint32_t *page_size);
/* The rings' memory, in the segment (docs/format.md 1.9): count rings of
 * pages pages of page_size bytes, then a 64-byte state per page, stride
 * bytes apart. Taken by the first start if it makes exactly these rings;
 * otherwise, or without this call, the rings live on the heap. */
void orbit__logs_use_memory(uint8_t *base, uint64_t stride, uint32_t count, uint32_t pages,
                            uint32_t page_size);

/* Number of rings (0 before the first successful start). */
uint32_t orbit__logs_ring_count(void);

/*
 * Ring `ring`'s counters since the process started, over every start/stop
 * period: reserve calls that reached the enabled ring (succeeded, or failed
 * Full / Dropped), records counted lost (Full, Dropped, overwritten, left
 * unread at stop) and pages lost (overwritten, left unread at stop). When no
 * writer is inside orbit_log / orbit_marker:
 *	reserved == records delivered by orbit__logs_read + lost_records
 * exactly (guarantee 6 of page_ring.c). Any pointer may be NULL; an unknown
 * ring gives zeros.
 */
void orbit__logs_totals(uint32_t ring, uint64_t *reserved, uint64_t *lost_records,
                        uint64_t *lost_pages);

/* Records whose converted time did not fit the page and was clamped
 * (orbit__ftrace_retime); 0 unless the tick rate is below 1 GHz. */
uint64_t orbit__logs_clamped(void);

/* The configuration in use (for tests); zeros before the first start. */
void orbit__logs_config(uint32_t *pages, uint32_t *page_size, int *overwrite);

#endif
