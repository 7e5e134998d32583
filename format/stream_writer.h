/*
 * stream_writer.h — the one writer of a stream (docs/format.md sections 3
 * and 4): every packet a stream carries, collected into frames, each frame
 * compressed into one zstd frame (content size and checksum on) and handed
 * to a sink. The agent, orbit-dump and every tool that writes a stream or
 * a capture write it with this; what the packets say, and when, is the
 * caller's.
 *
 * What the writer guarantees:
 *
 *   1. The Handshake is alone in its frame, the stream's first
 *      (orbit__sw_handshake); a KernelSched that would take that frame past
 *      ORBIT_HANDSHAKE_FRAME_MAX goes without its tids, and if that is not
 *      enough, not at all (4.10).
 *   2. Records go out as RingBatch packets in encoding 2, at most
 *      ORBIT_BATCH_MAX records and ORBIT_PACKET_MAX bytes each (a batch
 *      that would be larger is cut in two), written straight into the
 *      frame (4.3); a ring's batches keep the order they were given in.
 *   3. Frames are cut by size: once the content reaches frame_target
 *      (ORBIT_FRAME_TARGET for the agent and orbit-dump: the content
 *      stays under frame_target + one packet), and whenever the caller asks
 *      (orbit__sw_cut: a flush, an age). The EndOfStream packet ends its
 *      frame (orbit__sw_end). No frame is empty.
 *   4. Every finished frame goes to the sink in order, numbered from 0 (the
 *      Handshake frame) within the stream, with where the stream stands per
 *      scope ring (the claim after the last record framed, the records
 *      framed so far) and the records of each ring in that frame. A frame
 *      that cannot be compressed (memory), or that the caller abandons
 *      (orbit__sw_abort), is reported to the sink's lost() with its records
 *      per ring instead, and the stream's position goes back to the last
 *      finished frame.
 *   5. With a sink that names threads (name()), a thread's ThreadName goes
 *      before the first RingBatch or FtracePage of the stream holding a
 *      record of it (format.md 4.5), once per stream, and again after
 *      orbit__sw_rename gives it another name; a frame lost or not taken
 *      makes the writer forget every name it sent, so they go again.
 *   6. It knows the time of the stream's earliest event or log line in the
 *      frames the sink took and the one being built (orbit__sw_first_ns,
 *      EndOfStream.first_ns: format.md 4.8).
 *
 * Nothing here knows where frames go, what a clock is, or who the caller
 * is: no configuration, no I/O, no globals. One writer per thread.
 */
#ifndef ORBIT_FORMAT_STREAM_WRITER_H
#define ORBIT_FORMAT_STREAM_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "frame.h"

/* frame_target for a writer whose frames end only when the caller says. */
#define ORBIT_SW_NO_CUT SIZE_MAX
/* A thread name's bytes, its NUL included: a comm (at most 15 bytes). */
#define ORBIT_SW_NAME 16u
/* Threads a stream names itself (guarantee 5); later ones are named at the
 * end only. */
#define ORBIT_SW_NAMES_MAX (1u << 16)

/* What a finished frame is. */
enum orbit__sw_kind {
	ORBIT__SW_HANDSHAKE, /* the stream's first frame: one Handshake packet */
	ORBIT__SW_DATA,
	ORBIT__SW_END, /* the stream's last frame: it ends with EndOfStream */
};

/* A finished frame, valid during the sink's call only. */
struct orbit__sw_frame {
	const uint8_t *bytes;
	size_t len;
	uint64_t seq; /* its number in the stream: 0 is the handshake frame */
	enum orbit__sw_kind kind;
	/* Per scope ring (rings of them: the Handshake's ring_count): the claim
	 * after the last record framed so far (ring_start before the first),
	 * the records framed since the stream began, and this frame's. */
	uint32_t rings;
	const uint64_t *ring_end, *ring_framed, *ring_records;
};

/* Where a writer's frames go: callbacks down to its owner. */
struct orbit__sw_sink {
	void *ctx;
	/* A finished frame: 0 taken, or a negative errno (not taken). It
	 * never frees the writer (the agent's stop completes from its loop,
	 * after the call that finished the frame has returned). */
	int (*frame)(void *ctx, const struct orbit__sw_frame *f);
	/* The frame being built will never be finished: records[r] records
	 * of ring r (rings of them) were in it. May be NULL. */
	void (*lost)(void *ctx, const uint64_t *records, uint32_t rings);
	/* Thread tid's name (its comm), NUL-terminated in name: 1, or 0 when
	 * it has none (guarantee 5). NULL: the writer names no thread itself. */
	int (*name)(void *ctx, uint32_t tid, char name[ORBIT_SW_NAME]);
};

struct orbit__sw;

/* A writer compressing at zstd level `level`, cutting frames at
 * frame_target bytes of content (ORBIT_SW_NO_CUT: only when asked). NULL
 * when memory is out. */
