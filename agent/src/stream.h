/*
 * stream.h — the agent's stream on its output: when a stream begins, what
 * it says and when, when it may take records, and what its death costs.
 *
 * What a stream says (docs/format.md, section 4): the Handshake alone in
 * the first frame, then RingBatch and FtracePage packets with the Loss and
 * PageLoss packets that account for them, and at the end the thread names,
 * the final losses and EndOfStream. The packets and their frames are
 * format/stream_writer.h's; the accounting is the ledger's (ledger.h);
 * where the frames go is the output's (output.h: the composite of every
 * output the process has).
 *
 * When. A stream begins when its output is ready (its Handshake goes out)
 * and takes records once the output settles that Handshake frame: the
 * destination answered (a file at once, a collector with its first Ack).
 * So a peer that is not a collector costs a Handshake and no records, and
 * a stream that dies had been answered: its account (ledger.h) goes, as
 * PreviousStream, into the next answered stream's Handshake. The bytes not
 * yet settled are bounded (ORBIT_SEND_BUFFER, default 64 MiB): while they
 * are at the bound, or while no destination has answered, the agent does
 * not drain (orbit__stream_ready), so producers lap their rings and the
 * loss is counted there, never buffered. The writer cuts a frame once its
 * content reaches ORBIT_FRAME_TARGET; this file cuts it at the end of a
 * pass once it is old enough (FRAME_AGE_MS since its first packet), or
 * when asked (a flush, the end).
 *
 * Runs on the agent thread's loop only. Events go up to the agent as a
 * table.
 */
#ifndef ORBIT_AGENT_STREAM_H
#define ORBIT_AGENT_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "config.h"
#include "output.h"
#include "scope_ring.h"

struct orbit__logs;
struct orbit__sched;
struct orbit__stream;

/* What the stream tells the agent. */
struct orbit__stream_events {
	void *ctx;
	/* Records may be drained again: a stream was answered, or the send
	 * queue fell under ORBIT_SEND_BUFFER after it had held the drain
	 * back. */
	void (*can_drain)(void *ctx);
	/* The output's last attempt failed before it answered: a stop that
	 * hurried it waits for nothing. */
	void (*gone)(void *ctx);
};

/* What the end-of-run line says of the streams. */
struct orbit__stream_report {
	int dead;                /* refused, or the file failed: said then */
	int streams;             /* streams answered */
	int open_answered;       /* the stream open (or ending) was answered */
	uint64_t unsent;         /* records never sent, or certainly lost, since the start */
	struct orbit__fate last; /* the last stream that broke */
	/* Records of streams that ended with frames no collector
	 * acknowledged, and that no later stream accounted for. */
	uint64_t undelivered;
};

/* Sets the stream up on out (its events are the stream's from now on) and
 * starts out: a stream begins when out is ready. cfg, drain, clock and
 * logs (NULL: no page rings) must outlive it. 0 and *s, or -errno. */
int orbit__stream_new(struct orbit__stream **s, const struct orbit__config *cfg,
                      struct orbit__drain *drain, struct orbit__clock_conv *clock,
                      struct orbit__logs *logs, struct orbit__output *out,
                      const struct orbit__stream_events *ev);
/* Frees s; out is the caller's to close. */
void orbit__stream_free(struct orbit__stream *s);

/* Kernel scheduling is settled: the recorder whose formats every Handshake
 * from now on carries (KernelSched), or NULL and the reason it is off
 * (kernel_sched_off). With ORBIT_SCHED the first stream waits for this. */
void orbit__stream_sched(struct orbit__stream *s, struct orbit__sched *sched, const char *off);

/* Whether a drain pass may run now: a stream is open, answered, and its
 * output's queue has room (for the final pass, room is not needed). */
int orbit__stream_ready(struct orbit__stream *s, int final);

/* Records of one drain pass, times already ns. */
void orbit__stream_records(struct orbit__stream *s, uint32_t ring, uint64_t first_claim,
                           const uint8_t *records, uint32_t n);
/* One log page, times already ns (counted for the ledger whether or not a
 * stream is open). */
void orbit__stream_page(struct orbit__stream *s, uint32_t ring, const uint8_t *page, size_t len);
/* One page read from the recorder (docs/format.md 4.10, KernelPage): 0, or
 * a negative errno when no stream took it (counted as unsent). */
int orbit__stream_kernel_page(struct orbit__stream *s, uint32_t cpu, const uint8_t *page,
                              size_t len);
/* End of a drain pass: Loss, PageLoss and KernelLoss packets for what
 * changed, a keepalive if nothing was said for a while; the frame goes out
 * if it is old enough, or now with cut (a flush, the final pass). */
void orbit__stream_pass_done(struct orbit__stream *s, int cut);
/* The stream's last packets (thread names, final losses, EndOfStream) in
 * its last frame, after the final pass; the output then closes the
 * stream once its frames are settled. */
void orbit__stream_end(struct orbit__stream *s);

/* Calls done(ctx) once the output has settled every frame it took, or
 * dropped them (on the loop; at once if that is so now). */
void orbit__stream_on_idle(struct orbit__stream *s, void (*done)(void *ctx), void *ctx);
void orbit__stream_report(const struct orbit__stream *s, struct orbit__stream_report *r);

#endif
