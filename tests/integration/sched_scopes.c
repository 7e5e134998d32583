/* sched_scopes.c — the program of the kernel-scheduling acceptance tests
 * (sched_capture.c): traced through the environment like a user's program
 * (ORBIT_SCHED=1 and ORBIT_COLLECTOR or ORBIT_CAPTURE), linked against
 * liborbit.so.
 *
 *   sched_scopes [MODE [SCOPES]]
 *
 * Two threads, each with SCOPES scopes (default 20) of 40 ms: "sleeper"
 * sleeps through each of its scopes ("sleep"), "spinner" spins through each
 * of its ("spin"). They exist before the agent's recording starts (they are
 * listed in its instance's set_event_pid) but begin their scopes only once
 * orbit_flush() returned, that is, after a pass of the agent, which comes
 * only once the stream is open, which waits for the recording to start:
 * every scope is recorded, whatever the host's load. At the end it prints,
 * on stdout, one line per thread:
 *
 *   thread NAME TID SCOPES WALL_NS CPU_NS
 *
 * with the scopes' total wall time and the thread's own CPU time over them
 * (CLOCK_THREAD_CPUTIME_ID): what the kernel itself says the thread got,
 * for a host too busy to give the spinner its share.
 *
 * MODE:
 *   scopes   the above (default)
 *   forever  the same, scope after scope until killed (prints "ready" once
 *            both threads are in their first scope)
 *   fork     the above, and a child forked without exec once the agent
 *            records (its instance's files are open in this process) that
 *            outlives the parent by 1.5 s; prints "parent tracefs fds N"
 *            (the instance's files open before the fork), "child PID" and,
 *            from the child, "child tracefs fds M" (after it)
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"

#define SCOPE_MS 40

struct worker {
	pthread_t th;
	int spin;
	int tid;
	long scopes; /* < 0: until killed */
	uint64_t wall, cpu;
	long done;
};

static atomic_int started, go;

/* The agent thread's descriptor table (its own: agent/src/guest_files.h),
 * /proc/self/task/TID/fd, in dir; 0 if there is no orbit-agent thread. */
static int agent_fd_dir(char *dir, size_t len)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;
	while (d != NULL && !found && (e = readdir(d)) != NULL) {
		char path[300], comm[32] = {0};
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
		if (f != NULL) {
			found = fgets(comm, sizeof comm, f) != NULL &&
			        strcmp(comm, "orbit-agent\n") == 0;
			fclose(f);
		}
		if (found)
			snprintf(dir, len, "/proc/self/task/%s/fd", e->d_name);
	}
	if (d != NULL)
		closedir(d);
	return found;
}

/* Descriptors in the table dir lists open on a tracefs instance. */
static int tracefs_fds(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	char path[600], link[512];
	while (d != NULL && (e = readdir(d)) != NULL) {
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		ssize_t k = readlink(path, link, sizeof link - 1);
		if (k <= 0)
			continue;
		link[k] = '\0';
		n += strstr(link, "/tracing/instances/orbit-") != NULL;
	}
	if (d != NULL)
		closedir(d);
	return n;
}

static void one_scope(struct worker *w)
{
	uint64_t c0 = test_now_ns(CLOCK_THREAD_CPUTIME_ID), t0 = test_now_ns(CLOCK_MONOTONIC);
	if (w->spin) {
		ORBIT_SCOPE("spin");
		if (w->done == 0)
			atomic_fetch_add(&started, 1);
		while (test_now_ns(CLOCK_MONOTONIC) - t0 < SCOPE_MS * 1000000ull)
			;
	} else {
		ORBIT_SCOPE("sleep");
		if (w->done == 0)
			atomic_fetch_add(&started, 1);
		test_sleep_ms(SCOPE_MS);
	}
	w->wall += test_now_ns(CLOCK_MONOTONIC) - t0;
	w->cpu += test_now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	w->done++;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	w->tid = (int)syscall(SYS_gettid);
	pthread_setname_np(pthread_self(), w->spin ? "spinner" : "sleeper");
	/* As root, its share under load (sched_record.c's states does the
	 * same); it fails quietly otherwise. */
	if (w->spin)
		setpriority(PRIO_PROCESS, (id_t)w->tid, -10);
	while (!atomic_load(&go))
		test_sleep_ms(1);
	for (long i = 0; w->scopes < 0 || i < w->scopes; i++)
		one_scope(w);
	return NULL;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "scopes";
	long scopes = argc > 2 ? atol(argv[2]) : 20;
	struct worker sleeper = {.spin = 0}, spinner = {.spin = 1};
	int forever = strcmp(mode, "forever") == 0;
	sleeper.scopes = spinner.scopes = forever ? -1 : scopes;
	if (pthread_create(&sleeper.th, NULL, worker_main, &sleeper) != 0 ||
	    pthread_create(&spinner.th, NULL, worker_main, &spinner) != 0)
		return 1;
	orbit_flush(); /* a pass of the agent: the recording has begun */
	atomic_store(&go, 1);
	if (strcmp(mode, "fork") == 0) {
		int n = 0;
		char dir[300];
		for (int i = 0;
		     i < 5000 && (!agent_fd_dir(dir, sizeof dir) || (n = tracefs_fds(dir)) == 0);
		     i++)
			test_sleep_ms(1); /* the agent opens its instance on its own thread */
		printf("parent tracefs fds %d\n", n);
		fflush(stdout);
		pid_t child = fork();
		if (child < 0)
			return 1;
		if (child == 0) { /* no exec: it has copies of what the parent had */
			printf("child tracefs fds %d\n", tracefs_fds("/proc/self/fd"));
			fflush(stdout);
			test_sleep_ms(1500 + (unsigned)scopes * SCOPE_MS);
			_exit(0);
		}
		printf("child %d\n", (int)child);
		fflush(stdout);
	}
	if (forever) {
		while (atomic_load(&started) < 2)
			test_sleep_ms(1);
		printf("ready\n");
		fflush(stdout);
	}
	pthread_join(sleeper.th, NULL);
	pthread_join(spinner.th, NULL);
	const struct worker *all[2] = {&sleeper, &spinner};
	for (int i = 0; i < 2; i++)
		printf("thread %s %d %ld %llu %llu\n", all[i]->spin ? "spinner" : "sleeper",
		       all[i]->tid, all[i]->done, (unsigned long long)all[i]->wall,
		       (unsigned long long)all[i]->cpu);
	return 0;
}
