/* tracefs_leftovers.c — see tracefs_leftovers.h. */
#include "tracefs_leftovers.h"

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "segment.h" /* orbit__process_alive, orbit__process_start_time */

#define TRACEFS_MAGIC_VALUE 0x74726163 /* "trac", linux/magic.h TRACEFS_MAGIC */

static const char *const TRACEFS_PATHS[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

int orbit__tracefs_is(const char *path)
{
	struct statfs st;
	return statfs(path, &st) == 0 && (unsigned long)st.f_type == TRACEFS_MAGIC_VALUE;
}

const char *orbit__tracefs_path(void)
{
	for (size_t i = 0; i < sizeof TRACEFS_PATHS / sizeof TRACEFS_PATHS[0]; i++)
		if (orbit__tracefs_is(TRACEFS_PATHS[i]))
			return TRACEFS_PATHS[i];
	return NULL;
}

int orbit__tracefs_instance_parse(const char *name, int *pid, unsigned long long *start)
{
	unsigned n;
	char tail;
	return sscanf(name, "orbit-%d-%llu-%u%c", pid, start, &n, &tail) == 3 && *pid > 0;
}

int orbit__tracefs_remove_dead(const char *tracefs, int only_pid)
{
	char dir[512], path[800];
	if (tracefs == NULL)
		tracefs = orbit__tracefs_path();
	if (tracefs == NULL)
		return -ENOENT;
	pid_t self = getpid();
	uint64_t self_start = orbit__process_start_time(self);
	snprintf(dir, sizeof dir, "%s/instances", tracefs);
	DIR *d = opendir(dir);
	if (d == NULL)
		return -errno;
	int removed = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int pid;
		unsigned long long start;
		if (!orbit__tracefs_instance_parse(e->d_name, &pid, &start) ||
		    (only_pid > 0 && pid != only_pid))
			continue;
		/* Another image of this process (before an exec) is tried too:
		 * rmdir fails with EBUSY while anyone holds one of its files. */
		if (!(pid == self && start == self_start) && orbit__process_alive(pid, start))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (rmdir(path) == 0)
			removed++;
	}
	closedir(d);
	return removed;
}
