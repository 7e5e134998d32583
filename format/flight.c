/* flight.c — reading a flight ring from a private copy; the layout is in
 * flight.h, docs/format.md 1.8. Every field is the writer's word only after
 * it was checked here: a reader of a dead or hostile segment copies the
 * bytes first and hands them in. */
#include "flight.h"
#include "record.h" /* orbit__le32 and kin */

#include <stdio.h>
#include <string.h>

_Static_assert(sizeof(struct orbit__flight_meta) == 2136, "docs/format.md 1.8");
_Static_assert(offsetof(struct orbit__flight_meta, ring_end) == 80, "docs/format.md 1.8");
_Static_assert(sizeof(struct orbit__flight_header) == 48 + 2 * 2136, "docs/format.md 1.8");
_Static_assert(sizeof(struct orbit__flight_header) <= ORBIT__FLIGHT_HEADER, "header fits");
_Static_assert(ORBIT__SEG_MIN_FLIGHT > ORBIT__FLIGHT_RING_AT * 4, "a ring of its own");

#define SAY(why, off, ...)                                                                         \
	do {                                                                                       \
		if ((why) != NULL) {                                                               \
			(why)->offset = (off);                                                     \
			snprintf((why)->what, sizeof(why)->what, __VA_ARGS__);                     \
		}                                                                                  \
	} while (0)

int orbit__flight_validate(const struct orbit__flight_header *h, uint64_t flight_size,
                           struct orbit__seg_problem *why)
{
	uint64_t magic = atomic_load_explicit(&h->magic, memory_order_acquire);
	if (magic == 0) {
		SAY(why, 0, "the flight ring's magic is 0: no stream has begun on it");
		return ORBIT__SEG_ENOTINIT;
	}
	if (magic != ORBIT__FLIGHT_MAGIC) {
		SAY(why, 0, "the flight ring's magic is 0x%016llx, not ORBTFLT1",
		    (unsigned long long)magic);
		return ORBIT__SEG_EBADSEG;
	}
	if (h->version != ORBIT__FLIGHT_VERSION) {
		SAY(why, offsetof(struct orbit__flight_header, version),
		    "flight ring version %u, this reader reads %u", h->version,
		    ORBIT__FLIGHT_VERSION);
		return ORBIT__SEG_EVERSION;
	}
	if (h->header_size != sizeof *h || h->handshake_at != ORBIT__FLIGHT_HEADER ||
	    h->handshake_cap != ORBIT__FLIGHT_HANDSHAKE_CAP ||
	    h->ring_at != ORBIT__FLIGHT_RING_AT || flight_size < ORBIT__SEG_MIN_FLIGHT ||
	    h->ring_size != orbit__flight_ring_size(flight_size)) {
		SAY(why, offsetof(struct orbit__flight_header, header_size),
		    "the flight ring's geometry (header %u bytes, ring %llu bytes at %llu) is not "
		    "the one a %llu-byte area has",
		    h->header_size, (unsigned long long)h->ring_size,
		    (unsigned long long)h->ring_at, (unsigned long long)flight_size);
		return ORBIT__SEG_EBADSEG;
	}
	return 0;
}

/* Whether block m, complete, says something a reader can use. */
static int meta_sound(const struct orbit__flight_meta *m, uint64_t ring_size, uint32_t rings,
                      const char **bad)
{
	if (m->head > m->tail || m->tail - m->head > ring_size)
		*bad = "head and tail are more than the ring apart";
	else if (m->head % 8 || m->tail % 8)
		*bad = "head or tail is not a multiple of 8";
	else if (m->handshake_len > ORBIT__FLIGHT_HANDSHAKE_CAP)
		*bad = "the handshake is longer than its slot";
	else if (m->ring_count != rings)
		*bad = "the ring count is not the segment's";
	else
		return 1;
	return 0;
}

int orbit__flight_meta_pick(const struct orbit__flight_header *h, uint32_t ring_count,
                            struct orbit__flight_meta *out, struct orbit__seg_problem *why)
{
	int best = -1;
	uint64_t best_gen = 0;
	const char *bad = "neither metadata block is complete";
	for (int i = 0; i < 2; i++) {
		const struct orbit__flight_meta *m = &h->meta[i];
		uint64_t g = atomic_load_explicit(&m->gen_begin, memory_order_relaxed);
		if (g == 0 || g != atomic_load_explicit(&m->gen_end, memory_order_relaxed))
			continue;
		const char *why_not = NULL;
		if (!meta_sound(m, h->ring_size, ring_count, &why_not)) {
			bad = why_not;
			continue;
		}
		if (best < 0 || g > best_gen) {
			best = i;
			best_gen = g;
		}
	}
	if (best < 0) {
		SAY(why, offsetof(struct orbit__flight_header, meta), "flight ring metadata: %s",
		    bad);
		return ORBIT__SEG_EBADSEG;
	}
	memcpy(out, &h->meta[best], sizeof *out);
	return 0;
}

void orbit__flight_iter_init(struct orbit__flight_iter *it, const uint8_t *copy, uint64_t from,
                             uint64_t to, uint64_t ring_size)
{
	it->copy = copy;
	it->from = from;
	it->to = to;
	it->pos = from;
	it->ring_size = ring_size;
	it->steps = 0;
}

int orbit__flight_next(struct orbit__flight_iter *it, struct orbit__flight_entry *e,
                       struct orbit__seg_problem *why)
{
	while (it->pos < it->to) {
		uint64_t room = it->ring_size - it->pos % it->ring_size;
		if (room < ORBIT__FLIGHT_ENTRY) { /* 8 bytes left: the next lap */
			it->pos += room;
			continue;
		}
		if (it->to - it->pos < ORBIT__FLIGHT_ENTRY) {
			SAY(why, it->pos % it->ring_size,
			    "flight ring: an entry header is cut by the tail (position %llu)",
			    (unsigned long long)it->pos);
			return ORBIT__SEG_EBADSEG;
		}
		const uint8_t *p = it->copy + (it->pos - it->from);
		uint32_t len = orbit__le32(p), kind = orbit__le32(p + 4) & 0xffff,
		         check = orbit__le32(p + 4) >> 16;
		uint64_t seq;
		memcpy(&seq, p + 8, 8);
		if (check != ORBIT__FLIGHT_CHECK ||
		    (kind != ORBIT__FLIGHT_DATA && kind != ORBIT__FLIGHT_END &&
		     kind != ORBIT__FLIGHT_WRAP)) {
			SAY(why, it->pos % it->ring_size,
			    "flight ring: no entry header at position %llu (kind %u, check 0x%04x)",
			    (unsigned long long)it->pos, kind, check);
			return ORBIT__SEG_EBADSEG;
		}
		if (kind == ORBIT__FLIGHT_WRAP) {
			it->pos += room;
			continue;
		}
		uint64_t size = ORBIT__FLIGHT_ENTRY + (((uint64_t)len + 7) & ~7ull);
		if (size > room || size > it->to - it->pos) {
			SAY(why, it->pos % it->ring_size,
			    "flight ring: the entry at position %llu claims %u bytes, past %s",
			    (unsigned long long)it->pos, len,
			    size > room ? "the end of the ring" : "the tail");
			return ORBIT__SEG_EBADSEG;
		}
		e->pos = it->pos;
		e->kind = kind;
		e->seq = seq;
		e->bytes = p + ORBIT__FLIGHT_ENTRY;
		e->len = len;
		it->pos += size;
		it->steps++;
		return 1;
	}
	return 0;
}
