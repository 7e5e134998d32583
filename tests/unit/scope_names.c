/*
 * scope_names.c — names, nesting, attributes and values survive the whole
 * in-process path ("Names" in Tests): the macros of orbit.h
 * write records, the agent drains them into a test sink, and the records go
 * through format/'s reconstructor. Every name must come back byte-exact
 * (longer than ORBIT_NAME_MAX: cut to it), every scope at its depth, every
 * color, group id and value bit as written, with nothing lost.
 *
 * Usage: scope_names CASE (one ctest entry per case).
 *
 * Expectations are listed in the order the reconstructor reports events: a
 * value or thread name when its record (and continuations) is complete, a
 * scope or span when it stops, so inner scopes before outer ones.
 */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "api_capture.h"
#include "harness.h"
#include "orbit.h"
#include "producers.h"
#include "reconstruct.h"
#include "record.h"
#include "segment_create.h"

/* The capture (api_capture.h): every record, in each ring's claim order. */

static uint64_t t_begin;

static void start_capture_rings(const char *rings)
{
	/* Big rings: nothing this test writes can be lapped. */
	setenv("ORBIT_RINGS", rings, 1);
	setenv("ORBIT_RING_BUDGET", "16M", 1);
	capture_install(); /* first: every drain pass hands its records to it */
	CHECK_EQ_U64(orbit_init(), 0);
	t_begin = test_now_ns(CLOCK_MONOTONIC);
}

/* One ring: every thread's records in one claim order. */
static void start_capture(void)
{
	start_capture_rings("1");
}

/* ---- what the test expects ---------------------------------------------- */

struct expect {
	enum orbit_event_type type;
	const char *name;
	size_t name_len;
	uint32_t depth;
	int has_attrs;
	uint32_t color;
	uint64_t group;
	uint8_t value_kind;
	uint64_t value_bits; /* value bits; async span id */
	uint32_t tid, end_tid;
	int unfinished;      /* its stop never comes: it ends at ... */
	uint64_t open_after; /* ... a time (open_until) no earlier than this */
};

static struct expect *exps;
static size_t nexp, capexp;

static uint32_t my_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}

static struct expect *expect_add(enum orbit_event_type type, const char *name, size_t len)
{
	if (nexp == capexp) {
		capexp = capexp ? capexp * 2 : 256;
		exps = realloc(exps, capexp * sizeof *exps);
		CHECK(exps != NULL);
	}
	struct expect *e = &exps[nexp++];
	memset(e, 0, sizeof *e);
	e->type = type;
	e->name = name;
	e->name_len = len > ORBIT_NAME_MAX ? ORBIT_NAME_MAX : len;
	e->tid = e->end_tid = my_tid();
	return e;
}

static const char *type_name(int t)
{
	switch (t) {
	case ORBIT_EVENT_SCOPE:
		return "scope";
	case ORBIT_EVENT_ASYNC:
		return "async";
	case ORBIT_EVENT_VALUE:
		return "value";
	case ORBIT_EVENT_THREAD_NAME:
		return "thread name";
	}
	return "?";
}

static void fail_event(size_t i, const char *what)
{
	const struct expect *e = &exps[i];
	const struct capture_event *ev = capture_get(i);
	size_t diff = 0;
	while (diff < e->name_len && diff < ev->name_len && e->name[diff] == ev->name[diff])
		diff++;
	fprintf(
	    stderr,
	    "event %zu: %s differs\n"
	    "  want %s depth %u name_len %zu attrs %d color %08x group %llu kind %u bits %016llx\n"
	    "  got  %s depth %u name_len %zu attrs %d color %08x group %llu kind %u bits %016llx"
	    " id %llu unfinished %d incomplete %d\n"
	    "  names agree on their first %zu bytes; want starts \"%.40s\"\n",
	    i, what, type_name(e->type), e->depth, e->name_len, e->has_attrs, e->color,
	    (unsigned long long)e->group, e->value_kind, (unsigned long long)e->value_bits,
	    type_name(ev->type), ev->depth, ev->name_len, ev->has_attrs, ev->color,
	    (unsigned long long)ev->group, ev->value_kind, (unsigned long long)ev->value_bits,
	    (unsigned long long)ev->id, ev->unfinished, ev->name_incomplete, diff, e->name);
	exit(1);
}

