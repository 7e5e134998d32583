/*
 * replay_core.c — reads the captures and hands what they hold to the
 * statistics and the exporters.
 *
 * One timeline: every capture is open at once and the next packet always
 * comes from the capture whose pending packet is earliest (a ring batch by
 * its first record's time, a log page by its page time; other packets go
 * as soon as they are next in their file). Only one frame per capture is in
 * memory (frame.h), so memory does not grow with the captures' size.
 *
 * Per capture, a stream runs from a Handshake to its EndOfStream: its loss
 * accounting (per ring: claimed == delivered + lapped + writer_gone +
 * backstop + at_end) and its reconstructor (format/reconstruct.h), whose
 * events go through the filters to the consumers.
 *
 * Damage: a frame the reader cannot read, a packet the format rejects, a
 * log page the parser rejects, a stream without EndOfStream, an equation
 * that does not hold: one line each on stderr naming the file (and the
 * byte offset of the frame), the rest is still read, and the run exits 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "replay_internal.h"

#define MAX_STREAMS 4096u                     /* kept for the summary, per run */
#define TAIL_BYTES ((4u << 20) + (64u << 10)) /* holds the last whole frame */
#define PROGRESS_MIN (64ull << 20)            /* input bytes before a progress bar */

struct source {
	struct orbit_rp_capture *cap;
	struct orbit_capture_reader *r;
	Orbit__Packet *peek;
	uint64_t key;      /* merge order */
	uint64_t frame_at; /* offset of the frame the peeked packet is in */
	struct orbit_rp_stream *stream;
	int done;
};

void orbit__rp_problem(struct orbit_rp_run *run, const char *fmt, ...)
{
	va_list ap;
	run->damaged = 1;
	if (run->o->err == NULL)
		return;
	if (run->progress_shown) {
		fputs("\r\033[K", run->o->err);
		run->progress_shown = 0;
	}
	fputs("orbit-replay: ", run->o->err);
	va_start(ap, fmt);
	vfprintf(run->o->err, fmt, ap);
	va_end(ap);
	fputc('\n', run->o->err);
}

int orbit__rp_filter(const struct orbit_rp_run *run, uint32_t tid, const char *name, size_t len,
                     uint64_t start, uint64_t end)
{
	const struct orbit_replay_options *o = run->o;
	if (o->has_thread && tid != o->thread)
		return 0;
	if (end < run->from || start > run->to)
		return 0;
	if (o->name != NULL) {
		size_t n = strlen(o->name);
		if (name == NULL || (n > 0 && memmem(name, len, o->name, n) == NULL))
			return 0;
	}
	return 1;
}

/* ---- streams ---- */

static void *grow_zero(void *p, size_t old, size_t n, size_t size)
{
	uint8_t *q = realloc(p, n * size);
	if (q != NULL)
		memset(q + old * size, 0, (n - old) * size);
	return q;
}

int orbit__rp_stream_page_ring(struct orbit_rp_stream *s, uint32_t ring)
{
	if (ring >= ORBIT_RP_PAGE_RINGS)
		return -1;
	if (ring < s->npage)
		return 0;
	uint32_t n = ring + 1 > 8 ? ring + 1 : 8;
	uint64_t **a[] = {&s->page_delivered, &s->page_lost, &s->page_pages, &s->page_unsent};
	for (size_t i = 0; i < 4; i++) {
		uint64_t *p = grow_zero(*a[i], s->npage, n, sizeof **a[i]);
		if (p == NULL)
			return -1;
		*a[i] = p;
	}
	s->npage = n;
	return 0;
}

static struct orbit_rp_thread *stream_thread(struct orbit_rp_stream *s, uint32_t tid)
{
	struct orbit_rp_thread *th = s->run->threads.last;
	if (th == NULL || th->tid != tid || th->pid != s->pid)
		th = orbit__rp_thread(&s->run->threads, s->pid, tid);
	if (th != NULL && th->stream != s) {
		th->stream = s;
		s->threads++;
	}
	return th;
}

static void export_item(void *ctx, const struct orbit_rp_span *s, int end)
{
	struct orbit_rp_run *run = ctx;
	if (run->chrome)
		orbit__rp_chrome_item(run, s, end);
	if (run->perfetto)
		orbit__rp_perfetto_item(run, s, end);
}

