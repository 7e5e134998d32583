/*
 * segment.h — the shared-memory segment that holds a process's scope rings.
 *
 *   page 0        header (struct orbit__seg_header); magic stored last
 *   page 1        control page: the capture flag. The only page a reader
 *                 maps writable.
 *   page 2 ...    ring_count rings, ring_stride bytes apart: a 128-byte ring
 *                 header (the cursor), then slots_per_ring 64-byte slots
 *
 * The writer creates it (orbit__segment_create); a reader in this or another
 * process opens it (orbit__segment_open), which maps the rings read-only and
 * validates a private copy of the header against the mapped length before
 * one event is read (orbit__segment_validate). docs/format.md is normative.
 */
#ifndef ORBIT_AGENT_SEGMENT_H
#define ORBIT_AGENT_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "orbit.h"

#define ORBIT__SEG_MAGIC 0x314745535442524full /* "ORBTSEG1" */
#define ORBIT__SEG_VERSION 2u /* 2: stamps with a marker and a check (format.md 1.5) */
#define ORBIT__SEG_MAX_RINGS 128u
#define ORBIT__SEG_MAX_SLOTS (1u << 24)
#define ORBIT__SEG_MIN_SLOTS 16u
#define ORBIT__RING_HEADER 128u
#define ORBIT__SLOT_SIZE 64u
#define ORBIT__RECORD_SIZE 56u

struct orbit__seg_header {
	/* Written once by the creating process before magic; read by readers
	 * only after their acquire load of magic. */
	_Atomic uint64_t magic; /* release store, last: pairs with the
	                           acquire load in orbit__segment_validate */
	uint32_t version;
	uint32_t header_size;
	uint32_t page_size;
	uint32_t record_size;
	uint32_t slot_size;
	uint32_t ring_header_size;
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint64_t control_offset;
	uint64_t rings_offset;
	uint64_t ring_stride;
	uint64_t total_size;
	uint32_t pid;
	uint32_t clock_source; /* enum orbit__clock */
	uint64_t start_time;   /* the process's start, /proc/PID/stat field 22 */
};

struct orbit__seg_control {
	/* Written by the agent or by a reader, read by the producers' macros
	 * through orbit__capture_flag (the agent mirrors it). */
	_Atomic uint32_t capture;
};

/* A validated description of a segment: the only source of sizes a reader
 * uses. */
struct orbit__seg_layout {
	uint32_t page_size;
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint32_t pid;
	uint32_t clock_source;
	uint64_t start_time;
	uint64_t rings_offset;
	uint64_t ring_stride;
	uint64_t total_size;
};

struct orbit__segment {
	char name[64];
	uint8_t *base; /* whole segment; read-only for a reader */
	size_t size;
	struct orbit__seg_control *control; /* writable */
	struct orbit__seg_layout layout;
	int owner; /* created by this process */
};

struct orbit__seg_params {
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint32_t clock_source;
};

/* Validates a segment's first mapped_len bytes. Returns 0 and fills *out, or
 * ORBIT_ENOTINIT (magic not stored yet), ORBIT_EBADSEG, ORBIT_EVERSION or
 * ORBIT_ETRUNC. Reads the header once, into a private copy. */
int orbit__segment_validate(const void *base, size_t mapped_len, struct orbit__seg_layout *out);

int orbit__segment_create(const struct orbit__seg_params *p, struct orbit__segment *seg);
int orbit__segment_open(const char *name, struct orbit__segment *seg);
/* Finds the segment of process pid in /dev/shm; returns 0 and its name. */
int orbit__segment_find(pid_t pid, char *name, size_t len);
void orbit__segment_close(struct orbit__segment *seg);
/* The owner removes the name; mappings stay valid. */
void orbit__segment_unlink(struct orbit__segment *seg);

static inline struct orbit__ring *orbit__segment_ring(const struct orbit__segment *seg, uint32_t i)
{
	return (struct orbit__ring *)(seg->base + seg->layout.rings_offset +
	                              (uint64_t)i * seg->layout.ring_stride);
}

/* The ring of a thread: the tid times the 64-bit golden ratio, high bits,
 * scaled to ring_count. One rule for every thread. */
static inline uint32_t orbit__ring_of_tid(uint32_t tid, uint32_t ring_count)
{
	uint64_t h = (uint64_t)tid * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(((h >> 32) * ring_count) >> 32);
}

/* The segment this process created with orbit_init(), or NULL. */
const struct orbit__segment *orbit__own_segment(void);

/* The start time of process pid (/proc/PID/stat field 22), 0 if unknown. */
uint64_t orbit__process_start_time(pid_t pid);
/* 1 while process pid with that start time lives (zombies are dead). */
int orbit__process_alive(pid_t pid, uint64_t start_time);

#endif
