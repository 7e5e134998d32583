/* sched_states.c — replay_sched_states.c on synthetic events: the state
 * rules of replay_sched.h one by one, and the interval times against a
 * brute-force sum over the spans.
 *
 *   basic        run, preempted, run, sleep (waker known), woken, run
 *   pending      a waking while the thread still runs: runnable, not blocked
 *   gap_other    a gap on another CPU leaves a running thread alone and
 *                makes a sleeping one unknown until its next event
 *   gap_same     a gap on the thread's own CPU: unknown from the window
 *   dead         prev_state X: dead, counted nowhere; a recycled tid lives
 *   unseen       events whose common_pid shows a thread current without
 *                its switch-in: unknown over the unseen part, not runnable
 *   names        fork, wakeup_new, rename, comm fields: latest name wins;
 *                created and exited times
 *   order        the same events added in another order: the same spans
 *   random       random events on 4 CPUs: every interval's times equal the
 *                brute-force sum over the spans, and add up
 *   add_page     a flagged page becomes a gap from the CPU's last event
 *   recording    threads listed from the recording's start: before its
 *                first event a thread switched out ran, one switched in
 *                waited, one woken slept; unlisted threads, threads created
 *                later and anything after a lost window stay unknown
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_sched.h"

#define S_SLEEP 1 /* TASK_INTERRUPTIBLE */
#define S_DEAD 0x10
#define S_PREEMPT 0x100

static struct orbit__rp_sched_event sw(uint64_t t, uint32_t cpu, int prev, int64_t state, int next)
{
	struct orbit__rp_sched_event e;

	memset(&e, 0, sizeof e);
	e.time = t;
	e.cpu = cpu;
	e.kind = ORBIT__RP_SCHED_SWITCH;
	e.common_pid = prev;
	e.u.sw.prev_pid = prev;
	e.u.sw.prev_state = state;
	e.u.sw.next_pid = next;
	return e;
}

static struct orbit__rp_sched_event wake(uint64_t t, uint32_t cpu, int waker, int pid)
{
	struct orbit__rp_sched_event e;

	memset(&e, 0, sizeof e);
	e.time = t;
	e.cpu = cpu;
	e.kind = ORBIT__RP_SCHED_WAKING;
	e.common_pid = waker;
	e.u.wake.pid = pid;
	return e;
}

static void add(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_event e)
{
	CHECK(orbit__rp_sched_add(tl, &e) == 0);
}

static struct orbit__rp_sched_times times(const struct orbit__rp_sched_timeline *tl, int tid,
                                          uint64_t a, uint64_t b)
{
	struct orbit__rp_sched_times t;

	orbit__rp_sched_times(orbit__rp_sched_thread(tl, tid), a, b, &t);
	CHECK_EQ_U64(t.oncpu_ns + t.runnable_ns + t.blocked_ns + t.unknown_ns, b > a ? b - a : 0);
	return t;
}

#define EXPECT(t, on, rn, bl)                                                                      \
	do {                                                                                       \
		CHECK_EQ_U64((t).oncpu_ns, on);                                                    \
		CHECK_EQ_U64((t).runnable_ns, rn);                                                 \
		CHECK_EQ_U64((t).blocked_ns, bl);                                                  \
	} while (0)

static uint8_t state_at(const struct orbit__rp_sched_timeline *tl, int tid, uint64_t t)
{
	const struct orbit__rp_sched_span *s =
	    orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, tid), t);

	return s ? s->state : ORBIT__RP_SCHED_UNKNOWN;
}

/* A=10 runs on cpu0 from 10, preempted by B=20 at 20, back at 30, sleeps at
 * 40, woken by B at 60 (B runs on cpu1 then), back on cpu0 at 65; end 100. */
static struct orbit__rp_sched_timeline *basic_timeline(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();

	add(tl, sw(10, 0, 0, 0, 10));
	add(tl, sw(20, 0, 10, S_PREEMPT, 20));
	add(tl, sw(30, 0, 20, S_SLEEP, 10));
	add(tl, sw(40, 0, 10, S_SLEEP, 0));
	add(tl, sw(55, 1, 0, 0, 20));
	add(tl, wake(60, 1, 20, 10));
	add(tl, sw(65, 0, 0, 0, 10));
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	return tl;
}

