/* page_ring_unit.c — single-thread (and a few two-thread) cases for the page
 * ring: every outcome of reserve/read/enable/disable, and each guarantee of
 * page_ring.c that one thread can observe (cited by number).
 * Usage: page_ring_unit CASE */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/page_util.h"

#define SMALL 256u /* a page of 240 record bytes: ten 20-byte payloads */

static uint8_t buf[ORBIT__PAGE_MAX_SIZE];

/* Collects the delivered records' sequences and times. */
struct seen {
	uint64_t seq[4096];
	uint64_t time[4096];
	uint32_t type_len[4096];
	uint32_t len[4096];
	size_t n;
};

static void collect(void *arg, const struct orbit__ftrace_record *rec)
{
	struct seen *s = arg;
	uint16_t writer;
	uint64_t seq;

	CHECK(payload_check(rec->data, rec->len, &writer, &seq) == 0);
	CHECK(s->n < 4096);
	s->seq[s->n] = seq;
	s->time[s->n] = rec->time;
	s->type_len[s->n] = rec->type_len;
	s->len[s->n] = rec->len;
	s->n++;
}

/* Reads one page and walks it; returns its record count, or -errno. */
static int read_page(struct orbit__page_ring *ring, struct seen *s,
                     struct orbit__ftrace_header *hdr)
{
	int r = orbit__page_read(ring, buf, sizeof(buf));

	if (r < 0)
		return r;
	CHECK_EQ_U64(r, orbit__page_size(ring));
	return (int)page_walk(buf, (uint32_t)r, collect, s, hdr);
}

static uint64_t drain(struct orbit__page_ring *ring, struct seen *s)
{
	uint64_t n = 0;
	int r;

	do {
		while ((r = read_page(ring, s, NULL)) > 0)
			n += (uint64_t)r;
		CHECK(r == -EAGAIN);
	} while (orbit__page_flush(ring, 0) == 1);
	return n;
}

static void case_roundtrip(void)
{
	struct orbit__page_ring *ring = make_ring(4, 4096, 0);
	struct orbit__page_reservation res[10];
	struct orbit__ftrace_header hdr;
	struct seen s = {0};

	for (int i = 0; i < 10; i++)
		CHECK(put_record(ring, 1, 20 + 19 * (uint32_t)i, (uint64_t)i, &res[i]) == 0);
	/* The tail page is not readable until it is closed. */
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EAGAIN);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(!hdr.missed);
	CHECK_EQ_U64(hdr.timestamp, res[0].time); /* guarantee 8 */
	for (int i = 0; i < 10; i++) {
		CHECK_EQ_U64(s.seq[i], (uint64_t)i);
		CHECK_EQ_U64(s.time[i], res[i].time); /* guarantee 7 */
	}
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EAGAIN);
	CHECK(orbit__page_flush(ring, 0) == 0); /* empty tail: nothing to do */
	orbit__page_destroy(ring);
}

static void case_invalid_size(void)
{
	struct orbit__page_ring *ring = make_ring(2, SMALL, 0);
	struct orbit__page_reservation res;
	uint32_t max = orbit__page_max_payload(ring);
	struct seen s = {0};

	CHECK_EQ_U64(max, SMALL - 24);
	CHECK(orbit__page_reserve(ring, 0, &res) == -EMSGSIZE);
	CHECK(orbit__page_reserve(ring, max + 1, &res) == -EMSGSIZE);
	CHECK(orbit__page_reserve(ring, UINT32_MAX, &res) == -EMSGSIZE);
	/* The largest record fits an empty page exactly. */
	CHECK(put_record(ring, 1, max, 7, NULL) == 0);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, NULL) == 1);
	CHECK_EQ_U64(s.len[0], max);
	CHECK_EQ_U64(s.type_len[0], 0);
	orbit__page_destroy(ring);
}

static void case_type0(void)
{
	struct orbit__page_ring *ring = make_ring(2, 4096, 0);
	struct seen s = {0};

	CHECK(put_record(ring, 1, 112, 1, NULL) == 0);
	CHECK(put_record(ring, 1, 113, 2, NULL) == 0);
	CHECK(put_record(ring, 1, 21, 3, NULL) == 0);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, NULL) == 3);
	CHECK_EQ_U64(s.type_len[0], 28);
	CHECK_EQ_U64(s.type_len[1], 0);
	CHECK_EQ_U64(s.len[1], 116);
	CHECK_EQ_U64(s.type_len[2], 6);
	orbit__page_destroy(ring);
}