/* Flushes, checks nothing was lost, reconstructs, and compares event by
 * event with the expectations. */
static void finish_and_check(void)
{
	struct capture_stats st;
	/* The sink's batches, as a capture carries them, reconstructed. */
	CHECK_EQ_U64(capture_collect(&st), 0);
	uint64_t t_end = test_now_ns(CLOCK_MONOTONIC);
	CHECK_EQ_U64(st.lost, 0);
	CHECK_EQ_U64(st.drained, st.claimed);
	CHECK_EQ_U64(st.stalled_rings, 0);
	CHECK_EQ_U64(st.sink_gaps, 0); /* no claim skipped on its way to the sink */
	CHECK_EQ_U64(st.records, st.claimed);
	size_t want_unfinished = 0;
	for (size_t i = 0; i < nexp; i++)
		want_unfinished += exps[i].unfinished != 0;
	CHECK_EQ_U64(st.bad_records, 0); /* every record decodes */
	CHECK_EQ_U64(st.unmatched_stops, 0);
	CHECK_EQ_U64(st.unfinished, want_unfinished);
	CHECK_EQ_U64(st.incomplete_names, 0);
	CHECK_EQ_U64(st.orphan_continuations, 0);
	CHECK_EQ_U64(st.gaps, 0);
	CHECK_EQ_U64(st.reconstructed, st.claimed);
	size_t ngot = capture_count();

	if (ngot != nexp)
		fprintf(stderr, "%zu events reconstructed, %zu expected\n", ngot, nexp);
	for (size_t i = 0; i < ngot && i < nexp; i++) {
		const struct expect *e = &exps[i];
		const struct capture_event *ev = capture_get(i);
		if (ev->type != (int)e->type)
			fail_event(i, "type");
		if (ev->name_len != e->name_len || memcmp(ev->name, e->name, e->name_len) != 0)
			fail_event(i, "name");
		if (ev->unfinished != e->unfinished || ev->name_incomplete || ev->time_untrusted)
			fail_event(i, "completeness");
		if (ev->unfinished && (ev->end != ev->start || ev->open_until < e->open_after))
			fail_event(i, "how long it was open");
		if (ev->has_attrs != e->has_attrs || ev->color != e->color || ev->group != e->group)
			fail_event(i, "color or group");
		if (ev->tid != e->tid || ev->end_tid != e->end_tid)
			fail_event(i, "thread");
		/* CLOCK_MONOTONIC ns from within the test (1 ms of slack for
		 * the conversion), and never ending before starting. */
		if (ev->start + 1000000 < t_begin || ev->end > t_end + 1000000 ||
		    ev->end < ev->start)
			fail_event(i, "time");
		switch (e->type) {
		case ORBIT_EVENT_SCOPE:
			if (ev->depth != e->depth)
				fail_event(i, "depth");
			break;
		case ORBIT_EVENT_ASYNC:
			if (ev->id != e->value_bits)
				fail_event(i, "async id");
			break;
		case ORBIT_EVENT_VALUE:
			if (ev->value_kind != e->value_kind || ev->value_bits != e->value_bits)
				fail_event(i, "value");
			break;
		case ORBIT_EVENT_THREAD_NAME:
			break;
		}
	}
	CHECK_EQ_U64(ngot, nexp);
	CHECK(nexp > 0);
}

/* ---- the names ----------------------------------------------------------- */

struct name {
	const char *label;
	char *s;
	size_t len;
};

static char *filled(size_t len, unsigned seed)
{
	char *s = malloc(len + 1);
	CHECK(s != NULL);
	/* Printable, and no run repeats at a 32-byte period, so a misplaced
	 * continuation shows. */
	for (size_t i = 0; i < len; i++)
		s[i] = (char)('!' + (i * 7 + i / 32 + seed) % 94);
	s[len] = '\0';
	return s;
}

static char *dup_str(const char *s)
{
	size_t n = strlen(s);
	char *d = malloc(n + 1);
	CHECK(d != NULL);
	memcpy(d, s, n + 1);
	return d;
}

static char *concat(const char *a, const char *b)
{
	size_t na = strlen(a), nb = strlen(b);
	char *d = malloc(na + nb + 1);
	CHECK(d != NULL);
	memcpy(d, a, na);
	memcpy(d + na, b, nb + 1);
	return d;
}