static void case_basic(void)
{
	struct orbit__rp_sched_timeline *tl = basic_timeline();
	const struct orbit__rp_sched_span *s;
	struct orbit__rp_sched_times t;

	t = times(tl, 10, 0, 100);
	EXPECT(t, 10 + 10 + 35, 10 + 5, 20);
	CHECK_EQ_U64(t.unknown_ns, 10);
	EXPECT(times(tl, 10, 15, 35), 5 + 5, 10, 0);
	EXPECT(times(tl, 10, 45, 62), 0, 2, 15);
	EXPECT(times(tl, 10, 200, 300), 0, 0, 0); /* after the end */
	EXPECT(times(tl, 10, 50, 50), 0, 0, 0);
	s = orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, 10), 50);
	CHECK(s->state == ORBIT__RP_SCHED_BLOCKED && s->waker == 20 && s->kstate == S_SLEEP);
	s = orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, 10), 25);
	CHECK(s->state == ORBIT__RP_SCHED_RUNNABLE && s->cpu == 0 && s->kstate == S_PREEMPT);
	s = orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, 10), 70);
	CHECK(s->state == ORBIT__RP_SCHED_RUNNING && s->cpu == 0);
	/* B: cpu0 20..30, sleeping 30..55 (never woken: blocked with no waker
	 * until it runs again), cpu1 from 55. */
	EXPECT(times(tl, 20, 0, 100), 10 + 45, 0, 25);
	CHECK(orbit__rp_sched_thread(tl, 0) == NULL); /* idle is not a thread */
	CHECK(orbit__rp_sched_thread(tl, 99) == NULL);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->unseen_switches, 0);
	orbit__rp_sched_timeline_free(tl);
}

static void case_pending(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	const struct orbit__rp_sched_span *s;

	add(tl, sw(10, 0, 0, 0, 10));
	add(tl, sw(12, 1, 0, 0, 30));
	add(tl, wake(15, 1, 30, 10)); /* 10 still running on cpu0 */
	add(tl, sw(16, 0, 10, S_SLEEP, 0));
	add(tl, sw(20, 0, 0, 0, 10));
	CHECK(orbit__rp_sched_finish(tl, 30) == 0);
	s = orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, 10), 17);
	CHECK(s->state == ORBIT__RP_SCHED_RUNNABLE && s->waker == 30);
	EXPECT(times(tl, 10, 10, 30), 6 + 10, 4, 0);
	orbit__rp_sched_timeline_free(tl);
}

static void case_gap_other(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();

	add(tl, sw(10, 0, 0, 0, 10)); /* A runs on cpu0 */
	add(tl, sw(12, 1, 0, 0, 20));
	add(tl, sw(14, 1, 20, S_SLEEP, 0)); /* B sleeps */
	CHECK(orbit__rp_sched_add_gap(tl, 1, 50, 60, 5) == 0);
	add(tl, sw(70, 1, 0, 0, 20)); /* B back */
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	EXPECT(times(tl, 10, 10, 100), 90, 0, 0); /* cpu1's gap: not A's business */
	EXPECT(times(tl, 20, 14, 100), 30, 0, 36);
	CHECK(state_at(tl, 20, 55) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK_EQ_U64(times(tl, 20, 14, 100).unknown_ns, 20);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->gaps, 1);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->lost_known, 5);
	orbit__rp_sched_timeline_free(tl);
}

static void case_gap_same(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();

	add(tl, sw(10, 0, 0, 0, 10));
	add(tl, sw(20, 1, 0, 0, 20));
	CHECK(orbit__rp_sched_add_gap(tl, 0, 40, 50, -1) == 0);
	add(tl, sw(80, 0, 10, S_SLEEP, 0));
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	/* A: running 10..40, unknown 40..80 (its switch-out at 80 is what
	 * tells again), blocked 80..100. B on cpu1: untouched. */
	EXPECT(times(tl, 10, 0, 100), 30, 0, 20);
	CHECK_EQ_U64(times(tl, 10, 0, 100).unknown_ns, 50);
	EXPECT(times(tl, 20, 20, 100), 80, 0, 0);
	/* A gap that starts before the thread's last event counts from it. */
	orbit__rp_sched_timeline_free(tl);
	tl = orbit__rp_sched_timeline_new();
	add(tl, sw(10, 0, 0, 0, 10));
	add(tl, sw(45, 1, 0, 0, 30));
	add(tl, wake(46, 1, 30, 10));
	CHECK(orbit__rp_sched_add_gap(tl, 0, 40, 50, -1) == 0);
	CHECK(orbit__rp_sched_finish(tl, 60) == 0);
	/* The waking at 46 does not say 10 still runs: unknown from 40. */
	CHECK(state_at(tl, 10, 39) == ORBIT__RP_SCHED_RUNNING);
	CHECK(state_at(tl, 10, 41) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->lost_unknown, 1);
	orbit__rp_sched_timeline_free(tl);
}