static void case_disabled(void)
{
	struct orbit__page_config cfg = {.pages = 2, .page_size = SMALL, .clock = test_clock};
	struct orbit__page_ring *ring;
	struct orbit__page_reservation res;
	struct orbit__page_loss loss = {1, 1};

	CHECK(orbit__page_create(&ring, &cfg) == 0);
	CHECK(orbit__page_reserve(ring, 20, &res) == -ESHUTDOWN);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -ESHUTDOWN);
	CHECK(orbit__page_flush(ring, 0) == -ESHUTDOWN);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK(loss.records == 0 && loss.pages == 0);
	CHECK(orbit__page_enable(ring) == 0);
	CHECK(put_record(ring, 1, 20, 0, NULL) == 0);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK(orbit__page_reserve(ring, 20, &res) == -ESHUTDOWN);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -ESHUTDOWN);
	orbit__page_destroy(ring);

	cfg.pages = 1;
	CHECK(orbit__page_create(&ring, &cfg) == -EINVAL);
	cfg.pages = 2;
	cfg.page_size = 3000;
	CHECK(orbit__page_create(&ring, &cfg) == -EINVAL);
}

/* Guarantee 6 with overwrite off: Full is counted, the next page read has
 * bit 31 set, and reserved == read + lost. */
static void case_full(void)
{
	struct orbit__page_ring *ring = make_ring(3, SMALL, 0);
	struct orbit__page_loss loss;
	struct orbit__page_stats st;
	struct orbit__ftrace_header hdr;
	struct seen s = {0};
	uint64_t attempts = 0, ok = 0, seq = 0;
	int r;

	while ((r = put_record(ring, 1, 20, seq, NULL)) == 0) {
		attempts++;
		ok++;
		seq++;
	}
	attempts++;
	CHECK(r == -ENOSPC);
	CHECK_EQ_U64(ok, 30);
	CHECK(put_record(ring, 1, 20, seq, NULL) == -ENOSPC);
	attempts++;
	orbit__page_stats(ring, &st);
	CHECK_EQ_U64(st.full, 2);
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(hdr.missed); /* guarantee 6 */
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(!hdr.missed);
	/* Room again: the closed tail page moves on. */
	CHECK(put_record(ring, 1, 20, seq++, NULL) == 0);
	attempts++;
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK_EQ_U64(loss.records, 2 + 11);
	CHECK_EQ_U64(loss.pages, 2);
	CHECK_EQ_U64(attempts, s.n + loss.records);
	orbit__page_destroy(ring);
}

/* Guarantees 6 and 11 with overwrite on: the oldest pages are discarded and
 * counted, the first page read says so, the newest records survive. */
static void case_overwrite(void)
{
	struct orbit__page_ring *ring = make_ring(3, SMALL, 1);
	struct orbit__page_loss loss;
	struct orbit__page_stats st;
	struct orbit__ftrace_header hdr;
	struct seen s = {0};
	uint64_t n;

	for (uint64_t i = 0; i < 100; i++)
		CHECK(put_record(ring, 1, 20, i, NULL) == 0);
	orbit__page_stats(ring, &st);
	CHECK(st.overwritten_pages >= 6);
	CHECK_EQ_U64(st.overwritten_records, 10 * st.overwritten_pages);
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(hdr.missed);
	n = 10 + drain(ring, &s);
	CHECK_EQ_U64(s.seq[s.n - 1], 99); /* newest kept */
	for (size_t i = 1; i < s.n; i++)
		CHECK_EQ_U64(s.seq[i], s.seq[i - 1] + 1); /* guarantee 5 */
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK_EQ_U64(100, n + loss.records);
	CHECK_EQ_U64(loss.pages, st.overwritten_pages);
	orbit__page_destroy(ring);
}

/* Dropped: overwrite on, the oldest page still has a writer inside; the
 * writer that needs it drops its record at once (guarantee 13). */
static void case_dropped(void)
{
	struct orbit__page_ring *ring = make_ring(3, SMALL, 1);
	struct orbit__page_reservation held;
	struct orbit__page_loss loss;
	struct seen s = {0};
	uint64_t attempts = 1, n;
	int r = 0;

	CHECK(orbit__page_reserve(ring, 20, &held) == 0);
	payload_fill(held.data, 2, 20, 0);
	for (uint64_t i = 0; i < 100 && r == 0; i++, attempts++)
		r = put_record(ring, 1, 20, i, NULL);
	CHECK(r == -ENOBUFS);
	CHECK(put_record(ring, 1, 20, 1000, NULL) == -ENOBUFS);
	attempts++;
	orbit__page_commit(ring, &held);
	CHECK(put_record(ring, 1, 20, 1001, NULL) == 0); /* discards it now */
	attempts++;
	n = drain(ring, &s);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK_EQ_U64(attempts, n + loss.records);
	orbit__page_destroy(ring);
}

