/*
 * reconstruct_rules.c — the rules of format/reconstruct.h on records made by
 * hand, so every case is exact (docs/format.md, 2, "A thread's end"):
 *   unstopped     a start never stopped ends, unfinished, at its thread's end
 *                 record, open until the next scope began; it costs nothing
 *                 but itself: the scopes after it keep the depth they would
 *                 have without it; it comes out before them, they in the
 *                 order they finished
 *   enclosing     a start never stopped ends when the stop of a scope around
 *                 it comes, and counts in no depth either
 *   still_open    a start still open at the end of input is around the
 *                 scopes after it (it may yet be stopped); another thread's
 *                 scopes do not wait for it
 *   gap_skip      a scope open across a gap and then ended by its thread's
 *                 end record is around what came before the gap, under
 *                 nothing after it
 *   assumed       past MAX_HELD finished scopes waiting on a thread its open
 *                 scope is taken as around them (depth_assumed), so they go
 *                 out; when it turns out never stopped, the scopes it made
 *                 one level too deep are counted (depth_misplaced)
 *   reused        a new thread under an old thread's id (no thread-end record:
 *                 its first scope id is not above the old one's last) starts
 *                 at depth 0, and the old one's open scopes end at its last
 *                 scope record (a name or value since may be the new one's)
 *   reused_end    the same with the thread-end record
 *   input_end     at the end of input an open scope ends at its thread's last
 *                 record, an open span at the input's last time
 *   gap           a scope open across a ring gap (its stop may be lost there)
 *                 ends no later than its thread's last record before the gap
 *   flags         time not trusted (record flag bit 1) on scopes, spans,
 *                 values and thread names, with an incomplete name beside it
 *
 * Usage: reconstruct_rules CASE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "reconstruct.h"
#include "record.h"

#define MAX_RECS 200000 /* the assumed case: more than MAX_HELD (65536) scopes */
#define MAX_EVENTS MAX_RECS

static uint8_t recs[MAX_RECS * ORBIT_RECORD_SIZE];
static size_t nrecs;

static void rec(uint64_t time, uint32_t tid, uint8_t kind, uint64_t id, const char *name,
                uint8_t flags)
{
	CHECK(nrecs < MAX_RECS);
	struct orbit_record r = {.time = time, .id = id, .tid = tid, .kind = kind, .flags = flags};
	size_t n = name ? strlen(name) : 0;
	r.len = (uint16_t)n;
	memcpy(r.name, name ? name : "", n < ORBIT_RECORD_NAME ? n : ORBIT_RECORD_NAME);
	orbit__record_encode(&r, recs + nrecs++ * ORBIT_RECORD_SIZE);
}

static void start(uint64_t time, uint32_t tid, uint64_t id, const char *name)
{
	rec(time, tid, ORBIT_REC_SCOPE_START, id, name, 0);
}

static void stop(uint64_t time, uint32_t tid, uint64_t id)
{
	rec(time, tid, ORBIT_REC_SCOPE_STOP, id, NULL, 0);
}

static void thread_end(uint64_t time, uint32_t tid)
{
	rec(time, tid, ORBIT_REC_THREAD_END, 0, NULL, 0);
}

static struct got {
	struct orbit_event ev;
	char name[64];
} got[MAX_EVENTS];
static size_t ngot;

static void on_event(void *ctx, const struct orbit_event *ev)
{
	(void)ctx;
	CHECK(ngot < MAX_EVENTS);
	got[ngot].ev = *ev;
	size_t n = ev->name_len < 63 ? ev->name_len : 63;
	memcpy(got[ngot].name, ev->name, n);
	got[ngot].name[n] = '\0';
	got[ngot].ev.name = got[ngot].name;
	ngot++;
}

/* Batches: the records are cut into batches at cut_at[], each batch after
 * a cut skipping cut_skip[] claims (a gap where records were lost). */
static size_t cut_at[8], cut_skip[8], ncut;

static void cut(size_t skip)
{
	cut_at[ncut] = nrecs;
	cut_skip[ncut++] = skip;
}

