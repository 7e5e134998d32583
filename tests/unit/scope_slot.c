/*
 * scope_slot.c — the slot protocol against late producers, deterministically
 *. One ring of
 * 16 slots in a segment of this process; producer P, a thread of its own,
 * claims a slot with the write path's inline functions (orbit.h) and is held
 * on a barrier, while the main thread laps the ring with the same functions;
 * the test drains at chosen points. Cases:
 *   torn        after the lap P writes its whole record over the newer one in
 *               its slot, not yet its stamp: that claim must not be delivered
 *               as the newer record; then P's stamp lands: no stall.
 *   torn_word   the same with one word of P's record (P descheduled in the
 *               middle of its stores).
 *   stale_stamp P writes and publishes after the lap, before any drain: the
 *               drain must not wait on the claim P's stamp covered (it used
 *               to stall there until the 30 s backstop), and delivers P's
 *               record as P's own claim or not at all.
 *   reorder     the next lap's payload becomes visible before its claim does
 *               (arm64 allows it: nothing orders the fetch_add before the
 *               payload stores): the record being copied then must not be
 *               delivered with that word.
 *   site_mix    producer A (a call site, flag bit 2) stores its time and id
 *               and is preempted; B laps into the slot with another call
 *               site and publishes; A resumes with its meta and site words.
 *               The tids and the sites are chosen so that A's meta word xor
 *               its site is B's: the copy (B's stamp, B's time and id, A's
 *               tid and site) must not pass the check, nor A's stamp later.
 * In every case each record delivered is the one its producer wrote for that
 * claim, claims come in order, the ring is not left stalled, and claimed ==
 * drained + lost.
 */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"
#include "record.h"
#include "scope_ring.h"
#include "segment_create.h"

#define SLOTS 16u
#define P_ID 0x1a7e1a7e1a7e1a7eull
#define P_TIME 0x7777777777ull

/* The same test builds against the protocol before the check in the stamp
 * (orbit__fill returned nothing, orbit__publish took no check). */
static uint64_t fill(struct orbit__slot *s, uint64_t time, uint8_t kind, uint64_t id, uint32_t tid,
                     const char *name, size_t len)
{
#ifdef ORBIT__STAMP_CHECKED
	return orbit__fill(s, time, kind, id, tid, name, len);
#else
	orbit__fill(s, time, kind, id, tid, name, len);
	return 0;
#endif
}

static void publish(struct orbit__slot *s, uint64_t claim, uint64_t check)
{
#ifdef ORBIT__STAMP_CHECKED
	orbit__publish(s, claim, check);
#else
	(void)check;
	orbit__publish(s, claim);
#endif
}

/* What main writes for claim c. */
static uint64_t time_of(uint64_t c)
{
	return 1000000 + c * 1000;
}
static uint64_t id_of(uint64_t c)
{
	return c * 0x9e3779b97f4a7c15ull;
}
static void name_of(uint64_t c, char name[32])
{
	for (int i = 0; i < 32; i++)
		name[i] = (char)('a' + (c * 7 + (uint64_t)i * 3) % 26);
}

static struct orbit__segment seg;
static struct orbit__thread tm, tp; /* main's and P's write state */
static pthread_barrier_t step;
static const char *mode;

static void main_event(uint64_t expect_claim)
{
	uint64_t claim;
	char name[32];
	struct orbit__slot *s = orbit__claim(&tm, &claim);
	CHECK_EQ_U64(claim, expect_claim);
	name_of(claim, name);
	publish(s, claim,
	        fill(s, time_of(claim), ORBIT__VALUE_UINT64, id_of(claim), tm.tid, name, 32));
}

/* P: claim, wait while main laps, then write (as the case says), wait, and
 * publish. */
static void *producer(void *arg)
{
	(void)arg;
	uint64_t claim;
	struct orbit__slot *s = orbit__claim(&tp, &claim);
	CHECK_EQ_U64(claim, 0);
	pthread_barrier_wait(&step); /* 1: claimed */
	pthread_barrier_wait(&step); /* 2: main lapped the ring */
	uint64_t check = 0;
	if (strcmp(mode, "torn_word") == 0)
		ORBIT__STORE_RELAXED(&s->time, P_TIME); /* the first of its stores */
	else
		check = fill(s, P_TIME, ORBIT__VALUE_UINT64, P_ID, tp.tid, "late", 4);
	pthread_barrier_wait(&step); /* 3: written, not published */
	pthread_barrier_wait(&step); /* 4: the drain looked */
	if (strcmp(mode, "torn_word") == 0)
		check = fill(s, P_TIME, ORBIT__VALUE_UINT64, P_ID, tp.tid, "late", 4);
	publish(s, claim, check);
	pthread_barrier_wait(&step); /* 5: published */
	return NULL;
}

