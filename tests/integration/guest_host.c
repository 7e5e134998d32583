/*
 * guest_host.c — a host program for the tests of the agent as a guest
 * (guest.sh): linked like a user's program, against liborbit.so, traced
 * through the environment unless a mode says otherwise. What it prints on
 * stdout and its exit status are what it does untraced; the tests compare.
 *
 *   guest_host plain N [R]    N scopes on one thread (at most R a second),
 *                             then "done N"
 *   guest_host fds K N        sets RLIMIT_NOFILE so that exactly K file
 *                             descriptors are free, then, if GUEST_CAPTURE is
 *                             set, traces into it (orbit_init), N scopes,
 *                             orbit_shutdown, "done N"
 *   guest_host signals N      while a worker thread writes scopes, sends N
 *                             rounds of SIGUSR1, SIGUSR2 and SIGRTMIN+1 to its
 *                             own process (kill) while every thread of its own
 *                             blocks them, so only a thread that does not
 *                             block them (the agent's, if it did not) could
 *                             take them; then unblocks them on the main thread
 *                             and checks every handler ran there, never on the
 *                             agent's thread, whose blocked mask it also reads
 *                             from /proc. Prints "signals ok H" (H handlers run)
 *   guest_host threads        waits for the stream (orbit_flush), then prints
 *                             the name of each thread of the process, sorted,
 *                             one per line, after a second and again after 3 s
 *   guest_host wait MS N      N scopes, then sleeps MS ms, then "done N"
 *   guest_host pthread_exit N two workers write N scopes each over about
 *                             half a second; main prints "started" and ends
 *                             with pthread_exit, so the process ends (exit
 *                             status 0) when the workers do
 *   guest_host pthread_exit_forever  the same with workers that never end:
 *                             the process ends by a signal
 *   guest_host close HOW N    daemon-style: N scopes, then closes every
 *                             descriptor above stderr it did not open
 *                             (HOW: closefrom, or loop: close() of 3 to 1023),
 *                             then opens its own in their numbers (files,
 *                             a pipe, an eventfd, an epoll), writes what it
 *                             means to, N more scopes over about 300 ms, and
 *                             checks that its descriptors hold exactly that:
 *                             "done N" and "files intact", or what differed
 *   guest_host spread T MS N  T threads write N scopes each, then the process
 *                             sleeps MS ms, then "done T*N"
 *   guest_host exec N MS PROG ARGS...  N scopes, sleeps MS ms, prints "exec"
 *                             and execs PROG (which inherits the environment)
 *   guest_host fill_shm N     fills /dev/shm with a file of its own (run it on
 *                             a small tmpfs of its own), then N scopes, then
 *                             removes the file: "done N"
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "orbit.h"

static void scopes(long n)
{
	for (long i = 0; i < n; i++) {
		ORBIT_SCOPE("guest work");
	}
}

static void *spread_worker(void *arg)
{
	scopes(*(const long *)arg);
	return NULL;
}

static int spread(int t, long ms, long n)
{
	pthread_t w[64];
	if (t < 1 || t > 64)
		return 2;
	for (int i = 0; i < t; i++)
		if (pthread_create(&w[i], NULL, spread_worker, &n) != 0)
			return 1;
	for (int i = 0; i < t; i++)
		pthread_join(w[i], NULL);
	struct timespec ts = {ms / 1000, ms % 1000 * 1000000};
	nanosleep(&ts, NULL);
	printf("done %ld\n", t * n);
	return 0;
}

/* Takes every free byte of /dev/shm (as another program could), then writes. */
static int fill_shm(long n)
{
	char path[64];
	snprintf(path, sizeof path, "/dev/shm/guest-fill-%d", (int)getpid());
	int fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	struct statvfs v;
	if (fd < 0 || fstatvfs(fd, &v) != 0) {
		perror(path);
		return 1;
	}
	off_t at = 0;
	for (off_t chunk = (off_t)v.f_bavail * (off_t)v.f_frsize; chunk >= 4096; chunk /= 2)
		while (posix_fallocate(fd, at, chunk) == 0)
			at += chunk;
	scopes(n);
	close(fd);
	unlink(path);
	printf("done %ld\n", n);
	return 0;
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] >= '0' && e->d_name[0] <= '9';
	if (d != NULL) {
		closedir(d);
		n--; /* the directory's own */
	}
	return n;
}

