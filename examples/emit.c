/*
 * emit.c — a small instrumented program with known output, for the README
 * and the end-to-end tests. Each thread t emits, for i in 0 .. N-1:
 *   ORBIT_SCOPE("t<t> outer")  containing
 *     ORBIT_SCOPE("t<t> inner <i>")  and  ORBIT_UINT64("t<t> value", i)
 * so 5 records per iteration (outer start/stop, inner start/stop, value),
 * plus one thread-name record per thread; and log lines "t<t> at <i>" every
 * 1000 iterations (i = 0, 1000, ...) and "t<t> done" at the end.
 *
 *   emit [--threads N] [--iterations N] [--rate EVENTS_PER_SECOND]
 *
 * Tracing starts by itself when ORBIT_COLLECTOR or ORBIT_CAPTURE is set.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "orbit.h"

static long iterations = 1000;
static double rate; /* iterations per second per thread; 0: flat out */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char name[64], outer[32], value[32];
	snprintf(name, sizeof name, "emitter %d", t);
	snprintf(outer, sizeof outer, "t%d outer", t);
	snprintf(value, sizeof value, "t%d value", t);
	ORBIT_THREAD_NAME(name);
	uint64_t start = now_ns();
	for (long i = 0; i < iterations; i++) {
		ORBIT_SCOPE(outer);
		{
			snprintf(name, sizeof name, "t%d inner %ld", t, i);
			ORBIT_SCOPE(name);
			ORBIT_UINT64(value, (uint64_t)i);
		}
		if (i % 1000 == 0)
			ORBIT_LOG("t%d at %ld", t, i);
		if (rate > 0) { /* sleep off whatever is ahead of the rate */
			uint64_t due = start + (uint64_t)((double)(i + 1) * 1e9 / rate);
			uint64_t now = now_ns();
			if (due > now + 100000) {
				struct timespec ts = {0, (long)(due - now)};
				if (due - now >= 1000000000ull)
					ts =
					    (struct timespec){(time_t)((due - now) / 1000000000ull),
					                      (long)((due - now) % 1000000000ull)};
				nanosleep(&ts, NULL);
			}
		}
	}
	ORBIT_LOG("t%d done", t);
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = 2;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			iterations = atol(argv[++i]);
		else if (strcmp(argv[i], "--rate") == 0 && i + 1 < argc)
			rate = atof(argv[++i]) / 5.0;
		else {
			int help = strcmp(argv[i], "--help") == 0;
			fprintf(
			    help ? stdout : stderr,
			    "usage: %s [--threads N] [--iterations N] [--rate EVENTS_PER_S]\n"
			    "Emits 5 events per iteration per thread; traced when ORBIT_COLLECTOR\n"
			    "or ORBIT_CAPTURE is set.\n",
			    argv[0]);
			return help ? 0 : 1;
		}
	}
	if (threads < 1 || threads > 256 || iterations < 0) {
		fprintf(stderr, "%s: --threads takes 1..256, --iterations 0 or more\n", argv[0]);
		return 1;
	}
	pthread_t t[256];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return 0; /* the agent flushes at exit */
}
