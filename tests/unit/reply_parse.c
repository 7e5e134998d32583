/*
 * reply_parse.c — format/reply.c reads what a collector sends an agent
 * exactly as docs/format.md section 7 says: Ack frames one by one, however
 * they arrive, the refusal line, and nothing else (every other byte stream
 * is refused, and described in a few words for the agent's line).
 */
#include <errno.h>
#include <string.h>

#include "frame.h"
#include "harness.h"
#include "reply.h"
#include "stream_writer.h"

static size_t ack(uint64_t frames, uint64_t bytes, uint64_t synced, uint32_t end, uint8_t *out)
{
	struct orbit_frame_writer w;
	struct orbit_ack a = {frames, bytes, synced, end};
	CHECK(orbit__frame_writer_init(&w, 1) == 0);
	size_t n = orbit__reply_ack_encode(&w, &a, out);
	CHECK(n > 0 && n <= ORBIT_ACK_FRAME_MAX);
	orbit__frame_writer_free(&w);
	return n;
}

/* The stream writer's sink: its frame into the caller's buffer (1024 bytes). */
static size_t kept;
static int keep_frame(void *ctx, const struct orbit__sw_frame *f)
{
	CHECK(f->len <= 1024);
	memcpy(ctx, f->bytes, f->len);
	kept = f->len;
	return 0;
}

static int next(const uint8_t *b, size_t n, size_t *used, struct orbit_ack *a, char *reason)
{
	return orbit__reply_next(b, n, used, a, reason, ORBIT_REPLY_MAX);
}

static void case_replies(void)
{
	uint8_t b[1024];
	char reason[ORBIT_REPLY_MAX], what[80];
	struct orbit_ack a;
	size_t used;

	/* Acks back to back, read one by one, and byte by byte. */
	size_t n1 = ack(1, 812, 0, 0, b);
	size_t n2 = ack(7, 91234, 1, 0, b + n1);
	size_t n3 = ack(9, 120000, 9, ORBIT_ACK_PEER_ENDED, b + n1 + n2);
	CHECK(next(b, n1 + n2 + n3, &used, &a, reason) == ORBIT_REPLY_ACK);
	CHECK(used == n1 && a.frames == 1 && a.bytes == 812 && a.end == 0);
	CHECK(next(b + n1, n2 + n3, &used, &a, reason) == ORBIT_REPLY_ACK);
	CHECK(used == n2 && a.frames == 7 && a.synced_frames == 1);
	CHECK(next(b + n1 + n2, n3, &used, &a, reason) == ORBIT_REPLY_ACK);
	CHECK(used == n3 && a.frames == 9 && a.end == ORBIT_ACK_PEER_ENDED);
	for (size_t k = 0; k < n1; k++)
		CHECK(next(b, k, &used, &a, reason) == ORBIT_REPLY_MORE && used == 0);

	/* Acks the format forbids. */
	size_t n = ack(0, 0, 0, 0, b);
	CHECK(next(b, n, &used, &a, reason) == -EPROTO);
	n = ack(3, 100, 4, 0, b);
	CHECK(next(b, n, &used, &a, reason) == -EPROTO);
	/* A frame that is not an Ack: a stream's handshake. */
	{
		const struct orbit__sw_sink sink = {.ctx = b, .frame = keep_frame};
		struct orbit__sw *w = orbit__sw_new(1, ORBIT_SW_NO_CUT, &sink);
		Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
		h.protocol_version = ORBIT_PROTOCOL_VERSION;
		CHECK(w != NULL && orbit__sw_handshake(w, &h, NULL, 0) == 0 && kept > 0);
		CHECK(next(b, kept, &used, &a, reason) == -EPROTO);
		orbit__sw_free(w);
	}
	/* A damaged Ack. */
	n = ack(2, 10, 0, 0, b);
	b[n - 1] ^= 0xff;
	CHECK(next(b, n, &used, &a, reason) == -EPROTO);
	/* A header announcing 64 MiB of content. */
	static const uint8_t big[] = {0x28, 0xB5, 0x2F, 0xFD, 0xA4, 0x00,
	                              0x00, 0x00, 0x04, 0x01, 0x00, 0x00};
	CHECK(next(big, sizeof big, &used, &a, reason) == -EPROTO);
	/* A frame still unfinished after ORBIT_ACK_FRAME_MAX bytes. */
	memset(b, 0, sizeof b);
	memcpy(b, big, 4);
	b[4] = 0x24; /* checksum, one-byte content size */
	b[5] = 0xff;
	CHECK(next(b, ORBIT_ACK_FRAME_MAX + 10, &used, &a, reason) == -EPROTO);

	/* The refusal line. */
	static const char r1[] = "orbit-collector: rejected: wrong token\nmore";
	CHECK(next((const uint8_t *)r1, sizeof r1 - 1, &used, &a, reason) == ORBIT_REPLY_REFUSAL);
	CHECK(used == strlen("orbit-collector: rejected: wrong token\n"));
	CHECK(strcmp(reason, "wrong token") == 0);
	CHECK(next((const uint8_t *)r1, 20, &used, &a, reason) == ORBIT_REPLY_MORE);
	static const char r2[] = "orbit-collector: rejected: bad \x01\xff\n";
	CHECK(next((const uint8_t *)r2, sizeof r2 - 1, &used, &a, reason) == ORBIT_REPLY_REFUSAL);
	CHECK(strcmp(reason, "bad ??") == 0);
	memset(b, 'x', 300);
	memcpy(b, "orbit-collector: rejected: ", 27);
	CHECK(next(b, 255, &used, &a, reason) == ORBIT_REPLY_MORE);
	CHECK(next(b, 256, &used, &a, reason) == -EPROTO);

	/* Peers that are not collectors, and how their bytes are named. */
	static const char http[] = "HTTP/1.0 400 Bad Request\r\n\r\n";
	CHECK(next((const uint8_t *)http, sizeof http - 1, &used, &a, reason) == -EPROTO);
	orbit__reply_describe((const uint8_t *)http, sizeof http - 1, what, sizeof what);
	CHECK(strcmp(what, "HTTP") == 0);
	static const char ssh[] = "SSH-2.0-OpenSSH_9.2\r\n";
	CHECK(next((const uint8_t *)ssh, sizeof ssh - 1, &used, &a, reason) == -EPROTO);
	orbit__reply_describe((const uint8_t *)ssh, sizeof ssh - 1, what, sizeof what);
	CHECK(strcmp(what, "\"SSH-2.0-OpenSSH_9.2\"") == 0);
	static const uint8_t bin[] = {1, 2, 3, 0xff, 0};
	orbit__reply_describe(bin, sizeof bin, what, sizeof what);
	CHECK(strcmp(what, "5 bytes that are not an Orbit reply") == 0);
	static const char other[] = "orbit-collector: hello\n";
	CHECK(next((const uint8_t *)other, sizeof other - 1, &used, &a, reason) == -EPROTO);
}

static const struct test_case cases[] = {
    {"replies", case_replies},
};

TEST_MAIN(cases)