static int fds(int free_fds, long n)
{
	/* Descriptors the harness left open (above stderr) go: the count of
	 * free ones is then exact, descriptors being handed out lowest first. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	int highest = 0, open = open_fds();
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			highest = fd;
	if (highest + 1 != open) {
		fprintf(stderr,
		        "guest_host: descriptors are not contiguous (%d open, highest %d)\n", open,
		        highest);
		return 2;
	}
	struct rlimit rl, was;
	getrlimit(RLIMIT_NOFILE, &rl);
	was = rl;
	rl.rlim_cur = (rlim_t)(open + free_fds);
	if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
		perror("setrlimit");
		return 2;
	}
	const char *cap = getenv("GUEST_CAPTURE");
	if (cap != NULL) {
		setenv("ORBIT_CAPTURE", cap, 1);
		orbit_init(); /* may fail: the program goes on untraced */
	}
	scopes(n);
	if (cap != NULL)
		orbit_shutdown();
	printf("done %ld\n", n);
	/* The limit back, for what runs after main (LeakSanitizer reads /proc). */
	setrlimit(RLIMIT_NOFILE, &was);
	return 0;
}

#define MAX_HITS 4096
static _Atomic int hits;
static pid_t hit_tid[MAX_HITS];

static void on_signal(int sig)
{
	(void)sig;
	int i = atomic_fetch_add(&hits, 1);
	if (i < MAX_HITS)
		hit_tid[i] = (pid_t)syscall(SYS_gettid);
}

static atomic_int stop_worker;

static void *worker(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 100000};
	while (!atomic_load(&stop_worker)) {
		scopes(100);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static pid_t agent_tid(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	pid_t tid = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], name[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof name, f) != NULL && strcmp(name, "orbit-agent\n") == 0)
			tid = (pid_t)atoi(e->d_name);
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return tid;
}

/* The thread's blocked mask, from /proc (SigBlk, hexadecimal). */
static unsigned long long blocked_of(pid_t tid)
{
	char path[64], line[256];
	snprintf(path, sizeof path, "/proc/self/task/%d/status", (int)tid);
	FILE *f = fopen(path, "r");
	unsigned long long mask = 0;
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "SigBlk:", 7) == 0)
			mask = strtoull(line + 7, NULL, 16);
	if (f != NULL)
		fclose(f);
	return mask;
}

static int fails(const char *what)
{
	fprintf(stderr, "guest_host signals: %s\n", what);
	return 1;
}

static int signals(long rounds)
{
	const int sigs[] = {SIGUSR1, SIGUSR2, SIGRTMIN + 1};
	sigset_t set;
	sigemptyset(&set);
	for (int i = 0; i < 3; i++) {
		struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&set, sigs[i]);
	}
	/* Every thread of ours blocks them (the worker inherits the mask). */
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_t w;
	pthread_create(&w, NULL, worker, NULL);
	orbit_flush(); /* the agent is up and draining */
	pid_t agent = agent_tid(), me = (pid_t)syscall(SYS_gettid);
	if (agent == 0 && getenv("GUEST_EXPECT_AGENT") != NULL)
		return fails("no thread named orbit-agent");
	unsigned long long blk = agent ? blocked_of(agent) : ~0ull & ~(1ull << (SIGSEGV - 1));
	for (int i = 0; i < 3; i++)
		if (!(blk >> (sigs[i] - 1) & 1))
			return fails("the agent's thread does not block a host signal");
	if (!(blk >> (SIGPIPE - 1) & 1) || !(blk >> (SIGXFSZ - 1) & 1))
		return fails("the agent's thread does not block SIGPIPE and SIGXFSZ");
	if (blk >> (SIGSEGV - 1) & 1)
		return fails("the agent's thread blocks SIGSEGV");
	for (long r = 0; r < rounds; r++)
		for (int i = 0; i < 3; i++)
			kill(getpid(), sigs[i]);
	struct timespec ts = {0, 50000000};
	nanosleep(&ts, NULL); /* time for a wrong thread to take them */
	int early = atomic_load(&hits);
	sigset_t pending;
	sigpending(&pending);
	for (int i = 0; i < 3; i++)
		if (!sigismember(&pending, sigs[i]))
			return fails("a signal is not pending: some thread took it");
	pthread_sigmask(SIG_UNBLOCK, &set, NULL); /* now they run, here */
	atomic_store(&stop_worker, 1);
	pthread_join(w, NULL);
	int n = atomic_load(&hits);
	if (early != 0)
		return fails("a handler ran while every host thread blocked the signal");
	if (n < 3)
		return fails("not every signal's handler ran");
	for (int i = 0; i < n && i < MAX_HITS; i++) {
		if (agent != 0 && hit_tid[i] == agent)
			return fails("a host handler ran on the agent's thread");
		if (hit_tid[i] != me)
			return fails("a host handler ran on a thread that blocked it");
	}
	printf("signals ok %d\n", n);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void list_threads(void)
{
	char *names[256];
	int n = 0;
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL && n < 256) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], name[64] = "";
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(name, sizeof name, f) != NULL) {
			name[strcspn(name, "\n")] = '\0';
			names[n++] = strdup(name);
		}
		fclose(f);
	}
	if (d != NULL)
		closedir(d);
	qsort(names, (size_t)n, sizeof names[0], cmp);
	for (int i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	fflush(stdout);
}

