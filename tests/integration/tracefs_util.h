/* tracefs_util.h — what the kernel-sched tests need from tracefs: a mounted
 * tracefs (mounted here if it is not, as root; skip otherwise), and a
 * snapshot of the system's tracing state to compare before and after.
 *
 * The snapshot holds the top-level files a recorder must never change
 * (tracing_on, trace_clock, the buffer sizes, the tracer, the enabled events
 * and pid filters, the options) and the set of instances. Instances named
 * orbit-<pid>-... of processes outside this test (other runs of the suite on
 * the same host) are left out of the set, so that only this test's own
 * leftovers count. */
#ifndef ORBIT_TEST_TRACEFS_UTIL_H
#define ORBIT_TEST_TRACEFS_UTIL_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "sched_tracefs.h"

#define TRACEFS_TEST_MAX 65536

static const char *const TRACEFS_STATE_FILES[] = {
    "tracing_on",
    "trace_clock",
    "buffer_size_kb",
    "buffer_total_size_kb",
    "buffer_subbuf_size_kb",
    "current_tracer",
    "set_event",
    "set_event_pid",
    "set_event_notrace_pid",
    "set_ftrace_pid",
    "trace_options",
    "tracing_cpumask",
    "buffer_percent",
};

/* The tracefs to test with; mounts it at /sys/kernel/tracing if needed.
 * Skips (77) when that is impossible. */
static const char *tracefs_test_mount(void)
{
	const char *t = orbit__sched_tracefs();

	if (t != NULL)
		return t;
	if (geteuid() != 0)
		SKIP("tracefs is not mounted and this test is not root");
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) != 0)
		SKIP("cannot mount tracefs at /sys/kernel/tracing: %s", strerror(errno));
	t = orbit__sched_tracefs();
	if (t == NULL)
		SKIP("tracefs mounted but not found");
	return t;
}

/* Root with a usable tracefs, or skip. */
static const char *tracefs_test_require(void)
{
	const char *t;
	char path[512];

	if (geteuid() != 0)
		SKIP("needs root for tracefs");
	t = tracefs_test_mount();
	snprintf(path, sizeof path, "%s/instances", t);
	if (access(path, W_OK) != 0)
		SKIP("%s is not writable: %s", path, strerror(errno));
	return t;
}

static void tracefs_slurp(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0;
	ssize_t r;

	buf[0] = '\0';
	if (fd < 0) {
		snprintf(buf, n, "<%s>", strerror(errno));
		return;
	}
	while (len + 1 < n && (r = read(fd, buf + len, n - 1 - len)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	close(fd);
}

static int tracefs_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Is pid one of `ours` (n of them)? */
static int tracefs_pid_in(int pid, const int *ours, int n)
{
	for (int i = 0; i < n; i++)
		if (ours[i] == pid)
			return 1;
	return 0;
}

/* The state as one string (malloc'd): the files, then the sorted instances
 * (those of orbit processes outside `ours` left out). */
static char *tracefs_snapshot(const char *tracefs, const int *ours, int n_ours)
{
	char *out = malloc(TRACEFS_TEST_MAX), path[600], *names[512];
	size_t len = 0;
	int n = 0;
	DIR *d;
	struct dirent *e;

	CHECK(out != NULL);
	out[0] = '\0';
	for (size_t i = 0; i < sizeof TRACEFS_STATE_FILES / sizeof TRACEFS_STATE_FILES[0]; i++) {
		char buf[8192];

		snprintf(path, sizeof path, "%s/%s", tracefs, TRACEFS_STATE_FILES[i]);
		tracefs_slurp(path, buf, sizeof buf);
		len += (size_t)snprintf(out + len, TRACEFS_TEST_MAX - len, "== %s\n%s\n",
		                        TRACEFS_STATE_FILES[i], buf);
		CHECK(len < TRACEFS_TEST_MAX);
	}
	snprintf(path, sizeof path, "%s/instances", tracefs);
	d = opendir(path);
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL && n < 512) {
		int pid;

		if (e->d_name[0] == '.')
			continue;
		if (sscanf(e->d_name, "orbit-%d-", &pid) == 1 && !tracefs_pid_in(pid, ours, n_ours))
			continue;
		names[n] = strdup(e->d_name);
		CHECK(names[n] != NULL);
		n++;
	}
	closedir(d);
	qsort(names, (size_t)n, sizeof names[0], tracefs_cmp_str);
	len += (size_t)snprintf(out + len, TRACEFS_TEST_MAX - len, "== instances\n");
	for (int i = 0; i < n; i++) {
		len += (size_t)snprintf(out + len, TRACEFS_TEST_MAX - len, "%s\n", names[i]);
		free(names[i]);
		CHECK(len < TRACEFS_TEST_MAX);
	}
	return out;
}

/* Fails, showing both, when the state changed. */
static void tracefs_expect_same(const char *before, const char *after, const char *when)
{
	if (strcmp(before, after) == 0)
		return;
	fprintf(stderr, "tracing state changed %s\n--- before\n%s\n--- after\n%s\n", when, before,
	        after);
	exit(1);
}

/* How many instances named orbit-<pid>-... exist. */
static int tracefs_instances_of(const char *tracefs, int pid)
{
	char path[600], prefix[64];
	DIR *d;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof path, "%s/instances", tracefs);
	snprintf(prefix, sizeof prefix, "orbit-%d-", pid);
	d = opendir(path);
	CHECK(d != NULL);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

#endif