/* Reader paused while it owns the head: a second read is Busy and an
 * overwriting writer that needs the head drops (guarantees 11, 13). */
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static int gate_in, gate_open;

static void gate_hook(void *arg, enum orbit__page_hook_point point)
{
	(void)arg;
	if (point != ORBIT__PAGE_HOOK_READING)
		return;
	pthread_mutex_lock(&gate_mu);
	gate_in = 1;
	pthread_cond_broadcast(&gate_cv);
	while (!gate_open)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
}

static void *reader_thread(void *arg)
{
	static uint8_t page[SMALL];

	return (void *)(intptr_t)orbit__page_read(arg, page, sizeof(page));
}

static void case_busy(void)
{
	struct orbit__page_config cfg = {
	    .pages = 3, .page_size = SMALL, .overwrite = 1, .clock = test_clock, .hook = gate_hook};
	struct orbit__page_ring *ring;
	pthread_t t;
	void *ret;
	int r = 0;

	CHECK(orbit__page_create(&ring, &cfg) == 0);
	CHECK(orbit__page_enable(ring) == 0);
	for (uint64_t i = 0; i < 20; i++)
		CHECK(put_record(ring, 1, 20, i, NULL) == 0);
	CHECK(pthread_create(&t, NULL, reader_thread, ring) == 0);
	pthread_mutex_lock(&gate_mu);
	while (!gate_in)
		pthread_cond_wait(&gate_cv, &gate_mu);
	pthread_mutex_unlock(&gate_mu);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EBUSY);
	for (uint64_t i = 20; i < 100 && r == 0; i++)
		r = put_record(ring, 1, 20, i, NULL);
	CHECK(r == -ENOBUFS);
	pthread_mutex_lock(&gate_mu);
	gate_open = 1;
	pthread_cond_broadcast(&gate_cv);
	pthread_mutex_unlock(&gate_mu);
	CHECK(pthread_join(t, &ret) == 0);
	CHECK((intptr_t)ret == SMALL);
	orbit__page_destroy(ring);
}

static void case_small_buffer(void)
{
	struct orbit__page_ring *ring = make_ring(2, 4096, 0);

	CHECK(orbit__page_read(ring, buf, 4095) == -ERANGE);
	CHECK(orbit__page_read(ring, buf, 4096) == -EAGAIN);
	orbit__page_destroy(ring);
}

static int alloc_fail;

static void *flaky_alloc(size_t align, size_t size)
{
	if (alloc_fail-- > 0)
		return NULL;
	return aligned_alloc(align, size);
}

static void case_enable_oom(void)
{
	struct orbit__page_config cfg = {
	    .pages = 4, .page_size = 4096, .clock = test_clock, .alloc = flaky_alloc, .free = free};
	struct orbit__page_ring *ring;
	struct orbit__page_reservation res;

	CHECK(orbit__page_create(&ring, &cfg) == 0);
	alloc_fail = 1;
	CHECK(orbit__page_enable(ring) == -ENOMEM);
	CHECK(orbit__page_reserve(ring, 20, &res) == -ESHUTDOWN);
	alloc_fail = 0;
	CHECK(orbit__page_enable(ring) == 0);
	CHECK(put_record(ring, 1, 20, 0, NULL) == 0);
	/* Enabled again: no change, the record stays. */
	CHECK(orbit__page_enable(ring) == 0);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == 4096);
	orbit__page_destroy(ring);
}

/* Guarantee 10: disable counts what is left; enable starts from empty. */
static void case_reenable(void)
{
	struct orbit__page_ring *ring = make_ring(4, SMALL, 0);
	struct orbit__page_loss loss;
	struct seen s = {0};

	for (uint64_t i = 0; i < 25; i++)
		CHECK(put_record(ring, 1, 20, i, NULL) == 0);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK_EQ_U64(loss.records, 25);
	CHECK_EQ_U64(loss.pages, 3);
	CHECK(orbit__page_enable(ring) == 0);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EAGAIN);
	CHECK(orbit__page_flush(ring, 0) == 0);
	CHECK(put_record(ring, 1, 20, 1000, NULL) == 0);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, NULL) == 1);
	CHECK_EQ_U64(s.seq[0], 1000);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	CHECK_EQ_U64(loss.records, 0);
	orbit__page_destroy(ring);
}