static int threads(void)
{
	scopes(10);
	int err = orbit_flush();
	if (err != 0)
		fprintf(stderr, "guest_host: orbit_flush: %s\n", orbit_strerror(err));
	sleep(1);
	list_threads();
	printf("--\n");
	scopes(10);
	sleep(2);
	list_threads();
	return 0;
}

/* A worker of the pthread_exit modes: *arg scopes in slices of 100, a
 * millisecond apart (forever when *arg is negative). */
static void *exit_worker(void *arg)
{
	long n = *(const long *)arg;
	const struct timespec ms = {0, 1000000};
	for (long i = 0; n < 0 || i < n; i += 100) {
		scopes(n < 0 || n - i >= 100 ? 100 : n - i);
		nanosleep(&ms, NULL);
	}
	return NULL;
}

static int main_exits(long n)
{
	static long count;
	count = n;
	pthread_t w[2];
	for (int i = 0; i < 2; i++)
		if (pthread_create(&w[i], NULL, exit_worker, &count) != 0)
			return 1;
	printf("started\n");
	pthread_exit(NULL);
}

#define OWN_FILES 6

/* What the close mode's own descriptor i should hold, checked after the
 * scopes: 0 if it does, else one line on stderr. */
static int own_intact(int i, int fd, const char *path)
{
	char got[64] = {0}, want[64];
	snprintf(want, sizeof want, "file %d of the host\n", i);
	if (path == NULL) {
		struct epoll_event ev[4];
		uint64_t v;
		int n = i == 0 ? epoll_wait(fd, ev, 4, 0) : (int)read(fd, &v, sizeof v);
		if (n > 0 || (n < 0 && errno != EAGAIN)) {
			fprintf(stderr, "guest_host: descriptor %d (%s) has something: %d\n", fd,
			        i == 0 ? "epoll" : "eventfd", n);
			return 1;
		}
		return 0;
	}
	struct stat st;
	ssize_t n = pread(fd, got, sizeof got - 1, 0);
	if (fstat(fd, &st) != 0 || n < 0 || strcmp(got, want) != 0 ||
	    st.st_size != (off_t)strlen(want)) {
		fprintf(stderr, "guest_host: %s (descriptor %d) holds %lld bytes: %s\n", path, fd,
		        (long long)st.st_size, got);
		return 1;
	}
	return 0;
}