static struct name names[32];
static size_t nnames;

static void add_name(const char *label, char *s)
{
	names[nnames++] = (struct name){label, s, strlen(s)};
}

static void make_names(void)
{
	add_name("empty", dup_str(""));
	add_name("1", dup_str("a"));
	add_name("20", filled(20, 1));
	add_name("21", filled(21, 2));
	add_name("31", filled(31, 3));
	add_name("32", filled(32, 4));
	add_name("33", filled(33, 5));
	add_name("52", filled(52, 6)); /* attrs: 20 inline + one whole continuation */
	add_name("53", filled(53, 7));
	add_name("64", filled(64, 8));
	add_name("65", filled(65, 9));
	add_name("1000", filled(1000, 10));
	add_name("65535", filled(ORBIT_NAME_MAX, 11));
	add_name("70000", filled(70000, 12)); /* cut to 65535 */
	add_name("utf8",
	         dup_str("na\xc3\xafve \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e "
	                 "\xf0\x9f\x9a\x80 \xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82 "
	                 "\xce\xb1\xce\xb2\xce\xb3"));
	/* A three-byte character across the 32-byte record boundary, and a
	 * two-byte one across the 20-byte boundary of the attrs path. */
	char *x31 = filled(31, 13), *x19 = filled(19, 14);
	add_name("utf8_split32", concat(x31, "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"));
	add_name("utf8_split20", concat(x19, "\xc3\xa9\xc3\xa9 \xf0\x9f\x9a\x80"));
	free(x31);
	free(x19);
	add_name("quotes", dup_str("say \"hi\" to 'them' \\ C:\\path\\ \\\" \\\\"));
	add_name("control", dup_str("line\nnext\ttab\x01\x02\x1b[0m\r\x7f end"));
	add_name("json", dup_str("{\"name\": \"x\\u0000\", </script>}"));
	char *long_ctrl = filled(100, 15);
	for (size_t i = 0; i < 100; i += 7)
		long_ctrl[i] = (char)(1 + i % 31); /* control bytes, none NUL */
	add_name("control_long", long_ctrl);
}

/* ---- cases --------------------------------------------------------------- */

/* ORBIT_START/STOP and ORBIT_SCOPE with every name, nested three deep. */
static void case_scopes(void)
{
	start_capture();
	ORBIT_START("outer");
	for (size_t i = 0; i < nnames; i++) {
		const char *n = names[i].s;
		ORBIT_START(n);
		{
			ORBIT_SCOPE(n);
			expect_add(ORBIT_EVENT_SCOPE, n, names[i].len)->depth = 2;
		}
		ORBIT_STOP();
		expect_add(ORBIT_EVENT_SCOPE, n, names[i].len)->depth = 1;
	}
	ORBIT_STOP();
	expect_add(ORBIT_EVENT_SCOPE, "outer", 5)->depth = 0;
	/* A string literal, straight into the macro. */
	{
		ORBIT_SCOPE("a literal, \"quoted\"\n");
	}
	expect_add(ORBIT_EVENT_SCOPE, "a literal, \"quoted\"\n", 20)->depth = 0;
	finish_and_check();
}

static const uint32_t colors[] = {0xff0000ffu, 0x00000000u, 0xffffffffu, 0x12345678u};
static const uint64_t groups[] = {1, 0, UINT64_MAX, 0x0123456789abcdefull};

