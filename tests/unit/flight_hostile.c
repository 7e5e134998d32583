/*
 * flight_hostile.c — the flight ring's reader (format/flight.c) and the
 * stored calibration (format/segment_clock.c) on hand-made bytes: every
 * entry and metadata rule of docs/format.md 1.8 and 1.7, and what a reader
 * does with a writer that lies.
 *
 * Usage: flight_hostile CASE (one ctest entry per case).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flight.h"
#include "harness.h"
#include "segment_clock.h"

#define RING 4096u

static void entry(uint8_t *ring, uint64_t pos, uint32_t len, uint32_t kind, uint64_t seq)
{
	uint8_t *p = ring + pos % RING;
	uint32_t k = kind | ORBIT__FLIGHT_CHECK << 16;
	memcpy(p, &len, 4);
	memcpy(p + 4, &k, 4);
	memcpy(p + 8, &seq, 8);
	memset(p + 16, (int)(seq & 0xff), len);
}

/* The linear copy of positions [from, to) of a ring, as orbit-dump makes it. */
static uint8_t *copy_of(const uint8_t *ring, uint64_t from, uint64_t to)
{
	uint8_t *c = malloc(to - from + 1);
	CHECK(c != NULL);
	for (uint64_t p = from; p < to; p++)
		c[p - from] = ring[p % RING];
	return c;
}

static int walk(const uint8_t *ring, uint64_t from, uint64_t to, uint64_t *seqs, int max,
                struct orbit__seg_problem *why)
{
	uint8_t *c = copy_of(ring, from, to);
	struct orbit__flight_iter it;
	struct orbit__flight_entry e;
	orbit__flight_iter_init(&it, c, from, to, RING);
	int n = 0, r;
	while ((r = orbit__flight_next(&it, &e, why)) == 1) {
		CHECK(e.bytes >= c && e.bytes + e.len <= c + (to - from));
		for (uint32_t i = 0; i < e.len; i++)
			CHECK(e.bytes[i] == (uint8_t)(e.seq & 0xff));
		if (n < max)
			seqs[n] = e.seq;
		n++;
	}
	free(c);
	return r < 0 ? r : n;
}

/* Entries back to back, a WRAP before the end, and an entry at the next
 * lap; a lap that ends 8 bytes short needs no WRAP. */
static void case_entries(void)
{
	uint8_t ring[RING] = {0};
	uint64_t seqs[8];
	const uint64_t base = 5 * RING;                       /* positions only grow */
	entry(ring, base, 100, ORBIT__FLIGHT_DATA, 1);        /* 16 + 104 */
	entry(ring, base + 120, 3000, ORBIT__FLIGHT_DATA, 2); /* 16 + 3000 */
	uint64_t after = base + 120 + 3016;                   /* 960 left before the end */
	CHECK_EQ_U64(walk(ring, base, after, seqs, 8, NULL), 2);
	CHECK(seqs[0] == 1 && seqs[1] == 2);
	/* The next entry does not fit before the end: a WRAP there, and it
	 * starts the next lap, over the first entry (which head left). */
	entry(ring, after, 0, ORBIT__FLIGHT_WRAP, 3);
	entry(ring, base + RING, 64, ORBIT__FLIGHT_END, 3);
	CHECK_EQ_U64(walk(ring, base + 120, base + RING + 80, seqs, 8, NULL), 2);
	CHECK(seqs[0] == 2 && seqs[1] == 3);
	/* 8 bytes left at the end: no header fits, the next lap begins. */
	memset(ring, 0, sizeof ring);
	entry(ring, base + 512, RING - 512 - 24, ORBIT__FLIGHT_DATA, 7); /* 8 left */
	entry(ring, base + RING, 8, ORBIT__FLIGHT_DATA, 8);
	CHECK_EQ_U64(walk(ring, base + 512, base + RING + 24, seqs, 8, NULL), 2);
	CHECK(seqs[1] == 8);
	/* Empty. */
	CHECK_EQ_U64(walk(ring, base, base, seqs, 8, NULL), 0);
}

