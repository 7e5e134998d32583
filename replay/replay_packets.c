/*
 * replay_packets.c — one packet of a capture, applied to its stream: a
 * Handshake begins a stream, a RingBatch goes to the stream's
 * reconstructor, an FtracePage to the log decoder (replay_log.c), Loss,
 * PageLoss and EndOfStream to its loss accounting (replay_stream.c),
 * ThreadName to the threads. A packet the stream's handshake does not
 * allow (a ring past its ring count) is reported and left out.
 *
 * Packets that come before any handshake (the first frame is lost) get a
 * stream of their own, whose process is unknown. Past MAX_STREAMS streams
 * (a hostile capture) a new stream reuses the capture's last one: its
 * counts add up, its reconstructor starts afresh.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay_dispatch.h"
#include "replay_log.h"
#include "replay_report.h"
#include "replay_timeline.h"

#define MAX_STREAMS 4096u /* kept for the summary, per run */

/* The reconstructor's callback when only times are kept. */
static void event_time(void *ctx, const struct orbit_event *ev)
{
	orbit__rp_stream_saw(ctx, ev->start, ev->end);
}

static int stream_open(struct orbit_rp_timeline *tl, struct orbit_rp_stream *s)
{
	s->to = tl->d;
	s->rc = orbit__reconstruct_new(tl->d ? orbit__rp_dispatch_event : event_time, s);
	return s->rc ? 0 : -1;
}

void orbit__rp_source_finish(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	struct orbit_rp_stream *s = src->stream;
	if (s == NULL || s->rc == NULL)
		return;
	s->finishing = 1; /* what it reports now was open at the end */
	orbit__reconstruct_finish(s->rc);
	s->finishing = 0;
	orbit__rp_stream_add_stats(s, orbit__reconstruct_stats(s->rc));
	orbit__reconstruct_free(s->rc);
	s->rc = NULL;
	orbit__rp_stream_check(s, tl->rep);
	if (tl->d)
		orbit__rp_dispatch_stream_end(tl->d, s);
}

static struct orbit_rp_stream *stream_new(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	struct orbit_rp_stream *s = orbit__rp_stream_new(src->cap);
	if (s == NULL)
		return NULL;
	tl->streams++;
	return stream_open(tl, s) == 0 ? s : NULL;
}

static struct orbit_rp_stream *stream_reuse(struct orbit_rp_timeline *tl,
                                            struct orbit_rp_source *src)
{
	struct orbit_rp_stream *s = src->cap->tail;
	if (tl->streams++ == MAX_STREAMS)
		orbit__rp_problem(tl->rep,
		                  "%s: more than %u streams: the later ones are counted "
		                  "together",
		                  src->cap->path, MAX_STREAMS);
	s->ended = 0;
	return stream_open(tl, s) == 0 ? s : NULL;
}

static struct orbit_rp_stream *stream_begin(struct orbit_rp_timeline *tl,
                                            struct orbit_rp_source *src, const Orbit__Handshake *h)
{
	orbit__rp_source_finish(tl, src);
	/* Every capture gets a stream of its own, even past the limit. */
	int fresh = tl->streams < MAX_STREAMS || src->cap->tail == NULL;
	struct orbit_rp_stream *s = fresh ? stream_new(tl, src) : stream_reuse(tl, src);
	src->stream = s;
	if (s == NULL) {
		orbit__rp_problem(tl->rep, "%s: out of memory", src->cap->path);
		return NULL;
	}
	if (h != NULL && !s->handshake)
		orbit__rp_stream_info(s, h);
	if (tl->d)
		orbit__rp_dispatch_stream(tl->d, s);
	return s;
}

/* The stream packets belong to; one without a handshake if it was lost. */
static struct orbit_rp_stream *stream_of(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	if (src->stream != NULL)
		return src->stream;
	orbit__rp_problem(tl->rep,
	                  "%s: offset %" PRIu64 ": packets before any handshake (the "
	                  "first frame is lost); their process is unknown",
	                  src->cap->path, src->frame_at);
	return stream_begin(tl, src, NULL);
}

static void loss_mark(struct orbit_rp_timeline *tl, const struct orbit_rp_stream *s, uint32_t ring,
                      uint32_t flags, uint64_t from, uint64_t to, uint64_t count)
{
	if (tl->d == NULL || count == 0)
		return;
	from = from ? from : s->monotonic_ns;
	struct orbit_rp_loss_mark m = {s, ring, flags, from, to ? to : from, count};
	orbit__rp_dispatch_loss(tl->d, &m);
}

/* Claims of ring r the batch at first_claim skips: lost there. */
static void ring_gap(struct orbit_rp_timeline *tl, struct orbit_rp_stream *s, uint32_t r,
                     uint64_t first_claim, uint64_t first_time)
{
	if (s->claim_known[r] && first_claim > s->next_claim[r])
		loss_mark(tl, s, r, 0, s->ring_time[r], first_time, first_claim - s->next_claim[r]);
}

/* ---- the packets ---- */