/* The attrs path: color and group id take 12 of the 32 inline bytes. */
static void case_colors(void)
{
	start_capture();
	for (size_t i = 0; i < nnames; i++) {
		const char *n = names[i].s;
		const size_t len = names[i].len;
		const uint32_t c = colors[i % 4], c2 = colors[(i + 1) % 4];
		const uint64_t g = groups[i % 4];
		struct expect *e;
		ORBIT_START_WITH_COLOR(n, c);
		{
			ORBIT_SCOPE_WITH_COLOR(n, c2);
			{
				ORBIT_SCOPE_WITH_GROUP_AND_COLOR(n, g, c);
				e = expect_add(ORBIT_EVENT_SCOPE, n, len);
				e->depth = 2, e->has_attrs = 1, e->color = c, e->group = g;
			}
			e = expect_add(ORBIT_EVENT_SCOPE, n, len);
			e->depth = 1, e->has_attrs = 1, e->color = c2;
		}
		ORBIT_START_WITH_GROUP_AND_COLOR(n, g + 1, c2);
		ORBIT_STOP();
		e = expect_add(ORBIT_EVENT_SCOPE, n, len);
		e->depth = 1, e->has_attrs = 1, e->color = c2, e->group = g + 1;
		ORBIT_STOP();
		e = expect_add(ORBIT_EVENT_SCOPE, n, len);
		e->depth = 0, e->has_attrs = 1, e->color = c;

		ORBIT_START_ASYNC_WITH_COLOR(n, 1000 + i, c);
		ORBIT_STOP_ASYNC(1000 + i);
		e = expect_add(ORBIT_EVENT_ASYNC, n, len);
		e->value_bits = 1000 + i, e->has_attrs = 1, e->color = c;

		ORBIT_INT_WITH_COLOR(n, -5, c);
		e = expect_add(ORBIT_EVENT_VALUE, n, len);
		e->value_kind = ORBIT_REC_INT, e->value_bits = (uint64_t)-5;
		e->has_attrs = 1, e->color = c;
		ORBIT_DOUBLE_WITH_COLOR(n, 0.25, c2);
		e = expect_add(ORBIT_EVENT_VALUE, n, len);
		e->value_kind = ORBIT_REC_DOUBLE, e->value_bits = 0x3fd0000000000000ull;
		e->has_attrs = 1, e->color = c2;
	}
	/* Without color, no attrs. */
	{
		ORBIT_SCOPE("plain");
	}
	expect_add(ORBIT_EVENT_SCOPE, "plain", 5);
	finish_and_check();
}

static uint64_t f64_bits(double v)
{
	uint64_t b;
	memcpy(&b, &v, sizeof b);
	return b;
}

/* Every value kind, its extremes, and its bits as the format defines them:
 * INT and INT64 sign-extended, UINT zero-extended, FLOAT as the double of
 * the float. */
