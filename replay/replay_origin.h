/*
 * replay_origin.h — the time origin that --log, relative --from/--to and
 * the summary count from (replay_origin.c).
 */
#ifndef ORBIT_REPLAY_ORIGIN_H
#define ORBIT_REPLAY_ORIGIN_H

#include <stddef.h>
#include <stdint.h>

#include "replay_stream.h"

/* The origin of captures that have been read: the earliest start of any of
 * their streams (orbit__rp_stream_span); 0 when no stream has a time. */
uint64_t orbit__rp_origin_of(const struct orbit_rp_capture *caps, size_t n);
/* The same for one capture; UINT64_MAX when none of its streams has a time. */
uint64_t orbit__rp_origin_of_capture(const struct orbit_rp_capture *cap);
/* The same, before the run: reads the captures for their times only.
 * UINT64_MAX when none has a time; *bytes gets the bytes read. */
uint64_t orbit__rp_origin_scan(const char *const *paths, size_t n, uint64_t *bytes);

#endif
