/* stream_writer.c — the packets of a stream and its frames; see
 * stream_writer.h. */
#include "stream_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"

/* A thread the stream has named (guarantee 5): open addressing on tid. */
struct named {
	uint32_t tid; /* 0: empty (no thread has tid 0) */
	char name[ORBIT_SW_NAME];
};

struct orbit__sw {
	struct orbit__sw_sink sink;
	size_t target;
	struct orbit_frame_writer fw;
	struct orbit_batch_encoder *enc; /* made at the first batch */
	uint64_t seq;                    /* of the next frame */
	uint32_t rings;                  /* the Handshake's ring_count */
	/* Per ring: the claim after the last record framed and the records
	 * framed since the stream began, in finished frames (done) and with
	 * the frame being built (next); and the records of the frame being
	 * built (next_framed - done_framed, kept for the sink). */
	uint64_t done_end[ORBIT_MAX_RINGS], done_framed[ORBIT_MAX_RINGS];
	uint64_t next_end[ORBIT_MAX_RINGS], next_framed[ORBIT_MAX_RINGS];
	uint64_t records[ORBIT_MAX_RINGS];
	uint64_t sent[ORBIT_MAX_RINGS]; /* the records of the frame at the sink */
	char sched_off[160];            /* why a KernelSched was left out */
	int in_sink;                    /* the sink's frame() has a frame of ours */
	/* the threads named in this stream (guarantee 5) */
	struct named *names;
	uint32_t names_cap, names_n;
	/* the earliest event time (guarantee 6): in frames taken, in the
	 * frame being built; UINT64_MAX none */
	uint64_t first_done, first_next;
	uint64_t handshake_ns;
};

struct orbit__sw *orbit__sw_new(int level, size_t frame_target, const struct orbit__sw_sink *sink)
{
	struct orbit__sw *w = calloc(1, sizeof *w);
	if (w == NULL)
		return NULL;
	if (orbit__frame_writer_init(&w->fw, level) != 0) {
		free(w);
		return NULL;
	}
	w->sink = *sink;
	w->target = frame_target;
	w->first_done = w->first_next = UINT64_MAX;
	return w;
}

void orbit__sw_free(struct orbit__sw *w)
{
	if (w == NULL)
		return;
	orbit__frame_writer_free(&w->fw);
	orbit__batch_encoder_free(w->enc);
	free(w->names);
	free(w);
}

/* The packet whose body is `body`, a message of case c. Every member of
 * Packet's oneof is a pointer to a message, and all pointers to structures
 * have one representation (C11 6.2.5), so one member holds any of them. */
static Orbit__Packet packet_of(Orbit__Packet__BodyCase c, const void *body)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = c;
	p.handshake = (Orbit__Handshake *)body;
	return p;
}

/* ---- names (guarantee 5) ---- */

void orbit__sw_forget_names(struct orbit__sw *w)
{
	if (w->names != NULL)
		memset(w->names, 0, w->names_cap * sizeof *w->names);
	w->names_n = 0;
}

/* The entry of tid, or the empty one where it would go; NULL when the
 * table is full or out of memory. */
static struct named *named_at(struct orbit__sw *w, uint32_t tid)
{
	if (w->names_n + 1 > w->names_cap / 2) {
		if (w->names_n >= ORBIT_SW_NAMES_MAX)
			return NULL;
		uint32_t cap = w->names_cap ? w->names_cap * 2 : 256;
		struct named *t = calloc(cap, sizeof *t);
		if (t == NULL)
			return NULL;
		for (uint32_t i = 0; i < w->names_cap; i++) {
			if (w->names[i].tid == 0)
				continue;
			uint32_t j = (w->names[i].tid * 0x9e3779b9u) & (cap - 1);
			while (t[j].tid != 0)
				j = (j + 1) & (cap - 1);
			t[j] = w->names[i];
		}
		free(w->names);
		w->names = t;
		w->names_cap = cap;
	}
	uint32_t j = (tid * 0x9e3779b9u) & (w->names_cap - 1);
	while (w->names[j].tid != 0 && w->names[j].tid != tid)
		j = (j + 1) & (w->names_cap - 1);
	return &w->names[j];
}

