/*
 * collector_test.c — orbit-collector as a real process on loopback.
 *
 *   collector_test CASE PATH-TO-orbit-collector [TOOL...]
 *
 * Each case starts a collector on port 0 in a fresh directory, reads its
 * "listening on" line, and talks to it with clients that send frames made by
 * orbit__frame_writer_* (or built by hand when they must be bad). Hostile
 * cases run a good client at the same time and check that every one of its
 * frames reached its file, that the collector still accepts, and that its
 * memory stayed bounded. Every case ends with SIGTERM and exit status 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "collector_harness.h"
#include "harness.h"

static const char *exe;
/* Optional tools after the case: tcp_proxy, emit, capture_dump,
 * orbit-replay (by name). */
static const char *tool_proxy, *tool_emit, *tool_dump, *tool_replay;

static void start(struct coll *h, const char *const *args)
{
	harness_root(h);
	coll_start(h, exe, NULL, args);
}

static void finish(struct coll *h)
{
	CHECK(coll_alive(h));
	int status = coll_stop(h, SIGTERM);
	if (status != 0) {
		coll_dump_log(h);
		fprintf(stderr, "collector exit status %d\n", status);
		exit(1);
	}
	coll_cleanup(h);
}

static char needle_buf[512];

static const char *needle(const char *fmt, int port, const char *what)
{
	snprintf(needle_buf, sizeof needle_buf, fmt, port, what);
	return needle_buf;
}

/* ---- frames built by hand ---- */

/* Content of n bytes made of ThreadName packets (each varint-delimited). */
/* Strangers whose closing line holds needle, counted after the collector
 * stopped: their own lines, plus, from each summary line of the strangers
 * beyond the first ORBIT_COLLECTOR_STRANGER_LINES (collector/strangers.c),
 * those of the kind asked: 'e' made room, 'p' closed by the peer, 'o'
 * refused or timed out, 'a' all. */
static uint64_t strangers_logged(const struct coll *h, const char *needle, char kind)
{
	size_t len;
	char *log = test_read_file(h->log, &len);
	uint64_t n = (uint64_t)coll_log_count(h, needle);

	for (const char *p = log; (p = strstr(p, "orbit-collector: strangers: ")) != NULL; p++) {
		unsigned long long all, e, c, o;
		const char *from = strstr(p, " addresses): ");
		const char *one = strstr(p, " address): ");
		const char *eol = strchr(p, '\n');
		const char *at = from && (!one || from < one) ? from + 13 : one ? one + 11 : NULL;
		CHECK(at != NULL && (eol == NULL || at < eol));
		CHECK(sscanf(p + 28, "%llu", &all) == 1);
		CHECK(sscanf(at,
		             "%llu made room for newer ones (--max-pending), %llu closed by the "
		             "peer, %llu refused or timed out",
		             &e, &c, &o) == 3);
		CHECK_EQ_U64(e + c + o, all);
		n += kind == 'e' ? e : kind == 'p' ? c : kind == 'o' ? o : all;
	}
	free(log);
	return n;
}

static size_t packets_content(uint8_t *out, size_t n)
{
	size_t len = 0;

	while (len + 40 <= n) {
		Orbit__ThreadName t = ORBIT__THREAD_NAME__INIT;
		Orbit__Packet p = ORBIT__PACKET__INIT;
		t.tid = (uint32_t)len;
		t.name = "filler-thread-name-abcdefgh";
		p.body_case = ORBIT__PACKET__BODY_THREAD_NAME;
		p.thread_name = &t;
		size_t m = orbit__packet__get_packed_size(&p);
		out[len++] = (uint8_t)m; /* < 128 */
		len += orbit__packet__pack(&p, out + len);
	}
	return len;
}

static size_t zstd_frame(uint8_t *out, size_t cap, const uint8_t *content, size_t n, int checksum,
                         int size_flag)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum);
	ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, size_flag);
	size_t r = ZSTD_compress2(cc, out, cap, content, n);
	CHECK(!ZSTD_isError(r));
	ZSTD_freeCCtx(cc);
	return r;
}

/* Rewrites the frame content size field of a frame made by zstd_frame. */
static void patch_content_size(uint8_t *frame, uint64_t size)
{
	static const int did_size[4] = {0, 1, 2, 4};
	uint8_t fhd = frame[4];
	int fcs_flag = fhd >> 6, single = (fhd >> 5) & 1;
	size_t pos = 5 + (single ? 0 : 1) + (size_t)did_size[fhd & 3];

	switch (fcs_flag) {
	case 0:
		CHECK(single && size < 256);
		frame[pos] = (uint8_t)size;
		break;
	case 1:
		CHECK(size >= 256 && size < 65536 + 256);
		frame[pos] = (uint8_t)(size - 256);
		frame[pos + 1] = (uint8_t)((size - 256) >> 8);
		break;
	default:
		for (int i = 0; i < (fcs_flag == 2 ? 4 : 8); i++)
			frame[pos + (size_t)i] = (uint8_t)(size >> (8 * i));
	}
}

/* ---- attackers ---- */

struct attacker {
	int fd, port;
	struct stream s; /* what it sent that was good */
};

/* Connects; with handshake, also sends a handshake and `good` frames. */
static void attacker_open(struct attacker *a, struct coll *h, const char *name, int handshake,
                          int good)
{
	memset(a, 0, sizeof *a);
	stream_open(&a->s, h, name, 6666);
	a->fd = a->s.fd;
	a->port = a->s.local_port;
	if (handshake) {
		stream_handshake(&a->s, ORBIT_PROTOCOL_VERSION, NULL);
		stream_flush(&a->s);
		stream_good_frames(&a->s, good);
	}
}

static void attacker_send(struct attacker *a, const void *p, size_t n)
{
	(void)send_all(a->fd, p, n); /* the collector may close first */
}

/* Handshakes the collector refuses, telling the agent why in one line. */
static int is_refusal(const char *reason)
{
	return strstr(reason, "protocol version") || strstr(reason, "token") ||
	       strstr(reason, "handshake") || strstr(reason, "first frame holds no packet");
}

/* The collector closes it and logs why; its file keeps the good frames. */
static void attacker_expect(struct attacker *a, struct coll *h, const char *reason)
{
	char path[512];
	int closed = wait_closed(a->fd, HARNESS_WAIT_MS);

	if (!closed) {
		fprintf(stderr, "the collector did not close the attacker (%s)\n", reason);
		coll_dump_log(h);
		exit(1);
	}
	if (a->s.frames == 0) {
		coll_expect_log(h, needle(":%d: refused: %s", a->port, reason));
		/* A refused handshake is told why; other garbage is not. */
		CHECK((closed == 2) == (is_refusal(reason) != 0));
		CHECK_EQ_U64(capture_find(h, a->s.name, a->s.pid, path, sizeof path), 0);
	} else {
		coll_expect_log(h, needle(":%d: closed (%s", a->port, "frame at stream byte"));
		coll_expect_log(h, reason);
		CHECK_EQ_U64(capture_find(h, a->s.name, a->s.pid, path, sizeof path), 1);
		capture_verify(path, &a->s, a->s.frames);
	}
	close(a->fd);
	a->s.fd = -1;
	stream_free(&a->s);
}

static void attack_random(struct coll *h)
{
	struct attacker a;
	uint8_t junk[65536];
	uint64_t seed = 42;

	harness_random(junk, sizeof junk, &seed);
	attacker_open(&a, h, "random", 0, 0);
	attacker_send(&a, junk, sizeof junk);
	attacker_expect(&a, h, "not a zstd frame");
}

static void attack_big_content(struct coll *h)
{
	struct attacker a;
	/* magic, FHD: 8-byte content size, single segment, checksum; 128 MiB */
	uint8_t hdr[16] = {0x28, 0xB5, 0x2F, 0xFD, 0xE4, 0, 0, 0, 8, 0, 0, 0, 0, 1, 0, 0};

	attacker_open(&a, h, "bigcontent", 1, 2);
	attacker_send(&a, hdr, sizeof hdr);
	attacker_expect(&a, h, "frame over the size limits");
}

static void attack_big_compressed(struct coll *h)
{
	struct attacker a;
	struct stream big;

	attacker_open(&a, h, "bigcompressed", 1, 2);
	stream_init(&big, "big", 1);
	for (int i = 0; i < 5; i++)
		stream_add_page(&big, (1u << 20) - 64, 1); /* incompressible */
	stream_flush(&big);
	CHECK(big.len > ORBIT_FRAME_MAX_COMPRESSED);
	attacker_send(&a, big.bytes, big.len);
	attacker_expect(&a, h, "frame over the size limits");
	stream_free(&big);
}

static void attack_truncated(struct coll *h)
{
	struct attacker a;
	struct stream more;
	char path[512];

	attacker_open(&a, h, "truncated", 1, 3);
	stream_init(&more, "more", 1);
	stream_good_frames(&more, 1);
	attacker_send(&a, more.bytes, more.len / 2);
	shutdown(a.fd, SHUT_WR);
	CHECK(wait_closed(a.fd, HARNESS_WAIT_MS));
	coll_expect_log(h, needle(":%d: closed (%s", a.port, "closed by the peer inside a frame"));
	CHECK_EQ_U64(capture_find(h, a.s.name, a.s.pid, path, sizeof path), 1);
	capture_verify(path, &a.s, a.s.frames);
	close(a.fd);
	a.s.fd = -1;
	stream_free(&a.s);
	stream_free(&more);
}

static void attack_past_size(struct coll *h)
{
	struct attacker a;
	uint8_t content[2000], frame[4096];
	size_t n = packets_content(content, sizeof content);
	size_t len = zstd_frame(frame, sizeof frame, content, n, 1, 1);

	patch_content_size(frame, n / 2); /* decompresses past its size */
	attacker_open(&a, h, "pastsize", 1, 2);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "frame data damaged");
}

static void attack_checksum(struct coll *h)
{
	struct attacker a;
	uint8_t content[2000], frame[4096];
	size_t n = packets_content(content, sizeof content);
	size_t len = zstd_frame(frame, sizeof frame, content, n, 1, 1);

	frame[len - 1] ^= 0x40;
	attacker_open(&a, h, "checksum", 1, 2);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "frame data damaged");
}

static void attack_no_checksum(struct coll *h)
{
	struct attacker a;
	uint8_t content[2000], frame[4096];
	size_t n = packets_content(content, sizeof content);
	size_t len = zstd_frame(frame, sizeof frame, content, n, 0, 1);

	attacker_open(&a, h, "nochecksum", 1, 2);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "frame without content checksum");
}

static void attack_no_size(struct coll *h)
{
	struct attacker a;
	uint8_t content[2000], frame[4096];
	size_t n = packets_content(content, sizeof content);
	size_t len = zstd_frame(frame, sizeof frame, content, n, 1, 0);

	attacker_open(&a, h, "nosize", 1, 2);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "frame header without content size");
}

static void attack_bad_packet(struct coll *h)
{
	struct attacker a;
	uint8_t frame[256];
	const uint8_t overrun[] = {0x05, 0x08, 0x01};             /* length past the end */
	const uint8_t garbage[] = {0x04, 0xff, 0xff, 0xff, 0xff}; /* not a message */
	size_t len;

	len = zstd_frame(frame, sizeof frame, overrun, sizeof overrun, 1, 1);
	attacker_open(&a, h, "overrun", 1, 1);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "bad packet in frame");

	len = zstd_frame(frame, sizeof frame, garbage, sizeof garbage, 1, 1);
	attacker_open(&a, h, "garbage", 1, 1);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "packet 0: bad packet in frame");
}

static void attack_version(struct coll *h)
{
	struct attacker a;
	struct stream s;

	attacker_open(&a, h, "version", 0, 0);
	stream_init(&s, "version", 6666);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION_MAX + 1, NULL);
	stream_flush(&s);
	attacker_send(&a, s.bytes, s.len);
	char want[64];
	snprintf(want, sizeof want, "protocol version %u, this collector speaks %u to %u",
	         ORBIT_PROTOCOL_VERSION_MAX + 1, ORBIT_PROTOCOL_VERSION_MIN,
	         ORBIT_PROTOCOL_VERSION_MAX);
	attacker_expect(&a, h, want);
	stream_free(&s);
}