struct seen {
	uint64_t next;        /* claims come in order */
	uint64_t records, p;  /* delivered; P's among them */
	uint64_t p_claim_bad; /* P's record under another claim than its own */
	uint64_t bad;         /* a record that is not what its claim's producer wrote */
};

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	struct seen *s = ctx;
	CHECK_EQ_U64(ring, 0);
	CHECK(first >= s->next);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t c = first + i;
		struct orbit_record rec;
		CHECK(orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec) == 0);
		s->records++;
		if (rec.id == P_ID && rec.time == P_TIME && rec.len == 4 &&
		    memcmp(rec.name, "late", 4) == 0) {
			s->p++;
			if (c != 0)
				s->p_claim_bad++;
			continue;
		}
		char want[32];
		name_of(c, want);
		if (rec.time != time_of(c) || rec.id != id_of(c) || rec.tid != tm.tid ||
		    rec.len != 32 || memcmp(rec.name, want, 32) != 0) {
			fprintf(stderr,
			        "claim %llu: time %llu id %llx tid %u: not what was written\n",
			        (unsigned long long)c, (unsigned long long)rec.time,
			        (unsigned long long)rec.id, rec.tid);
			s->bad++;
		}
	}
	s->next = first + n;
}

static void drain(struct orbit__drain *d, struct seen *seen, struct orbit__drain_result *res)
{
	orbit__drain_all(d, on_records, seen, res);
	const struct orbit__ring_state *rs = &d->ring[0];
	printf("%s: cursor %llu next %llu drained %llu lapped %llu backstop %llu stalled %d\n",
	       mode, (unsigned long long)orbit__ring_claimed(&seg, 0), (unsigned long long)rs->next,
	       (unsigned long long)rs->drained, (unsigned long long)rs->lost_lapped,
	       (unsigned long long)rs->lost_backstop, rs->stalled);
}

static void check_end(const struct orbit__drain *d, const struct seen *seen,
                      const struct orbit__drain_result *res)
{
	const struct orbit__ring_state *rs = &d->ring[0];
	uint64_t claimed = orbit__ring_claimed(&seg, 0);
	CHECK_EQ_U64(seen->bad, 0);
	CHECK_EQ_U64(seen->p_claim_bad, 0);
	CHECK(!rs->stalled);
	CHECK_EQ_U64(res->stalled_rings, 0);
	CHECK_EQ_U64(rs->next, claimed);
	CHECK_EQ_U64(claimed, rs->drained + orbit__ring_lost(rs)); /* guarantee 4 */
	CHECK_EQ_U64(rs->drained, seen->records);
	CHECK_EQ_U64(rs->lost_backstop + rs->lost_dead, 0);
}

static void case_late(void)
{
	pthread_t p;
	CHECK(pthread_create(&p, NULL, producer, NULL) == 0);
	pthread_barrier_wait(&step); /* 1: P claimed 0 */
	for (uint64_t c = 1; c <= SLOTS; c++)
		main_event(c); /* claim 16 is slot 0's next lap */
	int stale = strcmp(mode, "stale_stamp") == 0;
	struct orbit__drain d;
	struct orbit__drain_result res;
	struct seen seen = {0};
	orbit__drain_init(&d, &seg, 1);
	pthread_barrier_wait(&step); /* 2: lapped */
	pthread_barrier_wait(&step); /* 3: P wrote over claim 16's record */
	if (!stale) {
		drain(&d, &seen, &res); /* P's stamp has not landed */
		CHECK_EQ_U64(seen.bad, 0);
		CHECK_EQ_U64(seen.p, 0); /* not published: never delivered */
	}
	pthread_barrier_wait(&step); /* 4 */
	pthread_barrier_wait(&step); /* 5: P's stamp landed */
	CHECK(pthread_join(p, NULL) == 0);
	drain(&d, &seen, &res);
	check_end(&d, &seen, &res); /* not stalled on the stamp P left */
	/* The ring goes on: another lap, all delivered. */
	uint64_t cursor = orbit__ring_claimed(&seg, 0);
	for (uint64_t c = cursor; c < cursor + SLOTS; c++)
		main_event(c);
	uint64_t before = seen.records;
	drain(&d, &seen, &res);
	check_end(&d, &seen, &res);
	CHECK_EQ_U64(seen.records - before, SLOTS);
}

static void case_reorder(void)
{
	for (uint64_t c = 0; c < 10; c++)
		main_event(c);
	/* Claim 16's producer (slot 0, next lap): its first payload store is
	 * visible, its fetch_add and marker not yet. */
	struct orbit__ring *r = orbit__segment_ring(&seg, 0);
	ORBIT__STORE_RELAXED(&r->slots[0].time, P_TIME);
	struct orbit__drain d;
	struct orbit__drain_result res;
	struct seen seen = {0};
	orbit__drain_init(&d, &seg, 1);
	drain(&d, &seen, &res);
	check_end(&d, &seen, &res);
	CHECK_EQ_U64(seen.records, 9); /* claim 0 is lost, not delivered torn */
}

/* Two call sites side by side: their addresses differ in a few low bits. */
static const struct orbit__site mix_sites[2] = {
    {ORBIT__SITE_MAGIC, __FILE__, "case_site_mix", __LINE__, 0},
    {ORBIT__SITE_MAGIC, __FILE__, "case_site_mix", __LINE__, 0}};

struct mix_seen {
	uint32_t tid_a;
	uint64_t records, of_a, torn;
};

