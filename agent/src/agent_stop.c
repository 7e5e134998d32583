/* agent_stop.c — how the agent ends; see agent_stop.h. */
#include "agent_stop.h"

#include <stdio.h>

#include "output.h"
#include "sched_tracefs.h"
#include "stream.h"

static void on_close(uv_handle_t *h)
{
	(void)h;
}

#define LOSS_LINE_NS 60000000000ull /* at most one loss line a minute */

int orbit__agent_stop_init(struct orbit__agent_stop *s, uv_loop_t *loop)
{
	s->loop = loop;
	s->stopping = s->waiting = s->streamed = s->done = s->gave_up = s->waited_out = 0;
	s->said_lost = s->said_loss_ns = 0;
	return uv_timer_init(loop, &s->timer);
}

void orbit__agent_stop_close(struct orbit__agent_stop *s)
{
	uv_close((uv_handle_t *)&s->timer, on_close);
}

/* Why records are not being delivered, for the end-of-run line; 0 if that
 * was said already (refused, the file failed). *undelivered: the records
 * of streams that died unacknowledged (the rings' unread claims are
 * added by the caller). */
static int why_not(const struct orbit__agent_stop *s, char *buf, size_t len, uint64_t *undelivered)
{
	const struct orbit__config *c = s->cfg;
	uint32_t waited_ms = orbit__config_stop_deadline_ms(c);
	struct orbit__stream_report r;
	orbit__stream_report(s->stream, &r);
	*undelivered = 0;
	if (r.dead)
		return 0;
	*undelivered = r.undelivered;
	if (!c->collector_set) {
		snprintf(buf, len, c->capture_set ? "no capture file" : "no flight ring");
		return 1;
	}
	const char *trouble = s->out->ops->trouble(s->out);
	unsigned long long acked = r.last.frames_acked, sent = r.last.frames_sent;
	/* "within" the deadline only when it was waited out: an attempt that
	 * failed (refused) ended the wait before it. */
	char within[48] = "";
	if (s->waited_out)
		snprintf(within, sizeof within, " within %u ms", waited_ms);
	if (s->gave_up) /* the last stream was open at the deadline */
		snprintf(buf, len,
		         "collector %s acknowledged %llu of %llu frames of the last stream "
		         "within %u ms",
		         c->collector, acked, sent, waited_ms);
	else if (*undelivered > 0) /* it died, and no other stream took its account */
		snprintf(buf, len,
		         "collector %s not reached again%s (%s%sit had "
		         "acknowledged %llu of %llu frames of the last stream)",
		         c->collector, within, trouble, trouble[0] ? "; " : "", acked, sent);
	else
		snprintf(buf, len, "collector %s %s%s%s%s%s", c->collector,
		         r.streams ? "not reached again" : "not reached", within,
		         trouble[0] ? " (" : "", trouble, trouble[0] ? ")" : "");
	return 1;
}

/* The end-of-run lines: what could not be delivered, and why; and, when
 * producers overwrote records, the knob that gives the rings more room. */
static void say_at_end(struct orbit__agent_stop *s)
{
	char why[512] = "";
	uint64_t undelivered = 0;
	/* Tracing stopped for a reason said then (refused, the file failed):
	 * nothing more to say. */
	if (s->stream != NULL && !why_not(s, why, sizeof why, &undelivered))
		return;
	/* What the rings still hold, and what streams took that no collector
	 * acknowledged and no later stream accounted for. */
	uint64_t left = (s->streamed ? 0 : orbit__drain_unread(s->drain)) + undelivered;
	if (left > 0) {
		fprintf(stderr, "orbit: %llu event(s) were not delivered: %s\n",
		        (unsigned long long)left, why);
	}
	const struct orbit__segment *seg = s->drain->seg;
	uint64_t lapped = orbit__drain_lapped(s->drain) - s->lapped_at_start, claimed = 0;
	for (uint32_t i = 0; i < seg->layout.ring_count; i++)
		claimed += orbit__ring_claimed(seg, i);
	if (lapped > 0) {
		uint64_t budget =
		    (uint64_t)seg->layout.ring_count * seg->layout.slots_per_ring * 64;
		int mib = budget % (1u << 20) == 0;
		fprintf(stderr,
		        "orbit: %llu of %llu event(s) (%.2f%%) were overwritten before the agent "
		        "read them; ORBIT_RING_BUDGET (now %llu%c) gives the rings more room\n",
		        (unsigned long long)lapped, (unsigned long long)claimed,
		        claimed ? 100.0 * (double)lapped / (double)claimed : 0.0,
		        (unsigned long long)(mib ? budget >> 20 : budget >> 10), mib ? 'M' : 'K');
	}
}

