/*
 * live_marker.c — a traced program for live_view.py: WORKERS threads (1)
 * busy with BURST short scopes "work" (1) between pauses of 0.1 ms, while
 * the main thread, every INTERVAL ms, writes a scope "marker-N" and prints
 * "marker N END" (END: CLOCK_MONOTONIC ns read just before the scope
 * ends, the clock the agent stamps with), so that the test can tell how
 * far behind the live page is. LIVE_MARKER_PAUSE_US sets the pause (100
 * us). With LIVE_MARKER_ONE_NAME set every marker
 * is named "marker": a run of bounded names, whose reader's memory does
 * not grow with its length. Traced through the environment
 * (ORBIT_COLLECTOR), like a user's program.
 *
 *   live_marker COUNT INTERVAL_MS [WORKERS BURST]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "orbit.h"

static atomic_int done;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long burst = 1;         /* scopes "work" per pause */
static long pause_ns = 100000; /* LIVE_MARKER_PAUSE_US, 100 */

static void *worker(void *arg)
{
	(void)arg;
	ORBIT_THREAD_NAME("worker");
	uint64_t x = 1;
	while (!atomic_load(&done)) {
		for (long k = 0; k < burst; k++) {
			ORBIT_SCOPE("work");
			for (int i = 0; i < 50; i++)
				x = x * 6364136223846793005ull + 1442695040888963407ull;
		}
		struct timespec ts = {pause_ns / 1000000000, pause_ns % 1000000000};
		nanosleep(&ts, NULL);
	}
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	if (argc != 3 && argc != 5) {
		fprintf(stderr, "usage: live_marker COUNT INTERVAL_MS [WORKERS BURST]\n");
		return 2;
	}
	int count = atoi(argv[1]);
	long interval = atol(argv[2]);
	int workers = argc == 5 ? atoi(argv[3]) : 1;
	int one_name = getenv("LIVE_MARKER_ONE_NAME") != NULL;
	if (getenv("LIVE_MARKER_PAUSE_US") != NULL)
		pause_ns = atol(getenv("LIVE_MARKER_PAUSE_US")) * 1000;
	if (pause_ns < 1000 || pause_ns > 1000000000)
		return 2;
	if (argc == 5)
		burst = atol(argv[4]);
	pthread_t t[16];
	if (workers < 1 || workers > 16 || burst < 1)
		return 2;
	for (int w = 0; w < workers; w++)
		pthread_create(&t[w], NULL, worker, NULL);
	for (int i = 0; i < count; i++) {
		struct timespec ts = {interval / 1000, (interval % 1000) * 1000000};
		nanosleep(&ts, NULL);
		char name[32];
		if (one_name)
			snprintf(name, sizeof name, "marker");
		else
			snprintf(name, sizeof name, "marker-%d", i);
		uint64_t end;
		{
			ORBIT_SCOPE(name);
			end = now_ns(); /* the scope's end is stamped after this */
		}
		printf("marker %d %llu\n", i, (unsigned long long)end);
		fflush(stdout);
	}
	atomic_store(&done, 1);
	for (int w = 0; w < workers; w++)
		pthread_join(t[w], NULL);
	return 0;
}
