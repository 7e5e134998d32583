/*
 * stream_writing.c — the format's stream writer keeps the guarantees of
 * format/stream_writer.h. Each frame the writer hands its sink is read back
 * with the format's own frame reader.
 *
 *   stream_writing CASE
 *
 *   handshake   guarantee 1: alone in frame 0; a KernelSched too big for the
 *               frame goes without its tids, then not at all, said
 *   batches     guarantee 2: records as encoding-2 batches of at most
 *               ORBIT_BATCH_MAX, in order, every byte back
 *   cuts        guarantee 3: cut at frame_target, when asked, and by
 *               EndOfStream (its frame's kind END); no empty frame
 *   positions   guarantee 4: each frame's ring positions and records; a lost
 *               frame reported with its records, the position back
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "frame.h"
#include "harness.h"
#include "record.h"
#include "stream_writer.h"

/* What the sink saw. */
#define FRAMES 64
static struct {
	uint8_t *bytes[FRAMES];
	size_t len[FRAMES];
	uint64_t seq[FRAMES];
	enum orbit__sw_kind kind[FRAMES];
	uint64_t end[FRAMES][4], framed[FRAMES][4], records[FRAMES][4];
	size_t n;
	uint64_t lost[4];
	int losts;
	int refuse; /* the sink does not take frames */
} seen;

static int on_frame(void *ctx, const struct orbit__sw_frame *f)
{
	(void)ctx;
	CHECK(seen.n < FRAMES && f->len > 0);
	size_t i = seen.n++;
	seen.bytes[i] = malloc(f->len);
	CHECK(seen.bytes[i] != NULL);
	memcpy(seen.bytes[i], f->bytes, f->len);
	seen.len[i] = f->len;
	seen.seq[i] = f->seq;
	seen.kind[i] = f->kind;
	for (uint32_t r = 0; r < 4 && r < f->rings; r++) {
		seen.end[i][r] = f->ring_end[r];
		seen.framed[i][r] = f->ring_framed[r];
		seen.records[i][r] = f->ring_records[r];
	}
	return seen.refuse ? -EPIPE : 0;
}

static void on_lost(void *ctx, const uint64_t *records, uint32_t rings)
{
	(void)ctx;
	seen.losts++;
	for (uint32_t r = 0; r < 4 && r < rings; r++)
		seen.lost[r] += records[r];
}

static struct orbit__sw *writer(size_t target)
{
	for (size_t i = 0; i < seen.n; i++)
		free(seen.bytes[i]);
	memset(&seen, 0, sizeof seen);
	const struct orbit__sw_sink sink = {.frame = on_frame, .lost = on_lost};
	struct orbit__sw *w = orbit__sw_new(1, target, &sink);
	CHECK(w != NULL);
	return w;
}

/* Frame i's packets, decoded: *n of them (free each). */
static Orbit__Packet **packets(size_t i, size_t *n)
{
	static struct orbit_frame_scratch s;
	static Orbit__Packet *p[4096];
	CHECK(orbit__frame_decompress(&s, seen.bytes[i], seen.len[i]) == 0);
	size_t off = 0, len;
	const uint8_t *b;
	*n = 0;
	while (orbit__frame_next_packet(&s, &off, &b, &len)) {
		CHECK(*n < 4096);
		p[*n] = orbit__packet__unpack(NULL, len, b);
		CHECK(p[*n] != NULL && orbit__packet_validate(p[*n]) == 0);
		(*n)++;
	}
	return p;
}

static void free_packets(Orbit__Packet **p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		orbit__packet__free_unpacked(p[i], NULL);
}

static void handshake_of(Orbit__Handshake *h, uint64_t *start)
{
	orbit__handshake__init(h);
	h->protocol_version = ORBIT_PROTOCOL_VERSION;
	h->pid = 42;
	h->ring_count = 4;
	h->slots_per_ring = 1024;
	h->record_size = ORBIT_RECORD_SIZE;
	h->n_ring_start = 4;
	h->ring_start = start;
}

/* n records of thread tid from claim first, times and ids counting up. */
static uint8_t *records(uint32_t n, uint32_t tid, uint64_t first)
{
	uint8_t *r = calloc(n ? n : 1, ORBIT_RECORD_SIZE);
	CHECK(r != NULL);
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record rec = {.time = 1000 + (first + i) * 7,
		                           .id = first + i,
		                           .tid = tid,
		                           .kind =
		                               i & 1 ? ORBIT_REC_SCOPE_STOP : ORBIT_REC_SCOPE_START,
		                           .len = i & 1 ? 0 : 4};
		if (!(i & 1))
			memcpy(rec.name, "work", 4);
		orbit__record_encode(&rec, r + (size_t)i * ORBIT_RECORD_SIZE);
	}
	return r;
}