static void case_dead(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	struct orbit__rp_sched_event ex, nw;

	memset(&ex, 0, sizeof ex);
	ex.time = 19;
	ex.kind = ORBIT__RP_SCHED_EXIT;
	ex.common_pid = 10;
	ex.u.exit.pid = 10;
	strcpy(ex.u.exit.comm, "old");
	add(tl, sw(10, 0, 0, 0, 10));
	add(tl, ex);
	add(tl, sw(20, 0, 10, S_DEAD, 0));
	memset(&nw, 0, sizeof nw);
	nw.time = 50;
	nw.kind = ORBIT__RP_SCHED_WAKEUP_NEW;
	nw.common_pid = 1;
	nw.u.wake.pid = 10; /* the tid again, a new thread */
	add(tl, nw);
	add(tl, sw(60, 1, 0, 0, 10));
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	CHECK(state_at(tl, 10, 30) == ORBIT__RP_SCHED_DEAD);
	EXPECT(times(tl, 10, 0, 100), 10 + 40, 10, 0);
	CHECK_EQ_U64(times(tl, 10, 20, 50).unknown_ns, 30);
	CHECK_EQ_U64(orbit__rp_sched_thread(tl, 10)->exited, 19);
	orbit__rp_sched_timeline_free(tl);
}

static void case_unseen(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();

	/* A runs on cpu0, is preempted by F (a task whose switches are not
	 * traced) at 10; the waking at 20 runs in A's context on cpu0, so A
	 * was switched back in at some unseen point in 10..20. */
	add(tl, sw(5, 0, 0, 0, 10));
	add(tl, sw(10, 0, 10, S_PREEMPT, 77));
	add(tl, wake(20, 0, 10, 30));
	add(tl, sw(40, 0, 10, S_SLEEP, 0));
	/* And a switch whose prev was not known to run: A on cpu1 at 60
	 * without its switch-in (after cpu1's last event at 50). */
	add(tl, sw(50, 1, 0, 0, 30));
	add(tl, sw(55, 1, 30, S_SLEEP, 0));
	add(tl, sw(70, 1, 10, S_SLEEP, 0));
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	EXPECT(times(tl, 10, 5, 40), 5 + 20, 0, 0);
	CHECK_EQ_U64(times(tl, 10, 5, 40).unknown_ns, 10);
	CHECK(state_at(tl, 10, 15) == ORBIT__RP_SCHED_UNKNOWN);
	/* 40..55 blocked for certain, 55..70 unknown, 70.. blocked. */
	EXPECT(times(tl, 10, 40, 100), 0, 0, 15 + 30);
	CHECK(orbit__rp_sched_stats(tl)->unseen_switches >= 2);
	orbit__rp_sched_timeline_free(tl);
}

static void case_names(void)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	struct orbit__rp_sched_event e = sw(30, 0, 0, 0, 10);
	struct orbit__rp_sched_event fk, rn;

	memset(&fk, 0, sizeof fk);
	fk.time = 5;
	fk.kind = ORBIT__RP_SCHED_FORK;
	fk.u.fork.parent_pid = 1;
	fk.u.fork.child_pid = 10;
	strcpy(fk.u.fork.child_comm, "born");
	memset(&rn, 0, sizeof rn);
	rn.time = 40;
	rn.kind = ORBIT__RP_SCHED_RENAME;
	rn.u.rename.pid = 10;
	strcpy(rn.u.rename.newcomm, "renamed");
	strcpy(e.u.sw.next_comm, "switched");
	add(tl, rn); /* out of order on purpose */
	add(tl, e);
	add(tl, fk);
	CHECK(orbit__rp_sched_finish(tl, 50) == 0);
	CHECK(strcmp(orbit__rp_sched_thread(tl, 10)->comm, "renamed") == 0);
	CHECK_EQ_U64(orbit__rp_sched_thread(tl, 10)->created, 5);
	CHECK(orbit__rp_sched_thread(tl, 1) != NULL);
	orbit__rp_sched_timeline_free(tl);
}

