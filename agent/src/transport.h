/*
 * transport.h — frames out of the process: to orbit-collector over TCP
 * (ORBIT_COLLECTOR=host:port) or into a capture file (ORBIT_CAPTURE=path),
 * the same bytes either way; with both, the file is a local copy of the
 * first stream. Runs on the agent thread's loop only.
 *
 * The parts: stream.c says what a stream says, ledger.c accounts for every
 * claim (its header has the equation), output_composite.c carries the
 * frames to every output the process has (output.h is their interface),
 * and this file says when a stream begins on it and takes records.
 *
 * A stream starts with a Handshake frame whose ring_start is the drain's
 * position on each ring; from there every claim is delivered in a RingBatch
 * or counted in the stream's Loss packets, and the EndOfStream packet closes
 * the equation (docs/format.md). A stream takes records only once its
 * destination answered its Handshake (a collector's first Ack). The bytes
 * not yet acknowledged are bounded (ORBIT_SEND_BUFFER, default 64 MiB):
 * while they are at the bound, or while no collector has answered, the
 * agent does not drain, so producers lap their rings and the loss is
 * counted there, never buffered. A stream that dies has its account
 * carried by the next answered stream's Handshake (ledger.h).
 */
#ifndef ORBIT_AGENT_TRANSPORT_H
#define ORBIT_AGENT_TRANSPORT_H

#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "config.h"
#include "scope_ring.h"

struct orbit__logs;
struct orbit__sched;
struct orbit__transport;

/* What the transport tells the agent (on the loop). */
struct orbit__transport_events {
	void *ctx;
	/* Records may be drained again: a stream began, or the send queue
	 * fell under ORBIT_SEND_BUFFER after it had held the drain back. */
	void (*can_drain)(void *ctx);
};

/* 1 if ORBIT_COLLECTOR, ORBIT_CAPTURE or ORBIT_FLIGHT asks for a transport. */
int orbit__transport_wanted(const struct orbit__config *cfg);
/* Starts it on loop: opens the file or begins connecting. 0 and *out, or
 * -errno. cfg, drain, clock and logs (NULL: no page rings) must stay valid
 * until orbit__transport_close. */
int orbit__transport_start(struct orbit__transport **out, uv_loop_t *loop,
                           const struct orbit__config *cfg, struct orbit__drain *drain,
                           struct orbit__clock_conv *clock, struct orbit__logs *logs,
                           const struct orbit__transport_events *ev);
/* Whether a drain pass may run now: a stream is open and the queue has room
 * (for the final pass, room is not needed). */
int orbit__transport_ready(struct orbit__transport *t, int final);
/* Records of one drain pass (times already ns). */
void orbit__transport_records(struct orbit__transport *t, uint32_t ring, uint64_t first_claim,
                              const uint8_t *records, uint32_t n);
/* One log page (times already ns). */
void orbit__transport_page(struct orbit__transport *t, uint32_t ring, const uint8_t *page,
                           size_t len);
/* Kernel scheduling (ORBIT_SCHED, stream.h): the recorder, or NULL and why
 * not; then its pages, one at a time (0, or -errno when not taken). */
void orbit__transport_sched(struct orbit__transport *t, struct orbit__sched *sched,
                            const char *off);
int orbit__transport_kernel_page(struct orbit__transport *t, uint32_t cpu, const uint8_t *page,
                                 size_t len);
/* End of a drain pass: loss packets; the frame is made and queued when it is
 * big or old enough, or now with cut (a flush, the final pass). */
void orbit__transport_pass_done(struct orbit__transport *t, int cut);
/* The stream's last packets (thread names, EndOfStream), after the final
 * drain pass. */
void orbit__transport_end(struct orbit__transport *t);
/* Calls done(ctx) once every queued frame has been written or dropped (on
 * the loop; at once if that is so now). */
void orbit__transport_on_idle(struct orbit__transport *t, void (*done)(void *ctx), void *ctx);
/* 1 while no stream is open but one may begin soon (connecting, or waiting
 * to retry): worth waiting for at exit. */
int orbit__transport_coming(struct orbit__transport *t);
/* Exit is near: a pending retry is made now. */
void orbit__transport_hurry(struct orbit__transport *t);
/* At exit, when no stream was answered: the local copy, if it never had
 * its stream, gets one of its own (what the rings hold). 1 if a stream is
 * open. */
int orbit__transport_fallback(struct orbit__transport *t);
/* The stop's deadline: the frames not settled yet are counted with their
 * fate (ledger.h), and the open stream is closed; idle follows. */
void orbit__transport_give_up(struct orbit__transport *t);
/* Why records are not being delivered, for the end-of-run line (waited_ms:
 * how long the stop waited); 0 if that was said already. *undelivered: the
 * records of streams that ended with frames no collector acknowledged, and
 * that no later stream accounted for (the rings' unread claims are the
 * agent's to add). */
int orbit__transport_why_not(struct orbit__transport *t, char *buf, size_t len, uint32_t waited_ms,
                             uint64_t *undelivered);
/* In a forked child: closes its copies of the parent's socket and file and
 * frees t, without touching the parent's loop. */
void orbit__transport_forget(struct orbit__transport *t);
/* Closes the socket or file and frees t; handles are closed when the loop
 * runs. */
void orbit__transport_close(struct orbit__transport *t);

#endif
