/* ftrace_kernel_pages.c — the parser against four real kernel pages: its
 * output must match libtraceevent kbuffer's decoding (data/
 * sample-pages.expected.txt) record for record, timestamp for timestamp. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "harness.h"

#define PAGE 4096u

static uint8_t pages[4 * PAGE];

static void load_pages(void)
{
	FILE *f = fopen(ORBIT_TEST_DATA "/sample-pages.bin", "rb");

	if (f == NULL)
		SKIP("%s/sample-pages.bin missing", ORBIT_TEST_DATA);
	CHECK(fread(pages, 1, sizeof(pages), f) == sizeof(pages));
	fclose(f);
}

static void case_sample_pages(void)
{
	FILE *f;
	char line[512];
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	int page = -1, nrec = 0, total = 0;

	load_pages();
	f = fopen(ORBIT_TEST_DATA "/sample-pages.expected.txt", "r");
	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) != NULL) {
		uint64_t ts, commit, a, b, c;
		unsigned idx, size, missed, stored, off, len, type;
		long long lost;
		char *p;

		if (sscanf(line,
		           "page %u: page_ts=%" SCNu64 " commit=0x%" SCNx64
		           " size=%u missed_flag=%u stored_flag=%u",
		           &idx, &ts, &commit, &size, &missed, &stored) == 6) {
			if (page >= 0)
				CHECK(orbit__ftrace_next(&it, &rec) == 0); /* no extra */
			page = (int)idx;
			nrec = 0;
			CHECK(page < 4);
			CHECK(orbit__ftrace_open(&it, pages + (size_t)page * PAGE, PAGE, &hdr) ==
			      0);
			CHECK_EQ_U64(hdr.timestamp, ts);
			CHECK_EQ_U64(hdr.commit_raw, commit);
			CHECK_EQ_U64(hdr.size, size);
			CHECK_EQ_U64(hdr.missed, missed);
			CHECK_EQ_U64(hdr.missed_stored, stored);
		} else if ((p = strstr(line, "kbuffer: subbuf_ts=")) != NULL &&
		           sscanf(p,
		                  "kbuffer: subbuf_ts=%" SCNu64 " missed_events=%lld data_size=%u",
		                  &ts, &lost, &size) == 3) {
			CHECK_EQ_U64(hdr.timestamp, ts);
			CHECK_EQ_U64(hdr.size, size);
			if (!hdr.missed)
				CHECK(lost == 0);
			else if (!hdr.missed_stored)
				CHECK(lost == -1);
			else
				CHECK_EQ_U64(hdr.missed_count, (uint64_t)lost);
		} else if (sscanf(line,
		                  "  rec %u ts=%" SCNu64 " (+%" SCNu64 ") off=%u payload_len=%u"
		                  " common_type=%u",
		                  &idx, &ts, &a, &off, &len, &type) == 6) {
			uint16_t ct;

			CHECK(orbit__ftrace_next(&it, &rec) == 1);
			CHECK_EQ_U64(idx, nrec);
			CHECK_EQ_U64(rec.time, ts);
			CHECK_EQ_U64(rec.offset, off);
			CHECK_EQ_U64(rec.len, len);
			memcpy(&ct, rec.data, 2);
			CHECK_EQ_U64(ct, type);
			nrec++;
			total++;
		} else if ((p = strstr(line, "kbuffer: ")) != NULL &&
		           sscanf(p, "kbuffer: %" SCNu64 " records", &c) == 1) {
			CHECK_EQ_U64(nrec, c);
		} else if (sscanf(line, "total pages=%" SCNu64 " records=%" SCNu64, &a, &b) == 2) {
			CHECK_EQ_U64(a, 4);
			CHECK_EQ_U64(b, total);
		}
	}
	fclose(f);
	CHECK(page == 3);
	CHECK(orbit__ftrace_next(&it, &rec) == 0);
	CHECK_EQ_U64(total, 153);
	printf("153 kernel records decoded as kbuffer does\n");
}

static const struct test_case cases[] = {
    {"sample_pages", case_sample_pages},
};

TEST_MAIN(cases)