/* ---- random ---- */

static uint64_t rng = 88172645463325252ull;

#define NEV 20000

static struct orbit__rp_sched_event evs[NEV];

static int make_random(void)
{
	uint64_t t = 1000;
	int cur[4] = {0, 0, 0, 0}, n = 0;

	while (n < NEV) {
		uint32_t cpu = (uint32_t)(test_rand(&rng) % 4);
		int tid = 1 + (int)(test_rand(&rng) % 12);

		t += 1 + test_rand(&rng) % 50;
		if (test_rand(&rng) % 3 == 0) {
			evs[n++] = wake(t, cpu, cur[cpu], tid);
		} else {
			int64_t st = test_rand(&rng) % 2 ? S_SLEEP : S_PREEMPT;

			evs[n++] = sw(t, cpu, cur[cpu], st, tid);
			cur[cpu] = tid;
		}
	}
	return n;
}

/* Times of [a, b) summed span by span. */
static void brute(const struct orbit__rp_sched_thread *th, uint64_t a, uint64_t b, uint64_t out[3])
{
	out[0] = out[1] = out[2] = 0;
	for (uint32_t i = 0; i < th->span_count; i++) {
		uint64_t s = th->spans[i].start;
		uint64_t e = i + 1 < th->span_count ? th->spans[i + 1].start : th->end;
		uint64_t lo = s > a ? s : a, hi = e < b ? e : b;
		uint8_t st = th->spans[i].state;

		if (hi > lo && st >= ORBIT__RP_SCHED_RUNNING && st <= ORBIT__RP_SCHED_BLOCKED)
			out[st - ORBIT__RP_SCHED_RUNNING] += hi - lo;
	}
}

static struct orbit__rp_sched_timeline *random_timeline(int n)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();

	for (int i = 0; i < n; i++)
		CHECK(orbit__rp_sched_add(tl, &evs[i]) == 0);
	for (int g = 0; g < 20; g++) {
		uint64_t at = 1000 + test_rand(&rng) % (evs[n - 1].time - 1000);

		CHECK(orbit__rp_sched_add_gap(tl, (uint32_t)(test_rand(&rng) % 4), at, at + 100,
		                              3) == 0);
	}
	CHECK(orbit__rp_sched_finish(tl, 0) == 0);
	return tl;
}

static void case_random(void)
{
	int n = make_random();
	struct orbit__rp_sched_timeline *tl = random_timeline(n);
	uint32_t count;
	const struct orbit__rp_sched_thread *const *th = orbit__rp_sched_threads(tl, &count);
	uint64_t spans = 0;

	CHECK(count == 12);
	for (uint32_t k = 0; k < count; k++) {
		CHECK(k == 0 || th[k]->tid > th[k - 1]->tid);
		spans += th[k]->span_count;
		for (uint32_t i = 1; i < th[k]->span_count; i++)
			CHECK(th[k]->spans[i].start > th[k]->spans[i - 1].start);
		for (int q = 0; q < 2000; q++) {
			uint64_t a = test_rand(&rng) % (th[k]->end + 2000),
			         b = a + test_rand(&rng) % 5000, x[3];
			struct orbit__rp_sched_times t;

			orbit__rp_sched_times(th[k], a, b, &t);
			brute(th[k], a, b, x);
			CHECK_EQ_U64(t.oncpu_ns, x[0]);
			CHECK_EQ_U64(t.runnable_ns, x[1]);
			CHECK_EQ_U64(t.blocked_ns, x[2]);
			CHECK_EQ_U64(t.oncpu_ns + t.runnable_ns + t.blocked_ns + t.unknown_ns,
			             b - a);
		}
	}
	/* The cursor gives the same times, intervals in start order or not. */
	for (uint32_t k = 0; k < count; k++) {
		struct orbit__rp_sched_cursor c;
		uint64_t a = 0;

		orbit__rp_sched_cursor_init(&c, th[k]);
		for (int q = 0; q < 4000; q++) {
			struct orbit__rp_sched_times t, u;
			uint64_t b;

			if (q % 4 == 3)
				a = test_rand(&rng) %
				    (th[k]->end + 2000); /* a jump, back or forth */
			else
				a += test_rand(&rng) % 200;
			b = a + test_rand(&rng) % 3000;
			orbit__rp_sched_times(th[k], a, b, &t);
			orbit__rp_sched_cursor_times(&c, a, b, &u);
			CHECK(memcmp(&t, &u, sizeof t) == 0);
		}
	}
	printf("%d events, 20 gaps: %u threads, %llu spans, 24000 intervals as brute force, 48000 "
	       "through a cursor\n",
	       n, count, (unsigned long long)spans);
	orbit__rp_sched_timeline_free(tl);
}

