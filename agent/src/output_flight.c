/*
 * output_flight.c — the flight ring (ORBIT_FLIGHT): the stream's frames
 * kept in this process's segment, the newest ones, so that orbit-dump can
 * make a capture of a process that crashed, was killed, or still runs. The
 * layout and the reader's rules are format/flight.h's (docs/format.md 1.8).
 *
 * The agent thread is the only writer. A frame settles when it is in the
 * ring (it has reached its destination); what later overwrites it is the
 * flight ring's own loss, which a dump counts from the metadata
 * (ring_framed minus what it finds). Appending a frame of n bytes:
 *
 *   1. find where it goes: at tail, or at the next multiple of the ring
 *      size when it does not fit before the end;
 *   2. move head past every entry the new one will overwrite, and publish
 *      the metadata: nothing below the new head is read as valid from now;
 *   3. write a WRAP header at the old tail if the entry skips the end, then
 *      the entry's header and bytes;
 *   4. publish the metadata with the new tail and where the stream stands.
 *
 * Each publish writes the older of the two blocks: gen_begin, a release
 * fence (the fields are not visible before it), the fields, then gen_end
 * with a release store (the fields are visible before it). A reader in
 * another process pairs these with its copy in address order and its
 * comparison of the two generations (format/flight.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flight.h"
#include "output.h"
#include "record.h" /* orbit__le32 and kin */
#include "segment.h"
#include "segment_create.h" /* orbit__segment_reserve */

#define GROW_BY (1ull << 20) /* the ring's memory is reserved this much ahead */

struct flight_output {
	struct orbit__output o;
	struct orbit__segment *seg;
	struct orbit__flight_header *h; /* in the segment */
	uint8_t *handshake, *ring;      /* in the segment */
	uint64_t ring_size;
	struct orbit__flight_meta m; /* what the next publish says */
	uint64_t gen;                /* of the last block written */
	uint64_t ready;              /* ring bytes [0, ready) have their memory */
	int said, said_room;
};

/* Ring bytes [0, end) get their memory (a lazy segment reserves them as
 * they are first written): 0, or -ENOSPC with one line the first time. */
static int ensure_ready(struct flight_output *f, uint64_t end)
{
	if (end <= f->ready)
		return 0;
	uint64_t to = end + GROW_BY < f->ring_size ? end + GROW_BY : f->ring_size;
	uint64_t at = f->seg->layout.flight_offset + ORBIT__FLIGHT_RING_AT;
	int err = orbit__segment_reserve(f->seg, at + f->ready, to - f->ready);
	if (err != 0) {
		if (!f->said_room++)
			fprintf(
			    stderr,
			    "orbit: cannot reserve more of the flight ring's memory in %s (%s): "
			    "frames that need it are not kept\n",
			    ORBIT__SEG_DIR, strerror(-err));
		return err;
	}
	f->ready = to;
	return 0;
}

static void publish(struct flight_output *f)
{
	struct orbit__flight_meta *b = &f->h->meta[(f->gen + 1) % 2];
	uint64_t g = ++f->gen;
	atomic_store_explicit(&b->gen_begin, g, memory_order_relaxed);
	/* Release fence: pairs with the reader's copy of gen_begin before
	 * the fields; a reader that sees a field of this publish sees g. GCC
	 * says ThreadSanitizer ignores fences (-Wtsan); the readers are other
	 * processes (orbit-dump), which it cannot see either, so no check it
	 * makes rests on this one. */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
	atomic_thread_fence(memory_order_release);
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	const size_t from = offsetof(struct orbit__flight_meta, head);
	memcpy((uint8_t *)b + from, (const uint8_t *)&f->m + from,
	       offsetof(struct orbit__flight_meta, gen_end) - from);
	/* Release: the fields are complete before gen_end says g. */
	atomic_store_explicit(&b->gen_end, g, memory_order_release);
}

static void write_header(uint8_t *p, uint32_t len, uint32_t kind, uint64_t seq)
{
	orbit__put_le32(p, len);
	orbit__put_le32(p + 4, kind | ORBIT__FLIGHT_CHECK << 16);
	memcpy(p + 8, &seq, 8);
}