static void attack_batch(struct coll *h)
{
	struct attacker a;
	struct stream s;
	Orbit__RingBatch b = ORBIT__RING_BATCH__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint8_t records[100] = {0};

	b.ring = 0;
	b.count = 10; /* 10 records would be 560 bytes */
	b.encoding = ORBIT_BATCH_COLUMNS;
	b.records.data = records;
	b.records.len = sizeof records;
	p.body_case = ORBIT__PACKET__BODY_RING_BATCH;
	p.ring_batch = &b;
	stream_init(&s, "x", 1);
	stream_add_thread(&s, 1, "fine");
	stream_add(&s, &p);
	stream_flush(&s);
	attacker_open(&a, h, "batch", 1, 3);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "packet 1 (type 2): fields out of bounds");
	stream_free(&s);
}

/* Kernel scheduling (docs/format.md 4.10): a KernelSched over the limits
 * is an invalid handshake; a KernelPage or KernelLoss of a CPU past 4096
 * is a packet out of bounds. */
static void attack_kernel(struct coll *h)
{
	struct attacker a;
	struct stream s;
	Orbit__Handshake hs = ORBIT__HANDSHAKE__INIT;
	Orbit__KernelSched ks = ORBIT__KERNEL_SCHED__INIT;
	Orbit__KernelPage kp = ORBIT__KERNEL_PAGE__INIT;
	Orbit__KernelLoss kl = ORBIT__KERNEL_LOSS__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint8_t page[64] = {0};

	hs.protocol_version = ORBIT_PROTOCOL_VERSION;
	hs.pid = 6666;
	hs.process_name = "kernel";
	ks.cpu_count = ORBIT_KERNEL_MAX_CPUS + 1;
	hs.kernel_sched = &ks;
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = &hs;
	stream_init(&s, "kernel", 6666);
	stream_add(&s, &p);
	stream_flush(&s);
	attacker_open(&a, h, "kernel", 0, 0);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "invalid handshake");
	stream_free(&s);

	kp.cpu = ORBIT_KERNEL_MAX_CPUS;
	kp.page.data = page;
	kp.page.len = sizeof page;
	p.body_case = ORBIT__PACKET__BODY_KERNEL_PAGE;
	p.kernel_page = &kp;
	stream_init(&s, "kpage", 1);
	stream_add_thread(&s, 1, "fine");
	stream_add(&s, &p);
	stream_flush(&s);
	attacker_open(&a, h, "kpage", 1, 2);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "packet 1 (type 16): fields out of bounds");
	stream_free(&s);

	kl.cpu = ORBIT_KERNEL_MAX_CPUS;
	p.body_case = ORBIT__PACKET__BODY_KERNEL_LOSS;
	p.kernel_loss = &kl;
	stream_init(&s, "kloss", 1);
	stream_add(&s, &p);
	stream_flush(&s);
	attacker_open(&a, h, "kloss", 1, 1);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "packet 0 (type 17): fields out of bounds");
	stream_free(&s);
}

static void attack_not_handshake(struct coll *h)
{
	struct attacker a;
	struct stream s;

	stream_init(&s, "x", 1);
	stream_add_thread(&s, 1, "first");
	stream_flush(&s);
	attacker_open(&a, h, "nothandshake", 0, 0);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "the first packet is not a handshake");
	stream_free(&s);
}

static void attack_two_in_handshake(struct coll *h)
{
	struct attacker a;
	struct stream s;

	stream_init(&s, "twopackets", 6666);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_add_thread(&s, 1, "extra");
	stream_flush(&s);
	attacker_open(&a, h, "twopackets", 0, 0);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "the handshake frame holds 2 packets, not 1");
	stream_free(&s);
}

static void attack_second_handshake(struct coll *h)
{
	struct attacker a;
	struct stream s;

	stream_init(&s, "again", 6666);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	attacker_open(&a, h, "again", 1, 2);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "packet 0: a second handshake");
	stream_free(&s);
}

/* An empty frame: refused first, harmless later. */
static void attack_empty(struct coll *h)
{
	struct attacker a;
	struct stream s;
	uint8_t frame[64];
	char path[512];
	size_t len = zstd_frame(frame, sizeof frame, (const uint8_t *)"", 0, 1, 1);

	attacker_open(&a, h, "emptyfirst", 0, 0);
	attacker_send(&a, frame, len);
	attacker_expect(&a, h, "the first frame holds no packet");

	stream_open(&s, h, "emptylater", 6668);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	stream_good_frames(&s, 1);
	CHECK(send_all(s.fd, frame, len) == 0);
	stream_good_frames(&s, 1);
	stream_close_wait(&s, h);
	CHECK_EQ_U64(capture_find(h, "emptylater", 6668, path, sizeof path), 1);
	struct stat st;
	CHECK(stat(path, &st) == 0 && (size_t)st.st_size == s.len + len);
	CHECK(zstd_test(path) != 1);
	stream_free(&s);
}

/* Valid frames that each decompress to almost 64 MiB (zeros). */
static void attack_bomb(struct coll *h)
{
	struct stream s;

	stream_open(&s, h, "bomb", 6667);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	for (int f = 0; f < 3; f++) {
		for (int i = 0; i < 63; i++)
			stream_add_page(&s, (1u << 20) - 64, 0);
		stream_flush(&s);
	}
	stream_close_wait(&s, h);
	coll_check_rss(h, "after 64 MiB frames");
	capture_verify_stream(h, &s);
	stream_free(&s);
}

/* ---- the scaffold: a good client around an attack ---- */

static const char *token_for_good;

static void good_open(struct stream *s, struct coll *h, const char *name, uint32_t pid)
{
	stream_open(s, h, name, pid);
	stream_handshake(s, ORBIT_PROTOCOL_VERSION, token_for_good);
	stream_flush(s);
}

static void hostile(const char *const *args, void (*attack)(struct coll *h))
{
	struct coll h;
	struct stream good, after;

	start(&h, args);
	good_open(&good, &h, "good", 1001);
	stream_good_frames(&good, 5);
	attack(&h);
	stream_good_frames(&good, 5);
	good_open(&after, &h, "after", 1002);
	stream_good_frames(&after, 3);
	stream_close_wait(&good, &h);
	stream_close_wait(&after, &h);
	capture_verify_stream(&h, &good);
	capture_verify_stream(&h, &after);
	coll_check_rss(&h, "after the attack");
	stream_free(&good);
	stream_free(&after);
	finish(&h);
}

/* ---- cases ---- */

static void case_good(void)
{
	struct coll h;
	struct stream s;
	char path[512];
	const char *base;
	struct tm tm;
	char stamp[32];
	time_t now = time(NULL);

	start(&h, NULL);
	good_open(&s, &h, "game", 1234);
	stream_good_frames(&s, 19);
	stream_add_loss(&s, 1, 3);
	stream_add_end(&s);
	stream_flush(&s);
	stream_close_wait(&s, &h);
	CHECK_EQ_U64(capture_find(&h, "game", 1234, path, sizeof path), 1);
	base = strrchr(path, '/') + 1;
	/* game-1234-YYYYMMDDTHHMMSSZ.orbit.zst, the time within a minute */
	CHECK(strlen(base) == strlen("game-1234-20260101T000000Z.orbit.zst"));
	CHECK(strcmp(base + strlen(base) - 10, ".orbit.zst") == 0);
	CHECK(base[18] == 'T' && base[25] == 'Z');
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H", &tm);
	CHECK(strncmp(base + 10, stamp, 6) == 0);
	capture_verify(path, &s, s.frames);
	coll_expect_log(&h, "pid 1234 -> ");
	coll_expect_log(&h, "21 frames");
	coll_expect_log(&h, "3 events lost (3 records of the scope rings, 0 log records, 0 "
	                    "kernel events), end of stream");
	stream_free(&s);
	finish(&h);
}

/* Kernel pages are kept like any packet; the kernel's lost events
 * (KernelLoss, cumulative per CPU: its latest overrun + dropped) are in
 * "events lost" with the rings' loss. */
static void case_kernel(void)
{
	struct coll h;
	struct stream s;
	char path[512];
	Orbit__KernelPage kp = ORBIT__KERNEL_PAGE__INIT;
	Orbit__KernelLoss kl = ORBIT__KERNEL_LOSS__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	uint8_t page[4096] = {0};

	start(&h, NULL);
	good_open(&s, &h, "kernel", 4321);
	stream_good_frames(&s, 2);
	kp.cpu = 1;
	kp.page.data = page;
	kp.page.len = sizeof page;
	p.body_case = ORBIT__PACKET__BODY_KERNEL_PAGE;
	p.kernel_page = &kp;
	stream_add(&s, &p);
	p.body_case = ORBIT__PACKET__BODY_KERNEL_LOSS;
	p.kernel_loss = &kl;
	kl.cpu = 0, kl.overrun = 5, kl.dropped = 2, kl.read_events = 100;
	stream_add(&s, &p);
	kl.cpu = 1, kl.overrun = 1, kl.dropped = 0, kl.read_events = 50;
	stream_add(&s, &p);
	stream_flush(&s);
	kl.cpu = 0, kl.overrun = 6, kl.dropped = 2, kl.read_events = 200; /* cumulative */
	stream_add(&s, &p);
	stream_add_loss(&s, 0, 3);
	stream_add_end(&s);
	stream_flush(&s);
	stream_close_wait(&s, &h);
	CHECK_EQ_U64(capture_find(&h, "kernel", 4321, path, sizeof path), 1);
	capture_verify(path, &s, s.frames);
	coll_expect_log(&h, "12 events lost (3 records of the scope rings, 0 log records, 9 "
	                    "kernel events), end of stream"); /* 3; 6 + 2 + 1 */
	stream_free(&s);
	finish(&h);
}

static void case_concurrent(void)
{
	struct coll h;
	struct stream s[8];
	char name[32];

	start(&h, NULL);
	for (int i = 0; i < 8; i++) {
		snprintf(name, sizeof name, "worker%d", i);
		good_open(&s[i], &h, name, 500 + (uint32_t)i);
	}
	for (int f = 0; f < 10; f++)
		for (int i = 0; i < 8; i++)
			stream_good_frames(&s[i], 1);
	for (int i = 0; i < 8; i++)
		stream_close_wait(&s[i], &h);
	for (int i = 0; i < 8; i++) {
		capture_verify_stream(&h, &s[i]);
		stream_free(&s[i]);
	}
	CHECK_EQ_U64(capture_count(&h), 8);
	finish(&h);
}