static void span_export(struct orbit_rp_run *run, struct orbit_rp_thread *th,
                        const struct orbit_rp_span *sp)
{
	if (sp->async) {
		if (run->chrome)
			orbit__rp_chrome_async(run, sp);
		if (run->perfetto)
			orbit__rp_perfetto_async(run, sp);
	} else if (th != NULL && th->tid == sp->tid && th->pid == sp->pid) {
		int64_t before = th->order.n;
		orbit__rp_order_scope(&th->order, sp, export_item, run);
		run->held += (int64_t)th->order.n - before;
		if (run->held > ORBIT_RP_HELD_TOTAL) { /* many threads hold ties */
			run->held -= th->order.n;
			orbit__rp_order_flush(&th->order, export_item, run);
		}
	} else {
		export_item(run, sp, 0);
		export_item(run, sp, 1);
	}
}

static void on_span(struct orbit_rp_stream *s, const struct orbit_event *ev, int async)
{
	struct orbit_rp_run *run = s->run;
	struct orbit_rp_thread *th = stream_thread(s, ev->tid);
	uint64_t end = ev->end < ev->start ? ev->start : ev->end;
	uint64_t self = 0;
	if (!async && th != NULL)
		self = orbit__rp_self_time(th, ev->depth, end - ev->start, ev->unfinished);
	uint32_t ftid =
	    async && run->o->has_thread && ev->end_tid == run->o->thread ? ev->end_tid : ev->tid;
	if (!orbit__rp_passes(run, ftid, ev->name, ev->name_len, ev->start, end))
		return;
	struct orbit_rp_span sp = {
	    .thread = th,
	    .pid = s->pid,
	    .tid = ev->tid,
	    .end_tid = ev->end_tid,
	    .depth = ev->depth,
	    .async = (uint8_t)async,
	    .unfinished = (uint8_t)ev->unfinished,
	    .name_incomplete = (uint8_t)ev->name_incomplete,
	    .id = ev->id,
	    .start = ev->start,
	    .end = end,
	    .name = ev->name,
	    .name_len = (uint32_t)ev->name_len,
	};
	sp.name_id = orbit__rp_names_intern(&run->names, ev->name, ev->name_len);
	if (sp.name_id != ORBIT_RP_NAME_NONE)
		sp.name = orbit__rp_name(&run->names, sp.name_id)->bytes;
	orbit__rp_stats_span(run, &sp, self);
	if (run->csv.f)
		orbit__rp_csv_span(run, &sp);
	if (run->export_order)
		span_export(run, th, &sp);
}

static void on_value(struct orbit_rp_stream *s, const struct orbit_event *ev)
{
	struct orbit_rp_run *run = s->run;
	stream_thread(s, ev->tid);
	if (!orbit__rp_passes(run, ev->tid, ev->name, ev->name_len, ev->start, ev->start))
		return;
	run->stats.values++;
	if (run->chrome)
		orbit__rp_chrome_value(run, s->pid, ev);
	if (run->perfetto)
		orbit__rp_perfetto_value(run, s->pid, ev, ORBIT_RP_NAME_NONE);
}

static void on_event(void *ctx, const struct orbit_event *ev)
{
	struct orbit_rp_stream *s = ctx;
	uint64_t end = ev->end > ev->start ? ev->end : ev->start;
	if (s->first > ev->start)
		s->first = ev->start;
	if (s->last < end)
		s->last = end;
	switch (ev->type) {
	case ORBIT_EVENT_SCOPE:
		s->scopes++;
		on_span(s, ev, 0);
		break;
	case ORBIT_EVENT_ASYNC:
		s->spans++;
		on_span(s, ev, 1);
		break;
	case ORBIT_EVENT_VALUE:
		s->values++;
		on_value(s, ev);
		break;
	case ORBIT_EVENT_THREAD_NAME: {
		struct orbit_rp_thread *th = stream_thread(s, ev->tid);
		s->thread_names++;
		if (th != NULL && th->tid == ev->tid)
			orbit__rp_thread_name(th, ev->name, ev->name_len, ORBIT_RP_NAMED_RECORD);
		break;
	}
	}
}

static char *str_dup(const char *s)
{
	return strdup(s ? s : "");
}

static void stream_info(struct orbit_rp_stream *s, const Orbit__Handshake *h)
{
	s->handshake = 1;
	s->pid = h->pid;
	s->process = str_dup(h->process_name);
	s->host = str_dup(h->host_name);
	s->agent = str_dup(h->agent_version);
	s->cmdline = h->n_command_line ? calloc(h->n_command_line, sizeof *s->cmdline) : NULL;
	for (size_t i = 0; s->cmdline && i < h->n_command_line; i++)
		if ((s->cmdline[s->ncmd] = str_dup(h->command_line[i])) != NULL)
			s->ncmd++;
	s->realtime_ns = h->realtime_ns;
	s->monotonic_ns = h->monotonic_ns;
	s->ring_count = h->ring_count;
	s->page_ring_count = h->page_ring_count;
	s->page_size = h->page_size;
	for (uint32_t r = 0; r < h->n_ring_start && r < ORBIT_MAX_RINGS; r++)
		s->ring_start[r] = h->ring_start[r];
}

