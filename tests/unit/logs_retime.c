/* logs_retime.c — orbit__ftrace_retime (ftrace_page.h), the agent's
 * tick-to-ns rewrite of log pages: the identity
 * leaves a page byte for byte as it was, a mapping gives exactly the mapped
 * time per record through the parser, TIME_EXTENDs carry what needs them and
 * lose what does not, deltas with no room are clamped and counted, and a
 * page the decoder rejects is left untouched.
 * Usage: logs_retime CASE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/page_util.h"

#define PAGE 4096u
#define MAXREC 512

static uint8_t page[PAGE], orig[PAGE];

struct times {
	uint64_t ts;
	uint64_t t[MAXREC];
	uint32_t off[MAXREC];
	size_t n;
};

static void parse(const uint8_t *p, struct times *out)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	int r;

	memset(out, 0, sizeof(*out));
	CHECK(orbit__ftrace_open(&it, p, PAGE, &hdr) == 0);
	out->ts = hdr.timestamp;
	while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
		CHECK(out->n < MAXREC);
		out->t[out->n] = rec.time;
		out->off[out->n] = rec.offset;
		out->n++;
	}
	CHECK(r == 0);
}

/* TIME_EXTENDs on a page of our ring: how many, and how many carry a
 * nonzero value. */
static void count_extends(const uint8_t *p, int *all, int *nonzero)
{
	uint32_t size = (uint32_t)(((uint64_t)p[8] | (uint64_t)p[9] << 8 | (uint64_t)p[10] << 16 |
	                            (uint64_t)p[11] << 24) &
	                           ORBIT__FTRACE_SIZE_MASK);
	uint32_t off = 16, end = 16 + size;

	*all = *nonzero = 0;
	while (off < end) {
		uint32_t w, arg;

		memcpy(&w, p + off, 4);
		memcpy(&arg, p + off + 4, 4);
		if ((w & 0x1f) == ORBIT__FTRACE_TYPE_TIME_EXTEND) {
			(*all)++;
			*nonzero += (w >> 5) != 0 || arg != 0;
			off += 8;
		} else if ((w & 0x1f) == 0) {
			off += 8 + ((arg - 4 + 3) & ~3u);
		} else {
			off += 4 + (w & 0x1f) * 4;
		}
	}
}

/* ---- mappings ---- */

static uint64_t map_identity(void *ctx, uint64_t t)
{
	(void)ctx;
	return t;
}

/* ticks at 3 GHz: ns = ticks / 3 */
static uint64_t map_third(void *ctx, uint64_t t)
{
	(void)ctx;
	return t / 3;
}

static uint64_t map_shift(void *ctx, uint64_t t)
{
	return t - *(uint64_t *)ctx;
}

static uint64_t map_times(void *ctx, uint64_t t)
{
	return t * *(uint64_t *)ctx;
}

static uint64_t map_backwards(void *ctx, uint64_t t)
{
	(void)ctx;
	return UINT64_MAX / 2 - t; /* decreasing: every later record clamps */
}

/* ---- pages from our ring ---- */

/* One page of records with the given gaps (ns before each record after the
 * first; the test clock adds 1 per read), read out closed. */
static void ring_page(const uint64_t *gaps, size_t n, uint32_t payload)
{
	struct orbit__page_ring *ring = make_ring(4, PAGE, 0);

	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			test_clock_jump(gaps[i - 1]);
		CHECK(put_record(ring, 1, payload, i, NULL) == 0);
	}
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(orbit__page_read(ring, page, PAGE) == (int)PAGE);
	orbit__page_destroy(ring);
	memcpy(orig, page, PAGE);
}

