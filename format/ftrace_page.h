/* ftrace_page.h — decoder for Linux ftrace ring-buffer pages ("sub-buffers").
 *
 * Decodes any page in the layout the kernel writes to
 * per_cpu/cpuN/trace_pipe_raw (64-bit, little-endian) and the layout the page
 * ring (agent/src/page_ring.h) writes, treating every byte as hostile:
 *
 *   bytes 0..8    u64 timestamp of the page (time base of the first record)
 *   bytes 8..16   u64 commit: bits 0..26 = size, the number of record bytes
 *                 that follow; bit 30 = the lost count is stored at
 *                 data[size]; bit 31 = records were lost before this page;
 *                 bits 27..29 and 32..63 are ignored (the kernel
 *                 sign-extends, so they are often all ones)
 *   bytes 16..    records, `size` bytes of them; the rest is not records
 *
 * Each record starts with a u32: bits 0..4 type_len, bits 5..31 time_delta.
 *   type_len 1..28  data, payload type_len * 4 bytes
 *   type_len 0      data, next u32 = payload length + 4 (rounded up to 4)
 *   type_len 29     padding: delta 0 = the rest of the records are padding;
 *                   otherwise the next u32 is its length after the header
 *   type_len 30     TIME_EXTEND: delta += next u32 << 27
 *   type_len 31     TIME_STAMP: absolute time, bits 0..58, upper 5 bits kept
 *
 * Decoding follows libtraceevent's kbuffer exactly on valid pages (same
 * records, same times, same offsets); on invalid ones it stops with a
 * negative ORBIT__FTRACE_E* code and the byte offset of the fault, where
 * kbuffer would read out of bounds or loop.
 *
 * Nothing here allocates; the iterator borrows the caller's page bytes.
 * orbit__ftrace_retime (at the end) rewrites a page's times in place.
 */
#ifndef ORBIT_FTRACE_PAGE_H
#define ORBIT_FTRACE_PAGE_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT__FTRACE_HEADER 16u /* timestamp + commit */
#define ORBIT__FTRACE_SIZE_MASK ((1u << 27) - 1)
#define ORBIT__FTRACE_MISSED_STORED (1ull << 30)
#define ORBIT__FTRACE_MISSED_EVENTS (1ull << 31)
#define ORBIT__FTRACE_TYPE_BITS 5u /* type_len field width, below time_delta */
#define ORBIT__FTRACE_TYPE_MASK ((1u << ORBIT__FTRACE_TYPE_BITS) - 1)
#define ORBIT__FTRACE_TS_BITS 27u    /* time_delta field width */
#define ORBIT__FTRACE_MAX_SMALL 112u /* largest type_len 1..28 payload */

enum orbit__ftrace_type {
	ORBIT__FTRACE_TYPE_DATA_MAX = 28,
	ORBIT__FTRACE_TYPE_PADDING = 29,
	ORBIT__FTRACE_TYPE_TIME_EXTEND = 30,
	ORBIT__FTRACE_TYPE_TIME_STAMP = 31,
};

/* Errors (negative). Their text comes from orbit__ftrace_strerror(). */
#define ORBIT__FTRACE_ERRORS(X)                                                                    \
	X(ORBIT__FTRACE_ESHORT, -1101, "page shorter than its 16-byte header")                     \
	X(ORBIT__FTRACE_ESIZE, -1102, "commit size runs past the end of the page")                 \
	X(ORBIT__FTRACE_ELOSTCOUNT, -1103, "stored lost count lies outside the page")              \
	X(ORBIT__FTRACE_EHEADER, -1104, "record header truncated by commit")                       \
	X(ORBIT__FTRACE_ELENGTH, -1105, "record length runs past commit")                          \
	X(ORBIT__FTRACE_EZERO, -1106, "type-0 record with no payload")                             \
	X(ORBIT__FTRACE_EPADDING, -1107, "padding record with a bad length")

#define ORBIT__FTRACE_ERR_ENUM(name, value, text) name = value,
enum orbit__ftrace_error { ORBIT__FTRACE_ERRORS(ORBIT__FTRACE_ERR_ENUM) };
#undef ORBIT__FTRACE_ERR_ENUM

/* The decoded page header. */
struct orbit__ftrace_header {
	uint64_t timestamp;
	uint64_t commit_raw;   /* the u64 as stored, noise bits included */
	uint32_t size;         /* record bytes after the header */
	uint8_t missed;        /* bit 31: records lost before this page */
	uint8_t missed_stored; /* bit 30: missed_count is valid */
	uint64_t missed_count; /* u64 at data[size] when missed_stored */
};

/* One data record. `data` points into the caller's page. */
struct orbit__ftrace_record {
	uint64_t time;     /* absolute: page timestamp + every delta so far */
	uint32_t offset;   /* byte offset of the record header in the page */
	uint32_t type_len; /* 0..28 */
	const uint8_t *data;
	uint32_t len; /* payload bytes (a multiple of 4, as kbuffer says) */
};

struct orbit__ftrace_iter {
	const uint8_t *page;
	uint32_t off;     /* next record header, from the page start */
	uint32_t end;     /* 16 + size */
	uint64_t time;    /* time after the last record decoded */
	uint32_t err_off; /* where the last error was found */
	int err;          /* sticky: once set, next() returns it again */
};

/* Decodes the header of `page` (`len` bytes) into `hdr` and starts `it` at
 * the first record. Returns 0, or a negative ORBIT__FTRACE_E* code with
 * it->err_off set to the offending byte offset. */
int orbit__ftrace_open(struct orbit__ftrace_iter *it, const void *page, size_t len,
                       struct orbit__ftrace_header *hdr);

/* Decodes the next data record into `rec`, skipping padding, TIME_EXTEND and
 * TIME_STAMP records (their time still counts). Returns 1 with a record, 0
 * at the end of the records, or a negative ORBIT__FTRACE_E* code (and
 * it->err_off) for a malformed record; after an error it keeps returning
 * that error. */
int orbit__ftrace_next(struct orbit__ftrace_iter *it, struct orbit__ftrace_record *rec);

/* Text for an ORBIT__FTRACE_E* code; NULL for any other value. */
const char *orbit__ftrace_strerror(int err);

/* Rewrites every time on `page` (`len` bytes) through `to_ns`, in place
 * (the agent turns pages stamped in TSC ticks into CLOCK_MONOTONIC
 * ns). The page timestamp becomes to_ns(timestamp); each data record's time
 * becomes to_ns(its decoded time), re-encoded as a delta from the previous
 * record's new time: a delta under 2^27 goes in the record's own header (any
 * TIME_EXTEND in front of it then carries 0), a larger one in the first
 * TIME_EXTEND in front of the record (the record's header then carries 0).
 * A TIME_STAMP carries the new absolute time; padding loses its delta to the
 * next record. The layout never changes: no record is added, moved or
 * resized, so a page that keeps its times is left byte for byte as it was.
 *
 * When a new delta does not fit where the page has room for it (2^27 or
 * more with no TIME_EXTEND in front, 2^59 or more in one), or `to_ns`
 * goes backwards, the record's time is clamped to the largest that fits
 * (never before the previous record's) and counted. With to_ns no steeper
 * than the identity (ticks at 1 GHz or more) this cannot happen.
 *
 * Returns the number of clamped records (0 normally), or a negative
 * ORBIT__FTRACE_E* code for a page the decoder rejects, which is then left
 * untouched. */
int orbit__ftrace_retime(uint8_t *page, size_t len, uint64_t (*to_ns)(void *ctx, uint64_t ticks),
                         void *ctx);

#endif
