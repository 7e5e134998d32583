/*
 * scope_overflow.c — producers lap a small ring while the test drains it
 * concurrently: claimed == drained + lost exactly (scope_ring.c guarantee 4),
 * every delivered record is intact (guarantee 2: its name bytes derive from
 * its id) and each producer's records come in its own order (guarantee 3).
 *
 *   scope_overflow lapped [THREADS] (producers, 1 by default)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "harness.h"
#include "orbit.h"
#include "producers.h"
#include "record.h"
#include "scope_ring.h"
#include "segment_create.h"

#define PER_THREAD 1000000u
#define MAX_THREADS 4

static atomic_int running;
static const char *threads_arg; /* producers; 1 when not given */

/* A name that fills a value's record: the name area after the call site. */
#define NAME_LEN (ORBIT_RECORD_NAME - ORBIT_RECORD_SITE)

static void name_of(uint64_t id, char name[NAME_LEN])
{
	for (int i = 0; i < (int)NAME_LEN; i++)
		name[i] = (char)('a' + (id * 7 + (uint64_t)i) % 26);
}

static void *producer(void *arg)
{
	uint64_t p = (uint64_t)(uintptr_t)arg;
	char name[33];
	for (uint64_t i = 0; i < PER_THREAD; i++) {
		uint64_t id = p << 32 | i;
		name_of(id, name);
		name[NAME_LEN] = '\0';
		ORBIT_UINT64(name, id);
	}
	atomic_fetch_sub(&running, 1);
	return NULL;
}

struct seen {
	uint64_t records, bad, out_of_order, ends;
	int64_t last[MAX_THREADS];
};

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ring;
	(void)first;
	struct seen *s = ctx;
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record rec;
		char want[NAME_LEN];
		const uint8_t *nm;
		int err = orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec);
		if (err == 0 && rec.kind == ORBIT_REC_THREAD_END && rec.id == 0 && rec.len == 0) {
			s->ends++; /* a producer's last record, if not lapped */
			continue;
		}
		uint64_t p = rec.id >> 32, seq = rec.id & 0xffffffffu;
		name_of(rec.id, want);
		if (err || rec.kind != ORBIT_REC_UINT64 || p >= MAX_THREADS ||
		    rec.len != NAME_LEN || orbit__record_head_name(&rec, &nm) != NAME_LEN ||
		    memcmp(nm, want, NAME_LEN) != 0) {
			s->bad++;
			continue;
		}
		if ((int64_t)seq <= s->last[p])
			s->out_of_order++;
		s->last[p] = (int64_t)seq;
		s->records++;
	}
}

static void case_lapped(void)
{
	int threads = threads_arg ? atoi(threads_arg) : 1;
	CHECK(threads >= 1 && threads <= MAX_THREADS);
	setenv("ORBIT_RINGS", "1", 1);
	setenv("ORBIT_RING_BUDGET", "4096", 1); /* 64 slots */
	setenv("ORBIT_DRAIN_MS", "60000", 1);
	CHECK(orbit_init() == 0);
	const struct orbit__segment *seg = orbit__own_segment();
	CHECK(seg != NULL && seg->layout.slots_per_ring == 64);

	struct seen s = {.records = 0};
	for (int i = 0; i < MAX_THREADS; i++)
		s.last[i] = -1;
	struct orbit__drain d;
	struct orbit__drain_result res;
	orbit__drain_init(&d, seg, 1);
	pthread_t t[MAX_THREADS];
	atomic_store(&running, threads);
	for (uintptr_t i = 0; i < (uintptr_t)threads; i++)
		CHECK(pthread_create(&t[i], NULL, producer, (void *)i) == 0);
	while (atomic_load(&running) > 0)
		orbit__drain_all(&d, on_records, &s, &res);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	orbit__drain_all(&d, on_records, &s, &res);

	const struct orbit__ring_state *rs = &d.ring[0];
	uint64_t claimed = orbit__ring_claimed(seg, 0);
	printf("claimed %llu drained %llu lost %llu (lapped %llu) bad %llu\n",
	       (unsigned long long)claimed, (unsigned long long)rs->drained,
	       (unsigned long long)orbit__ring_lost(rs), (unsigned long long)rs->lost_lapped,
	       (unsigned long long)s.bad);
	CHECK_EQ_U64(claimed, (uint64_t)threads * (PER_THREAD + 1)); /* + each thread's end */
	CHECK_EQ_U64(claimed, rs->drained + orbit__ring_lost(rs));
	CHECK_EQ_U64(rs->drained, s.records + s.ends);
	CHECK(s.ends <= (uint64_t)threads);
	CHECK(rs->lost_lapped > 0); /* the ring is far smaller than the stream */
	CHECK_EQ_U64(rs->lost_dead + rs->lost_backstop, 0);
	CHECK_EQ_U64(s.bad, 0);
	CHECK_EQ_U64(s.out_of_order, 0);
	orbit_shutdown();
}

static const struct test_case cases[] = {
    {"lapped", case_lapped},
};

TEST_MAIN_WITH(cases, .args = "[THREADS]", .arg = &threads_arg)