static void case_names(void)
{
	static const char *const names[][2] = {
	    {"../../etc/passwd", "_._.__etc_passwd"},
	    {"", "unknown"},
	    {".hidden", "_hidden"},
	    {"..", "_."},
	    {"a b/c\\d", "a_b_c_d"},
	    {"\xe5\x90\x8d", "___"},
	    {"x\ny", "x_y"},
	    {"ok.name-1_2", "ok.name-1_2"},
	    {"-rf", "_rf"},
	    {"--help", "_-help"},
	    {" -x", "_-x"},
	    {"\x01\x1b[0m\x7f\xff", "___0m__"},
	    {"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
	     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
	     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"},
	};
	const size_t n = sizeof names / sizeof names[0];
	struct coll h;
	char path[512];

	start(&h, NULL);
	for (size_t i = 0; i < n; i++) {
		struct stream s;
		good_open(&s, &h, names[i][0], 70 + (uint32_t)i);
		stream_good_frames(&s, 1);
		stream_close_wait(&s, &h);
		if (capture_find(&h, names[i][1], s.pid, path, sizeof path) != 1) {
			fprintf(stderr, "no capture named '%s-%u-*'\n", names[i][1], s.pid);
			coll_dump_log(&h);
			exit(1);
		}
		capture_verify(path, &s, s.frames);
		stream_free(&s);
	}
	CHECK_EQ_U64(capture_count(&h), n);
	/* nothing outside the directory: the root holds captures/ and the log */
	struct coll root = h;
	snprintf(root.dir, sizeof root.dir, "%s", h.root);
	CHECK_EQ_U64(capture_count(&root), 2);
	finish(&h);
}

static void case_exists(void)
{
	struct coll h;
	struct stream s[2];
	char path[512], target[512];
	time_t now = time(NULL);

	harness_root(&h);
	CHECK(mkdir(h.dir, 0755) == 0);
	snprintf(target, sizeof target, "%s/outside", h.root);
	for (int d = -2; d <= 10; d++) {
		time_t t = now + d;
		struct tm tm;
		char stamp[32];
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		snprintf(path, sizeof path, "%s/clash-42-%s.orbit.zst", h.dir, stamp);
		FILE *f = fopen(path, "w");
		CHECK(f != NULL && fputs("precious", f) >= 0 && fclose(f) == 0);
		snprintf(path, sizeof path, "%s/clash-42-%s-1.orbit.zst", h.dir, stamp);
		CHECK(symlink(target, path) == 0); /* dangling, pointing outside */
	}
	coll_start(&h, exe, NULL, NULL);
	for (int i = 0; i < 2; i++) {
		good_open(&s[i], &h, "clash", 42);
		stream_good_frames(&s[i], 2 + i);
	}
	for (int i = 0; i < 2; i++)
		stream_close_wait(&s[i], &h);
	CHECK(access(target, F_OK) != 0);
	/* the precious files are untouched; the two captures got -2 / -3 */
	int precious = 0, captures = 0;
	for (int d = -2; d <= 10; d++) {
		time_t t = now + d;
		struct tm tm;
		char stamp[32];
		gmtime_r(&t, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		for (int suffix = 0; suffix <= 3; suffix++) {
			char buf[64] = "";
			if (suffix == 0)
				snprintf(path, sizeof path, "%s/clash-42-%s.orbit.zst", h.dir,
				         stamp);
			else
				snprintf(path, sizeof path, "%s/clash-42-%s-%d.orbit.zst", h.dir,
				         stamp, suffix);
			struct stat st;
			if (lstat(path, &st) != 0)
				continue;
			if (suffix == 0) {
				FILE *f = fopen(path, "r");
				CHECK(f != NULL && fgets(buf, sizeof buf, f) != NULL);
				fclose(f);
				CHECK(strcmp(buf, "precious") == 0);
				precious++;
			} else if (suffix == 1) {
				CHECK(S_ISLNK(st.st_mode));
			} else {
				CHECK(S_ISREG(st.st_mode));
				/* which stream: by size */
				int which = (size_t)st.st_size == s[0].len ? 0 : 1;
				CHECK((size_t)st.st_size == s[which].len);
				capture_verify(path, &s[which], s[which].frames);
				captures++;
			}
		}
	}
	CHECK_EQ_U64(precious, 13);
	CHECK_EQ_U64(captures, 2);
	for (int i = 0; i < 2; i++)
		stream_free(&s[i]);
	finish(&h);
}

static void case_idle(void)
{
	const char *const args[] = {"--max-connections",
	                            "512",
	                            "--max-pending",
	                            "512",
	                            "--handshake-timeout-ms",
	                            HARNESS_ASAN ? "8000" : "4000",
	                            NULL};
	struct coll h;
	struct stream good;
	int want = 300, n = harness_files(300);
	int fds[300];
	const uint8_t partial[] = {0x28, 0xB5, 0x2F, 0xFD, 0xE4}; /* a header begun */

	if (n < 100)
		SKIP("ulimit -n too low for hundreds of connections");
	if (n < want)
		fprintf(stderr, "ulimit -n: %d idle connections instead of %d\n", n, want);
	start(&h, args);
	good_open(&good, &h, "good", 1001);
	stream_good_frames(&good, 3);
	for (int i = 0; i < n; i++) {
		fds[i] = client_connect(&h);
		if (i % 2)
			CHECK(send_all(fds[i], partial, sizeof partial) == 0);
	}
	coll_check_rss(&h, "with the idle connections open");
	stream_good_frames(&good, 5);
	stream_close_wait(&good, &h);
	capture_verify_stream(&h, &good);
	for (int i = 0; i < n; i++) {
		CHECK(wait_closed(fds[i], HARNESS_WAIT_MS));
		close(fds[i]);
	}
	CHECK(coll_wait_log(&h, "refused: no handshake within", HARNESS_WAIT_MS));
	coll_check_rss(&h, "after the idle connections");
	/* still accepting */
	stream_free(&good);
	good_open(&good, &h, "later", 1003);
	stream_good_frames(&good, 2);
	stream_close_wait(&good, &h);
	capture_verify_stream(&h, &good);
	stream_free(&good);
	/* each one logged: its own line, or counted in the strangers' line */
	CHECK_EQ_U64(coll_stop(&h, SIGTERM), 0);
	CHECK_EQ_U64(strangers_logged(&h, "refused: no handshake within", 'o'), n);
	coll_cleanup(&h);
}

/* Sends one byte every 50 ms to each trickler until the collector closes it. */
static void trickle(int *fd, const uint8_t *const *data, const size_t *len, int n)
{
	size_t sent[4] = {0};
	int open = n;
	uint64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;

	while (open > 0) {
		struct pollfd p[4];
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){fd[i], fd[i] >= 0 ? POLLIN : 0, 0};
		CHECK(harness_now_ms() < deadline);
		if (poll(p, (nfds_t)n, 50) > 0) {
			for (int i = 0; i < n; i++) {
				if (fd[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
					continue;
				CHECK(wait_closed(fd[i], 1000));
				close(fd[i]);
				fd[i] = -1;
				open--;
			}
			continue;
		}
		for (int i = 0; i < n; i++) {
			if (fd[i] < 0)
				continue;
			CHECK(sent[i] < len[i]); /* closed before the bytes ran out */
			(void)send_all(fd[i], data[i] + sent[i]++, 1);
		}
	}
}

static void case_trickle(void)
{
	const char *const args[] = {"--handshake-timeout-ms", "700", "--frame-timeout-ms", "700",
	                            NULL};
	struct coll h;
	struct stream good, hs, slow, frame;
	char path[512];

	start(&h, args);
	good_open(&good, &h, "good", 1001);
	stream_good_frames(&good, 2);
	stream_open(&hs, &h, "slowhandshake", 7);
	stream_init(&frame, "slowhandshake", 7);
	stream_handshake(&frame, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&frame);
	stream_open(&slow, &h, "slowframe", 8);
	stream_handshake(&slow, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&slow);
	struct stream next;
	stream_init(&next, "x", 1);
	stream_good_frames(&next, 1);
	int fds[2] = {hs.fd, slow.fd};
	const uint8_t *data[2] = {frame.bytes, next.bytes};
	const size_t len[2] = {frame.len, next.len};
	trickle(fds, data, len, 2);
	hs.fd = slow.fd = -1;
	coll_expect_log(&h,
	                needle(":%d: refused: %s", hs.local_port, "no handshake within 700 ms"));
	coll_expect_log(&h, needle(":%d: closed (%s", slow.local_port, "frame at stream byte"));
	coll_expect_log(&h, "incomplete after 700 ms");
	CHECK_EQ_U64(capture_find(&h, "slowhandshake", 7, path, sizeof path), 0);
	CHECK_EQ_U64(capture_find(&h, "slowframe", 8, path, sizeof path), 1);
	capture_verify(path, &slow, 1);
	stream_good_frames(&good, 2);
	stream_close_wait(&good, &h);
	capture_verify_stream(&h, &good);
	stream_free(&good);
	stream_free(&hs);
	stream_free(&slow);
	stream_free(&frame);
	stream_free(&next);
	finish(&h);
}

static void case_idle_timeout(void)
{
	const char *const args[] = {"--idle-timeout-ms", "600", NULL};
	struct coll h;
	struct stream s;

	start(&h, args);
	good_open(&s, &h, "quiet", 9);
	stream_good_frames(&s, 2);
	CHECK(wait_closed(s.fd, HARNESS_WAIT_MS));
	coll_expect_log(&h, needle(":%d: closed (%s", s.local_port, "idle for 600 ms"));
	capture_verify_stream(&h, &s);
	stream_free(&s);
	finish(&h);
}

static void wait_file_size(struct coll *h, const struct stream *s, size_t size, int at_least);

/* --max-connections counts streams: idle connections do not take a slot;
 * a handshake beyond is closed without a refusal line (the agent retries). */
static void case_max_connections(void)
{
	const char *const args[] = {"--max-connections", "2", NULL};
	struct coll h;
	struct stream first, second, extra, later;
	char path[512];
	int idle[3];

	start(&h, args);
	for (int i = 0; i < 3; i++)
		idle[i] = client_connect(&h);
	good_open(&first, &h, "first", 1);
	stream_good_frames(&first, 2);
	good_open(&second, &h, "second", 2);
	stream_good_frames(&second, 2);
	wait_file_size(&h, &second, second.len, 0);
	good_open(&extra, &h, "extra", 3);
	CHECK_EQ_U64(wait_closed(extra.fd, HARNESS_WAIT_MS), 1);
	coll_expect_log(&h, needle(":%d: refused: %s", extra.local_port,
	                           "2 streams already open (--max-connections)"));
	CHECK_EQ_U64(capture_find(&h, "extra", 3, path, sizeof path), 0);
	stream_close_wait(&first, &h);
	good_open(&later, &h, "later", 4);
	stream_good_frames(&later, 2);
	stream_close_wait(&later, &h);
	stream_close_wait(&second, &h);
	capture_verify_stream(&h, &first);
	capture_verify_stream(&h, &second);
	capture_verify_stream(&h, &later);
	for (int i = 0; i < 3; i++)
		close(idle[i]);
	stream_free(&first);
	stream_free(&second);
	stream_free(&extra);
	stream_free(&later);
	finish(&h);
}

/* Every stream slot held by peers that sent a Handshake and nothing after
 * (a local squatter on a collector without a token): an agent that comes
 * later gets the place of the one that delivered nothing longest, and
 * delivers; the squatter's file ends as after an idle timeout. */
static void case_squatters(void)
{
	const char *const args[] = {"--max-connections", "3", NULL};
	struct coll h;
	struct stream sq[3], agent;
	char path[512];

	start(&h, args);
	for (int i = 0; i < 3; i++) {
		good_open(&sq[i], &h, "squatter", 10 + (uint32_t)i);
		wait_file_size(&h, &sq[i], sq[i].len, 0);
	}
	usleep(2300 * 1000); /* ORBIT_COLLECTOR_NEVER_MS (collector/collector.h), and more */
	good_open(&agent, &h, "agent", 20);
	stream_good_frames(&agent, 3);
	/* the oldest squatter made room */
	CHECK_EQ_U64(wait_closed(sq[0].fd, HARNESS_WAIT_MS), 1);
	coll_expect_log(&h, needle(":%d: closed (no data in the %s", sq[0].local_port, ""));
	coll_expect_log(
	    &h, needle("made room for 127.0.0.1:%d (--max-connections)", agent.local_port, ""));
	stream_close_wait(&agent, &h);
	capture_verify_stream(&h, &agent);
	CHECK_EQ_U64(capture_find(&h, "squatter", 10, path, sizeof path), 1);
	for (int i = 0; i < 3; i++)
		stream_free(&sq[i]);
	stream_free(&agent);
	finish(&h);
}

/* The default collector (no token, 256 streams): 256 tokenless peers whose
 * Handshakes are accepted and which then send nothing hold every stream
 * slot; an agent still gets in, in the place of the oldest of them, and its
 * capture is whole. */
static void case_squatters_default(void)
{
	enum { N = 256 };
	static struct stream sq[N];
	struct coll h;
	struct stream agent;

	start(&h, NULL);
	for (int i = 0; i < N; i++)
		good_open(&sq[i], &h, "squatter", 1000 + (uint32_t)i);
	for (int i = 0; i < N; i++)
		wait_file_size(&h, &sq[i], sq[i].len, 0);
	usleep(2300 * 1000); /* ORBIT_COLLECTOR_NEVER_MS (collector/collector.h), and more */
	good_open(&agent, &h, "agent", 20);
	stream_good_frames(&agent, 3);
	CHECK_EQ_U64(wait_closed(sq[0].fd, HARNESS_WAIT_MS), 1);
	coll_expect_log(
	    &h, needle("made room for 127.0.0.1:%d (--max-connections)", agent.local_port, ""));
	stream_close_wait(&agent, &h);
	capture_verify_stream(&h, &agent);
	for (int i = 0; i < N; i++)
		stream_free(&sq[i]);
	stream_free(&agent);
	finish(&h);
}

/* Waits until the capture of s holds size bytes (at least, with at_least). */
static void wait_file_size(struct coll *h, const struct stream *s, size_t size, int at_least)
{
	char path[512];
	struct stat st;
	uint64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;

	for (;;) {
		if (capture_find(h, s->name, s->pid, path, sizeof path) == 1 &&
		    stat(path, &st) == 0 &&
		    ((size_t)st.st_size == size || (at_least && (size_t)st.st_size > size)))
			return;
		if (harness_now_ms() > deadline) {
			fprintf(stderr, "%s never reached %zu bytes\n", s->name, size);
			coll_dump_log(h);
			exit(1);
		}
		usleep(2000); /* the file's size is the readiness signal */
	}
}

static void case_signal(int sig)
{
	struct coll h;
	struct stream s, more;
	char path[512];

	start(&h, NULL);
	good_open(&s, &h, "streaming", 77);
	stream_good_frames(&s, 5);
	stream_init(&more, "x", 1);
	stream_good_frames(&more, 1);
	CHECK(send_all(s.fd, more.bytes, more.len / 2) == 0); /* a frame in mid-air */
	wait_file_size(&h, &s, s.len, 0);
	CHECK_EQ_U64(coll_stop(&h, sig), 0);
	coll_expect_log(&h, "collector stopping");
	CHECK_EQ_U64(capture_find(&h, "streaming", 77, path, sizeof path), 1);
	capture_verify(path, &s, s.frames);
	stream_free(&s);
	stream_free(&more);
	coll_cleanup(&h);
}

/* Frames still arriving when SIGINT comes: the file ends at a frame edge. */
static void case_signal_burst(void)
{
	struct coll h;
	struct stream s;
	char path[512];
	struct stat st;

	start(&h, NULL);
	stream_init(&s, "burst", 78);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	for (int i = 0; i < 40; i++) {
		stream_add_page(&s, 200000, 1);
		stream_flush(&s);
	}
	int fd = client_connect(&h);
	CHECK(send_all(fd, s.bytes, s.frame_end[0]) == 0);
	wait_file_size(&h, &s, s.frame_end[0], 0);
	/* the rest from a child, so that the signal lands mid-stream */
	pid_t child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		(void)send_all(fd, s.bytes + s.frame_end[0], s.len - s.frame_end[0]);
		_exit(0);
	}
	wait_file_size(&h, &s, s.frame_end[3], 1);
	CHECK_EQ_U64(coll_stop(&h, SIGINT), 0);
	waitpid(child, NULL, 0);
	close(fd);
	CHECK_EQ_U64(capture_find(&h, "burst", 78, path, sizeof path), 1);
	CHECK(stat(path, &st) == 0);
	size_t frames = 0;
	while (frames < s.frames && s.frame_end[frames] < (size_t)st.st_size)
		frames++;
	CHECK(frames < s.frames && s.frame_end[frames] == (size_t)st.st_size);
	fprintf(stderr, "stopped with %zu of %zu frames in the file\n", frames + 1, s.frames);
	capture_verify(path, &s, frames + 1);
	stream_free(&s);
	coll_cleanup(&h);
}

static void case_disk_full(void)
{
	struct coll h;
	struct stream s, after;
	char path[512], log_needle[600];
	struct stat st;

	harness_root(&h);
	h.fsize_limit = 300 * 1024;
	coll_start(&h, exe, NULL, NULL);
	stream_init(&s, "diskfull", 99);
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	for (int i = 0; i < 12; i++) {
		stream_add_page(&s, 40000, 1);
		stream_flush(&s);
	}
	int fd = client_connect(&h);
	(void)send_all(fd, s.bytes, s.len);
	CHECK(wait_closed(fd, HARNESS_WAIT_MS));
	close(fd);
	CHECK_EQ_U64(capture_find(&h, "diskfull", 99, path, sizeof path), 1);
	snprintf(log_needle, sizeof log_needle, "%s: write failed at byte ", path);
	coll_expect_log(&h, log_needle);
	coll_expect_log(&h, "file too large; closed 127.0.0.1:");
	CHECK(stat(path, &st) == 0);
	size_t frames = 0;
	while (frames < s.frames && s.frame_end[frames] < (size_t)st.st_size)
		frames++;
	CHECK(frames < s.frames && s.frame_end[frames] == (size_t)st.st_size);
	CHECK((size_t)st.st_size <= 300 * 1024);
	CHECK(s.frame_end[frames + 1] > 300 * 1024); /* every frame that fitted */
	capture_verify(path, &s, frames + 1);
	/* the collector carries on */
	good_open(&after, &h, "after", 100);
	stream_good_frames(&after, 1);
	stream_close_wait(&after, &h);
	capture_verify_stream(&h, &after);
	stream_free(&s);
	stream_free(&after);
	finish(&h);
}

static void case_fast(void)
{
	struct coll h;
	struct stream s;

	start(&h, NULL);
	good_open(&s, &h, "fast", 5);
	for (int i = 0; i < 48; i++) {
		stream_add_page(&s, (1u << 20) - 64, 1);
		stream_flush(&s);
	}
	stream_close_wait(&s, &h);
	coll_check_rss(&h, "after 48 MiB streamed");
	capture_verify_stream(&h, &s);
	stream_free(&s);
	finish(&h);
}

static void case_token(const char *which)
{
	struct coll h;
	char tokfile[256];
	const char *const args[] = {"--token-file", tokfile, NULL};
	struct attacker a;
	struct stream s;

	harness_root(&h);
	snprintf(tokfile, sizeof tokfile, "%s/token", h.root);
	FILE *f = fopen(tokfile, "w");
	CHECK(f != NULL && fputs("s3cret-token\n", f) >= 0 && fclose(f) == 0);
	coll_start(&h, exe, NULL, args);
	token_for_good = "s3cret-token";
	struct stream good;
	good_open(&good, &h, "good", 1001);
	stream_good_frames(&good, 2);
	if (strcmp(which, "right") != 0) {
		const char *tok = strcmp(which, "wrong") == 0    ? "s3cret-tokeN"
		                  : strcmp(which, "prefix") == 0 ? "s3cret"
		                                                 : NULL;
		attacker_open(&a, &h, "intruder", 0, 0);
		stream_init(&s, "intruder", 6666);
		stream_handshake(&s, ORBIT_PROTOCOL_VERSION, tok);
		stream_flush(&s);
		attacker_send(&a, s.bytes, s.len);
		attacker_expect(&a, &h, tok ? "wrong token" : "no token (--token-file is set)");
		stream_free(&s);
	}
	stream_good_frames(&good, 2);
	stream_close_wait(&good, &h);
	capture_verify_stream(&h, &good);
	CHECK_EQ_U64(capture_count(&h), 1);
	stream_free(&good);
	finish(&h);
}

static void case_ipv6(void)
{
	struct coll h;
	struct stream s;
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};

	if (probe < 0 || bind(probe, (struct sockaddr *)&a, sizeof a) != 0)
		SKIP("no IPv6 loopback");
	close(probe);
	harness_root(&h);
	coll_start(&h, exe, "[::1]:0", NULL);
	CHECK(strncmp(h.listen, "[::1]:", 6) == 0);
	good_open(&s, &h, "six", 6);
	stream_good_frames(&s, 3);
	stream_close_wait(&s, &h);
	coll_expect_log(&h, needle("[::1]:%d: disconnected%s", s.local_port, ""));
	capture_verify_stream(&h, &s);
	stream_free(&s);
	finish(&h);
}

static void case_hostname(void)
{
	struct coll h;
	struct stream s;

	harness_root(&h);
	coll_start(&h, exe, "localhost:0", NULL);
	good_open(&s, &h, "named", 6);
	stream_good_frames(&s, 3);
	stream_close_wait(&s, &h);
	capture_verify_stream(&h, &s);
	stream_free(&s);
	finish(&h);
}

/* Runs the collector with args; returns its exit status, output in out/err. */
static int run(const char *const *args, char *out, size_t outlen, char *err, size_t errlen)
{
	int po[2], pe[2], status;
	const char *argv[16];
	int n = 0;

	argv[n++] = exe;
	for (int i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	CHECK(pipe(po) == 0 && pipe(pe) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		execv(exe, (char *const *)argv);
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	size_t no = 0, ne = 0;
	for (;;) {
		ssize_t r = read(po[0], out + no, outlen - 1 - no);
		if (r <= 0)
			break;
		no += (size_t)r;
	}
	for (;;) {
		ssize_t r = read(pe[0], err + ne, errlen - 1 - ne);
		if (r <= 0)
			break;
		ne += (size_t)r;
	}
	out[no] = err[ne] = '\0';
	close(po[0]);
	close(pe[0]);
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void expect_bad(const char *const *args, const char *named)
{
	char out[4096], err[4096];
	int status = run(args, out, sizeof out, err, sizeof err);

	fprintf(stderr, "  %s", err);
	CHECK_EQ_U64(status, 1);
	CHECK(out[0] == '\0');
	CHECK_EQ_U64(lines(err), 1);
	CHECK(strstr(err, named) != NULL);
}

static void case_args(void)
{
	char out[8192], err[4096];
	struct coll h;

	const char *const help[] = {"--help", NULL};
	CHECK_EQ_U64(run(help, out, sizeof out, err, sizeof err), 0);
	CHECK(strncmp(out, "usage: orbit-collector", 22) == 0 && err[0] == '\0');

	harness_root(&h);
	const char *const bogus[] = {"--bogus", NULL};
	const char *const maxc[] = {"--max-connections", "many", NULL};
	const char *const zero[] = {"--max-connections=0", NULL};
	const char *const noport[] = {"--listen", "127.0.0.1", NULL};
	const char *const v6[] = {"--listen", "::1:7411", NULL};
	const char *const missing[] = {"--dir", h.dir, "--listen", NULL};
	const char *const timeout[] = {"--idle-timeout-ms", "-5", NULL};
	const char *const extra[] = {"stray", NULL};
	const char *const tok[] = {"--listen",     "127.0.0.1:0",        "--dir", h.dir,
	                           "--token-file", "/nonexistent/token", NULL};
	expect_bad(bogus, "--bogus");
	expect_bad(maxc, "--max-connections 'many'");
	expect_bad(zero, "--max-connections '0'");
	expect_bad(noport, "--listen '127.0.0.1'");
	expect_bad(v6, "--listen '::1:7411'");
	expect_bad(missing, "--listen");
	expect_bad(timeout, "--idle-timeout-ms '-5'");
	expect_bad(extra, "stray");
	expect_bad(tok, "/nonexistent/token");

	/* the address is taken */
	coll_start(&h, exe, NULL, NULL);
	char taken[128];
	snprintf(taken, sizeof taken, "127.0.0.1:%d", h.port);
	char other[600];
	snprintf(other, sizeof other, "%s/other", h.dir);
	const char *const busy[] = {"--listen", taken, "--dir", other, NULL};
	expect_bad(busy, taken);
	/* the directory is taken: one collector per directory */
	const char *const dir_busy[] = {"--listen", "127.0.0.1:0", "--dir", h.dir, NULL};
	expect_bad(dir_busy, "in use by another orbit-collector; one collector per directory");
	finish(&h);
}

/* The status line on a terminal: connections and the loss agents report. */
static void case_status_tty(void)
{
	struct coll h;
	struct stream s;
	char out[65536];
	size_t n = 0;
	int master = posix_openpt(O_RDWR | O_NOCTTY);

	if (master < 0 || grantpt(master) != 0 || unlockpt(master) != 0)
		SKIP("no pseudo-terminal");
	harness_root(&h);
	h.stderr_fd = open(ptsname(master), O_RDWR | O_NOCTTY);
	CHECK(h.stderr_fd >= 0);
	coll_start(&h, exe, NULL, NULL);
	close(h.stderr_fd);
	good_open(&s, &h, "status", 3);
	stream_add_loss(&s, 0, 7);
	stream_add_loss(&s, 1, 5);
	stream_flush(&s);
	stream_add_loss(&s, 0, 9); /* cumulative: ring 0 now 9, in all 14 */
	stream_flush(&s);
	uint64_t deadline = harness_now_ms() + HARNESS_WAIT_MS;
	out[0] = '\0';
	while (strstr(out, "\r1 connection, ") == NULL || strstr(out, "14 events lost") == NULL) {
		struct pollfd p = {master, POLLIN, 0};
		if (harness_now_ms() > deadline || n == sizeof out - 1) {
			fprintf(stderr, "no status line on the terminal:\n%s\n", out);
			exit(1);
		}
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t r = read(master, out + n, sizeof out - 1 - n);
		CHECK(r > 0);
		n += (size_t)r;
		out[n] = '\0';
	}
	close(s.fd);
	s.fd = -1;
	stream_free(&s);
	CHECK_EQ_U64(coll_stop(&h, SIGTERM), 0);
	close(master);
	coll_cleanup(&h);
}

/* --quiet: errors only. */
static void case_quiet(void)
{
	const char *const args[] = {"--quiet", NULL};
	struct coll h;
	struct stream s;
	struct attacker a;

	start(&h, args);
	good_open(&s, &h, "hush", 4);
	stream_good_frames(&s, 3);
	close(s.fd);
	s.fd = -1;
	wait_file_size(&h, &s, s.len, 0);
	attacker_open(&a, &h, "noise", 0, 0);
	attacker_send(&a, "GET / HTTP/1.0\r\n\r\n", 18);
	attacker_expect(&a, &h, "not a zstd frame");
	CHECK_EQ_U64(coll_stop(&h, SIGTERM), 0);
	capture_verify_stream(&h, &s);
	CHECK_EQ_U64(coll_log_count(&h, "orbit-collector: "), 1);
	stream_free(&s);
	coll_cleanup(&h);
}

/* ---- the pending pool and strangers ---- */

/* A partial first frame of a stranger: a zstd header, then raw blocks up to
 * total bytes. big: the header declares 60 MiB of content; else 60 KiB
 * that the blocks run past. */
static uint8_t *stranger_frame(size_t total, int big)
{
	uint8_t *f = malloc(total);
	uint64_t content = big ? 60ull << 20 : 60ull << 10, seed = 7;
	size_t at = 0;

	CHECK(f != NULL);
	memcpy(f, "\x28\xb5\x2f\xfd", 4);
	f[4] = 0x84;     /* 4-byte content size, checksum, no single segment */
	f[5] = 13u << 3; /* window 8 MiB */
	for (int i = 0; i < 4; i++)
		f[6 + i] = (uint8_t)(content >> (8 * i));
	at = 10;
	while (at + 3 < total) {
		uint32_t size = 128u << 10;
		uint32_t bh = size << 3; /* raw, not last */
		f[at] = (uint8_t)bh;
		f[at + 1] = (uint8_t)(bh >> 8);
		f[at + 2] = (uint8_t)(bh >> 16);
		at += 3;
		size_t n = total - at < size ? total - at : size;
		harness_random(f + at, n, &seed);
		at += n;
	}
	return f;
}

static int connect_nonblock_from(const struct coll *h, const char *local)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	struct sockaddr_in a = {.sin_family = AF_INET}, to = {.sin_family = AF_INET};

	CHECK(fd >= 0);
	inet_pton(AF_INET, local, &a.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	to.sin_port = htons((uint16_t)h->port);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof a) == 0);
	CHECK(connect(fd, (struct sockaddr *)&to, sizeof to) == 0 || errno == EINPROGRESS);
	return fd;
}

static void token_setup(struct coll *h, char *tokfile, size_t n)
{
	harness_root(h);
	snprintf(tokfile, n, "%s/token", h->root);
	FILE *f = fopen(tokfile, "w");
	CHECK(f != NULL && fputs("s3cret-token\n", f) >= 0 && fclose(f) == 0);
	token_for_good = "s3cret-token";
}

/*
 * 1000 tokenless connections, each sending a 4 MiB
 * partial first frame, while a good agent streams. The collector's peak
 * memory stays under 64 MiB (it was 4.1 GB), every stranger is closed, and
 * the agent's capture is complete.
 */
static void case_strangers(void)
{
	enum { N = 1000, TOTAL = 4 << 20 };
	const long limit_kib = 64L * 1024; /* also under ASan: 25 MiB measured */
	struct coll h;
	char tokfile[256];
	struct stream good;
	static int fd[N];
	static size_t sent[N];
	uint8_t *frame[2] = {stranger_frame(TOTAL, 1), stranger_frame(TOTAL, 0)};

	if (!harness_second_address())
		SKIP("127.0.0.2 cannot be bound: no second peer address");
	if (harness_files(N + 16) < N + 16)
		SKIP("ulimit -n cannot be raised to hold %d connections", N);
	token_setup(&h, tokfile, sizeof tokfile);
	const char *const args[] = {"--token-file", tokfile, NULL};
	coll_start(&h, exe, NULL, args);
	good_open(&good, &h, "good", 1001);
	stream_good_frames(&good, 3);
	long base = coll_rss_kib(&h, "VmHWM");
	for (int i = 0; i < N; i++)
		fd[i] = connect_nonblock_from(&h, "127.0.0.2");
	int open = N;
	uint64_t deadline = harness_now_ms() + 4 * HARNESS_WAIT_MS;
	for (int round = 0; open > 0; round++) {
		CHECK(harness_now_ms() < deadline);
		for (int i = 0; i < N; i++) {
			if (fd[i] < 0)
				continue;
			ssize_t r =
			    send(fd[i], frame[i & 1] + sent[i], TOTAL - sent[i], MSG_NOSIGNAL);
			if (r > 0)
				sent[i] += (size_t)r;
			if ((r < 0 && errno != EAGAIN && errno != EINPROGRESS &&
			     errno != ENOTCONN) ||
			    sent[i] == TOTAL) {
				close(fd[i]);
				fd[i] = -1;
				open--;
			}
		}
		if (round % 8 == 0)
			stream_good_frames(&good, 1);
		usleep(2000); /* the strangers' sockets have no common readiness signal */
	}
	long hwm = coll_rss_kib(&h, "VmHWM");
	fprintf(stderr,
	        "%d strangers sent up to %d bytes each: collector VmHWM %ld KiB (before %ld, "
	        "limit %ld)\n",
	        N, TOTAL, hwm, base, limit_kib);
	CHECK(hwm > 0 && hwm < limit_kib);
	stream_good_frames(&good, 3);
	stream_close_wait(&good, &h);
	capture_verify_stream(&h, &good);
	CHECK_EQ_U64(capture_count(&h), 1); /* no stranger left a file */
	stream_free(&good);
	free(frame[0]);
	free(frame[1]);
	/* each stranger ended with its one line, or was counted in the
	 * strangers' line (none other is a stranger) */
	CHECK_EQ_U64(coll_stop(&h, SIGTERM), 0);
	CHECK_EQ_U64(strangers_logged(&h, "orbit-collector: 127.0.0.2:", 'a'), N);
	CHECK(strangers_logged(&h, "the first frame is over 65536 bytes", 'o') > 0);
	coll_cleanup(&h);
}

/* Keeps n stranger connections from 127.0.0.2 open, reconnecting at most
 * `burst` of those the collector closed; returns the reconnections. */
static int strangers_hold(const struct coll *h, int *fd, int n, int burst)
{
	static const uint8_t partial[] = {0x28, 0xB5, 0x2F, 0xFD, 0xE4};
	int again = 0;

	for (int i = 0; i < n; i++) {
		if (fd[i] >= 0) {
			struct pollfd p = {fd[i], POLLIN, 0};
			char b[64];
			if (poll(&p, 1, 0) <= 0 || recv(fd[i], b, sizeof b, MSG_DONTWAIT) > 0)
				continue;
			close(fd[i]); /* closed by the collector */
			fd[i] = -1;
		}
		if (again == burst)
			continue;
		fd[i] = client_connect_from(h, "127.0.0.2");
		CHECK(fd[i] >= 0);
		if (i % 2) /* half of them begin a frame */
			(void)send_all(fd[i], partial, sizeof partial);
		again++;
	}
	return again;
}

/*
 * A real traced process (examples/emit with ORBIT_COLLECTOR and ORBIT_TOKEN)
 * gets a slot and a complete capture while strangers hold every pending
 * slot (256, the default --max-pending) and 44 more reconnect as soon as
 * they are closed, so that the pool is always full and churning.
 */
static void case_strangers_agent(void)
{
	enum { N = 300 };
	struct coll h;
	char tokfile[256], addr[64], path[512], cmd[1200];
	int fd[N];

	if (tool_emit == NULL || tool_dump == NULL)
		SKIP("needs examples/emit and tests/capture_dump");
	if (!harness_second_address())
		SKIP("127.0.0.2 cannot be bound: no second peer address");
	if (harness_files(N + 16) < N + 16)
		SKIP("ulimit -n cannot be raised to hold %d connections", N);
	token_setup(&h, tokfile, sizeof tokfile);
	const char *const args[] = {"--token-file", tokfile, NULL};
	coll_start(&h, exe, NULL, args);
	for (int i = 0; i < N; i++)
		fd[i] = -1;
	strangers_hold(&h, fd, N, N);
	snprintf(addr, sizeof addr, "127.0.0.1:%d", h.port);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		setenv("ORBIT_COLLECTOR", addr, 1);
		setenv("ORBIT_TOKEN", "s3cret-token", 1);
		setenv("ORBIT_RING_BUDGET", "64M", 1);
		execl(tool_emit, tool_emit, "--threads", "2", "--iterations", "40000", "--rate",
		      "200000", (char *)NULL);
		_exit(127);
	}
	int status, again = 0;
	uint64_t deadline = harness_now_ms() + 6 * HARNESS_WAIT_MS;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		CHECK(harness_now_ms() < deadline);
		again += strangers_hold(&h, fd, N, 16);
		usleep(10000); /* pace of the reconnecting strangers */
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	fprintf(stderr, "the strangers reconnected %d times while emit ran\n", again);
	snprintf(cmd, sizeof cmd, ":%d: disconnected", h.port); /* any agent */
	coll_expect_log(&h, "end of stream");
	CHECK_EQ_U64(capture_find(&h, "emit", (uint32_t)pid, path, sizeof path), 1);
	snprintf(cmd, sizeof cmd, "'%s' --emit 2 40000 '%s' >/dev/null", tool_dump, path);
	CHECK(system(cmd) == 0);
	CHECK_EQ_U64(capture_count(&h), 1);
	for (int i = 0; i < N; i++)
		if (fd[i] >= 0)
			close(fd[i]);
	finish(&h);
}

/* The pool evicts the oldest connection of the busiest address. */
static void case_pending_pool(void)
{
	const char *const args[] = {"--max-pending", "4", NULL};
	struct coll h;
	struct stream agent;
	int a[8], port[8];

	if (!harness_second_address())
		SKIP("127.0.0.2 cannot be bound: no second peer address");
	start(&h, args);
	for (int i = 0; i < 4; i++) {
		a[i] = client_connect_from(&h, "127.0.0.2");
		port[i] = client_local_port(a[i]);
	}
	stream_init(&agent, "agent", 5);
	agent.fd = client_connect(&h);
	agent.local_port = client_local_port(agent.fd);
	/* the pool was full: the oldest of 127.0.0.2 made room */
	CHECK_EQ_U64(wait_closed(a[0], HARNESS_WAIT_MS), 1);
	coll_expect_log(&h, needle("127.0.0.2:%d: refused: %s", port[0],
	                           "4 connections without a handshake (--max-pending)"));
	for (int i = 4; i < 8; i++) {
		a[i] = client_connect_from(&h, "127.0.0.2");
		port[i] = client_local_port(a[i]);
		CHECK_EQ_U64(wait_closed(a[i - 3], HARNESS_WAIT_MS), 1);
	}
	/* never the agent, from the other address */
	struct pollfd p = {agent.fd, POLLIN, 0};
	CHECK_EQ_U64(poll(&p, 1, 100), 0);
	stream_handshake(&agent, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&agent);
	stream_good_frames(&agent, 3);
	stream_close_wait(&agent, &h);
	capture_verify_stream(&h, &agent);
	for (int i = 0; i < 8; i++)
		close(a[i]);
	stream_free(&agent);
	finish(&h);
}

/* A flood of connections that send nothing, from 200 addresses, in one
 * accept burst with an agent's (the collector stopped while they connect):
 * the agent's Handshake waits unread in its socket, and it is never the
 * one evicted, although it is the oldest of an address with as many
 * pending connections as any. */
static void case_flood_burst(void)
{
	const char *const args[] = {"--max-pending", "8", NULL};
	enum { FLOOD = 200 };
	struct coll h;
	struct stream agent;
	int f[FLOOD];

	if (!harness_second_address())
		SKIP("127.0.0.2 cannot be bound: no second peer address");
	if (harness_files(FLOOD + 64) < FLOOD + 64)
		SKIP("not enough file descriptors for the flood");
	start(&h, args);
	CHECK(kill(h.pid, SIGSTOP) == 0);
	stream_init(&agent, "burst", 6);
	agent.fd = client_connect_from(&h, "127.0.0.2");
	agent.local_port = client_local_port(agent.fd);
	stream_handshake(&agent, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&agent);
	for (int i = 0; i < FLOOD; i++) {
		char from[32];
		snprintf(from, sizeof from, "127.0.%d.%d", 1 + i / 250, 1 + i % 250);
		f[i] = client_connect_from(&h, from);
	}
	CHECK(kill(h.pid, SIGCONT) == 0);
	/* the flood's last connection made room too: the burst was taken */
	char last[96];
	snprintf(last, sizeof last,
	         "8 connections without a handshake (--max-pending): made room for 127.0.%d.%d:",
	         1 + (FLOOD - 1) / 250, 1 + (FLOOD - 1) % 250);
	coll_expect_log(&h, last);
	stream_good_frames(&agent, 3);
	stream_close_wait(&agent, &h);
	capture_verify_stream(&h, &agent);
	for (int i = 0; i < FLOOD; i++)
		close(f[i]);
	stream_free(&agent);
	finish(&h);
}

/* ---- a connect flood beside real agents ---- */

/*
 * The flooder: nonblocking connects from 127.0.{1..4}.{1..250} (each
 * socket bound to its source address before connect), at most FLOOD_RATE a
 * second, holding the newest FLOOD_HOLD open and closing the oldest (a
 * plain close: a FIN once connected). It never sends a byte.
 */
enum { FLOOD_HOLD = 900, FLOOD_RATE = 60000, FLOOD_MS = 12000 };

struct flooder {
	int port;
	_Atomic int stop;
	uint64_t connects, refused, ms; /* its results, read after the join */
};

static void *flooder_main(void *arg)
{
	struct flooder *f = arg;
	static int held[FLOOD_HOLD];
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
	uint64_t start = test_now_ns(CLOCK_MONOTONIC), n = 0;
	unsigned at = 0, from = 0;
	int one = 1;

	inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
	for (int i = 0; i < FLOOD_HOLD; i++)
		held[i] = -1;
	while (!atomic_load_explicit(&f->stop, memory_order_relaxed)) {
		if (n % 64 == 0) { /* at most FLOOD_RATE a second */
			uint64_t due = start + n * 1000000000ull / FLOOD_RATE;
			uint64_t now = test_now_ns(CLOCK_MONOTONIC);
			if (due > now + 200000)
				usleep((useconds_t)((due - now) / 1000));
		}
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		if (fd < 0) {
			f->refused++;
			usleep(1000); /* out of descriptors or memory: let closes land */
			continue;
		}
		struct sockaddr_in a = {.sin_family = AF_INET};
		a.sin_addr.s_addr = htonl(0x7f000000u | (1u + from / 250) << 8 | (1u + from % 250));
		from = (from + 1) % 1000;
		/* the port is picked at connect, by the whole 4-tuple */
		setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
		    (connect(fd, (struct sockaddr *)&to, sizeof to) != 0 && errno != EINPROGRESS)) {
			f->refused++;
			close(fd);
			continue;
		}
		if (held[at] >= 0)
			close(held[at]);
		held[at] = fd;
		at = (at + 1) % FLOOD_HOLD;
		n++;
	}
	for (int i = 0; i < FLOOD_HOLD; i++)
		if (held[i] >= 0)
			close(held[i]);
	f->connects = n;
	f->ms = (test_now_ns(CLOCK_MONOTONIC) - start) / 1000000;
	return NULL;
}

