/*
 * agent_stop.h — how the agent ends: the stop sequence on the agent's loop.
 *
 *  1. A stream still on its way (connecting, or between retries) is waited
 *     for, at most until the stop's deadline (orbit__config_stop_deadline_ms),
 *     with a pending retry made at once: a short program keeps its trace.
 *  2. If no stream came and a local copy never had its stream, the copy
 *     gets one of its own (the output's fallback).
 *  3. The final pass empties the rings into the stream, the stream ends,
 *     and the stop waits until every frame is settled, at most until a
 *     little before ORBIT_FLUSH_TIMEOUT_MS from its start (the host waits
 *     that long, the wait of 1. included), when what is not settled is
 *     given up and counted.
 *  4. The end-of-run lines: what could not be delivered, and why; and, when
 *     producers overwrote records, the knob that gives the rings more room.
 *
 * While the agent runs, loss is said as it happens (orbit__agent_loss_line):
 * records overwritten in the rings (those the drain counted, and those a
 * ring's cursor is already more than a ring ahead of the drain by, which no
 * read can save: a link that takes nothing leaves the rings undrained) and
 * records of frames never sent; one line when it first grows, then at most
 * one a minute.
 *
 * The agent turns its own timers off before the sequence begins, and is
 * called back (events) for the final pass and when the stop is over.
 * Agent thread only.
 */
#ifndef ORBIT_AGENT_AGENT_STOP_H
#define ORBIT_AGENT_AGENT_STOP_H

#include <stdint.h>
#include <uv.h>

#include "config.h"
#include "sched_reader.h"
#include "scope_ring.h"

struct orbit__output;
struct orbit__stream;

/* What the stop asks of the agent. */
struct orbit__stop_events {
	void *ctx;
	/* The final pass (it empties the rings into the stream). */
	void (*final_pass)(void *ctx);
	/* The stop is over: every frame settled or given up, the lines said. */
	void (*done)(void *ctx);
};

struct orbit__agent_stop {
	uv_timer_t timer; /* the wait for a stream, then the deadline */
	uv_loop_t *loop;
	const struct orbit__config *cfg;
	struct orbit__stream *stream; /* NULL: no output */
	struct orbit__output *out;    /* the stream's */
	struct orbit__sched_reader *sched;
	const struct orbit__drain *drain;
	uint64_t lapped_at_start; /* the drain's lapped claims when the agent started */
	const struct orbit__stop_events *ev;
	int stopping;          /* the stop is under way */
	int waiting;           /* ... and waits for a stream to begin */
	int streamed;          /* its final pass went into a stream */
	int done;              /* it is over */
	int gave_up;           /* the deadline came with frames not settled */
	int waited_out;        /* the deadline came while it waited for a stream */
	uint64_t at_ms;        /* when it began (the loop's clock) */
	uint64_t said_lost;    /* the loss the last loss line gave */
	uint64_t said_loss_ns; /* when it was said (0: never) */
};

/* Sets the stop up for an agent start (its timer on loop): 0 or a libuv
 * error. The fields up to ev are the caller's to fill. */
int orbit__agent_stop_init(struct orbit__agent_stop *s, uv_loop_t *loop);
/* The stop begins (the agent's pass timer is off). */
void orbit__agent_stop_begin(struct orbit__agent_stop *s);
/* A stream began while the stop waited for one: the stop goes on from
 * step 3, from the loop (the caller is inside the stream's events). */
void orbit__agent_stop_stream_came(struct orbit__agent_stop *s);
/* While tracing, at now_ns: one line if loss grew since the last line and
 * that line is a minute old (or there was none). */
void orbit__agent_loss_line(struct orbit__agent_stop *s, uint64_t now_ns);
/* Closes the timer (when the agent closes its handles). */
void orbit__agent_stop_close(struct orbit__agent_stop *s);

#endif
