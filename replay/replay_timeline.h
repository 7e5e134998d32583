/*
 * replay_timeline.h — the captures read as one timeline: every capture open
 * at once, packets merged by time (replay_merge.c), each packet applied to
 * its stream (replay_packets.c). Events go to the dispatch; without one,
 * only the streams' counts and times are kept (the origin scan,
 * replay_origin.c).
 */
#ifndef ORBIT_REPLAY_TIMELINE_H
#define ORBIT_REPLAY_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "replay_stream.h"

struct orbit_rp_report;
struct orbit_rp_dispatch;
struct orbit_rp_sched_scan;
struct orbit__rp_sched_event;

/* One capture being read. */
struct orbit_rp_source {
	struct orbit_rp_capture *cap;
	struct orbit_capture_reader *r;
	Orbit__Packet *peek; /* its next packet, NULL when done */
	uint64_t key;        /* merge order: the peeked packet's time */
	uint64_t frame_at;   /* offset of the frame the peeked packet is in */
	struct orbit_rp_stream *stream;
	uint32_t handshakes; /* read so far (the sched scan counts them alike) */
	int done;
	int first_error;   /* the first frame problem (enum orbit_frame_error), 0: none */
	uint64_t first_at; /* its offset */
	uint64_t problems; /* frame problems before the first good packet */
};

struct orbit_rp_timeline {
	struct orbit_rp_capture *caps; /* one per input, in the inputs' order */
	struct orbit_rp_source *srcs;
	size_t n;
	uint32_t streams; /* made so far, in all captures */
	uint8_t *batch;   /* one decoded ring batch */
	uint64_t total_bytes;
	int progress; /* draw the progress bar */
	struct orbit_rp_report *rep;
	struct orbit_rp_dispatch *d;             /* NULL: counts and times only */
	const struct orbit_rp_sched_scan *sched; /* the streams' states, or NULL */
	struct orbit__rp_sched_event *kev;       /* one kernel page's events */
	size_t nkev, kev_cap;
};

/* Opens every input and reads its first packet; problems are reported.
 * 0, or -1 when out of memory (reported). */
int orbit__rp_timeline_open(struct orbit_rp_timeline *tl, const char *const *paths, size_t n);
/* Reads every packet, earliest first, to the end of every input. */
void orbit__rp_timeline_read(struct orbit_rp_timeline *tl);
/* The pid of input i's first packet when it is a handshake, else 0. */
uint32_t orbit__rp_timeline_first_pid(const struct orbit_rp_timeline *tl, size_t i);
/* Closes the inputs and frees the captures. */
void orbit__rp_timeline_free(struct orbit_rp_timeline *tl);

/* One packet of src, applied to its stream (replay_packets.c). */
void orbit__rp_packet(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                      const Orbit__Packet *p);
/* Ends src's current stream: the reconstructor reports what is still open,
 * the stream's checks run, the exporters hear of it. */
void orbit__rp_source_finish(struct orbit_rp_timeline *tl, struct orbit_rp_source *src);

#endif