/* Retimes page with map and checks every record's time is map(original). */
static void expect_mapped(uint64_t (*map)(void *, uint64_t), void *ctx)
{
	struct times a, b;

	parse(orig, &a);
	CHECK(orbit__ftrace_retime(page, PAGE, map, ctx) == 0);
	parse(page, &b);
	CHECK_EQ_U64(b.n, a.n);
	CHECK_EQ_U64(b.ts, map(ctx, a.ts));
	for (size_t i = 0; i < a.n; i++) {
		CHECK_EQ_U64(b.off[i], a.off[i]); /* layout unchanged */
		CHECK_EQ_U64(b.t[i], map(ctx, a.t[i]));
	}
	CHECK_EQ_U64(b.t[0], b.ts); /* page_ring.c guarantee 8, still */
	/* Payloads and commit untouched. */
	CHECK(memcmp(page + 8, orig + 8, 8) == 0);
	for (size_t i = 0; i < a.n; i++) {
		uint16_t w;
		uint64_t seq;
		struct orbit__ftrace_iter it;
		struct orbit__ftrace_header hdr;
		struct orbit__ftrace_record rec;

		CHECK(orbit__ftrace_open(&it, page, PAGE, &hdr) == 0);
		for (size_t j = 0; j <= i; j++)
			CHECK(orbit__ftrace_next(&it, &rec) == 1);
		CHECK(payload_check(rec.data, rec.len, &w, &seq) == 0);
		CHECK_EQ_U64(seq, i);
	}
}

static void case_identity(void)
{
	uint64_t gaps[40];

	for (size_t i = 0; i < 40; i++)
		gaps[i] = (i * 7919) % 100000;
	ring_page(gaps, 40, 24);
	CHECK(orbit__ftrace_retime(page, PAGE, map_identity, NULL) == 0);
	CHECK(memcmp(page, orig, PAGE) == 0);
}

static void case_identity_extend(void)
{
	/* Gaps over 2^27 ns: TIME_EXTENDs; type-0 records (payload > 112). */
	uint64_t gaps[] = {1u << 27, 5, (1ull << 33) + 12345, 0, 1ull << 40, 77, (1u << 27) - 2};
	int all, nz;

	ring_page(gaps, 8, 200);
	count_extends(orig, &all, &nz);
	CHECK(all == 3 && nz == 3);
	CHECK(orbit__ftrace_retime(page, PAGE, map_identity, NULL) == 0);
	CHECK(memcmp(page, orig, PAGE) == 0);
}

static void case_scale(void)
{
	uint64_t gaps[100];

	for (size_t i = 0; i < 100; i++)
		gaps[i] = (i * 104729) % 3000000;
	ring_page(gaps, 100, 20);
	expect_mapped(map_third, NULL);
}

static void case_scale_extend(void)
{
	/* At 1/3: 2^28 + x becomes < 2^27 and moves into the record (its
	 * TIME_EXTEND carries 0); 2^30 and 2^35 still need theirs. */
	uint64_t gaps[] = {(1u << 28) + 999, 3, 1u << 30, 1ull << 35, 11, (1u << 27) + 1, 0};
	int all, nz;

	ring_page(gaps, 8, 40);
	count_extends(orig, &all, &nz);
	CHECK(all == 4 && nz == 4);
	expect_mapped(map_third, NULL);
	count_extends(page, &all, &nz);
	CHECK(all == 4);
	CHECK(nz == 2);
}

static void case_scale_up(void)
{
	/* A steeper mapping still works while every new delta has room: the
	 * extended gaps grow within their TIME_EXTEND, the small ones stay
	 * under 2^27. */
	uint64_t gaps[] = {1000, 1u << 28, 5, 1ull << 36, 100000};
	uint64_t k = 16;

	ring_page(gaps, 6, 20);
	expect_mapped(map_times, &k);
}

