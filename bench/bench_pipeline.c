/*
 * bench_pipeline.c — orbit-bench-pipeline: producers emit scopes at a set
 * rate (and flat out) for a set time, streaming to a real orbit-collector on
 * loopback. For each rate it prints events emitted, delivered (counted from
 * the capture file), lost (as the capture reports it), bytes per event on
 * disk, and the agent thread's CPU time per event. Never pass/fail.
 *
 *   orbit-bench-pipeline [--collector PATH] [--seconds S] [--threads N]
 *                        [--rates R1,R2,...|max]
 *
 * Each rate runs in a fresh child process (its own segment and agent), so
 * the environment (ORBIT_RING_BUDGET, ORBIT_ZSTD_LEVEL ...) applies as set.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "orbit.h"

#ifndef ORBIT_COLLECTOR_PATH
#define ORBIT_COLLECTOR_PATH "orbit-collector"
#endif

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}

/* ---- the producer (child) ---- */

struct producer {
	double rate; /* events per second for this thread; 0: flat out */
	uint64_t seconds_ns;
	uint64_t emitted;
};

static void *produce(void *arg)
{
	struct producer *p = arg;
	uint64_t start = now_ns(), n = 0;
	for (;;) {
		for (int k = 0; k < 256; k++) {
			ORBIT_SCOPE("pipeline scope");
		}
		n += 512; /* a scope is a start and a stop */
		uint64_t now = now_ns();
		if (now - start >= p->seconds_ns)
			break;
		if (p->rate > 0) {
			uint64_t due = start + (uint64_t)((double)n * 1e9 / p->rate);
			if (due > now + 20000)
				sleep_ns(due - now);
		}
	}
	p->emitted = n;
	return NULL;
}

/* CPU time of this process's thread called orbit-agent, in ns. */
static uint64_t agent_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		int agent =
		    fgets(buf, sizeof buf, f) != NULL && strncmp(buf, "orbit-agent", 11) == 0;
		fclose(f);
		if (!agent)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (f == NULL || fgets(buf, sizeof buf, f) == NULL) {
			if (f)
				fclose(f);
			continue;
		}
		fclose(f);
		unsigned long long ut = 0, st = 0;
		char *p = strrchr(buf, ')');
		/* fields 14 and 15 (utime, stime) after the comm */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		                &st) == 2)
			ns = (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	}
	if (d)
		closedir(d);
	return ns;
}

static _Noreturn void child(int out, double rate, int threads, double seconds)
{
	if (orbit_init() != 0)
		_exit(1);
	struct producer p[64];
	pthread_t t[64];
	for (int i = 0; i < threads; i++) {
		p[i] = (struct producer){rate / threads, (uint64_t)(seconds * 1e9), 0};
		pthread_create(&t[i], NULL, produce, &p[i]);
	}
	uint64_t emitted = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		emitted += p[i].emitted;
	}
	orbit_flush();
	uint64_t cpu = agent_cpu_ns(); /* before the thread ends */
	orbit_shutdown();
	uint64_t msg[2] = {emitted, cpu};
	if (write(out, msg, sizeof msg) != sizeof msg)
		_exit(1);
	_exit(0);
}

/* ---- the capture ---- */

struct tally {
	uint64_t delivered, lost, claimed, bytes;
	int ended;
};

static int tally_capture(const char *path, struct tally *t)
{
	memset(t, 0, sizeof *t);
	struct stat st;
	if (stat(path, &st) != 0)
		return -errno;
	t->bytes = (uint64_t)st.st_size;
	int err;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	if (r == NULL)
		return err;
	Orbit__Packet *p;
	struct orbit_capture_problem prob;
	uint64_t lost[ORBIT_MAX_RINGS] = {0};
	while ((err = orbit__capture_next(r, &p, &prob)) != 0) {
		if (err < 0)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH)
			t->delivered += p->ring_batch->count;
		else if (p->body_case == ORBIT__PACKET__BODY_LOSS &&
		         p->loss->ring < ORBIT_MAX_RINGS)
			lost[p->loss->ring] = p->loss->lapped + p->loss->writer_gone +
			                      p->loss->backstop + p->loss->at_end;
		else if (p->body_case == ORBIT__PACKET__BODY_END) {
			t->ended = 1;
			for (size_t i = 0; i < p->end->n_claimed_per_ring; i++)
				t->claimed += p->end->claimed_per_ring[i];
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(r);
	for (int i = 0; i < (int)ORBIT_MAX_RINGS; i++)
		t->lost += lost[i];
	return 0;
}

/* The one capture file in dir (the collector writes one per connection). */
static int newest_capture(const char *dir, char *path, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	time_t best = 0;
	int found = -ENOENT;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strstr(e->d_name, ".orbit.zst") == NULL)
			continue;
		char p[600];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0 && st.st_mtime >= best) {
			best = st.st_mtime;
			snprintf(path, len, "%s", p);
			found = 0;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[600];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
}

