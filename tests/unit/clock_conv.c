/*
 * clock_conv.c — every time that leaves the agent is CLOCK_MONOTONIC (clock.h;
 * guarantees cited by number are clock.h's).
 *   interpolate  pairs in, exact times out; the mapping is increasing across
 *                pair refreshes
 *   history      a synthetic counter slewed like NTP does, 200000 pairs: a
 *                tick of any age converts within the tolerance of the truth
 *                (nothing is extrapolated), the map never decreases in ticks
 *                nor, for one tick, from one pass to the next (1, 2)
 *   refill       the same with the history filling again and again (5)
 *   reset        a counter that goes back to 0 after an hour, then jumps:
 *                detected, recalibrated, the times around it flagged and
 *                counted, and the times after it exact (3, 4); NTP-like
 *                slewing and odd pair spacing are no jump
 *   step_back    the counter steps back by 2 s (ticks still rising): a tick
 *                read before the step and converted once the new epoch's
 *                pairs have passed it is untrusted, never trusted 2 s off;
 *                one read 3 s after the step is exact and trusted (4)
 *   error        a value emitted between two clock_gettime reads converts to
 *                a time within 1 µs of them
 *   monotonic    two threads emit flat out across many drains: each thread's
 *                converted times never go backwards
 *   late [S]     S seconds (default 12) of producers that read their ticks and
 *                are then held, some for longer than the pairs the agent
 *                keeps exactly, before they claim and publish, and one that
 *                stalls the ring between claim and publish: every record
 *                within 1 µs of clock_gettime at its tick read, no thread's
 *                times backwards, none flagged (ORBIT_DRAIN_MS defaults to 1
 *                here, so the exact window is about 2 s)
 * Run with ORBIT_CLOCK=monotonic too (ctest does): producers then read
 * clock_gettime and conversion is the identity.
 */
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "harness.h"
#include "lifecycle.h"
#include "orbit.h"

static struct orbit__clock_conv conv; /* ~100 KiB: not on the stack */

static void interpolate(void)
{
	struct orbit__clock_conv *c = &conv;
	orbit__clock_init(c, ORBIT__CLOCK_TSC);
	/* 3 ticks per ns, then 2.5: a rate change, as NTP's slewing makes. */
	orbit__clock_add_pair(c, (struct orbit__clock_pair){1000, 5000});
	orbit__clock_add_pair(c, (struct orbit__clock_pair){4000, 6000});
	orbit__clock_add_pair(c, (struct orbit__clock_pair){6500, 7000});
	orbit__clock_add_pair(c, (struct orbit__clock_pair){7000, 6999}); /* ns earlier: refused */
	CHECK_EQ_U64(c->count, 3);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 1000), 5000);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 2500), 5500);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 4000), 6000);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 5250), 6500);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 6500), 7000);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 9000), 8000); /* extended at 2.5 */
	CHECK_EQ_U64(orbit__clock_to_ns(c, 700), 4900);  /* before the first pair */
	uint64_t prev = 0;
	for (uint64_t t = 0; t < 10000; t++) {
		uint64_t ns = orbit__clock_to_ns(c, t);
		CHECK(ns >= prev);
		prev = ns;
	}
	/* Pairs leave the recent ring; conversion goes on, exactly, for the
	 * old ticks too (a straight line thins to its two ends). */
	for (uint64_t i = 0; i < 3 * ORBIT__CLOCK_PAIRS; i++)
		orbit__clock_add_pair(c, (struct orbit__clock_pair){10000 + 3 * i, 8000 + i});
	CHECK_EQ_U64(c->count, ORBIT__CLOCK_PAIRS);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 10000 + 3 * 2500 + 1), 8000 + 2500);
	/* The oldest ticks: within the tolerance above the exact times. */
	const uint64_t tol = orbit__clock_tolerance(c);
	CHECK_EQ_U64(tol, ORBIT__CLOCK_THIN_NS);
	const struct {
		uint64_t ticks, ns;
	} old[] = {{1000, 5000}, {2500, 5500}, {5250, 6500}, {6500, 7000}, {10000 + 3 * 10, 8010}};
	for (size_t i = 0; i < sizeof old / sizeof old[0]; i++) {
		uint64_t ns = orbit__clock_to_ns(c, old[i].ticks);
		CHECK(ns >= old[i].ns && ns <= old[i].ns + tol);
	}
	CHECK_EQ_U64(orbit__clock_rate(c),
	             3000000000ull); /* over the epoch: 18213 ticks, 6071 ns */
}

