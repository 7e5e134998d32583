/*
 * clock_conv.c — every time that leaves the agent is CLOCK_MONOTONIC (clock.h).
 *   interpolate  pairs in, exact times out; the mapping is increasing across
 *                pair refreshes
 *   error        a value emitted between two clock_gettime reads converts to
 *                a time within 1 µs of them
 *   monotonic    two threads emit flat out across many drains: each thread's
 *                converted times never go backwards
 * Run with ORBIT_CLOCK=monotonic too (ctest does): producers then read
 * clock_gettime and conversion is the identity.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "agent.h"
#include "check.h"
#include "clock.h"
#include "orbit.h"

static int interpolate(void)
{
	struct orbit__clock_conv c;
	orbit__clock_init(&c, ORBIT__CLOCK_TSC);
	/* 3 ticks per ns, then 2.5: a rate change, as NTP's slewing makes. */
	orbit__clock_add_pair(&c, (struct orbit__clock_pair){1000, 5000});
	orbit__clock_add_pair(&c, (struct orbit__clock_pair){4000, 6000});
	orbit__clock_add_pair(&c, (struct orbit__clock_pair){6500, 7000});
	orbit__clock_add_pair(&c, (struct orbit__clock_pair){6000, 9000}); /* earlier: ignored */
	CHECK_EQ_U64(c.count, 3);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 1000), 5000);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 2500), 5500);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 4000), 6000);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 5250), 6500);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 6500), 7000);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 9000), 8000); /* extrapolated at 2.5 */
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 700), 4900);  /* before the first pair */
	uint64_t prev = 0;
	for (uint64_t t = 0; t < 10000; t++) {
		uint64_t ns = orbit__clock_to_ns(&c, t);
		CHECK(ns >= prev);
		prev = ns;
	}
	/* The history is a ring: the oldest pairs go, conversion goes on. */
	for (uint64_t i = 0; i < 3 * ORBIT__CLOCK_PAIRS; i++)
		orbit__clock_add_pair(&c, (struct orbit__clock_pair){10000 + 3 * i, 8000 + i});
	CHECK_EQ_U64(c.count, ORBIT__CLOCK_PAIRS);
	CHECK_EQ_U64(orbit__clock_to_ns(&c, 10000 + 3 * 2500 + 1), 8000 + 2500);
	CHECK_EQ_U64(orbit__clock_rate(&c), 3000000000ull); /* ticks per second */
	return 0;
}

/* ---- records from the agent ---- */

#define MAX_RECORDS 4000000u
static struct orbit_rec {
	uint64_t time, id;
	uint32_t tid;
} * recs;
static uint64_t nrecs;

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *r, uint32_t n)
{
	(void)ctx;
	(void)ring;
	(void)first;
	for (uint32_t i = 0; i < n && nrecs < MAX_RECORDS; i++, nrecs++) {
		memcpy(&recs[nrecs].time, r + (size_t)i * 56, 8);
		memcpy(&recs[nrecs].id, r + (size_t)i * 56 + 8, 8);
		memcpy(&recs[nrecs].tid, r + (size_t)i * 56 + 16, 4);
	}
}

static void start_capture(void)
{
	recs = calloc(MAX_RECORDS, sizeof *recs);
	CHECK(recs != NULL);
	struct orbit__sink sink = {.records = on_records};
	orbit__agent_set_sink(&sink);
	CHECK(orbit_init() == 0);
}

static uint64_t mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define SAMPLES 2000u

static int error(void)
{
	static uint64_t before[SAMPLES], after[SAMPLES];
	start_capture();
	for (uint32_t i = 0; i < SAMPLES; i++) {
		before[i] = mono();
		ORBIT_UINT("sample", i);
		after[i] = mono();
		struct timespec ts = {0, 200000}; /* 0.4 s in all: many pairs */
		nanosleep(&ts, NULL);
	}
	CHECK(orbit_flush() == 0);
	CHECK_EQ_U64(nrecs, SAMPLES);
	int64_t worst = 0;
	for (uint64_t k = 0; k < nrecs; k++) {
		uint64_t i = recs[k].id, t = recs[k].time;
		CHECK(i < SAMPLES);
		int64_t err = 0;
		if (t < before[i])
			err = (int64_t)(before[i] - t);
		else if (t > after[i])
			err = (int64_t)(t - after[i]);
		if (err > worst)
			worst = err;
	}
	printf("clock %u: worst distance outside the clock_gettime bracket: %lld ns\n",
	       orbit__clock_kind, (long long)worst);
	CHECK(worst <= 1000);
	orbit_shutdown();
	return 0;
}

#define PER_THREAD 1500000u

static void *spin(void *arg)
{
	(void)arg;
	for (uint32_t i = 0; i < PER_THREAD; i++)
		ORBIT_UINT("m", i);
	return NULL;
}

static int monotonic(void)
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
	return 0;
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "";
	if (strcmp(which, "interpolate") == 0)
		return interpolate();
	if (strcmp(which, "error") == 0)
		return error();
	if (strcmp(which, "monotonic") == 0)
		return monotonic();
	fprintf(stderr, "usage: clock_conv interpolate|error|monotonic\n");
	return 2;
}
