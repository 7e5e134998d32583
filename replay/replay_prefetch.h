/*
 * replay_prefetch.h — a capture read on a thread of its own, a few packets
 * ahead of the merge: the file's reads, the frames' decompression and the
 * packets' decoding and checks, while the merge's thread rebuilds scopes
 * from the ones before. The merge takes what it would have read in-line,
 * in the same order, with the same offsets: every output is the same with
 * or without the thread. A ring batch's records are decoded by the merge,
 * where they are used next (decoded here, every record would cross
 * between the CPUs' caches: measured slower than no thread at all).
 */
#ifndef ORBIT_REPLAY_PREFETCH_H
#define ORBIT_REPLAY_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "frame.h"

/* Reads waiting to be taken, at most, and their packets' bytes: the thread reads on while both are
 * under half of these, and then waits until both are again, so that it and the merge take turns in
 * long runs rather than a read at a time. */
#define ORBIT_RP_PREFETCH_DEPTH 256u
#define ORBIT_RP_PREFETCH_BYTES (16u << 20)
#define ORBIT_RP_PREFETCH_THREADS 4u /* captures read on threads of their own, at most */

/* What one orbit__capture_next gave, as the merge reads it. */
struct orbit_rp_fetched {
	int rc; /* orbit__capture_next's: 1 a packet, 0 the end, < 0 a problem */
	struct orbit_capture_problem prob;
	uint64_t before, after; /* orbit__capture_offset before and after the call */
	Orbit__Packet *p;       /* rc 1: the packet (the taker frees it) */
	int valid;              /* rc 1: orbit__packet_validate passed */
	/* Nothing follows: the end, or an error that is not a frame's own
	 * (the reader cannot pass it). */
	int last;
	size_t bytes; /* what it holds, about */
};

struct orbit_rp_prefetch;

/* One read of r in-line, as the thread makes it: the one way a read is
 * made, with a thread or without. */
void orbit__rp_prefetch_read(struct orbit_capture_reader *r, struct orbit_rp_fetched *f);

/* Starts reading r on a thread; r is the thread's until the last read has
 * been taken or the prefetch is freed. NULL when no thread or memory could
 * be had: the caller then reads r in-line. */
struct orbit_rp_prefetch *orbit__rp_prefetch_start(struct orbit_capture_reader *r);
/* The next read, waiting for it. After the one marked last, the thread has
 * ended and r is the caller's again; nothing more may be taken. */
void orbit__rp_prefetch_take(struct orbit_rp_prefetch *pf, struct orbit_rp_fetched *out);
/* Offset of the file the reads taken so far reach. */
uint64_t orbit__rp_prefetch_offset(const struct orbit_rp_prefetch *pf);
/* Stops the thread (if it still runs) and frees what waits; r stays open. */
void orbit__rp_prefetch_free(struct orbit_rp_prefetch *pf);

#endif
