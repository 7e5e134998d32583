/*
 * clock_ns.h — a clock's reading in nanoseconds: the one way the programs
 * read CLOCK_MONOTONIC for their own pacing and timeouts, a thread's CPU
 * time for its budget, CLOCK_REALTIME for what they show. (What records
 * are stamped with is the write path's, agent/src/clock.c and
 * docs/clocks.md.)
 */
#ifndef ORBIT_FORMAT_CLOCK_NS_H
#define ORBIT_FORMAT_CLOCK_NS_H

#include <stdint.h>
#include <time.h>

static inline uint64_t orbit__clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
