/*
 * transport.c — a stream on its output: when it begins, when it may take
 * records, what its death costs; see transport.h. What a stream says is
 * stream.c, its accounting ledger.c, the output output_composite.c.
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
#include "output.h"
#include "stream.h"

struct orbit__transport {
	uv_loop_t *loop;
	struct orbit__drain *drain;
	const struct orbit__config *cfg;
	struct orbit__ledger ledger;
	int ledger_init;
	struct orbit__output *out;    /* every output of the process, as one */
	struct orbit__output_events ev; /* what it says, to us */
	int dead;                     /* refused, or the file failed: tracing is off */
	int blocked;                  /* the queue held the drain back */
	int streams;                  /* streams answered */
	int answered;                 /* the open stream's Handshake was settled */
	int gave_up;                  /* the stop stopped waiting for settlements */
	struct orbit__fate last;      /* the last broken stream's, for the end line */
	const struct orbit__transport_events *tev;
	void (*idle_cb)(void *ctx);
	void *idle_ctx;
};

static void tracing_off(struct orbit__transport *t)
{
	atomic_store_explicit(&t->drain->seg->control->capture, 0, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
}

static int idle(const struct orbit__transport *t)
{
	return t->out == NULL || t->out->ops->pending(t->out) == 0;
}

/* The queue fell under its limit after holding the drain back. */
static void check_room(struct orbit__transport *t)
{
	if (t->blocked && t->out->ops->pending(t->out) < t->cfg->send_buffer) {
		t->blocked = 0;
		t->tev->can_drain(t->tev->ctx);
	}
}

static void check_idle(struct orbit__transport *t)
{
	if (t->idle_cb != NULL && idle(t)) {
		void (*cb)(void *) = t->idle_cb;
		t->idle_cb = NULL;
		cb(t->idle_ctx);
	}
}

/* ---- what the output says ---- */

static void on_ready(void *ctx, struct orbit__output *o)
{
	(void)o;
	struct orbit__transport *t = ctx;
	if (orbit__stream_open()) /* a connection that never answered, given up */
		orbit__stream_abort();
	t->answered = 0;
	t->blocked = 0;
	orbit__stream_begin(uv_now(t->loop)); /* its Handshake goes out */
}

/* The destination has the open stream's Handshake: records may flow. */
static void answered(struct orbit__transport *t)
{
	t->answered = 1;
	t->streams++;
	orbit__ledger_answered(&t->ledger);
	t->tev->can_drain(t->tev->ctx); /* the first pass, at once */
}

static void on_settled(void *ctx, struct orbit__output *o, uint64_t seq, int ok)
{
	(void)o;
	struct orbit__transport *t = ctx;
	orbit__ledger_settled(&t->ledger, seq, ok);
	if (ok && !t->answered && orbit__stream_open())
		answered(t);
	check_room(t);
}

static void on_broken(void *ctx, struct orbit__output *o, int fatal, const struct orbit__fate *fate)
{
	(void)o;
	struct orbit__transport *t = ctx;
	orbit__stream_abort();
	t->last = *fate;
	orbit__ledger_died(&t->ledger,
	                   &(struct orbit__ledger_fate){.frames_sent = fate->frames_sent,
	                                                .frames_acked = fate->frames_acked,
	                                                .end = fate->end,
	                                                .certain = fate->certain},
	                   t->answered);
	t->answered = 0;
	if (fatal) {
		t->dead = 1;
		tracing_off(t);
	}
	check_idle(t);
}

static void on_idle(void *ctx, struct orbit__output *o)
{
	(void)o;
	check_idle(ctx);
}

/* The stream's frames, to the output. */
static int on_frame(void *ctx, const struct orbit__frame *f)
{
	struct orbit__transport *t = ctx;
	struct orbit__frame frame = *f;
	return t->out->ops->send(t->out, &frame);
}

/* ---- the interface ---- */

int orbit__transport_wanted(const struct orbit__config *cfg)
{
	return cfg->collector_set || cfg->capture_set || cfg->flight;
}

static void release(struct orbit__transport *t)
{
	if (t->out != NULL)
		t->out->ops->close(t->out);
	orbit__stream_free();
	if (t->ledger_init)
		orbit__ledger_free(&t->ledger);
	free(t);
}

int orbit__transport_start(struct orbit__transport **out, uv_loop_t *loop,
                           const struct orbit__config *cfg, struct orbit__drain *drain,
                           struct orbit__clock_conv *clock, struct orbit__logs *logs,
                           const struct orbit__transport_events *ev)
{
	*out = NULL;
	struct orbit__transport *t = calloc(1, sizeof *t);
	if (t == NULL)
		return -ENOMEM;
	t->tev = ev;
	t->loop = loop;
	t->drain = drain;
	t->cfg = cfg;
	t->ev = (struct orbit__output_events){
	    .ctx = t, .ready = on_ready, .settled = on_settled, .broken = on_broken, .idle = on_idle};
	int err = orbit__output_composite(&t->out, loop, cfg, (struct orbit__segment *)drain->seg);
	if (err) {
		release(t);
		return err;
	}
	t->out->ev = &t->ev;
	err = orbit__ledger_init(&t->ledger, drain, logs);
	if (err) {
		release(t);
		return err;
	}
	t->ledger_init = 1;
	const struct orbit__stream_sink sink = {.ctx = t, .frame = on_frame};
	err = orbit__stream_init(cfg, drain, clock, &t->ledger, &sink);
	if (err) {
		release(t);
		return err;
	}
	err = t->out->ops->start(t->out);
	if (err < 0) {
		release(t);
		return err;
	}
	*out = t;
	if (err == 0) /* ready now: a file */
		on_ready(t, t->out);
	return 0;
}

int orbit__transport_ready(struct orbit__transport *t, int final)
{
	if (!orbit__stream_open() || !t->answered)
		return 0;
	if (final || t->out->ops->pending(t->out) < t->cfg->send_buffer)
		return 1;
	t->blocked = 1; /* the settlement that makes room brings the next pass */
	return 0;
}

void orbit__transport_records(struct orbit__transport *t, uint32_t ring, uint64_t first,
                              const uint8_t *records, uint32_t n)
{
	(void)t;
	orbit__stream_records(ring, first, records, n);
}

void orbit__transport_page(struct orbit__transport *t, uint32_t ring, const uint8_t *page,
                           size_t len)
{
	(void)t;
	orbit__stream_page(ring, page, len);
}

void orbit__transport_sched(struct orbit__transport *t, struct orbit__sched *sched,
                            const char *off)
{
	(void)t;
	orbit__stream_sched(sched, off);
}

int orbit__transport_kernel_page(struct orbit__transport *t, uint32_t cpu, const uint8_t *page,
                                 size_t len)
{
	(void)t;
	return orbit__stream_kernel_page(cpu, page, len);
}

void orbit__transport_pass_done(struct orbit__transport *t, int cut)
{
	orbit__stream_pass_done(uv_now(t->loop), cut);
}

void orbit__transport_end(struct orbit__transport *t)
{
	if (!orbit__stream_open())
		return;
	if (!t->answered) { /* nothing in it but its Handshake */
		orbit__stream_abort();
		return;
	}
	orbit__stream_end();
	t->out->ops->end(t->out);
}

void orbit__transport_give_up(struct orbit__transport *t)
{
	if (idle(t))
		return;
	t->gave_up = 1;
	t->out->ops->give_up(t->out); /* broken, with the frames' fate */
}

int orbit__transport_coming(struct orbit__transport *t)
{
	return !t->dead && (t->out->ops->coming(t->out) || (orbit__stream_open() && !t->answered));
}

void orbit__transport_hurry(struct orbit__transport *t)
{
	t->out->ops->hurry(t->out);
}

int orbit__transport_fallback(struct orbit__transport *t)
{
	if (orbit__stream_open() && t->answered)
		return 1;
	return !t->dead && t->out->ops->fallback(t->out);
}

int orbit__transport_why_not(struct orbit__transport *t, char *buf, size_t len, uint32_t waited_ms,
                             uint64_t *undelivered)
{
	*undelivered = 0;
	if (t->dead) /* refused, or the file failed: said then */
		return 0;
	*undelivered = t->ledger_init ? orbit__ledger_undelivered(&t->ledger) : 0;
	if (!t->cfg->collector_set) {
		snprintf(buf, len, t->cfg->capture_set ? "no capture file" : "no flight ring");
		return 1;
	}
	const char *trouble = t->out->ops->trouble(t->out);
	unsigned long long acked = t->last.frames_acked, sent = t->last.frames_sent;
	if (t->gave_up) /* the last stream was open at the deadline */
		snprintf(buf, len,
		         "collector %s acknowledged %llu of %llu frames of the last stream "
		         "within %u ms",
		         t->cfg->collector, acked, sent, waited_ms);
	else if (*undelivered > 0) /* it died, and no other stream took its account */
		snprintf(buf, len,
		         "collector %s not reached again within %u ms (%s%sit had "
		         "acknowledged %llu of %llu frames of the last stream)",
		         t->cfg->collector, waited_ms, trouble, trouble[0] ? "; " : "", acked, sent);
	else
		snprintf(buf, len, "collector %s %s within %u ms%s%s%s", t->cfg->collector,
		         t->streams ? "not reached again" : "not reached", waited_ms,
		         trouble[0] ? " (" : "", trouble, trouble[0] ? ")" : "");
	return 1;
}

void orbit__transport_on_idle(struct orbit__transport *t, void (*done)(void *ctx), void *ctx)
{
	t->idle_cb = done;
	t->idle_ctx = ctx;
	check_idle(t);
}

void orbit__transport_forget(struct orbit__transport *t)
{
	t->out->ops->forget(t->out);
	/* The parent's buffers stay allocated in the child: freeing them is
	 * harmless but the zstd context may be mid-use in no thread of ours. */
	free(t);
}

void orbit__transport_close(struct orbit__transport *t)
{
	release(t);
}
