/*
 * replay_packets.c — one packet of a capture, applied to its stream: a
 * Handshake begins a stream, a RingBatch goes to the stream's
 * reconstructor, an FtracePage to the log decoder (replay_log.c), Loss,
 * PageLoss and EndOfStream to its loss accounting (replay_stream.c),
 * ThreadName to the threads; a KernelPage is counted, and decoded for the
 * exporters that take kernel events, a KernelLoss counted (replay_stream.c). A packet the stream's
 * handshake does not allow (a ring past its ring count) is reported and left out.
 *
 * Packets that come before any handshake (the first frame is lost) get a
 * stream of their own, whose process is unknown. Past MAX_STREAMS streams
 * (a hostile capture) a new stream reuses the capture's last one: its
 * counts add up, its reconstructor starts afresh.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "ftrace_page.h"
#include "replay_dispatch.h"
#include "replay_log.h"
#include "replay_report.h"
#include "replay_sched_scan.h"
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

/* The stream's kernel scheduling: what its Handshake says, a decoder for
 * the exporters of kernel events, and the states the scan built. */
static void stream_kernel(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                          struct orbit_rp_stream *s, const Orbit__Handshake *h)
{
	const char *what;
	orbit__rp_stream_kernel(s, h);
	if (!s->kernel.on)
		return;
	int err = orbit__rp_sched_decoder_of(h->kernel_sched, &s->kernel.dec, &what);
	if (err != 0) {
		orbit__rp_problem(tl->rep,
		                  "%s: offset %" PRIu64
		                  ": the kernel's event formats do not decode (%s: "
		                  "%s): its kernel pages are counted, not read",
		                  src->cap->path, src->frame_at, what, strerror(-err));
		return;
	}
	s->kernel.tl =
	    orbit__rp_sched_scan_get(tl->sched, (size_t)(src->cap - tl->caps), src->handshakes);
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
	if (h != NULL) {
		src->handshakes++;
		stream_kernel(tl, src, s, h);
	}
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

/* Whether frames were passed over (options.frame_skip) since ring r's
 * last batch: then the claims between are unshown, not lost. */
static int ring_skipped(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                        struct orbit_rp_stream *s, uint32_t r)
{
	if (tl->frame_skip == NULL || src->r == NULL)
		return 0;
	uint64_t sk = orbit__capture_skipped(src->r);
	int skipped = sk != s->ring_skips[r];
	s->ring_skips[r] = sk;
	return skipped;
}

/* Claims of ring r the batch at first_claim skips: lost there, or with
 * frames passed over, unshown. */
static void ring_gap(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                     struct orbit_rp_stream *s, uint32_t r, uint64_t first_claim,
                     uint64_t first_time)
{
	if (!s->claim_known[r] || first_claim <= s->next_claim[r])
		return;
	if (ring_skipped(tl, src, s, r))
		s->unshown += first_claim - s->next_claim[r];
	else
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
	/* Decoded already when it was read ahead (replay_merge.c). */
	const uint8_t *recs = src->peek_records;
	if (recs == NULL) {
		if (orbit__batch_decode(b, tl->batch) != 0) {
			orbit__rp_problem(tl->rep,
			                  "%s: offset %" PRIu64 ": ring batch does not decode",
			                  src->cap->path, src->frame_at);
			src->cap->invalid++;
			return;
		}
		recs = tl->batch;
	}
	uint32_t r = b->ring;
	s->delivered[r] += b->count;
	s->records += b->count;
	if (b->count > 0) { /* the record layout: time is bytes 0..7 (format/record.h) */
		ring_gap(tl, src, s, r, b->first_claim, orbit__le64(recs));
		ring_skipped(tl, src, s, r); /* this batch's count is the ring's now */
		s->ring_time[r] = orbit__le64(recs + (size_t)(b->count - 1) * ORBIT_RECORD_SIZE);
		if (!s->claim_known[r] || b->first_claim + b->count > s->next_claim[r])
			s->next_claim[r] = b->first_claim + b->count;
		s->claim_known[r] = 1;
	}
	if (s->rc != NULL &&
	    orbit__reconstruct_batch(s->rc, b->ring, b->first_claim, recs, b->count) != 0)
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
	orbit__loss_of(&s->loss[l->ring], l);
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
			if (ring_skipped(tl, src, s, r))
				s->unshown += end - s->next_claim[r];
			else
				loss_mark(tl, s, r, 0, s->ring_time[r], 0, end - s->next_claim[r]);
			s->next_claim[r] = end;
		}
	}
	size_t n = e->n_reserved_per_page_ring;
	if (n > ORBIT_MAX_PAGE_RINGS) {
		orbit__rp_problem(tl->rep,
		                  "%s: offset %" PRIu64 ": end of stream names %zu page rings",
		                  src->cap->path, src->frame_at, n);
		src->cap->invalid++;
		n = ORBIT_MAX_PAGE_RINGS;
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

/* Call sites of the stream's records, named once per stream (format.md
 * 4.12); a later entry for an address replaces an earlier one. */
static void on_locations(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                         const Orbit__SourceLocations *l)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL || tl->d == NULL)
		return;
	for (size_t i = 0; i < l->n_locations; i++) {
		const Orbit__SourceLocation *e = l->locations[i];
		const struct orbit_rp_location *loc =
		    orbit__rp_location(tl->d->locs, e->file, strlen(e->file), e->line, e->function,
		                       strlen(e->function));
		orbit__rp_sites_put(&s->sites, e->site, loc);
	}
}

