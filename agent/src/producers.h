/*
 * producers.h — what a producer thread reaches without a handle, kept in
 * orbit.c beside the write path's slow paths.
 *
 * The process has one agent root (lifecycle.c); every piece of the agent
 * is an instance that the root owns and passes down. An application
 * thread that writes a scope or a log line has no handle to be passed,
 * so the root publishes here the two things a producer needs, with
 * release stores that the producers' acquire loads pair with:
 *
 *   the segment        orbit__thread_attach finds its ring in it;
 *   the log page rings orbit_log and orbit_marker write into them (logs.c).
 *
 * Beside them stay the words orbit.h's inline path reads by name
 * (orbit__capture_flag, orbit__clock_kind, orbit__thread_self). Nothing
 * else in the agent is reachable without a handle.
 */
#ifndef ORBIT_AGENT_PRODUCERS_H
#define ORBIT_AGENT_PRODUCERS_H

#include <stdint.h>

#include "segment.h"

struct orbit__logs;

/* The root publishes its segment (NULL: none, as in a forked child). */
void orbit__producers_segment(struct orbit__segment *seg);
/* The root publishes its log page rings, once made. */
void orbit__producers_logs(struct orbit__logs *logs);
/* The log page rings producers write into, or NULL (acquire). */
struct orbit__logs *orbit__producers_logs_now(void);
/* The calling thread's id, cached in orbit__thread_self (one syscall per
 * thread). */
uint32_t orbit__producers_tid(void);
/* The segment this process created with orbit_init(), or NULL (acquire). */
const struct orbit__segment *orbit__own_segment(void);
/* In a forked child: nothing published, tracing off, and the thread that
 * forked starts over (its id is the child's now). */
void orbit__producers_forget(void);

#endif