static const struct orbit_reconstruct_stats *run(void)
{
	static struct orbit_reconstruct *rc;
	orbit__reconstruct_free(rc);
	rc = orbit__reconstruct_new(on_event, NULL);
	CHECK(rc != NULL);
	size_t from = 0;
	uint64_t claim = 0;
	for (size_t i = 0; i <= ncut; i++) {
		size_t to = i < ncut ? cut_at[i] : nrecs;
		CHECK_EQ_U64(orbit__reconstruct_batch(rc, 0, claim, recs + from * ORBIT_RECORD_SIZE,
		                                      to - from),
		             0);
		claim += to - from + (i < ncut ? cut_skip[i] : 0);
		from = to;
	}
	ncut = 0;
	orbit__reconstruct_finish(rc);
	const struct orbit_reconstruct_stats *st = orbit__reconstruct_stats(rc);
	CHECK_EQ_U64(st->bad_records, 0);
	CHECK_EQ_U64(st->records, nrecs);
	return st;
}

static const struct orbit_event *event(const char *name, uint32_t tid)
{
	for (size_t i = 0; i < ngot; i++)
		if (strcmp(got[i].name, name) == 0 && got[i].ev.tid == tid)
			return &got[i].ev;
	fprintf(stderr, "no event %s on tid %u\n", name, tid);
	exit(1);
}

/* A scope as expected: depth, start, end (open_until if unfinished),
 * unfinished. */
static void want(const char *name, uint32_t tid, uint32_t depth, uint64_t s, uint64_t e,
                 int unfinished)
{
	const struct orbit_event *ev = event(name, tid);
	if (ev->type != ORBIT_EVENT_SCOPE || ev->depth != depth || ev->start != s ||
	    ev->open_until != e || ev->end != (unfinished ? s : e) ||
	    ev->unfinished != unfinished) {
		fprintf(stderr,
		        "%s (tid %u): got depth %u, %llu..%llu open until %llu, unfinished %d; "
		        "want depth %u, %llu open until %llu, unfinished %d\n",
		        name, tid, ev->depth, (unsigned long long)ev->start,
		        (unsigned long long)ev->end, (unsigned long long)ev->open_until,
		        ev->unfinished, depth, (unsigned long long)s, (unsigned long long)e,
		        unfinished);
		exit(1);
	}
}

/* The event at place i of the output is name. */
static void nth(size_t i, const char *name)
{
	if (i >= ngot || strcmp(got[i].name, name) != 0) {
		fprintf(stderr, "event %zu: got %s, want %s\n", i, i < ngot ? got[i].name : "none",
		        name);
		exit(1);
	}
}

static void case_unstopped(void)
{
	start(10, 5, 1, "never stopped");
	start(20, 5, 2, "b");
	start(25, 5, 3, "b inner");
	stop(28, 5, 3);
	stop(30, 5, 2);
	start(40, 5, 4, "c");
	stop(50, 5, 4);
	thread_end(60, 5);
	const struct orbit_reconstruct_stats *st = run();
	want("b inner", 5, 1, 25, 28, 0);
	want("b", 5, 0, 20, 30, 0);
	want("c", 5, 0, 40, 50, 0);
	want("never stopped", 5, 0, 10, 20, 1); /* until b began, not over it */
	nth(0, "never stopped");                /* it ended, at the latest, before b inner did */
	nth(1, "b inner");
	nth(2, "b");
	nth(3, "c");
	CHECK_EQ_U64(st->unfinished, 1);
	CHECK_EQ_U64(st->thread_ends, 1);
	CHECK_EQ_U64(st->depth_assumed, 0);
	CHECK_EQ_U64(st->depth_misplaced, 0);
	CHECK_EQ_U64(ngot, 4);
	/* Never stopped with nothing after it: open until its thread's end. */
	ngot = nrecs = 0;
	start(10, 6, 1, "alone");
	thread_end(30, 6);
	run();
	want("alone", 6, 0, 10, 30, 1);
}

