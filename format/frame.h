/*
 * frame.h — frames: the unit of the wire and of the capture file.
 *
 * A frame is one zstd frame (content size in its header, content checksum
 * on) whose content is a sequence of packets, each a varint length followed
 * by that many bytes of an orbit.Packet message (orbit.proto). A capture file
 * is the frames of one stream back to back: a plain zstd stream. Every
 * reader enforces the limits below before allocating for anything they
 * describe; docs/format.md is normative.
 */
#ifndef ORBIT_FORMAT_FRAME_H
#define ORBIT_FORMAT_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.pb-c.h"

#define ORBIT_FRAME_MAX_COMPRESSED (4u << 20) /* bytes of one zstd frame */
#define ORBIT_FRAME_MAX_CONTENT (64u << 20)   /* its decompressed content */
#define ORBIT_PACKET_MAX (1u << 20)           /* one packet */
#define ORBIT_FRAME_WINDOW_LOG_MAX 23         /* zstd window: 8 MiB */
/* Stream versions (docs/format.md 4.0): 1 ring batches in encoding 1, 2 in
 * encoding 2, 3 what a reader needs up front comes before it matters
 * (format.md 4.13). Writers write ORBIT_PROTOCOL_VERSION; readers of capture
 * files and collectors take every version from MIN to MAX, so that an agent
 * of an earlier release streams to today's collector. */
#define ORBIT_PROTOCOL_VERSION 3u
#define ORBIT_PROTOCOL_VERSION_MIN 1u
#define ORBIT_PROTOCOL_VERSION_MAX 3u
#define ORBIT_PROTOCOL_UP_FRONT 3u /* the first version that keeps format.md 4.13's promises */
#define ORBIT_HANDSHAKE_FRAME_MAX (64u << 10) /* a stream's first frame, and its content */
/* The content at which a stream's writers (the agent, orbit-dump) close a
 * frame: big enough to compress well, small enough to cost one frame when
 * damaged (docs/format.md 3.1). */
#define ORBIT_FRAME_TARGET (128u << 10)

/* Acknowledgements (docs/format.md section 7): a collector sends each as one
 * frame of at most ORBIT_ACK_FRAME_MAX bytes holding one Ack packet. Ack.end
 * says why an Ack is the stream's last one. */
#define ORBIT_ACK_FRAME_MAX 128u
enum orbit_ack_end {
	ORBIT_ACK_GOES_ON = 0,     /* not the last Ack */
	ORBIT_ACK_PEER_ENDED = 1,  /* the agent closed its side of the connection */
	ORBIT_ACK_CAPTURE_CAP = 2, /* --max-capture-size reached */
	ORBIT_ACK_DIR_CAP = 3,     /* --max-dir-size reached */
	ORBIT_ACK_STOPPING = 4,    /* the collector is stopping (SIGINT, SIGTERM) */
	ORBIT_ACK_BAD_FRAME = 5,   /* frame number frames + 1 failed a check */
	ORBIT_ACK_FILE_ERROR = 6,  /* the capture file could not be written */
	ORBIT_ACK_TIMEOUT = 7,     /* a frame did not complete in time, or the agent was idle */
};

/* Protobuf varints, as packets and their length prefixes use them. */
static inline size_t orbit__varint_size(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static inline size_t orbit__put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* Reads a varint of at most len bytes: the bytes used, 0 if it is truncated
 * or over 64 bits. */
static inline size_t orbit__get_varint(const uint8_t *p, size_t len, uint64_t *v)
{
	uint64_t r = 0;
	for (size_t i = 0; i < len && i < 10; i++) {
		r |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			if (i == 9 && p[i] > 1)
				return 0;
			*v = r;
			return i + 1;
		}
	}
	return 0;
}

/* Errors of the frame layer (negative, beside -errno). */
enum orbit_frame_error {
	ORBIT_FRAME_EMAGIC = -2001,    /* not a zstd frame */
	ORBIT_FRAME_EBIG = -2002,      /* over a size limit */
	ORBIT_FRAME_ENOSIZE = -2003,   /* content size not in the header */
	ORBIT_FRAME_ECORRUPT = -2004,  /* zstd says the data is damaged */
	ORBIT_FRAME_ECHECKSUM = -2005, /* no content checksum */
	ORBIT_FRAME_EPACKET = -2006,   /* a packet length or message is bad */
	ORBIT_FRAME_ETRUNC = -2007,    /* the input ends inside a frame */
};
const char *orbit__frame_strerror(int err);

/* ---- writing ---- */

struct orbit_frame_writer {
	uint8_t *content; /* packets, uncompressed */
	size_t len, cap;
	uint8_t *out; /* the last frame made */
	size_t out_len, out_cap;
	void *cctx; /* ZSTD_CCtx */
	int level;
	uint32_t packets;
};

int orbit__frame_writer_init(struct orbit_frame_writer *w, int level);
void orbit__frame_writer_free(struct orbit_frame_writer *w);
/* Gives back the buffers of an empty writer (they grow again when used). */
void orbit__frame_writer_trim(struct orbit_frame_writer *w);
/* Appends one packet; -E2BIG if it is over ORBIT_PACKET_MAX. */
int orbit__frame_add(struct orbit_frame_writer *w, const Orbit__Packet *p);
/* Room for one packet of exactly len bytes that the caller writes itself
 * (already packed); NULL if it is over ORBIT_PACKET_MAX or memory is out. */
