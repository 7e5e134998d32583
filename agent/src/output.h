/*
 * output.h — where a stream's frames go: one small interface, several
 * outputs (output_tcp.c: orbit-collector over TCP; output_file.c: a capture
 * file, or the local copy beside a collector; output_flight.c: the flight
 * ring in the segment), and the one output the stream writes to
 * (output_composite.c), which carries each frame to those the
 * configuration asks for behind this same interface.
 *
 * An output carries one stream at a time. It says when a stream may begin
 * on it (ready: the connection is up, the file is open), takes the stream's
 * finished frames in order (send), and says what became of each frame
 * (settled): written, or never will be. Settling is the output's business
 * and may come late: a file settles a frame when write() returns, TCP when
 * the collector acknowledges it (docs/format.md section 7). The stream's
 * Handshake frame settling is the destination's answer: only then does the
 * stream take records. The loss ledger (ledger.h) counts the
 * records of frames settled as lost, and of frames whose fate is unknown
 * when a stream breaks (fate).
 *
 * Frames are self-contained (docs/format.md: nothing in a frame refers to
 * another frame), and each says what it is, so an output that keeps only
 * the newest frames (a ring of them in shared memory, say) can keep the
 * stream's handshake frame aside and drop the oldest data frames.
 *
 * Everything runs on the agent thread's loop. Callbacks go down as tables:
 * the owner sets an output's events (ev) before it starts it; the output
 * never calls its owner any other way.
 */
#ifndef ORBIT_AGENT_OUTPUT_H
#define ORBIT_AGENT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "config.h"

enum orbit__frame_kind {
	ORBIT__FRAME_HANDSHAKE, /* the stream's first frame: one Handshake packet */
	ORBIT__FRAME_DATA,
	ORBIT__FRAME_END, /* the stream's last frame: it ends with EndOfStream */
};

/* A finished frame, as the stream hands it to its outputs. The bytes are
 * valid only during the send call: an output that keeps them past it (TCP,
 * until the kernel took them) takes them (orbit__frame_take) instead of
 * copying. */
struct orbit__frame {
	const uint8_t *bytes;
	size_t len;
	uint64_t seq; /* its number in the stream: 0 is the handshake frame */
	enum orbit__frame_kind kind;
	/* Where the stream stands with this frame and every earlier one
	 * (stream.c): per scope ring, the claim after the last record framed
	 * (ring_start for none yet) and the records framed since the stream
	 * began. The flight ring keeps them (format/flight.h). */
	uint32_t rings;
	const uint64_t *ring_end, *ring_framed;
	/* The bytes' owner gives them away, to be freed with free(), or NULL
	 * (and then may not be asked again); give NULL: they can only be
	 * copied. */
	uint8_t *(*give)(void *owner);
	void *owner;
};

/*
 * The frame's bytes as the caller's own, to free() when done with them:
 * given by their owner (the stream writer compressed them into a buffer of
 * their own: no copy), else copied; NULL without memory. f->bytes points at
 * them from then on, so that the outputs the frame goes to after the
 * caller read them there. The caller may free them before its send
 * returns (a write that failed at once), so one frame goes to the output
 * that may take it last (output_composite.c).
 */
static inline uint8_t *orbit__frame_take(struct orbit__frame *f)
{
	uint8_t *p = f->give != NULL ? f->give(f->owner) : NULL;
	f->give = NULL;
	if (p == NULL && (p = malloc(f->len)) != NULL)
		memcpy(p, f->bytes, f->len);
	if (p != NULL)
		f->bytes = p;
	return p;
}

/* A frame written and never acknowledged, byte for byte. */
struct orbit__kept {
	const uint8_t *bytes;
	size_t len;
	uint64_t seq;
};

/* What an output knows of its stream's frames (when the stream breaks or is
 * given up): for the ledger's account of a stream that died. */
struct orbit__fate {
	uint64_t frames_sent;  /* written to the destination, the Handshake frame included */
	uint64_t frames_acked; /* the destination has the first frames_acked of them */
	uint32_t end;          /* the collector's last Ack's end, 0 if none came */
	int certain;           /* frames after frames_acked are certainly not there */
	/* The frames after frames_acked, oldest first, when the output kept
	 * their bytes (TCP beside a spool); valid during the broken call. */
	const struct orbit__kept *kept;
	size_t n_kept;
	/* The owner may still send the broken stream's open frame, during the
	 * broken call: it goes where the frames not acknowledged went (the
	 * spool), and those frames are not certainly lost. */
	int late;
	/* The collector refused the stream's protocol version: it is older
	 * than this agent (docs/format.md 4.0). Its reason is trouble(). */
	int older;
};

struct orbit__output;