/* The first records of thread tid in this stream: its name before them. A
 * thread the sink cannot name is remembered all the same (asked once). */
static void name_first(struct orbit__sw *w, uint32_t tid)
{
	struct named *e;
	char name[ORBIT_SW_NAME];
	if (tid == 0 || (e = named_at(w, tid)) == NULL || e->tid == tid)
		return;
	memset(name, 0, sizeof name);
	int have = w->sink.name(w->sink.ctx, tid, name);
	name[ORBIT_SW_NAME - 1] = '\0';
	e->tid = tid;
	memcpy(e->name, name, sizeof name);
	w->names_n++;
	if (have && orbit__sw_thread_name(w, tid, name) != 0) {
		e->tid = 0; /* not sent: asked again at its next records */
		w->names_n--;
	}
}

/* Before a batch (compacted, not yet in the frame): the threads of its
 * records the stream has not named, from its keys (each of one thread). */
static void name_records(struct orbit__sw *w)
{
	uint32_t last = 0;
	for (uint32_t k = 0; k < orbit__batch_nkeys(w->enc); k++) {
		uint32_t tid = orbit__batch_key_tid(w->enc, k);
		if (tid != last)
			name_first(w, tid);
		last = tid;
	}
}

int orbit__sw_rename(struct orbit__sw *w, uint32_t tid, const char *name)
{
	struct named *e = tid != 0 && w->names_n > 0 ? named_at(w, tid) : NULL;
	char now[ORBIT_SW_NAME];
	if (e == NULL || e->tid != tid)
		return 0;
	memset(now, 0, sizeof now);
	strncpy(now, name, sizeof now - 1);
	if (memcmp(now, e->name, sizeof now) == 0)
		return 0;
	int err = orbit__sw_thread_name(w, tid, now);
	if (err == 0)
		memcpy(e->name, now, sizeof now);
	return err;
}

/* ---- the earliest time (guarantee 6) ---- */

static void saw(struct orbit__sw *w, uint64_t t)
{
	if (t < w->first_next)
		w->first_next = t;
}

uint64_t orbit__sw_first_ns(const struct orbit__sw *w)
{
	uint64_t t = w->first_done < w->first_next ? w->first_done : w->first_next;
	return t != UINT64_MAX ? t : w->handshake_ns;
}

/* ---- frames ---- */

/* The frame being built is gone: its records never leave, and the
 * stream's position is that of the last finished frame. */
static void drop_frame(struct orbit__sw *w)
{
	w->fw.len = 0;
	w->fw.packets = 0;
	if (w->sink.lost != NULL)
		w->sink.lost(w->sink.ctx, w->records, w->rings);
	memcpy(w->next_end, w->done_end, sizeof w->next_end);
	memcpy(w->next_framed, w->done_framed, sizeof w->next_framed);
	memset(w->records, 0, sizeof w->records);
	w->first_next = UINT64_MAX;
	orbit__sw_forget_names(w); /* the names it held never arrive */
}

static int finish(struct orbit__sw *w, enum orbit__sw_kind kind)
{
	if (w->fw.len == 0)
		return 0;
	if (orbit__frame_finish(&w->fw) != 0 || w->fw.out_len == 0) {
		drop_frame(w);
		return -ENOMEM;
	}
	memcpy(w->done_end, w->next_end, sizeof w->done_end);
	memcpy(w->done_framed, w->next_framed, sizeof w->done_framed);
	memcpy(w->sent, w->records, sizeof w->sent);
	memset(w->records, 0, sizeof w->records);
	struct orbit__sw_frame f = {.bytes = w->fw.out,
	                            .len = w->fw.out_len,
	                            .seq = w->seq++,
	                            .kind = kind,
	                            .rings = w->rings,
	                            .ring_end = w->done_end,
	                            .ring_framed = w->done_framed,
	                            .ring_records = w->sent};
	w->in_sink = 1;
	int err = w->sink.frame(w->sink.ctx, &f);
	w->in_sink = 0;
	if (err == 0 && w->first_next < w->first_done)
		w->first_done = w->first_next;
	if (err != 0)
		orbit__sw_forget_names(w);
	w->first_next = UINT64_MAX;
	return err;
}