/* The size of the entry at position pos: ours, so trusted. */
static uint64_t entry_span(const struct flight_output *f, uint64_t pos)
{
	uint64_t room = f->ring_size - pos % f->ring_size;
	if (room < ORBIT__FLIGHT_ENTRY)
		return room;
	const uint8_t *p = f->ring + pos % f->ring_size;
	uint32_t len, kind;
	memcpy(&len, p, 4);
	memcpy(&kind, p + 4, 4);
	if ((kind & 0xffff) == ORBIT__FLIGHT_WRAP)
		return room;
	return ORBIT__FLIGHT_ENTRY + (((uint64_t)len + 7) & ~7ull);
}

/* Drops the oldest entries until everything from `keep` on is free. */
static void evict(struct flight_output *f, uint64_t keep)
{
	while (f->m.head < keep && f->m.head < f->m.tail) {
		uint64_t at = f->m.head, span = entry_span(f, at);
		uint64_t room = f->ring_size - at % f->ring_size;
		if (room >= ORBIT__FLIGHT_ENTRY && span != room) { /* an entry, not a skip */
			f->m.dropped_frames++;
			f->m.dropped_bytes += span;
		}
		f->m.head += span;
	}
	if (f->m.head < keep)
		f->m.head = keep; /* the ring was empty */
}

static void note_stream(struct flight_output *f, const struct orbit__frame *fr)
{
	f->m.last_seq = fr->seq;
	uint32_t n = fr->rings < ORBIT_MAX_RINGS ? fr->rings : ORBIT_MAX_RINGS;
	f->m.ring_count = n;
	if (fr->ring_end != NULL)
		memcpy(f->m.ring_end, fr->ring_end, n * sizeof f->m.ring_end[0]);
	if (fr->ring_framed != NULL)
		memcpy(f->m.ring_framed, fr->ring_framed, n * sizeof f->m.ring_framed[0]);
}

static int flight_start(struct orbit__output *o)
{
	struct flight_output *f = (struct flight_output *)o;
	const struct orbit__segment *seg = f->seg;
	if (seg == NULL || seg->layout.flight_size < ORBIT__SEG_MIN_FLIGHT) {
		if (!f->said++)
			fprintf(stderr,
			        "orbit: ORBIT_FLIGHT was set after this process's segment was "
			        "made without a flight ring; no flight ring\n");
		return -ENOSPC;
	}
	uint8_t *area = seg->base + seg->layout.flight_offset;
	f->h = (struct orbit__flight_header *)area;
	f->handshake = area + ORBIT__FLIGHT_HEADER;
	f->ring = area + ORBIT__FLIGHT_RING_AT;
	f->ring_size = orbit__flight_ring_size(seg->layout.flight_size);
	if (atomic_load_explicit(&f->h->magic, memory_order_relaxed) != ORBIT__FLIGHT_MAGIC) {
		f->h->version = ORBIT__FLIGHT_VERSION;
		f->h->header_size = sizeof *f->h;
		f->h->handshake_at = ORBIT__FLIGHT_HEADER;
		f->h->handshake_cap = ORBIT__FLIGHT_HANDSHAKE_CAP;
		f->h->ring_at = ORBIT__FLIGHT_RING_AT;
		f->h->ring_size = f->ring_size;
		memset(f->h->meta, 0, sizeof f->h->meta);
		memset(&f->m, 0, sizeof f->m);
		f->gen = 0;
		/* Release: pairs with the reader's acquire load of magic
		 * (orbit__flight_validate): the geometry is there first. */
		atomic_store_explicit(&f->h->magic, ORBIT__FLIGHT_MAGIC, memory_order_release);
	} else if (f->gen == 0) {
		/* An earlier agent start of this process wrote it: go on from
		 * its newer block (ours: no one else writes here). */
		for (int i = 0; i < 2; i++) {
			uint64_t g =
			    atomic_load_explicit(&f->h->meta[i].gen_end, memory_order_relaxed);
			if (g > f->gen) {
				f->gen = g;
				memcpy(&f->m, &f->h->meta[i], sizeof f->m);
			}
		}
	}
	/* A new stream starts the ring over; positions keep growing. */
	uint32_t stream = f->m.stream + 1;
	uint64_t at = f->m.tail;
	memset(&f->m, 0, sizeof f->m);
	f->m.head = f->m.tail = at;
	f->m.stream = stream;
	f->m.ring_count = seg->layout.ring_count;
	publish(f);
	o->streaming = 1;
	return 0; /* ready now */
}