static void case_handshake(void)
{
	struct orbit__sw *w = writer(ORBIT_FRAME_TARGET);
	uint64_t start[4] = {5, 6, 7, 8};
	Orbit__Handshake h;
	handshake_of(&h, start);
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	CHECK_EQ_U64(seen.n, 1);
	CHECK(seen.seq[0] == 0 && seen.kind[0] == ORBIT__SW_HANDSHAKE);
	size_t n;
	Orbit__Packet **p = packets(0, &n);
	CHECK_EQ_U64(n, 1);
	CHECK(p[0]->body_case == ORBIT__PACKET__BODY_HANDSHAKE && p[0]->handshake->pid == 42);
	free_packets(p, n);
	CHECK_EQ_U64(seen.end[0][2], 7); /* ring_start before any record */

	/* A KernelSched with too many tids: they go, the formats stay. */
	static uint32_t tids[20000];
	for (uint32_t i = 0; i < 20000; i++)
		tids[i] = 0x10000000u + i * 7919u;
	Orbit__KernelSched ks = ORBIT__KERNEL_SCHED__INIT;
	ks.cpu_count = 2;
	ks.trace_clock = "mono";
	ks.n_tids = 20000;
	ks.tids = tids;
	h.kernel_sched = &ks;
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	CHECK(h.kernel_sched == &ks && ks.n_tids == 0);
	CHECK(seen.n == 2 && seen.seq[1] == 0); /* a new stream: numbered from 0 */
	CHECK(seen.len[1] <= ORBIT_HANDSHAKE_FRAME_MAX);
	/* Formats too big on their own: no KernelSched, and why. */
	static char big[70000];
	memset(big, 'f', sizeof big - 1);
	ks.header_page = big;
	ks.n_tids = 20000;
	char why[200];
	CHECK(orbit__sw_handshake(w, &h, why, sizeof why) == 1);
	CHECK(h.kernel_sched == NULL && h.kernel_sched_off == why);
	CHECK(strstr(h.kernel_sched_off, "do not fit in the handshake") != NULL);
	p = packets(2, &n);
	CHECK(n == 1 && p[0]->handshake->kernel_sched == NULL);
	CHECK(strcmp(p[0]->handshake->kernel_sched_off, h.kernel_sched_off) == 0);
	free_packets(p, n);
	orbit__sw_free(w);
}

static void case_batches(void)
{
	struct orbit__sw *w = writer(ORBIT_SW_NO_CUT);
	uint64_t start[4] = {0, 0, 0, 100};
	Orbit__Handshake h;
	handshake_of(&h, start);
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	const uint32_t n = 2 * ORBIT_BATCH_MAX + 1000;
	uint8_t *r = records(n, 77, 100);
	CHECK_EQ_U64(orbit__sw_records(w, 3, 100, r, n), n);
	CHECK_EQ_U64(orbit__sw_records(w, ORBIT_MAX_RINGS, 0, r, 1), 0); /* no such ring */
	CHECK(orbit__sw_cut(w) == 0);
	CHECK_EQ_U64(seen.n, 2);
	size_t np;
	Orbit__Packet **p = packets(1, &np);
	CHECK_EQ_U64(np, 3);
	uint64_t claim = 100;
	uint8_t *back = malloc((size_t)ORBIT_BATCH_MAX * ORBIT_RECORD_SIZE);
	CHECK(back != NULL);
	for (size_t i = 0; i < np; i++) {
		const Orbit__RingBatch *b = p[i]->ring_batch;
		CHECK(p[i]->body_case == ORBIT__PACKET__BODY_RING_BATCH);
		CHECK(b->ring == 3 && b->first_claim == claim &&
		      b->encoding == ORBIT_BATCH_COMPACT);
		CHECK(b->count <= ORBIT_BATCH_MAX);
		CHECK(orbit__batch_decode(b, back) == 0);
		CHECK(memcmp(back, r + (claim - 100) * ORBIT_RECORD_SIZE,
		             (size_t)b->count * ORBIT_RECORD_SIZE) == 0);
		claim += b->count;
	}
	CHECK_EQ_U64(claim, 100 + n);
	free_packets(p, np);
	free(back);
	free(r);
	orbit__sw_free(w);
}