static void case_values(void)
{
	start_capture();
	struct expect *e;
#define VAL(macro, kind, v, bits)                                                                  \
	do {                                                                                       \
		for (size_t i_ = 0; i_ < nnames; i_ += 3) {                                        \
			macro(names[i_].s, v);                                                     \
			e = expect_add(ORBIT_EVENT_VALUE, names[i_].s, names[i_].len);             \
			e->value_kind = (kind), e->value_bits = (bits);                            \
		}                                                                                  \
	} while (0)
	VAL(ORBIT_INT, ORBIT_REC_INT, 0, 0);
	VAL(ORBIT_INT, ORBIT_REC_INT, -1, UINT64_MAX);
	VAL(ORBIT_INT, ORBIT_REC_INT, INT32_MIN, (uint64_t)(int64_t)INT32_MIN);
	VAL(ORBIT_INT, ORBIT_REC_INT, INT32_MAX, (uint64_t)INT32_MAX);
	VAL(ORBIT_INT64, ORBIT_REC_INT64, INT64_MIN, 0x8000000000000000ull);
	VAL(ORBIT_INT64, ORBIT_REC_INT64, INT64_MAX, 0x7fffffffffffffffull);
	VAL(ORBIT_INT64, ORBIT_REC_INT64, -2, 0xfffffffffffffffeull);
	VAL(ORBIT_UINT, ORBIT_REC_UINT, UINT32_MAX, 0xffffffffull);
	VAL(ORBIT_UINT, ORBIT_REC_UINT, 7u, 7u);
	VAL(ORBIT_UINT64, ORBIT_REC_UINT64, UINT64_MAX, UINT64_MAX);
	VAL(ORBIT_UINT64, ORBIT_REC_UINT64, 0x8000000000000001ull, 0x8000000000000001ull);
	VAL(ORBIT_FLOAT, ORBIT_REC_FLOAT, 1.5f, 0x3ff8000000000000ull);
	VAL(ORBIT_FLOAT, ORBIT_REC_FLOAT, -0.0f, 0x8000000000000000ull);
	VAL(ORBIT_FLOAT, ORBIT_REC_FLOAT, FLT_MAX, f64_bits((double)FLT_MAX));
	VAL(ORBIT_FLOAT, ORBIT_REC_FLOAT, 0.1f, f64_bits((double)0.1f));
	VAL(ORBIT_FLOAT, ORBIT_REC_FLOAT, (float)INFINITY, 0x7ff0000000000000ull);
	VAL(ORBIT_DOUBLE, ORBIT_REC_DOUBLE, 3.141592653589793, 0x400921fb54442d18ull);
	VAL(ORBIT_DOUBLE, ORBIT_REC_DOUBLE, -0.0, 0x8000000000000000ull);
	VAL(ORBIT_DOUBLE, ORBIT_REC_DOUBLE, DBL_TRUE_MIN, 1ull);
	VAL(ORBIT_DOUBLE, ORBIT_REC_DOUBLE, -INFINITY, 0xfff0000000000000ull);
	/* Arguments are converted as their macro says. */
	VAL(ORBIT_INT, ORBIT_REC_INT, (int64_t)0x100000005ll, 5u);
	VAL(ORBIT_UINT, ORBIT_REC_UINT, -1, 0xffffffffull);
	VAL(ORBIT_DOUBLE, ORBIT_REC_DOUBLE, 2, 0x4000000000000000ull);
#undef VAL
	/* NaN keeps its bits too. */
	double nan;
	uint64_t nan_bits = 0x7ff8000000000abcull;
	memcpy(&nan, &nan_bits, sizeof nan);
	ORBIT_DOUBLE("nan", nan);
	e = expect_add(ORBIT_EVENT_VALUE, "nan", 3);
	e->value_kind = ORBIT_REC_DOUBLE, e->value_bits = nan_bits;
	/* The color variants carry values the same way. */
	ORBIT_INT64_WITH_COLOR("i64", INT64_MIN, 0xabcdef01u);
	e = expect_add(ORBIT_EVENT_VALUE, "i64", 3);
	e->value_kind = ORBIT_REC_INT64, e->value_bits = 0x8000000000000000ull;
	e->has_attrs = 1, e->color = 0xabcdef01u;
	ORBIT_UINT_WITH_COLOR("u32", UINT32_MAX, 1u);
	e = expect_add(ORBIT_EVENT_VALUE, "u32", 3);
	e->value_kind = ORBIT_REC_UINT, e->value_bits = 0xffffffffull, e->has_attrs = 1,
	e->color = 1;
	ORBIT_UINT64_WITH_COLOR("u64", UINT64_MAX, 2u);
	e = expect_add(ORBIT_EVENT_VALUE, "u64", 3);
	e->value_kind = ORBIT_REC_UINT64, e->value_bits = UINT64_MAX, e->has_attrs = 1,
	e->color = 2;
	ORBIT_FLOAT_WITH_COLOR("f32", -1.5f, 3u);
	e = expect_add(ORBIT_EVENT_VALUE, "f32", 3);
	e->value_kind = ORBIT_REC_FLOAT, e->value_bits = 0xbff8000000000000ull;
	e->has_attrs = 1, e->color = 3;
	finish_and_check();
}

struct async_stop {
	uint64_t first, count;
	uint32_t tid;
};

static void *async_stopper(void *arg)
{
	struct async_stop *a = arg;
	a->tid = my_tid();
	for (uint64_t id = a->first; id < a->first + a->count; id++)
		ORBIT_STOP_ASYNC(id);
	return NULL;
}

/* Async spans with every name, ids at the extremes, stopped on this thread
 * and on another one. */
static void case_async(void)
{
	start_capture();
	const uint64_t ids[] = {0, 1, UINT64_MAX, 0x8000000000000000ull};
	for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
		ORBIT_START_ASYNC(names[i].s, ids[i]);
		ORBIT_STOP_ASYNC(ids[i]);
		expect_add(ORBIT_EVENT_ASYNC, names[i].s, names[i].len)->value_bits = ids[i];
	}
	/* Started here, stopped by another thread after all of them began. */
	const uint64_t base = 5000;
	for (size_t i = 0; i < nnames; i++)
		ORBIT_START_ASYNC(names[i].s, base + i);
	struct async_stop a = {.first = base, .count = nnames};
	pthread_t th;
	CHECK(pthread_create(&th, NULL, async_stopper, &a) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	CHECK(a.tid != my_tid());
	for (size_t i = 0; i < nnames; i++) {
		struct expect *e = expect_add(ORBIT_EVENT_ASYNC, names[i].s, names[i].len);
		e->value_bits = base + i;
		e->end_tid = a.tid;
	}
	finish_and_check();
}

