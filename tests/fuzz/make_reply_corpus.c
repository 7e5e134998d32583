/*
 * make_reply_corpus.c — writes the seed corpus of reply_fuzz
 * (tests/fuzz/corpus/reply/): what collectors and other peers send an agent.
 * Each file starts with the piece size byte reply_fuzz reads first. Run once
 * from the repository root after building it:
 *
 *   ./build/dev/tests/make_reply_corpus tests/fuzz/corpus/reply
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "reply.h"

static const char *root;

static void put(const char *name, uint8_t piece, const void *p, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", root, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || fputc(piece, f) == EOF || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
}

/* One Ack frame into out; its size. */
static size_t ack(uint64_t frames, uint64_t bytes, uint64_t synced, uint32_t end, uint8_t *out)
{
	struct orbit_frame_writer w;
	struct orbit_ack a = {frames, bytes, synced, end};
	if (orbit__frame_writer_init(&w, 1) != 0)
		exit(1);
	size_t n = orbit__reply_ack_encode(&w, &a, out);
	orbit__frame_writer_free(&w);
	if (n == 0)
		exit(1);
	return n;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_reply_corpus DIR\n");
		return 2;
	}
	root = argv[1];
	uint8_t b[4096];
	size_t n = ack(1, 812, 0, 0, b);
	put("ack_handshake", 63, b, n);
	size_t m = n + ack(7, 91234, 1, 0, b + n);
	m += ack(9, 120000, 9, ORBIT_ACK_PEER_ENDED, b + m);
	put("acks_three", 5, b, m);
	put("acks_bytewise", 0, b, m);
	put("ack_torn", 63, b, n - 3);
	n = ack(0, 0, 0, 0, b);
	put("ack_zero_frames", 63, b, n);
	n = ack(3, 100, 4, 0, b);
	put("ack_synced_over", 63, b, n);
	n = ack(4, 100, 4, ORBIT_ACK_STOPPING, b);
	memcpy(b + n, "garbage after it", 16);
	put("ack_then_garbage", 63, b, n + 16);
	static const char refusal[] = "orbit-collector: rejected: wrong token\n";
	put("refusal", 63, refusal, sizeof refusal - 1);
	static const char refusal_ctl[] = "orbit-collector: rejected: \x01\x7f\xff odd\n";
	put("refusal_control", 7, refusal_ctl, sizeof refusal_ctl - 1);
	memset(b, 'x', 300);
	memcpy(b, "orbit-collector: rejected: ", 27);
	put("refusal_no_newline", 63, b, 300);
	static const char http[] = "HTTP/1.0 400 Bad Request\r\nContent-Type: text/html\r\n\r\n";
	put("http", 63, http, sizeof http - 1);
	static const char ssh[] = "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n";
	put("ssh", 63, ssh, sizeof ssh - 1);
	/* A frame header announcing 64 MiB of content: refused from the
	 * header, nothing allocated. */
	static const uint8_t big[] = {0x28, 0xB5, 0x2F, 0xFD, 0xA4, 0x00,
	                              0x00, 0x00, 0x04, 0x01, 0x00, 0x00};
	put("ack_big_content", 63, big, sizeof big);
	return 0;
}