/* A TcpExt counter of /proc/net/netstat; -1 when it is not there. */
static long long netstat_value(const char *name)
{
	static char text[16384];
	FILE *f = fopen("/proc/net/netstat", "r");
	size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
	long long v = -1;

	if (f)
		fclose(f);
	text[len] = '\0';
	char *names = strstr(text, "TcpExt: "), *values = names ? strchr(names, '\n') : NULL;
	if (values == NULL || strncmp(values + 1, "TcpExt: ", 8) != 0)
		return -1;
	*values++ = '\0';
	int index = 0, want = -1;
	for (char *p = names + 8, *save = NULL, *t; (t = strtok_r(p, " \n", &save)); p = NULL)
		if (strcmp(t, name) == 0)
			want = index;
		else
			index++;
	for (char *p = values + 8, *save = NULL, *t;
	     want >= 0 && (t = strtok_r(p, " \n", &save)) != NULL; p = NULL)
		if (want-- == 0)
			v = atoll(t);
	return v;
}

/* The collector's CPU time so far, ms (user + system). */
static long coll_cpu_ms(const struct coll *h)
{
	char path[64], text[1024];
	unsigned long ut = 0, st = 0;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)h->pid);
	FILE *f = fopen(path, "r");
	size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f)
		fclose(f);
	text[len] = '\0';
	const char *p = strrchr(text, ')'); /* the name may hold spaces */
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return -1;
	return (long)((ut + st) * 1000 / (unsigned long)sysconf(_SC_CLK_TCK));
}