static void keep_handshake(struct flight_output *f, const struct orbit__frame *fr)
{
	f->m.handshake_len = 0;
	publish(f); /* no reader takes the slot while it is rewritten */
	if (fr->len <= ORBIT__FLIGHT_HANDSHAKE_CAP) {
		memcpy(f->handshake, fr->bytes, fr->len);
		f->m.handshake_len = (uint32_t)fr->len;
	}
	note_stream(f, fr);
	f->m.frames++;
	publish(f);
}

static int flight_send(struct orbit__output *o, struct orbit__frame *fr)
{
	struct flight_output *f = (struct flight_output *)o;
	if (!o->streaming)
		return -EBADF;
	if (fr->kind == ORBIT__FRAME_HANDSHAKE) {
		keep_handshake(f, fr);
		o->ev->settled(o->ev->ctx, o, fr->seq, 1);
		return 0;
	}
	uint64_t need = ORBIT__FLIGHT_ENTRY + (((uint64_t)fr->len + 7) & ~7ull);
	if (need > f->ring_size / 4) {
		/* Too big to keep with others: its records count as
		 * overwritten (framed, never found). */
		note_stream(f, fr);
		f->m.refused_frames++;
		publish(f);
		o->ev->settled(o->ev->ctx, o, fr->seq, 1);
		return 0;
	}
	uint64_t pos = f->m.tail, room = f->ring_size - pos % f->ring_size;
	uint64_t start = need <= room ? pos : pos + room;
	uint64_t last = start % f->ring_size + need; /* the wrap header lies below it */
	if (ensure_ready(f, start != pos ? f->ring_size : last) != 0) {
		note_stream(f, fr); /* as a frame too big: overwritten, never found */
		f->m.refused_frames++;
		publish(f);
		o->ev->settled(o->ev->ctx, o, fr->seq, 1);
		return 0;
	}
	if (start + need > f->ring_size)
		evict(f, start + need - f->ring_size);
	publish(f); /* 2: nothing below head is read from now on */
	if (start != pos && room >= ORBIT__FLIGHT_ENTRY)
		write_header(f->ring + pos % f->ring_size, 0, ORBIT__FLIGHT_WRAP, fr->seq);
	uint8_t *p = f->ring + start % f->ring_size;
	write_header(p, (uint32_t)fr->len,
	             fr->kind == ORBIT__FRAME_END ? ORBIT__FLIGHT_END : ORBIT__FLIGHT_DATA,
	             fr->seq);
	memcpy(p + ORBIT__FLIGHT_ENTRY, fr->bytes, fr->len);
	memset(p + ORBIT__FLIGHT_ENTRY + fr->len, 0, need - ORBIT__FLIGHT_ENTRY - fr->len);
	f->m.tail = start + need;
	f->m.frames++;
	f->m.ended = fr->kind == ORBIT__FRAME_END;
	note_stream(f, fr);
	publish(f); /* 4 */
	o->ev->settled(o->ev->ctx, o, fr->seq, 1);
	return 0;
}

static size_t flight_pending(const struct orbit__output *o)
{
	(void)o;
	return 0; /* written at once */
}

static int flight_coming(const struct orbit__output *o)
{
	(void)o;
	return 0;
}

static void flight_hurry(struct orbit__output *o)
{
	(void)o;
}

static void flight_end(struct orbit__output *o)
{
	o->streaming = 0;
	if (o->ev->idle)
		o->ev->idle(o->ev->ctx, o);
}

static void flight_give_up(struct orbit__output *o)
{
	(void)o; /* every frame settled when it was stored */
}

static const char *flight_trouble(const struct orbit__output *o)
{
	(void)o;
	return "";
}

static void flight_close(struct orbit__output *o)
{
	free(o);
}

/* Nothing of ours is open; the segment is the parent's. */
static void flight_forget(struct orbit__output *o, int copies)
{
	(void)copies;
	flight_close(o);
}

static const struct orbit__output_ops flight_ops = {
    .start = flight_start,
    .send = flight_send,
    .pending = flight_pending,
    .coming = flight_coming,
    .hurry = flight_hurry,
    .end = flight_end,
    .give_up = flight_give_up,
    .trouble = flight_trouble,
    .close = flight_close,
    .forget = flight_forget,
};

struct orbit__output *orbit__output_flight(uv_loop_t *loop, struct orbit__segment *seg)
{
	struct flight_output *f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	f->o.ops = &flight_ops;
	f->o.loop = loop;
	f->seg = seg;
	return &f->o;
}
