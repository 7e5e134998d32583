/* guest_checks.c — the checks of a guest in the host's process; see
 * guest_checks.h. */
#include "guest_checks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * Whether want more file descriptors can be opened now. libuv's loop setup
 * calls abort() when it cannot make its process-wide signal pipe, so the
 * agent checks first (another thread of the host may take descriptors
 * between the check and the setup; then a setup failure is said, or, for
 * that one pipe, libuv aborts as it would for the host itself).
 */
static int fds_available(int want, int *got)
{
	int fd[ORBIT__AGENT_FDS];
	int n = 0;
	while (n < want && n < ORBIT__AGENT_FDS && (fd[n] = eventfd(0, EFD_CLOEXEC)) >= 0)
		n++;
	int err = n < want ? errno : 0;
	for (int i = 0; i < n; i++)
		close(fd[i]);
	*got = n;
	return err == 0 || (err != EMFILE && err != ENFILE);
}

int orbit__guest_check_fds(void)
{
	int got;
	if (fds_available(ORBIT__AGENT_FDS, &got))
		return 0;
	struct rlimit rl;
	char lim[32] = "?";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof lim, "%llu", (unsigned long long)rl.rlim_cur);
	fprintf(stderr,
	        "orbit: only %d file descriptor(s) free (RLIMIT_NOFILE %s), the agent needs %d; "
	        "tracing is off\n",
	        got, lim, ORBIT__AGENT_FDS);
	return -EMFILE;
}

/*
 * Every signal blocked but the faults a thread causes itself. So a
 * process-directed signal (kill(pid), a terminal's SIGINT, SIGCHLD, the
 * host's timers) is always delivered to one of the host's threads and its
 * handler never runs on the agent; SIGPIPE on a connection the collector
 * reset and SIGXFSZ past RLIMIT_FSIZE, which the kernel sends to the
 * writing thread, stay pending there and the write fails with EPIPE or
 * EFBIG instead. SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP and SIGSYS stay
 * open: blocking them would not stop a fault, only skip the host's handler
 * for it. glibc keeps its own two signals open.
 */
void orbit__guest_sigmask(sigset_t *set)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	sigfillset(set);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(set, faults[i]);
}

/*
 * /proc/self/stat is the leader's: after its command in parentheses (which
 * may hold spaces and parentheses: the last ')' ends it) come its state
 * (field 3) and, 17 fields on, the process's thread count (field 20),
 * which counts a leader that ended until the whole process does. 0 and
 * both, or -1 when /proc cannot say.
 */
static int leader_stat(char *state, long *threads)
{
	char buf[1024];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -1;
	*state = p[2];
	p += 2;
	for (int field = 3; field < 20; field++) { /* to the start of field 20 */
		p = strchr(p, ' ');
		if (p == NULL)
			return -1;
		p++;
	}
	char *end;
	*threads = strtol(p, &end, 10);
	return end != p ? 0 : -1;
}

/* Alone: the leader a zombie and two threads, it and the caller. */
int orbit__guest_alone(void)
{
	char state;
	long threads;
	return leader_stat(&state, &threads) == 0 && state == 'Z' && threads == 2;
}

int orbit__guest_leader_ended(void)
{
	char state;
	long threads;
	return leader_stat(&state, &threads) == 0 && state == 'Z';
}

int orbit__guest_others(void)
{
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return -1;
	long self = syscall(SYS_gettid);
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || atol(e->d_name) == self)
			continue;
		char path[300], comm[32] = {0};
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue; /* it ended meanwhile */
		ssize_t k = read(fd, comm, sizeof comm - 1);
		close(fd);
		n += k > 0 && strncmp(comm, "orbit-", 6) != 0;
	}
	closedir(d);
	return n;
}
