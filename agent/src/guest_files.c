/* guest_files.c — the agent thread's descriptors, in a table of its own;
 * see guest_files.h (the numbers below are its guarantees). */
#include "guest_files.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "guest_checks.h"

/* ThreadSanitizer tracks descriptors by number, process-wide: the same
 * number in the agent's table and the host's would read to it as one
 * descriptor used by two threads without order, a race that is not one. A
 * build under it keeps the process's table (5.). */
#if defined(__SANITIZE_THREAD__)
#define OWN_TABLE 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define OWN_TABLE 0
#endif
#endif
#ifndef OWN_TABLE
#define OWN_TABLE 1
#endif

/* Descriptors lo to hi closed: close_range, or one by one where the kernel
 * has none (before 5.9), up to the descriptor limit. */
static void close_from_to(unsigned lo, unsigned hi)
{
	if (lo > hi || syscall(SYS_close_range, lo, hi, 0) == 0)
		return;
	struct rlimit rl;
	unsigned max = 65536;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < max)
		max = (unsigned)rl.rlim_cur;
	for (unsigned fd = lo; fd <= hi && fd < max; fd++)
		close((int)fd);
}

/* 2.: every inherited descriptor but stderr and keep. */
static void close_inherited(int keep)
{
	unsigned k[2] = {2, keep >= 0 ? (unsigned)keep : 2}, lo = 0;
	if (k[1] < k[0]) {
		k[1] = k[0];
		k[0] = (unsigned)keep;
	}
	for (int i = 0; i < 2; i++) {
		if (k[i] > lo)
			close_from_to(lo, k[i] - 1);
		if (k[i] + 1 > lo)
			lo = k[i] + 1;
	}
	close_from_to(lo, ~0u);
}

int orbit__guest_files_own(struct orbit__guest_files *g, int keep)
{
	g->tid = (int)syscall(SYS_gettid);
	g->own = OWN_TABLE && unshare(CLONE_FILES) == 0; /* 5.: refused, the process's table */
	if (g->own) {
		close_inherited(keep);
		g->pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	}
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return -errno;
	g->wake_r = p[0];
	g->wake_w = p[1];
	return 0;
}

/* 3. The host's descriptor 2 is taken (pidfd_getfd: a new descriptor in
 * this table for the same open file) and put at 2. The host has none
 * (EBADF) unless its leader ended: pidfd_getfd reads the leader's table,
 * which a leader that called pthread_exit no longer has; then, and on any
 * other failure, the agent keeps what it has. */
void orbit__guest_files_follow(struct orbit__guest_files *g)
{
	if (!g->own || g->pidfd < 0)
		return;
	int fd = (int)syscall(SYS_pidfd_getfd, g->pidfd, 2, 0);
	if (fd >= 0) {
		if (fd != 2) {
			dup2(fd, 2);
			close(fd);
		}
	} else if (errno == EBADF && !orbit__guest_leader_ended()) {
		close(2);
	}
}

void orbit__guest_files_woken(struct orbit__guest_files *g)
{
	char buf[64];
	while (g->wake_r >= 0 && read(g->wake_r, buf, sizeof buf) > 0)
		;
}

/* 4. The write end by its name in the agent thread's table. A full pipe
 * (EAGAIN) has a wake-up in it already. */
void orbit__guest_files_wake(const struct orbit__guest_files *g)
{
	if (g->wake_w < 0)
		return;
	if (!g->own) {
		(void)!write(g->wake_w, "w", 1);
		return;
	}
	char path[64];
	snprintf(path, sizeof path, "/proc/self/task/%d/fd/%d", g->tid, g->wake_w);
	int fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return;
	(void)!write(fd, "w", 1);
	close(fd);
}

void orbit__guest_files_close(struct orbit__guest_files *g)
{
	int *fds[] = {&g->wake_r, &g->wake_w, &g->pidfd};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++) {
		if (*fds[i] >= 0)
			close(*fds[i]);
		*fds[i] = -1;
	}
}
