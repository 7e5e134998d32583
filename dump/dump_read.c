/*
 * dump_read.c — one segment to one capture (dump.h). The segment is read
 * through its file descriptor with pread only, into private copies, each
 * checked before use: the header (orbit__segment_validate), the state area
 * (the newer complete block of each part), the flight ring
 * (format/flight.h: the metadata, the handshake, the entries between head
 * and tail, the metadata again to drop what the writer overwrote while we
 * copied, each frame's checksum and packets), the scope rings one at a
 * time, and the page rings one at a time. A read that comes back short
 * means the segment ends earlier than its header said: cut, or shrunk
 * while we read; that is said once, with the offset, and the capture holds
 * what was read before it.
 *
 * For a live process this is a snapshot: nothing is written to the
 * segment, nothing waits for the process, and what it writes meanwhile is
 * either in the copies and checked, or not in the capture.
 *
 * The capture (docs/format.md 4.11): the handshake (the flight ring's, or
 * one made from the header), the flight ring's frames as they are, then
 * frames of its own: ring batches of what the scope rings hold past the
 * flight ring's last frame, the page rings' unread pages, the thread names,
 * the final Loss packets, a Dump packet and EndOfStream, whose claims add
 * up (docs/format.md 6, format/loss.h):
 *
 *   claimed = end - ring_start = records in kept frames + records read here
 *             + flight_dropped + lapped + writer_gone + backstop + at_end
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "ftrace_page.h"
#include "loss.h"
#include "segment_pages.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "0"
#endif

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The counter the producers read, now, on this host (the segment's host:
 * /dev/shm does not outlive a boot). */
static struct orbit__seg_point pair_now(uint32_t source)
{
	struct orbit__seg_point p = {0, 0};
#if defined(__x86_64__)
	if (source == ORBIT__SEG_CLOCK_TSC) {
		uint64_t t0 = __builtin_ia32_rdtsc();
		p.ns = clock_ns(CLOCK_MONOTONIC);
		uint64_t t1 = __builtin_ia32_rdtsc();
		p.ticks = t0 + (t1 - t0) / 2;
	}
#elif defined(__aarch64__)
	if (source == ORBIT__SEG_CLOCK_CNTVCT) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
		p.ticks = v;
		p.ns = clock_ns(CLOCK_MONOTONIC);
	}
#else
	(void)source;
#endif
	return p;
}

/* ---- the state area ---- */

static int block_complete(const _Atomic uint64_t *b, const _Atomic uint64_t *e, uint64_t *g)
{
	*g = atomic_load_explicit(b, memory_order_relaxed);
	return *g != 0 && *g == atomic_load_explicit(e, memory_order_relaxed);
}

static void read_state(struct orbit_dump *d, struct orbit__seg_point earlier)
{
	struct orbit__seg_state *st = malloc(sizeof *st);
	if (st == NULL || orbit__dump_pread(d, st, sizeof *st, d->l.state_offset) != 0) {
		free(st);
		return;
	}
	int best = -1;
	uint64_t bg = 0, g;
	for (int i = 0; i < 2; i++)
		if (block_complete(&st->clock[i].gen_begin, &st->clock[i].gen_end, &g) && g > bg) {
			best = i;
			bg = g;
		}
	struct orbit__seg_problem why;
	if (best >= 0) {
		if (orbit__seg_conv_init(&d->conv, &st->clock[best], &why) == 0)
			d->conv_ok = 1;
		else
			orbit__dump_problem(d,
			                    d->l.state_offset +
			                        offsetof(struct orbit__seg_state, clock[best]) +
			                        why.offset,
			                    "%s", why.what);
	}
	if (!d->conv_ok) { /* converting with the dump's own rate: untrusted */
		memset(&d->conv, 0, sizeof d->conv);
		d->conv.source = d->l.clock_source;
		/* A rate of its own needs pairs some time apart. */
		struct timespec ts = {0, 10000000};
		nanosleep(&ts, NULL);
	}
	d->conv.source = d->l.clock_source; /* the header's word decides */
	orbit__seg_conv_now(&d->conv, earlier, pair_now(d->l.clock_source));
	best = -1;
	bg = 0;
	for (int i = 0; i < 2; i++)
		if (block_complete(&st->names[i].gen_begin, &st->names[i].gen_end, &g) && g > bg) {
			best = i;
			bg = g;
		}
	if (best >= 0) {
		d->names = st->names[best];
		if (d->names.count > ORBIT__SEG_NAMES)
			d->names.count = ORBIT__SEG_NAMES;
		d->names_ok = 1;
	}
	free(st);
}