static void case_order(void)
{
	int n = make_random();
	struct orbit__rp_sched_timeline *a = orbit__rp_sched_timeline_new(),
	                                *b = orbit__rp_sched_timeline_new();
	uint32_t ca, cb;
	const struct orbit__rp_sched_thread *const *ta, *const *tb;

	/* a: in time order; b: CPU by CPU, each CPU's events in order. */
	for (int i = 0; i < n; i++)
		CHECK(orbit__rp_sched_add(a, &evs[i]) == 0);
	for (uint32_t cpu = 4; cpu-- > 0;)
		for (int i = 0; i < n; i++)
			if (evs[i].cpu == cpu)
				CHECK(orbit__rp_sched_add(b, &evs[i]) == 0);
	CHECK(orbit__rp_sched_finish(a, 0) == 0 && orbit__rp_sched_finish(b, 0) == 0);
	ta = orbit__rp_sched_threads(a, &ca);
	tb = orbit__rp_sched_threads(b, &cb);
	CHECK(ca == cb);
	for (uint32_t k = 0; k < ca; k++) {
		CHECK(ta[k]->tid == tb[k]->tid && ta[k]->span_count == tb[k]->span_count);
		CHECK(memcmp(ta[k]->spans, tb[k]->spans,
		             ta[k]->span_count * sizeof *ta[k]->spans) == 0);
	}
	orbit__rp_sched_timeline_free(a);
	orbit__rp_sched_timeline_free(b);
}

/* ---- add_page ---- */