/* ---- a synthetic counter: 3 GHz, slewed, pairs with noise ---------------- */

#define PAIR_TICKS 30000000ull /* 10 ms at 3 GHz */
#define NOISE_NS 20

struct synth {
	uint64_t rng;
	uint32_t every; /* pairs between rate changes */
	double ppm, ppm_step, ppm_max;
	/* rate pieces: from ticks[k] on, ns = ns0[k] + (t - ticks[k]) * rate[k] */
	uint64_t *ticks;
	double *ns0, *rate;
	size_t n, cap;
};

static void synth_piece(struct synth *s, uint64_t at_ticks, double at_ns, double rate)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 1024;
		s->ticks = realloc(s->ticks, s->cap * sizeof *s->ticks);
		s->ns0 = realloc(s->ns0, s->cap * sizeof *s->ns0);
		s->rate = realloc(s->rate, s->cap * sizeof *s->rate);
		CHECK(s->ticks && s->ns0 && s->rate);
	}
	s->ticks[s->n] = at_ticks;
	s->ns0[s->n] = at_ns;
	s->rate[s->n] = rate;
	s->n++;
}

static void synth_free(struct synth *s)
{
	free(s->ticks);
	free(s->ns0);
	free(s->rate);
}

/* The truth: CLOCK_MONOTONIC at ticks. */
static double synth_ns(const struct synth *s, uint64_t t)
{
	size_t lo = 0, hi = s->n;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (s->ticks[mid] <= t)
			lo = mid;
		else
			hi = mid;
	}
	return s->ns0[lo] + (double)(int64_t)(t - s->ticks[lo]) * s->rate[lo];
}

/* Pair k: ticks a little off the 10 ms grid, ns with noise. */
static struct orbit__clock_pair synth_pair(struct synth *s, uint64_t k, uint64_t t0)
{
	uint64_t t = t0 + k * PAIR_TICKS + test_rand(&s->rng) % 6000;
	if (k > 0 && k % s->every == 0) { /* the slew changes, as NTP's does */
		double step = (double)(test_rand(&s->rng) % 3) - 1.0;
		s->ppm += step * s->ppm_step;
		if (fabs(s->ppm) > s->ppm_max)
			s->ppm -= 2 * step * s->ppm_step;
		synth_piece(s, t, synth_ns(s, t), (1.0 + s->ppm * 1e-6) / 3.0);
	}
	double ns =
	    synth_ns(s, t) + (double)(int)(test_rand(&s->rng) % (2 * NOISE_NS + 1)) - NOISE_NS;
	return (struct orbit__clock_pair){t, (uint64_t)llround(ns)};
}

#define SAMPLES_MAX 16384u

struct sample {
	uint64_t ticks, seen; /* seen: its time at the last check, 0 before */
};

static int by_ticks(const void *a, const void *b)
{
	uint64_t x = ((const struct sample *)a)->ticks, y = ((const struct sample *)b)->ticks;
	return x < y ? -1 : x > y;
}

/* The exact map: interpolation between every pair taken (kept by the
 * test, all of them), rounded down. */
static uint64_t exact_map(const struct orbit__clock_pair *p, uint64_t n, uint64_t t)
{
	uint64_t lo = 0, hi = n - 1;
	while (hi - lo > 1) {
		uint64_t mid = (lo + hi) / 2;
		if (p[mid].ticks <= t)
			lo = mid;
		else
			hi = mid;
	}
	return p[lo].ns + (uint64_t)((unsigned __int128)(p[hi].ns - p[lo].ns) * (t - p[lo].ticks) /
	                             (p[hi].ticks - p[lo].ticks));
}

