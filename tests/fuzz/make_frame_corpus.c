/*
 * make_frame_corpus.c — writes the seed corpora of frame_fuzz and
 * packet_fuzz (tests/fuzz/corpus/frame/, tests/fuzz/corpus/packet/): good
 * frames and packets of every kind, and the bad ones the collector must
 * refuse. Run once from the repository root after building it:
 *
 *   ./build/dev/tests/make_frame_corpus tests/fuzz/corpus
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "capture.h"
#include "frame.h"
#include "record.h"
#include "reply.h"
#include "stream_writer.h"

static const char *root;

static void put(const char *kind, const char *name, const void *p, size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s/%s", root, kind, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* ---- packets ---- */

static void packet_put(const char *name, const Orbit__Packet *p)
{
	uint8_t buf[65536];
	size_t n = orbit__packet__get_packed_size(p);

	if (n > sizeof buf)
		exit(1);
	orbit__packet__pack(p, buf);
	put("packet", name, buf, n);
}

static Orbit__Packet handshake(Orbit__Handshake *h, Orbit__ClockDescription *clock,
                               uint64_t *starts, char **cmd)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;

	orbit__handshake__init(h);
	orbit__clock_description__init(clock);
	clock->source = 1;
	clock->ticks_per_second = 2596000000ull;
	h->protocol_version = ORBIT_PROTOCOL_VERSION;
	h->pid = 1234;
	h->process_name = "game";
	h->host_name = "host";
	h->n_command_line = 2;
	h->command_line = cmd;
	h->agent_version = "0.1.0";
	h->clock = clock;
	h->realtime_ns = 1700000000000000000ull;
	h->monotonic_ns = 123456789;
	h->ring_count = 2;
	h->slots_per_ring = 8192;
	h->record_size = ORBIT_RECORD_SIZE;
	h->n_ring_start = 2;
	h->ring_start = starts;
	h->page_ring_count = 2;
	h->page_size = 4096;
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = h;
	return p;
}

static uint8_t batch_rec[8 * ORBIT_RECORD_SIZE];

static Orbit__Packet batch(Orbit__RingBatch *b, uint8_t *enc, uint32_t n)
{
	Orbit__Packet p = ORBIT__PACKET__INIT;

	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record r = {.time = 1000 + i * 10,
		                         .id = i,
		                         .tid = 77,
		                         .kind =
		                             (i & 1) ? ORBIT_REC_SCOPE_STOP : ORBIT_REC_SCOPE_START,
		                         .len = 5};
		memcpy(r.name, "parse", 5);
		orbit__record_encode(&r, batch_rec + (size_t)i * ORBIT_RECORD_SIZE);
	}
	size_t len = orbit__batch_encode(batch_rec, n, enc);
	orbit__ring_batch__init(b);
	b->ring = 1;
	b->first_claim = 100;
	b->count = n;
	b->encoding = ORBIT_BATCH_COMPACT;
	b->records.data = enc;
	b->records.len = len;
	p.body_case = ORBIT__PACKET__BODY_RING_BATCH;
	p.ring_batch = b;
	return p;
}

struct all {
	Orbit__Handshake h;
	Orbit__ClockDescription clock;
	uint64_t starts[2];
	char *cmd[2];
	Orbit__RingBatch b;
	uint8_t enc[ORBIT_BATCH_COMPACT_BOUND(8)];
	uint8_t enc_v1[8 * ORBIT_RECORD_SIZE];
	Orbit__FtracePage page;
	uint8_t page_bytes[64];
	Orbit__ThreadName thread;
	Orbit__Loss loss;
	Orbit__PageLoss page_loss;
	Orbit__EndOfStream end;
	uint64_t claimed[2];
	uint64_t reserved[2];
	Orbit__Packet p[7];
};

