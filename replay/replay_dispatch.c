/*
 * replay_dispatch.c — every event of every stream, from the reconstructor
 * (format/reconstruct.h) and the log pages (replay_log.c), through the
 * filters to the statistics and to each exporter's callbacks
 * (replay_export.h).
 *
 * Per scope, before any filter: the thread it belongs to (counted in its
 * stream) and its self time (replay_stats.c), which needs every scope of
 * the thread. Then the filters (--thread, --name, --from/--to: what
 * overlaps the window), the name interned, the statistics, and the
 * exporters: scope callbacks as scopes end, slice callbacks through the
 * thread's tie order (replay_order.c), which holds a scope's begin while a
 * scope that encloses it may still begin at the same instant. The held
 * scopes of all threads together are bounded (ORBIT_RP_HELD_TOTAL): past
 * that, a thread's are written as they are.
 *
 * A scope's on-CPU, runnable and blocked time comes from its stream's
 * scheduling states, when the scan built them (replay_sched_scan.h), final
 * up to the scope's end by the time it is here, through a cursor per
 * thread: scopes come in about start order.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "replay_dispatch.h"
#include "replay_sched.h"

#define ADD(list, n, cb)                                                                           \
	do {                                                                                       \
		if (x->ex->cb) {                                                                   \
			d->list[d->n].fn = x->ex->cb;                                              \
			d->list[d->n].x = x;                                                       \
			d->n++;                                                                    \
		}                                                                                  \
	} while (0)

void orbit__rp_dispatch_add(struct orbit_rp_dispatch *d, struct orbit_rp_export *x)
{
	ADD(stream, nstream, stream);
	ADD(stream_end, nstream_end, stream_end);
	ADD(scope, nscope, scope);
	ADD(async, nasync, async);
	ADD(slice, nslice, slice);
	ADD(value, nvalue, value);
	ADD(line, nline, line);
	ADD(loss, nloss, loss);
	ADD(kernel, nkernel, kernel);
	ADD(tick, ntick, tick);
}

void orbit__rp_dispatch_tick(struct orbit_rp_dispatch *d)
{
	for (uint32_t i = 0; i < d->ntick; i++)
		d->tick[i].fn(d->tick[i].x);
}

void orbit__rp_dispatch_filter(struct orbit_rp_dispatch *d, const struct orbit_replay_options *o,
                               uint64_t from, uint64_t to)
{
	d->has_thread = o->has_thread;
	d->thread = o->thread;
	d->name = o->name;
	d->name_len = o->name ? strlen(o->name) : 0;
	d->from = from;
	d->to = to;
	d->filtering = d->has_thread || d->name != NULL || from > 0 || to < UINT64_MAX;
}

static int filter(const struct orbit_rp_dispatch *d, uint32_t tid, const char *name, size_t len,
                  uint64_t start, uint64_t end)
{
	if (d->has_thread && tid != d->thread)
		return 0;
	if (end < d->from || start > d->to)
		return 0;
	if (d->name != NULL) {
		if (name == NULL ||
		    (d->name_len > 0 && memmem(name, len, d->name, d->name_len) == NULL))
			return 0;
	}
	return 1;
}

/* Whether an event passes --thread, --name, --from and --to. */
static inline int passes(const struct orbit_rp_dispatch *d, uint32_t tid, const char *name,
                         size_t len, uint64_t start, uint64_t end)
{
	return !d->filtering || filter(d, tid, name, len, start, end);
}

/* The thread of an event of stream s, counted in the stream. */
static struct orbit_rp_thread *stream_thread(struct orbit_rp_dispatch *d, struct orbit_rp_stream *s,
                                             uint32_t tid)
{
	struct orbit_rp_thread *th = d->threads->last;
	if (th == NULL || th->tid != tid || th->pid != s->pid)
		th = orbit__rp_thread(d->threads, s->pid, tid);
	if (th != NULL && th->stream != s) {
		th->stream = s;
		s->threads++;
	}
	return th;
}

/* ---- scopes and spans ---- */