/*
 * Guarantees 1, 2 (and 5 when the history refills), checked at every 1000th
 * pair on samples of every age, kept from check to check, and on probes
 * around where the recent pairs end (where pieces change kind):
 *  - exact <= converted <= exact + the tolerance at that age (exact: the
 *    interpolation between all the pairs; the cursor may round 2 ns down);
 *  - converted times never decrease along the ticks, nor for one tick from
 *    one check to the next;
 *  - and, against the synthetic truth, the error stays within the pairs'
 *    noise and the rate's bend, plus the tolerance.
 */
static void history(uint32_t every, double ppm_step, uint64_t pairs)
{
	struct orbit__clock_conv *c = &conv;
	orbit__clock_init(c, ORBIT__CLOCK_TSC);
	struct synth s = {
	    .rng = 0x9e3779b97f4a7c15ull, .every = every, .ppm_step = ppm_step, .ppm_max = 300};
	const uint64_t t0 = 1000000000ull;
	synth_piece(&s, 0, 1e12, 1.0 / 3.0);
	struct orbit__clock_pair *all = calloc(pairs, sizeof *all);
	CHECK(all != NULL);
	static struct sample sample[SAMPLES_MAX];
	uint32_t nsample = 0;
	uint64_t worst = 0, checked = 0, last_ticks = t0 + 6000; /* after the first pair */
	for (uint64_t k = 0; k < pairs; k++) {
		struct orbit__clock_pair p = synth_pair(&s, k, t0);
		all[k] = p;
		orbit__clock_add_pair(c, p);
		if (k % 1000 != 999)
			continue;
		/* New samples among the last 1000 pairs' ticks, and probes
		 * around the oldest recent pairs: at, beside and between them. */
		for (int j = 0; j < 16 && nsample < SAMPLES_MAX; j++)
			sample[nsample++] = (struct sample){
			    last_ticks + (p.ticks - last_ticks) / 16 * (uint64_t)j + 7, 0};
		last_ticks = p.ticks;
		for (uint64_t j = k - ORBIT__CLOCK_PAIRS - 4;
		     k > ORBIT__CLOCK_PAIRS + 4 && j < k + 4 - ORBIT__CLOCK_PAIRS &&
		     nsample + 4 <= SAMPLES_MAX;
		     j++) {
			uint64_t t = all[j].ticks;
			sample[nsample++] = (struct sample){t - 1, 0};
			sample[nsample++] = (struct sample){t, 0};
			sample[nsample++] = (struct sample){t + 1, 0};
			sample[nsample++] = (struct sample){t + (all[j + 1].ticks - t) / 2, 0};
		}
		qsort(sample, nsample, sizeof sample[0], by_ticks);
		struct orbit__clock_cursor cur;
		orbit__clock_cursor_init(&cur, c);
		uint64_t prev = 0;
		for (uint32_t i = 0; i < nsample; i++) {
			uint64_t t = sample[i].ticks;
			uint64_t ns = orbit__clock_cursor_to_ns(&cur, t);
			uint64_t exact = orbit__clock_to_ns(c, t);
			uint64_t ref = exact_map(all, k + 1, t);
			uint64_t tol = orbit__clock_tolerance_at(c, t);
			double truth = synth_ns(&s, t);
			uint64_t err = (uint64_t)llround(fabs((double)ns - truth));
			if (err > worst)
				worst = err;
			if (ns + 2 < ref || ns > ref + tol + 1 || exact + 2 < ref ||
			    exact > ref + tol + 1 || ns > exact || err > 2 * NOISE_NS + 60 + tol ||
			    ns < sample[i].seen || ns < prev) {
				fprintf(stderr,
				        "pair %" PRIu64 ", sample %u (ticks %" PRIu64 "): %" PRIu64
				        " ns, exact %" PRIu64 ", reference %" PRIu64
				        " (tolerance %" PRIu64
				        "), truth %.0f, the tick before it %" PRIu64
				        ", at the last check %" PRIu64 "\n",
				        k, i, t, ns, exact, ref, tol, truth, prev, sample[i].seen);
				CHECK(0);
			}
			sample[i].seen = prev = ns;
			checked++;
		}
	}
	uint64_t tol = orbit__clock_tolerance(c);
	printf("%" PRIu64 " pairs, %" PRIu64 " conversions checked: worst error %" PRIu64
	       " ns; tolerance %" PRIu64 " ns\n",
	       pairs, checked, worst, tol);
	CHECK_EQ_U64(orbit__clock_resets(c), 0);
	if (every >= 1000) { /* as slewed as NTP slews: the first tolerance holds */
		CHECK(tol == ORBIT__CLOCK_THIN_NS && worst <= 1000);
	} else { /* refilled at least twice; the newest history kept its own */
		CHECK(tol >= 4 * ORBIT__CLOCK_THIN_NS);
		CHECK_EQ_U64(orbit__clock_tolerance_at(c, last_ticks - 10 * PAIR_TICKS * 1024),
		             ORBIT__CLOCK_THIN_NS);
		CHECK_EQ_U64(orbit__clock_tolerance_at(c, t0 + 6007), tol);
	}
	free(all);
	synth_free(&s);
}