/* Guarantee 9: disable waits for an outstanding reservation. */
struct held_arg {
	struct orbit__page_ring *ring;
	_Atomic int stage;
	_Atomic int disabled;
};

static void *holder_thread(void *p)
{
	struct held_arg *a = p;
	struct orbit__page_reservation res;

	CHECK(orbit__page_reserve(a->ring, 20, &res) == 0);
	atomic_store(&a->stage, 1);
	test_sleep_ms(200);
	payload_fill(res.data, 1, 20, 0);
	CHECK(atomic_load(&a->disabled) == 0);
	orbit__page_commit(a->ring, &res);
	return NULL;
}

static void *disabler_thread(void *p)
{
	struct held_arg *a = p;
	struct orbit__page_loss loss;

	CHECK(orbit__page_disable(a->ring, &loss) == 0);
	atomic_store(&a->disabled, 1);
	CHECK_EQ_U64(loss.records, 1);
	return NULL;
}

static void case_disable_waits(void)
{
	struct held_arg a = {.ring = make_ring(2, SMALL, 0)};
	struct orbit__page_reservation res;
	pthread_t h, d;

	CHECK(pthread_create(&h, NULL, holder_thread, &a) == 0);
	while (atomic_load(&a.stage) == 0)
		test_sleep_ms(1);
	CHECK(pthread_create(&d, NULL, disabler_thread, &a) == 0);
	test_sleep_ms(50);
	CHECK(atomic_load(&a.disabled) == 0);
	/* Closed to newcomers while it waits. */
	CHECK(orbit__page_reserve(a.ring, 20, &res) == -ESHUTDOWN);
	CHECK(pthread_join(h, NULL) == 0);
	CHECK(pthread_join(d, NULL) == 0);
	CHECK(atomic_load(&a.disabled) == 1);
	orbit__page_destroy(a.ring);
}

/* Guarantee 2: a page with an uncommitted record is not delivered. */
static void case_uncommitted(void)
{
	struct orbit__page_ring *ring = make_ring(3, SMALL, 0);
	struct orbit__page_reservation held;
	struct seen s = {0};

	CHECK(orbit__page_reserve(ring, 20, &held) == 0);
	for (uint64_t i = 1; i < 15; i++)
		CHECK(put_record(ring, 1, 20, i, NULL) == 0);
	CHECK(held.page == 0);
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EAGAIN);
	payload_fill(held.data, 1, 20, 0);
	orbit__page_commit(ring, &held);
	CHECK(read_page(ring, &s, NULL) == 10);
	for (size_t i = 0; i < 10; i++)
		CHECK_EQ_U64(s.seq[i], i);
	orbit__page_destroy(ring);
}

/* Guarantee 7: gaps over 27 bits get a TIME_EXTEND and decode exactly. */
static void case_time_extend(void)
{
	static const uint64_t gaps[] = {0, 200000000ull,     134217726ull, 134217728ull,
	                                5, 3600000000000ull, (1ull << 44), 1};
	struct orbit__page_ring *ring = make_ring(2, 4096, 0);
	struct orbit__page_reservation res[8];
	struct orbit__ftrace_header hdr;
	struct seen s = {0};
	uint32_t bytes = 0;

	for (int i = 0; i < 8; i++) {
		test_clock_jump(gaps[i]);
		CHECK(put_record(ring, 1, 20, (uint64_t)i, &res[i]) == 0);
		CHECK(res[i].page == 0);
		bytes += 24 + (res[i].delta >= (1u << 27) ? 8 : 0);
		if (i > 0)
			CHECK_EQ_U64(res[i].time - res[i - 1].time, res[i].delta);
	}
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, &hdr) == 8);
	CHECK_EQ_U64(hdr.size, bytes); /* three TIME_EXTENDs, 8 bytes each */
	CHECK_EQ_U64(bytes, 8 * 24 + 4 * 8);
	for (int i = 0; i < 8; i++)
		CHECK_EQ_U64(s.time[i], res[i].time);
	orbit__page_destroy(ring);
}

/* A settable clock that may go backwards. */
static uint64_t fixed_ns;

static uint64_t fixed_clock(void *arg)
{
	(void)arg;
	return fixed_ns;
}

