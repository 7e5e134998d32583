/*
 * transport.c — which outputs a process has and which stream each carries;
 * see transport.h. What a stream says is stream.c, its accounting ledger.c,
 * the outputs output_tcp.c and output_file.c.
 *
 *   ORBIT_COLLECTOR         the TCP output: one stream per connection
 *   ORBIT_CAPTURE           the file output: one stream
 *   both                    TCP, and the file as the local copy: it takes the
 *                           frames of the first stream the collector
 *                           answered, the same bytes
 *   ORBIT_FLIGHT            the flight ring in the segment: alone, it carries
 *                           the one stream; beside the others, it takes every
 *                           frame of each stream of the main output, starting
 *                           over with each one (output_flight.c)
 *
 * A stream begins when its output is ready (its Handshake goes out) and
 * takes records once the output settles that Handshake frame: the
 * destination answered (a file at once, a collector with its first Ack). So
 * a peer that is not a collector costs a Handshake and no records, and a
 * stream that dies had been answered: its account (ledger.h) goes, as
 * PreviousStream, into the next answered stream's Handshake.
 */
#include "transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "logs.h"
#include "output.h"
#include "stream.h"

static struct {
	uv_loop_t *loop;
	struct orbit__drain *drain;
	const struct orbit__config *cfg;
	struct orbit__ledger ledger;
	int ledger_init;
	struct orbit__output *main; /* the collector, or the capture file */
	struct orbit__output *copy; /* the local copy beside a collector */
	int copy_on;                /* the copy takes the open stream's frames */
	int copy_used;              /* the copy had its one stream */
	int copy_alone;             /* ... of its own, the collector never reached */
	int dead;                   /* refused, or the file failed: tracing is off */
	int blocked;                /* the queue held the drain back */
	int streams;                /* streams answered on the main output */
	int answered;               /* the open stream's Handshake was settled */
	int gave_up;                /* the stop stopped waiting for settlements */
	struct orbit__fate last;    /* the last broken stream's, for the end line */
	uint8_t *hs;                /* the open stream's Handshake frame, until answered */
	size_t hs_len;
	uint64_t hs_seq;

	/* The flight ring beside them (NULL: none, or it is main), and
	 * whether it takes the open stream's frames. */
	struct orbit__output *flight;
	int flight_on;
	const struct orbit__transport_events *tev;
	void (*idle_cb)(void);
} X;