/* Guarantees 3 and 4 with injected pairs. */
static void reset(void)
{
	struct orbit__clock_conv *c = &conv;
	orbit__clock_init(c, ORBIT__CLOCK_TSC);
	/* An hour at exactly 3 ticks per ns, a pair every 100 ms. */
	const uint64_t hour = 3600000000000ull, step = 100000000ull, boot = 5000000000ull;
	uint64_t ns = boot;
	for (; ns < boot + hour; ns += step)
		CHECK_EQ_U64(orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * ns, ns}),
		             ORBIT__CLOCK_ADDED);
	const uint64_t last_old = ns - step;
	CHECK_EQ_U64(orbit__clock_to_ns(c, 3 * (ns - step / 2)), ns - step / 2);
	/* A pass copies records: read before the reset, and after it. The
	 * counter restarts at 0 at ns - 50 ms. */
	const uint64_t reset_ns = ns - step / 2;
	uint64_t before_reset = 3 * (reset_ns - 1000); /* old epoch */
	uint64_t after_reset = 3 * (1000000);          /* new epoch, 1 ms after the reset */
	/* Then the pass's pairs: the first one starts a new epoch. */
	int first = orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * (ns - reset_ns), ns});
	int more = ORBIT__CLOCK_ADDED;
	for (int i = 1; i <= 4; i++) /* 2 ms more, as the agent's calibrate() takes */
		more |= orbit__clock_add_pair(
		    c, (struct orbit__clock_pair){3 * (ns - reset_ns + i * 500000ull),
		                                  ns + i * 500000ull});
	const uint64_t newest = ns + 4 * 500000ull;
	/* The pass converts its records: times first, then what it says. */
	struct orbit__clock_cursor cur;
	orbit__clock_cursor_init(&cur, c);
	uint64_t v_before = orbit__clock_cursor_to_ns(&cur, before_reset);
	int u_before = orbit__clock_cursor_untrusted(&cur);
	uint64_t v_after = orbit__clock_cursor_to_ns(&cur, after_reset);
	int u_after = orbit__clock_cursor_untrusted(&cur);
	uint64_t v_in = orbit__clock_cursor_to_ns(&cur, 3 * (ns - reset_ns + 700000));
	int u_in = orbit__clock_cursor_untrusted(&cur);
	printf("after the reset: %" PRIu64 " ns for a tick 1 ms after it (truth %" PRIu64
	       "), %" PRIu64 " for a tick inside the new epoch (truth %" PRIu64 ")\n",
	       v_after, reset_ns + 1000000, v_in, ns + 700000);
	CHECK(v_in <= ns + 700000 && v_in + 1 >= ns + 700000); /* exact; the cursor rounds down */
	CHECK_EQ_U64(v_after, reset_ns + 1000000);             /* the new rate, extended back */
	CHECK(v_before >= last_old && v_before <= newest);     /* between the epoch's bounds */
	CHECK_EQ_U64(first, ORBIT__CLOCK_RESET);
	CHECK_EQ_U64(more, ORBIT__CLOCK_ADDED);
	CHECK_EQ_U64(orbit__clock_resets(c), 1);
	CHECK(u_before && u_after && !u_in);
	CHECK_EQ_U64(orbit__clock_untrusted(c), 2);
	/* The epoch goes on: an hour later, still exact. */
	for (ns = newest + step; ns < newest + hour; ns += step)
		CHECK_EQ_U64(
		    orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * (ns - reset_ns), ns}),
		    ORBIT__CLOCK_ADDED);
	CHECK_EQ_U64(orbit__clock_to_ns(c, 3 * (newest + 1234567 - reset_ns)), newest + 1234567);
	CHECK_EQ_U64(orbit__clock_rate(c), 3000000000ull);
	/* A jump forward of 333 s (a VM moved to a host with another offset). */
	uint64_t off = 3 * (reset_ns - 333000000000ull);
	first = orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * ns - off, ns});
	for (uint64_t i = 1; i <= 10; i++)
		orbit__clock_add_pair(
		    c, (struct orbit__clock_pair){3 * (ns + i * step) - off, ns + i * step});
	CHECK_EQ_U64(orbit__clock_to_ns(c, 3 * (ns + 5 * step + 17) - off), ns + 5 * step + 17);
	CHECK_EQ_U64(first, ORBIT__CLOCK_RESET);
	CHECK_EQ_U64(orbit__clock_resets(c), 2);
	/* A pair earlier in ns is refused; equal ticks too. */
	ns += 10 * step;
	CHECK_EQ_U64(orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * ns - off + 3, ns - 1}),
	             ORBIT__CLOCK_REFUSED);
	CHECK_EQ_U64(orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * ns - off, ns + 5}),
	             ORBIT__CLOCK_REFUSED);
	CHECK_EQ_U64(orbit__clock_resets(c), 2);

	/* No jump: ±300 ppm of slew, noise, pairs from 2 µs to 60 s apart. */
	orbit__clock_init(c, ORBIT__CLOCK_TSC);
	struct synth s = {.rng = 12345, .every = 50, .ppm_step = 50, .ppm_max = 300};
	synth_piece(&s, 0, 1e9, 1.0 / 3.0);
	uint64_t t = 3000000000ull;
	for (int k = 0; k < 20000; k++) {
		uint64_t gap = k % 1000 == 999 ? 180000000000ull : k % 7 == 3 ? 6000 : PAIR_TICKS;
		t += gap + test_rand(&s.rng) % 3000;
		if (k % s.every == 0) {
			s.ppm = (double)(int)(test_rand(&s.rng) % 601) - 300;
			synth_piece(&s, t, synth_ns(&s, t), (1.0 + s.ppm * 1e-6) / 3.0);
		}
		double n = synth_ns(&s, t) + (double)(int)(test_rand(&s.rng) % 41) - 20;
		int r =
		    orbit__clock_add_pair(c, (struct orbit__clock_pair){t, (uint64_t)llround(n)});
		CHECK(r != ORBIT__CLOCK_RESET);
	}
	CHECK_EQ_U64(orbit__clock_resets(c), 0);
	synth_free(&s);
}