static void stream_free(struct orbit_rp_stream *s)
{
	orbit__reconstruct_free(s->rc);
	free(s->process);
	free(s->host);
	free(s->agent);
	for (size_t i = 0; i < s->ncmd; i++)
		free(s->cmdline[i]);
	free(s->cmdline);
	free(s->page_delivered);
	free(s->page_lost);
	free(s->page_pages);
	free(s->page_unsent);
	free(s->page_reserved);
	free(s);
}

/* The problems a finished stream shows. */
static void stream_check(struct orbit_rp_run *run, struct orbit_rp_stream *s)
{
	const char *path = s->cap->path;
	if (!s->ended && s->cut)
		orbit__rp_problem(
		    run,
		    "%s: incomplete capture: cut by the collector at its %s (pid %" PRIu32
		    "): the stream went on, the rest was not kept",
		    path,
		    s->cut == ORBIT_ACK_CAPTURE_CAP ? "--max-capture-size"
		    : s->cut == ORBIT_ACK_DIR_CAP   ? "--max-dir-size"
		                                    : "end",
		    s->pid);
	else if (!s->ended)
		orbit__rp_problem(run,
		                  "%s: incomplete capture: no end of stream (pid %" PRIu32
		                  "): the agent was killed or the capture was cut",
		                  path, s->pid);
	for (uint32_t r = 0; s->ended && r < ORBIT_MAX_RINGS; r++) {
		const struct orbit_rp_loss *l = &s->loss[r];
		uint64_t lost = l->lapped + l->gone + l->backstop + l->at_end;
		uint64_t claimed = r < s->nclaimed ? s->claimed[r] : 0;
		if (claimed != s->delivered[r] + lost)
			orbit__rp_problem(run,
			                  "%s: ring %" PRIu32 ": claimed %" PRIu64
			                  " != delivered %" PRIu64 " + lost %" PRIu64,
			                  path, r, claimed, s->delivered[r], lost);
	}
	if (s->rstats.bad_records)
		orbit__rp_problem(run, "%s: %" PRIu64 " records of unknown kind or flags", path,
		                  s->rstats.bad_records);
}

static void stream_finish(struct orbit_rp_run *run, struct orbit_rp_stream *s)
{
	if (s == NULL || s->rc == NULL)
		return;
	orbit__reconstruct_finish(s->rc);
	const struct orbit_reconstruct_stats *st = orbit__reconstruct_stats(s->rc);
	s->rstats.records += st->records;
	s->rstats.bad_records += st->bad_records;
	s->rstats.unmatched_stops += st->unmatched_stops;
	s->rstats.unfinished += st->unfinished;
	s->rstats.incomplete_names += st->incomplete_names;
	s->rstats.orphan_continuations += st->orphan_continuations;
	s->rstats.gaps += st->gaps;
	orbit__reconstruct_free(s->rc);
	s->rc = NULL;
	stream_check(run, s);
}

static struct orbit_rp_stream *stream_new(struct orbit_rp_run *run, struct source *src)
{
	struct orbit_rp_stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->run = run;
	s->cap = src->cap;
	s->first = UINT64_MAX;
	s->rc = orbit__reconstruct_new(on_event, s);
	if (s->rc == NULL) {
		free(s);
		return NULL;
	}
	if (src->cap->tail)
		src->cap->tail->next = s;
	else
		src->cap->streams = s;
	src->cap->tail = s;
	run->streams++;
	return s;
}

/* Past MAX_STREAMS (a hostile capture), a new stream reuses the last one:
 * its counts add up, its reconstructor starts afresh. */
static struct orbit_rp_stream *stream_reuse(struct orbit_rp_run *run, struct source *src)
{
	struct orbit_rp_stream *s = src->cap->tail;
	if (run->streams++ == MAX_STREAMS)
		orbit__rp_problem(run,
		                  "%s: more than %u streams: the later ones are counted "
		                  "together",
		                  src->cap->path, MAX_STREAMS);
	s->rc = orbit__reconstruct_new(on_event, s);
	s->ended = 0;
	return s->rc ? s : NULL;
}

