/*
 * pipeline_producer.c — instrumented programs for the pipeline tests
 * (pipeline.sh), traced through the environment (ORBIT_COLLECTOR,
 * ORBIT_CAPTURE) and linked like a user's program, against liborbit.so.
 *
 *   pipeline_producer one             one scope, then exit at once
 *   pipeline_producer spin RATE SEC   one thread that never pauses: a scope,
 *                                     then busy-wait until the next is due
 *                                     (RATE events per second), SEC seconds
 *   pipeline_producer burst T N       T threads, each N records as fast as
 *                                     it can (nested scopes, long names,
 *                                     values, a log line every 64)
 *
 * Prints the events it emitted on stdout.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "orbit.h"

static atomic_int go;

struct burst {
	int t;
	uint64_t n, emitted;
};

/* 10 records an iteration; see bench/bench_pipeline.c. */
static void *burst(void *arg)
{
	struct burst *b = arg;
	while (!atomic_load(&go))
		;
	for (uint64_t i = 0; b->emitted + 10 <= b->n; i++) {
		char name[48];
		snprintf(name, sizeof name, "t%d item %" PRIu64, b->t, i & 1023);
		ORBIT_START("burst outer scope with a name over 32 B");
		ORBIT_START("inner");
		ORBIT_INT("queue depth", (int)(i % 17));
		ORBIT_DOUBLE("load", (double)i * 0.5);
		ORBIT_STOP();
		ORBIT_START(name);
		ORBIT_STOP();
		ORBIT_STOP();
		ORBIT_UINT64("bytes", i);
		if (i % 64 == 0)
			ORBIT_LOG("t%d reached %" PRIu64, b->t, i);
		b->emitted += 10;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "one") == 0) {
		{
			ORBIT_SCOPE("the one scope");
		}
		printf("2\n");
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "spin") == 0) {
		double rate = atof(argv[2]);
		uint64_t len = (uint64_t)(atof(argv[3]) * 1e9),
		         start = test_now_ns(CLOCK_MONOTONIC), n = 0;
		double step = 2e9 / rate; /* a scope is two events */
		for (uint64_t k = 0;; k++) {
			uint64_t due = start + (uint64_t)((double)k * step), now;
			while ((now = test_now_ns(CLOCK_MONOTONIC)) < due)
				;
			if (now - start >= len)
				break;
			ORBIT_SCOPE("never pauses");
			n += 2;
		}
		printf("%" PRIu64 "\n", n);
		return 0;
	}
	if (argc == 4 && strcmp(argv[1], "burst") == 0) {
		int threads = atoi(argv[2]);
		uint64_t n = strtoull(argv[3], NULL, 10), total = 0;
		struct burst b[64];
		pthread_t t[64];
		if (threads < 1 || threads > 64)
			return 2;
		for (int i = 0; i < threads; i++) {
			b[i] = (struct burst){.t = i, .n = n};
			pthread_create(&t[i], NULL, burst, &b[i]);
		}
		atomic_store(&go, 1);
		for (int i = 0; i < threads; i++) {
			pthread_join(t[i], NULL);
			total += b[i].emitted;
		}
		printf("%" PRIu64 "\n", total);
		return 0;
	}
	fprintf(stderr, "usage: pipeline_producer one | spin RATE SEC | burst THREADS N\n");
	return 2;
}