struct orbit__sw *orbit__sw_new(int level, size_t frame_target, const struct orbit__sw_sink *sink);
void orbit__sw_free(struct orbit__sw *w);

/* A stream begins: what is being built is abandoned (lost()), frames are
 * numbered from 0 again, each ring's position is h->ring_start, and h goes
 * alone into frame 0 (guarantee 1: h->kernel_sched may be changed, and
 * h->kernel_sched_off then points at why, where the reason is written, at
 * most why_len bytes; why NULL: the writer's own text, valid until its next
 * call). Returns 0, 1 when the KernelSched was left out, or a negative
 * errno (the frame was lost, or not taken). */
int orbit__sw_handshake(struct orbit__sw *w, Orbit__Handshake *h, char *why, size_t why_len);

/* n records of ring (ring < ORBIT_MAX_RINGS) from claim first, times
 * already CLOCK_MONOTONIC ns, as RingBatch packets (guarantee 2). Returns
 * how many went into the stream: the others (memory) never leave. */
uint32_t orbit__sw_records(struct orbit__sw *w, uint32_t ring, uint64_t first,
                           const uint8_t *records, uint32_t n);

/* One packet each; 0, or a negative errno when it could not be added (over
 * ORBIT_PACKET_MAX, or memory). */
int orbit__sw_log_page(struct orbit__sw *w, uint32_t ring, const uint8_t *page, size_t len);
int orbit__sw_kernel_page(struct orbit__sw *w, uint32_t cpu, const uint8_t *page, size_t len);
int orbit__sw_loss(struct orbit__sw *w, const Orbit__Loss *l);
int orbit__sw_page_loss(struct orbit__sw *w, const Orbit__PageLoss *l);
int orbit__sw_kernel_loss(struct orbit__sw *w, const Orbit__KernelLoss *l);
int orbit__sw_thread_name(struct orbit__sw *w, uint32_t tid, const char *name);
/* Thread tid is called name now: a ThreadName if the stream named it with
 * another name (guarantee 5); nothing for a thread it has not named yet.
 * 0 or a negative errno. */
int orbit__sw_rename(struct orbit__sw *w, uint32_t tid, const char *name);
/* Forgets the names sent: each thread is named again before its next
 * records (a flight ring keeps only the newest frames). */
void orbit__sw_forget_names(struct orbit__sw *w);
/* KernelMark: the kernel's events are complete up to complete_ns
 * (format.md 4.10). 0 or a negative errno. */
int orbit__sw_kernel_mark(struct orbit__sw *w, uint64_t complete_ns);
/* The earliest time of a head record (format.md 2) or log record (5.3) in
 * the frames the sink took and the one being built; the Handshake's
 * monotonic_ns when there is none (guarantee 6). */
uint64_t orbit__sw_first_ns(const struct orbit__sw *w);
int orbit__sw_locations(struct orbit__sw *w, const Orbit__SourceLocation *const *e, size_t n);
int orbit__sw_dump(struct orbit__sw *w, const Orbit__Dump *d);
/* EndOfStream, and the frame it ends (guarantee 3); 0 or a negative errno
 * (the frame was lost, or not taken). */
int orbit__sw_end(struct orbit__sw *w, const Orbit__EndOfStream *e);

/* Any packet as it is, for a tool that writes what a stream's writer
 * never would (a reader's tests): 0 or a negative errno. */
int orbit__sw_packet(struct orbit__sw *w, const Orbit__Packet *p);
/* A frame made elsewhere, as it is (orbit-dump keeps the flight ring's):
 * the frame being built goes first. 0, or the sink's error. */
int orbit__sw_copy(struct orbit__sw *w, const uint8_t *frame, size_t len, enum orbit__sw_kind kind);

/* During the sink's frame() call for a frame this writer compressed: its
 * bytes become the caller's, in the buffer they were compressed into (its
 * size the compression's bound, at least f->len), to free() when done (an
 * output that queues the frame keeps it without a copy); the next frame is
 * compressed into a new buffer. NULL at any other time, or when they were
 * taken already. The buffer is not shrunk here: a frame written at once
 * gives back a buffer of one size each time, which malloc then reuses
 * (shrunk, each would be mapped and unmapped anew); a caller that holds the
 * frame a while shrinks it to f->len itself. */
uint8_t *orbit__sw_take(struct orbit__sw *w);

/* Finishes the frame being built now, if it holds anything: 0, or a
 * negative errno (lost, or not taken). */
int orbit__sw_cut(struct orbit__sw *w);
/* Abandons the frame being built (lost()). */
void orbit__sw_abort(struct orbit__sw *w);
/* Bytes of content in the frame being built (0: none). */
size_t orbit__sw_pending(const struct orbit__sw *w);
/* The number the next finished frame will have. */
uint64_t orbit__sw_seq(const struct orbit__sw *w);
/* With nothing pending: gives back the buffers (they grow again when used). */
void orbit__sw_trim(struct orbit__sw *w);

#endif
