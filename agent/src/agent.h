/*
 * agent.h — the agent thread: its own libuv loop (never the default loop),
 * its pass timer, and what the host's threads ask of it (start, flush,
 * stop). Each pass is drain_pass.h's, planned by pass_plan.h; the stop is
 * agent_stop.h's; the records and pages go to the stream (stream.h) on the
 * one output (output.h) the configuration asks for, and to a test sink.
 *
 * The process's one agent is its root's (lifecycle.c); a forked child
 * forgets it and may start its own.
 */
#ifndef ORBIT_AGENT_AGENT_H
#define ORBIT_AGENT_AGENT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "agent_stop.h"
#include "clock.h"
#include "config.h"
#include "drain_pass.h"
#include "guest_files.h"
#include "pass_plan.h"
#include "sched_reader.h"
#include "scope_ring.h"
#include "segment_state.h"
#include "stream.h"

struct orbit__agent_stats {
	uint32_t ring_count;
	uint64_t claimed; /* sum of the rings' cursors */
	uint64_t drained;
	uint64_t lost_lapped;
	uint64_t lost_dead;
	uint64_t lost_backstop;
	uint32_t stalled_rings;
};

struct orbit__logs;

struct orbit__agent {
	/* Host threads and the agent thread: mu guards the fields up to
	 * stats; cv (CLOCK_MONOTONIC) signals them. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int cv_ready; /* cv initialised */
	int running;
	int stop_req;
	int stopped;
	int wedged; /* a stop timed out: the thread may still run the loop */
	int set_up; /* the thread has made its loop (or failed to: set_up_err) */
	int set_up_err;
	uint64_t flush_req;
	uint64_t flush_done;
	uint64_t flush_target; /* what the waiting caller waits for */
	struct orbit__sink sink;
	struct orbit__agent_stats stats;

	/* The agent thread only (and the starting thread before it runs). */
	pthread_t thread;
	uv_loop_t loop;
	int tfd; /* the pass timer, or -1: uv_timer in ms */
	uv_poll_t tpoll;
	uv_timer_t timer;
	struct orbit__guest_files files; /* its own descriptor table, the wake pipe */
	uv_poll_t wpoll;                 /* on the wake pipe */
	int new_segment;                 /* the start is the segment's first */
	int planned;                     /* a pass is armed */
	int alone;                       /* the process's last thread: it stops, then exits */
	uint64_t slow_checked_ns;        /* now_and_then's last look */
	uint64_t flushing;               /* the flush request being completed */
	struct orbit__config cfg;        /* as the start was given it */
	struct orbit__segment *seg;
	struct orbit__drain drain;
	struct orbit__clock_conv clock;
	struct orbit__state_writer state;
	struct orbit__output *out;    /* NULL: no output configured */
	struct orbit__stream *stream; /* on out */
	struct orbit__stream_events stream_ev;
	struct orbit__pass pass;
	struct orbit__pass_plan plan;
	struct orbit__sched_reader sched;
	struct orbit__agent_stop stop;
	struct orbit__stop_events stop_ev;
};

/* A static agent, not started. */
#define ORBIT__AGENT_INIT                                                                          \
	{                                                                                          \
		.mu = PTHREAD_MUTEX_INITIALIZER, .tfd = -1, .sched = ORBIT__SCHED_READER_INIT,     \
		.files = ORBIT__GUEST_FILES_INIT                                                   \
	}

/* Starts the agent thread on a created segment, with the log page rings
 * logs (NULL: none) and the configuration cfg (copied). 0, or a negative
 * errno after one stderr line; -EBUSY if an earlier stop timed out. */
int orbit__agent_start(struct orbit__agent *a, struct orbit__segment *seg, uint32_t clock_source,
                       const struct orbit__config *cfg, struct orbit__logs *logs);
/* Asks for a full drain and waits for it, at most timeout_ms. */
int orbit__agent_flush(struct orbit__agent *a, uint32_t timeout_ms);
/* Stops and joins the agent thread after a last drain. */
void orbit__agent_stop(struct orbit__agent *a, uint32_t timeout_ms);
/* Replaces the sink (NULL: records go only to the stream). Takes effect
 * at the next drain. */
void orbit__agent_set_sink(struct orbit__agent *a, const struct orbit__sink *sink);
void orbit__agent_stats(struct orbit__agent *a, struct orbit__agent_stats *out);
/* Forgets the agent state without touching the thread (child after fork). */
void orbit__agent_forget(struct orbit__agent *a);

#endif
