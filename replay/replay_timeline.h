/*
 * replay_timeline.h — the captures read as one timeline: every capture open
 * at once, packets merged by time (replay_merge.c), each packet applied to
 * its stream (replay_packets.c). Events go to the dispatch; without one,
 * only the streams' counts and times are kept (the origin scan,
 * replay_origin.c).
 *
 * A capture of protocol version 3 is read ahead of the merge while a run
 * needs the kernel's states (docs/format.md 4.13): what is read goes to the
 * scan of kernel states (replay_sched_scan.h) at once and waits in the
 * capture's queue until the states its scopes need are final, so the
 * capture is read once. The queue holds at most ORBIT_RP_AHEAD_BYTES;
 * past that the first in it goes with the states known so far.
 *
 * The first captures opened (ORBIT_RP_PREFETCH_THREADS, and one fewer than
 * the CPUs) are each read on a thread of their own a few packets ahead of
 * the merge (replay_prefetch.h); the others in-line. What the merge takes
 * is the same either way.
 */
#ifndef ORBIT_REPLAY_TIMELINE_H
#define ORBIT_REPLAY_TIMELINE_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "replay_stream.h"

struct orbit_rp_prefetch;
struct orbit_rp_report;
struct orbit_rp_dispatch;
struct orbit_rp_sched_scan;
struct orbit__rp_sched_event;
struct orbit__rp_sched_timeline;

#define ORBIT_RP_AHEAD_BYTES (32u << 20) /* a capture's queue, read ahead */
#define ORBIT_RP_AHEAD_READS 65536u      /* ... and its entries */
#define ORBIT_RP_SPARE 8u                /* record buffers kept for them */

/* Something read from a capture, waiting for its turn in the merge: a
 * packet that passed the format's checks, or a problem to say there. */
struct orbit_rp_read {
	Orbit__Packet *p;    /* NULL: a problem */
	uint64_t frame_at;   /* offset of the frame it is in */
	int frame_error;     /* p NULL: a damaged frame (enum orbit_frame_error) */
	uint64_t error_at;   /* ... at that offset, or a failed read's */
	int read_error;      /* p NULL: the -errno of a read that failed */
	const char *invalid; /* p NULL: the kind of a packet outside the format's limits */
	uint32_t newer;      /* p NULL: a stream of this newer protocol begins, at error_at */
	/* read ahead: the states its stream's scopes need (NULL: none), and
	 * for a ring batch its records, decoded, and their latest time */
	const struct orbit__rp_sched_timeline *states;
	uint8_t *records;
	uint64_t need;
	uint64_t checked; /* the states' completeness when it was last found not ready */
	size_t bytes;
};

/* One capture being read. */
struct orbit_rp_source {
	struct orbit_rp_capture *cap;
	struct orbit_capture_reader *r;
	Orbit__Packet *peek;   /* its next packet, NULL when done */
	uint8_t *peek_records; /* its records, decoded ahead (NULL: not) */
	uint64_t key;          /* merge order: the peeked packet's time */
	uint64_t frame_at;     /* offset of the frame the peeked packet is in */
	struct orbit_rp_stream *stream;
	uint32_t handshakes; /* read so far (the sched scan counts them alike) */
	int done;
	int first_error;   /* the first frame problem (enum orbit_frame_error), 0: none */
	uint64_t first_at; /* its offset */
	uint64_t problems; /* frame problems before the first good packet */
	/* what has been read and waits (a ring of qcap entries) */
	struct orbit_rp_read *q;
	size_t qhead, qlen, qcap, qbytes;
	int eof;                      /* the reader has nothing more */
	int ahead;                    /* read ahead for the kernel's states */
	int read_any;                 /* a packet has been read */
	uint64_t frame_read;          /* offset of the frame the last packet read is in */
	int forced;                   /* the queue was full before the states came: said */
	uint32_t version;             /* the first packet's protocol version (a Handshake), or 0 */
	int ended;                    /* the last packet read ended its stream (EndOfStream) */
	uint32_t newer;               /* in a stream of this newer protocol: left out; 0 none */
	struct orbit_rp_prefetch *pf; /* its reader's thread, NULL: read in-line */
};

struct orbit_rp_timeline {
	struct orbit_rp_capture *caps; /* one per input, in the inputs' order */
	struct orbit_rp_source *srcs;
	size_t n;
	uint32_t streams; /* made so far, in all captures */
	uint8_t *batch;   /* one decoded ring batch */
	uint64_t total_bytes;
	int progress;          /* draw the progress bar */
	int inline_reads;      /* 1: every capture read in-line, no reader threads */
	unsigned threads_left; /* reader threads still to start (replay_prefetch.h) */
	unsigned threads;      /* ... and started */
	/* --follow: the inputs are read as they are written, until each
	 * stream ends or *stop is set (replay.h) */
	int follow;
	atomic_int *stop;
	int (*frame_skip)(void *ctx, uint64_t offset, size_t len); /* replay.h */
	void *frame_skip_ctx;
	struct orbit_rp_report *rep;
	struct orbit_rp_dispatch *d;       /* NULL: counts and times only */
	struct orbit_rp_sched_scan *sched; /* the streams' states, or NULL */
	int ahead;                         /* read captures of version 3 ahead for them */
	uint8_t *spare[ORBIT_RP_SPARE];    /* record buffers for batches read ahead */
	size_t nspare;
	uint64_t bytes_read;               /* by the readers closed so far */
	struct orbit__rp_sched_event *kev; /* one kernel page's events */
	size_t nkev, kev_cap;
};

/* Opens every input and reads its first packet; problems are reported.
 * 0, or -1 when out of memory (reported). */
int orbit__rp_timeline_open(struct orbit_rp_timeline *tl, const char *const *paths, size_t n);
/* Reads every packet, earliest first, to the end of every input. */
void orbit__rp_timeline_read(struct orbit_rp_timeline *tl);
/* The pid of input i's first packet when it is a handshake, else 0. */
uint32_t orbit__rp_timeline_first_pid(const struct orbit_rp_timeline *tl, size_t i);
/* The protocol version of input i's first packet when it is a handshake,
 * else 0: what the capture states up front (docs/format.md 4.13). */
uint32_t orbit__rp_timeline_first_version(const struct orbit_rp_timeline *tl, size_t i);
/* Bytes read from the inputs so far, by every reader of the timeline. */
uint64_t orbit__rp_timeline_bytes_read(const struct orbit_rp_timeline *tl);
/* Closes the inputs and frees the captures. */
void orbit__rp_timeline_free(struct orbit_rp_timeline *tl);

/* One packet of src, applied to its stream (replay_packets.c). */
void orbit__rp_packet(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                      const Orbit__Packet *p);
/* Ends src's current stream: the reconstructor reports what is still open,
 * the stream's checks run, the exporters hear of it. */
void orbit__rp_source_finish(struct orbit_rp_timeline *tl, struct orbit_rp_source *src);

#endif