/* ---- the flight ring ---- */

static Orbit__Packet *first_packet(struct orbit_dump *d, const uint8_t *bytes, size_t len)
{
	struct orbit_frame_info info;
	if (orbit__frame_check(&d->scratch, bytes, len, &info) != 0)
		return NULL;
	return info.first;
}

/* What the kept frames hold, for the accounting: records per ring, the
 * loss they say (format/loss.h: each ring's last Loss), whether they end
 * the stream. */
struct kept {
	uint64_t records[ORBIT_MAX_RINGS];
	struct orbit__loss_account loss;
	int ended;
};

static void note_packets(struct orbit_dump *d, struct kept *k)
{
	size_t off = 0, len;
	const uint8_t *p;
	while (orbit__frame_next_packet(&d->scratch, &off, &p, &len)) {
		Orbit__Packet *pk = orbit__packet__unpack(NULL, len, p);
		if (pk == NULL)
			continue;
		if (pk->body_case == ORBIT__PACKET__BODY_RING_BATCH &&
		    pk->ring_batch->ring < d->l.ring_count)
			k->records[pk->ring_batch->ring] += pk->ring_batch->count;
		else if (pk->body_case == ORBIT__PACKET__BODY_LOSS &&
		         pk->loss->ring < d->l.ring_count)
			orbit__loss_account_packet(&k->loss, pk); /* no memory: as if none came */
		else if (pk->body_case == ORBIT__PACKET__BODY_END)
			k->ended = 1;
		orbit__packet__free_unpacked(pk, NULL);
	}
}

static int copy_ring(struct orbit_dump *d, uint8_t *buf, uint64_t from, uint64_t n,
                     uint64_t ring_size)
{
	const uint64_t at = d->l.flight_offset + ORBIT__FLIGHT_RING_AT;
	uint64_t a = from % ring_size, first = n < ring_size - a ? n : ring_size - a;
	if (first && orbit__dump_pread(d, buf, first, at + a) != 0)
		return -1;
	if (n > first && orbit__dump_pread(d, buf + first, n - first, at) != 0)
		return -1;
	return 0;
}