uint8_t *orbit__sw_take(struct orbit__sw *w)
{
	uint8_t *p = w->fw.out;
	if (!w->in_sink || p == NULL)
		return NULL;
	w->fw.out = NULL; /* the next frame gets a buffer of its own */
	w->fw.out_cap = 0;
	return p;
}

/* Cuts the frame once it is big enough (guarantee 3). */
static int maybe_cut(struct orbit__sw *w)
{
	return w->fw.len >= w->target ? finish(w, ORBIT__SW_DATA) : 0;
}

/* A packet into the frame being built, whose earliest event is first
 * (UINT64_MAX: none of its own). */
static int add_seen(struct orbit__sw *w, const Orbit__Packet *p, uint64_t first)
{
	int err = orbit__frame_add(&w->fw, p);
	if (err)
		return err;
	saw(w, first); /* in the frame being built, whatever comes of it */
	maybe_cut(w);  /* the packet is in the stream whatever becomes of the frame */
	return 0;
}

int orbit__sw_packet(struct orbit__sw *w, const Orbit__Packet *p)
{
	return add_seen(w, p, UINT64_MAX);
}

int orbit__sw_cut(struct orbit__sw *w)
{
	return finish(w, ORBIT__SW_DATA);
}

void orbit__sw_abort(struct orbit__sw *w)
{
	if (w->fw.len != 0)
		drop_frame(w);
}

size_t orbit__sw_pending(const struct orbit__sw *w)
{
	return w->fw.len;
}

uint64_t orbit__sw_seq(const struct orbit__sw *w)
{
	return w->seq;
}

void orbit__sw_trim(struct orbit__sw *w)
{
	if (w->fw.len != 0)
		return;
	orbit__frame_writer_trim(&w->fw);
	orbit__batch_encoder_free(w->enc);
	w->enc = NULL;
}

int orbit__sw_copy(struct orbit__sw *w, const uint8_t *frame, size_t len, enum orbit__sw_kind kind)
{
	int err = finish(w, ORBIT__SW_DATA); /* frames stay whole and in order */
	if (err)
		return err;
	struct orbit__sw_frame f = {.bytes = frame,
	                            .len = len,
	                            .seq = w->seq++,
	                            .kind = kind,
	                            .rings = w->rings,
	                            .ring_end = w->done_end,
	                            .ring_framed = w->done_framed,
	                            .ring_records = w->records};
	return w->sink.frame(w->sink.ctx, &f);
}

/* ---- the handshake ---- */