static struct orbit_rp_stream *stream_begin(struct orbit_rp_run *run, struct source *src,
                                            const Orbit__Handshake *h)
{
	stream_finish(run, src->stream);
	/* Every capture gets a stream of its own, even past the limit. */
	int fresh = run->streams < MAX_STREAMS || src->cap->tail == NULL;
	struct orbit_rp_stream *s = fresh ? stream_new(run, src) : stream_reuse(run, src);
	src->stream = s;
	if (s == NULL) {
		orbit__rp_problem(run, "%s: out of memory", src->cap->path);
		return NULL;
	}
	if (h != NULL && !s->handshake)
		stream_info(s, h);
	if (run->chrome)
		orbit__rp_chrome_process(run, s);
	if (run->perfetto)
		orbit__rp_perfetto_process(run, s);
	return s;
}

/* The stream packets belong to; one without a handshake if it was lost. */
static struct orbit_rp_stream *stream_of(struct orbit_rp_run *run, struct source *src)
{
	if (src->stream != NULL)
		return src->stream;
	orbit__rp_problem(run,
	                  "%s: offset %" PRIu64 ": packets before any handshake (the "
	                  "first frame is lost); their process is unknown",
	                  src->cap->path, src->frame_at);
	return stream_begin(run, src, NULL);
}

/* ---- packets ---- */

static void on_batch(struct orbit_rp_run *run, struct source *src, const Orbit__RingBatch *b)
{
	struct orbit_rp_stream *s = stream_of(run, src);
	if (s == NULL)
		return;
	if (s->handshake && b->ring >= s->ring_count) {
		orbit__rp_problem(run,
		                  "%s: offset %" PRIu64 ": batch of ring %" PRIu32
		                  ", the handshake has %" PRIu32 " rings",
		                  src->cap->path, src->frame_at, b->ring, s->ring_count);
		src->cap->invalid++;
		return;
	}
	if (orbit__batch_decode(b, run->batch) != 0) {
		orbit__rp_problem(run, "%s: offset %" PRIu64 ": ring batch does not decode",
		                  src->cap->path, src->frame_at);
		src->cap->invalid++;
		return;
	}
	s->delivered[b->ring] += b->count;
	s->records += b->count;
	if (orbit__reconstruct_batch(s->rc, b->ring, b->first_claim, run->batch, b->count) != 0)
		orbit__rp_problem(run, "%s: out of memory rebuilding scopes", src->cap->path);
}

static void on_end(struct orbit_rp_run *run, struct source *src, const Orbit__EndOfStream *e)
{
	struct orbit_rp_stream *s = stream_of(run, src);
	if (s == NULL)
		return;
	s->ended = 1;
	s->nclaimed = (uint32_t)e->n_claimed_per_ring;
	for (uint32_t r = 0; r < s->nclaimed; r++)
		s->claimed[r] = e->claimed_per_ring[r];
	size_t n = e->n_reserved_per_page_ring;
	if (n > ORBIT_RP_PAGE_RINGS) {
		orbit__rp_problem(run, "%s: offset %" PRIu64 ": end of stream names %zu page rings",
		                  src->cap->path, src->frame_at, n);
		src->cap->invalid++;
		n = ORBIT_RP_PAGE_RINGS;
	}
	/* The last EndOfStream wins (a second one is hostile, not an error). */
	uint64_t *pr = n ? realloc(s->page_reserved, n * sizeof *pr) : NULL;
	if (n && pr == NULL)
		return;
	if (n == 0)
		free(s->page_reserved);
	else
		memcpy(pr, e->reserved_per_page_ring, n * sizeof *pr);
	s->page_reserved = pr;
	s->npage_reserved = (uint32_t)n;
}

static void on_page_loss(struct orbit_rp_run *run, struct source *src, const Orbit__PageLoss *l)
{
	struct orbit_rp_stream *s = stream_of(run, src);
	if (s == NULL)
		return;
	if (orbit__rp_stream_page_ring(s, l->ring) != 0) {
		orbit__rp_problem(run, "%s: offset %" PRIu64 ": loss of page ring %" PRIu32,
		                  src->cap->path, src->frame_at, l->ring);
		src->cap->invalid++;
		return;
	}
	s->page_lost[l->ring] = l->records;
	s->page_pages[l->ring] = l->pages;
	s->page_unsent[l->ring] = l->unsent;
}

