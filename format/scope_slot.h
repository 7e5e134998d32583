/*
 * scope_slot.h — the reading side of the scope rings' slot protocol
 * (docs/format.md 1.5): what a slot's stamp says about the claim a reader
 * is at, a run of checked copies of records, and what to do with a claim
 * whose slot does not hold its record. One implementation for every reader:
 * the agent's drain reads the rings of its own live segment with it
 * (agent/src/scope_ring.c, whose overview numbers the guarantees), and
 * orbit-dump a private copy of a ring it took with pread from a segment
 * dead or alive (dump/dump_rings.c).
 *
 * The slots may be written while they are read (the live rings, or a copy
 * pread took of a live segment) and may hold anything (a hostile writer):
 * nothing here trusts a stamp, a word or an index beyond what it checks.
 * A reader passes the claims to visit; each one is read at claim & mask of
 * an array it owns of mask + 1 slots.
 */
#ifndef ORBIT_FORMAT_SCOPE_SLOT_H
#define ORBIT_FORMAT_SCOPE_SLOT_H

#include <stdatomic.h>
#include <stdint.h>

#include "segment.h"

/* A 64-byte slot as readers see it: orbit/internal.h's struct orbit__slot
 * (the stamp, then the record's seven words: time, id, meta, four name
 * words); agent/src/segment_create.c asserts that the two agree. */
struct orbit__seg_slot {
	_Atomic uint64_t stamp;
	_Atomic uint64_t word[7];
};

/* The check of a record's seven words (docs/format.md 1.5): bits 33..63 of
 * their weighted sum modulo 2^64, bit 32 set, bits 0..31 zero. It is the
 * value orbit/internal.h's orbit__check() computes on the write path (the
 * unit test scope_slot_check compares the two). */
uint64_t orbit__seg_check(const uint64_t w[7]);

/* What a stamp says, read at claim c. */
enum orbit__stamp_kind {
	ORBIT__STAMP_NEVER,  /* 0: never written */
	ORBIT__STAMP_MARKER, /* c's marker: claim c is being written */
	ORBIT__STAMP_RECORD, /* c's record, if a copy passes the check */
	ORBIT__STAMP_OLDER,  /* the marker or record of an earlier lap's claim */
	ORBIT__STAMP_NEWER,  /* the marker or record of a later lap's claim */
};

struct orbit__stamp {
	enum orbit__stamp_kind kind;
	uint64_t claim; /* OLDER, NEWER: the claim it belongs to */
	int record;     /* OLDER, NEWER: a record's stamp (not a marker) */
};

/* Reads stamp s at claim c: the claim it belongs to comes from its low 32
 * bits (the check leaves them alone), among claims within 2^31 of c. */
struct orbit__stamp orbit__stamp_read(uint64_t s, uint64_t c);

/* Why a run of copies stopped. */
enum orbit__slots_stop {
	ORBIT__SLOTS_DONE,  /* `room` records copied, or claim `end` reached */
	ORBIT__SLOTS_STAMP, /* the claim's stamp is not its record's */
	ORBIT__SLOTS_TORN,  /* its record's stamp, but the copy fails the check */
};

/*
 * Copies the records of claims next, next + 1, ... (below end, at most room
 * of them) from slots[claim & mask] to dst, 56 bytes each, and returns how
 * many; stops early at the first claim whose slot does not hold its
 * record, saying why in *why and, for ORBIT__SLOTS_STAMP, the stamp in
 * *stop_stamp. Each stamp is loaded with acquire (R1: pairs with the
 * producer's release store of it, orbit__publish in orbit/internal.h), then
 * the words relaxed, and the copy kept only if their check is the stamp's
 * (R2). slots must hold mask + 1 slots, mask + 1 a power of two.
 */
uint32_t orbit__slots_copy(const struct orbit__seg_slot *slots, uint64_t mask, uint64_t next,
                           uint64_t end, uint8_t *dst, uint32_t room, enum orbit__slots_stop *why,
                           uint64_t *stop_stamp);

/* What a reader does at claim next when a run stopped there. */
enum orbit__slot_verdict {
	ORBIT__SLOT_LAPPED,  /* overwritten by a later lap, or torn: lost (lapped) */
	ORBIT__SLOT_PENDING, /* handed out, not published yet: it will be while its
	                      * process lives (wait, or count it unread) */
	ORBIT__SLOT_GONE,    /* a late producer of an earlier lap wrote the slot
	                      * after next was handed out: lost (lapped) at once */
};

/* The verdict on claim next of a ring of `slots` slots, where a run of
 * copies stopped for why with stamp stop_stamp; clean is where the reader's
 * run of records delivered clean begins (scope_ring.c, guarantee 7: claims
 * clean .. next - 1 were each read before their slot's next lap was handed
 * out). */
enum orbit__slot_verdict orbit__slot_verdict(enum orbit__slots_stop why, uint64_t stop_stamp,
                                             uint64_t next, uint64_t slots, uint64_t clean);

/* After a run of n records copied from claim next on, with the ring's cursor
 * loaded (relaxed) after the run's stamps (R3): where the run of clean
 * records begins now. Claims below cursor - slots had their slot handed out
 * again when they were read: not clean. */
static inline uint64_t orbit__slots_clean(uint64_t clean, uint64_t next, uint32_t n,
                                          uint64_t cursor, uint64_t slots)
{
	if (cursor > next + slots) {
		uint64_t late = cursor - slots;
		return late < next + n ? late : next + n;
	}
	return clean;
}

#endif