/* The flight ring: its handshake and frames, written as they are. */
static void read_flight(struct orbit_dump *d, struct kept *k)
{
	const uint64_t base = d->l.flight_offset;
	struct orbit__flight_header *h = malloc(sizeof *h);
	struct orbit__seg_problem why;
	if (h == NULL || orbit__dump_pread(d, h, sizeof *h, base) != 0)
		goto out;
	int r = orbit__flight_validate(h, d->l.flight_size, &why);
	if (r == ORBIT__SEG_ENOTINIT)
		goto out; /* no stream began on it */
	if (r != 0) {
		orbit__dump_problem(d, base + why.offset, "%s", why.what);
		goto out;
	}
	struct orbit__flight_meta m1, m2;
	if (orbit__flight_meta_pick(h, d->l.ring_count, &m1, &why) != 0) {
		orbit__dump_problem(d, base + why.offset, "%s", why.what);
		goto out;
	}
	const uint64_t ring_size = h->ring_size;
	/* The handshake, kept aside. */
	if (m1.handshake_len > 0) {
		uint8_t *hb = malloc(m1.handshake_len);
		if (hb != NULL &&
		    orbit__dump_pread(d, hb, m1.handshake_len, base + ORBIT__FLIGHT_HEADER) == 0) {
			Orbit__Packet *p = first_packet(d, hb, m1.handshake_len);
			if (p != NULL && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE &&
			    orbit__packet_validate(p) == 0 &&
			    p->handshake->ring_count == d->l.ring_count) {
				d->hs = p->handshake;
				p->handshake = NULL; /* ours now */
				p->body_case = ORBIT__PACKET__BODY__NOT_SET;
				/* The agent's, said to be continued by a dump: a
				 * capture of its own beside the agent's (4.11). */
				d->hs->dumped = 1;
				orbit__sw_handshake(d->out.sw, d->hs, NULL, 0);
			} else {
				orbit__dump_problem(
				    d, base + ORBIT__FLIGHT_HEADER,
				    "the flight ring's handshake frame is not valid");
			}
			if (p != NULL)
				orbit__packet__free_unpacked(p, NULL);
		}
		free(hb);
	}
	if (d->hs == NULL)
		goto out; /* frames without their handshake: a stream of our own */
	d->flight = 1;
	d->meta = m1;
	/* The entries, then the metadata again: what moved below its head
	 * meanwhile may be torn. */
	uint64_t n = m1.tail - m1.head;
	if (orbit__dump_affords(d, n, base, "flight ring") != 0)
		goto out;
	uint8_t *buf = malloc(n ? n : 1);
	if (buf == NULL || copy_ring(d, buf, m1.head, n, ring_size) != 0) {
		free(buf);
		goto out;
	}
	uint64_t from = m1.head;
	if (orbit__dump_pread(d, h, sizeof *h, base) == 0 &&
	    orbit__flight_meta_pick(h, d->l.ring_count, &m2, NULL) == 0 && m2.head > from)
		from = m2.head < m1.tail ? m2.head : m1.tail;
	d->damaged_frames = 0;
	struct orbit__flight_iter it;
	struct orbit__flight_entry e;
	orbit__flight_iter_init(&it, buf, m1.head, m1.tail, ring_size);
	while ((r = orbit__flight_next(&it, &e, &why)) == 1) {
		if (e.pos < from) {
			d->damaged_frames++; /* overwritten while we read it */
			continue;
		}
		struct orbit_frame_info info;
		int fr = orbit__frame_check(&d->scratch, e.bytes, e.len, &info);
		if (fr != 0) {
			d->damaged_frames++;
			orbit__dump_problem(d,
			                    base + ORBIT__FLIGHT_RING_AT + e.pos % ring_size +
			                        ORBIT__FLIGHT_ENTRY,
			                    "flight ring frame %llu does not check: %s",
			                    (unsigned long long)e.seq, orbit__frame_strerror(fr));
			continue;
		}
		orbit__packet__free_unpacked(info.first, NULL);
		note_packets(d, k);
		orbit__sw_copy(d->out.sw, e.bytes, e.len,
		               e.kind == ORBIT__FLIGHT_END ? ORBIT__SW_END : ORBIT__SW_DATA);
		d->kept_frames++;
	}
	if (r < 0)
		orbit__dump_problem(d, base + ORBIT__FLIGHT_RING_AT + why.offset, "%s", why.what);
	free(buf);
out:
	free(h);
}

/* ---- a handshake when there is none to keep ---- */

static void own_handshake(struct orbit_dump *d, const uint64_t *start)
{
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	clock.source = d->l.clock_source;
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_VERSION;
	h.pid = d->l.pid;
	h.process_name = d->l.comm;
	h.host_name = host;
	h.agent_version = (char *)"orbit-dump " ORBIT_VERSION;
	h.clock = &clock;
	h.monotonic_ns = d->now_mono;
	h.realtime_ns = d->now_real;
	h.ring_count = d->l.ring_count;
	h.slots_per_ring = d->l.slots_per_ring;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = d->l.ring_count;
	h.ring_start = (uint64_t *)start;
	h.page_ring_count = d->l.page_ring_count;
	h.page_size = d->l.page_ring_page_size;
	h.flight_size = d->l.flight_size;
	h.dumped = 2;
	orbit__sw_handshake(d->out.sw, &h, NULL, 0);
}

