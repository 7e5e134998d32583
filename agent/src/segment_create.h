/*
 * segment_create.h — the writer's side of the shared-memory segment
 * (format/segment.h has the layout and the readers' side; docs/format.md
 * section 1 is normative, docs/operations.md says where segments live and
 * how long).
 *
 * orbit__segment_create makes this process's segment: a name no one can
 * take in advance (a random nonce, O_EXCL, mode 0600), the owner's lock
 * that says it lives, every byte reserved before use (never a SIGBUS),
 * the file size limit checked first (never a SIGXFSZ). What is reserved
 * when: the header, control page, state, log page rings, the flight ring's
 * header and every ring's first page at once (posix_fallocate); a scope
 * ring's slots when the first thread that writes it attaches
 * (orbit__segment_ring_reserve, MADV_POPULATE_WRITE, which fails instead of
 * raising SIGBUS), the flight ring's entries as the agent first writes them
 * (output_flight.c), so a segment holds memory for what is used. On a kernel without it, all
 * of it at once. A /dev/shm without room for the whole (free room, as
 * statvfs counts it) costs a smaller segment or tracing. Before it,
 * the segments of dead processes beyond the bounds below are removed; a
 * segment whose writer cannot be proven dead is never touched.
 */
#ifndef ORBIT_AGENT_SEGMENT_CREATE_H
#define ORBIT_AGENT_SEGMENT_CREATE_H

#include <stdint.h>
#include <sys/types.h>

#include "orbit.h"
#include "segment.h"

/* Dead processes' segments kept as evidence (for orbit-dump), per user:
 * at most this many, this many bytes together, this old. */
#define ORBIT__SEG_KEEP_DEAD 8u
#define ORBIT__SEG_KEEP_BYTES (1ull << 30)
#define ORBIT__SEG_KEEP_AGE_S (7u * 24u * 3600u)
/* On a /dev/shm without room, the scope rings keep at least this many slots
 * while the log page rings are in the segment: the log pages give way
 * first. */
#define ORBIT__SEG_SLOTS_FLOOR 1024u

struct orbit__seg_params {
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint32_t clock_source;
	uint32_t page_ring_count; /* 0: the log page rings stay outside the segment */
	uint32_t page_ring_pages;
	uint64_t flight_size; /* ORBIT_FLIGHT, bytes; 0: none */
};

/* Creates this process's segment and maps it. When /dev/shm (or
 * RLIMIT_FSIZE) has no room for it, halves the flight ring down to 1 MiB,
 * then the rings' slots down to ORBIT__SEG_SLOTS_FLOOR, then leaves the page
 * rings out (with the slots asked for again), then halves the slots down to
 * 16, and says what it got in one stderr line; *p is updated to what was made.
 * Returns 0 or a negative errno / ORBIT_E* code (nothing is left behind). */
int orbit__segment_create(struct orbit__seg_params *p, struct orbit__segment *seg);
/* Bytes [offset, offset + len) of a lazy segment get their memory (whole
 * pages; a no-op for one reserved at once). 0, or -ENOSPC / -ENOMEM when
 * there is no room: those bytes must not be written. */
int orbit__segment_reserve(const struct orbit__segment *seg, uint64_t offset, uint64_t len);
/* Ring i's slots get their memory, if they have none yet (any thread, any
 * number at once; the first to return 0 makes the ring usable to the
 * drain). 0, or -ENOSPC / -ENOMEM when there is no room: the ring must not
 * be written. */
int orbit__segment_ring_reserve(struct orbit__segment *seg, uint32_t i);
/* The owner removes the name (at a normal exit); mappings stay valid. */
void orbit__segment_unlink(struct orbit__segment *seg);
/* In a forked child: closes its copy of the owner's descriptor, so that the
 * lock says nothing about the child. The mapping stays. */
void orbit__segment_forget(struct orbit__segment *seg);

/* Finds the segment of the live process pid in /dev/shm: the file named for
 * its pid and start time, owned by its user. 0 and its name ("/orbit-..."),
 * or -ENOENT. */
int orbit__segment_find(pid_t pid, char *name, size_t len);

/* The owner's view of the state area and of page ring i's memory. */
static inline struct orbit__seg_state *orbit__segment_state(const struct orbit__segment *seg)
{
	return (struct orbit__seg_state *)(seg->base + seg->layout.state_offset);
}

#endif