/* Long gaps start a new page; small backward steps keep delta 0. */
static void case_time_gaps(void)
{
	struct orbit__page_config cfg = {.pages = 5, .page_size = 4096, .clock = fixed_clock};
	struct orbit__page_ring *ring;
	struct orbit__page_reservation r[5];
	struct seen s = {0};

	CHECK(orbit__page_create(&ring, &cfg) == 0);
	CHECK(orbit__page_enable(ring) == 0);
	fixed_ns = 1ull << 50;
	CHECK(put_record(ring, 1, 20, 0, &r[0]) == 0);
	fixed_ns -= 50; /* a clock not monotonic across CPUs */
	CHECK(put_record(ring, 1, 20, 1, &r[1]) == 0);
	CHECK(r[1].page == 0 && r[1].delta == 0 && r[1].time == r[0].time);
	fixed_ns += 50 + (1ull << 45); /* 9.7 hours idle */
	CHECK(put_record(ring, 1, 20, 2, &r[2]) == 0);
	CHECK(r[2].page == 1 && r[2].delta == 0 && r[2].time == fixed_ns);
	fixed_ns -= 1ull << 28; /* far backwards: new page too */
	CHECK(put_record(ring, 1, 20, 3, &r[3]) == 0);
	CHECK(r[3].page == 2);
	fixed_ns += 1ull << 46; /* a whole wrap of the 46 stored bits */
	CHECK(put_record(ring, 1, 20, 4, &r[4]) == 0);
	CHECK(r[4].page == 3);
	CHECK(orbit__page_flush(ring, 0) == 1);
	for (int p = 0; p < 4; p++)
		CHECK(read_page(ring, &s, NULL) > 0);
	for (int i = 0; i < 5; i++)
		CHECK_EQ_U64(s.time[i], r[i].time);
	orbit__page_destroy(ring);
}

/* Flush: only pages old enough; a full ring's closed tail moves on once a
 * read makes room. */
static void case_flush(void)
{
	struct orbit__page_ring *ring = make_ring(2, SMALL, 0);
	struct orbit__page_stats st;
	struct orbit__ftrace_header hdr;
	struct seen s = {0};
	uint64_t seq = 0;

	CHECK(put_record(ring, 1, 20, seq++, NULL) == 0);
	CHECK(orbit__page_flush(ring, 100000000) == 0);
	test_clock_jump(100000000);
	CHECK(orbit__page_flush(ring, 100000000) == 1);
	CHECK(read_page(ring, &s, &hdr) == 1);
	CHECK_EQ_U64(hdr.size, 24); /* guarantee 1 on a partly empty page */
	orbit__page_stats(ring, &st);
	CHECK_EQ_U64(st.pages_flushed, 1);

	while (put_record(ring, 1, 20, seq, NULL) == 0)
		seq++;
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(hdr.missed); /* guarantee 6 */
	/* The tail page is closed but cannot move until now. */
	CHECK(orbit__page_read(ring, buf, sizeof(buf)) == -EAGAIN);
	CHECK(orbit__page_flush(ring, 0) == 1);
	CHECK(read_page(ring, &s, &hdr) == 10);
	CHECK(!hdr.missed);
	CHECK(orbit__page_flush(ring, 0) == 0);
	CHECK_EQ_U64(s.n, seq);
	orbit__page_destroy(ring);
}

/* Guarantee 5: pages come out in ring order, each record once. */
static void case_order(void)
{
	struct orbit__page_ring *ring = make_ring(8, SMALL, 0);
	struct seen s = {0};

	for (uint64_t i = 0; i < 2000; i++) {
		CHECK(put_record(ring, 1, 20 + (uint32_t)(i % 90), i, NULL) == 0);
		if (i % 5 == 0)
			while (read_page(ring, &s, NULL) > 0)
				;
	}
	drain(ring, &s);
	CHECK_EQ_U64(s.n, 2000);
	for (size_t i = 0; i < s.n; i++)
		CHECK_EQ_U64(s.seq[i], i);
	orbit__page_destroy(ring);
}

static const struct test_case cases[] = {
    {"roundtrip", case_roundtrip},
    {"invalid_size", case_invalid_size},
    {"type0", case_type0},
    {"disabled", case_disabled},
    {"full", case_full},
    {"overwrite", case_overwrite},
    {"dropped", case_dropped},
    {"busy", case_busy},
    {"small_buffer", case_small_buffer},
    {"enable_oom", case_enable_oom},
    {"reenable", case_reenable},
    {"disable_waits", case_disable_waits},
    {"uncommitted", case_uncommitted},
    {"time_extend", case_time_extend},
    {"time_gaps", case_time_gaps},
    {"flush", case_flush},
    {"order", case_order},
};

TEST_MAIN(cases)