/* ---- the page rings ---- */

struct pages_ctx {
	struct orbit_dump *d;
	uint32_t ring;
};

static uint64_t to_ns(void *ctx, uint64_t ticks)
{
	struct orbit_dump *d = ctx;
	int untrusted;
	uint64_t ns = orbit__seg_conv_ns(&d->conv, ticks, &untrusted);
	d->untrusted += (uint64_t)untrusted;
	return ns;
}

static void on_page(void *vctx, const uint8_t *page, uint32_t page_size, uint32_t index,
                    uint32_t writers, int cut)
{
	struct pages_ctx *c = vctx;
	(void)index;
	(void)cut;
	/* A writer inside (killed there, or still writing): one of the records
	 * claimed may not be written yet, and its bytes are an older page's,
	 * whose header may decode. Which one cannot be told: the page is left
	 * out, and said (read_pages). */
	if (writers != 0) {
		c->d->busy_pages++;
		return;
	}
	uint8_t *copy = (uint8_t *)page; /* orbit__seg_pages_unread's buffer: ours */
	if (c->d->l.clock_source != ORBIT__SEG_CLOCK_MONOTONIC &&
	    orbit__ftrace_retime(copy, page_size, to_ns, c->d) < 0)
		return; /* cannot happen: the page decodes (segment_pages.c) */
	if (orbit__sw_log_page(c->d->out.sw, c->ring, copy, page_size) == 0)
		c->d->log_pages++;
}

static void read_pages(struct orbit_dump *d)
{
	if (d->l.page_ring_count == 0)
		return;
	uint64_t bytes = (uint64_t)d->l.page_ring_pages * (d->l.page_ring_page_size + 64);
	if (orbit__dump_affords(d, bytes, d->l.pages_offset, "log page ring") != 0)
		return;
	uint8_t *mem = malloc(bytes), *page = malloc(d->l.page_ring_page_size);
	for (uint32_t r = 0; mem != NULL && page != NULL && r < d->l.page_ring_count; r++) {
		if (orbit__dump_pread(d, mem, bytes,
		                      d->l.pages_offset + r * d->l.page_ring_stride) != 0)
			break;
		struct pages_ctx c = {d, r};
		orbit__seg_pages_unread(mem, d->l.page_ring_pages, d->l.page_ring_page_size, page,
		                        on_page, &c);
	}
	if (d->busy_pages)
		fprintf(d->err,
		        "%s: %s: %llu log page(s) had a writer inside (killed there, or "
		        "still writing): left out, a record on them may never have been written\n",
		        orbit__dump_who(d), d->name, (unsigned long long)d->busy_pages);
	free(mem);
	free(page);
}

/* The names block's threads, named before the records the dump reads
 * itself (docs/format.md 4.5: a stream of protocol version 3 names a
 * thread before its records). */
static void thread_names(struct orbit_dump *d)
{
	if (!d->names_ok)
		return;
	for (uint32_t i = 0; i < d->names.count; i++) {
		char name[17];
		memcpy(name, d->names.entry[i].name, 16);
		name[16] = '\0';
		orbit__sw_thread_name(d->out.sw, d->names.entry[i].tid, name);
	}
}

/* ---- the end ---- */