static const char *const flood_counters[] = {"ListenOverflows",      "ListenDrops",
                                             "TCPDeferAcceptDrop",   "SyncookiesSent",
                                             "TCPReqQFullDoCookies", "TCPReqQFullDrop"};
#define FLOOD_COUNTERS (sizeof flood_counters / sizeof flood_counters[0])

/*
 * A connect flood from 1000 addresses (the flooder above, FLOOD_MS) while
 * five token-carrying agents (examples/emit with ORBIT_COLLECTOR and
 * ORBIT_TOKEN, 2 threads, 20000 iterations in about 2 s each) start one
 * after another during it: every agent's capture is complete, one capture
 * each, nothing lost (delivered == emitted, the loss equation exact), and
 * each agent said nothing about its connection.
 */
static void case_flood_agents(void)
{
	enum { AGENTS = 5, ITER = 20000, STAGGER_MS = 2000 };
	struct coll h;
	struct flooder f = {0};
	char tokfile[256], addr[64], path[512], cmd[1600], errpath[AGENTS][300];
	pid_t agent[AGENTS];
	long long before[FLOOD_COUNTERS];
	pthread_t thread;

	if (tool_emit == NULL || tool_dump == NULL)
		SKIP("needs examples/emit and tests/capture_dump");
	if (!harness_second_address())
		SKIP("127.0.0.2 cannot be bound: no second peer address");
	if (harness_files(2 * FLOOD_HOLD + 256) < 2 * FLOOD_HOLD + 256)
		SKIP("not enough file descriptors for the flood");
	token_setup(&h, tokfile, sizeof tokfile);
	const char *const args[] = {"--token-file", tokfile, NULL};
	coll_start(&h, exe, NULL, args);
	snprintf(addr, sizeof addr, "127.0.0.1:%d", h.port);
	for (size_t i = 0; i < FLOOD_COUNTERS; i++)
		before[i] = netstat_value(flood_counters[i]);
	long cpu0 = coll_cpu_ms(&h);
	f.port = h.port;
	CHECK(pthread_create(&thread, NULL, flooder_main, &f) == 0);
	uint64_t t0 = harness_now_ms();
	for (int i = 0; i < AGENTS; i++) {
		while (harness_now_ms() < t0 + 500 + (uint64_t)i * STAGGER_MS)
			usleep(10000); /* the agents' schedule */
		snprintf(errpath[i], sizeof errpath[i], "%s/agent%d.err", h.root, i);
		agent[i] = fork();
		CHECK(agent[i] >= 0);
		if (agent[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			int fd = open(errpath[i], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
			if (fd >= 0)
				dup2(fd, STDERR_FILENO);
			setenv("ORBIT_COLLECTOR", addr, 1);
			setenv("ORBIT_TOKEN", "s3cret-token", 1);
			setenv("ORBIT_RING_BUDGET", "64M", 1);
			execl(tool_emit, tool_emit, "--threads", "2", "--iterations", "20000",
			      "--rate", "50000", (char *)NULL);
			_exit(127);
		}
	}
	while (harness_now_ms() < t0 + FLOOD_MS)
		usleep(10000);
	atomic_store_explicit(&f.stop, 1, memory_order_relaxed);
	CHECK(pthread_join(thread, NULL) == 0);
	long cpu = coll_cpu_ms(&h) - cpu0;
	long long delta[FLOOD_COUNTERS];
	for (size_t i = 0; i < FLOOD_COUNTERS; i++)
		delta[i] = before[i] < 0 ? -1 : netstat_value(flood_counters[i]) - before[i];
	fprintf(stderr,
	        "flood: %" PRIu64 " connections in %" PRIu64 " ms (%.0f/s; %" PRIu64
	        " not made); collector CPU %ld ms (%.0f%% of one core)\n",
	        f.connects, f.ms, f.ms ? (double)f.connects * 1000.0 / (double)f.ms : 0.0,
	        f.refused, cpu, f.ms ? 100.0 * (double)cpu / (double)f.ms : 0.0);
	fprintf(stderr, "netstat during the flood:");
	for (size_t i = 0; i < FLOOD_COUNTERS; i++)
		fprintf(stderr, " %s %lld", flood_counters[i], delta[i]);
	fprintf(stderr, "\n");

	int complete = 0;
	uint64_t deadline = harness_now_ms() + 3 * HARNESS_WAIT_MS;
	for (int i = 0; i < AGENTS; i++) {
		int status = -1, ok = 0;
		while (waitpid(agent[i], &status, WNOHANG) == 0 && harness_now_ms() < deadline)
			usleep(10000); /* waitpid has no timeout */
		if (harness_now_ms() >= deadline) {
			kill(agent[i], SIGKILL);
			waitpid(agent[i], &status, 0);
		}
		size_t elen = 0;
		char *err = test_read_file(errpath[i], &elen);
		int files = capture_find(&h, "emit", (uint32_t)agent[i], path, sizeof path);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && files == 1) {
			snprintf(cmd, sizeof cmd, "'%s' --emit 2 %d '%s' 2>&1", tool_dump, ITER,
			         path);
			FILE *p = popen(cmd, "r");
			char line[512];
			while (p != NULL && fgets(line, sizeof line, p) != NULL)
				if (strncmp(line, "emit check: ", 12) == 0 &&
				    strstr(line, " records delivered, 0 lost; ") != NULL &&
				    strstr(line, " log lines, 0 lost") != NULL)
					ok = 1;
			ok &= p != NULL && pclose(p) == 0;
		}
		fprintf(
		    stderr, "agent %d (pid %d, started at %d ms): exit %d, %d capture%s, %s%s%s\n",
		    i, (int)agent[i], 500 + i * STAGGER_MS,
		    WIFEXITED(status) ? WEXITSTATUS(status) : -1, files, files == 1 ? "" : "s",
		    ok ? "complete" : "NOT complete", elen ? "; it said: " : "", elen ? err : "");
		complete += ok;
		free(err);
	}
	fprintf(stderr, "agents delivered: %d of %d\n", complete, AGENTS);
	if (complete != AGENTS)
		coll_dump_log(&h);
	CHECK_EQ_U64(complete, AGENTS);
	CHECK_EQ_U64(capture_count(&h), AGENTS);
	finish(&h);
}

/* The first frame is a small Handshake: over ORBIT_HANDSHAKE_FRAME_MAX,
 * compressed or not, it is closed before any larger buffer is given. */
static void attack_big_handshake(struct coll *h)
{
	struct attacker a;
	struct stream s;
	static char name[70000];
	Orbit__Handshake hs = ORBIT__HANDSHAKE__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;

	memset(name, 'n', sizeof name - 1);
	hs.protocol_version = ORBIT_PROTOCOL_VERSION;
	hs.process_name = name; /* compresses well: its content is the problem */
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = &hs;
	stream_init(&s, "bighandshake", 0);
	stream_add(&s, &p);
	stream_flush(&s);
	CHECK(s.len < ORBIT_HANDSHAKE_FRAME_MAX);
	attacker_open(&a, h, "bighandshake", 0, 0);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "the first frame is over 65536 bytes");
	stream_free(&s);
}

