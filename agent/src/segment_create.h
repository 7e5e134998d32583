/*
 * segment_create.h — the writer's side of the shared-memory segment
 * (format/segment.h has the layout and the readers' side; docs/format.md
 * section 1 is normative, docs/operations.md says where segments live and
 * how long).
 *
 * orbit__segment_create makes this process's segment: a name no one can
 * take in advance (a random nonce, O_EXCL, mode 0600), the owner's lock
 * that says it lives, every byte reserved before use (posix_fallocate: a
 * /dev/shm without room costs a smaller segment or tracing, never a
 * SIGBUS), the file size limit checked first (never a SIGXFSZ). Before it,
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
 * then the rings' slots down to 16, then leaves the page rings out, and
 * says what it got in one stderr line; *p is updated to what was made.
 * Returns 0 or a negative errno / ORBIT_E* code (nothing is left behind). */
int orbit__segment_create(struct orbit__seg_params *p, struct orbit__segment *seg);
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
