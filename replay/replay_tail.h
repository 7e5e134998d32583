/*
 * replay_tail.h — what a capture says at its end, read before the capture
 * itself (replay_tail.c).
 */
#ifndef ORBIT_REPLAY_TAIL_H
#define ORBIT_REPLAY_TAIL_H

#include <stdint.h>

#include "capture.h"
#include "replay_internal.h"

/* Reads the last frames of the capture at path (size bytes): names the
 * threads of their ThreadName packets (threads NULL: none; pid is the
 * process of the packets before the first handshake found there), and
 * returns the first_ns of the last EndOfStream there (0: none, or not
 * stated). *bytes gets the bytes read. */
uint64_t orbit__rp_tail_read(struct orbit_rp_threads *threads, const char *path, uint64_t size,
                             uint32_t pid, uint64_t *bytes);

#endif
