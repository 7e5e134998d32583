/* page_util.h — helpers shared by the page ring tests: a test clock that
 * tests can jump, self-checking payloads (writer id + sequence + checksum),
 * and a page walker built on the ftrace parser. Header-only. */
#ifndef ORBIT_TEST_PAGE_UTIL_H
#define ORBIT_TEST_PAGE_UTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "ftrace_page.h"
#include "harness.h"
#include "page_ring.h"

/* ---- test clock: monotonic across threads, steps by 1 ns per call,
 * plus whatever the test adds with test_clock_jump(). ---- */
static _Atomic uint64_t test_clock_ns = 1000000000ull;

static inline uint64_t test_clock(void *arg)
{
	(void)arg;
	return atomic_fetch_add_explicit(&test_clock_ns, 1, memory_order_relaxed) + 1;
}

static inline void test_clock_jump(uint64_t ns)
{
	atomic_fetch_add_explicit(&test_clock_ns, ns, memory_order_relaxed);
}

static inline struct orbit__page_ring *make_ring(uint32_t pages, uint32_t page_size, int overwrite)
{
	struct orbit__page_config cfg = {
	    .pages = pages,
	    .page_size = page_size,
	    .overwrite = overwrite,
	    .clock = test_clock,
	};
	struct orbit__page_ring *ring;

	CHECK(orbit__page_create(&ring, &cfg) == 0);
	CHECK(orbit__page_enable(ring) == 0);
	return ring;
}

/* ---- payloads ----
 *  0..2  u16 event type (0x100 + writer, like common_type)
 *  2..4  u16 writer
 *  4..8  u32 len (bytes of payload written)
 *  8..16 u64 sequence
 * 16..len-4 filler derived from (writer, seq, index)
 * len-4 u32 checksum (FNV-1a of bytes 0..len-4) */
#define PAYLOAD_MIN 20u

static inline uint32_t fnv32(const uint8_t *p, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static inline void payload_fill(uint8_t *p, uint16_t writer, uint32_t len, uint64_t seq)
{
	uint16_t type = (uint16_t)(0x100 + writer);
	uint32_t sum;

	memcpy(p, &type, 2);
	memcpy(p + 2, &writer, 2);
	memcpy(p + 4, &len, 4);
	memcpy(p + 8, &seq, 8);
	for (uint32_t i = 16; i < len - 4; i++)
		p[i] = (uint8_t)(seq * 31 + i * 7 + writer);
	sum = fnv32(p, len - 4);
	memcpy(p + len - 4, &sum, 4);
}

/* Checks a delivered payload byte for byte. Returns 0 if good. */
static inline int payload_check(const uint8_t *p, uint32_t avail, uint16_t *writer, uint64_t *seq)
{
	uint16_t type;
	uint32_t len, sum;

	if (avail < PAYLOAD_MIN)
		return -1;
	memcpy(&type, p, 2);
	memcpy(writer, p + 2, 2);
	memcpy(&len, p + 4, 4);
	memcpy(seq, p + 8, 8);
	if (type != 0x100 + *writer || len < PAYLOAD_MIN || len > avail ||
	    ((len + 3) & ~3u) != avail)
		return -2;
	for (uint32_t i = 16; i < len - 4; i++)
		if (p[i] != (uint8_t)(*seq * 31 + i * 7 + *writer))
			return -3;
	memcpy(&sum, p + len - 4, 4);
	if (sum != fnv32(p, len - 4))
		return -4;
	for (uint32_t i = len; i < avail; i++)
		if (p[i] != 0)
			return -5; /* padding to 4 bytes is zeroed by the ring */
	return 0;
}

/* Reserves and commits one payload; returns reserve's result. */
static inline int put_record(struct orbit__page_ring *ring, uint16_t writer, uint32_t len,
                             uint64_t seq, struct orbit__page_reservation *out)
{
	struct orbit__page_reservation res;
	int r = orbit__page_reserve(ring, len, &res);

	if (r != 0)
		return r;
	payload_fill(res.data, writer, len, seq);
	orbit__page_commit(ring, &res);
	if (out != NULL)
		*out = res;
	return 0;
}

/* Walks a delivered page, checks guarantees 1, 3 and 7 on it (records
 * packed up to commit and inside the page, times non-decreasing, no
 * TIME_STAMP or padding from our ring), and returns the number of data
 * records; fn (may be NULL) sees each. */
typedef void (*page_record_fn)(void *arg, const struct orbit__ftrace_record *rec);

static inline uint64_t page_walk(const uint8_t *page, uint32_t page_size, page_record_fn fn,
                                 void *arg, struct orbit__ftrace_header *hdr_out)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	uint64_t n = 0, last = 0;
	int r;

	CHECK(orbit__ftrace_open(&it, page, page_size, &hdr) == 0);
	CHECK(hdr.size > 0 && hdr.size <= page_size - 16);
	CHECK((hdr.commit_raw & ~((1ull << 31) | ORBIT__FTRACE_SIZE_MASK)) == 0);
	for (uint32_t i = 16 + hdr.size; i < page_size; i++)
		CHECK(page[i] == 0); /* guarantee 1: nothing past commit */
	while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
		if (n == 0)
			CHECK_EQ_U64(rec.time, hdr.timestamp); /* guarantee 8 */
		CHECK(rec.time >= last);                       /* guarantee 7 */
		CHECK(rec.offset + rec.len <= 16 + hdr.size);  /* guarantee 3 */
		last = rec.time;
		n++;
		if (fn != NULL)
			fn(arg, &rec);
	}
	CHECK(r == 0);
	CHECK_EQ_U64(it.off, 16 + hdr.size); /* guarantee 1: packed to commit */
	if (hdr_out != NULL)
		*hdr_out = hdr;
	return n;
}

#endif