static void finish(struct orbit_dump *d, const struct kept *k, const struct orbit_dump_ring *rr)
{
	uint64_t claimed[ORBIT_MAX_RINGS];
	for (uint32_t r = 0; r < d->l.ring_count; r++) {
		uint64_t framed = d->flight ? d->meta.ring_framed[r] : 0;
		uint64_t before = d->from[r] - d->ring_start[r]; /* claims the frames account for */
		uint64_t dropped = framed - k->records[r];
		uint64_t lost_before = before - framed;
		struct orbit__loss l = {0};
		/* Of the claims lost before the last frame, those a kept Loss
		 * names; the rest the agent lapped (or dropped) after it. */
		if (k->loss.ring_seen != NULL && k->loss.ring_seen[r]) {
			struct orbit__loss was = orbit__loss_account_ring(&k->loss, r);
			l.backstop = was.backstop < lost_before ? was.backstop : lost_before;
			l.writer_gone = was.writer_gone < lost_before - l.backstop
			                    ? was.writer_gone
			                    : lost_before - l.backstop;
			l.unsent = was.unsent;
		}
		l.lapped = lost_before - l.backstop - l.writer_gone + rr[r].lapped;
		l.writer_gone += rr[r].gone;
		l.flight_dropped = dropped;
		l.at_end = rr[r].end - rr[r].next + rr[r].pending;
		claimed[r] = rr[r].end - d->ring_start[r];
		Orbit__Loss p;
		orbit__loss_packet(&p, r, &l);
		orbit__sw_loss(d->out.sw, &p);
	}
	Orbit__Dump dp = ORBIT__DUMP__INIT;
	dp.ended = d->life == ORBIT__SEG_ALIVE ? 1 : 2;
	dp.segment = (char *)d->name;
	dp.monotonic_ns = d->now_mono;
	dp.realtime_ns = d->now_real;
	dp.flight_frames = d->kept_frames;
	dp.flight_dropped = d->flight ? d->meta.dropped_frames + d->meta.refused_frames : 0;
	dp.flight_damaged = d->damaged_frames;
	dp.ring_records = d->ring_records;
	dp.log_pages = d->log_pages;
	dp.problem = d->problem;
	dp.completed = d->completing;
	orbit__sw_dump(d->out.sw, &dp);
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = d->l.ring_count;
	e.claimed_per_ring = claimed;
	e.untrusted_times = d->untrusted;
	e.ended = dp.ended;
	orbit__sw_end(d->out.sw, &e);
}

/* The rings' cursors now: where a dump without a flight ring starts (the
 * oldest claims still there) and what bounds the flight ring's word. */
static int read_cursors(struct orbit_dump *d, uint64_t *cursor)
{
	for (uint32_t r = 0; r < d->l.ring_count; r++)
		if (orbit__dump_pread(d, &cursor[r], 8, d->l.rings_offset + r * d->l.ring_stride) !=
		    0)
			return -1;
	return 0;
}

/* A header that does not validate says nothing to trust of its process:
 * whether it lives is asked of the lock, then of the pid and start time in
 * the segment's name (orbit__segment_name_parse). */
static const char *damaged_header_life(struct orbit_dump *d)
{
	const char *base = strrchr(d->name, '/');
	base = base != NULL ? base + 1 : d->name;
	uint32_t pid = 0;
	uint64_t start = 0;
	int nonce = 0;
	int named = orbit__segment_name_parse(base, &pid, &start, &nonce) == 0;
	d->life = orbit__segment_locked(d->fd) == 1 ? ORBIT__SEG_ALIVE
	          : named                           ? orbit__segment_life(d->fd, pid, start)
	                                            : ORBIT__SEG_UNKNOWN;
	return d->life == ORBIT__SEG_ALIVE  ? "its process is alive"
	       : d->life == ORBIT__SEG_DEAD ? "its process is gone"
	                                    : "whether its process lives is unknown";
}

/* What the dump adds after the frames it keeps: the names, the rings from
 * d->from, the unread log pages, the loss and the end. */
static void read_rest(struct orbit_dump *d, const struct kept *k, const uint64_t *cursor,
                      struct orbit_dump_ring *rr)
{
	read_state(d, d->earlier);
	thread_names(d);
	orbit__dump_rings(d, cursor, rr);
	read_pages(d);
	finish(d, k, rr);
}

