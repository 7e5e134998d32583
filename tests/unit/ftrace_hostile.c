/* ftrace_hostile.c — crafted bad pages: each must give a clear error with
 * the offending offset, never a crash or a read past the page.
 * Usage: ftrace_hostile CASE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "harness.h"

#define PAGE 4096u

static uint8_t *page;

static void put32(uint32_t off, uint32_t v)
{
	memcpy(page + off, &v, 4);
}

static void put64(uint32_t off, uint64_t v)
{
	memcpy(page + off, &v, 8);
}

static uint32_t hdr_word(uint32_t type_len, uint32_t delta)
{
	return type_len | delta << 5;
}

/* Opens the page (PAGE bytes, or `len`) and runs to the end; returns the
 * final result (0 or an error) and the number of data records. */
static int run(size_t len, int *records, uint32_t *err_off)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	int r = orbit__ftrace_open(&it, page, len, &hdr);

	*records = 0;
	if (r == 0) {
		while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
			CHECK(rec.data >= page && rec.data + rec.len <= page + len);
			(*records)++;
		}
	}
	*err_off = it.err_off;
	if (r < 0) {
		CHECK(orbit__ftrace_strerror(r) != NULL);
		/* Errors are sticky: the iterator keeps the error and its
		 * offset, and every later call returns it again. */
		CHECK(it.err == r);
		CHECK(orbit__ftrace_next(&it, &rec) == r);
		CHECK(orbit__ftrace_next(&it, &rec) == r);
		CHECK(it.err == r && it.err_off == *err_off);
	}
	return r;
}

static void expect(int want, int want_records, uint32_t want_off)
{
	int n;
	uint32_t off;
	int r = run(PAGE, &n, &off);

	if (r != want || n != want_records || (want < 0 && off != want_off)) {
		fprintf(stderr, "got %d (%s) records %d off %u; want %d records %d off %u\n", r,
		        r < 0 ? orbit__ftrace_strerror(r) : "ok", n, off, want, want_records,
		        want_off);
		exit(1);
	}
}

static void case_short(void)
{
	int n;
	uint32_t off;

	CHECK(run(15, &n, &off) == ORBIT__FTRACE_ESHORT);
	CHECK(run(0, &n, &off) == ORBIT__FTRACE_ESHORT);
	put64(8, 0);
	CHECK(run(16, &n, &off) == 0);
}

static void case_commit_oversized(void)
{
	put64(8, PAGE - 16 + 1);
	expect(ORBIT__FTRACE_ESIZE, 0, 8);
	put64(8, ORBIT__FTRACE_SIZE_MASK); /* the largest size the field holds */
	expect(ORBIT__FTRACE_ESIZE, 0, 8);
}

static void case_commit_zero(void)
{
	put64(8, 0);
	put32(16, hdr_word(1, 0)); /* past commit: not a record */
	expect(0, 0, 0);
}

static void case_commit_noise(void)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;

	/* bits 27..29 and 32..63 set: noise; size 8 = one 4-byte record */
	put64(8, 0xffffffff38000000ull | 8);
	put32(16, hdr_word(1, 5));
	expect(0, 1, 0);
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(hdr.size == 8 && !hdr.missed && !hdr.missed_stored);
	/* bit 31 without bit 30: lost, count unknown */
	put64(8, 0xffffffff80000008ull);
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(hdr.missed && !hdr.missed_stored && hdr.missed_count == 0);
}

/* The lost count stored after the records (bit 30) must lie inside the
 * page: read from there when it does, refused when any of its 8 bytes would
 * not. */
static void case_lost_outside(void)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;

	put64(8, (1ull << 31) | (1ull << 30) | (PAGE - 16 - 4));
	expect(ORBIT__FTRACE_ELOSTCOUNT, 0, PAGE - 4);
	put64(8, (1ull << 31) | (1ull << 30) | (PAGE - 16 - 7));
	expect(ORBIT__FTRACE_ELOSTCOUNT, 0, PAGE - 7);
	/* Exactly 8 bytes after the records: the count, read from them. */
	put64(8, (1ull << 31) | (1ull << 30) | (PAGE - 16 - 8));
	put64(PAGE - 8, 12345);
	put32(16, hdr_word(0, 0));
	put32(20, PAGE - 16 - 8 - 4);
	expect(0, 1, 0);
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(hdr.missed && hdr.missed_stored);
	CHECK_EQ_U64(hdr.size, PAGE - 16 - 8);
	CHECK_EQ_U64(hdr.missed_count, 12345);
	/* The record's last bytes are not the count's: the count is read
	 * from data[size], not from inside the records. */
	put64(PAGE - 16, 777);
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK_EQ_U64(hdr.missed_count, 12345);
	/* Without bit 30 there is no count, whatever follows the records. */
	put64(8, (1ull << 31) | (PAGE - 16 - 8));
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(hdr.missed && !hdr.missed_stored);
	CHECK_EQ_U64(hdr.missed_count, 0);
}