static void case_enclosing(void)
{
	start(10, 5, 1, "outer");
	start(20, 5, 2, "lost its stop");
	start(30, 5, 3, "inner");
	stop(40, 5, 3);
	start(42, 5, 4, "inner 2");
	start(43, 5, 5, "inner 2 child");
	stop(44, 5, 5);
	stop(45, 5, 4);
	stop(50, 5, 1); /* closes outer, and ends the one inside it */
	start(60, 5, 6, "after");
	stop(70, 5, 6);
	const struct orbit_reconstruct_stats *st = run();
	want("inner", 5, 1, 30, 40, 0);
	want("inner 2", 5, 1, 42, 45, 0);
	want("inner 2 child", 5, 2, 43, 44, 0);
	want("lost its stop", 5, 1, 20, 30, 1);
	want("outer", 5, 0, 10, 50, 0);
	want("after", 5, 0, 60, 70, 0);
	nth(0, "lost its stop");
	nth(1, "inner");
	nth(2, "inner 2 child");
	nth(3, "inner 2");
	nth(4, "outer");
	nth(5, "after");
	CHECK_EQ_U64(st->unfinished, 1);
	CHECK_EQ_U64(st->unmatched_stops, 0);
	/* Two never stopped inside one another, both ended by the stop around
	 * them: neither counts. */
	ngot = nrecs = 0;
	start(10, 5, 1, "outer");
	start(20, 5, 2, "first");
	start(30, 5, 3, "second");
	start(40, 5, 4, "leaf");
	stop(45, 5, 4);
	stop(50, 5, 1);
	st = run();
	want("leaf", 5, 1, 40, 45, 0);
	want("second", 5, 1, 30, 40, 1);
	want("first", 5, 1, 20, 30, 1);
	want("outer", 5, 0, 10, 50, 0);
	nth(0, "first");
	nth(1, "second");
	nth(2, "leaf");
	nth(3, "outer");
	CHECK_EQ_U64(st->unfinished, 2);
}

static void case_still_open(void)
{
	start(10, 5, 1, "open at the end");
	start(20, 5, 2, "child");
	stop(30, 5, 2);
	start(15, 6, 1, "other thread");
	stop(25, 6, 1);
	start(40, 5, 3, "child 2");
	stop(50, 5, 3);
	const struct orbit_reconstruct_stats *st = run();
	want("child", 5, 1, 20, 30, 0);
	want("child 2", 5, 1, 40, 50, 0);
	want("open at the end", 5, 0, 10, 50, 1);
	want("other thread", 6, 0, 15, 25, 0);
	nth(0, "other thread"); /* tid 6 did not wait for tid 5's open scope */
	nth(1, "child");
	nth(2, "child 2");
	nth(3, "open at the end");
	CHECK_EQ_U64(st->depth_assumed, 0);
}

static void case_gap_skip(void)
{
	start(10, 5, 1, "open at the gap");
	start(20, 5, 2, "before");
	stop(30, 5, 2);
	cut(3); /* its stop may be in there */
	start(40, 5, 3, "after");
	stop(50, 5, 3);
	thread_end(60, 5);
	const struct orbit_reconstruct_stats *st = run();
	want("before", 5, 1, 20, 30, 0);
	want("after", 5, 0, 40, 50, 0);
	want("open at the gap", 5, 0, 10, 30, 1); /* its last record before the gap */
	CHECK_EQ_U64(st->gaps, 1);
	CHECK_EQ_U64(st->depth_misplaced, 0);
}

static void case_assumed(void)
{
	/* One scope never stopped, then more finished scopes than a thread may
	 * hold waiting, then its thread's end. */
	const uint64_t n = 70000; /* > MAX_HELD, 65536 */
	start(10, 5, 1, "never stopped");
	for (uint64_t i = 0; i < n; i++) {
		start(100 + 10 * i, 5, 2 + i, "s");
		stop(105 + 10 * i, 5, 2 + i);
	}
	thread_end(100 + 10 * n, 5);
	const struct orbit_reconstruct_stats *st = run();
	CHECK_EQ_U64(ngot, n + 1);
	CHECK_EQ_U64(st->depth_assumed, 1);
	/* When the held + 1st finished it was taken as around them all: every
	 * one went out at depth 1 (the first held + 1 at once, the rest as
	 * they finished), and its thread's end, saying it was never stopped,
	 * counted them. */
	CHECK_EQ_U64(st->depth_misplaced, n);
	for (uint64_t i = 0; i < n; i++) {
		const struct orbit_event *ev = &got[i].ev;
		CHECK(ev->type == ORBIT_EVENT_SCOPE && ev->start == 100 + 10 * i);
		CHECK_EQ_U64(ev->depth, 1);
	}
	want("never stopped", 5, 0, 10, 100, 1);
}