static void release(struct orbit_dump *d, struct kept *k)
{
	if (k != NULL)
		orbit__loss_account_free(&k->loss);
	free(k);
	if (d->hs != NULL)
		orbit__handshake__free_unpacked(d->hs, NULL);
	d->hs = NULL;
	orbit__frame_scratch_free(&d->scratch);
}

/* The segment's header, checked, and the moment the dump reads it: -1 to go
 * on, or the status to end with. */
static int begin(struct orbit_dump *d)
{
	struct stat st;
	if (fstat(d->fd, &st) != 0) {
		fprintf(d->err, "%s: %s: %s\n", orbit__dump_who(d), d->name, strerror(errno));
		return ORBIT_DUMP_USAGE;
	}
	d->file_size = (uint64_t)st.st_size;
	d->held = (uint64_t)st.st_blocks * 512;
	d->l.total_size = d->file_size;
	struct orbit__seg_header h;
	memset(&h, 0, sizeof h);
	uint64_t hl = d->file_size < sizeof h ? d->file_size : sizeof h;
	if (orbit__dump_pread(d, &h, hl, 0) != 0)
		return ORBIT_DUMP_DAMAGED;
	struct orbit__seg_problem why;
	int err = orbit__segment_validate(&h, (size_t)d->file_size, &d->l, &why);
	if (err) {
		orbit__dump_problem(d, why.offset, "%s (no capture written; %s)", why.what,
		                    damaged_header_life(d));
		return ORBIT_DUMP_DAMAGED;
	}
	d->earlier = pair_now(d->l.clock_source);
	d->life = orbit__segment_life(d->fd, d->l.pid, d->l.start_time);
	d->now_mono = clock_ns(CLOCK_MONOTONIC);
	d->now_real = clock_ns(CLOCK_REALTIME);
	return -1;
}

int orbit__dump_run(struct orbit_dump *d, const char *out_path)
{
	int status = begin(d);
	if (status >= 0)
		return status;
	if (orbit__dump_out_open(&d->out, out_path, d->out_replace, d->err) != 0)
		return ORBIT_DUMP_OUTPUT;

	uint64_t cursor[ORBIT_MAX_RINGS];
	struct kept *k = calloc(1, sizeof *k);
	struct orbit_dump_ring rr[ORBIT_MAX_RINGS];
	if (k == NULL)
		goto close;
	if (d->l.flight_size)
		read_flight(d, k);
	/* The cursors after the flight ring: every claim its frames hold was
	 * below them (the cursors only grow), also in a live process. */
	if (read_cursors(d, cursor) != 0)
		goto close;
	if (k->ended) {
		/* The agent ended this stream itself: its capture is complete. */
		fprintf(d->err,
		        "orbit-dump: %s: the stream had ended (orbit_shutdown); the capture "
		        "holds it as the agent wrote it\n",
		        d->name);
		goto close;
	}
	for (uint32_t r = 0; r < d->l.ring_count; r++) {
		if (d->hs != NULL) {
			d->ring_start[r] = d->hs->ring_start[r];
			uint64_t end = d->meta.ring_end[r], framed = d->meta.ring_framed[r];
			/* The writer's word, checked: start <= end <= cursor, and
			 * the frames cannot hold more than they account for. */
			if (end < d->ring_start[r] || end > cursor[r] ||
			    framed > end - d->ring_start[r] || k->records[r] > framed) {
				orbit__dump_problem(
				    d,
				    d->l.flight_offset +
				        offsetof(struct orbit__flight_header, meta) +
				        offsetof(struct orbit__flight_meta, ring_end) + 8ull * r,
				    "flight ring: ring %u's position %llu (%llu records framed, "
				    "%llu "
				    "kept) does not fit its start %llu and cursor %llu",
				    r, (unsigned long long)end, (unsigned long long)framed,
				    (unsigned long long)k->records[r],
				    (unsigned long long)d->ring_start[r],
				    (unsigned long long)cursor[r]);
				end = end < d->ring_start[r] || end > cursor[r] ? d->ring_start[r]
				                                                : end;
				d->meta.ring_framed[r] = framed > end - d->ring_start[r]
				                             ? end - d->ring_start[r]
				                             : framed;
				if (k->records[r] > d->meta.ring_framed[r])
					k->records[r] = d->meta.ring_framed[r];
			}
			d->from[r] = end;
		} else {
			uint64_t slots = d->l.slots_per_ring;
			d->ring_start[r] = d->from[r] = cursor[r] > slots ? cursor[r] - slots : 0;
		}
	}
	if (d->hs == NULL)
		own_handshake(d, d->ring_start);
	read_rest(d, k, cursor, rr);
close:
	release(d, k);
	if (orbit__dump_out_close(&d->out) != 0)
		return ORBIT_DUMP_OUTPUT;
	return d->damaged ? ORBIT_DUMP_DAMAGED : ORBIT_DUMP_OK;
}