static void on_thread_name(struct orbit_rp_run *run, struct source *src, const Orbit__ThreadName *t)
{
	struct orbit_rp_stream *s = stream_of(run, src);
	if (s == NULL || t->name == NULL)
		return;
	struct orbit_rp_thread *th = orbit__rp_thread(&run->threads, s->pid, t->tid);
	if (th != NULL && th->tid == t->tid && th->pid == s->pid)
		orbit__rp_thread_name(th, t->name, strlen(t->name), ORBIT_RP_NAMED_OS);
}

static void process(struct orbit_rp_run *run, struct source *src, const Orbit__Packet *p)
{
	struct orbit_rp_stream *s;
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_HANDSHAKE:
		stream_begin(run, src, p->handshake);
		break;
	case ORBIT__PACKET__BODY_RING_BATCH:
		on_batch(run, src, p->ring_batch);
		break;
	case ORBIT__PACKET__BODY_FTRACE_PAGE:
		if ((s = stream_of(run, src)) != NULL)
			orbit__rp_log_page(run, s, p->ftrace_page->ring, p->ftrace_page->page.data,
			                   p->ftrace_page->page.len);
		break;
	case ORBIT__PACKET__BODY_THREAD_NAME:
		on_thread_name(run, src, p->thread_name);
		break;
	case ORBIT__PACKET__BODY_LOSS:
		if ((s = stream_of(run, src)) != NULL) {
			const Orbit__Loss *l = p->loss;
			s->loss[l->ring] = (struct orbit_rp_loss){
			    l->lapped, l->writer_gone, l->backstop, l->unsent, l->at_end};
		}
		break;
	case ORBIT__PACKET__BODY_END:
		on_end(run, src, p->end);
		break;
	case ORBIT__PACKET__BODY_PAGE_LOSS:
		on_page_loss(run, src, p->page_loss);
		break;
	case ORBIT__PACKET__BODY_ACK: /* written by a collector that cut the stream */
		if ((s = stream_of(run, src)) != NULL)
			s->cut = p->ack->end;
		break;
	default:
		break;
	}
}

/* ---- reading ---- */

static const char *packet_kind(const Orbit__Packet *p)
{
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_HANDSHAKE:
		return "handshake";
	case ORBIT__PACKET__BODY_RING_BATCH:
		return "ring batch";
	case ORBIT__PACKET__BODY_FTRACE_PAGE:
		return "log page";
	case ORBIT__PACKET__BODY_THREAD_NAME:
		return "thread name";
	case ORBIT__PACKET__BODY_LOSS:
		return "loss";
	case ORBIT__PACKET__BODY_END:
		return "end of stream";
	case ORBIT__PACKET__BODY_PAGE_LOSS:
		return "log loss";
	case ORBIT__PACKET__BODY_ACK:
		return "collector's acknowledgement";
	default:
		return "empty";
	}
}

/* Where a packet goes in the merge: its first time, else where its
 * capture already is. */
static uint64_t packet_key(const Orbit__Packet *p, uint64_t prev)
{
	if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH && p->ring_batch->records.len >= 8)
		return orbit__le64(p->ring_batch->records.data);
	if (p->body_case == ORBIT__PACKET__BODY_FTRACE_PAGE && p->ftrace_page->page.len >= 8)
		return orbit__le64(p->ftrace_page->page.data);
	return prev;
}

/* Reads src's next good packet into src->peek, reporting what it skips;
 * at the end (or on a read error) marks src done. */
static void peek(struct orbit_rp_run *run, struct source *src)
{
	const char *path = src->cap->path;
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		uint64_t before = orbit__capture_offset(src->r);
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(src->r, &p, &prob);
		if (rc == 0) {
			src->done = 1;
			return;
		}
		if (rc < 0 && prob.error == rc) {
			orbit__rp_problem(run, "%s: offset %" PRIu64 ": %s%s", path, prob.offset,
			                  orbit__frame_strerror(prob.error),
			                  prob.error == ORBIT_FRAME_EPACKET ? ": packet skipped"
			                                                    : ": frame skipped");
			src->cap->damaged++;
			continue;
		}
		if (rc < 0) {
			orbit__rp_problem(run, "%s: read error at offset %" PRIu64 ": %s", path,
			                  before, strerror(-rc));
			src->cap->io_error = 1;
			src->done = 1;
			return;
		}
		if (orbit__capture_offset(src->r) != before)
			src->frame_at = before;
		if (orbit__packet_validate(p) != 0) {
			orbit__rp_problem(run,
			                  "%s: frame at offset %" PRIu64 ": %s packet outside the "
			                  "format's limits",
			                  path, src->frame_at, packet_kind(p));
			src->cap->invalid++;
			orbit__packet__free_unpacked(p, NULL);
			continue;
		}
		src->peek = p;
		src->key = packet_key(p, src->key);
		return;
	}
}

