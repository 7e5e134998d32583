/*
 * demo.c — the README's instrumented program, using only orbit.h: four
 * threads run frames of nested scopes, a value track, async uploads that
 * finish on another thread, and log lines. Traced when ORBIT_COLLECTOR or
 * ORBIT_CAPTURE is set (the agent starts by itself and flushes at exit).
 *
 *   demo [--threads N] [--frames N]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "orbit.h"

static int frames = 500;

static uint64_t work(uint64_t x, int rounds)
{
	for (int i = 0; i < rounds; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

/* Uploads start on a worker and finish on this thread. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static uint64_t pending[1024];
static int npending, done;

static void *uploader(void *arg)
{
	(void)arg;
	ORBIT_THREAD_NAME("uploader");
	pthread_mutex_lock(&mu);
	for (;;) {
		while (npending == 0 && !done)
			pthread_cond_wait(&cv, &mu);
		if (npending == 0 && done)
			break;
		uint64_t id = pending[--npending];
		pthread_mutex_unlock(&mu);
		work(id, 200000);
		ORBIT_STOP_ASYNC(id);
		pthread_mutex_lock(&mu);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *worker(void *arg)
{
	int t = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof name, "worker %d", t);
	ORBIT_THREAD_NAME(name);
	uint64_t x = (uint64_t)t;
	for (int f = 0; f < frames; f++) {
		ORBIT_SCOPE("frame");
		{
			ORBIT_SCOPE_WITH_COLOR("update physics", 0x3366ccff);
			x = work(x, 20000 + (f % 7) * 3000);
		}
		{
			ORBIT_SCOPE("render");
			for (int pass = 0; pass < 3; pass++) {
				ORBIT_SCOPE("render pass");
				x = work(x, 5000);
			}
		}
		ORBIT_INT("queue depth", (int)(x % 17));
		if (f % 50 == 0) {
			uint64_t id = (uint64_t)t << 32 | (uint64_t)f;
			ORBIT_START_ASYNC("upload", id);
			pthread_mutex_lock(&mu);
			if (npending < 1024)
				pending[npending++] = id;
			pthread_cond_signal(&cv);
			pthread_mutex_unlock(&mu);
			ORBIT_LOG("worker %d: frame %d queued upload", t, f);
		}
	}
	return (void *)(uintptr_t)x;
}

int main(int argc, char **argv)
{
	int threads = 4;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc)
			frames = atoi(argv[++i]);
		else {
			int help = strcmp(argv[i], "--help") == 0;
			fprintf(
			    help ? stdout : stderr,
			    "usage: %s [--threads N] [--frames N]\n"
			    "An instrumented program; traced when ORBIT_COLLECTOR=host:port or\n"
			    "ORBIT_CAPTURE=file is set.\n",
			    argv[0]);
			return help ? 0 : 1;
		}
	}
	if (threads < 1 || threads > 64 || frames < 1) {
		fprintf(stderr, "%s: --threads takes 1..64, --frames a positive number\n", argv[0]);
		return 1;
	}
	pthread_t up, t[64];
	pthread_create(&up, NULL, uploader, NULL);
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_lock(&mu);
	done = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(up, NULL);
	return 0;
}
