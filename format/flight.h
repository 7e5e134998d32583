/*
 * flight.h — the flight ring (ORBIT_FLIGHT): the newest frames of a stream,
 * kept in the segment's flight area by the agent (agent/src/output_flight.c)
 * instead of, or beside, a collector or a file, and read back by orbit-dump.
 * docs/format.md 1.8 is normative.
 *
 *   0        header: magic, geometry, two metadata blocks (below)
 *   16 KiB   the stream's handshake frame, kept aside (at most 64 KiB)
 *   80 KiB   the ring: ring_size bytes of entries, addressed by byte
 *            positions that only grow (position p lives at p mod ring_size)
 *
 * An entry is a 16-byte header (u32 len, u16 kind, u16 0x4f46, u64 seq)
 * and len bytes of one frame, padded with zeros to a multiple of 8. An
 * entry never wraps: one that does not fit before the end of the ring is
 * preceded by a WRAP entry header there (or, with 8 bytes left, nothing)
 * and starts at the next multiple of ring_size. The oldest entries give
 * way to new ones (head moves on); the handshake frame never does.
 *
 * Metadata. Two blocks, written in turn (the older one each time), complete
 * when gen_begin == gen_end != 0, the larger gen the newer: the writer
 * stores gen_begin, then (release fence) the fields, then gen_end with
 * release; a reader copies gen_begin, fields, gen_end in address order.
 * The writer publishes a block before it overwrites anything (head moved
 * past what it will overwrite) and after it wrote an entry (tail moved).
 * So a reader that copies [head, tail) of a block and then reads the
 * metadata again knows every entry below the new head may be torn and
 * drops it; every frame is also checked by its zstd checksum.
 *
 * Accounting (docs/format.md 6): ring_end[r] is the claim after the last
 * record of scope ring r in any frame stored so far (kept or overwritten)
 * and ring_framed[r] how many of ring r's records those frames held. A
 * reader of the rings starts at ring_end[r]; the claims below it that the
 * kept frames do not hold are ring_framed[r] − (records in kept frames)
 * overwritten in the flight ring, and ring_end[r] − ring_start[r] −
 * ring_framed[r] lost before they were framed (lapped, ...).
 */
#ifndef ORBIT_FORMAT_FLIGHT_H
#define ORBIT_FORMAT_FLIGHT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "segment.h"

#define ORBIT__FLIGHT_MAGIC 0x31544c465442524full /* "ORBTFLT1" */
#define ORBIT__FLIGHT_VERSION 1u
#define ORBIT__FLIGHT_HEADER (16u << 10)
#define ORBIT__FLIGHT_HANDSHAKE_CAP (64u << 10)
#define ORBIT__FLIGHT_RING_AT (ORBIT__FLIGHT_HEADER + ORBIT__FLIGHT_HANDSHAKE_CAP)
#define ORBIT__FLIGHT_ENTRY 16u
#define ORBIT__FLIGHT_CHECK 0x4f46u /* "FO" */

enum orbit__flight_kind {
	ORBIT__FLIGHT_DATA = 1, /* a frame of the stream */
	ORBIT__FLIGHT_END = 2,  /* the stream's last frame (EndOfStream) */
	ORBIT__FLIGHT_WRAP = 3, /* nothing more before the end of the ring */
};

struct orbit__flight_meta {
	_Atomic uint64_t gen_begin;
	uint64_t head, tail;     /* entries live in [head, tail) */
	uint64_t frames;         /* frames stored in this stream */
	uint64_t dropped_frames; /* of those, overwritten by newer ones */
	uint64_t dropped_bytes;  /* their bytes */
	uint64_t refused_frames; /* frames bigger than a quarter of the ring, not stored */
	uint64_t last_seq;       /* the newest frame's number in the stream */
	uint32_t handshake_len;  /* bytes of the handshake frame; 0: none yet */
	uint32_t ring_count;     /* scope rings: the entries of the arrays in use */
	uint32_t ended;          /* 1: the stream's end frame is stored */
	uint32_t stream;         /* streams begun on this ring: 1, 2, ... */
	uint64_t ring_end[ORBIT_MAX_RINGS];    /* see above */
	uint64_t ring_framed[ORBIT_MAX_RINGS]; /* see above */
	_Atomic uint64_t gen_end;
};

struct orbit__flight_header {
	_Atomic uint64_t magic; /* stored last, with release, by the writer */
	uint32_t version;
	uint32_t header_size;   /* sizeof(struct orbit__flight_header) */
	uint64_t handshake_at;  /* ORBIT__FLIGHT_HEADER */
	uint64_t handshake_cap; /* ORBIT__FLIGHT_HANDSHAKE_CAP */
	uint64_t ring_at;       /* ORBIT__FLIGHT_RING_AT */
	uint64_t ring_size;     /* flight_size - ring_at */
	struct orbit__flight_meta meta[2];
};

/* The ring's size for a flight area of flight_size bytes. */
static inline uint64_t orbit__flight_ring_size(uint64_t flight_size)
{
	return flight_size - ORBIT__FLIGHT_RING_AT;
}

/* Checks a private copy of the header against the area it came from
 * (flight_size bytes, ring_count scope rings). 0; ORBIT__SEG_ENOTINIT when
 * magic is 0 (no stream has begun on it); else ORBIT__SEG_EBADSEG,
 * _EVERSION, with why (offsets from the start of the area). */
int orbit__flight_validate(const struct orbit__flight_header *h, uint64_t flight_size,
                           struct orbit__seg_problem *why);

/* The newer complete metadata block of a validated header, itself checked
 * (positions, sizes, counts). 0 and *out, or ORBIT__SEG_EBADSEG with why
 * (neither block complete and sound). */
int orbit__flight_meta_pick(const struct orbit__flight_header *h, uint32_t ring_count,
                            struct orbit__flight_meta *out, struct orbit__seg_problem *why);

/* One entry found in a copy of the ring. */
struct orbit__flight_entry {
	uint64_t pos; /* its position */
	uint32_t kind;
	uint64_t seq;
	const uint8_t *bytes; /* into the copy */
	uint32_t len;
};

/* Walks a copy of the ring's positions [from, to): copy holds to - from
 * bytes, copy[0] being position from. */
struct orbit__flight_iter {
	const uint8_t *copy;
	uint64_t from, to, pos, ring_size;
	uint64_t steps;
};
void orbit__flight_iter_init(struct orbit__flight_iter *it, const uint8_t *copy, uint64_t from,
                             uint64_t to, uint64_t ring_size);
/* 1 and *e, 0 at the end, or ORBIT__SEG_EBADSEG with why (the entry header
 * at why->offset, an offset in the ring, does not hold). Each call moves on
 * by at least 8 bytes. */
int orbit__flight_next(struct orbit__flight_iter *it, struct orbit__flight_entry *e,
                       struct orbit__seg_problem *why);

#endif