static void case_zero_length_type0(void)
{
	put64(8, 16);
	put32(16, hdr_word(0, 0));
	put32(20, 0);
	expect(ORBIT__FTRACE_EZERO, 0, 16);
	put32(20, 4);
	expect(ORBIT__FTRACE_EZERO, 0, 16);
	put32(20, 3);
	expect(ORBIT__FTRACE_EZERO, 0, 16);
	put64(8, 12);
	put32(20, 8); /* four payload bytes: fine */
	expect(0, 1, 0);
}

static void case_type0_overrun(void)
{
	put64(8, 16);
	put32(16, hdr_word(0, 0));
	put32(20, 1000);
	expect(ORBIT__FTRACE_ELENGTH, 0, 16);
	put32(20, 0xffffffffu);
	expect(ORBIT__FTRACE_ELENGTH, 0, 16);
	put32(20, 0xfffffffdu);
	expect(ORBIT__FTRACE_ELENGTH, 0, 16);
}

static void case_truncated_header(void)
{
	put64(8, 2);
	expect(ORBIT__FTRACE_EHEADER, 0, 16);
	put64(8, 8 + 6); /* one good record, then half a header */
	put32(16, hdr_word(1, 0));
	expect(ORBIT__FTRACE_EHEADER, 1, 24);
	put64(8, 4); /* a type-0 header without its length word */
	put32(16, hdr_word(0, 0));
	expect(ORBIT__FTRACE_EHEADER, 0, 16);
	put32(16, hdr_word(30, 1)); /* TIME_EXTEND without its word */
	expect(ORBIT__FTRACE_EHEADER, 0, 16);
	put32(16, hdr_word(31, 1)); /* TIME_STAMP without its word */
	expect(ORBIT__FTRACE_EHEADER, 0, 16);
	put32(16, hdr_word(29, 1)); /* padding without its length */
	expect(ORBIT__FTRACE_EHEADER, 0, 16);
}

static void case_data_overrun(void)
{
	put64(8, 20);
	put32(16, hdr_word(28, 0)); /* 112 bytes claimed, 16 there */
	expect(ORBIT__FTRACE_ELENGTH, 0, 16);
}

static void case_padding(void)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;

	put64(0, 1000);
	put64(8, 24);
	put32(16, hdr_word(29, 7)); /* padding, 4 bytes after its length word */
	put32(20, 8);
	put32(28, hdr_word(2, 3));
	expect(0, 1, 0);
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(orbit__ftrace_next(&it, &rec) == 1);
	CHECK(rec.time == 1010 && rec.offset == 28 && rec.len == 8);
	put32(20, 2);
	expect(ORBIT__FTRACE_EPADDING, 0, 16);
	put32(20, 100);
	expect(ORBIT__FTRACE_EPADDING, 0, 16);
	put32(16, hdr_word(29, 0)); /* delta 0: the rest is padding */
	expect(0, 0, 0);
}

static void case_time_records(void)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;

	put64(0, 0xf800000000000005ull);
	put64(8, 8 + 8 + 4 + 8 + 4);
	put32(16, hdr_word(30, 3)); /* TIME_EXTEND: + (2 << 27 | 3) */
	put32(20, 2);
	put32(24, hdr_word(1, 0));
	put32(32, hdr_word(31, 9)); /* TIME_STAMP: absolute 1 << 27 | 9 */
	put32(36, 1);
	put32(40, hdr_word(1, 1));
	CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
	CHECK(orbit__ftrace_next(&it, &rec) == 1);
	CHECK_EQ_U64(rec.time, 0xf800000000000005ull + (2ull << 27 | 3));
	CHECK(orbit__ftrace_next(&it, &rec) == 1);
	CHECK_EQ_U64(rec.time, 0xf800000000000000ull + (1ull << 27 | 9) + 1);
	CHECK(orbit__ftrace_next(&it, &rec) == 0);
}

static void case_all_ones(void)
{
	int n;
	uint32_t off;

	memset(page, 0xff, PAGE);
	CHECK(run(PAGE, &n, &off) == ORBIT__FTRACE_ESIZE);
	put64(8, 0xffffffffc0000000ull | 100);
	CHECK(run(PAGE, &n, &off) < 0); /* TIME_STAMPs then a truncated one */
	memset(page, 0, PAGE);
	put64(8, PAGE - 16);
	CHECK(run(PAGE, &n, &off) == ORBIT__FTRACE_EZERO); /* zero words */
}

static const struct test_case cases[] = {
    {"short", case_short},
    {"commit_oversized", case_commit_oversized},
    {"commit_zero", case_commit_zero},
    {"commit_noise", case_commit_noise},
    {"lost_outside", case_lost_outside},
    {"zero_length_type0", case_zero_length_type0},
    {"type0_overrun", case_type0_overrun},
    {"truncated_header", case_truncated_header},
    {"data_overrun", case_data_overrun},
    {"padding", case_padding},
    {"time_records", case_time_records},
    {"all_ones", case_all_ones},
};

/* Exactly PAGE bytes on the heap, so ASan sees any overread. */
static void alloc_page(void)
{
	page = calloc(1, PAGE);
	CHECK(page != NULL);
}

static void free_page(void)
{
	free(page);
}

TEST_MAIN_WITH(cases, .begin = alloc_page, .end = free_page)