static int keep_kernel_event(void *ctx, const struct orbit__rp_sched_event *ev)
{
	struct orbit_rp_timeline *tl = ctx;
	if (tl->nkev == tl->kev_cap) {
		size_t cap = tl->kev_cap ? tl->kev_cap * 2 : 256;
		struct orbit__rp_sched_event *e = realloc(tl->kev, cap * sizeof *e);
		if (e == NULL)
			return -ENOMEM;
		tl->kev = e;
		tl->kev_cap = cap;
	}
	tl->kev[tl->nkev++] = *ev;
	return 0;
}

static uint32_t page_records(const uint8_t *page, size_t len, int *err, uint32_t *err_off)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	uint32_t n = 0;
	int r = orbit__ftrace_open(&it, page, len, &h);
	if (r == 0)
		while ((r = orbit__ftrace_next(&it, &rec)) == 1)
			n++;
	*err = r < 0 ? r : 0;
	*err_off = it.err_off;
	return n;
}

static void on_kernel_page(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                           const Orbit__KernelPage *k)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s == NULL)
		return;
	if (s->handshake && (!s->kernel.on || k->cpu >= s->kernel.cpus)) {
		orbit__rp_problem(tl->rep,
		                  "%s: offset %" PRIu64 ": kernel page of CPU %" PRIu32
		                  ", the handshake has %s%" PRIu32 " CPUs",
		                  src->cap->path, src->frame_at, k->cpu,
		                  s->kernel.on ? "" : "no kernel formats, ", s->kernel.cpus);
		src->cap->invalid++;
		return;
	}
	s->kernel.pages++;
	struct orbit__rp_sched_page info = {0};
	int err;
	uint32_t err_off;
	if (tl->d != NULL && tl->d->nkernel > 0 && s->kernel.dec != NULL) {
		tl->nkev = 0;
		int r = orbit__rp_sched_decode_page(s->kernel.dec, k->cpu, k->page.data,
		                                    k->page.len, keep_kernel_event, tl, &info);
		if (r == -ENOMEM)
			orbit__rp_problem(tl->rep, "%s: out of memory decoding kernel pages",
			                  src->cap->path);
		err = info.err;
		err_off = info.err_off;
		s->kernel.events += tl->nkev;
		struct orbit_rp_kernel_page kp = {s, k->cpu, &info, tl->kev, tl->nkev};
		orbit__rp_dispatch_kernel(tl->d, &kp);
	} else {
		info.records = page_records(k->page.data, k->page.len, &err, &err_off);
	}
	s->kernel.records += info.records;
	if (err != 0) {
		s->kernel.bad_pages++;
		orbit__rp_problem(
		    tl->rep,
		    "%s: offset %" PRIu64 ": kernel page of CPU %" PRIu32 ": %s at byte %" PRIu32,
		    src->cap->path, src->frame_at, k->cpu,
		    orbit__ftrace_strerror(err) ? orbit__ftrace_strerror(err) : "bad page",
		    err_off);
		src->cap->invalid++;
	}
}

static void on_kernel_loss(struct orbit_rp_timeline *tl, struct orbit_rp_source *src,
                           const Orbit__KernelLoss *l)
{
	struct orbit_rp_stream *s = stream_of(tl, src);
	if (s != NULL && orbit__rp_stream_kernel_loss(s, l) != 0) {
		orbit__rp_problem(tl->rep, "%s: offset %" PRIu64 ": kernel loss of CPU %" PRIu32,
		                  src->cap->path, src->frame_at, l->cpu);
		src->cap->invalid++;
	}
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
	    .completed = p->completed,
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
	case ORBIT__PACKET__BODY_SOURCE_LOCATIONS:
		on_locations(tl, src, p->source_locations);
		break;
	case ORBIT__PACKET__BODY_KERNEL_PAGE:
		on_kernel_page(tl, src, p->kernel_page);
		break;
	case ORBIT__PACKET__BODY_KERNEL_LOSS:
		on_kernel_loss(tl, src, p->kernel_loss);
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