/* An Ack packet is the collector's: an agent that sends one is closed. */
static void attack_agent_ack(struct coll *h)
{
	struct attacker a;
	struct stream s;
	Orbit__Ack k = ORBIT__ACK__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;

	k.frames = 1;
	k.end = ORBIT_ACK_CAPTURE_CAP;
	p.body_case = ORBIT__PACKET__BODY_ACK;
	p.ack = &k;
	stream_init(&s, "x", 1);
	stream_add_thread(&s, 1, "fine");
	stream_add(&s, &p);
	stream_flush(&s);
	attacker_open(&a, h, "agentack", 1, 2);
	attacker_send(&a, s.bytes, s.len);
	attacker_expect(&a, h, "packet 1: an acknowledgement from an agent");
	stream_free(&s);
}

/* ---- acknowledgements ---- */

static void ack_check_file(struct coll *h, const struct stream *s, const struct ack_reader *a)
{
	char path[512];
	struct stat st;

	CHECK_EQ_U64(capture_find(h, s->name, s->pid, path, sizeof path), 1);
	CHECK(stat(path, &st) == 0);
	CHECK(a->frames >= 1 && a->frames <= s->frames);
	CHECK_EQ_U64(a->bytes, s->frame_end[a->frames - 1]); /* bytes of those frames */
	CHECK((uint64_t)st.st_size >= a->bytes);             /* and they are in the file */
}