static int closes(const char *how, long n, const char *dir)
{
	scopes(n);
	if (strcmp(how, "closefrom") == 0)
		closefrom(3);
	else
		for (int fd = 3; fd < 1024; fd++)
			close(fd);
	/* The numbers the agent had, lowest first: an epoll, an eventfd (the
	 * kinds libuv uses), then files. */
	int fd[OWN_FILES];
	char path[OWN_FILES][512] = {{0}};
	fd[0] = epoll_create1(EPOLL_CLOEXEC);
	fd[1] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	for (int i = 2; i < OWN_FILES; i++) {
		snprintf(path[i], sizeof path[i], "%s/own%d", dir, i);
		fd[i] = open(path[i], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		char line[64];
		int len = snprintf(line, sizeof line, "file %d of the host\n", i);
		if (fd[i] < 0 || write(fd[i], line, (size_t)len) != len)
			return fprintf(stderr, "guest_host: %s: %s\n", path[i], strerror(errno)), 1;
	}
	if (fd[0] < 0 || fd[1] < 0)
		return fprintf(stderr, "guest_host: epoll_create1/eventfd: %s\n", strerror(errno)),
		       1;
	const struct timespec ms = {0, 1000000};
	for (int i = 0; i < 300; i++) {
		scopes(n / 300 + (i < n % 300));
		nanosleep(&ms, NULL);
	}
	int bad = 0;
	for (int i = 0; i < OWN_FILES; i++)
		bad += own_intact(i, fd[i], i < 2 ? NULL : path[i]);
	printf("done %ld\n%s\n", 2 * n, bad ? "files changed" : "files intact");
	fflush(stdout);
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strcmp(mode, "plain") == 0 && argc > 2) {
		long n = atol(argv[2]);
		double rate = argc > 3 ? atof(argv[3]) : 0;
		if (rate <= 0) {
			scopes(n);
		} else { /* in slices of 1000, each when it is due */
			struct timespec t0;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			for (long i = 0; i < n; i += 1000) {
				scopes(n - i < 1000 ? n - i : 1000);
				double due = (double)(i + 1000) / rate;
				struct timespec now;
				clock_gettime(CLOCK_MONOTONIC, &now);
				double el = (double)(now.tv_sec - t0.tv_sec) +
				            (double)(now.tv_nsec - t0.tv_nsec) / 1e9;
				if (due > el) {
					struct timespec d = {
					    (time_t)(due - el),
					    (long)((due - el - (double)(time_t)(due - el)) * 1e9)};
					nanosleep(&d, NULL);
				}
			}
		}
		printf("done %ld\n", n);
		return 0;
	}
	if (strcmp(mode, "fds") == 0 && argc > 3)
		return fds(atoi(argv[2]), atol(argv[3]));
	if (strcmp(mode, "signals") == 0 && argc > 2)
		return signals(atol(argv[2]));
	if (strcmp(mode, "threads") == 0)
		return threads();
	if (strcmp(mode, "wait") == 0 && argc > 3) {
		long n = atol(argv[3]);
		scopes(n);
		struct timespec ts = {atol(argv[2]) / 1000, atol(argv[2]) % 1000 * 1000000};
		nanosleep(&ts, NULL);
		printf("done %ld\n", n);
		return 0;
	}
	if (strcmp(mode, "pthread_exit") == 0 && argc > 2)
		return main_exits(atol(argv[2]));
	if (strcmp(mode, "pthread_exit_forever") == 0)
		return main_exits(-1);
	if (strcmp(mode, "close") == 0 && argc > 3) {
		const char *dir = getenv("GUEST_DIR");
		return closes(argv[2], atol(argv[3]), dir != NULL ? dir : "/tmp");
	}
	if (strcmp(mode, "spread") == 0 && argc > 4)
		return spread(atoi(argv[2]), atol(argv[3]), atol(argv[4]));
	if (strcmp(mode, "fill_shm") == 0 && argc > 2)
		return fill_shm(atol(argv[2]));
	if (strcmp(mode, "exec") == 0 && argc > 4) {
		scopes(atol(argv[2]));
		struct timespec ts = {atol(argv[3]) / 1000, atol(argv[3]) % 1000 * 1000000};
		nanosleep(&ts, NULL);
		printf("exec\n");
		fflush(stdout);
		execv(argv[4], argv + 4);
		perror(argv[4]);
		return 1;
	}
	fprintf(stderr, "usage: guest_host plain N | fds K N | signals N | threads | wait MS N | "
	                "pthread_exit N | pthread_exit_forever | close closefrom|loop N | "
	                "spread T MS N | fill_shm N | exec N MS PROG ARGS...\n");
	return 2;
}