static struct source *next_source(struct source *srcs, size_t n)
{
	struct source *best = NULL;
	for (size_t i = 0; i < n; i++)
		if (!srcs[i].done && (best == NULL || srcs[i].key < best->key))
			best = &srcs[i];
	return best;
}

/* ---- progress ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void progress(struct orbit_rp_run *run, struct source *srcs, size_t n)
{
	uint64_t now = now_ns();
	if (now < run->progress_next_ns)
		return;
	run->progress_next_ns = now + 100000000;
	uint64_t done = 0;
	for (size_t i = 0; i < n; i++)
		done += srcs[i].r && !srcs[i].done ? orbit__capture_offset(srcs[i].r)
		                                   : srcs[i].cap->size;
	unsigned pct = run->total_bytes ? (unsigned)(done * 100 / run->total_bytes) : 100;
	char bar[33];
	memset(bar, '.', 32);
	memset(bar, '#', pct > 100 ? 32 : pct * 32 / 100);
	bar[32] = '\0';
	fprintf(run->o->err, "\r[%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB", bar, pct > 100 ? 100 : pct,
	        done >> 20, run->total_bytes >> 20);
	fflush(run->o->err);
	run->progress_shown = 1;
}

static void progress_clear(struct orbit_rp_run *run)
{
	if (!run->progress_shown)
		return;
	fputs("\r\033[K", run->o->err);
	fflush(run->o->err);
	run->progress_shown = 0;
}

static int want_progress(const struct orbit_rp_run *run)
{
	const struct orbit_replay_options *o = run->o;
	if (o->err == NULL || o->progress == 0)
		return 0;
	if (o->progress > 0)
		return 1;
	return run->total_bytes >= PROGRESS_MIN && isatty(fileno(o->err));
}

/* ---- thread names from a capture's tail ---- */

/*
 * The agent sends the kernel's thread names (ThreadName) at the end of a
 * stream, but CSV rows and log lines are written as they come. The last
 * frames of a capture (the last frame starts in its last 4 MiB) are read
 * first for those names; the reader resynchronises on the first zstd frame
 * it finds there. A name the program set itself still wins.
 */