static void case_reused(void)
{
	/* tid 7: an old thread leaves a scope open and dies without a
	 * thread-end record (killed, or its destructor never ran). */
	start(10, 7, 5, "old open");
	start(20, 7, 6, "old inner");
	stop(30, 7, 6);
	rec(35, 7, ORBIT_REC_INT, 9, "old value", 0);
	/* Another thread, on another tid, in between. */
	start(40, 8, 1, "other");
	stop(45, 8, 1);
	/* A new thread gets tid 7 and names itself: the name (like the value)
	 * may be either thread's. Its scope ids start again at 1. */
	rec(90, 7, ORBIT_REC_THREAD_NAME, 0, "new thread", 0);
	start(100, 7, 1, "new");
	start(105, 7, 2, "new inner");
	stop(108, 7, 2);
	stop(110, 7, 1);
	const struct orbit_reconstruct_stats *st = run();
	want("new", 7, 0, 100, 110, 0); /* depth 0: nothing inherited */
	want("new inner", 7, 1, 105, 108, 0);
	want("old inner", 7, 1, 20, 30, 0);
	/* Ends at the old thread's last scope record, not in the new thread. */
	want("old open", 7, 0, 10, 30, 1);
	want("other", 8, 0, 40, 45, 0);
	CHECK_EQ_U64(st->reused_tids, 1);
	CHECK_EQ_U64(st->unfinished, 1);
}

static void case_reused_end(void)
{
	start(10, 7, 1, "old open");
	rec(15, 7, ORBIT_REC_THREAD_NAME, 0, "old thread", 0);
	thread_end(40, 7);
	/* The next thread under tid 7 continues the ids: only the record says
	 * the old one ended. */
	start(100, 7, 2, "new");
	stop(110, 7, 2);
	const struct orbit_reconstruct_stats *st = run();
	want("old open", 7, 0, 10, 40, 1);
	want("new", 7, 0, 100, 110, 0);
	CHECK_EQ_U64(st->thread_ends, 1);
	CHECK_EQ_U64(st->reused_tids, 0);
	/* A thread end with nothing open ends nothing. */
	ngot = nrecs = 0;
	thread_end(5, 9);
	start(10, 9, 1, "x");
	stop(20, 9, 1);
	thread_end(25, 9);
	st = run();
	want("x", 9, 0, 10, 20, 0);
	CHECK_EQ_U64(st->unfinished, 0);
	CHECK_EQ_U64(ngot, 1);
}

static void case_input_end(void)
{
	start(10, 5, 1, "open at the end");
	rec(20, 5, ORBIT_REC_UINT, 1, "v", 0);
	rec(25, 6, ORBIT_REC_ASYNC_START, 77, "span", 0);
	rec(90, 6, ORBIT_REC_UINT, 1, "w", 0);
	run();
	want("open at the end", 5, 0, 10, 20, 1);
	const struct orbit_event *ev = event("span", 6);
	CHECK(ev->type == ORBIT_EVENT_ASYNC && ev->unfinished && ev->start == 25 &&
	      ev->open_until == 90);
}

static void case_gap(void)
{
	start(10, 5, 1, "open at the gap");
	rec(20, 5, ORBIT_REC_UINT, 1, "v", 0);
	cut(2); /* two claims lost: its stop may be one of them */
	start(40, 5, 3, "after");
	stop(50, 5, 3);
	const struct orbit_reconstruct_stats *st = run();
	want("open at the gap", 5, 0, 10, 20, 1); /* not over "after" */
	want("after", 5, 0, 40, 50, 0);
	CHECK_EQ_U64(st->gaps, 1);
}

