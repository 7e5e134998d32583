/*
 * output_composite.c — the one output a stream writes to: the outputs the
 * configuration asks for, behind output.h's interface, and which stream
 * each of them carries.
 *
 *   ORBIT_COLLECTOR         the TCP output (main): one stream per connection
 *   ORBIT_CAPTURE           the file output (main): one stream
 *   both                    TCP (main), and the file as the local copy: it
 *                           takes the frames of the first stream the
 *                           collector answered, the same bytes
 *   ORBIT_FLIGHT            the flight ring in the segment: alone, it is
 *                           main; beside the others, it takes every frame of
 *                           each stream of the main output, starting over
 *                           with each one (output_flight.c)
 *
 * The stream's fate is its carrier's: the main output's, or the local
 * copy's once it carries a stream of its own (fallback: the collector was
 * never reached before exit). Only the carrier's events go to the owner;
 * the copy and the flight ring failing stop themselves, not the stream.
 *
 * A stream's Handshake frame settling on the main output is the
 * destination's answer (a file at once, a collector with its first Ack);
 * the local copy starts then, with that Handshake, so that it holds the
 * first answered stream byte for byte. That one frame is kept (copied) from
 * its send until the answer; every other frame is handed to each output
 * that carries it during the one send call, the main output last (TCP
 * takes the bytes: output.h).
 *
 * Runs on the agent thread's loop only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

struct composite {
	struct orbit__output o;
	const struct orbit__config *cfg;
	struct orbit__output_events leaf_ev; /* what the outputs below say, to us */
	struct orbit__output *main;   /* the collector, the capture file or the flight ring */
	struct orbit__output *copy;   /* the local copy beside a collector */
	struct orbit__output *flight; /* the flight ring beside them */
	int copy_on;                  /* the copy takes the open stream's frames */
	int copy_used;                /* the copy had its one stream */
	int copy_alone;               /* ... of its own, the collector never reached */
	int flight_on;                /* the flight ring takes the open stream's frames */
	int answered;                 /* the main output's stream was answered */
	int dead;                     /* refused, or the file failed: never ready again */
	uint8_t *hs;                  /* the open stream's Handshake, until answered */
	size_t hs_len;
	uint64_t hs_seq;
};

static struct composite *of(struct orbit__output *o)
{
	return (struct composite *)o;
}

/* The output whose fate is the stream's. */
static struct orbit__output *carrier(const struct composite *c)
{
	return c->copy_alone ? c->copy : c->main;
}

static void forget_handshake(struct composite *c)
{
	free(c->hs);
	c->hs = NULL;
	c->hs_len = 0;
}

static void copy_end(struct composite *c)
{
	if (c->copy_on)
		c->copy->ops->end(c->copy);
	c->copy_on = 0;
}

/* A stream begins on the main output: the flight ring starts over with
 * it, from its Handshake on. */
static void main_ready(struct composite *c)
{
	c->answered = 0;
	if (c->flight != NULL)
		c->flight_on = c->flight->ops->start(c->flight) == 0;
}

/* The main output's stream was answered: the local copy, if it never had a
 * stream, takes this one from its Handshake on. */
static void main_answered(struct composite *c)
{
	c->answered = 1;
	if (c->copy != NULL && !c->copy_used && !c->copy_alone) {
		c->copy_used = 1;
		c->copy_on = c->copy->ops->start(c->copy) == 0;
		struct orbit__frame f = {.bytes = c->hs,
		                         .len = c->hs_len,
		                         .seq = c->hs_seq,
		                         .kind = ORBIT__FRAME_HANDSHAKE};
		if (c->copy_on && (c->hs == NULL || c->copy->ops->send(c->copy, &f) != 0))
			c->copy_on = 0;
	}
	forget_handshake(c);
}

/* ---- what the outputs below say ---- */