/* Headers that do not hold: each stops the walk with its ring offset. */
static void case_bad_entries(void)
{
	uint8_t ring[RING];
	struct orbit__seg_problem why;
	const uint64_t base = 3 * RING;
	/* No check word. */
	memset(ring, 0, sizeof ring);
	entry(ring, base, 10, ORBIT__FLIGHT_DATA, 1);
	ring[6] = 0;
	CHECK_EQ_U64(walk(ring, base, base + 32, NULL, 0, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	CHECK_EQ_U64(why.offset, 0);
	/* Unknown kinds. */
	for (uint32_t k = 0; k < 8; k++) {
		if (k >= 1 && k <= 3)
			continue;
		memset(ring, 0, sizeof ring);
		entry(ring, base + 64, 10, k, 1);
		entry(ring, base, 48, ORBIT__FLIGHT_DATA, 2);
		CHECK_EQ_U64(walk(ring, base, base + 96, NULL, 0, &why),
		             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
		CHECK_EQ_U64(why.offset, 64);
	}
	/* Lengths past the end of the ring, past the tail, near 2^32. */
	const uint32_t lens[] = {RING, RING - 16 - 512 + 1, 0xffffffffu, 0xfffffff9u, 200};
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		memset(ring, 0, sizeof ring);
		entry(ring, base + 512, 0, ORBIT__FLIGHT_DATA, 1);
		memcpy(ring + 512, &lens[i], 4);
		CHECK_EQ_U64(walk(ring, base + 512, base + 512 + 128, NULL, 0, &why),
		             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
		CHECK_EQ_U64(why.offset, 512);
	}
	/* A header cut by the tail. */
	memset(ring, 0, sizeof ring);
	entry(ring, base, 8, ORBIT__FLIGHT_DATA, 1);
	CHECK_EQ_U64(walk(ring, base, base + 8, NULL, 0, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	/* WRAP entries all the way round: each step moves a whole lap, and
	 * the walk ends at the tail. */
	memset(ring, 0, sizeof ring);
	entry(ring, base, 0, ORBIT__FLIGHT_WRAP, 1);
	CHECK_EQ_U64(walk(ring, base, base + RING * 3, NULL, 0, &why), 0);
}

static void meta(struct orbit__flight_meta *m, uint64_t gen, uint64_t head, uint64_t tail)
{
	memset(m, 0, sizeof *m);
	atomic_store_explicit(&m->gen_begin, gen, memory_order_relaxed);
	atomic_store_explicit(&m->gen_end, gen, memory_order_relaxed);
	m->head = head;
	m->tail = tail;
	m->ring_count = 4;
}

static struct orbit__flight_header *header(uint64_t flight_size)
{
	struct orbit__flight_header *h = calloc(1, sizeof *h);
	CHECK(h != NULL);
	atomic_store_explicit(&h->magic, ORBIT__FLIGHT_MAGIC, memory_order_relaxed);
	h->version = ORBIT__FLIGHT_VERSION;
	h->header_size = sizeof *h;
	h->handshake_at = ORBIT__FLIGHT_HEADER;
	h->handshake_cap = ORBIT__FLIGHT_HANDSHAKE_CAP;
	h->ring_at = ORBIT__FLIGHT_RING_AT;
	h->ring_size = orbit__flight_ring_size(flight_size);
	return h;
}

/* The newer complete block wins; torn ones and lies are refused. */
static void case_meta(void)
{
	const uint64_t size = 1u << 20;
	struct orbit__flight_header *h = header(size);
	struct orbit__flight_meta m;
	struct orbit__seg_problem why;
	CHECK_EQ_U64(orbit__flight_validate(h, size, &why), 0);
	/* Neither block written. */
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	meta(&h->meta[0], 6, 0, 800);
	meta(&h->meta[1], 7, 800, 1600);
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, NULL), 0);
	CHECK_EQ_U64(m.head, 800);
	/* The newer one torn (the writer died inside it): the older one. */
	atomic_store_explicit(&h->meta[1].gen_end, 5, memory_order_relaxed);
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, NULL), 0);
	CHECK_EQ_U64(m.head, 0);
	/* Lies in the one left. */
	const uint64_t ring = h->ring_size;
	const uint64_t bad[][2] = {{100, 50}, {0, ring + 8}, {3, 16}, {8, 21}, {UINT64_MAX - 7, 8}};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		meta(&h->meta[0], 6, bad[i][0], bad[i][1]);
		CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, &why),
		             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	}
	meta(&h->meta[0], 6, 0, 8);
	h->meta[0].handshake_len = ORBIT__FLIGHT_HANDSHAKE_CAP + 1;
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	meta(&h->meta[0], 6, 0, 8);
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 5, &m, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	CHECK_EQ_U64(orbit__flight_meta_pick(h, 4, &m, &why), 0);
	/* The header's own geometry. */
	atomic_store_explicit(&h->magic, 0, memory_order_relaxed);
	CHECK_EQ_U64(orbit__flight_validate(h, size, &why), (uint64_t)(int64_t)ORBIT__SEG_ENOTINIT);
	atomic_store_explicit(&h->magic, ORBIT__FLIGHT_MAGIC + 1, memory_order_relaxed);
	CHECK_EQ_U64(orbit__flight_validate(h, size, &why), (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	atomic_store_explicit(&h->magic, ORBIT__FLIGHT_MAGIC, memory_order_relaxed);
	h->version = 2;
	CHECK_EQ_U64(orbit__flight_validate(h, size, &why), (uint64_t)(int64_t)ORBIT__SEG_EVERSION);
	h->version = ORBIT__FLIGHT_VERSION;
	CHECK_EQ_U64(orbit__flight_validate(h, 2 * size, &why),
	             (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	h->ring_at = 0;
	CHECK_EQ_U64(orbit__flight_validate(h, size, &why), (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	free(h);
}

static struct orbit__seg_clock *clock_block(uint32_t n, uint64_t t0, uint64_t ns0, uint64_t dt,
                                            uint64_t dns)
{
	struct orbit__seg_clock *b = calloc(1, sizeof *b);
	CHECK(b != NULL);
	b->source = ORBIT__SEG_CLOCK_TSC;
	b->count = n;
	for (uint32_t i = 0; i < n; i++)
		b->point[i] = (struct orbit__seg_point){t0 + i * dt, ns0 + i * dns};
	return b;
}

/* Interpolation between the stored points, the reader's own pair, and
 * what is untrusted (segment_clock.h, guarantees 1 to 5). */
static void case_clock(void)
{
	/* 2.5 ticks per ns, a point every 10 ms. */
	struct orbit__seg_clock *b = clock_block(100, 1000000000, 5000000000, 25000000, 10000000);
	struct orbit__seg_conv c;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, NULL), 0);
	int u;
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, 1000000000 + 25000000 * 3 + 2500, &u),
	             5000000000 + 30000000 + 1000);
	CHECK(u == 0);
	/* Past the last point, no pair of the reader's: untrusted. */
	uint64_t last_t = 1000000000 + 99ull * 25000000, last_ns = 5000000000 + 990000000;
	orbit__seg_conv_ns(&c, last_t + 2500, &u);
	CHECK(u == 1);
	/* The reader's pair a second later, at the same rate: trusted up to it. */
	struct orbit__seg_point now = {last_t + 2500000000ull, last_ns + 1000000000};
	struct orbit__seg_point earlier = {now.ticks - 25000000, now.ns - 10000000};
	CHECK(orbit__seg_conv_now(&c, earlier, now) == 1);
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, last_t + 2500, &u), last_ns + 1000);
	CHECK(u == 0);
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, now.ticks, &u), now.ns);
	CHECK(u == 0);
	orbit__seg_conv_ns(&c, now.ticks + 1, &u);
	CHECK(u == 1);
	/* Ticks an earlier epoch read too (the agent's amb_lo..amb_hi):
	 * untrusted whatever the points say (5.). */
	b->amb_lo = 1000000000 + 25000000 * 3;
	b->amb_hi = b->amb_lo + 25000000;
	struct orbit__seg_conv ca;
	CHECK_EQ_U64(orbit__seg_conv_init(&ca, b, NULL), 0);
	orbit__seg_conv_ns(&ca, b->amb_lo + 2500, &u);
	CHECK(u == 1);
	orbit__seg_conv_ns(&ca, b->amb_hi + 2500, &u);
	CHECK(u == 0);
	b->amb_lo = b->amb_hi = 0;
	/* A pair off the rate by a jump (a counter reset, another host). */
	struct orbit__seg_point jumped = {now.ticks, now.ns + 50000000};
	CHECK(orbit__seg_conv_now(&c, earlier, jumped) == 0);
	orbit__seg_conv_ns(&c, last_t + 2500, &u);
	CHECK(u == 1);
	/* Before the first point: untrusted, extrapolated, never below 0. */
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, 1000000000 - 2500, &u), 5000000000 - 1000);
	CHECK(u == 1);
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, 0, &u), 5000000000 - 400000000);
	/* Non-decreasing everywhere. */
	uint64_t prev = 0;
	for (uint64_t t = 0; t < last_t + 3000000000ull; t += 7777777) {
		uint64_t ns = orbit__seg_conv_ns(&c, t, NULL);
		CHECK(ns >= prev);
		prev = ns;
	}
	/* Points that go back, or a count past the array: refused. */
	struct orbit__seg_problem why;
	b->point[50].ticks = b->point[49].ticks;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, &why), (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	CHECK_EQ_U64(why.offset, 40 + 16 * 50);
	b->point[50].ticks = b->point[49].ticks + 1;
	b->point[50].ns = b->point[49].ns - 1;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, &why), (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	b->count = ORBIT__SEG_CLOCK_POINTS + 1;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, &why), (uint64_t)(int64_t)ORBIT__SEG_EBADSEG);
	/* No points: the reader's own rate, untrusted. */
	b->count = 0;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, NULL), 0);
	CHECK(orbit__seg_conv_now(&c, earlier, now) == 0);
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, now.ticks - 2500, &u), now.ns - 1000);
	CHECK(u == 1);
	/* Huge hostile points do not overflow. */
	free(b);
	b = clock_block(3, 0, 0, UINT64_MAX / 4, UINT64_MAX / 4);
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, NULL), 0);
	for (uint64_t t = 0; t < UINT64_MAX / 2; t += UINT64_MAX / 64)
		orbit__seg_conv_ns(&c, t, NULL);
	/* CLOCK_MONOTONIC converts nothing. */
	b->source = ORBIT__SEG_CLOCK_MONOTONIC;
	CHECK_EQ_U64(orbit__seg_conv_init(&c, b, NULL), 0);
	CHECK_EQ_U64(orbit__seg_conv_ns(&c, 123456789, &u), 123456789);
	CHECK(u == 0);
	free(b);
}

static const struct test_case cases[] = {
    {"entries", case_entries},
    {"bad_entries", case_bad_entries},
    {"meta", case_meta},
    {"clock", case_clock},
};

TEST_MAIN(cases)