static void tracing_off(void)
{
	atomic_store_explicit(&X.drain->seg->control->capture, 0, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
}

/* The queue fell under its limit after holding the drain back. */
static void check_room(void)
{
	if (X.copy_alone)
		return;
	if (X.blocked && X.main->ops->pending(X.main) < X.cfg->send_buffer) {
		X.blocked = 0;
		X.tev->can_drain();
	}
}

static void check_idle(void)
{
	if (X.idle_cb != NULL && orbit__transport_idle()) {
		void (*cb)(void) = X.idle_cb;
		X.idle_cb = NULL;
		cb();
	}
}

static void copy_end(void)
{
	if (X.copy_on)
		X.copy->ops->end(X.copy);
	X.copy_on = 0;
}

static void forget_handshake(void)
{
	free(X.hs);
	X.hs = NULL;
	X.hs_len = 0;
}

/* ---- what the outputs say ---- */

static void on_ready(void *ctx, struct orbit__output *o)
{
	(void)ctx;
	if (o != X.main || X.copy_alone) /* the copy carries the stream now */
		return;
	X.answered = 0;
	if (X.flight != NULL) /* every stream, from its Handshake on */
		X.flight_on = X.flight->ops->start(X.flight) == 0;
	X.blocked = 0;
	orbit__stream_begin(uv_now(X.loop)); /* its Handshake goes out */
}

/* The output whose fate is the stream's: the main one, or the copy when it
 * carries a stream of its own. */
static struct orbit__output *carrier(void)
{
	return X.copy_alone ? X.copy : X.main;
}

/* The destination has the open stream's Handshake: records may flow. */
static void answered(void)
{
	X.answered = 1;
	X.streams++;
	orbit__ledger_answered(&X.ledger);
	if (X.copy != NULL && !X.copy_used && !X.copy_alone) { /* the first stream only */
		X.copy_used = 1;
		X.copy_on = X.copy->ops->start(X.copy) == 0;
		struct orbit__frame f = {.bytes = X.hs,
		                         .len = X.hs_len,
		                         .seq = X.hs_seq,
		                         .kind = ORBIT__FRAME_HANDSHAKE};
		if (X.copy_on && (X.hs == NULL || X.copy->ops->send(X.copy, &f) != 0))
			X.copy_on = 0;
	}
	forget_handshake();
	X.tev->can_drain(); /* the first pass, at once */
}

static void on_settled(void *ctx, struct orbit__output *o, uint64_t seq, int ok)
{
	(void)ctx;
	if (o != carrier()) /* the copy's fate does not change the stream's */
		return;
	orbit__ledger_settled(&X.ledger, seq, ok);
	if (ok && !X.answered && orbit__stream_open())
		answered();
	check_room();
}

static void on_broken(void *ctx, struct orbit__output *o, int fatal, const struct orbit__fate *fate)
{
	(void)ctx;
	if (o != carrier()) {
		if (o == X.flight)
			X.flight_on = 0;
		else if (o == X.copy)
			X.copy_on = 0; /* the copy stops; the stream goes on */
		return;
	}
	orbit__stream_abort();
	X.last = *fate;
	orbit__ledger_died(&X.ledger,
	                   &(struct orbit__ledger_fate){.frames_sent = fate->frames_sent,
	                                                .frames_acked = fate->frames_acked,
	                                                .end = fate->end,
	                                                .certain = fate->certain},
	                   X.answered);
	X.answered = 0;
	forget_handshake();
	copy_end();
	if (fatal) {
		X.dead = 1;
		tracing_off();
	}
	check_idle();
}

static void on_idle(void *ctx, struct orbit__output *o)
{
	(void)ctx;
	if (o == X.main)
		check_idle();
}

static const struct orbit__output_events events = {
    .ready = on_ready,
    .settled = on_settled,
    .broken = on_broken,
    .idle = on_idle,
};

/* The stream's frames, to every output that carries it. */
static int on_frame(void *ctx, const struct orbit__frame *f)
{
	(void)ctx;
	if (f->kind == ORBIT__FRAME_HANDSHAKE && X.copy != NULL && !X.copy_used) {
		/* Kept for the local copy, which starts once this stream is
		 * answered: the copy is the first answered stream's bytes. */
		forget_handshake();
		X.hs = malloc(f->len);
		if (X.hs != NULL) {
			memcpy(X.hs, f->bytes, f->len);
			X.hs_len = f->len;
			X.hs_seq = f->seq;
		}
	}
	int err = X.copy_alone ? 0 : X.main->ops->send(X.main, f);
	if (X.flight_on && X.flight->ops->send(X.flight, f) != 0)
		X.flight_on = 0;
	if (X.copy_on && X.copy->ops->send(X.copy, f) != 0) {
		X.copy_on = 0;
		if (X.copy_alone)
			return -EIO;
	}
	return err;
}

/* ---- the interface ---- */

int orbit__transport_wanted(const struct orbit__config *cfg)
{
	return cfg->collector_set || cfg->capture_set || cfg->flight;
}

static void release(void)
{
	if (X.flight != NULL)
		X.flight->ops->close(X.flight);
	if (X.copy != NULL)
		X.copy->ops->close(X.copy);
	if (X.main != NULL)
		X.main->ops->close(X.main);
	orbit__stream_free();
	if (X.ledger_init)
		orbit__ledger_free(&X.ledger);
	free(X.hs);
	memset(&X, 0, sizeof X);
}

int orbit__transport_start(uv_loop_t *loop, const struct orbit__config *cfg,
                           struct orbit__drain *drain, struct orbit__clock_conv *clock,
                           const struct orbit__transport_events *ev)
{
	memset(&X, 0, sizeof X);
	X.tev = ev;
	X.loop = loop;
	X.drain = drain;
	X.cfg = cfg;
	if (cfg->collector_set && !cfg->collector_ok)
		return -EINVAL; /* said by the config */
	int err = orbit__ledger_init(&X.ledger, drain, orbit__logs_ring_count());
	if (err)
		return err;
	X.ledger_init = 1;
	static const struct orbit__stream_sink sink = {.frame = on_frame};
	err = orbit__stream_init(cfg, drain, clock, &X.ledger, &sink);
	if (err) {
		release();
		return err;
	}
	if (cfg->collector_set) {
		X.main = orbit__output_tcp(loop, cfg, &events);
		if (cfg->capture_set)
			X.copy = orbit__output_file(loop, cfg, &events, 1);
	} else if (cfg->capture_set) {
		X.main = orbit__output_file(loop, cfg, &events, 0);
	}
	if (cfg->flight) {
		X.flight = orbit__output_flight(loop, cfg, &events);
		if (X.main == NULL) { /* the flight ring alone carries the stream */
			X.main = X.flight;
			X.flight = NULL;
		}
	}
	if (X.main == NULL || (cfg->capture_set && cfg->collector_set && X.copy == NULL) ||
	    (cfg->flight && X.main != NULL && X.flight == NULL &&
	     (cfg->collector_set || cfg->capture_set))) {
		release();
		return -ENOMEM;
	}
	err = X.main->ops->start(X.main);
	if (err < 0) {
		release();
		return err;
	}
	if (err == 0) /* ready now: a file */
		on_ready(NULL, X.main);
	return 0;
}

int orbit__transport_ready(int final)
{
	if (!orbit__stream_open() || !X.answered)
		return 0;
	if (final || X.copy_alone || X.main->ops->pending(X.main) < X.cfg->send_buffer)
		return 1;
	X.blocked = 1; /* the settlement that makes room brings the next pass */
	return 0;
}

void orbit__transport_records(uint32_t ring, uint64_t first, const uint8_t *records, uint32_t n)
{
	orbit__stream_records(ring, first, records, n);
}

void orbit__transport_page(uint32_t ring, const uint8_t *page, size_t len)
{
	orbit__stream_page(ring, page, len);
}

void orbit__transport_sched(struct orbit__sched *sched, const char *off)
{
	orbit__stream_sched(sched, off);
}

int orbit__transport_kernel_page(uint32_t cpu, const uint8_t *page, size_t len)
{
	return orbit__stream_kernel_page(cpu, page, len);
}

void orbit__transport_pass_done(int cut)
{
	orbit__stream_pass_done(uv_now(X.loop), cut);
}

void orbit__transport_end(void)
{
	if (!orbit__stream_open())
		return;
	if (!X.answered) { /* nothing in it but its Handshake */
		orbit__stream_abort();
		forget_handshake();
		return;
	}
	orbit__stream_end();
	copy_end();
	if (X.flight_on)
		X.flight->ops->end(X.flight);
	X.flight_on = 0;
	if (!X.copy_alone)
		X.main->ops->end(X.main);
}

void orbit__transport_give_up(void)
{
	if (X.main == NULL || X.copy_alone || orbit__transport_idle())
		return;
	X.gave_up = 1;
	X.main->ops->give_up(X.main); /* broken, with the frames' fate */
}

int orbit__transport_coming(void)
{
	return !X.dead && X.main != NULL &&
	       (X.main->ops->coming(X.main) || (orbit__stream_open() && !X.answered));
}

void orbit__transport_hurry(void)
{
	if (X.main != NULL)
		X.main->ops->hurry(X.main);
}

int orbit__transport_fallback(void)
{
	if (orbit__stream_open() && X.answered)
		return 1;
	if (X.dead || X.copy == NULL || X.copy_used)
		return 0;
	if (orbit__stream_open()) { /* a connection that never answered */
		orbit__stream_abort();
		forget_handshake();
	}
	X.copy_used = 1;
	if (X.copy->ops->start(X.copy) != 0)
		return 0;
	X.copy_on = 1;
	X.copy_alone = 1;
	if (X.flight != NULL) /* the stream the copy carries, from its Handshake */
		X.flight_on = X.flight->ops->start(X.flight) == 0;
	fprintf(stderr,
	        "orbit: collector %s not reached within %u ms; the trace is in the local "
	        "copy only\n",
	        X.cfg->collector, X.cfg->flush_timeout_ms);
	orbit__stream_begin(uv_now(X.loop)); /* answered at once: a file */
	return 1;
}

int orbit__transport_why_not(char *buf, size_t len, uint32_t waited_ms, uint64_t *undelivered)
{
	*undelivered = 0;
	if (X.dead) /* refused, or the file failed: said then */
		return 0;
	*undelivered = X.ledger_init ? orbit__ledger_undelivered(&X.ledger) : 0;
	if (!X.cfg->collector_set) {
		snprintf(buf, len, X.cfg->capture_set ? "no capture file" : "no flight ring");
		return 1;
	}
	const char *trouble = X.main != NULL ? X.main->ops->trouble(X.main) : "";
	unsigned long long acked = X.last.frames_acked, sent = X.last.frames_sent;
	if (X.gave_up) /* the last stream was open at the deadline */
		snprintf(buf, len,
		         "collector %s acknowledged %llu of %llu frames of the last stream "
		         "within %u ms",
		         X.cfg->collector, acked, sent, waited_ms);
	else if (*undelivered > 0) /* it died, and no other stream took its account */
		snprintf(buf, len,
		         "collector %s not reached again within %u ms (%s%sit had "
		         "acknowledged %llu of %llu frames of the last stream)",
		         X.cfg->collector, waited_ms, trouble, trouble[0] ? "; " : "", acked, sent);
	else
		snprintf(buf, len, "collector %s %s within %u ms%s%s%s", X.cfg->collector,
		         X.streams ? "not reached again" : "not reached", waited_ms,
		         trouble[0] ? " (" : "", trouble, trouble[0] ? ")" : "");
	return 1;
}

int orbit__transport_idle(void)
{
	/* Off a stream, queued frames are being cancelled: nothing more will
	 * be written. */
	return X.main == NULL || !X.main->streaming || X.main->ops->pending(X.main) == 0;
}

void orbit__transport_on_idle(void (*done)(void))
{
	X.idle_cb = done;
	check_idle();
}

void orbit__transport_forget(void)
{
	if (X.flight != NULL)
		X.flight->ops->forget(X.flight);
	if (X.copy != NULL)
		X.copy->ops->forget(X.copy);
	if (X.main != NULL)
		X.main->ops->forget(X.main);
	/* The parent's buffers stay allocated in the child: freeing them is
	 * harmless but the zstd context may be mid-use in no thread of ours. */
	memset(&X, 0, sizeof X);
}

void orbit__transport_close(void)
{
	release();
}