static void all_packets(struct all *a)
{
	memset(a, 0, sizeof *a);
	a->cmd[0] = "./game";
	a->cmd[1] = "--level=3";
	a->p[0] = handshake(&a->h, &a->clock, a->starts, a->cmd);
	a->p[1] = batch(&a->b, a->enc, 8);
	orbit__ftrace_page__init(&a->page);
	a->page_bytes[8] = 16; /* commit */
	a->page.page.data = a->page_bytes;
	a->page.page.len = sizeof a->page_bytes;
	a->p[2] = (Orbit__Packet)ORBIT__PACKET__INIT;
	a->p[2].body_case = ORBIT__PACKET__BODY_FTRACE_PAGE;
	a->p[2].ftrace_page = &a->page;
	orbit__thread_name__init(&a->thread);
	a->thread.tid = 77;
	a->thread.name = "worker-1";
	a->p[3] = (Orbit__Packet)ORBIT__PACKET__INIT;
	a->p[3].body_case = ORBIT__PACKET__BODY_THREAD_NAME;
	a->p[3].thread_name = &a->thread;
	orbit__loss__init(&a->loss);
	a->loss.ring = 1;
	a->loss.lapped = 10;
	a->loss.unsent = 2;
	a->p[4] = (Orbit__Packet)ORBIT__PACKET__INIT;
	a->p[4].body_case = ORBIT__PACKET__BODY_LOSS;
	a->p[4].loss = &a->loss;
	orbit__page_loss__init(&a->page_loss);
	a->page_loss.ring = 0;
	a->page_loss.records = 3;
	a->p[5] = (Orbit__Packet)ORBIT__PACKET__INIT;
	a->p[5].body_case = ORBIT__PACKET__BODY_PAGE_LOSS;
	a->p[5].page_loss = &a->page_loss;
	orbit__end_of_stream__init(&a->end);
	a->claimed[0] = 108;
	a->end.n_claimed_per_ring = 2;
	a->end.claimed_per_ring = a->claimed;
	a->end.n_reserved_per_page_ring = 2;
	a->end.reserved_per_page_ring = a->reserved;
	a->p[6] = (Orbit__Packet)ORBIT__PACKET__INIT;
	a->p[6].body_case = ORBIT__PACKET__BODY_END;
	a->p[6].end = &a->end;
}