static const char HEADER_PAGE[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
                                  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
                                  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
                                  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";

static const char SWITCH_FORMAT[] =
    "name: sched_switch\nID: 7\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:pid_t prev_pid;\toffset:8;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:16;\tsize:8;\tsigned:1;\n"
    "\tfield:pid_t next_pid;\toffset:24;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"%d %d\", REC->prev_pid, REC->next_pid\n";

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* A page of switches (28-byte payloads) at the given times. */
static void make_page(uint8_t *page, uint64_t ts, int missed, const uint64_t *times,
                      const int (*pids)[2], int n)
{
	uint32_t off = 16;
	uint64_t prev = ts;

	memset(page, 0, 4096);
	put64(page, ts);
	for (int i = 0; i < n; i++) {
		uint8_t *r = page + off;

		put32(r, 7u | (uint32_t)(times[i] - prev) << 5); /* type_len 7: 28 bytes */
		r[4] = 7;
		put32(r + 8, (uint32_t)pids[i][0]);
		put32(r + 12, (uint32_t)pids[i][0]);
		put64(r + 20, S_SLEEP);
		put32(r + 28, (uint32_t)pids[i][1]);
		off += 32;
		prev = times[i];
	}
	put64(page + 8, (off - 16) | (missed ? 1ull << 31 : 0));
}

static void case_add_page(void)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	static uint8_t page[4096];
	const uint64_t t1[] = {100, 110}, t2[] = {300, 310};
	const int p1[][2] = {{0, 10}, {10, 20}}, p2[][2] = {{20, 10}, {10, 0}};

	CHECK(orbit__rp_sched_header_page(d, HEADER_PAGE, strlen(HEADER_PAGE)) == 0);
	CHECK(orbit__rp_sched_format(d, "sched", SWITCH_FORMAT, strlen(SWITCH_FORMAT)) == 0);
	CHECK(orbit__rp_sched_ready(d) == 0);
	make_page(page, 100, 0, t1, p1, 2);
	CHECK(orbit__rp_sched_add_page(tl, d, 0, page, sizeof page) == 2);
	make_page(page, 300, 1, t2, p2, 2); /* events lost between 110 and 300 */
	CHECK(orbit__rp_sched_add_page(tl, d, 0, page, sizeof page) == 2);
	CHECK(orbit__rp_sched_finish(tl, 400) == 0);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->gaps, 1);
	CHECK_EQ_U64(orbit__rp_sched_stats(tl)->lost_unknown, 1);
	/* 20 ran from 110; from the gap's start on it is unknown until 300. */
	CHECK(state_at(tl, 20, 105) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK(state_at(tl, 20, 200) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK(state_at(tl, 10, 200) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK(state_at(tl, 10, 305) == ORBIT__RP_SCHED_RUNNING);
	CHECK(state_at(tl, 10, 350) == ORBIT__RP_SCHED_BLOCKED);
	CHECK(state_at(tl, 10, 105) == ORBIT__RP_SCHED_RUNNING);
	orbit__rp_sched_timeline_free(tl);
	orbit__rp_sched_decoder_free(d);
}

/* Recording since 10; A=10, B=20, C=30, D=40 listed, E=50 not. A first
 * switched out at 30 (it ran), B switched in at 30 (it waited), C woken at
 * 40 (it slept), D created at 20 by wakeup_new, E switched in at 50. */
static struct orbit__rp_sched_timeline *recording_timeline(int gap)
{
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	static const uint32_t listed[] = {10, 20, 30, 40};
	struct orbit__rp_sched_event e = wake(20, 1, 0, 40);

	e.kind = ORBIT__RP_SCHED_WAKEUP_NEW;
	CHECK(orbit__rp_sched_recording(tl, 10, listed, 4) == 0);
	add(tl, e);
	add(tl, sw(30, 0, 10, S_SLEEP, 20));
	add(tl, wake(40, 0, 20, 30));
	add(tl, sw(50, 1, 40, S_SLEEP, 50));
	if (gap) /* events of CPU 1 lost in [15, 25] */
		CHECK(orbit__rp_sched_add_gap(tl, 1, 15, 25, 3) == 0);
	CHECK(orbit__rp_sched_finish(tl, 100) == 0);
	return tl;
}

static void case_recording(void)
{
	struct orbit__rp_sched_timeline *tl = recording_timeline(0);

	EXPECT(times(tl, 10, 0, 30), 20, 0, 0); /* ran from 10 */
	CHECK(state_at(tl, 10, 12) == ORBIT__RP_SCHED_RUNNING);
	CHECK_EQ_U64(orbit__rp_sched_span_at(orbit__rp_sched_thread(tl, 10), 12)->cpu, 0);
	EXPECT(times(tl, 20, 0, 30), 0, 20, 0);                 /* waited from 10 */
	EXPECT(times(tl, 30, 0, 40), 0, 0, 30);                 /* slept from 10 */
	CHECK(state_at(tl, 40, 15) == ORBIT__RP_SCHED_UNKNOWN); /* created at 20 */
	CHECK(state_at(tl, 50, 40) == ORBIT__RP_SCHED_UNKNOWN); /* not listed */
	CHECK(state_at(tl, 10, 5) == ORBIT__RP_SCHED_UNKNOWN);  /* before the start */
	orbit__rp_sched_timeline_free(tl);
	/* A window lost before their first events: nothing is implied. */
	tl = recording_timeline(1);
	CHECK(state_at(tl, 10, 12) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK(state_at(tl, 20, 12) == ORBIT__RP_SCHED_UNKNOWN);
	CHECK(state_at(tl, 30, 12) == ORBIT__RP_SCHED_UNKNOWN);
	EXPECT(times(tl, 10, 30, 35), 0, 0, 5); /* after its event, as ever */
	orbit__rp_sched_timeline_free(tl);
}

/* Marks (KernelMark): events come pass by pass, each pass's events after
 * the mark that follows the one before (so every event at or before a mark
 * is in by then), with gaps, listed threads and a few late events. Every
 * answer given after a mark for an interval orbit__rp_sched_final allows
 * is the answer of the finished timeline. */
#define MARK_QUERIES 30000

static struct {
	int tid;
	uint64_t a, b;
	struct orbit__rp_sched_times t;
} answers[MARK_QUERIES];

static void case_marks(void)
{
	int n = make_random();
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	static const uint32_t listed[] = {1, 2, 3, 4, 5, 6, 13};
	struct orbit__rp_sched_cursor cur[14];
	size_t na = 0, held = 0, late = 0;
	uint64_t mark = 0, prev_end = 0;

	CHECK(orbit__rp_sched_recording(tl, 900, listed, 7) == 0);
	for (int i = 0; i < 14; i++)
		orbit__rp_sched_cursor_init(&cur[i], NULL);
	for (int at = 0; at < n;) {
		int len = 50 + (int)(test_rand(&rng) % 400);
		int end = at + len < n ? at + len : n;

		for (int i = at; i < end; i++) {
			struct orbit__rp_sched_event e = evs[i];
			if (test_rand(&rng) % 200 == 0 && mark > 100) { /* late: before the mark */
				e.time = mark - 1 - test_rand(&rng) % 100;
				late++;
			}
			CHECK(orbit__rp_sched_add(tl, &e) == 0);
			if (i == n / 2) /* listed, and first seen only now: held until then */
				add(tl, wake(evs[i].time, 0, 1, 13));
			if (test_rand(&rng) % 300 == 0)
				CHECK(orbit__rp_sched_add_gap(tl, (uint32_t)(test_rand(&rng) % 4),
				                              evs[i].time - test_rand(&rng) % 2000,
				                              evs[i].time, 1) == 0);
		}
		/* The mark after this pass: the events up to the last one of the
		 * pass before are all in. */
		if (prev_end > mark) {
			mark = prev_end;
			CHECK(orbit__rp_sched_mark(tl, mark) == 0);
			for (int tid = 1; tid <= 13; tid++) {
				const struct orbit__rp_sched_thread *th =
				    orbit__rp_sched_thread(tl, tid);
				for (int q = 0; q < 3 && th != NULL && na < MARK_QUERIES; q++) {
					uint64_t b = mark - test_rand(&rng) % 3000;
					uint64_t a = b - test_rand(&rng) % 5000;
					if (!orbit__rp_sched_final(tl, tid, b)) {
						held++;
						continue;
					}
					if (cur[tid].th == NULL)
						orbit__rp_sched_cursor_init(&cur[tid], th);
					answers[na].tid = tid;
					answers[na].a = a;
					answers[na].b = b;
					if (q == 0)
						orbit__rp_sched_cursor_times(&cur[tid], a, b,
						                             &answers[na].t);
					else
						orbit__rp_sched_times(th, a, b, &answers[na].t);
					na++;
				}
			}
		}
		prev_end = evs[end - 1].time;
		at = end;
	}
	CHECK(orbit__rp_sched_finish(tl, 0) == 0);
	CHECK(orbit__rp_sched_stats(tl)->late == late);
	for (size_t i = 0; i < na; i++) {
		struct orbit__rp_sched_times t;
		orbit__rp_sched_times(orbit__rp_sched_thread(tl, answers[i].tid), answers[i].a,
		                      answers[i].b, &t);
		CHECK_EQ_U64(t.oncpu_ns, answers[i].t.oncpu_ns);
		CHECK_EQ_U64(t.runnable_ns, answers[i].t.runnable_ns);
		CHECK_EQ_U64(t.blocked_ns, answers[i].t.blocked_ns);
		CHECK_EQ_U64(t.unknown_ns, answers[i].t.unknown_ns);
	}
	CHECK(na > 1000 && late > 0 && held > 0);
	printf("%zu answers after marks, all the finished timeline's; %zu held; %zu late events\n",
	       na, held, late);
	orbit__rp_sched_timeline_free(tl);
}

static const struct test_case cases[] = {
    {"basic", case_basic},       {"pending", case_pending},     {"gap_other", case_gap_other},
    {"gap_same", case_gap_same}, {"dead", case_dead},           {"unseen", case_unseen},
    {"names", case_names},       {"order", case_order},         {"random", case_random},
    {"add_page", case_add_page}, {"recording", case_recording}, {"marks", case_marks},
};

TEST_MAIN(cases)
