/*
 * slot_reader.c — format/scope_slot.h, the one reading side of the slot
 * protocol, on slots made by hand. Cases:
 *   check     orbit__seg_check (the readers') is orbit.h's orbit__check (the
 *             write path's) on random and edge records
 *   stamps    what orbit__stamp_read says of each kind of stamp, near 0 and
 *             near the top of u64
 *   copy      runs of checked copies: a run stops at a marker, at a later
 *             lap, at a torn record; what it copied is the slots' records
 *   verdicts  the verdict on each kind of stop (scope_ring.c guarantee 7)
 */
#include <string.h>

#include "harness.h"
#include "orbit.h"
#include "scope_slot.h"

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;

static void case_check(void)
{
	static const uint64_t edge[] = {0, 1, ~0ull, 1ull << 63, 0x8000000080000000ull};
	for (int i = 0; i < 100000; i++) {
		uint64_t w[7];
		for (int k = 0; k < 7; k++)
			w[k] = i < 5 ? edge[(i + k) % 5] : test_rand(&rnd_state);
		CHECK_EQ_U64(orbit__seg_check(w), orbit__check(w[0], w[1], w[2], w + 3));
	}
}

static void case_stamps(void)
{
	static const uint64_t at[] = {0, 5, 1ull << 32, (1ull << 63) + 7, ~0ull - 40};
	for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
		uint64_t c = at[i], k = 3ull << 33 | 1ull << 32; /* a check */
		CHECK(orbit__stamp_read(0, c).kind == ORBIT__STAMP_NEVER);
		CHECK(orbit__stamp_read(c + 1, c).kind == ORBIT__STAMP_MARKER);
		CHECK(orbit__stamp_read(c + 1 + k, c).kind == ORBIT__STAMP_RECORD);
		struct orbit__stamp st = orbit__stamp_read(c + 17 + k, c);
		CHECK(st.kind == ORBIT__STAMP_NEWER && st.claim == c + 16 && st.record);
		st = orbit__stamp_read(c + 17, c);
		CHECK(st.kind == ORBIT__STAMP_NEWER && st.claim == c + 16 && !st.record);
		if (c >= 16) {
			st = orbit__stamp_read(c - 15 + k, c);
			CHECK(st.kind == ORBIT__STAMP_OLDER && st.claim == c - 16 && st.record);
		}
	}
}

#define SLOTS 16u

static struct orbit__seg_slot ring[SLOTS];

/* Publishes claim c's record (its words derived from c) in its slot. */
static void put(uint64_t c)
{
	uint64_t w[7];
	for (int k = 0; k < 7; k++)
		w[k] = c * 7 + (uint64_t)k;
	struct orbit__seg_slot *s = &ring[c % SLOTS];
	for (int k = 0; k < 7; k++)
		atomic_store_explicit(&s->word[k], w[k], memory_order_relaxed);
	atomic_store_explicit(&s->stamp, c + 1 + orbit__seg_check(w), memory_order_relaxed);
}

static void case_copy(void)
{
	memset(ring, 0, sizeof ring);
	for (uint64_t c = 100; c < 110; c++)
		put(c);
	uint8_t out[SLOTS * 56];
	enum orbit__slots_stop why;
	uint64_t stamp = 0;
	CHECK_EQ_U64(orbit__slots_copy(ring, SLOTS - 1, 100, 110, out, SLOTS, &why, &stamp), 10);
	CHECK(why == ORBIT__SLOTS_DONE);
	for (int i = 0; i < 10; i++) {
		uint64_t t;
		memcpy(&t, out + 56 * i, 8);
		CHECK_EQ_U64(t, (100 + (uint64_t)i) * 7);
	}
	/* room bounds the run */
	CHECK_EQ_U64(orbit__slots_copy(ring, SLOTS - 1, 100, 110, out, 4, &why, &stamp), 4);
	CHECK(why == ORBIT__SLOTS_DONE);
	/* a marker at 105 */
	atomic_store_explicit(&ring[105 % SLOTS].stamp, 106, memory_order_relaxed);
	CHECK_EQ_U64(orbit__slots_copy(ring, SLOTS - 1, 100, 110, out, SLOTS, &why, &stamp), 5);
	CHECK(why == ORBIT__SLOTS_STAMP && stamp == 106);
	/* torn: 105's stamp over a word another producer wrote */
	put(105);
	atomic_store_explicit(&ring[105 % SLOTS].word[2], 1, memory_order_relaxed);
	CHECK_EQ_U64(orbit__slots_copy(ring, SLOTS - 1, 100, 110, out, SLOTS, &why, &stamp), 5);
	CHECK(why == ORBIT__SLOTS_TORN);
	/* a later lap at 103 */
	put(103 + SLOTS);
	CHECK_EQ_U64(orbit__slots_copy(ring, SLOTS - 1, 100, 110, out, SLOTS, &why, &stamp), 3);
	CHECK(why == ORBIT__SLOTS_STAMP);
	CHECK(orbit__stamp_read(stamp, 103).kind == ORBIT__STAMP_NEWER);
}

static void case_verdicts(void)
{
	const uint64_t n = 200, k = 5ull << 33 | 1ull << 32;
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_TORN, 0, n, SLOTS, 0) == ORBIT__SLOT_LAPPED);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, n + SLOTS + 1 + k, n, SLOTS, 0) ==
	      ORBIT__SLOT_LAPPED);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, n + SLOTS + 1, n, SLOTS, 0) ==
	      ORBIT__SLOT_LAPPED);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, 0, n, SLOTS, 0) == ORBIT__SLOT_PENDING);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, n + 1, n, SLOTS, 0) == ORBIT__SLOT_PENDING);
	/* the record of n - slots: pending if it was read clean, else gone */
	uint64_t prev = n - SLOTS + 1 + k;
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, prev, n, SLOTS, n - SLOTS) ==
	      ORBIT__SLOT_PENDING);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, prev, n, SLOTS, n - SLOTS + 1) ==
	      ORBIT__SLOT_GONE);
	/* an earlier lap's marker, or a record two laps back: gone */
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, n - SLOTS + 1, n, SLOTS, 0) ==
	      ORBIT__SLOT_GONE);
	CHECK(orbit__slot_verdict(ORBIT__SLOTS_STAMP, n - 2 * SLOTS + 1 + k, n, SLOTS, 0) ==
	      ORBIT__SLOT_GONE);
	/* R3: the clean run begins past what was read after a lap was handed out */
	CHECK_EQ_U64(orbit__slots_clean(50, 100, 10, 100 + SLOTS, SLOTS), 50);
	CHECK_EQ_U64(orbit__slots_clean(50, 100, 10, 105 + SLOTS, SLOTS), 105);
	CHECK_EQ_U64(orbit__slots_clean(50, 100, 10, 200 + SLOTS, SLOTS), 110);
}

static const struct test_case cases[] = {
    {"check", case_check},
    {"stamps", case_stamps},
    {"copy", case_copy},
    {"verdicts", case_verdicts},
};

TEST_MAIN(cases)