static void tail_names(struct orbit_rp_run *run, const struct orbit_rp_capture *cap, uint32_t pid)
{
	int fd = open(cap->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t at = cap->size > TAIL_BYTES ? (off_t)(cap->size - TAIL_BYTES) : 0;
	int err;
	struct orbit_capture_reader *r = NULL;
	if (lseek(fd, at, SEEK_SET) == at)
		r = orbit__capture_from_fd(fd, &err);
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = r ? orbit__capture_next(r, &p, &prob) : 0;
		if (rc == 0 || (rc < 0 && prob.error != rc))
			break;
		if (rc < 0)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE)
			pid = p->handshake->pid;
		if (p->body_case == ORBIT__PACKET__BODY_THREAD_NAME && p->thread_name->name) {
			struct orbit_rp_thread *th =
			    orbit__rp_thread(&run->threads, pid, p->thread_name->tid);
			if (th != NULL && th->pid == pid && th->tid == p->thread_name->tid)
				orbit__rp_thread_name(th, p->thread_name->name,
				                      strlen(p->thread_name->name),
				                      ORBIT_RP_NAMED_OS);
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(r);
	close(fd);
}

/* ---- a run ---- */

static int open_output(struct orbit_rp_run *run, struct orbit_rp_out *o, const char *path)
{
	if (path == NULL)
		return 0;
	int err = orbit__rp_out_open(o, path);
	if (err == 0)
		return 0;
	if (run->o->err)
		fprintf(run->o->err, "orbit-replay: %s: %s\n", path, strerror(-err));
	return -1;
}

static int open_outputs(struct orbit_rp_run *run)
{
	const struct orbit_replay_options *o = run->o;
	if (open_output(run, &run->csv, o->csv_path) ||
	    open_output(run, &run->json, o->json_path) ||
	    open_output(run, &run->chrome_out, o->chrome_path) ||
	    open_output(run, &run->perfetto_out, o->perfetto_path))
		return ORBIT_REPLAY_OUTPUT;
	if ((o->chrome_path && orbit__rp_chrome_begin(run)) ||
	    (o->perfetto_path && orbit__rp_perfetto_begin(run)) ||
	    (o->log && orbit__rp_log_begin(run)))
		return ORBIT_REPLAY_OUTPUT;
	if (o->csv_path)
		orbit__rp_csv_begin(run);
	run->export_order = o->chrome_path || o->perfetto_path;
	return 0;
}

static uint64_t bound(const struct orbit_rp_run *run, const struct orbit_replay_bound *b,
                      uint64_t unset)
{
	if (!b->set)
		return unset;
	if (!b->relative)
		return b->ns;
	return run->origin + b->ns < run->origin ? UINT64_MAX : run->origin + b->ns;
}

/* Opens every capture and reads its first packet. */
static void open_sources(struct orbit_rp_run *run, struct source *srcs)
{
	const struct orbit_replay_options *o = run->o;
	for (size_t i = 0; i < o->ninputs; i++) {
		struct orbit_rp_capture *cap = &run->caps[i];
		struct stat st;
		int err = 0;
		cap->path = o->inputs[i];
		srcs[i].cap = cap;
		if (stat(cap->path, &st) == 0)
			cap->size = (uint64_t)st.st_size;
		run->total_bytes += cap->size;
		srcs[i].r = orbit__capture_open(cap->path, &err);
		if (srcs[i].r == NULL) {
			orbit__rp_problem(run, "%s: %s", cap->path, orbit__frame_strerror(err));
			cap->io_error = 1;
			srcs[i].done = 1;
			continue;
		}
		peek(run, &srcs[i]);
	}
}

/* The origin of relative times: the earliest handshake, else the earliest
 * first packet. */
static void find_origin(struct orbit_rp_run *run, const struct source *srcs, size_t n)
{
	uint64_t hs = UINT64_MAX, any = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		const Orbit__Packet *p = srcs[i].peek;
		if (p == NULL)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE &&
		    p->handshake->monotonic_ns < hs)
			hs = p->handshake->monotonic_ns;
		if (srcs[i].key < any && srcs[i].key != 0)
			any = srcs[i].key;
	}
	run->origin = hs != UINT64_MAX ? hs : any != UINT64_MAX ? any : 0;
	run->from = bound(run, &run->o->from, 0);
	run->to = bound(run, &run->o->to, UINT64_MAX);
	run->filtering =
	    run->o->has_thread || run->o->name != NULL || run->from > 0 || run->to < UINT64_MAX;
}

static void read_all(struct orbit_rp_run *run, struct source *srcs, size_t n)
{
	uint32_t tick = 0;
	for (;;) {
		struct source *src = next_source(srcs, n);
		if (src == NULL)
			break;
		Orbit__Packet *p = src->peek;
		src->peek = NULL;
		if (p != NULL) {
			process(run, src, p);
			orbit__packet__free_unpacked(p, NULL);
		}
		peek(run, src);
		if (src->done)
			stream_finish(run, src->stream);
		if (run->progress && (++tick & 63) == 0)
			progress(run, srcs, n);
	}
	progress_clear(run);
}

static void replay_inputs(struct orbit_rp_run *run)
{
	size_t n = run->o->ninputs;
	struct source *srcs = calloc(n, sizeof *srcs);
	run->caps = calloc(n, sizeof *run->caps);
	run->batch = malloc((size_t)ORBIT_BATCH_MAX * ORBIT_RECORD_SIZE);
	if (srcs == NULL || run->caps == NULL || run->batch == NULL) {
		orbit__rp_problem(run, "out of memory");
		free(srcs);
		return;
	}
	run->ncaps = n;
	open_sources(run, srcs);
	find_origin(run, srcs, n);
	for (size_t i = 0; (run->csv.f || run->log) && i < n; i++)
		if (srcs[i].r != NULL)
			tail_names(run, srcs[i].cap,
			           srcs[i].peek &&
			                   srcs[i].peek->body_case == ORBIT__PACKET__BODY_HANDSHAKE
			               ? srcs[i].peek->handshake->pid
			               : 0);
	run->progress = want_progress(run);
	if (run->progress)
		progress(run, srcs, n);
	read_all(run, srcs, n);
	for (size_t i = 0; i < n; i++) {
		if (srcs[i].cap->streams == NULL && !srcs[i].cap->io_error)
			orbit__rp_problem(run, "%s: no stream could be read", srcs[i].cap->path);
		if (srcs[i].peek)
			orbit__packet__free_unpacked(srcs[i].peek, NULL);
		orbit__capture_close(srcs[i].r);
	}
	free(srcs);
}

