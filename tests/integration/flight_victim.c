/*
 * flight_victim.c — the traced processes of flight_dump.py (the flight
 * recorder and the segment's guest rules). Tracing starts by itself (ORBIT_FLIGHT,
 * ORBIT_CAPTURE), except in `late`.
 *
 *   crash            "step" scopes, then crash-outer > crash-middle >
 *                    crash-inner open, and a write through a null pointer
 *   spin BEATFILE    the main thread and a thread named "spinner" emit scopes
 *                    until killed; the spinner counts its scopes in the
 *                    first 8 bytes of BEATFILE (after each one is recorded)
 *   live SECONDS     two threads emit scopes for SECONDS, then exit 0
 *   leader_exit S    three threads emit for S seconds; the main thread says
 *                    "ready" and calls pthread_exit
 *   emit N           N scopes, then exit 0
 *   undrained N M    N "framed" scopes, orbit_flush() (they are in the flight
 *                    ring's frames when it returns), M "undrained" scopes,
 *                    then SIGKILL to itself at once: the M are in no frame
 *                    (a frame is finished by a flush, a full staging area or
 *                    at 100 ms of age, none of which can come between)
 *   logs N           N log lines ("line i"), then SIGKILL to itself at once
 *                    (run with a long ORBIT_DRAIN_MS: they stay in the
 *                    segment's log pages, undrained)
 *   late             reads a line, sets ORBIT_FLIGHT=4M, calls orbit_init
 *                    and prints its result, emits, reads a line, exits 0
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"

static void crash(void)
{
	ORBIT_THREAD_NAME("main");
	for (int i = 0; i < 1000; i++) {
		ORBIT_SCOPE("step");
		ORBIT_UINT("step i", (unsigned)i);
	}
	ORBIT_START("crash-outer");
	ORBIT_START("crash-middle");
	ORBIT_START("crash-inner");
	/* A real fault (SIGSEGV from the kernel), on a page that is mapped but
	 * inaccessible, so UndefinedBehaviorSanitizer sees no null store. */
	volatile int *page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (page == MAP_FAILED)
		abort();
	*page = 1;
}

static _Atomic uint64_t *beat;

static void *spinner(void *arg)
{
	(void)arg;
	ORBIT_THREAD_NAME("spinner");
	/* The name's record into a frame before the spin laps the ring: the
	 * name is written once, and a lapped one is lost (counted), not kept. */
	orbit_flush();
	for (uint64_t n = 1;; n++) {
		{
			ORBIT_SCOPE("spin");
			ORBIT_UINT64("beat", n);
		}
		/* Release: the records of scope n are published before n is
		 * seen (the write path's stores precede this one). */
		atomic_store_explicit(beat, n, memory_order_release);
	}
	return NULL;
}

static void spin(const char *file)
{
	int fd = open(file, O_RDWR | O_CREAT, 0600);
	if (fd < 0 || ftruncate(fd, 4096) != 0)
		exit(2);
	beat = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (beat == MAP_FAILED)
		exit(2);
	ORBIT_THREAD_NAME("main");
	pthread_t t;
	pthread_create(&t, NULL, spinner, NULL);
	for (;;) {
		ORBIT_SCOPE("main-spin");
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
}

struct work {
	double seconds;
	int k;
};

static void *worker(void *arg)
{
	struct work *w = arg;
	char name[32];
	snprintf(name, sizeof name, "worker %d", w->k);
	ORBIT_THREAD_NAME(name);
	uint64_t end = test_now_ns(CLOCK_MONOTONIC) + (uint64_t)(w->seconds * 1e9);
	while (test_now_ns(CLOCK_MONOTONIC) < end) {
		ORBIT_SCOPE("work");
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void threads(int n, double seconds, int leader_exits)
{
	static struct work w[8];
	pthread_t t[8];
	ORBIT_THREAD_NAME("main");
	for (int i = 0; i < n; i++) {
		w[i] = (struct work){seconds, i};
		pthread_create(&t[i], NULL, worker, &w[i]);
	}
	if (leader_exits) {
		printf("ready\n");
		fflush(stdout);
		pthread_exit(NULL);
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("done\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "crash") == 0) {
		crash();
	} else if (argc == 3 && strcmp(argv[1], "spin") == 0) {
		spin(argv[2]);
	} else if (argc == 3 && strcmp(argv[1], "live") == 0) {
		threads(2, atof(argv[2]), 0);
	} else if (argc == 3 && strcmp(argv[1], "leader_exit") == 0) {
		threads(3, atof(argv[2]), 1);
	} else if (argc == 3 && strcmp(argv[1], "emit") == 0) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++) {
			ORBIT_SCOPE("emit");
		}
	} else if (argc == 4 && strcmp(argv[1], "undrained") == 0) {
		long n = atol(argv[2]), m = atol(argv[3]);
		ORBIT_THREAD_NAME("main");
		for (long i = 0; i < n; i++) {
			ORBIT_SCOPE("framed");
			ORBIT_UINT64("i", (uint64_t)i);
		}
		if (orbit_flush() != 0)
			return 3;
		for (long i = 0; i < m; i++) {
			ORBIT_SCOPE("undrained");
			ORBIT_UINT64("i", (uint64_t)i);
		}
		raise(SIGKILL);
	} else if (argc == 3 && strcmp(argv[1], "logs") == 0) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			orbit_log("line %ld", i);
		raise(SIGKILL);
	} else if (argc == 2 && strcmp(argv[1], "late") == 0) {
		char line[64];
		if (fgets(line, sizeof line, stdin) == NULL)
			return 2;
		setenv("ORBIT_FLIGHT", "4M", 1);
		printf("init %d\n", orbit_init());
		fflush(stdout);
		for (int i = 0; i < 1000; i++) {
			ORBIT_SCOPE("late");
		}
		orbit_flush();
		printf("emitted\n");
		fflush(stdout);
		if (fgets(line, sizeof line, stdin) == NULL)
			return 2;
	} else {
		fprintf(
		    stderr,
		    "usage: flight_victim crash|spin FILE|live S|leader_exit S|emit N|undrained N "
		    "M|logs N|late\n");
		return 2;
	}
	return 0;
}