static void on_mix(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	struct mix_seen *m = ctx;
	(void)ring;
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record rec;
		CHECK(orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec) == 0);
		m->records++;
		m->of_a += rec.tid == m->tid_a;
		/* B's record is delivered whole or not at all. */
		m->torn += first + i == SLOTS && (rec.time != time_of(SLOTS) || rec.tid != tm.tid);
	}
}

static void case_site_mix(void)
{
	const struct orbit__site *sa = &mix_sites[0], *sb = &mix_sites[1];
	struct orbit__thread ta = tp;
	ta.tid = tm.tid ^ (uint32_t)((uintptr_t)sa ^ (uintptr_t)sb);
	CHECK(ta.tid != tm.tid);
	/* meta(A) xor site(A) == meta(B) xor site(B): the words a check that
	 * folds the site into the meta word cannot tell apart. */
	CHECK_EQ_U64(orbit__meta(ta.tid, ORBIT__VALUE_UINT64, ORBIT__FLAG_SITE, 3) ^ (uintptr_t)sa,
	             orbit__meta(tm.tid, ORBIT__VALUE_UINT64, ORBIT__FLAG_SITE, 3) ^ (uintptr_t)sb);
	uint64_t ca, cb;
	struct orbit__slot *s = orbit__claim(&ta, &ca);
	CHECK_EQ_U64(ca, 0);
	ORBIT__STORE_RELAXED(&s->time, P_TIME); /* A's first two stores */
	ORBIT__STORE_RELAXED(&s->id, P_ID);
	for (uint64_t c = 1; c < SLOTS; c++)
		main_event(c);
	struct orbit__slot *sl = orbit__claim(&tm, &cb);
	CHECK(cb == SLOTS && sl == s);
	publish(
	    sl, cb,
	    orbit__fill_at(sl, time_of(cb), ORBIT__VALUE_UINT64, id_of(cb), tm.tid, sb, "mix", 3));
	/* A resumes: the rest of its stores, over B's record. */
	const uint64_t name[4] = {(uintptr_t)sa, orbit__word("mix", 3, 0), 0, 0};
	ORBIT__STORE_RELAXED(&s->meta,
	                     orbit__meta(ta.tid, ORBIT__VALUE_UINT64, ORBIT__FLAG_SITE, 3));
	for (int w = 0; w < 4; w++)
		ORBIT__STORE_RELAXED(&s->name[w], name[w]);
	struct orbit__drain d;
	struct orbit__drain_result res;
	struct mix_seen m = {.tid_a = ta.tid};
	orbit__drain_init(&d, &seg, 1);
	orbit__drain_all(&d, on_mix, &m, &res);
	CHECK_EQ_U64(m.of_a, 0);
	CHECK_EQ_U64(m.torn, 0);
	/* A's stamp lands: its check covers its own time and id, not B's. */
	publish(s, ca,
	        orbit__check(P_TIME, P_ID,
	                     orbit__meta(ta.tid, ORBIT__VALUE_UINT64, ORBIT__FLAG_SITE, 3), name));
	for (uint64_t c = SLOTS + 1; c < 2 * SLOTS; c++)
		main_event(c);
	orbit__drain_all(&d, on_mix, &m, &res);
	const struct orbit__ring_state *rs = &d.ring[0];
	printf("site_mix: delivered %llu, of A %llu, torn %llu, lost %llu\n",
	       (unsigned long long)m.records, (unsigned long long)m.of_a,
	       (unsigned long long)m.torn, (unsigned long long)orbit__ring_lost(rs));
	CHECK_EQ_U64(m.of_a, 0);
	CHECK_EQ_U64(m.torn, 0);
	CHECK_EQ_U64(orbit__ring_claimed(&seg, 0), rs->drained + orbit__ring_lost(rs));
	CHECK_EQ_U64(rs->drained, m.records);
}

/* The cases; mode is the one running. */
static const struct slot_case {
	const char *name;
	void (*run)(void);
} slot_cases[] = {
    {"torn", case_late},       {"torn_word", case_late},    {"stale_stamp", case_late},
    {"reorder", case_reorder}, {"site_mix", case_site_mix},
};

static void run_case(const void *entry)
{
	const struct slot_case *c = entry;
	mode = c->name;
	struct orbit__seg_params p = {.ring_count = 1, .slots_per_ring = SLOTS, .clock_source = 0};
	CHECK(orbit__segment_create(&p, &seg) == 0);
	orbit__segment_unlink(&seg);
	CHECK(orbit__segment_ring_reserve(&seg, 0) == 0); /* as a thread's attach does */
	struct orbit__ring *r = orbit__segment_ring(&seg, 0);
	tm = (struct orbit__thread){
	    .ring = r, .mask = SLOTS - 1, .tid = (uint32_t)syscall(SYS_gettid)};
	tp = (struct orbit__thread){.ring = r, .mask = SLOTS - 1, .tid = tm.tid + 1};
	CHECK(pthread_barrier_init(&step, NULL, 2) == 0);
	c->run();
	orbit__segment_close(&seg);
}

TEST_MAIN_SUITE(.family = TEST_FAMILY(slot_cases, run_case))
