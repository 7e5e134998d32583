/*
 * reply.h — reading what a collector sends an agent (docs/format.md section
 * 7): before it accepts a stream, at most one refusal line; after, to an
 * agent that asked, Ack frames. Bytes from the network: every length and
 * field is checked before use, and nothing bigger than ORBIT_REPLY_MAX
 * bytes is ever held (tests/fuzz/reply_fuzz.c).
 */
#ifndef ORBIT_FORMAT_REPLY_H
#define ORBIT_FORMAT_REPLY_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT_REPLY_MAX 256u /* a refusal line, newline included, is at most 255 bytes */
#define ORBIT_REFUSAL_PREFIX "orbit-collector: rejected"

struct orbit_ack {
	uint64_t frames;        /* the stream's first frames frames are in the file */
	uint64_t bytes;         /* their bytes */
	uint64_t synced_frames; /* of those, fdatasync'ed */
	uint32_t end;           /* 0, or why this last Ack ends the stream (enum orbit_ack_end) */
};

enum orbit_reply {
	ORBIT_REPLY_MORE = 0,    /* a reply has begun; more bytes are needed */
	ORBIT_REPLY_ACK = 1,     /* one Ack frame: *ack */
	ORBIT_REPLY_REFUSAL = 2, /* the refusal line: its REASON in reason */
};

/*
 * Reads the reply that starts at buf[0] (len bytes at hand). Returns an enum
 * orbit_reply, with *used the bytes it took (for MORE, 0), or -EPROTO when
 * the bytes are not what a collector sends: anything but the start of a
 * refusal line or of a zstd frame, a frame over ORBIT_ACK_FRAME_MAX bytes or
 * declaring more content, a damaged frame, one that is not exactly one Ack
 * packet, an Ack with frames == 0 or synced_frames > frames, a line over
 * ORBIT_REPLY_MAX bytes. For a refusal, reason gets its REASON (NUL-ended,
 * cut to reasonlen, control bytes replaced by '?').
 */
int orbit__reply_next(const uint8_t *buf, size_t len, size_t *used, struct orbit_ack *ack,
                      char *reason, size_t reasonlen);

/*
 * Writes one Ack frame (the collector's side of the above) with w into out,
 * which holds ORBIT_ACK_FRAME_MAX bytes; returns its size, 0 on failure.
 */
struct orbit_frame_writer;
size_t orbit__reply_ack_encode(struct orbit_frame_writer *w, const struct orbit_ack *ack,
                               uint8_t *out);

/*
 * What a peer that is not an Orbit collector sent, in a few words for a
 * line: "HTTP" (a web server or proxy), its first printable bytes in quotes
 * ("\"SSH-2.0-OpenSSH_9.2\""), or "N bytes that are not an Orbit reply".
 */
void orbit__reply_describe(const uint8_t *buf, size_t len, char *out, size_t outlen);

#endif