void orbit__agent_loss_line(struct orbit__agent_stop *s, uint64_t now_ns)
{
	if (s->stopping || (s->said_loss_ns != 0 && now_ns - s->said_loss_ns < LOSS_LINE_NS))
		return;
	const struct orbit__segment *seg = s->drain->seg;
	uint64_t over = orbit__drain_lapped(s->drain) - s->lapped_at_start;
	for (uint32_t i = 0; i < seg->layout.ring_count; i++) {
		uint64_t claimed = orbit__ring_claimed(seg, i), next = s->drain->ring[i].next;
		uint64_t ahead = claimed > next ? claimed - next : 0;
		if (ahead > seg->layout.slots_per_ring) /* overwritten already, not yet counted */
			over += ahead - seg->layout.slots_per_ring;
	}
	struct orbit__stream_report r = {0};
	if (s->stream != NULL)
		orbit__stream_report(s->stream, &r);
	if (r.dead)
		return; /* tracing is off, said in its one line: nothing more is said */
	uint64_t lost = over + r.unsent;
	if (lost <= s->said_lost)
		return;
	const char *trouble = s->out != NULL ? s->out->ops->trouble(s->out) : "";
	fprintf(stderr,
	        "orbit: events are being lost: %llu so far (%llu overwritten in the rings before "
	        "the agent could read them, %llu never sent%s%s); at most one such line a "
	        "minute\n",
	        (unsigned long long)lost, (unsigned long long)over, (unsigned long long)r.unsent,
	        trouble[0] ? ": " : "", trouble);
	s->said_lost = lost;
	s->said_loss_ns = now_ns;
}

/* The stop is over: every frame settled, or the deadline gave up on them. */
static void complete(void *arg)
{
	struct orbit__agent_stop *s = arg;
	if (s->done)
		return;
	s->done = 1;
	uv_timer_stop(&s->timer);
	say_at_end(s);
	s->ev->done(s->ev->ctx);
}

static void on_give_up(uv_timer_t *t)
{
	struct orbit__agent_stop *s = t->data;
	if (s->out->ops->pending(s->out) != 0) {
		/* An answered stream's frames; a Handshake never answered is a
		 * collector not reached. */
		struct orbit__stream_report r = {0};
		if (s->stream != NULL)
			orbit__stream_report(s->stream, &r);
		s->gave_up = r.open_answered;
		s->out->ops->give_up(s->out); /* broken, then idle, and so complete */
	}
	complete(s); /* at the latest now */
}

/* The stop, once a stream is open or will not be: the final pass, the
 * stream's end, then the end once every frame is written. */
static void finish(struct orbit__agent_stop *s)
{
	s->waiting = 0;
	uv_timer_stop(&s->timer);
	int streamed = s->stream == NULL || orbit__stream_ready(s->stream, 1);
	if (s->sched->sched != NULL) /* nothing more is recorded; the final pass reads the rest */
		orbit__sched_stop(s->sched->sched);
	if (streamed)
		s->ev->final_pass(s->ev->ctx);
	s->streamed = streamed;
	if (s->stream == NULL) {
		complete(s);
		return;
	}
	orbit__stream_end(s->stream);
	/* Done once every frame is settled (acknowledged), or at the deadline:
	 * the host waits ORBIT_FLUSH_TIMEOUT_MS from the stop's start, the wait
	 * for a stream included, and the agent gives up a little before, to
	 * count and say what is lost. */
	uint64_t deadline = orbit__config_stop_deadline_ms(s->cfg);
	uint64_t spent = uv_now(s->loop) - s->at_ms;
	uint64_t left = deadline > spent ? deadline - spent : 0;
	s->timer.data = s;
	uv_timer_start(&s->timer, on_give_up, left, 0);
	orbit__stream_on_idle(s->stream, complete, s);
}

static void on_stop_timeout(uv_timer_t *t)
{
	struct orbit__agent_stop *s = t->data;
	if (!s->waiting)
		return;
	s->waited_out = 1;
	/* No stream came: the local copy, if there is one, takes it all. */
	s->out->ops->fallback(s->out);
	finish(s);
}

static void on_stream_came(uv_timer_t *t)
{
	finish(t->data);
}

/* From the stream's events, inside a chain of calls that may still use the
 * stream when it returns: the stop goes on from the loop, at once, not
 * from here (its end frees the stream). */
void orbit__agent_stop_stream_came(struct orbit__agent_stop *s)
{
	s->timer.data = s;
	uv_timer_start(&s->timer, on_stream_came, 0, 0);
}

void orbit__agent_stop_begin(struct orbit__agent_stop *s)
{
	s->stopping = 1;
	uv_update_time(s->loop);
	s->at_ms = uv_now(s->loop);
	/* A stream still on its way (connecting, or between retries) is
	 * waited for, at most until the stop's deadline: a short program
	 * keeps its trace. */
	int streaming = s->stream == NULL || orbit__stream_ready(s->stream, 1);
	if (!streaming && s->out->ops->coming(s->out) && s->cfg->flush_timeout_ms > 0) {
		s->waiting = 1;
		s->out->ops->hurry(s->out);
		s->timer.data = s;
		uv_timer_start(&s->timer, on_stop_timeout, orbit__config_stop_deadline_ms(s->cfg),
		               0);
		return;
	}
	if (!streaming)
		s->out->ops->fallback(s->out);
	finish(s);
}