int orbit__sw_handshake(struct orbit__sw *w, Orbit__Handshake *h, char *why, size_t why_len)
{
	orbit__sw_abort(w);
	orbit__sw_forget_names(w);
	w->seq = 0;
	w->first_done = w->first_next = UINT64_MAX;
	w->handshake_ns = h->monotonic_ns;
	w->rings = h->ring_count < ORBIT_MAX_RINGS ? h->ring_count : ORBIT_MAX_RINGS;
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		w->done_end[r] = w->next_end[r] = r < h->n_ring_start ? h->ring_start[r] : 0;
		w->done_framed[r] = w->next_framed[r] = 0;
	}
	Orbit__Packet p = packet_of(ORBIT__PACKET__BODY_HANDSHAKE, h);
	/* The frame's content is the packet and its length prefix. */
	const size_t room = ORBIT_HANDSHAKE_FRAME_MAX - 16;
	int left_out = 0;
	if (h->kernel_sched != NULL && orbit__packet__get_packed_size(&p) > room)
		h->kernel_sched->n_tids = 0;
	if (h->kernel_sched != NULL && orbit__packet__get_packed_size(&p) > room) {
		if (why == NULL) {
			why = w->sched_off;
			why_len = sizeof w->sched_off;
		}
		snprintf(why, why_len,
		         "the kernel's event formats do not fit in the handshake (%zu bytes, "
		         "at most %u)",
		         orbit__kernel_sched__get_packed_size(h->kernel_sched),
		         ORBIT_HANDSHAKE_FRAME_MAX);
		h->kernel_sched = NULL;
		h->kernel_sched_off = why;
		left_out = 1;
	}
	int err = orbit__frame_add(&w->fw, &p);
	if (err == 0)
		err = finish(w, ORBIT__SW_HANDSHAKE); /* alone in the first frame */
	return err ? err : left_out;
}

/* ---- ring batches ---- */

/* One batch of k records, encoded straight into the frame (no protobuf-c
 * copy); a batch whose packet would be over ORBIT_PACKET_MAX is cut in two.
 * Returns the records that went in. */
static uint32_t add_batch(struct orbit__sw *w, uint32_t ring, uint64_t first,
                          const uint8_t *records, uint32_t k)
{
	orbit__batch_compact(w->enc, records, k);
	size_t len = orbit__batch_packet_size(w->enc, ring, first);
	if (len > ORBIT_PACKET_MAX && k > 1) {
		uint32_t a = add_batch(w, ring, first, records, k / 2);
		return a + add_batch(w, ring, first + k / 2,
		                     records + (size_t)(k / 2) * ORBIT_RECORD_SIZE, k - k / 2);
	}
	if (w->sink.name != NULL)
		name_records(w); /* their ThreadName packets before the batch */
	uint8_t *p = orbit__frame_append(&w->fw, len);
	if (p == NULL)
		return 0;
	orbit__batch_packet_write(p, w->enc, ring, first);
	saw(w, orbit__batch_earliest_named(w->enc));
	w->next_end[ring] = first + k;
	w->next_framed[ring] += k;
	w->records[ring] += k;
	maybe_cut(w);
	return k;
}

uint32_t orbit__sw_records(struct orbit__sw *w, uint32_t ring, uint64_t first,
                           const uint8_t *records, uint32_t n)
{
	if (ring >= ORBIT_MAX_RINGS)
		return 0;
	if (w->enc == NULL && (w->enc = orbit__batch_encoder_new()) == NULL)
		return 0;
	uint32_t done = 0;
	while (n > 0) {
		uint32_t k = n < ORBIT_BATCH_MAX ? n : ORBIT_BATCH_MAX;
		done += add_batch(w, ring, first, records, k);
		records += (size_t)k * ORBIT_RECORD_SIZE;
		first += k;
		n -= k;
	}
	return done;
}

/* ---- the other packets ---- */

static int put(struct orbit__sw *w, Orbit__Packet__BodyCase c, const void *body)
{
	Orbit__Packet p = packet_of(c, body);
	return orbit__sw_packet(w, &p);
}

/* FtracePage and KernelPage: the same two fields, an index (the ring, the
 * CPU) and the page; first is the earliest event the page holds that the
 * stream's first_ns counts (UINT64_MAX: none). */
static int page_packet(struct orbit__sw *w, Orbit__Packet__BodyCase c, uint32_t index,
                       const uint8_t *page, size_t len, uint64_t first)
{
	const ProtobufCBinaryData bytes = {len, (uint8_t *)page};
	Orbit__FtracePage f = ORBIT__FTRACE_PAGE__INIT;
	Orbit__KernelPage k = ORBIT__KERNEL_PAGE__INIT;
	f.ring = k.cpu = index;
	f.page = k.page = bytes;
	Orbit__Packet p = packet_of(c, c == ORBIT__PACKET__BODY_FTRACE_PAGE ? (const void *)&f
	                                                                    : (const void *)&k);
	return add_seen(w, &p, first);
}