static void case_cuts(void)
{
	const size_t target = 4096;
	struct orbit__sw *w = writer(target);
	uint64_t start[4] = {0};
	Orbit__Handshake h;
	handshake_of(&h, start);
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	static uint8_t page[1000];
	for (int i = 0; i < 40; i++) /* 40 pages of 1000 bytes: cut by size */
		CHECK(orbit__sw_log_page(w, 0, page, sizeof page) == 0);
	CHECK(seen.n >= 9);
	for (size_t i = 1; i < seen.n; i++) {
		size_t n;
		Orbit__Packet **p = packets(i, &n);
		CHECK(seen.kind[i] == ORBIT__SW_DATA && seen.seq[i] == i);
		CHECK(n >= 1 && n <= 5); /* under target + one packet */
		free_packets(p, n);
	}
	size_t before = seen.n;
	CHECK(orbit__sw_cut(w) == 0);
	CHECK(orbit__sw_pending(w) == 0);
	size_t after = seen.n;
	CHECK(after == before || after == before + 1);
	CHECK(orbit__sw_cut(w) == 0 && seen.n == after); /* nothing: no empty frame */
	CHECK(orbit__sw_thread_name(w, 9, "nine") == 0);
	CHECK(orbit__sw_pending(w) > 0 && orbit__sw_seq(w) == after);
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	CHECK(orbit__sw_end(w, &e) == 0);
	CHECK(seen.n == after + 1 && seen.kind[after] == ORBIT__SW_END);
	size_t n;
	Orbit__Packet **p = packets(after, &n);
	CHECK(n == 2 && p[0]->body_case == ORBIT__PACKET__BODY_THREAD_NAME &&
	      p[1]->body_case == ORBIT__PACKET__BODY_END);
	free_packets(p, n);
	/* A packet over ORBIT_PACKET_MAX is refused, and nothing is lost. */
	static uint8_t huge[ORBIT_PACKET_MAX + 1];
	CHECK(orbit__sw_log_page(w, 0, huge, sizeof huge) == -E2BIG);
	CHECK(orbit__sw_pending(w) == 0);
	orbit__sw_free(w);
}

static void case_positions(void)
{
	struct orbit__sw *w = writer(ORBIT_SW_NO_CUT);
	uint64_t start[4] = {10, 20, 30, 40};
	Orbit__Handshake h;
	handshake_of(&h, start);
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	uint8_t *r = records(50, 5, 0);
	CHECK(orbit__sw_records(w, 1, 20, r, 30) == 30);
	CHECK(orbit__sw_records(w, 2, 35, r, 5) == 5); /* claims 30..34 lost before */
	CHECK(orbit__sw_cut(w) == 0);
	CHECK_EQ_U64(seen.n, 2);
	CHECK(seen.end[1][0] == 10 && seen.end[1][1] == 50 && seen.end[1][2] == 40);
	CHECK(seen.framed[1][1] == 30 && seen.framed[1][2] == 5 && seen.framed[1][3] == 0);
	CHECK(seen.records[1][1] == 30 && seen.records[1][2] == 5);
	/* The next frame: its own records, the positions cumulative. */
	CHECK(orbit__sw_records(w, 1, 50, r, 10) == 10);
	CHECK(orbit__sw_cut(w) == 0);
	CHECK(seen.end[2][1] == 60 && seen.framed[2][1] == 40 && seen.records[2][1] == 10);
	CHECK(seen.records[2][2] == 0 && seen.framed[2][2] == 5);
	/* Abandoned: reported lost with its records, the position back. */
	CHECK(orbit__sw_records(w, 1, 60, r, 7) == 7);
	orbit__sw_abort(w);
	CHECK(seen.losts == 1 && seen.lost[1] == 7 && orbit__sw_pending(w) == 0);
	CHECK(orbit__sw_records(w, 0, 10, r, 1) == 1);
	CHECK(orbit__sw_cut(w) == 0);
	CHECK(seen.end[3][1] == 60 && seen.framed[3][1] == 40 && seen.records[3][1] == 0);
	CHECK(seen.seq[3] == 3); /* a lost frame takes no number */
	/* A frame the sink refuses: its error, and the stream goes on. */
	seen.refuse = 1;
	CHECK(orbit__sw_records(w, 0, 11, r, 1) == 1);
	CHECK(orbit__sw_cut(w) == -EPIPE);
	seen.refuse = 0;
	free(r);
	orbit__sw_free(w);
}

static const struct test_case cases[] = {
    {"handshake", case_handshake},
    {"batches", case_batches},
    {"cuts", case_cuts},
    {"positions", case_positions},
};

TEST_MAIN(cases)