/* ---- records from the agent ---- */

#define MAX_RECORDS 4000000u
static struct orbit_rec {
	uint64_t time, id;
	uint32_t tid;
	uint8_t flags;
	uint64_t delivered; /* when the sink got it */
} * recs;
static uint64_t nrecs;

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *r, uint32_t n)
{
	(void)ctx;
	(void)ring;
	(void)first;
	uint64_t now = test_now_ns(CLOCK_MONOTONIC);
	for (uint32_t i = 0; i < n && nrecs < MAX_RECORDS; i++) {
		if (r[(size_t)i * 56 + 20] == ORBIT__THREAD_END)
			continue; /* a producer's last record: not a sample */
		memcpy(&recs[nrecs].time, r + (size_t)i * 56, 8);
		memcpy(&recs[nrecs].id, r + (size_t)i * 56 + 8, 8);
		memcpy(&recs[nrecs].tid, r + (size_t)i * 56 + 16, 4);
		recs[nrecs].flags = r[(size_t)i * 56 + 21];
		recs[nrecs].delivered = now;
		nrecs++;
	}
}

static void start_capture(void)
{
	recs = calloc(MAX_RECORDS, sizeof *recs);
	CHECK(recs != NULL);
	struct orbit__sink sink = {.records = on_records};
	orbit__agent_set_sink(orbit__root_agent(), &sink);
	CHECK(orbit_init() == 0);
}

