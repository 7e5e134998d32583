/* scope_slot.c — the reading side of the slot protocol (scope_slot.h;
 * docs/format.md 1.5; the guarantees are agent/src/scope_ring.c's). */
#include "scope_slot.h"

#include <string.h>

#include "record.h"

_Static_assert(sizeof(struct orbit__seg_slot) == ORBIT__SLOT_SIZE, "format.md 1.5: 64-byte slots");
_Static_assert(offsetof(struct orbit__seg_slot, word) == ORBIT__SLOT_SIZE - ORBIT_RECORD_SIZE,
               "the record is the slot's tail");

/* Inline for the copy loop; the weights as constants, as the write path's
 * (docs/format.md 1.5): one per word, whatever the record's flags. */
static inline uint64_t check_of(const uint64_t w[7])
{
	uint64_t m = w[0] * 0x9e3779b97f4a7c15ull + w[1] * 0xbf58476d1ce4e5b9ull +
	             w[2] * 0x94d049bb133111ebull + w[3] * 0xff51afd7ed558ccdull +
	             w[4] * 0xc4ceb9fe1a85ec53ull + w[5] * 0xd6e8feb86659fd93ull +
	             w[6] * 0xa0761d6478bd642full;
	return (m & ~0xffffffffull) | (1ull << 32);
}

uint64_t orbit__seg_check(const uint64_t w[7])
{
	return check_of(w);
}

struct orbit__stamp orbit__stamp_read(uint64_t s, uint64_t c)
{
	struct orbit__stamp st = {.kind = ORBIT__STAMP_NEVER, .claim = 0, .record = 0};
	if (s == 0)
		return st;
	uint64_t diff = s - c - 1;
	if ((uint32_t)diff == 0) {
		st.kind = diff == 0 ? ORBIT__STAMP_MARKER : ORBIT__STAMP_RECORD;
		st.claim = c;
		return st;
	}
	int32_t d = (int32_t)((uint32_t)(s - 1) - (uint32_t)c);
	st.kind = d > 0 ? ORBIT__STAMP_NEWER : ORBIT__STAMP_OLDER;
	st.claim = c + (uint64_t)(int64_t)d;
	st.record = s != st.claim + 1;
	return st;
}

/* Relaxed loads of the seven record words, each stored at once to its place
 * (the host is little-endian, as the record format: segment.c); returns
 * their check. Stored word by word, not read back from a stack copy with
 * wider loads, which stalls on store forwarding. */
static inline uint64_t copy_record(const struct orbit__seg_slot *slot, uint8_t *dst)
{
	uint64_t w[7];
	w[0] = atomic_load_explicit(&slot->word[0], memory_order_relaxed);
	memcpy(dst, &w[0], 8);
	w[1] = atomic_load_explicit(&slot->word[1], memory_order_relaxed);
	memcpy(dst + 8, &w[1], 8);
	w[2] = atomic_load_explicit(&slot->word[2], memory_order_relaxed);
	memcpy(dst + 16, &w[2], 8);
	w[3] = atomic_load_explicit(&slot->word[3], memory_order_relaxed);
	memcpy(dst + 24, &w[3], 8);
	w[4] = atomic_load_explicit(&slot->word[4], memory_order_relaxed);
	memcpy(dst + 32, &w[4], 8);
	w[5] = atomic_load_explicit(&slot->word[5], memory_order_relaxed);
	memcpy(dst + 40, &w[5], 8);
	w[6] = atomic_load_explicit(&slot->word[6], memory_order_relaxed);
	memcpy(dst + 48, &w[6], 8);
	return check_of(w);
}

uint32_t orbit__slots_copy(const struct orbit__seg_slot *slots, uint64_t mask, uint64_t next,
                           uint64_t end, uint8_t *dst, uint32_t room, enum orbit__slots_stop *why,
                           uint64_t *stop_stamp)
{
	uint32_t n = 0;
	*why = ORBIT__SLOTS_DONE;
	while (n < room && next + n < end) {
		const uint64_t c = next + n;
		const struct orbit__seg_slot *slot = &slots[c & mask];
		/* The lines were written on another core: ask for them early. */
		__builtin_prefetch(&slots[(c + 8) & mask]);
		/* R1, acquire: pairs with the producer's release store of the
		 * stamp (W4, orbit__publish in orbit/internal.h); the words of the
		 * record its check was computed from are visible. */
		uint64_t s = atomic_load_explicit(&slot->stamp, memory_order_acquire);
		uint64_t diff = s - c - 1;
		if ((uint32_t)diff != 0 || diff == 0) { /* not a record of claim c */
			*why = ORBIT__SLOTS_STAMP;
			*stop_stamp = s;
			break;
		}
		/* R2: the copy is the record only if its check is the stamp's. */
		if (copy_record(slot, dst + (size_t)n * ORBIT_RECORD_SIZE) != diff) {
			*why = ORBIT__SLOTS_TORN;
			break;
		}
		n++;
	}
	return n;
}

enum orbit__slot_verdict orbit__slot_verdict(enum orbit__slots_stop why, uint64_t stop_stamp,
                                             uint64_t next, uint64_t slots, uint64_t clean)
{
	if (why == ORBIT__SLOTS_TORN)
		return ORBIT__SLOT_LAPPED;
	struct orbit__stamp st = orbit__stamp_read(stop_stamp, next);
	if (st.kind == ORBIT__STAMP_NEWER || st.kind == ORBIT__STAMP_RECORD)
		return ORBIT__SLOT_LAPPED; /* RECORD: the stamp changed under the copy */
	/* Claim next will still be published when its slot shows its marker,
	 * nothing, or the record of next - slots read clean (guarantee 7). */
	if (st.kind == ORBIT__STAMP_MARKER || st.kind == ORBIT__STAMP_NEVER ||
	    (st.kind == ORBIT__STAMP_OLDER && st.record && st.claim + slots == next &&
	     st.claim >= clean))
		return ORBIT__SLOT_PENDING;
	return ORBIT__SLOT_GONE;
}