#define U ORBIT_REC_FLAG_TIME_UNTRUSTED

static void case_flags(void)
{
	/* A scope whose start's time was not trusted, one whose stop's was, and
	 * one trusted. */
	rec(10, 5, ORBIT_REC_SCOPE_START, 1, "start untrusted", U);
	stop(20, 5, 1);
	start(30, 5, 2, "stop untrusted");
	rec(40, 5, ORBIT_REC_SCOPE_STOP, 2, NULL, U);
	start(50, 5, 3, "trusted");
	stop(60, 5, 3);
	/* A value, a thread name, an async span stopped untrusted. */
	rec(70, 5, ORBIT_REC_INT64, 3, "value", U);
	rec(80, 5, ORBIT_REC_THREAD_NAME, 0, "thread", U);
	rec(90, 5, ORBIT_REC_ASYNC_START, 9, "span", 0);
	rec(95, 6, ORBIT_REC_ASYNC_STOP, 9, NULL, U);
	/* An incomplete name (its continuation lost) beside a trusted time,
	 * and a long name whose continuation carries the flag. */
	struct orbit_record r = {.time = 100, .id = 4, .tid = 5, .kind = ORBIT_REC_SCOPE_START};
	r.len = 40;
	memcpy(r.name, "incomplete name, 40 bytes long, cut her", 32);
	orbit__record_encode(&r, recs + nrecs++ * ORBIT_RECORD_SIZE);
	stop(110, 5, 4); /* the continuation never came */
	r = (struct orbit_record){.time = 120, .id = 5, .tid = 5, .kind = ORBIT_REC_SCOPE_START};
	r.len = 40;
	memcpy(r.name, "continued name, 40 bytes long, f", 32);
	orbit__record_encode(&r, recs + nrecs++ * ORBIT_RECORD_SIZE);
	r = (struct orbit_record){.time = 120, .id = 5, .tid = 5, .kind = ORBIT_REC_NAME_CONT};
	r.len = 1;
	r.flags = U;
	memcpy(r.name, "ull name", 8);
	orbit__record_encode(&r, recs + nrecs++ * ORBIT_RECORD_SIZE);
	stop(130, 5, 5);
	const struct orbit_reconstruct_stats *st = run();
	const struct {
		const char *name;
		uint32_t tid;
		int untrusted, incomplete;
	} w[] = {
	    {"start untrusted", 5, 1, 0},
	    {"stop untrusted", 5, 1, 0},
	    {"trusted", 5, 0, 0},
	    {"value", 5, 1, 0},
	    {"thread", 5, 1, 0},
	    {"span", 5, 1, 0},
	    {"incomplete name, 40 bytes long, ", 5, 0, 1}, /* its first 32 bytes */
	    {"continued name, 40 bytes long, full name", 5, 1, 0},
	};
	for (size_t i = 0; i < sizeof w / sizeof w[0]; i++) {
		const struct orbit_event *ev = event(w[i].name, w[i].tid);
		if (ev->time_untrusted != w[i].untrusted ||
		    ev->name_incomplete != w[i].incomplete || ev->unfinished) {
			fprintf(stderr, "%s: time_untrusted %d name_incomplete %d unfinished %d\n",
			        w[i].name, ev->time_untrusted, ev->name_incomplete, ev->unfinished);
			exit(1);
		}
	}
	CHECK_EQ_U64(st->untrusted_events, 6);
	CHECK_EQ_U64(st->incomplete_names, 1);
}

static const struct test_case cases[] = {
    {"unstopped", case_unstopped},   {"enclosing", case_enclosing},   {"reused", case_reused},
    {"reused_end", case_reused_end}, {"input_end", case_input_end},   {"gap", case_gap},
    {"flags", case_flags},           {"still_open", case_still_open}, {"gap_skip", case_gap_skip},
    {"assumed", case_assumed},
};

TEST_MAIN(cases)
