/*
 * tracefs_leftovers.h — the tracefs instances Orbit's agents record the
 * kernel's scheduling in (agent/src/sched_tracefs.h), as names a reader can
 * judge: instances/orbit-<pid>-<start time>-<n>, <start time> as in a
 * segment's name (segment.h). One removal for every remover: the agent at
 * each start, and orbit-dump --remove for one process.
 *
 * Guarantees:
 *  1. An instance is removed only when its process is not alive (no such
 *     pid, a zombie, or another start time: orbit__process_alive), or when
 *     it is of the calling process itself (an image before an exec). The
 *     kernel refuses to remove an instance while any of its files is open
 *     (EBUSY), so a live recorder's instance, which holds its per-CPU files,
 *     is never removed, even by a caller that misjudges its liveness.
 *  2. Nothing but rmdir of such instances: no other file of tracefs is
 *     written, no other name is touched.
 */
#ifndef ORBIT_FORMAT_TRACEFS_LEFTOVERS_H
#define ORBIT_FORMAT_TRACEFS_LEFTOVERS_H

/* The mounted tracefs: /sys/kernel/tracing, else /sys/kernel/debug/tracing;
 * NULL when neither is. */
const char *orbit__tracefs_path(void);
/* Whether path is a mounted tracefs. */
int orbit__tracefs_is(const char *path);
/* Whether name is an Orbit instance's; its pid and start time. */
int orbit__tracefs_instance_parse(const char *name, int *pid, unsigned long long *start);
/* Removes the instances of guarantee 1 under tracefs (NULL: the mounted
 * one); with only_pid > 0, only that pid's. Returns how many went, or
 * -errno (no tracefs, instances/ unreadable). */
int orbit__tracefs_remove_dead(const char *tracefs, int only_pid);

#endif