static void emit_slice(void *ctx, const struct orbit_rp_span *s, int end)
{
	struct orbit_rp_dispatch *d = ctx;
	for (uint32_t i = 0; i < d->nslice; i++)
		d->slice[i].fn(d->slice[i].x, s, end);
}

static void slices(struct orbit_rp_dispatch *d, struct orbit_rp_thread *th,
                   const struct orbit_rp_span *sp)
{
	if (th == NULL || th->tid != sp->tid || th->pid != sp->pid) { /* overflow thread */
		emit_slice(d, sp, 0);
		emit_slice(d, sp, 1);
		return;
	}
	int64_t before = th->order.n;
	orbit__rp_order_scope(&th->order, sp, emit_slice, d);
	d->held += (int64_t)th->order.n - before;
	if (d->held > ORBIT_RP_HELD_TOTAL) { /* many threads hold ties */
		d->held -= th->order.n;
		orbit__rp_order_flush(&th->order, emit_slice, d);
	}
}

/* Where [start, end) of thread tid went, from the stream's states: 1 and
 * *out, or 0 when they do not know the thread or nothing of the interval. */
static int sched_time(struct orbit_rp_thread *th, const struct orbit_rp_stream *s, uint32_t tid,
                      uint64_t start, uint64_t end, struct orbit_rp_sched_time *out)
{
	const struct orbit__rp_sched_timeline *tl = s->kernel.tl;
	if (tl == NULL || tid > INT32_MAX)
		return 0;
	struct orbit__rp_sched_times t;
	if (th != NULL && th->tid == tid && th->pid == s->pid) {
		if (th->sched_tl != tl) { /* a cursor per thread and timeline */
			const struct orbit__rp_sched_thread *k =
			    orbit__rp_sched_thread(tl, (int32_t)tid);
			if (k == NULL) /* not yet: states still being built may name it */
				return 0;
			th->sched_tl = tl;
			orbit__rp_sched_cursor_init(&th->sched_cur, k);
			/* The kernel knows the name of a thread that ended before
			 * the stream's ThreadName packets were sent (at its end,
			 * before version 3: docs/format.md 4.5). */
			if (s->version < ORBIT_PROTOCOL_UP_FRONT && k->comm[0] != '\0' &&
			    th->name_source == ORBIT_RP_NAMED_NONE)
				orbit__rp_thread_name(th, k->comm, strlen(k->comm),
				                      ORBIT_RP_NAMED_OS);
		}
		orbit__rp_sched_cursor_times(&th->sched_cur, start, end, &t);
	} else { /* the overflow thread */
		const struct orbit__rp_sched_thread *k = orbit__rp_sched_thread(tl, (int32_t)tid);
		if (k == NULL)
			return 0;
		orbit__rp_sched_times(k, start, end, &t);
	}
	if (end > start && t.unknown_ns == end - start)
		return 0; /* the kernel's events say nothing of it (before recording) */
	*out = (struct orbit_rp_sched_time){t.oncpu_ns, t.runnable_ns, t.blocked_ns};
	return 1;
}

