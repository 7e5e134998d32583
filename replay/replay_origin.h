/*
 * replay_origin.h — the time origin that relative times count from
 * (replay_origin.c).
 */
#ifndef ORBIT_REPLAY_ORIGIN_H
#define ORBIT_REPLAY_ORIGIN_H

#include <stdint.h>

#include "replay_timeline.h"

/* The origin of the opened timeline: the earliest handshake among the
 * captures' first packets, else the earliest first packet, else 0. */
uint64_t orbit__rp_origin(const struct orbit_rp_timeline *tl);

#endif
