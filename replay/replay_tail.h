/*
 * replay_tail.h — thread names from a capture's tail (replay_tail.c).
 */
#ifndef ORBIT_REPLAY_TAIL_H
#define ORBIT_REPLAY_TAIL_H

#include <stdint.h>

#include "capture.h"
#include "replay_internal.h"

/* Names the threads of the ThreadName packets in the last frames of the
 * capture at path (size bytes); pid is the process of the packets before
 * the first handshake found there. */
void orbit__rp_tail_names(struct orbit_rp_threads *threads, const char *path, uint64_t size,
                          uint32_t pid);

#endif