static void on_span(struct orbit_rp_dispatch *d, struct orbit_rp_stream *s,
                    const struct orbit_event *ev, int async)
{
	struct orbit_rp_thread *th = stream_thread(d, s, ev->tid);
	/* An unfinished scope or span ends where it is last known open. */
	uint64_t end = ev->unfinished ? ev->open_until : ev->end;
	end = end < ev->start ? ev->start : end;
	uint64_t self = 0;
	if (!async && th != NULL)
		self = orbit__rp_self_time(th, ev->depth, end - ev->start, ev->unfinished);
	uint32_t ftid = async && d->has_thread && ev->end_tid == d->thread ? ev->end_tid : ev->tid;
	if (!passes(d, ftid, ev->name, ev->name_len, ev->start, end))
		return;
	struct orbit_rp_span sp = {
	    .stream = s,
	    .thread = th,
	    .pid = s->pid,
	    .tid = ev->tid,
	    .end_tid = ev->end_tid,
	    .depth = ev->depth,
	    .flags = (async ? ORBIT_RP_ASYNC : 0) | (ev->unfinished ? ORBIT_RP_UNFINISHED : 0) |
	             (ev->name_incomplete ? ORBIT_RP_NAME_INCOMPLETE : 0) |
	             (ev->time_untrusted ? ORBIT_RP_TIME_UNTRUSTED : 0) |
	             (ev->has_attrs ? ORBIT_RP_ATTRS : 0) |
	             (!async && ev->unfinished && s->finishing ? ORBIT_RP_OPEN_AT_END : 0),
	    .color = ev->color,
	    .group = ev->group,
	    .id = ev->id,
	    .start = ev->start,
	    .end = end,
	    .self = self,
	    .name = ev->name,
	    .name_len = (uint32_t)ev->name_len,
	    .loc = orbit__rp_sites_get(&s->sites, ev->site),
	};
	struct orbit_rp_sched_time st;
	if (!async && sched_time(th, s, ev->tid, ev->start, end, &st))
		sp.sched = &st;
	sp.name_id = orbit__rp_names_intern(d->names, ev->name, ev->name_len);
	if (sp.name_id != ORBIT_RP_NAME_NONE)
		sp.name = orbit__rp_name(d->names, sp.name_id)->bytes;
	orbit__rp_stats_span(d->stats, &sp);
	if (async) {
		for (uint32_t i = 0; i < d->nasync; i++)
			d->async[i].fn(d->async[i].x, &sp);
		return;
	}
	for (uint32_t i = 0; i < d->nscope; i++)
		d->scope[i].fn(d->scope[i].x, &sp);
	if (d->nslice)
		slices(d, th, &sp);
}

/* ---- values, thread names, log lines ---- */

static void on_value(struct orbit_rp_dispatch *d, struct orbit_rp_stream *s,
                     const struct orbit_event *ev)
{
	struct orbit_rp_thread *th = stream_thread(d, s, ev->tid);
	if (!passes(d, ev->tid, ev->name, ev->name_len, ev->start, ev->start))
		return;
	d->stats->values++;
	struct orbit_rp_value v = {
	    .stream = s,
	    .thread = th,
	    .pid = s->pid,
	    .tid = ev->tid,
	    .flags = (ev->name_incomplete ? ORBIT_RP_NAME_INCOMPLETE : 0) |
	             (ev->time_untrusted ? ORBIT_RP_TIME_UNTRUSTED : 0) |
	             (ev->has_attrs ? ORBIT_RP_ATTRS : 0),
	    .color = ev->color,
	    .group = ev->group,
	    .time = ev->start,
	    .kind = ev->value_kind,
	    .bits = ev->value_bits,
	    .name = ev->name,
	    .name_len = (uint32_t)ev->name_len,
	    .loc = d->nvalue ? orbit__rp_sites_get(&s->sites, ev->site) : NULL,
	};
	orbit__rp_values_add(&d->stats->vals, &v);
	for (uint32_t i = 0; i < d->nvalue; i++)
		d->value[i].fn(d->value[i].x, &v);
}

void orbit__rp_dispatch_event(void *ctx, const struct orbit_event *ev)
{
	struct orbit_rp_stream *s = ctx;
	struct orbit_rp_dispatch *d = s->to;
	orbit__rp_stream_saw(s, ev->start, ev->end);
	switch (ev->type) {
	case ORBIT_EVENT_SCOPE:
		s->scopes++;
		if (s->finishing && ev->unfinished) /* open when the input ended */
			orbit__rp_open_note(&s->open_at_end, ev->tid, ev->depth, ev->start,
			                    ev->name, ev->name_len);
		on_span(d, s, ev, 0);
		break;
	case ORBIT_EVENT_ASYNC:
		s->spans++;
		on_span(d, s, ev, 1);
		break;
	case ORBIT_EVENT_VALUE:
		s->values++;
		on_value(d, s, ev);
		break;
	case ORBIT_EVENT_THREAD_NAME: {
		struct orbit_rp_thread *th = stream_thread(d, s, ev->tid);
		s->thread_names++;
		if (th != NULL && th->tid == ev->tid)
			orbit__rp_thread_name(th, ev->name, ev->name_len, ORBIT_RP_NAMED_RECORD);
		break;
	}
	}
}