static void on_ready(void *ctx, struct orbit__output *o)
{
	struct composite *c = ctx;
	if (o != c->main || c->copy_alone) /* the copy carries the stream now */
		return;
	main_ready(c);
	c->o.ev->ready(c->o.ev->ctx, &c->o);
}

static void on_settled(void *ctx, struct orbit__output *o, uint64_t seq, int ok)
{
	struct composite *c = ctx;
	if (o != carrier(c)) /* the copy's fate does not change the stream's */
		return;
	if (ok && !c->answered && !c->copy_alone)
		main_answered(c);
	c->o.ev->settled(c->o.ev->ctx, &c->o, seq, ok);
}

static void on_broken(void *ctx, struct orbit__output *o, int fatal, const struct orbit__fate *fate)
{
	struct composite *c = ctx;
	if (o != carrier(c)) {
		if (o == c->flight)
			c->flight_on = 0;
		else if (o == c->copy)
			c->copy_on = 0; /* the copy stops; the stream goes on */
		return;
	}
	c->answered = 0;
	forget_handshake(c);
	copy_end(c);
	if (fatal)
		c->dead = 1;
	c->o.ev->broken(c->o.ev->ctx, &c->o, fatal, fate);
}

static void on_idle(void *ctx, struct orbit__output *o)
{
	struct composite *c = ctx;
	if (o == carrier(c) && c->o.ev->idle != NULL)
		c->o.ev->idle(c->o.ev->ctx, &c->o);
}

/* ---- the interface ---- */

static int composite_start(struct orbit__output *o)
{
	struct composite *c = of(o);
	int err = c->main->ops->start(c->main);
	if (err == 0) /* ready now (a file): the owner begins its stream */
		main_ready(c);
	return err;
}

static int composite_send(struct orbit__output *o, struct orbit__frame *f)
{
	struct composite *c = of(o);
	if (f->kind == ORBIT__FRAME_HANDSHAKE && c->copy != NULL && !c->copy_used) {
		/* Kept for the local copy, which starts once this stream is
		 * answered: the copy is the first answered stream's bytes. */
		forget_handshake(c);
		c->hs = malloc(f->len);
		if (c->hs != NULL) {
			memcpy(c->hs, f->bytes, f->len);
			c->hs_len = f->len;
			c->hs_seq = f->seq;
		}
	}
	/* The main output last: TCP takes the frame's bytes, and may free
	 * them before it returns (output.h, orbit__frame_take). */
	if (c->flight_on && c->flight->ops->send(c->flight, f) != 0)
		c->flight_on = 0;
	if (c->copy_on && c->copy->ops->send(c->copy, f) != 0) {
		c->copy_on = 0;
		if (c->copy_alone)
			return -EIO;
	}
	return c->copy_alone ? 0 : c->main->ops->send(c->main, f);
}

static size_t composite_pending(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	const struct orbit__output *k = carrier(c);
	return k->ops->pending(k);
}

static int composite_coming(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	return !c->dead && c->main->ops->coming(c->main);
}

static void composite_hurry(struct orbit__output *o)
{
	struct composite *c = of(o);
	c->main->ops->hurry(c->main);
}

static void composite_end(struct orbit__output *o)
{
	struct composite *c = of(o);
	copy_end(c);
	if (c->flight_on)
		c->flight->ops->end(c->flight);
	c->flight_on = 0;
	if (!c->copy_alone)
		c->main->ops->end(c->main);
}

static void composite_give_up(struct orbit__output *o)
{
	struct composite *c = of(o);
	if (!c->copy_alone) /* a file settled every frame when it wrote it */
		c->main->ops->give_up(c->main);
}

static const char *composite_trouble(const struct orbit__output *o)
{
	const struct composite *c = (const struct composite *)o;
	return c->main->ops->trouble(c->main);
}

/* Closes (or, in a forked child, forgets) every output below, then frees
 * c; the handshake copy is ours, in the child's memory too. */
