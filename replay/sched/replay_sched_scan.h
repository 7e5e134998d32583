/*
 * replay_sched_scan.h — the kernel's scheduling states of every stream of
 * the captures (replay_sched_scan.c), so that each scope can be given its
 * on-CPU, runnable and blocked time as it is dispatched.
 *
 * A scope ends, and goes to the exporters, before the kernel pages that
 * cover it in its capture (the agent reads them at its next pass, and a
 * thread's states before a scope may depend on events later still: a
 * waking). The scan takes a capture's packets in file order, ahead of the
 * run's dispatch of them: a Handshake with a KernelSched begins a stream's
 * timeline (decoded with the formats it ships, replay_sched.h), its
 * KernelPage packets add to it, its KernelMark packets run it up to the
 * mark, and the next Handshake or the end of the file finishes it. The run
 * finds a stream's timeline by its capture and the number of handshakes
 * before it in that file, which the run and the scan count alike.
 *
 * Two ways to feed it (replay_run.c decides per capture):
 *  - ahead of the run, from the run's own reading (replay_merge.c): a
 *    capture of protocol version 3 marks how far its kernel events are
 *    complete (docs/format.md 4.13), so the run holds each batch only
 *    until a mark settles the states of its records' threads
 *    (orbit__rp_sched_final), and the capture is read once;
 *  - before the run, a whole read of the file (orbit__rp_sched_scan_file),
 *    for a capture that does not mark them: its timelines are finished
 *    before the first scope is dispatched.
 *
 * Memory: 32 bytes per event not yet run (up to the next mark, or, without
 * marks, the whole stream), then the spans of each thread; unlike the rest
 * of replay, the spans follow the number of kernel events in the captures.
 */
#ifndef ORBIT_REPLAY_SCHED_SCAN_H
#define ORBIT_REPLAY_SCHED_SCAN_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.pb-c.h"
#include "replay_sched.h"

struct orbit_rp_sched_scan;

/* A scan of n captures; NULL out of memory. */
struct orbit_rp_sched_scan *orbit__rp_sched_scan_new(size_t n);
/* One packet of capture i, in file order, that passed the format's checks. */
void orbit__rp_sched_scan_packet(struct orbit_rp_sched_scan *sc, size_t i, const Orbit__Packet *p);
/* Capture i's file ended: its last timeline is finished. */
void orbit__rp_sched_scan_end(struct orbit_rp_sched_scan *sc, size_t i);
/* Reads the file of capture i whole through the two above (quietly: the
 * run reports what is wrong with it). Returns the bytes read. */
uint64_t orbit__rp_sched_scan_file(struct orbit_rp_sched_scan *sc, size_t i, const char *path);
/* The timeline of the stream of capture i the last packet fed belongs to,
 * or NULL (none: no KernelSched, or one that failed). */
const struct orbit__rp_sched_timeline *
orbit__rp_sched_scan_current(const struct orbit_rp_sched_scan *sc, size_t i);
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