void orbit__rp_dispatch_line(void *ctx, const struct orbit_rp_line *l)
{
	struct orbit_rp_dispatch *d = ctx;
	int marker = (l->flags & ORBIT_RP_MARKER) != 0;
	if (!passes(d, l->tid, marker ? NULL : l->text, l->len, l->time, l->time))
		return;
	d->stats->logs++;
	if (d->nline == 0)
		return;
	struct orbit_rp_line line = *l;
	line.thread = orbit__rp_thread(d->threads, l->pid, l->tid);
	for (uint32_t i = 0; i < d->nline; i++)
		d->line[i].fn(d->line[i].x, &line);
}

/* ---- streams, loss ---- */

void orbit__rp_dispatch_stream(struct orbit_rp_dispatch *d, const struct orbit_rp_stream *s)
{
	for (uint32_t i = 0; i < d->nstream; i++)
		d->stream[i].fn(d->stream[i].x, s);
}

/* A stream that names its threads before their records (version 3) may
 * still have some it could not name (gone before the agent read their
 * name): the kernel's events know them. At its end, so that every reading
 * of the stream names them alike. */
static void kernel_names(struct orbit_rp_dispatch *d, const struct orbit_rp_stream *s)
{
	const struct orbit__rp_sched_timeline *tl = s->kernel.tl;
	if (tl == NULL || s->version < ORBIT_PROTOCOL_UP_FRONT)
		return;
	for (uint32_t i = 0; i < d->threads->n; i++) {
		struct orbit_rp_thread *th = d->threads->all[i];
		if (th->stream != s || th->name_source != ORBIT_RP_NAMED_NONE ||
		    th->tid > INT32_MAX)
			continue;
		const struct orbit__rp_sched_thread *k =
		    orbit__rp_sched_thread(tl, (int32_t)th->tid);
		if (k != NULL && k->comm[0] != '\0')
			orbit__rp_thread_name(th, k->comm, strlen(k->comm), ORBIT_RP_NAMED_OS);
	}
}

void orbit__rp_dispatch_stream_end(struct orbit_rp_dispatch *d, const struct orbit_rp_stream *s)
{
	kernel_names(d, s);
	for (uint32_t i = 0; i < d->nstream_end; i++)
		d->stream_end[i].fn(d->stream_end[i].x, s);
}

void orbit__rp_dispatch_loss(struct orbit_rp_dispatch *d, const struct orbit_rp_loss_mark *m)
{
	for (uint32_t i = 0; i < d->nloss; i++)
		d->loss[i].fn(d->loss[i].x, m);
}

void orbit__rp_dispatch_kernel(struct orbit_rp_dispatch *d, const struct orbit_rp_kernel_page *p)
{
	struct orbit_rp_kernel_page kp = *p;
	if (d->from > 0 || d->to < UINT64_MAX) { /* the window */
		if (p->n > d->kev_cap) {
			struct orbit__rp_sched_event *e = realloc(d->kev, p->n * sizeof *e);
			if (e == NULL)
				return;
			d->kev = e;
			d->kev_cap = p->n;
		}
		kp.n = 0;
		for (size_t i = 0; i < p->n; i++)
			if (p->events[i].time >= d->from && p->events[i].time <= d->to)
				d->kev[kp.n++] = p->events[i];
		kp.events = d->kev;
	}
	for (uint32_t i = 0; i < d->nkernel; i++)
		d->kernel[i].fn(d->kernel[i].x, &kp);
}

void orbit__rp_dispatch_free(struct orbit_rp_dispatch *d)
{
	free(d->kev);
	d->kev = NULL;
	d->kev_cap = 0;
}

void orbit__rp_dispatch_flush(struct orbit_rp_dispatch *d)
{
	if (d->nslice == 0)
		return;
	for (uint32_t i = 0; i < d->threads->n; i++)
		orbit__rp_order_flush(&d->threads->all[i]->order, emit_slice, d);
	if (d->threads->overflow)
		orbit__rp_order_flush(&d->threads->overflow->order, emit_slice, d);
	d->held = 0;
}