static void on_batch(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                     const Orbit__RingBatch *b)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	if (s->handshake && b->ring >= s->ring_count) {
		orbit__rp_problem(tl->rep,
		                  "%s: offset %" PRIu64 ": batch of ring %" PRIu32
		                  ", the handshake has %" PRIu32 " rings",
		                  src->cap->path, src->frame_at, b->ring, s->ring_count);
		src->cap->invalid++;
		return;
	}
	if (orbit__batch_decode(b, tl->batch) != 0) {
		orbit__rp_problem(tl->rep, "%s: offset %" PRIu64 ": ring batch does not decode",
		                  src->cap->path, src->frame_at);
		src->cap->invalid++;
		return;
	}
	uint32_t r = b->ring;
	s->delivered[r] += b->count;
	s->records += b->count;
	if (b->count > 0) { /* the record layout: time is bytes 0..7 (format/record.h) */
		ring_gap(tl, s, r, b->first_claim, orbit__le64(tl->batch));
		s->ring_time[r] =
		    orbit__le64(tl->batch + (size_t)(b->count - 1) * ORBIT_RECORD_SIZE);
		if (!s->claim_known[r] || b->first_claim + b->count > s->next_claim[r])
			s->next_claim[r] = b->first_claim + b->count;
		s->claim_known[r] = 1;
	}
	if (s->rc != NULL &&
	    orbit__reconstruct_batch(s->rc, b->ring, b->first_claim, tl->batch, b->count) != 0)
		orbit__rp_problem(tl->rep, "%s: out of memory rebuilding scopes", src->cap->path);
}

static void on_page(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                    const Orbit__FtracePage *p)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s != NULL)
		orbit__rp_log_page(s, tl->rep, p->ring, p->page.data, p->page.len,
		                   tl->d ? orbit__rp_dispatch_line : NULL, tl->d);
}

static void on_loss(struct orbit_rp_timeline *tl, struct orbit_rp_source *src, const Orbit__Loss *l)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	s->loss[l->ring] = (struct orbit_rp_loss){l->lapped, l->writer_gone, l->backstop,
	                                          l->unsent, l->at_end,      l->flight_dropped};
}

static void on_end(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                   const Orbit__EndOfStream *e)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	s->ended = 1;
	s->ended_by = e->ended;
	s->untrusted_times = e->untrusted_times;
	s->clock_resets = e->clock_resets;
	s->nclaimed = (uint32_t)e->n_claimed_per_ring;
	for (uint32_t r = 0; r < s->nclaimed; r++) {
		s->claimed[r] = e->claimed_per_ring[r];
		/* The claims after the ring's last batch never came. */
		uint64_t end = s->ring_start[r] + s->claimed[r];
		if (s->handshake && end > s->next_claim[r]) {
			loss_mark(tl, s, r, 0, s->ring_time[r], 0, end - s->next_claim[r]);
			s->next_claim[r] = end;
		}
	}
	size_t n = e->n_reserved_per_page_ring;
	if (n > ORBIT_RP_PAGE_RINGS) {
		orbit__rp_problem(tl->rep,
		                  "%s: offset %" PRIu64 ": end of stream names %zu page rings",
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

static void on_page_loss(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                         const Orbit__PageLoss *l)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	if (orbit__rp_stream_page_ring(s, l->ring) != 0) {
		orbit__rp_problem(tl->rep, "%s: offset %" PRIu64 ": loss of page ring %" PRIu32,
		                  src->cap->path, src->frame_at, l->ring);
		src->cap->invalid++;
		return;
	}
	uint64_t before = s->page_lost[l->ring];
	s->page_lost[l->ring] = l->records;
	s->page_pages[l->ring] = l->pages;
	s->page_unsent[l->ring] = l->unsent;
	if (l->records > before)
		loss_mark(tl, s, l->ring, ORBIT_RP_LOG_RING, s->page_time[l->ring], 0,
		          l->records - before);
}

/* orbit-dump's word on the capture it made (the last one wins). */
static void on_dump(struct orbit_rp_timeline *tl, struct orbit_rp_source *src, const Orbit__Dump *p)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	struct orbit_rp_dump *d = s->dump != NULL ? s->dump : calloc(1, sizeof *d);
	if (d == NULL)
		return;
	free(d->segment);
	free(d->problem);
	*d = (struct orbit_rp_dump){
	    .ended = p->ended,
	    .segment = strdup(p->segment ? p->segment : ""),
	    .monotonic_ns = p->monotonic_ns,
	    .realtime_ns = p->realtime_ns,
	    .flight_frames = p->flight_frames,
	    .flight_dropped = p->flight_dropped,
	    .flight_damaged = p->flight_damaged,
	    .ring_records = p->ring_records,
	    .log_pages = p->log_pages,
	    .problem = strdup(p->problem ? p->problem : ""),
	};
	s->dump = d;
}

static void on_thread_name(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                           const Orbit__ThreadName *t)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL || t->name == NULL || tl->d == NULL)
		return;
	struct orbit_rp_thread *th = orbit__rp_thread(tl->d->threads, s->pid, t->tid);
	if (th != NULL && th->tid == t->tid && th->pid == s->pid)
		orbit__rp_thread_name(th, t->name, strlen(t->name), ORBIT_RP_NAMED_OS);
}

void orbit__rp_packet(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                      const Orbit__Packet *p)
{
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_HANDSHAKE:
		stream_begin(tl, src, p->handshake);
		break;
	case ORBIT__PACKET__BODY_RING_BATCH:
		on_batch(tl, src, p->ring_batch);
		break;
	case ORBIT__PACKET__BODY_FTRACE_PAGE:
		on_page(tl, src, p->ftrace_page);
		break;
	case ORBIT__PACKET__BODY_THREAD_NAME:
		on_thread_name(tl, src, p->thread_name);
		break;
	case ORBIT__PACKET__BODY_LOSS:
		on_loss(tl, src, p->loss);
		break;
	case ORBIT__PACKET__BODY_END:
		on_end(tl, src, p->end);
		break;
	case ORBIT__PACKET__BODY_PAGE_LOSS:
		on_page_loss(tl, src, p->page_loss);
		break;
	case ORBIT__PACKET__BODY_DUMP:
		on_dump(tl, src, p->dump);
		break;
	case ORBIT__PACKET__BODY_ACK: { /* written by a collector that cut the stream */
		struct orbit_rp_stream *s = stream_of(tl, src);
		if (s != NULL)
			s->cut = p->ack->end;
		break;
	}
	default:
		break;
	}
}