/* A span started on one thread and stopped on another whose ring the agent
 * drains first, both within one drain pass: the sink then holds the stop
 * before the start. reconstruct.h lets rings interleave in any way, so the
 * span must still pair. */
struct ring_thread {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int cmd; /* 0 wait, 1 start the span, 2 stop it, 3 exit */
	int done;
	uint32_t tid;
};

static void *ring_worker(void *arg)
{
	struct ring_thread *w = arg;
	pthread_mutex_lock(&w->mu);
	w->tid = my_tid();
	pthread_cond_broadcast(&w->cv);
	for (;;) {
		while (w->cmd == 0)
			pthread_cond_wait(&w->cv, &w->mu);
		int cmd = w->cmd;
		w->cmd = 0;
		if (cmd == 1)
			ORBIT_START_ASYNC(names[11].s, 777);
		else if (cmd == 2)
			ORBIT_STOP_ASYNC(777);
		w->done++;
		pthread_cond_broadcast(&w->cv);
		if (cmd == 3)
			break;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void ring_worker_do(struct ring_thread *w, int cmd)
{
	pthread_mutex_lock(&w->mu);
	int done = w->done;
	w->cmd = cmd;
	pthread_cond_broadcast(&w->cv);
	while (w->done == done)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

static void case_async_rings(void)
{
	/* No timed drain: the flush below is the only pass. */
	setenv("ORBIT_DRAIN_MS", "60000", 1);
	start_capture_rings("16");
	const uint32_t rings = orbit__own_segment()->layout.ring_count;
	CHECK_EQ_U64(rings, 16);
	const uint32_t main_ring = orbit__ring_of_tid(my_tid(), rings);
	struct ring_thread w;
	pthread_t th;
	for (int tries = 0;; tries++) {
		CHECK(tries < 1000);
		memset(&w, 0, sizeof w);
		pthread_mutex_init(&w.mu, NULL);
		pthread_cond_init(&w.cv, NULL);
		CHECK(pthread_create(&th, NULL, ring_worker, &w) == 0);
		pthread_mutex_lock(&w.mu);
		while (w.tid == 0)
			pthread_cond_wait(&w.cv, &w.mu);
		pthread_mutex_unlock(&w.mu);
		if (orbit__ring_of_tid(w.tid, rings) != main_ring)
			break;
		ring_worker_do(&w, 3);
		pthread_join(th, NULL);
	}
	const uint32_t w_ring = orbit__ring_of_tid(w.tid, rings);
	struct expect *e = expect_add(ORBIT_EVENT_ASYNC, names[11].s, names[11].len);
	e->value_bits = 777;
	if (w_ring < main_ring) {
		/* The worker's ring is drained first: it stops. */
		ORBIT_START_ASYNC(names[11].s, 777);
		ring_worker_do(&w, 2);
		e->end_tid = w.tid;
	} else {
		/* This thread's ring is drained first: the worker starts. */
		ring_worker_do(&w, 1);
		ORBIT_STOP_ASYNC(777);
		e->tid = w.tid;
	}
	ring_worker_do(&w, 3);
	pthread_join(th, NULL);
	finish_and_check();
}

static void case_thread_names(void)
{
	start_capture();
	for (size_t i = 0; i < nnames; i++) {
		ORBIT_THREAD_NAME(names[i].s);
		expect_add(ORBIT_EVENT_THREAD_NAME, names[i].s, names[i].len);
	}
	finish_and_check();
}

/* Names are copied when the macro runs: a buffer reused right after each
 * call must not change what was recorded. */
static void case_runtime(void)
{
	start_capture();
	static char buf[200];
	char *want[40];
	for (int i = 0; i < 40; i++) {
		int n =
		    snprintf(buf, sizeof buf, "frame %d of %s/%0*d", i, "level\t\"x\"", i * 4, i);
		CHECK(n > 0 && (size_t)n < sizeof buf);
		want[i] = dup_str(buf);
		switch (i % 5) {
		case 0:
			ORBIT_START(buf);
			memset(buf, 'Z', sizeof buf - 1);
			ORBIT_STOP();
			expect_add(ORBIT_EVENT_SCOPE, want[i], strlen(want[i]));
			break;
		case 1: {
			{
				ORBIT_SCOPE_WITH_COLOR(buf, 0x11223344u);
				memset(buf, 'Y', sizeof buf - 1);
			}
			struct expect *e = expect_add(ORBIT_EVENT_SCOPE, want[i], strlen(want[i]));
			e->has_attrs = 1, e->color = 0x11223344u;
			break;
		}
		case 2: {
			ORBIT_UINT64(buf, (uint64_t)i);
			memset(buf, 'X', sizeof buf - 1);
			struct expect *e = expect_add(ORBIT_EVENT_VALUE, want[i], strlen(want[i]));
			e->value_kind = ORBIT_REC_UINT64, e->value_bits = (uint64_t)i;
			break;
		}
		case 3:
			ORBIT_THREAD_NAME(buf);
			memset(buf, 'W', sizeof buf - 1);
			expect_add(ORBIT_EVENT_THREAD_NAME, want[i], strlen(want[i]));
			break;
		case 4:
			ORBIT_START_ASYNC(buf, (uint64_t)i);
			memset(buf, 'V', sizeof buf - 1);
			ORBIT_STOP_ASYNC((uint64_t)i);
			expect_add(ORBIT_EVENT_ASYNC, want[i], strlen(want[i]))->value_bits =
			    (uint64_t)i;
			break;
		}
	}
	finish_and_check();
}

/* Depth is rebuilt from the order of starts and stops: 64 nested
 * ORBIT_STARTs (all the ids the thread keeps), 200 nested ORBIT_SCOPEs. */
static void nest_scopes(int level, int max)
{
	if (level == max)
		return;
	ORBIT_SCOPE(names[level % nnames].s);
	nest_scopes(level + 1, max);
	expect_add(ORBIT_EVENT_SCOPE, names[level % nnames].s, names[level % nnames].len)->depth =
	    (uint32_t)level;
}

static void case_deep(void)
{
	start_capture();
	for (int i = 0; i < 64; i++)
		ORBIT_START(names[i % nnames].s);
	for (int i = 63; i >= 0; i--) {
		ORBIT_STOP();
		expect_add(ORBIT_EVENT_SCOPE, names[i % nnames].s, names[i % nnames].len)->depth =
		    (uint32_t)i;
	}
	nest_scopes(0, 200);
	/* Siblings come back at the same depth. */
	ORBIT_START("parent");
	for (int i = 0; i < 10; i++) {
		ORBIT_START("child");
		ORBIT_STOP();
		expect_add(ORBIT_EVENT_SCOPE, "child", 5)->depth = 1;
	}
	ORBIT_STOP();
	expect_add(ORBIT_EVENT_SCOPE, "parent", 6)->depth = 0;
	finish_and_check();
}

/* A thread moved from one CPU to another with scopes open: the scopes stay
 * on the thread's ring and pair; depths are right. */
struct migrate {
	int cpu[2];
	uint32_t tid;
	int moved;
};

static int pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0)
		return -1;
	sched_yield();
	return sched_getcpu() == cpu ? 0 : -1;
}

static void *migrate_thread(void *arg)
{
	struct migrate *m = arg;
	m->tid = my_tid();
	char name[64];
	for (int round = 0; round < 50; round++) {
		if (pin(m->cpu[round & 1]) != 0)
			return NULL;
		snprintf(name, sizeof name, "round %d on cpu %d", round, m->cpu[round & 1]);
		ORBIT_START(names[11].s); /* 1000 bytes: continuations on one CPU */
		ORBIT_START(name);
		{
			ORBIT_SCOPE_WITH_COLOR(names[13].s, 0x55aa55aau); /* 65535 */
			ORBIT_START_ASYNC("migrating span", (uint64_t)round);
			ORBIT_INT("round", round);
			if (pin(m->cpu[(round + 1) & 1]) != 0)
				return NULL;
			m->moved++;
			ORBIT_STOP_ASYNC((uint64_t)round);
		}
		ORBIT_STOP();
		ORBIT_STOP();
	}
	return NULL;
}

static void case_migrate(void)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CHECK(sched_getaffinity(0, sizeof set, &set) == 0);
	struct migrate m = {.cpu = {-1, -1}};
	for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &set))
			m.cpu[k++] = c;
	if (m.cpu[1] < 0)
		SKIP("fewer than 2 CPUs to migrate between");
	start_capture();
	pthread_t th;
	CHECK(pthread_create(&th, NULL, migrate_thread, &m) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	if (m.moved != 50)
		SKIP("could not move a thread between CPUs %d and %d", m.cpu[0], m.cpu[1]);
	char *labels[50];
	for (int round = 0; round < 50; round++) {
		char name[64];
		snprintf(name, sizeof name, "round %d on cpu %d", round, m.cpu[round & 1]);
		labels[round] = dup_str(name);
		struct expect *e;
		e = expect_add(ORBIT_EVENT_VALUE, "round", 5);
		e->tid = e->end_tid = m.tid, e->value_kind = ORBIT_REC_INT,
		e->value_bits = (uint64_t)round;
		e = expect_add(ORBIT_EVENT_ASYNC, "migrating span", 14);
		e->tid = e->end_tid = m.tid, e->value_bits = (uint64_t)round;
		e = expect_add(ORBIT_EVENT_SCOPE, names[13].s, names[13].len);
		e->tid = e->end_tid = m.tid, e->depth = 2, e->has_attrs = 1, e->color = 0x55aa55aau;
		e = expect_add(ORBIT_EVENT_SCOPE, labels[round], strlen(labels[round]));
		e->tid = e->end_tid = m.tid, e->depth = 1;
		e = expect_add(ORBIT_EVENT_SCOPE, names[11].s, names[11].len);
		e->tid = e->end_tid = m.tid, e->depth = 0;
	}
	finish_and_check();
}