/* ---- completing the capture its agent could not end ---- */

/* The capture's frames (the agent's own stream, cut): its handshake (into
 * d->hs), what they hold (k), where each ring's batches end, and where its
 * last whole frame ends (*whole). 0, or -1 after one line: the capture is
 * not this segment's stream, or it is damaged before its end (nothing after
 * a damaged frame is thrown away). */
static int read_capture(struct orbit_dump *d, int cfd, const char *capture, struct kept *k,
                        uint64_t *batch_end, uint64_t *whole)
{
	const char *who = orbit__dump_who(d);
	int err = 0;
	struct orbit_capture_reader *r = orbit__capture_from_fd(cfd, &err);
	if (r == NULL) {
		fprintf(d->err, "%s: %s: cannot read it: %s\n", who, capture, strerror(-err));
		return -1;
	}
	Orbit__Packet *p = NULL;
	struct orbit_capture_problem pr;
	uint64_t bad_at = UINT64_MAX;
	int n, damaged_before_end = 0, foreign = 0;
	*whole = 0;
	while ((n = orbit__capture_next(r, &p, &pr)) != 0) {
		if (n < 0) {
			if (bad_at == UINT64_MAX)
				bad_at = pr.offset;
			if (n == -ENOMEM || n == -EIO)
				break;
			continue;
		}
		if (bad_at != UINT64_MAX)
			damaged_before_end = 1;
		*whole = orbit__capture_offset(r);
		if (orbit__packet_validate(p) != 0) {
			damaged_before_end = 1;
		} else if (d->hs == NULL) {
			const Orbit__Handshake *h = p->handshake;
			if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE && h->pid == d->l.pid &&
			    h->ring_count == d->l.ring_count &&
			    h->n_ring_start == d->l.ring_count &&
			    h->realtime_ns + 1000000000ull >= d->l.created_ns) {
				d->hs = p->handshake;
				p->handshake = NULL; /* ours now */
				p->body_case = ORBIT__PACKET__BODY__NOT_SET;
			} else {
				foreign = 1;
			}
		} else if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH) {
			const Orbit__RingBatch *b = p->ring_batch;
			k->records[b->ring] += b->count;
			if (b->first_claim + b->count > batch_end[b->ring])
				batch_end[b->ring] = b->first_claim + b->count;
		} else if (p->body_case == ORBIT__PACKET__BODY_LOSS) {
			orbit__loss_account_packet(&k->loss, p); /* no memory: as if none came */
		} else if (p->body_case == ORBIT__PACKET__BODY_END) {
			k->ended = 1;
		}
		orbit__packet__free_unpacked(p, NULL);
		if (foreign)
			break;
		d->capture_frames = orbit__capture_frames(r);
	}
	orbit__capture_close(r);
	if (foreign || (d->hs == NULL && !damaged_before_end && bad_at == UINT64_MAX)) {
		fprintf(d->err,
		        "%s: %s does not begin with the handshake of a stream of %s (pid %u, "
		        "%u rings): not completed\n",
		        who, capture, d->name, (unsigned)d->l.pid, (unsigned)d->l.ring_count);
		return -1;
	}
	if (damaged_before_end || d->hs == NULL) {
		fprintf(d->err,
		        "%s: %s: damaged at offset %llu, before its end: not completed (left as "
		        "it is)\n",
		        who, capture, (unsigned long long)(bad_at != UINT64_MAX ? bad_at : *whole));
		return -1;
	}
	return 0;
}

