/*
 * wire_limits.h — the limits of the segment (docs/format.md 1) and the
 * stream (docs/format.md 4) that the programs outside format/ size their
 * own state by, defined once for every layer: the agent sizes its segment,
 * its arrays and what it reads of the kernel by them, the segment reader
 * refuses a segment beyond them, the packet checks (capture.h) refuse a
 * stream beyond them, and the collector, replay and orbit-dump size what
 * they keep per ring by them.
 */
#ifndef ORBIT_FORMAT_WIRE_LIMITS_H
#define ORBIT_FORMAT_WIRE_LIMITS_H

/* Scope rings of a process: a segment's ring_count is 1..ORBIT_MAX_RINGS,
 * and a stream's ring indices (RingBatch.ring, Loss.ring, the per-ring
 * lists of Handshake and EndOfStream) are below it. */
#define ORBIT_MAX_RINGS 128u

/* Log page rings of a process: a segment's page_ring_count and a
 * Handshake's are at most this; the agent makes one per configured CPU,
 * CPUs beyond it sharing them. */
#define ORBIT_MAX_PAGE_RINGS 4096u

/* Kernel CPUs: KernelPage.cpu, KernelLoss.cpu and KernelSched.cpu_count
 * are below (at most) this; the agent reads no per-CPU buffer beyond it. */
#define ORBIT_KERNEL_MAX_CPUS 4096u

/* Bytes of Handshake.token: the agent sends at most this much of
 * ORBIT_TOKEN, and a collector's --token-file holds at most this much, so
 * any token one takes the other can match. */
#define ORBIT_TOKEN_MAX 4096u

#endif