/* Starts whose stop never comes. The worker's ends at its thread's end
 * record (its exit writes it): it was never stopped, so it costs nothing
 * but itself: the scope after it is at depth 0, and it was open until that
 * scope began. The main thread's is still open at the end of input, after
 * its own last record: it may yet be stopped, so it is around the scopes
 * after it. */
static uint64_t worker_child_start;

static void *unstopped_worker(void *arg)
{
	uint32_t *tid = arg;
	*tid = my_tid();
	ORBIT_START("worker, never stopped");
	worker_child_start = test_now_ns(CLOCK_MONOTONIC);
	{
		ORBIT_SCOPE("worker child");
	}
	return NULL;
}

static void case_unstopped(void)
{
	start_capture();
	uint32_t wtid = 0;
	pthread_t th;
	CHECK(pthread_create(&th, NULL, unstopped_worker, &wtid) == 0);
	CHECK(pthread_join(th, NULL) == 0);
	/* Never stopped, it ended before the scope after it did: it comes first. */
	struct expect *e = expect_add(ORBIT_EVENT_SCOPE, "worker, never stopped", 21);
	e->tid = e->end_tid = wtid, e->unfinished = 1, e->open_after = worker_child_start;
	e = expect_add(ORBIT_EVENT_SCOPE, "worker child", 12);
	e->tid = e->end_tid = wtid, e->depth = 0;
	ORBIT_START("main, never stopped");
	for (int i = 0; i < 3; i++) {
		ORBIT_SCOPE("main child");
		expect_add(ORBIT_EVENT_SCOPE, "main child", 10)->depth = 1;
	}
	uint64_t main_child_end = test_now_ns(CLOCK_MONOTONIC);
	e = expect_add(ORBIT_EVENT_SCOPE, "main, never stopped", 19);
	e->unfinished = 1, e->open_after = main_child_end - 1000000;
	finish_and_check();
}

static const struct test_case cases[] = {
    {"unstopped", case_unstopped},
    {"scopes", case_scopes},
    {"colors", case_colors},
    {"values", case_values},
    {"async", case_async},
    {"async_rings", case_async_rings},
    {"thread_names", case_thread_names},
    {"runtime", case_runtime},
    {"deep", case_deep},
    {"migrate", case_migrate},
};

static void shutdown_agent(void)
{
	orbit_shutdown();
}

TEST_MAIN_WITH(cases, .begin = make_names, .end = shutdown_agent)