static void acks_open(struct stream *s, struct coll *h, const char *name, uint32_t pid)
{
	stream_open(s, h, name, pid);
	s->acks = 1;
	stream_handshake(s, ORBIT_PROTOCOL_VERSION, token_for_good);
	stream_flush(s);
}

/* Acks arrive, say exactly which frames are in the file, come at a low rate,
 * catch up with fdatasync, and the last one follows the agent's end. */
static void case_acks(void)
{
	struct coll h;
	struct stream s;
	struct ack_reader a = {0};
	uint64_t t0 = harness_now_ms();

	start(&h, NULL);
	acks_open(&s, &h, "acked", 31);
	CHECK(ack_next(s.fd, &a, HARNESS_WAIT_MS) == 1); /* at once: accepted */
	CHECK_EQ_U64(a.frames, 1);
	ack_check_file(&h, &s, &a);
	for (int round = 0; round < 6; round++) {
		stream_good_frames(&s, 5);
		CHECK(ack_wait_frames(s.fd, &a, s.frames, HARNESS_WAIT_MS));
		CHECK_EQ_U64(a.frames, s.frames);
		ack_check_file(&h, &s, &a);
		usleep(100000); /* a stream that takes a while */
	}
	while (a.synced < a.frames) /* fdatasync catches up */
		CHECK(ack_next(s.fd, &a, HARNESS_WAIT_MS) == 1);
	stream_add_end(&s);
	stream_flush(&s);
	while (a.frames < s.frames || a.synced < s.frames) /* at once after EndOfStream */
		CHECK(ack_next(s.fd, &a, HARNESS_WAIT_MS) == 1);
	CHECK_EQ_U64(a.end, ORBIT_ACK_GOES_ON);
	shutdown(s.fd, SHUT_WR); /* the agent's end: then the last Ack */
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_PEER_ENDED);
	CHECK_EQ_U64(a.frames, s.frames);
	CHECK_EQ_U64(a.synced, s.frames);
	CHECK_EQ_U64(a.bytes, s.len);
	CHECK_EQ_U64(ack_next(s.fd, &a, HARNESS_WAIT_MS), -1); /* and the collector closes */
	uint64_t ms = harness_now_ms() - t0;
	fprintf(stderr, "%u acks for %zu frames in %" PRIu64 " ms\n", a.count, s.frames, ms);
	/* format.md 7.2: one per 250 ms, one per sync (1 s), the first, the
	 * forced ones around EndOfStream, the last */
	CHECK(a.count <= 8 + ms / 250 + ms / 1000);
	CHECK(a.count < s.frames); /* fewer than one per frame */
	coll_expect_log(&h, needle(":%d: disconnected%s", s.local_port, ""));
	capture_verify_stream(&h, &s);
	ack_reader_free(&a);
	stream_free(&s);
	finish(&h);
}

/* A bad frame: the last Ack counts the good frames before it. */
static void case_acks_bad_frame(void)
{
	struct coll h;
	struct stream s;
	struct ack_reader a = {0};
	uint8_t content[2000], frame[4096];
	size_t n = packets_content(content, sizeof content);
	size_t len = zstd_frame(frame, sizeof frame, content, n, 1, 1);

	frame[len - 1] ^= 0x40;
	start(&h, NULL);
	acks_open(&s, &h, "badframe", 32);
	stream_good_frames(&s, 4);
	(void)send_all(s.fd, frame, len);
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_BAD_FRAME);
	CHECK_EQ_U64(a.frames, s.frames);
	CHECK_EQ_U64(a.synced, s.frames);
	CHECK_EQ_U64(ack_next(s.fd, &a, HARNESS_WAIT_MS), -1);
	coll_expect_log(&h, "frame data damaged");
	capture_verify_stream(&h, &s);
	ack_reader_free(&a);
	stream_free(&s);
	finish(&h);
}

/* SIGTERM: the last Ack says the collector stopped, and how much it kept;
 * the frame in mid-air is not counted. */
static void case_acks_stop(void)
{
	struct coll h;
	struct stream s, more;
	struct ack_reader a = {0};

	start(&h, NULL);
	acks_open(&s, &h, "stopped", 33);
	stream_good_frames(&s, 6);
	CHECK(ack_wait_frames(s.fd, &a, s.frames, HARNESS_WAIT_MS));
	stream_init(&more, "x", 1);
	stream_good_frames(&more, 1);
	CHECK(send_all(s.fd, more.bytes, more.len / 2) == 0);
	kill(h.pid, SIGTERM);
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_STOPPING);
	CHECK_EQ_U64(a.frames, s.frames);
	CHECK_EQ_U64(a.synced, s.frames);
	close(s.fd);
	s.fd = -1;
	CHECK_EQ_U64(coll_wait(&h, SIGTERM), 0);
	capture_verify_stream(&h, &s);
	ack_reader_free(&a);
	stream_free(&s);
	stream_free(&more);
	coll_cleanup(&h);
}

/* The collector's own last frame: one Ack packet that says where and why
 * the stream was cut; everything before it is the stream as received. */
static void capture_verify_cut(const char *path, const struct stream *s, size_t frames,
                               uint32_t end)
{
	size_t want = s->frame_end[frames - 1], got = 0;
	struct stat st;
	int err = 0;
	struct orbit_capture_reader *r;
	Orbit__Packet *p;
	struct orbit_capture_problem problem;

	CHECK(stat(path, &st) == 0 && (uint64_t)st.st_size > want);
	CHECK((uint64_t)st.st_size - want <= ORBIT_ACK_FRAME_MAX);
	CHECK(zstd_test(path) != 1);
	r = orbit__capture_open(path, &err);
	CHECK(r != NULL);
	while ((err = orbit__capture_next(r, &p, &problem)) == 1) {
		if (got < s->frame_packets[frames - 1]) {
			size_t n = orbit__packet__get_packed_size(p);
			CHECK_EQ_U64(n, s->packet_len[got]);
		} else {
			CHECK_EQ_U64(got, s->frame_packets[frames - 1]); /* one packet after */
			CHECK(p->body_case == ORBIT__PACKET__BODY_ACK);
			CHECK_EQ_U64(p->ack->frames, frames);
			CHECK_EQ_U64(p->ack->bytes, want);
			CHECK_EQ_U64(p->ack->synced_frames, frames);
			CHECK_EQ_U64(p->ack->end, end);
		}
		orbit__packet__free_unpacked(p, NULL);
		got++;
	}
	CHECK_EQ_U64(err, 0);
	CHECK_EQ_U64(got, s->frame_packets[frames - 1] + 1);
	orbit__capture_close(r);
	/* byte for byte before the cut */
	FILE *f = fopen(path, "rb");
	uint8_t *b = malloc(want);
	CHECK(f != NULL && b != NULL && fread(b, 1, want, f) == want);
	CHECK(memcmp(b, s->bytes, want) == 0);
	fclose(f);
	free(b);
}

/* Streams frames of random bytes until the collector stops taking them. */
static void stream_until_closed(struct stream *s, int frames)
{
	for (int i = 0; i < frames; i++) {
		int fd = s->fd;
		s->fd = -1; /* built and recorded, sent below, errors allowed */
		stream_add_page(s, 30000, 1);
		stream_flush(s);
		s->fd = fd;
		(void)send_all(fd, s->bytes + s->frame_end[s->frames - 2],
		               s->frame_end[s->frames - 1] - s->frame_end[s->frames - 2]);
	}
}

/* --max-capture-size: the stream stops at its size with one line; the file
 * is a valid capture that ends with the collector's Ack; with or without
 * acknowledgements. */
static void case_capture_cap(void)
{
	const char *const args[] = {"--max-capture-size", "256K", NULL};
	struct coll h;
	struct stream s, quiet;
	struct ack_reader a = {0};
	char path[512];

	start(&h, args);
	acks_open(&s, &h, "capped", 34);
	stream_until_closed(&s, 20);
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_CAPTURE_CAP);
	CHECK(a.frames > 1 && a.frames < s.frames);
	CHECK_EQ_U64(a.synced, a.frames);
	CHECK(s.frame_end[a.frames] + ORBIT_ACK_FRAME_MAX > 256 * 1024); /* all that fitted */
	CHECK_EQ_U64(capture_find(&h, "capped", 34, path, sizeof path), 1);
	capture_verify_cut(path, &s, a.frames, ORBIT_ACK_CAPTURE_CAP);
	struct stat st;
	CHECK(stat(path, &st) == 0 && st.st_size <= 256 * 1024);
	coll_expect_log(&h, needle(":%d: closed (%s", s.local_port, "capture size cap"));
	coll_expect_log(&h, "cut (the file ends with the collector's Ack)");
	if (tool_replay != NULL) { /* orbit-replay says why the capture is incomplete */
		char cmd[1400];
		struct coll r = h; /* its log: what orbit-replay said */
		snprintf(r.log, sizeof r.log, "%s/replay.err", h.root);
		snprintf(cmd, sizeof cmd, "'%s' '%s' >/dev/null 2>'%s'", tool_replay, path, r.log);
		int rc = system(cmd);
		CHECK(WIFEXITED(rc) && WEXITSTATUS(rc) == 2);
		CHECK_EQ_U64(coll_log_count(&r, "cut by the collector at its --max-capture-size"),
		             1);
	}

	stream_open(&quiet, &h, "cappedquiet", 35); /* no acknowledgements asked */
	stream_handshake(&quiet, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&quiet);
	stream_until_closed(&quiet, 20);
	CHECK_EQ_U64(wait_closed(quiet.fd, HARNESS_WAIT_MS), 1);
	coll_expect_log(&h, needle(":%d: closed (%s", quiet.local_port, "capture size cap"));
	CHECK_EQ_U64(capture_find(&h, "cappedquiet", 35, path, sizeof path), 1);
	size_t frames = 0;
	CHECK(stat(path, &st) == 0);
	while (frames < quiet.frames && quiet.frame_end[frames] < (size_t)st.st_size)
		frames++;
	capture_verify_cut(path, &quiet, frames, ORBIT_ACK_CAPTURE_CAP);
	CHECK_EQ_U64(coll_log_count(&h, "capture size cap"), 2);
	ack_reader_free(&a);
	stream_free(&s);
	stream_free(&quiet);
	finish(&h);
}