/* What an output tells its owner. */
struct orbit__output_events {
	void *ctx;
	/* A stream may begin on o now. */
	void (*ready)(void *ctx, struct orbit__output *o);
	/* Frame seq of o's stream, and every earlier one not yet settled, has
	 * reached its destination (ok = 1) or never will (ok = 0). */
	void (*settled)(void *ctx, struct orbit__output *o, uint64_t seq, int ok);
	/* o's stream ended before its end frame was settled. Frames not
	 * settled yet never will be; fate says whether they may have reached
	 * the destination. With fatal, o will never be ready again and tracing
	 * should stop (a collector refused us, the capture file cannot be
	 * written); otherwise o may become ready again for a new stream (a
	 * reconnection). */
	void (*broken)(void *ctx, struct orbit__output *o, int fatal,
	               const struct orbit__fate *fate);
	/* Everything o took has settled (for a flush waiting on it). */
	void (*idle)(void *ctx, struct orbit__output *o);
	/* An attempt to reach the destination failed before it answered
	 * (nobody listens there, no route, not a collector): the owner may
	 * take another (the spool), and a stop waiting for o after hurry
	 * waits for nothing. */
	void (*unreachable)(void *ctx, struct orbit__output *o);
};

struct orbit__output_ops {
	/* Begins: opens the file, or starts connecting. 0: a stream may begin
	 * now; 1: ready will say when; or a negative errno, after one stderr
	 * line. */
	int (*start)(struct orbit__output *o);
	/* Takes the next frame of the open stream. 0, or a negative errno: o
	 * did not take the frame (the owner counts it lost), and if the stream
	 * cannot go on, o has reported broken. */
	int (*send)(struct orbit__output *o, struct orbit__frame *f);
	/* Bytes of the open stream taken and not yet settled; 0 off a stream
	 * (what was queued then is being cancelled, and will never be
	 * written): idle. */
	size_t (*pending)(const struct orbit__output *o);
	/* 1 while o is not streaming but may be soon (resolving, connecting,
	 * waiting to retry): worth waiting for at exit. */
	int (*coming)(const struct orbit__output *o);
	/* Hurries a pending retry (exit is near). */
	void (*hurry)(struct orbit__output *o);
	/* The stream's last frame was sent: close it when it has settled. */
	void (*end)(struct orbit__output *o);
	/* Stops waiting for the open stream's frames to settle (the stop's
	 * deadline): they are reported broken, not fatal, with their fate. */
	void (*give_up)(struct orbit__output *o);
	/* Why no stream has been answered lately, in a few words for the
	 * end-of-run line ("connection refused", "it sent HTTP"), or "". */
	const char *(*trouble)(const struct orbit__output *o);
	/* Stops for good; handles are closed as the loop runs. Frees o once
	 * they are (or at once). */
	void (*close)(struct orbit__output *o);
	/* In a forked child: frees o without touching the loop, and closes
	 * the child's copies of o's descriptors if it has copies (the agent
	 * shared the process's descriptor table: guest_files.h); otherwise
	 * those numbers are the host's own and stay as they are. */
	void (*forget)(struct orbit__output *o, int copies);
	/* Exit is here and no stream was answered: an output that has another
	 * destination, one that never had a stream (the local copy beside a
	 * collector), begins a stream there alone, and reports ready. 1 if it
	 * did, 0 if it has none. NULL in an output of one destination. */
	int (*fallback)(struct orbit__output *o);
};

struct orbit__output {
	const struct orbit__output_ops *ops;
	const struct orbit__output_events *ev; /* set by the owner before start */
	uv_loop_t *loop;
	int streaming; /* a stream is open on it; set by the output */
};

struct orbit__segment;

/* The collector named by cfg->host:port (ORBIT_COLLECTOR); NULL without
 * memory. */
struct orbit__output *orbit__output_tcp(uv_loop_t *loop, const struct orbit__config *cfg);
/* The flight ring in seg, this process's segment (ORBIT_FLIGHT): the newest
 * frames of the current stream, the handshake kept aside. */
struct orbit__output *orbit__output_flight(uv_loop_t *loop, struct orbit__segment *seg);
/* What a file output is to the stream: the capture (ORBIT_CAPTURE), the
 * local copy beside a collector (whose failures do not stop tracing), or a
 * spool file (output_composite.c). */
enum orbit__file_role { ORBIT__FILE_CAPTURE, ORBIT__FILE_COPY, ORBIT__FILE_SPOOL };
/* The file path ("%p" stands for the pid), at most max bytes (UINT64_MAX:
 * only RLIMIT_FSIZE bounds it). */
struct orbit__output *orbit__output_file(uv_loop_t *loop, const char *path,
                                         enum orbit__file_role role, uint64_t max);
/* Bytes a file output wrote to its file so far. */
uint64_t orbit__output_file_size(const struct orbit__output *o);
/* The outputs cfg asks for, as one: *out, or -EINVAL (a bad ORBIT_COLLECTOR,
 * said by the configuration) or -ENOMEM. output_composite.c says which
 * stream each of them carries. */
int orbit__output_composite(struct orbit__output **out, uv_loop_t *loop,
                            const struct orbit__config *cfg, struct orbit__segment *seg);

#endif
