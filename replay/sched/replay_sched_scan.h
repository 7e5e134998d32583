/*
 * replay_sched_scan.h — the kernel's scheduling states of every stream,
 * built before the run (replay_sched_scan.c), so that each scope can be
 * given its on-CPU, runnable and blocked time as it is dispatched.
 *
 * Why before: a scope ends, and goes to the exporters, long before the
 * kernel pages that cover it arrive (the agent reads them at its next
 * pass, and a thread's states before a scope may depend on events much
 * later in the capture: a waking). So the captures whose first Handshake
 * carries a KernelSched are read once first, for their handshakes and
 * kernel pages only; each stream's pages are decoded with the formats its
 * Handshake shipped (replay_sched.h) and its timeline finished. The run
 * then finds a stream's timeline by its capture and the number of
 * handshakes before it in that file, which both readings count alike.
 *
 * Memory: 32 bytes per event while a timeline is built, then its spans
 * (the states of each thread); unlike the rest of replay, this follows the
 * number of kernel events in the captures.
 */
#ifndef ORBIT_REPLAY_SCHED_SCAN_H
#define ORBIT_REPLAY_SCHED_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.pb-c.h"
#include "replay_sched.h"

struct orbit_rp_sched_scan;

/* Reads the captures that hold kernel scheduling (quietly: the run reports
 * what is wrong with them). NULL when none does, or out of memory. */
struct orbit_rp_sched_scan *orbit__rp_sched_scan(const char *const *paths, size_t n);
/* The timeline of capture i's stream after `handshakes` handshakes (its
 * own is the last of them: 1 for the first stream), or NULL. */
const struct orbit__rp_sched_timeline *
orbit__rp_sched_scan_get(const struct orbit_rp_sched_scan *sc, size_t i, uint32_t handshakes);
void orbit__rp_sched_scan_free(struct orbit_rp_sched_scan *sc);

/* A decoder for the pages of a KernelSched: 0 and *out, or a negative
 * errno (see orbit__rp_sched_ready) with *what naming the step that
 * failed ("header_page", the event's name, "formats"). */
int orbit__rp_sched_decoder_of(const Orbit__KernelSched *k, struct orbit__rp_sched_decoder **out,
                               const char **what);

#endif