/* --max-dir-size: the captures there count; a stream is cut at the cap, a
 * new one refused with its line while the directory is full, and accepted
 * once old captures are deleted. */
static void case_dir_cap(void)
{
	const char *const args[] = {"--max-dir-size", "400K", NULL};
	struct coll h;
	struct stream s, late;
	struct ack_reader a = {0};
	char old[512], other[512], path[512];
	uint8_t zeros[4096] = {0};

	harness_root(&h);
	CHECK(mkdir(h.dir, 0755) == 0);
	snprintf(old, sizeof old, "%s/old-1-20200101T000000Z.orbit.zst", h.dir);
	snprintf(other, sizeof other, "%s/notes.txt", h.dir); /* not a capture */
	FILE *f = fopen(old, "w"), *g = fopen(other, "w");
	CHECK(f != NULL && g != NULL);
	for (int i = 0; i < 50; i++) /* 200 KiB */
		CHECK(fwrite(zeros, 1, sizeof zeros, f) == sizeof zeros);
	for (int i = 0; i < 256; i++) /* 1 MiB */
		CHECK(fwrite(zeros, 1, sizeof zeros, g) == sizeof zeros);
	fclose(f);
	fclose(g);
	coll_start(&h, exe, NULL, args);
	coll_expect_log(&h, "400.0 KiB in all; 200.0 KiB there now");
	acks_open(&s, &h, "dirfull", 36);
	stream_until_closed(&s, 20);
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_DIR_CAP);
	CHECK_EQ_U64(capture_find(&h, "dirfull", 36, path, sizeof path), 1);
	capture_verify_cut(path, &s, a.frames, ORBIT_ACK_DIR_CAP);
	struct stat st;
	CHECK(stat(path, &st) == 0 && st.st_size + 200 * 1024 <= 400 * 1024);
	coll_expect_log(&h, "directory size cap");
	/* full: a new stream is told why */
	stream_open(&late, &h, "late", 37);
	stream_handshake(&late, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&late);
	if (wait_closed(late.fd, HARNESS_WAIT_MS) != 2) {
		coll_dump_log(&h);
		exit(1);
	}
	coll_expect_log(&h, needle(":%d: refused: %s", late.local_port,
	                           "the capture directory is full (--max-dir-size 400.0 KiB)"));
	stream_free(&late);
	/* room again once the old capture is gone (measured again, at most
	 * every 2 s) */
	CHECK(unlink(old) == 0);
	for (uint64_t end = harness_now_ms() + HARNESS_WAIT_MS;;) {
		CHECK(harness_now_ms() < end);
		stream_open(&late, &h, "late", 38);
		stream_handshake(&late, ORBIT_PROTOCOL_VERSION, NULL);
		stream_flush(&late);
		struct pollfd p = {late.fd, POLLIN, 0};
		if (poll(&p, 1, 300) == 0)
			break; /* not refused */
		CHECK_EQ_U64(wait_closed(late.fd, HARNESS_WAIT_MS), 2);
		stream_free(&late);
		usleep(200000); /* the collector measures again at most every 2 s */
	}
	stream_good_frames(&late, 2);
	stream_close_wait(&late, &h);
	capture_verify_stream(&h, &late);
	ack_reader_free(&a);
	stream_free(&s);
	stream_free(&late);
	finish(&h);
}

/* ---- through tests/tools/tcp_proxy ---- */

static void need_proxy(void)
{
	if (tool_proxy == NULL)
		SKIP("needs tests/tools/tcp_proxy");
}

/* A throttled link: acks still arrive, exact; the capture is complete. */
static void case_proxy_throttle(void)
{
	const char *const pargs[] = {"--rate", "400000", NULL};
	struct coll h;
	struct proxy px;
	struct stream s;
	struct ack_reader a = {0};

	need_proxy();
	start(&h, NULL);
	proxy_start(&px, tool_proxy, &h, pargs);
	acks_open(&s, &px.via, "throttled", 40);
	uint64_t t0 = harness_now_ms();
	for (int i = 0; i < 30; i++) {
		stream_add_page(&s, 20000, 1);
		stream_flush(&s);
	}
	stream_add_end(&s);
	stream_flush(&s);
	CHECK(ack_wait_frames(s.fd, &a, s.frames, 3 * HARNESS_WAIT_MS));
	uint64_t ms = harness_now_ms() - t0;
	ack_check_file(&h, &s, &a);
	shutdown(s.fd, SHUT_WR);
	CHECK(ack_wait_last(s.fd, &a, HARNESS_WAIT_MS));
	CHECK_EQ_U64(a.end, ORBIT_ACK_PEER_ENDED);
	CHECK_EQ_U64(a.frames, s.frames);
	CHECK_EQ_U64(a.bytes, s.len);
	fprintf(stderr, "%zu bytes through 400 KB/s in %" PRIu64 " ms, %u acks\n", s.len, ms,
	        a.count);
	CHECK(ms * 400 >= s.len * 9 / 10); /* the proxy did throttle */
	close(s.fd);
	s.fd = -1;
	coll_expect_log(&h, "throttled-40-");
	coll_expect_log(&h, "end of stream");
	capture_verify_stream(&h, &s);
	proxy_stop(&px);
	ack_reader_free(&a);
	stream_free(&s);
	finish(&h);
}

/* The link dies (reset) inside a frame: the file holds exactly the frames
 * before it; no Ack ever said more. */
static void case_proxy_drop(void)
{
	struct coll h;
	struct proxy px;
	struct stream s;
	struct ack_reader a = {0};
	char after[32], path[512];

	need_proxy();
	start(&h, NULL);
	stream_init(&s, "dropped", 41);
	s.acks = 1;
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	stream_good_frames(&s, 10);
	snprintf(after, sizeof after, "%zu", s.frame_end[6] + 100);
	const char *const pargs[] = {"--drop-after", after, NULL};
	proxy_start(&px, tool_proxy, &h, pargs);
	int fd = client_connect(&px.via);
	(void)send_all(fd, s.bytes, s.len);
	while (ack_next(fd, &a, HARNESS_WAIT_MS) == 1)
		CHECK(a.frames <= 7);
	coll_expect_log(&h, needle("inside a frame at stream byte %d%s", (int)s.frame_end[6], ""));
	CHECK_EQ_U64(capture_find(&h, "dropped", 41, path, sizeof path), 1);
	capture_verify(path, &s, 7);
	close(fd);
	proxy_stop(&px);
	ack_reader_free(&a);
	stream_free(&s);
	finish(&h);
}

/* The link stops forwarding inside a frame: the frame timeout ends the
 * stream, the file holds the frames before it. */
static void case_proxy_blackhole(void)
{
	const char *const args[] = {"--frame-timeout-ms", "700", NULL};
	struct coll h;
	struct proxy px;
	struct stream s;
	char after[32], path[512];

	need_proxy();
	start(&h, args);
	stream_init(&s, "blackholed", 42);
	s.acks = 1;
	stream_handshake(&s, ORBIT_PROTOCOL_VERSION, NULL);
	stream_flush(&s);
	stream_good_frames(&s, 8);
	snprintf(after, sizeof after, "%zu", s.frame_end[3] + 50);
	const char *const pargs[] = {"--blackhole-after", after, NULL};
	proxy_start(&px, tool_proxy, &h, pargs);
	int fd = client_connect(&px.via);
	CHECK(send_all(fd, s.bytes, s.len) == 0);
	coll_expect_log(&h, "incomplete after 700 ms");
	CHECK_EQ_U64(capture_find(&h, "blackholed", 42, path, sizeof path), 1);
	capture_verify(path, &s, 4);
	close(fd);
	proxy_stop(&px);
	stream_free(&s);
	finish(&h);
}

/* The hostile peers: each attacks a collector that a good client streams to
 * at the same time (hostile()). */
static const struct attack_case {
	const char *name;
	void (*attack)(struct coll *h);
} attacks[] = {
    {"random", attack_random},
    {"big_content", attack_big_content},
    {"big_compressed", attack_big_compressed},
    {"truncated", attack_truncated},
    {"past_size", attack_past_size},
    {"checksum", attack_checksum},
    {"no_checksum", attack_no_checksum},
    {"no_size", attack_no_size},
    {"bad_packet", attack_bad_packet},
    {"version", attack_version},
    {"batch", attack_batch},
    {"kernel_bad", attack_kernel},
    {"not_handshake", attack_not_handshake},
    {"two_in_handshake", attack_two_in_handshake},
    {"second_handshake", attack_second_handshake},
    {"bomb", attack_bomb},
    {"empty", attack_empty},
    {"big_handshake", attack_big_handshake},
    {"agent_ack", attack_agent_ack},
};

static void run_attack(const void *entry)
{
	hostile(NULL, ((const struct attack_case *)entry)->attack);
}

static void case_sigterm(void)
{
	case_signal(SIGTERM);
}

static void case_sigint(void)
{
	case_signal(SIGINT);
}

static void case_token_right(void)
{
	case_token("right");
}

static void case_token_wrong(void)
{
	case_token("wrong");
}

static void case_token_prefix(void)
{
	case_token("prefix");
}

static void case_token_none(void)
{
	case_token("none");
}

static const struct test_case cases[] = {
    {"good", case_good},
    {"kernel", case_kernel},
    {"concurrent", case_concurrent},
    {"names", case_names},
    {"exists", case_exists},
    {"idle", case_idle},
    {"trickle", case_trickle},
    {"idle_timeout", case_idle_timeout},
    {"max_connections", case_max_connections},
    {"sigterm", case_sigterm},
    {"sigint", case_sigint},
    {"signal_burst", case_signal_burst},
    {"disk_full", case_disk_full},
    {"fast", case_fast},
    {"token_right", case_token_right},
    {"token_wrong", case_token_wrong},
    {"token_prefix", case_token_prefix},
    {"token_none", case_token_none},
    {"ipv6", case_ipv6},
    {"hostname", case_hostname},
    {"args", case_args},
    {"status_tty", case_status_tty},
    {"quiet", case_quiet},
    {"strangers", case_strangers},
    {"strangers_agent", case_strangers_agent},
    {"pending_pool", case_pending_pool},
    {"flood_burst", case_flood_burst},
    {"flood_agents", case_flood_agents},
    {"squatters", case_squatters},
    {"squatters_default", case_squatters_default},
    {"acks", case_acks},
    {"acks_bad_frame", case_acks_bad_frame},
    {"acks_stop", case_acks_stop},
    {"capture_cap", case_capture_cap},
    {"dir_cap", case_dir_cap},
    {"proxy_throttle", case_proxy_throttle},
    {"proxy_drop", case_proxy_drop},
    {"proxy_blackhole", case_proxy_blackhole},
};

/* What follows CASE: the collector, then the tools by name. What the
 * command line names must be there: a test of a program that was not
 * built fails, it does not skip. */
static void take_programs(int argc, char **argv)
{
	CHECK(argc >= 1);
	for (int i = 0; i < argc; i++) {
		const char *base = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];
		const char **slot = i == 0                              ? &exe
		                    : strcmp(base, "tcp_proxy") == 0    ? &tool_proxy
		                    : strcmp(base, "emit") == 0         ? &tool_emit
		                    : strcmp(base, "capture_dump") == 0 ? &tool_dump
		                    : strcmp(base, "orbit-replay") == 0 ? &tool_replay
		                                                        : NULL;
		if (slot == NULL) {
			fprintf(stderr, "collector_test: %s is not a tool it uses\n", argv[i]);
			exit(2);
		}
		if (access(argv[i], X_OK) != 0) {
			fprintf(stderr, "collector_test: %s: %s\n", argv[i], strerror(errno));
			exit(1);
		}
		*slot = argv[i];
	}
}

TEST_MAIN_WITH(cases, .family = TEST_FAMILY(attacks, run_attack),
               .args = "COLLECTOR [tcp_proxy|emit|capture_dump|orbit-replay...]",
               .take = take_programs)
