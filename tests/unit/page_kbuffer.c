/* page_kbuffer.c — interoperability: pages written by the page ring, loaded
 * with libtraceevent's kbuffer, give the same records, payloads and
 * timestamps as our parser and as the ring handed out, TIME_EXTEND cases
 * included (test-clock gaps over 134 ms), lost-records flag included. */
#include <inttypes.h>
#include <kbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/page_util.h"

#define NREC 600
#define PAGE 4096u

static struct orbit__page_reservation res[NREC];
static uint64_t seq_of[NREC];
static uint8_t page[PAGE];

static void compare_page(struct kbuffer *kb, uint64_t *next, int *extends_seen)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	unsigned long long ts;
	void *data;
	int r;

	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(kbuffer_load_subbuffer(kb, page) == 0);
	CHECK(kbuffer_subbuffer_size(kb) == (int)hdr.size);
	CHECK(kbuffer_subbuf_timestamp(kb, page) == hdr.timestamp);
	data = kbuffer_read_event(kb, &ts);
	if (hdr.missed)
		CHECK(kbuffer_missed_events(kb) == -1);
	else
		CHECK(kbuffer_missed_events(kb) == 0);
	while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
		uint16_t writer;
		uint64_t seq;

		CHECK(data != NULL);
		CHECK_EQ_U64(ts, rec.time);
		CHECK((const uint8_t *)data == rec.data);
		CHECK_EQ_U64(kbuffer_event_size(kb), rec.len);
		CHECK_EQ_U64(kbuffer_curr_offset(kb), rec.offset);
		CHECK(payload_check(rec.data, rec.len, &writer, &seq) == 0);
		CHECK(seq < NREC);
		/* Matches what the ring handed the writer: time and bytes. */
		CHECK_EQ_U64(seq, seq_of[*next]);
		CHECK_EQ_U64(rec.time, res[*next].time);
		/* Pages are page-aligned in the ring: same place in the page. */
		CHECK_EQ_U64((uintptr_t)res[*next].data % PAGE, (uintptr_t)(rec.data - page));
		if (res[*next].delta >= (1u << 27))
			(*extends_seen)++;
		(*next)++;
		data = kbuffer_next_event(kb, &ts);
	}
	CHECK(r == 0);
	CHECK(data == NULL);
}

static void case_kbuffer(void)
{
	struct orbit__page_ring *ring = make_ring(4, PAGE, 0);
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	uint64_t next = 0, written = 0;
	int extends = 0, pages = 0, lost_pages = 0, r;

	CHECK(kb != NULL);
	for (uint64_t i = 0; i < NREC; i++) {
		uint32_t len = 20 + (uint32_t)((i * 37) % 300); /* type_len 1..28 and 0 */

		if (i % 9 == 4)
			test_clock_jump(134217728ull + i * 1000003ull); /* > 134 ms */
		if (i == 300)
			test_clock_jump(1ull << 40); /* about 18 minutes */
		r = put_record(ring, 1, len, i, &res[written]);
		if (r == -ENOSPC) {
			/* Full: read everything out, then go on (a lost record). */
			do {
				while ((r = orbit__page_read(ring, page, PAGE)) > 0) {
					compare_page(kb, &next, &extends);
					lost_pages += page[11] >> 7;
					pages++;
				}
			} while (orbit__page_flush(ring, 0) == 1);
			continue;
		}
		CHECK(r == 0);
		seq_of[written++] = i;
	}
	do {
		while ((r = orbit__page_read(ring, page, PAGE)) > 0) {
			compare_page(kb, &next, &extends);
			pages++;
		}
	} while (orbit__page_flush(ring, 0) == 1);
	CHECK_EQ_U64(next, written);
	CHECK(extends > 20);
	CHECK(lost_pages > 0); /* the page after a Full says so, kbuffer agrees */
	printf("%d pages, %" PRIu64 " records, %d TIME_EXTENDs agree with kbuffer\n", pages,
	       written, extends);
	kbuffer_free(kb);
	orbit__page_destroy(ring);
}

static const struct test_case cases[] = {
    {"kbuffer", case_kbuffer},
};

TEST_MAIN(cases)