/* How far t lies outside [before, after]. */
static uint64_t outside(uint64_t t, uint64_t before, uint64_t after)
{
	return t < before ? before - t : t > after ? t - after : 0;
}

#define SAMPLES 2000u

static void error(void)
{
	static uint64_t before[SAMPLES], after[SAMPLES];
	start_capture();
	for (uint32_t i = 0; i < SAMPLES; i++) {
		before[i] = test_now_ns(CLOCK_MONOTONIC);
		ORBIT_UINT("sample", i);
		after[i] = test_now_ns(CLOCK_MONOTONIC);
		struct timespec ts = {0, 200000}; /* 0.4 s in all: many pairs */
		nanosleep(&ts, NULL);
	}
	CHECK(orbit_flush() == 0);
	CHECK_EQ_U64(nrecs, SAMPLES);
	uint64_t worst = 0;
	for (uint64_t k = 0; k < nrecs; k++) {
		uint64_t i = recs[k].id;
		CHECK(i < SAMPLES);
		uint64_t err = outside(recs[k].time, before[i], after[i]);
		if (err > worst)
			worst = err;
	}
	printf("clock %u: worst distance outside the clock_gettime bracket: %" PRIu64 " ns\n",
	       orbit__clock_kind, worst);
	CHECK(worst <= 1000);
	orbit_shutdown();
}

#define PER_THREAD 1500000u

static void *spin(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < PER_THREAD; i++)
		ORBIT_UINT("m", i);
	return NULL;
}

static void monotonic(void)
{
	setenv("ORBIT_RINGS", "1", 1);
	setenv("ORBIT_RING_BUDGET", "256M", 1); /* no lapping: all records seen */
	setenv("ORBIT_DRAIN_MS", "1", 1);
	start_capture();
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		CHECK(pthread_create(&t[i], NULL, spin, NULL) == 0);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK(orbit_flush() == 0);
	CHECK_EQ_U64(nrecs, 2ull * PER_THREAD);
	uint32_t tids[2] = {0, 0};
	uint64_t last[2] = {0, 0}, seen[2] = {0, 0}, back = 0;
	for (uint64_t k = 0; k < nrecs; k++) {
		int j = (tids[0] == 0 || tids[0] == recs[k].tid) ? 0 : 1;
		tids[j] = recs[k].tid;
		if (recs[k].time < last[j])
			back++;
		last[j] = recs[k].time;
		seen[j]++;
	}
	CHECK_EQ_U64(seen[0], PER_THREAD);
	CHECK_EQ_U64(seen[1], PER_THREAD);
	CHECK_EQ_U64(back, 0);
	orbit_shutdown();
}

/* ---- late publication ---------------------------------------------------- */

#define LATE_THREADS 8 /* 6 held before the claim, 1 staller, 1 never held */
#define LATE_MAX 3000000u

static struct {
	uint64_t before, after, held_ns;
} * truth;
static _Atomic uint64_t late_next;
static _Atomic int late_stop;
static uint64_t late_hold_max_ns;

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
	nanosleep(&ts, NULL);
}

/* Roles 0..5: held before the claim, now and then for seconds; role 6: held
 * between claim and publish (the ring stalls, every thread's records are
 * delivered late); role 7: never held. */