/* ---- the collector ---- */

static pid_t start_collector(const char *exe, const char *dir, char *addr, size_t len)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execl(exe, exe, "--listen", "127.0.0.1:0", "--dir", dir, "--quiet", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = fdopen(fds[0], "r");
	char line[256];
	if (f == NULL || fgets(line, sizeof line, f) == NULL ||
	    sscanf(line, "listening on %255s", addr) != 1) {
		fprintf(stderr, "orbit-bench-pipeline: %s did not start\n", exe);
		kill(pid, SIGKILL);
		return -1;
	}
	(void)len;
	return pid; /* f stays open: the collector's stdout */
}

int main(int argc, char **argv)
{
	const char *exe = ORBIT_COLLECTOR_PATH;
	double seconds = 10;
	int threads = 1;
	const char *rates = "1000000,5000000,10000000,max";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--collector") == 0 && i + 1 < argc)
			exe = argv[++i];
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rates") == 0 && i + 1 < argc)
			rates = argv[++i];
		else {
			printf("usage: %s [--collector PATH] [--seconds S] [--threads N] "
			       "[--rates R1,R2,...|max]\n",
			       argv[0]);
			return strcmp(argv[i], "--help") == 0 ? 0 : 1;
		}
	}
	if (threads < 1 || threads > 64 || seconds <= 0) {
		fprintf(stderr, "orbit-bench-pipeline: --threads 1..64, --seconds > 0\n");
		return 1;
	}
	char dir[] = "/tmp/orbit-bench-pipeline.XXXXXX";
	if (mkdtemp(dir) == NULL)
		return 1;
	char addr[256];
	pid_t coll = start_collector(exe, dir, addr, sizeof addr);
	if (coll < 0)
		return 1;
	setenv("ORBIT_COLLECTOR", addr, 1);
	printf("orbit-bench-pipeline: %d producer thread(s), %.1f s per rate, collector %s\n",
	       threads, seconds, addr);
	printf("ORBIT_RING_BUDGET=%s ORBIT_ZSTD_LEVEL=%s\n",
	       getenv("ORBIT_RING_BUDGET") ? getenv("ORBIT_RING_BUDGET") : "(default 8M)",
	       getenv("ORBIT_ZSTD_LEVEL") ? getenv("ORBIT_ZSTD_LEVEL") : "(default -1)");
	printf("%12s %12s %12s %12s %10s %8s %10s %9s\n", "rate ev/s", "emitted", "delivered",
	       "lost", "loss %", "B/event", "agent ns/ev", "equation");
	char *list = strdup(rates);
	for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
		double rate = strcmp(tok, "max") == 0 ? 0 : atof(tok);
		clear_dir(dir);
		int fds[2];
		if (pipe(fds) != 0)
			return 1;
		pid_t pid = fork();
		if (pid == 0) {
			close(fds[0]);
			child(fds[1], rate, threads, seconds);
		}
		close(fds[1]);
		uint64_t msg[2] = {0, 0};
		ssize_t got = read(fds[0], msg, sizeof msg);
		close(fds[0]);
		int status;
		waitpid(pid, &status, 0);
		char path[700];
		struct tally t;
		usleep(200000); /* the collector writes what it has received */
		if (got != sizeof msg || newest_capture(dir, path, sizeof path) != 0 ||
		    tally_capture(path, &t) != 0) {
			printf("%12s  run failed\n", tok);
			continue;
		}
		uint64_t emitted = msg[0];
		const char *keep = getenv("ORBIT_BENCH_KEEP"); /* a directory */
		if (keep != NULL) {
			char cmd[1600];
			snprintf(cmd, sizeof cmd, "cp '%s' '%s/' 2>/dev/null", path, keep);
			if (system(cmd) != 0)
				fprintf(stderr, "could not keep %s in %s\n", path, keep);
		}
		printf("%12s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %9.3f%% %8.2f %10.2f %9s\n",
		       tok, emitted, t.delivered, t.lost,
		       emitted ? 100.0 * (double)t.lost / (double)emitted : 0.0,
		       t.delivered ? (double)t.bytes / (double)t.delivered : 0.0,
		       emitted ? (double)msg[1] / (double)emitted : 0.0,
		       !t.ended                                                    ? "no end"
		       : t.claimed == t.delivered + t.lost && t.claimed == emitted ? "exact"
		                                                                   : "BROKEN");
		fflush(stdout);
	}
	free(list);
	kill(coll, SIGTERM);
	waitpid(coll, NULL, 0);
	clear_dir(dir);
	rmdir(dir);
	return 0;
}