int orbit__dump_complete(struct orbit_dump *d, int cfd, const char *capture)
{
	const char *who = orbit__dump_who(d);
	int status = begin(d);
	if (status >= 0)
		return status;
	if (orbit__segment_locked(d->fd) == 1) {
		fprintf(d->err, "%s: %s: its agent is running: its capture is its own to end\n",
		        who, d->name);
		return ORBIT_DUMP_USAGE;
	}
	/* No writer of the image whose segment this is can publish any more
	 * (it exited, or exec ended its threads): what it claimed and never
	 * published is writer_gone. */
	d->life = ORBIT__SEG_DEAD;
	d->completing = 1;
	status = ORBIT_DUMP_USAGE;
	uint64_t cursor[ORBIT_MAX_RINGS], batch_end[ORBIT_MAX_RINGS] = {0}, whole = 0;
	struct orbit_dump_ring rr[ORBIT_MAX_RINGS];
	struct kept *k = calloc(1, sizeof *k);
	if (k == NULL || read_capture(d, cfd, capture, k, batch_end, &whole) != 0)
		goto out;
	if (k->ended) {
		fprintf(d->err, "%s: %s: the stream had ended: nothing to complete\n", who,
		        capture);
		status = ORBIT_DUMP_OK;
		goto out;
	}
	if (read_cursors(d, cursor) != 0) {
		status = ORBIT_DUMP_DAMAGED;
		goto out;
	}
	for (uint32_t r = 0; r < d->l.ring_count; r++) {
		d->ring_start[r] = d->hs->ring_start[r];
		uint64_t from = batch_end[r] > d->ring_start[r] ? batch_end[r] : d->ring_start[r];
		if (from > cursor[r] || k->records[r] > from - d->ring_start[r]) {
			fprintf(d->err,
			        "%s: %s: ring %u's records (%llu, up to claim %llu) do not fit the "
			        "segment's cursor %llu: not completed\n",
			        who, capture, r, (unsigned long long)k->records[r],
			        (unsigned long long)from, (unsigned long long)cursor[r]);
			goto out;
		}
		d->from[r] = from;
		d->meta.ring_framed[r] = k->records[r]; /* every frame is kept */
	}
	d->flight = 1; /* finish(): the frames before are kept as they are */
	/* A frame torn at the exec is cut off; the frames before it stay. */
	if (ftruncate(cfd, (off_t)whole) != 0 || lseek(cfd, (off_t)whole, SEEK_SET) < 0) {
		fprintf(d->err, "%s: %s: %s\n", who, capture, strerror(errno));
		status = ORBIT_DUMP_OUTPUT;
		goto out;
	}
	if (orbit__dump_out_append(&d->out, cfd, capture, who, d->err) != 0) {
		status = ORBIT_DUMP_OUTPUT;
		goto out;
	}
	cfd = -1; /* the output's now */
	read_rest(d, k, cursor, rr);
	status = ORBIT_DUMP_OK;
out:
	release(d, k);
	if (cfd >= 0)
		close(cfd);
	else if (orbit__dump_out_close(&d->out) != 0)
		return ORBIT_DUMP_OUTPUT;
	return status == ORBIT_DUMP_OK && d->damaged ? ORBIT_DUMP_DAMAGED : status;
}