static void case_clamp(void)
{
	/* ×64: a 2^22 + 5 gap with no TIME_EXTEND in front needs 2^28 + 320
	 * ns; the record gets 2^27 - 1 and is counted, the next record's time
	 * is exact again. */
	uint64_t gaps[] = {100, (1u << 22) + 5, 100, 100};
	uint64_t k = 64;
	struct times a, b;

	ring_page(gaps, 5, 20);
	parse(orig, &a);
	CHECK(orbit__ftrace_retime(page, PAGE, map_times, &k) == 2);
	parse(page, &b);
	CHECK_EQ_U64(b.n, 5);
	CHECK_EQ_U64(b.t[0], a.t[0] * k);
	CHECK_EQ_U64(b.t[1], a.t[1] * k);
	CHECK_EQ_U64(b.t[2], b.t[1] + (1u << 27) - 1); /* clamped */
	CHECK(b.t[2] < a.t[2] * k);
	/* The next gap (101 ticks = 6464 ns) is still short of the clamped
	 * 2^28 - 2^27: clamped again, then times never go backwards. */
	CHECK_EQ_U64(b.t[3], b.t[2] + (1u << 27) - 1);
	CHECK_EQ_U64(b.t[4], a.t[4] * k);
	for (size_t i = 1; i < 5; i++)
		CHECK(b.t[i] >= b.t[i - 1]);
}

static void case_backwards(void)
{
	uint64_t gaps[] = {10, 20, 30};
	struct times b;

	ring_page(gaps, 4, 20);
	CHECK(orbit__ftrace_retime(page, PAGE, map_backwards, NULL) == 3);
	parse(page, &b);
	for (size_t i = 1; i < b.n; i++)
		CHECK_EQ_U64(b.t[i], b.t[0]);
}

/* ---- kernel pages (tests/data/sample-pages.bin) ---- */

static void case_kernel(void)
{
	static uint8_t pages[4 * PAGE];
	uint64_t base = 1000000;
	FILE *f = fopen(ORBIT_TEST_DATA "/sample-pages.bin", "rb");

	if (f == NULL)
		SKIP("%s/sample-pages.bin missing", ORBIT_TEST_DATA);
	CHECK(fread(pages, 1, sizeof(pages), f) == sizeof(pages));
	fclose(f);
	for (int i = 0; i < 4; i++) {
		struct times a, b;

		memcpy(orig, pages + i * PAGE, PAGE);
		memcpy(page, orig, PAGE);
		/* Kernel pages: TIME_EXTENDs, padding with a delta. */
		CHECK(orbit__ftrace_retime(page, PAGE, map_identity, NULL) == 0);
		CHECK(memcmp(page, orig, PAGE) == 0);
		/* A shift keeps every delta: only the timestamp changes. */
		CHECK(orbit__ftrace_retime(page, PAGE, map_shift, &base) == 0);
		CHECK(memcmp(page + 8, orig + 8, PAGE - 8) == 0);
		parse(orig, &a);
		parse(page, &b);
		CHECK(a.n > 0);
		CHECK_EQ_U64(b.n, a.n);
		for (size_t j = 0; j < a.n; j++)
			CHECK_EQ_U64(b.t[j], a.t[j] - base);
	}
}

static void case_hostile(void)
{
	uint64_t gaps[] = {5, 6};
	uint64_t commit = PAGE; /* runs past the page */

	ring_page(gaps, 3, 20);
	memcpy(page + 8, &commit, 8);
	memcpy(orig, page, PAGE);
	CHECK(orbit__ftrace_retime(page, PAGE, map_third, NULL) == ORBIT__FTRACE_ESIZE);
	CHECK(memcmp(page, orig, PAGE) == 0);
	CHECK(orbit__ftrace_retime(page, 8, map_third, NULL) == ORBIT__FTRACE_ESHORT);
	/* A type-0 record with no payload, after a good one. */
	ring_page(gaps, 3, 200);
	{
		uint32_t four = 4;

		memcpy(page + 16 + 8 + 200 + 4, &four, 4);
		memcpy(orig, page, PAGE);
		CHECK(orbit__ftrace_retime(page, PAGE, map_third, NULL) == ORBIT__FTRACE_EZERO);
		CHECK(memcmp(page, orig, PAGE) == 0);
	}
}

static const struct test_case cases[] = {
    {"identity", case_identity},   {"identity_extend", case_identity_extend},
    {"scale", case_scale},         {"scale_extend", case_scale_extend},
    {"scale_up", case_scale_up},   {"clamp", case_clamp},
    {"backwards", case_backwards}, {"kernel", case_kernel},
    {"hostile", case_hostile},
};

TEST_MAIN(cases)
