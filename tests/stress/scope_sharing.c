/*
 * scope_sharing.c — seed 000's sharing test: eight threads push to one ring;
 * every producer's events survive, each in a slot of its own (scope_ring.c
 * guarantees 2, 3 and 4). Built a second time with ORBIT_TEST_PLAIN_CLAIM,
 * which replaces the claim's fetch_add with a load and a store: that build
 * passes only if the same checks fail, showing the test catches the race.
 */
#include <pthread.h>
#include <stdlib.h>

#include "harness.h"
#include "orbit.h"
#include "producers.h"
#include "record.h"
#include "scope_ring.h"
#include "segment_create.h"

#define THREADS 8
#define PER_THREAD 100000u
#ifdef ORBIT_TEST_PLAIN_CLAIM
#define ROUNDS 50
#else
#define ROUNDS 1
#endif

static pthread_barrier_t go;

static void *producer(void *arg)
{
	uint64_t p = (uint64_t)(uintptr_t)arg;
	pthread_barrier_wait(&go);
	for (uint64_t i = 0; i < PER_THREAD; i++)
		ORBIT_UINT64("shared", p << 32 | i);
	return NULL;
}

struct seen {
	uint8_t *hit; /* [THREADS * PER_THREAD] */
	uint64_t records, bad, ends;
};

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ring;
	(void)first;
	struct seen *s = ctx;
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record rec;
		int err = orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec);
		if (err == 0 && rec.kind == ORBIT_REC_THREAD_END) {
			s->ends++; /* each producer's last record */
			continue;
		}
		uint64_t p = rec.id >> 32, seq = rec.id & 0xffffffffu;
		if (err || rec.kind != ORBIT_REC_UINT64 || p >= THREADS || seq >= PER_THREAD ||
		    s->hit[p * PER_THREAD + seq]++) {
			s->bad++;
			continue;
		}
		s->records++;
	}
}

static void case_claims(void)
{
	/* One ring big enough for every event: nothing may be lapped. */
	setenv("ORBIT_RINGS", "1", 1);
	setenv("ORBIT_RING_BUDGET", "64M", 1);
	setenv("ORBIT_DRAIN_MS", "60000", 1); /* the test drains, not the agent */
	CHECK(orbit_init() == 0);
	const struct orbit__segment *seg = orbit__own_segment();
	CHECK(seg != NULL);
	CHECK(seg->layout.slots_per_ring >= THREADS * PER_THREAD);

	struct orbit__drain d;
	orbit__drain_init(&d, seg, 1);
	pthread_barrier_init(&go, NULL, THREADS);
	struct seen s = {.hit = calloc(THREADS * PER_THREAD, 1)};
	int intact = 1;
	/* One round proves the real claim; the broken one gets up to ROUNDS
	 * chances to collide (threads that happen not to overlap lose nothing). */
	for (int round = 0; round < ROUNDS && intact; round++) {
		uint64_t before = orbit__ring_claimed(seg, 0);
		memset(s.hit, 0, THREADS * PER_THREAD);
		s.records = s.bad = s.ends = 0;
		pthread_t t[THREADS];
		for (uintptr_t i = 0; i < THREADS; i++)
			CHECK(pthread_create(&t[i], NULL, producer, (void *)i) == 0);
		for (int i = 0; i < THREADS; i++)
			pthread_join(t[i], NULL);
		struct orbit__drain_result res;
		orbit__drain_all(&d, on_records, &s, &res);
		uint64_t claimed = orbit__ring_claimed(seg, 0) - before;
		printf("round %d: claimed %llu, delivered %llu, lost %llu, bad %llu\n", round,
		       (unsigned long long)claimed, (unsigned long long)s.records,
		       (unsigned long long)res.lost, (unsigned long long)s.bad);
		intact = claimed == THREADS * (PER_THREAD + 1) && /* no claim handed out twice */
		         s.bad == 0 && res.lost == 0 && s.ends == THREADS &&
		         s.records == THREADS * PER_THREAD; /* every event, once */
	}
#ifdef ORBIT_TEST_PLAIN_CLAIM
	/* The broken claim must be caught: this build passes only if the
	 * checks above found the events it lost. */
	printf(intact ? "the broken claim went unnoticed\n" : "the broken claim was caught\n");
	CHECK(!intact);
#else
	CHECK(intact);
#endif
	free(s.hit);
	orbit_shutdown();
}

static const struct test_case cases[] = {
    {"claims", case_claims},
};

TEST_MAIN(cases)