uint8_t *orbit__frame_append(struct orbit_frame_writer *w, size_t len);
/* Compresses the packets added so far into w->out / w->out_len and starts a
 * new frame. Returns 0 (w->out_len == 0 when there was nothing to write). */
int orbit__frame_finish(struct orbit_frame_writer *w);

/* ---- checking a frame whose bytes are all at hand (the collector) ---- */

/* Where the first frame in buf ends: 0 and *frame_len when whole, 1 when
 * more bytes are needed, or a negative error (not a zstd frame, over the
 * limits, no content size, no checksum). Decides from the headers alone. */
int orbit__frame_size(const uint8_t *buf, size_t len, size_t *frame_len);

/* What a whole frame holds, once checked. */
struct orbit_frame_info {
	uint32_t packets;
	uint64_t content_size;
	Orbit__Packet *first; /* the first packet, decoded; free with
	                         orbit__packet__free_unpacked */
};

/* Decompression state and the buffer a frame's content goes into: one per
 * thread that reads, reused frame after frame (at most
 * ORBIT_FRAME_MAX_CONTENT bytes). */
struct orbit_frame_scratch {
	void *dctx; /* ZSTD_DCtx */
	uint8_t *buf;
	size_t cap;
	size_t len; /* content of the last frame decompressed */
};
void orbit__frame_scratch_free(struct orbit_frame_scratch *s);

/* Decompresses a whole frame into s (verifying its checksum) and checks
 * every packet's length; returns 0, or a negative error. */
int orbit__frame_decompress(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len);

/* Walks the packets of the content in s: *off starts at 0. Returns 1 and
 * the packet's bytes, 0 at the end. Only after orbit__frame_decompress
 * succeeded (lengths are checked there). */
int orbit__frame_next_packet(const struct orbit_frame_scratch *s, size_t *off,
                             const uint8_t **packet, size_t *len);

/* orbit__frame_decompress, then decodes every packet; on success returns 0
 * and fills *info (the caller frees info->first). */
int orbit__frame_check(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len,
                       struct orbit_frame_info *info);

/* ---- reading a capture: one frame in memory at most ---- */

struct orbit_capture_reader;

/* A frame that could not be read: where, and why. */
struct orbit_capture_problem {
	uint64_t offset; /* byte offset of the damaged frame in the file */
	int error;
};

/* Opens a capture file; NULL and *err on failure. */
struct orbit_capture_reader *orbit__capture_open(const char *path, int *err);
/* Reads from an already open file descriptor (not closed by the reader). */
struct orbit_capture_reader *orbit__capture_from_fd(int fd, int *err);
/* What orbit__capture_next returns, following, where the file ends for now. */
#define ORBIT_CAPTURE_AGAIN 2
/* Follows a file still being written (tail -f): from now on, where the
 * file ends, or ends inside a frame, orbit__capture_next returns
 * ORBIT_CAPTURE_AGAIN instead of the end or a cut frame, consuming
 * nothing, and the next call reads on from there. */
void orbit__capture_follow(struct orbit_capture_reader *r);
/*
 * The next packet: 1 and *packet (free with orbit__packet__free_unpacked),
 * 0 at the end of the file (following: ORBIT_CAPTURE_AGAIN), or a negative
 * error for a damaged frame, with
 * *problem set: the reader has then skipped to the next zstd frame magic and
 * the call may be repeated. A frame's packets are delivered only once the
 * whole frame decompressed with a good checksum: nothing from a damaged
 * frame is delivered.
 */
int orbit__capture_next(struct orbit_capture_reader *r, Orbit__Packet **packet,
                        struct orbit_capture_problem *problem);
/* Frames a reader may pass over (a reader with a budget: the collector's
 * live view): before each whole frame after the first, skip(ctx, its
 * offset, its length) says whether it is consumed without being
 * decompressed, its packets never delivered and counted in
 * orbit__capture_skipped (not a damaged frame). NULL: none is. */
void orbit__capture_skip_frames(struct orbit_capture_reader *r,
                                int (*skip)(void *ctx, uint64_t offset, size_t len), void *ctx);
uint64_t orbit__capture_skipped(const struct orbit_capture_reader *r);
/* Bytes of the file consumed so far. */
uint64_t orbit__capture_offset(const struct orbit_capture_reader *r);
/* Frames met so far, damaged ones included: the packet orbit__capture_next
 * returned last is from frame number orbit__capture_frames (the first is
 * 1), the numbering of an Ack's frames (docs/format.md 7.2). */
uint64_t orbit__capture_frames(const struct orbit_capture_reader *r);
/* Bytes the reader has read from its file: what reading it cost (a reader
 * that counts how often a capture is read, orbit-replay's). */
uint64_t orbit__capture_bytes_read(const struct orbit_capture_reader *r);
void orbit__capture_close(struct orbit_capture_reader *r);

#endif