static void packets(struct all *a)
{
	static const char *const names[7] = {
	    "handshake", "ring_batch", "ftrace_page", "thread_name", "loss", "page_loss", "end"};
	Orbit__Packet empty = ORBIT__PACKET__INIT;

	for (int i = 0; i < 7; i++)
		packet_put(names[i], &a->p[i]);
	packet_put("empty", &empty);
	size_t len = a->b.records.len;
	a->b.count = 0; /* valid and empty: protobuf-c leaves records.data NULL */
	a->b.records.len = 0;
	packet_put("ring_batch_empty", &a->p[1]);
	a->b.records.len = len;
	a->b.count = 9; /* the columns hold 8: decoding refuses it */
	packet_put("ring_batch_bad_count", &a->p[1]);
	a->b.count = 8;
	a->b.encoding = 3;
	packet_put("ring_batch_bad_encoding", &a->p[1]);
	a->b.encoding = ORBIT_BATCH_COMPACT;
	a->enc[1 + 8] = 33; /* the first key's name is over 32 bytes */
	packet_put("ring_batch_bad_key", &a->p[1]);
	a->enc[1 + 8] = 5;
	a->b.records.len = len - 1; /* the id column is cut */
	packet_put("ring_batch_short", &a->p[1]);
	a->b.records.len = len;
	/* Version 1 captures: encoding 1 (columns), which readers still read. */
	orbit__batch_encode_columns(batch_rec, 8, a->enc_v1);
	a->b.encoding = ORBIT_BATCH_COLUMNS;
	a->b.records.data = a->enc_v1;
	a->b.records.len = sizeof a->enc_v1;
	packet_put("ring_batch_columns", &a->p[1]);
	a->b.encoding = ORBIT_BATCH_COMPACT;
	a->b.records.data = a->enc;
	a->b.records.len = len;
	a->h.protocol_version = ORBIT_PROTOCOL_VERSION_MAX + 1;
	packet_put("handshake_version", &a->p[0]);
	a->h.protocol_version = ORBIT_PROTOCOL_VERSION;
	a->h.n_ring_start = 1;
	packet_put("handshake_ring_start", &a->p[0]);
	a->h.n_ring_start = 2;
	/* a collector's acknowledgement (docs/format.md 7.2), and a bad one */
	Orbit__Ack ack = ORBIT__ACK__INIT;
	Orbit__Packet ap = ORBIT__PACKET__INIT;
	ack.frames = 12;
	ack.bytes = 123456;
	ack.synced_frames = 10;
	ack.end = ORBIT_ACK_CAPTURE_CAP;
	ap.body_case = ORBIT__PACKET__BODY_ACK;
	ap.ack = &ack;
	packet_put("ack", &ap);
	ack.synced_frames = 13;
	packet_put("ack_synced_past_frames", &ap);
	/* kernel scheduling (docs/format.md 4.10) */
	Orbit__KernelEventFormat ef = ORBIT__KERNEL_EVENT_FORMAT__INIT, *efs[1] = {&ef};
	Orbit__KernelSched ks = ORBIT__KERNEL_SCHED__INIT;
	uint32_t tids[2] = {77, 78};
	ef.system = "sched";
	ef.format = "name: sched_switch\nID: 1\nformat:\n\tfield:unsigned short common_type;\t"
	            "offset:0;\tsize:2;\tsigned:0;\n\nprint fmt: \"\"\n";
	ks.header_page = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n";
	ks.n_events = 1;
	ks.events = efs;
	ks.cpu_count = 2;
	ks.page_size = 4096;
	ks.trace_clock = "mono";
	ks.buffer_kb = 256;
	ks.instance = "orbit-1-2-0";
	ks.n_tids = 2;
	ks.tids = tids;
	ks.recording_ns = 123456000;
	a->h.kernel_sched = &ks;
	packet_put("handshake_kernel_sched", &a->p[0]);
	ks.cpu_count = ORBIT_KERNEL_MAX_CPUS + 1;
	packet_put("handshake_kernel_sched_cpus", &a->p[0]);
	a->h.kernel_sched = NULL;
	a->h.kernel_sched_off = "cannot create /sys/kernel/tracing/instances/orbit-1-2-0: "
	                        "Permission denied (needs root or access to tracefs)";
	packet_put("handshake_kernel_sched_off", &a->p[0]);
	a->h.kernel_sched_off = NULL;
	Orbit__KernelPage kp = ORBIT__KERNEL_PAGE__INIT;
	Orbit__Packet kpp = ORBIT__PACKET__INIT;
	kp.cpu = 1;
	kp.page.data = a->page_bytes;
	kp.page.len = sizeof a->page_bytes;
	kpp.body_case = ORBIT__PACKET__BODY_KERNEL_PAGE;
	kpp.kernel_page = &kp;
	packet_put("kernel_page", &kpp);
	kp.cpu = ORBIT_KERNEL_MAX_CPUS;
	packet_put("kernel_page_cpu", &kpp);
	Orbit__KernelLoss kl = ORBIT__KERNEL_LOSS__INIT;
	Orbit__Packet klp = ORBIT__PACKET__INIT;
	kl.cpu = 1;
	kl.overrun = 12;
	kl.flagged_pages = 1;
	kl.stored_lost = 12;
	kl.read_events = 500;
	klp.body_case = ORBIT__PACKET__BODY_KERNEL_LOSS;
	klp.kernel_loss = &kl;
	packet_put("kernel_loss", &klp);
	Orbit__KernelMark km = ORBIT__KERNEL_MARK__INIT;
	Orbit__Packet kmp = ORBIT__PACKET__INIT;
	km.complete_ns = 1234567890;
	kmp.body_case = ORBIT__PACKET__BODY_KERNEL_MARK;
	kmp.kernel_mark = &km;
	packet_put("kernel_mark", &kmp);
	/* source locations (docs/format.md 4.12), and the ones a reader refuses */
	Orbit__SourceLocation sl[2] = {ORBIT__SOURCE_LOCATION__INIT, ORBIT__SOURCE_LOCATION__INIT};
	Orbit__SourceLocation *slp[2] = {&sl[0], &sl[1]};
	Orbit__SourceLocations sls = ORBIT__SOURCE_LOCATIONS__INIT;
	Orbit__Packet slpk = ORBIT__PACKET__INIT;
	static char long_file[ORBIT_SITE_TEXT_MAX + 2];
	sl[0].site = 0x55d0c0a01230ull;
	sl[0].file = "src/parse.c";
	sl[0].line = 42;
	sl[0].function = "parse_block";
	sl[1].site = 0x55d0c0a01250ull;
	sl[1].file = "src/main.c";
	sl[1].line = 7;
	sl[1].function = "main";
	sls.n_locations = 2;
	sls.locations = slp;
	slpk.body_case = ORBIT__PACKET__BODY_SOURCE_LOCATIONS;
	slpk.source_locations = &sls;
	packet_put("source_locations", &slpk);
	sl[1].site = 0;
	packet_put("source_locations_site_zero", &slpk);
	sl[1].site = 0x55d0c0a01250ull;
	memset(long_file, 'a', ORBIT_SITE_TEXT_MAX + 1);
	sl[1].file = long_file;
	packet_put("source_locations_long_file", &slpk);
	sl[1].file = "src/main.c";
	sls.n_locations = 0;
	packet_put("source_locations_empty", &slpk);
	/* protobuf-c takes this (field 0, non-minimal tag) as an unknown field
	 * and packs it as 00, which it then refuses: found by packet_fuzz */
	const uint8_t field_zero[] = {0x80, 0x00, 0x01};
	put("packet", "field_zero_nonminimal_tag", field_zero, sizeof field_zero);
}