static int close_output(struct orbit_rp_run *run, struct orbit_rp_out *o)
{
	const char *path = o->path;
	if (o->f == NULL && o->buf == NULL)
		return 0;
	int err = orbit__rp_out_close(o);
	if (err == 0)
		return 0;
	if (run->o->err)
		fprintf(run->o->err, "orbit-replay: %s: write error: %s\n", path, strerror(-err));
	return -1;
}

static int text_summary(const struct orbit_rp_run *run)
{
	const struct orbit_replay_options *o = run->o;
	return !o->quiet && !o->log && o->ninputs > 0 &&
	       !(o->json_path && strcmp(o->json_path, "-") == 0);
}

/* Ends the exports, prints the summary, closes every output. */
static int finish(struct orbit_rp_run *run, int status)
{
	if (run->export_order) {
		for (uint32_t i = 0; i < run->threads.n; i++)
			orbit__rp_order_flush(&run->threads.all[i]->order, export_item, run);
		if (run->threads.overflow)
			orbit__rp_order_flush(&run->threads.overflow->order, export_item, run);
	}
	orbit__rp_chrome_end(run);
	orbit__rp_perfetto_end(run);
	orbit__rp_log_end(run);
	if (status != ORBIT_REPLAY_OUTPUT && text_summary(run))
		orbit__rp_summary_text(run, &run->out);
	if (status != ORBIT_REPLAY_OUTPUT && run->json.f)
		orbit__rp_summary_json(run, &run->json);
	int bad = 0;
	bad |= close_output(run, &run->csv);
	bad |= close_output(run, &run->chrome_out);
	bad |= close_output(run, &run->perfetto_out);
	bad |= close_output(run, &run->json);
	bad |= close_output(run, &run->out);
	if (bad || status == ORBIT_REPLAY_OUTPUT)
		return ORBIT_REPLAY_OUTPUT;
	return run->damaged || status == ORBIT_REPLAY_DAMAGED ? ORBIT_REPLAY_DAMAGED
	                                                      : ORBIT_REPLAY_OK;
}

static void cleanup(struct orbit_rp_run *run)
{
	for (size_t i = 0; i < run->ncaps; i++) {
		struct orbit_rp_stream *s = run->caps[i].streams;
		while (s) {
			struct orbit_rp_stream *next = s->next;
			stream_free(s);
			s = next;
		}
	}
	free(run->caps);
	free(run->batch);
	orbit__rp_threads_free(&run->threads);
	orbit__rp_names_free(&run->names);
	orbit__rp_stats_free(&run->stats);
}

int orbit__replay_run(const struct orbit_replay_options *o)
{
	struct orbit_rp_run run;
	memset(&run, 0, sizeof run);
	run.o = o;
	run.stats.hist_budget = ORBIT_RP_HIST_BUDGET;
	run.to = UINT64_MAX;
	orbit__rp_out_stream(&run.out, o->out ? o->out : stdout, "stdout");
	int status = open_outputs(&run);
	if (status == 0 && o->pages_path != NULL)
		status = orbit__rp_pages(&run, o->pages_path, o->page_size ? o->page_size : 4096);
	if (status != ORBIT_REPLAY_OUTPUT && o->ninputs > 0)
		replay_inputs(&run);
	status = finish(&run, status);
	cleanup(&run);
	return status;
}

void orbit__replay_defaults(struct orbit_replay_options *o)
{
	memset(o, 0, sizeof *o);
	o->top = 20;
	o->sort = ORBIT_REPLAY_SORT_TOTAL;
	o->progress = -1;
	o->out = stdout;
	o->err = stderr;
}

/* ---- --from / --to ---- */

static int unit_of(const char *s, uint64_t *unit)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(s, units[i].name) == 0) {
			*unit = units[i].ns;
			return 0;
		}
	return -EINVAL;
}

int orbit__replay_parse_bound(const char *s, struct orbit_replay_bound *b)
{
	uint64_t whole = 0, frac = 0, scale = 1, unit;
	memset(b, 0, sizeof *b);
	if (*s == '+') {
		b->relative = 1;
		s++;
	}
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (whole > (UINT64_MAX - d) / 10)
			return -EINVAL;
		whole = whole * 10 + d;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
	}
	if (unit_of(s, &unit) != 0)
		return -EINVAL;
	if (whole > UINT64_MAX / unit)
		return -EINVAL;
	b->ns = whole * unit + frac * unit / scale;
	b->set = 1;
	return 0;
}