static void *late_producer(void *arg)
{
	int role = (int)(intptr_t)arg;
	uint64_t rng = 0x1234567ull * (uint64_t)(role + 1);
	struct orbit__thread *t = orbit__self();
	CHECK(t != NULL);
	while (!atomic_load_explicit(&late_stop, memory_order_relaxed)) {
		uint64_t i = atomic_fetch_add_explicit(&late_next, 1, memory_order_relaxed);
		if (i >= LATE_MAX)
			break;
		uint64_t hold = 0, r = test_rand(&rng);
		if (role < 6 && r % 500 == 0)
			hold = r / 500 % late_hold_max_ns;
		else if (role == 6 && r % 20000 == 0)
			hold = r / 20000 % (late_hold_max_ns / 4 + 1);
		truth[i].held_ns = hold;
		truth[i].before = test_now_ns(CLOCK_MONOTONIC);
		uint64_t time = orbit__ticks();
		truth[i].after = test_now_ns(CLOCK_MONOTONIC);
		if (role < 6 && hold)
			sleep_ns(hold); /* late: its ticks are old when it is claimed */
		uint64_t claim;
		struct orbit__slot *s = orbit__claim(t, &claim);
		uint64_t check = orbit__fill(s, time, ORBIT__VALUE_UINT64, i, t->tid, "late", 4);
		if (role == 6 && hold)
			sleep_ns(hold); /* claimed, unpublished: the drain waits */
		orbit__publish(s, claim, check);
		sleep_ns(100000 + r % 200000);
	}
	return NULL;
}

static void late(uint64_t seconds)
{
	setenv("ORBIT_RINGS", "1", 1);          /* one ring: the stall holds everyone */
	setenv("ORBIT_RING_BUDGET", "256M", 1); /* no lapping: all records seen */
	setenv("ORBIT_DRAIN_MS", "1", 0);       /* exact pairs cover ~2 s */
	late_hold_max_ns = seconds * 1000000000ull / 2;
	if (late_hold_max_ns > 20000000000ull) /* the stall stays well under the backstop */
		late_hold_max_ns = 20000000000ull;
	truth = calloc(LATE_MAX, sizeof *truth);
	CHECK(truth != NULL);
	start_capture();
	pthread_t th[LATE_THREADS];
	for (int i = 0; i < LATE_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, late_producer, (void *)(intptr_t)i) == 0);
	sleep_ns(seconds * 1000000000ull);
	atomic_store(&late_stop, 1);
	for (int i = 0; i < LATE_THREADS; i++)
		pthread_join(th[i], NULL);
	CHECK(orbit_flush() == 0);
	uint64_t n = atomic_load(&late_next);
	if (n > LATE_MAX)
		n = LATE_MAX;
	CHECK_EQ_U64(nrecs, n);
	/* Past the recent pairs for sure: older than ORBIT__CLOCK_PAIRS passes
	 * at the longest period, by a fifth. */
	const char *period = getenv("ORBIT_DRAIN_MS");
	uint64_t aged_ns = ORBIT__CLOCK_PAIRS * strtoull(period, NULL, 10) * 1200000ull;
	uint64_t worst = 0, worst_late = 0, held = 0, flagged = 0, back = 0, over = 0;
	struct {
		uint32_t tid;
		uint64_t last;
	} th_last[LATE_THREADS] = {{0, 0}};
	for (uint64_t k = 0; k < nrecs; k++) {
		uint64_t i = recs[k].id;
		CHECK(i < n);
		uint64_t err = outside(recs[k].time, truth[i].before, truth[i].after);
		if (err > worst)
			worst = err;
		if (recs[k].delivered - truth[i].before > aged_ns) {
			held++;
			if (err > worst_late)
				worst_late = err;
		}
		if (err > 1000) {
			if (over++ < 10)
				fprintf(
				    stderr, "record %" PRIu64 " (held %.3f s): %+" PRId64 " ns\n",
				    i, (double)truth[i].held_ns / 1e9,
				    recs[k].time < truth[i].before ? -(int64_t)err : (int64_t)err);
		}
		if (recs[k].flags & ORBIT__FLAG_TIME_UNTRUSTED)
			flagged++;
		int j = 0;
		while (j < LATE_THREADS && th_last[j].tid != 0 && th_last[j].tid != recs[k].tid)
			j++;
		CHECK(j < LATE_THREADS);
		th_last[j].tid = recs[k].tid;
		if (recs[k].time < th_last[j].last)
			back++;
		th_last[j].last = recs[k].time;
	}
	printf("clock %u, %" PRIu64 " s, drain period %s ms: %" PRIu64 " records, %" PRIu64
	       " delivered over %.1f s after their clock read; worst distance outside the "
	       "clock_gettime bracket %" PRIu64 " ns (those: %" PRIu64 " ns); %" PRIu64
	       " over 1 µs, %" PRIu64 " backwards, %" PRIu64 " flagged untrusted\n",
	       orbit__clock_kind, seconds, period, nrecs, held, (double)aged_ns / 1e9, worst,
	       worst_late, over, back, flagged);
	CHECK_EQ_U64(over, 0);
	CHECK(held > 0 || orbit__clock_kind == ORBIT__CLOCK_MONOTONIC);
	CHECK_EQ_U64(back, 0);
	CHECK_EQ_U64(flagged, 0);
	orbit_shutdown();
}

