/*
 * segment_fuzz.c — libFuzzer target: hostile bytes as a segment.
 *
 * The input is a whole segment image (header, control page, rings). It goes
 * through orbit__segment_validate; when that accepts it, the rings are drained
 * with the validated layout, exactly as a reader in another process would,
 * and the records are decoded and fed to the reconstructor, so the drain and
 * everything downstream of it see hostile ring contents too.
 *
 * Besides "no crash, no sanitizer report", it checks:
 *  - validate accepts only layouts that fit in the bytes given;
 *  - every record delivered is the slot of its claim, byte for byte, under
 *    that claim's stamp with the record's check, and claims arrive in order
 *    (scope_ring.c, guarantees 2 and 3);
 *  - per ring, next == drained + lost (guarantee 4);
 *  - every event's name is readable for its whole length.
 * The seeds and the crashes worth keeping are in corpus/segment/; the plain
 * build runs them as the test segment_fuzz_corpus.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reconstruct.h"
#include "record.h"
#include "scope_ring.h"
#include "segment.h"

#define MAX_INPUT (4u << 20)

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "segment_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

struct ctx {
	const struct orbit__segment *seg;
	struct orbit_reconstruct *rc;
	uint64_t expect_claim[ORBIT_MAX_RINGS]; /* next claim a run may start at */
	uint64_t delivered[ORBIT_MAX_RINGS];
	uint64_t name_sum; /* keeps the name reads alive */
};

static void on_event(void *vctx, const struct orbit_event *ev)
{
	struct ctx *c = vctx;
	FUZZ_CHECK(ev->name != NULL || ev->name_len == 0);
	FUZZ_CHECK(ev->name_len <= ORBIT_NAME_LIMIT);
	/* Read every byte of the name: ASan reports a short buffer. */
	for (size_t i = 0; i < ev->name_len; i++)
		c->name_sum += (uint8_t)ev->name[i];
}

static void on_records(void *vctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	struct ctx *c = vctx;
	FUZZ_CHECK(ring < c->seg->layout.ring_count);
	FUZZ_CHECK(n > 0);
	/* Claim order: a run starts at or after where the last one ended
	 * (after a lapped skip, strictly later). */
	FUZZ_CHECK(first >= c->expect_claim[ring]);
	const struct orbit__ring *r = orbit__segment_ring(c->seg, ring);
	const uint64_t mask = c->seg->layout.slots_per_ring - 1;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t claim = first + i;
		const struct orbit__slot *s = &r->slots[claim & mask];
		/* The image does not change under us: what was delivered is the
		 * slot of that claim, with that claim's stamp for what it holds
		 * (claim + 1 + check, docs/format.md 1.5). */
		uint64_t name[4];
		for (int k = 0; k < 4; k++)
			name[k] = atomic_load_explicit(&s->name[k], memory_order_relaxed);
		uint64_t check =
		    orbit__check(atomic_load_explicit(&s->time, memory_order_relaxed),
		                 atomic_load_explicit(&s->id, memory_order_relaxed),
		                 atomic_load_explicit(&s->meta, memory_order_relaxed), name);
		FUZZ_CHECK(atomic_load_explicit(&s->seq, memory_order_relaxed) ==
		           claim + 1 + check);
		FUZZ_CHECK(memcmp(recs + (size_t)i * ORBIT_RECORD_SIZE, (const uint8_t *)s + 8,
		                  ORBIT_RECORD_SIZE) == 0);
		struct orbit_record rec;
		if (orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec) == 0) {
			const uint8_t *name;
			size_t len = orbit__record_head_name(&rec, &name);
			FUZZ_CHECK(len <= ORBIT_RECORD_NAME);
			FUZZ_CHECK(name >= rec.name && name + len <= rec.name + ORBIT_RECORD_NAME);
		}
	}
	/* The whole batch, as a capture carries it: records of unknown kind or
	 * flags included (counted, not tripped on), lapped skips as gaps. */
	FUZZ_CHECK(orbit__reconstruct_batch(c->rc, ring, first, recs, n) == 0);
	c->expect_claim[ring] = first + n;
	c->delivered[ring] += n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > MAX_INPUT)
		return 0;
	/* 64-aligned private copy: the header's magic is an _Atomic u64, and
	 * slots are read with atomic loads. Exactly size bytes are valid. */
	uint8_t *buf = aligned_alloc(64, (size + 63) & ~(size_t)63);
	if (buf == NULL)
		return 0;
	memcpy(buf, data, size);

	struct orbit__seg_layout l;
	int err = orbit__segment_validate(buf, size, &l, NULL);
	FUZZ_CHECK(err == 0 || err == ORBIT_ENOTINIT || err == ORBIT_EBADSEG ||
	           err == ORBIT_EVERSION || err == ORBIT_ETRUNC);
	if (err != 0) {
		free(buf);
		return 0;
	}
	FUZZ_CHECK(l.ring_count >= 1 && l.ring_count <= ORBIT_MAX_RINGS);
	FUZZ_CHECK(l.slots_per_ring >= ORBIT__SEG_MIN_SLOTS &&
	           (l.slots_per_ring & (l.slots_per_ring - 1)) == 0);
	FUZZ_CHECK(l.total_size <= size);
	FUZZ_CHECK(l.rings_offset + (uint64_t)l.ring_count * l.ring_stride <= size);

	struct orbit__segment seg;
	memset(&seg, 0, sizeof seg);
	snprintf(seg.name, sizeof seg.name, "fuzz");
	seg.base = buf;
	seg.size = size;
	seg.control = (struct orbit__seg_control *)(buf + l.page_size);
	seg.layout = l;

	struct ctx c;
	memset(&c, 0, sizeof c);
	c.seg = &seg;
	c.rc = orbit__reconstruct_new(on_event, &c);
	FUZZ_CHECK(c.rc != NULL);

	/* In-process: the producers count as alive, so an unpublished claim
	 * stalls its ring (the backstop is 30 s away) and no /proc lookup of
	 * the header's pid happens. */
	static struct orbit__drain d; /* 9 KiB: keep it off the stack */
	orbit__drain_init(&d, &seg, 1);
	struct orbit__drain_result res;
	orbit__drain_all(&d, on_records, &c, &res);
	/* A second pass finds nothing new: the image did not change. */
	struct orbit__drain_result again;
	orbit__drain_all(&d, on_records, &c, &again);
	FUZZ_CHECK(again.records == 0);

	uint64_t records = 0;
	for (uint32_t i = 0; i < l.ring_count; i++) {
		const struct orbit__ring_state *s = &d.ring[i];
		uint64_t cursor = orbit__ring_claimed(&seg, i);
		FUZZ_CHECK(s->drained == c.delivered[i]);
		FUZZ_CHECK(s->next == s->drained + orbit__ring_lost(s)); /* guarantee 4 */
		FUZZ_CHECK(s->next <= cursor);
		FUZZ_CHECK(s->lost_dead == 0 && s->lost_backstop == 0);
		/* Stopped short of the cursor only on an unpublished claim. */
		if (s->next < cursor)
			FUZZ_CHECK(s->stalled);
		records += s->drained;
	}
	FUZZ_CHECK(res.records == records);

	orbit__reconstruct_finish(c.rc);
	const struct orbit_reconstruct_stats *st = orbit__reconstruct_stats(c.rc);
	FUZZ_CHECK(st->records == records);
	orbit__reconstruct_free(c.rc);
	free(buf);
	return 0;
}