static void release(struct composite *c, int forget, int copies)
{
	struct orbit__output *leaf[] = {c->flight, c->copy, c->main};
	for (size_t i = 0; i < sizeof leaf / sizeof leaf[0]; i++)
		if (leaf[i] != NULL && forget)
			leaf[i]->ops->forget(leaf[i], copies);
		else if (leaf[i] != NULL)
			leaf[i]->ops->close(leaf[i]);
	free(c->hs);
	free(c);
}

static void composite_close(struct orbit__output *o)
{
	release(of(o), 0, 0);
}

static void composite_forget(struct orbit__output *o, int copies)
{
	release(of(o), 1, copies);
}

/* The collector was not reached before exit: the local copy, if it never
 * had a stream, carries one alone, with everything the rings hold. */
static int composite_fallback(struct orbit__output *o)
{
	struct composite *c = of(o);
	if (c->dead || c->copy == NULL || c->copy_used)
		return 0;
	c->copy_used = 1;
	forget_handshake(c);
	if (c->copy->ops->start(c->copy) != 0)
		return 0;
	c->copy_on = 1;
	c->copy_alone = 1;
	if (c->flight != NULL) /* the stream the copy carries, from its Handshake */
		c->flight_on = c->flight->ops->start(c->flight) == 0;
	fprintf(stderr,
	        "orbit: collector %s not reached within %u ms; the trace is in the local "
	        "copy only\n",
	        c->cfg->collector, orbit__config_stop_deadline_ms(c->cfg));
	c->o.ev->ready(c->o.ev->ctx, &c->o); /* answered at once: a file */
	return 1;
}

static const struct orbit__output_ops composite_ops = {
    .start = composite_start,
    .send = composite_send,
    .pending = composite_pending,
    .coming = composite_coming,
    .hurry = composite_hurry,
    .end = composite_end,
    .give_up = composite_give_up,
    .trouble = composite_trouble,
    .close = composite_close,
    .forget = composite_forget,
    .fallback = composite_fallback,
};

int orbit__output_composite(struct orbit__output **out, uv_loop_t *loop,
                            const struct orbit__config *cfg, struct orbit__segment *seg)
{
	*out = NULL;
	if ((cfg->collector_set && !cfg->collector_ok) || (cfg->capture_set && !cfg->capture_ok))
		return -EINVAL; /* said by the configuration */
	struct composite *c = calloc(1, sizeof *c);
	if (c == NULL)
		return -ENOMEM;
	c->o = (struct orbit__output){.ops = &composite_ops, .loop = loop};
	c->cfg = cfg;
	c->leaf_ev = (struct orbit__output_events){.ctx = c,
	                                           .ready = on_ready,
	                                           .settled = on_settled,
	                                           .broken = on_broken,
	                                           .idle = on_idle};
	int want_copy = cfg->collector_set && cfg->capture_set;
	if (cfg->collector_set)
		c->main = orbit__output_tcp(loop, cfg);
	else if (cfg->capture_set)
		c->main = orbit__output_file(loop, cfg, 0);
	if (want_copy)
		c->copy = orbit__output_file(loop, cfg, 1);
	if (cfg->flight)
		c->flight = orbit__output_flight(loop, seg);
	if (c->main == NULL && c->flight != NULL) { /* the flight ring alone carries the stream */
		c->main = c->flight;
		c->flight = NULL;
	}
	if (c->main == NULL || (want_copy && c->copy == NULL) ||
	    (cfg->flight && c->main != NULL && c->flight == NULL &&
	     (cfg->collector_set || cfg->capture_set))) {
		release(c, 0, 0);
		return -ENOMEM;
	}
	struct orbit__output *leaf[] = {c->main, c->copy, c->flight};
	for (size_t i = 0; i < sizeof leaf / sizeof leaf[0]; i++)
		if (leaf[i] != NULL)
			leaf[i]->ev = &c->leaf_ev;
	*out = &c->o;
	return 0;
}