/* ---- frames ---- */

/* The last frame the stream writer made. */
static uint8_t last_frame[8192];
static size_t last_len;

static int keep_frame(void *ctx, const struct orbit__sw_frame *f)
{
	(void)ctx;
	if (f->len > sizeof last_frame)
		exit(1);
	memcpy(last_frame, f->bytes, f->len);
	last_len = f->len;
	return 0;
}

/* Packets p[0..n-1] as one frame of a stream, as every writer makes it. */
static uint8_t *frame_of(struct orbit__sw *w, const Orbit__Packet *p, int n, size_t *len)
{
	for (int i = 0; i < n; i++)
		if (orbit__sw_packet(w, &p[i]) != 0)
			exit(1);
	if (orbit__sw_cut(w) != 0)
		exit(1);
	*len = last_len;
	return last_frame;
}

static void raw_frame(const char *name, const uint8_t *content, size_t n, int checksum,
                      int size_flag)
{
	uint8_t out[4096];
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, size_flag);
	size_t r = ZSTD_compress2(cc, out, sizeof out, content, n);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(r))
		exit(1);
	put("frame", name, out, r);
}

static void frames(struct all *a)
{
	const struct orbit__sw_sink sink = {.frame = keep_frame};
	struct orbit__sw *w = orbit__sw_new(1, ORBIT_SW_NO_CUT, &sink);
	struct orbit_frame_writer aw;
	uint8_t two[16384], *f, ackf[ORBIT_ACK_FRAME_MAX];
	size_t len, len2;

	if (w == NULL || orbit__frame_writer_init(&aw, 1) != 0)
		exit(1);
	f = frame_of(w, &a->p[0], 1, &len);
	put("frame", "handshake", f, len);
	memcpy(two, f, len);
	f = frame_of(w, &a->p[1], 6, &len2);
	put("frame", "stream", f, len2);
	memcpy(two + len, f, len2);
	put("frame", "handshake_then_stream", two, len + len2);
	put("frame", "truncated", two, len + len2 / 2);
	two[len + len2 - 1] ^= 1;
	put("frame", "bad_checksum", two + len, len2);
	f = frame_of(w, &a->p[1], 1, &len);
	put("frame", "batch", f, len);
	f = frame_of(w, &a->p[3], 1, &len);
	put("frame", "thread_name", f, len);
	/* a collector's Ack frame (format/reply.h writes them) */
	const struct orbit_ack ack = {.frames = 3, .bytes = 4096, .synced_frames = 2};
	len = orbit__reply_ack_encode(&aw, &ack, ackf);
	if (len == 0)
		exit(1);
	put("frame", "ack", ackf, len);
	orbit__frame_writer_free(&aw);
	orbit__sw_free(w);

	uint8_t content[64];
	size_t n = orbit__packet__get_packed_size(&a->p[3]);
	content[0] = (uint8_t)n;
	orbit__packet__pack(&a->p[3], content + 1);
	raw_frame("no_checksum", content, n + 1, 0, 1);
	raw_frame("no_size", content, n + 1, 1, 0);
	raw_frame("empty", content, 0, 1, 1);
	content[0] = (uint8_t)(n + 5);
	raw_frame("packet_overrun", content, n + 1, 1, 1);
	const uint8_t garbage[] = {4, 0xff, 0xff, 0xff, 0xff};
	raw_frame("packet_garbage", garbage, sizeof garbage, 1, 1);
	const uint8_t big[] = {0x28, 0xB5, 0x2F, 0xFD, 0xE4, 0, 0, 0, 8, 0, 0, 0, 0, 1, 0, 0};
	put("frame", "content_128MiB", big, sizeof big);
	const uint8_t skippable[] = {0x50, 0x2A, 0x4D, 0x18, 4, 0, 0, 0, 1, 2, 3, 4};
	put("frame", "skippable", skippable, sizeof skippable);
}

int main(int argc, char **argv)
{
	struct all a;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS-ROOT (with frame/ and packet/)\n", argv[0]);
		return 2;
	}
	root = argv[1];
	all_packets(&a);
	frames(&a);
	packets(&a);
	return 0;
}