static void case_history(void)
{
	history(1000, 5, 200000);
}

static void case_refill(void)
{
	history(3, 3, 200000);
}

/* Guarantee 4 for ticks both epochs read: a step back of X = 2 s. */
static void step_back(void)
{
	struct orbit__clock_conv *c = &conv;
	orbit__clock_init(c, ORBIT__CLOCK_TSC);
	const uint64_t step = 100000000ull, x = 2000000000ull, boot = 5000000000ull;
	uint64_t ns = boot;
	for (; ns < boot + 10 * 1000000000ull; ns += step) /* 10 s at 3 ticks per ns */
		orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * ns, ns});
	const uint64_t step_ns = ns - step / 2;         /* the counter steps back by x here */
	const uint64_t old_tick = 3 * (step_ns - 1000); /* read before it, drained late */
	int first = ORBIT__CLOCK_ADDED;
	for (uint64_t i = 0; i < 50; i++, ns += step) /* 5 s after it */
		first |= orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * (ns - x), ns});
	CHECK(first & ORBIT__CLOCK_RESET);
	CHECK_EQ_U64(orbit__clock_resets(c), 1);
	struct orbit__clock_cursor cur;
	orbit__clock_cursor_init(&cur, c);
	/* A claim below the cursor at the reset (drain_pass.c): maybe old. */
	cur.maybe_old = 1;
	uint64_t before = orbit__clock_untrusted(c);
	uint64_t v_old = orbit__clock_cursor_to_ns(&cur, old_tick);
	int u_old = orbit__clock_cursor_untrusted(&cur);
	uint64_t late = step_ns + 3000000000ull; /* a tick read 3 s after the step */
	uint64_t v_late = orbit__clock_cursor_to_ns(&cur, 3 * (late - x));
	int u_late = orbit__clock_cursor_untrusted(&cur);
	printf("step back of 2 s: a tick read 1 µs before it converts to %+.3f s from its truth, "
	       "untrusted %d; one 3 s after it %+lld ns, untrusted %d\n",
	       ((double)v_old - (double)(step_ns - 1000)) / 1e9, u_old,
	       (long long)v_late - (long long)late, u_late);
	CHECK(u_old);
	CHECK_EQ_U64(orbit__clock_untrusted(c), before + 1);
	CHECK(!u_late);
	CHECK(v_late <= late && v_late + 1 >= late);
	/* A claim made after the reset was found read its ticks after it:
	 * the same ticks are the new epoch's, trusted. */
	cur.maybe_old = 0;
	orbit__clock_cursor_to_ns(&cur, old_tick);
	CHECK(!orbit__clock_cursor_untrusted(&cur));
}

static const char *late_seconds; /* late's S, for a longer run by hand */

static void case_late(void)
{
	late(late_seconds ? strtoull(late_seconds, NULL, 10) : 12);
}

static const struct test_case cases[] = {
    {"interpolate", interpolate}, {"history", case_history},
    {"refill", case_refill},      {"reset", reset},
    {"step_back", step_back},     {"error", error},
    {"monotonic", monotonic},     {"late", case_late},
};

TEST_MAIN_WITH(cases, .args = "[S]", .arg = &late_seconds)