/* A log page's records (format.md 5.3: u16 type, u8, u8, s32 tid, ...):
 * their threads named before it, the earliest of their times. Lines and
 * markers are types 1 to 3; what a reader would not take as one counts not. */
static void log_records(struct orbit__sw *w, const uint8_t *page, size_t len, uint64_t *first)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	uint32_t last = 0;
	*first = UINT64_MAX;
	if (orbit__ftrace_open(&it, page, len, &h) != 0)
		return;
	while (orbit__ftrace_next(&it, &rec) == 1) {
		uint16_t type = rec.len >= 8 ? orbit__le16(rec.data) : 0;
		uint32_t tid = rec.len >= 8 ? orbit__le32(rec.data + 4) : 0;
		if (type < 1 || type > 3)
			continue;
		*first = rec.time < *first ? rec.time : *first;
		if (w->sink.name != NULL && tid != last)
			name_first(w, tid);
		last = tid;
	}
}

int orbit__sw_log_page(struct orbit__sw *w, uint32_t ring, const uint8_t *page, size_t len)
{
	uint64_t first;
	log_records(w, page, len, &first);
	return page_packet(w, ORBIT__PACKET__BODY_FTRACE_PAGE, ring, page, len, first);
}

int orbit__sw_kernel_page(struct orbit__sw *w, uint32_t cpu, const uint8_t *page, size_t len)
{
	return page_packet(w, ORBIT__PACKET__BODY_KERNEL_PAGE, cpu, page, len, UINT64_MAX);
}

int orbit__sw_loss(struct orbit__sw *w, const Orbit__Loss *l)
{
	return put(w, ORBIT__PACKET__BODY_LOSS, l);
}

int orbit__sw_page_loss(struct orbit__sw *w, const Orbit__PageLoss *l)
{
	return put(w, ORBIT__PACKET__BODY_PAGE_LOSS, l);
}

int orbit__sw_kernel_loss(struct orbit__sw *w, const Orbit__KernelLoss *l)
{
	return put(w, ORBIT__PACKET__BODY_KERNEL_LOSS, l);
}

int orbit__sw_thread_name(struct orbit__sw *w, uint32_t tid, const char *name)
{
	Orbit__ThreadName t = ORBIT__THREAD_NAME__INIT;
	t.tid = tid;
	t.name = (char *)name;
	return put(w, ORBIT__PACKET__BODY_THREAD_NAME, &t);
}

int orbit__sw_locations(struct orbit__sw *w, const Orbit__SourceLocation *const *e, size_t n)
{
	Orbit__SourceLocations m = ORBIT__SOURCE_LOCATIONS__INIT;
	m.n_locations = n;
	m.locations = (Orbit__SourceLocation **)e;
	return put(w, ORBIT__PACKET__BODY_SOURCE_LOCATIONS, &m);
}

int orbit__sw_kernel_mark(struct orbit__sw *w, uint64_t complete_ns)
{
	Orbit__KernelMark m = ORBIT__KERNEL_MARK__INIT;
	m.complete_ns = complete_ns;
	return put(w, ORBIT__PACKET__BODY_KERNEL_MARK, &m);
}

int orbit__sw_dump(struct orbit__sw *w, const Orbit__Dump *d)
{
	return put(w, ORBIT__PACKET__BODY_DUMP, d);
}

int orbit__sw_end(struct orbit__sw *w, const Orbit__EndOfStream *e)
{
	Orbit__Packet p = packet_of(ORBIT__PACKET__BODY_END, e);
	int err = orbit__frame_add(&w->fw, &p);
	if (err) { /* what came before it still goes */
		finish(w, ORBIT__SW_DATA);
		return err;
	}
	return finish(w, ORBIT__SW_END);
}
