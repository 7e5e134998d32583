/*
 * replay_run.c — one run of orbit-replay (replay.h): the exporters the
 * options ask for (replay_exporters.c) with their outputs, then --pages,
 * then the captures as one timeline through the dispatch, then every
 * exporter's end and the outputs closed. The exit status says the worst
 * that happened: an output that failed (3), an input that is missing, no
 * capture, damaged or incomplete (2), or nothing (0).
 *
 * Each capture is read once, except for what it does not state up front
 * (docs/format.md 4.13), which is read before the run when an exporter
 * needs it: a capture of protocol version 2 has its kernel states built
 * from a whole read (replay_sched_scan.h), its thread names read from its
 * tail (replay_tail.c) and, for the runs that count from the origin while
 * they read, its times from a whole read (replay_origin.c); one of version
 * 3 has its states built as it is read, its names before its records, and
 * its origin in its last frame, read first.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"

#include "replay_dispatch.h"
#include "replay_origin.h"
#include "replay_pages.h"
#include "replay_report.h"
#include "replay_sched_scan.h"
#include "replay_tail.h"
#include "replay_timeline.h"

#define PROGRESS_MIN (64ull << 20) /* input bytes before a progress bar */

struct run {
	const struct orbit_replay_options *o;
	struct orbit_rp_report rep;
	struct orbit_rp_out out; /* the run's standard output */
	struct orbit_rp_names names;
	struct orbit_rp_locations locs;
	struct orbit_rp_threads threads;
	struct orbit_rp_stats stats;
	struct orbit_rp_dispatch d;
	struct orbit_rp_timeline tl;
	struct orbit_rp_view view;
	struct orbit_rp_export ex[ORBIT_RP_EXPORTS];
	struct orbit_rp_out files[ORBIT_RP_EXPORTS];
	size_t nex;
	int begun;   /* every exporter began */
	int scanned; /* the origin was found before the run */
	unsigned needs;
	struct orbit_rp_sched_scan *sched; /* the streams' scheduling states */
	uint64_t *stated;                  /* per input: the origin its end stated, 0 none */
	struct orbit_replay_reads reads;
};

/* ---- the exporters and their outputs ---- */

static int open_file(struct run *r, struct orbit_rp_out *o, const char *path)
{
	int err = orbit__rp_out_open(o, path);
	if (err == 0)
		return 0;
	orbit__rp_say(&r->rep, "%s: %s", path, strerror(-err));
	return -1;
}

static int open_exports(struct run *r)
{
	const struct orbit_replay_options *o = r->o;
	const struct orbit_rp_exporter *const *list =
	    o->exporters ? o->exporters : orbit__rp_exporters;
	for (size_t i = 0; list[i] != NULL; i++) {
		const struct orbit_rp_exporter *ex = list[i];
		const char *path = ex->wanted(o);
		if (path == NULL)
			continue;
		if (r->nex == ORBIT_RP_EXPORTS) {
			orbit__rp_say(&r->rep, "more than %u outputs at once", ORBIT_RP_EXPORTS);
			return ORBIT_REPLAY_OUTPUT;
		}
		struct orbit_rp_export *x = &r->ex[r->nex];
		x->ex = ex;
		x->view = &r->view;
		x->slot = (unsigned)r->nex;
		x->out = ex->needs & ORBIT_RP_NEED_STDOUT ? &r->out : &r->files[r->nex];
		if (x->out != &r->out && open_file(r, x->out, path) != 0)
			return ORBIT_REPLAY_OUTPUT;
		r->nex++;
		r->needs |= ex->needs;
	}
	for (size_t i = 0; i < r->nex; i++) {
		struct orbit_rp_export *x = &r->ex[i];
		x->state = calloc(1, x->ex->state_size ? x->ex->state_size : 1);
		if (x->state == NULL || (x->ex->begin && x->ex->begin(x) != 0))
			return ORBIT_REPLAY_OUTPUT;
		orbit__rp_dispatch_add(&r->d, x);
	}
	r->begun = 1;
	return 0;
}

static int close_file(struct run *r, struct orbit_rp_out *o)
{
	const char *path = o->path;
	if (o->f == NULL && o->buf == NULL)
		return 0;
	int err = orbit__rp_out_close(o);
	if (err == 0)
		return 0;
	orbit__rp_say(&r->rep, "%s: write error: %s", path, strerror(-err));
	return -1;
}

/* ---- the captures ---- */

static uint64_t bound(uint64_t origin, const struct orbit_replay_bound *b, uint64_t unset)
{
	if (!b->set)
		return unset;
	if (!b->relative)
		return b->ns;
	return origin + b->ns < origin ? UINT64_MAX : origin + b->ns;
}

static int want_progress(const struct run *r)
{
	const struct orbit_replay_options *o = r->o;
	if (o->err == NULL || o->progress == 0 || o->follow)
		return 0;
	if (o->progress > 0)
		return 1;
	return r->tl.total_bytes >= PROGRESS_MIN && isatty(fileno(o->err));
}

/* Whether the origin is needed before the captures are read. */
static int origin_early(const struct run *r)
{
	const struct orbit_replay_options *o = r->o;
	return (r->needs & ORBIT_RP_NEED_ORIGIN) || (o->from.set && o->from.relative) ||
	       (o->to.set && o->to.relative);
}

/* Whether input i states what a reader needs up front (version 3). */
static int up_front(const struct run *r, size_t i)
{
	return !r->o->up_front_off &&
	       orbit__rp_timeline_first_version(&r->tl, i) >= ORBIT_PROTOCOL_UP_FRONT;
}

/* The inputs that may hold kernel pages and are not read ahead for them:
 * their states, from a whole read each, before the run. */
static void states_before(struct run *r)
{
	struct orbit_rp_timeline *tl = &r->tl;
	for (size_t i = 0; i < tl->n; i++) {
		const Orbit__Packet *p = tl->srcs[i].peek;
		if (tl->srcs[i].r == NULL || tl->srcs[i].ahead || p == NULL ||
		    (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE &&
		     p->handshake->kernel_sched == NULL))
			continue;
		r->reads.bytes += orbit__rp_sched_scan_file(r->sched, i, tl->caps[i].path);
		r->reads.before++;
	}
}

/* The origin before the run: what each capture's end states, and a read
 * for the times of the others. */
static void origin_before(struct run *r)
{
	struct orbit_rp_timeline *tl = &r->tl;
	const char **scan = calloc(tl->n ? tl->n : 1, sizeof *scan);
	size_t nscan = 0;
	uint64_t origin = UINT64_MAX, bytes;
	r->stated = calloc(tl->n ? tl->n : 1, sizeof *r->stated);
	for (size_t i = 0; scan != NULL && r->stated != NULL && i < tl->n; i++) {
		if (tl->srcs[i].r == NULL)
			continue;
		if (up_front(r, i)) {
			r->stated[i] = orbit__rp_tail_read(NULL, tl->caps[i].path, tl->caps[i].size,
			                                   0, &bytes);
			r->reads.bytes += bytes;
			r->reads.tails++;
			if (r->stated[i] != 0) {
				origin = r->stated[i] < origin ? r->stated[i] : origin;
				continue;
			}
		}
		scan[nscan++] = tl->caps[i].path;
	}
	if (scan == NULL || r->stated == NULL) /* no memory: every capture read */
		for (size_t i = 0; i < tl->n; i++)
			if (tl->srcs[i].r != NULL)
				scan[nscan++] = tl->caps[i].path;
	if (nscan > 0) {
		uint64_t o = orbit__rp_origin_scan(scan, nscan, &bytes);
		origin = o < origin ? o : origin;
		r->reads.bytes += bytes;
		r->reads.before += nscan;
	}
	free(scan);
	r->view.origin = origin == UINT64_MAX ? 0 : origin;
	r->scanned = 1;
}

/* A capture whose end stated an origin that is not its earliest event (a
 * writer that broke its word, or damage that lost the earliest): the
 * times counted from it are off by the difference. */
static void origin_check(struct run *r)
{
	for (size_t i = 0; r->stated != NULL && i < r->tl.n; i++) {
		uint64_t seen = orbit__rp_origin_of_capture(&r->tl.caps[i]);
		if (r->stated[i] != 0 && seen != UINT64_MAX && seen != r->stated[i])
			orbit__rp_problem(
			    &r->rep,
			    "%s: its end of stream says its earliest event is at %" PRIu64
			    " ns, it is at %" PRIu64 " ns: times counted from the start "
			    "are off by the difference",
			    r->tl.caps[i].path, r->stated[i], seen);
	}
}

static void read_inputs(struct run *r)
{
	const struct orbit_replay_options *o = r->o;
	struct orbit_rp_timeline *tl = &r->tl;
	tl->rep = &r->rep;
	tl->d = &r->d;
	tl->sched = r->sched;
	tl->ahead = !o->up_front_off;
	tl->inline_reads = o->inline_reads;
	tl->follow = o->follow;
	tl->stop = o->stop;
	tl->frame_skip = o->frame_skip;
	tl->frame_skip_ctx = o->frame_skip_ctx;
	if (orbit__rp_timeline_open(tl, o->inputs, o->ninputs) != 0)
		return;
	r->view.caps = tl->caps;
	r->view.ncaps = tl->n;
	if (r->sched != NULL)
		states_before(r);
	if (origin_early(r))
		origin_before(r);
	orbit__rp_dispatch_filter(&r->d, o, bound(r->view.origin, &o->from, 0),
	                          bound(r->view.origin, &o->to, UINT64_MAX));
	for (size_t i = 0; (r->needs & ORBIT_RP_NEED_EARLY_NAMES) && i < tl->n; i++) {
		uint64_t bytes;
		if (tl->srcs[i].r == NULL || up_front(r, i))
			continue;
		orbit__rp_tail_read(&r->threads, tl->caps[i].path, tl->caps[i].size,
		                    orbit__rp_timeline_first_pid(tl, i), &bytes);
		r->reads.bytes += bytes;
		r->reads.tails++;
	}
	tl->progress = want_progress(r);
	orbit__rp_timeline_read(tl);
	if (!r->scanned)
		r->view.origin = orbit__rp_origin_of(tl->caps, tl->n);
	else
		origin_check(r);
}

/* Whether --from/--to select nothing of the captures' events: said in one
 * line, with what the captures hold. */
static int window_misses(struct run *r)
{
	const struct orbit_replay_options *o = r->o;
	if (!o->from.set && !o->to.set)
		return 0;
	uint64_t first = UINT64_MAX, last = 0; /* the streams' spans, as the origin takes them */
	for (size_t i = 0; i < r->tl.n; i++)
		for (const struct orbit_rp_stream *s = r->tl.caps[i].streams; s; s = s->next) {
			uint64_t a, b;
			orbit__rp_stream_span(s, &a, &b);
			first = a < first ? a : first;
			last = b > last ? b : last;
		}
	uint64_t from = bound(r->view.origin, &o->from, 0);
	uint64_t to = bound(r->view.origin, &o->to, UINT64_MAX);
	if (first > last || (to >= first && from <= last))
		return 0; /* nothing to miss, or the window overlaps them */
	uint64_t o0 = r->view.origin;
	orbit__rp_say(
	    &r->rep,
	    "--from/--to select nothing: the captures hold +0 to +%.6f s (CLOCK_MONOTONIC "
	    "%" PRIu64 " to %" PRIu64 " ns); times count from their start, '@N' is "
	    "absolute",
	    (double)(last - o0) / 1e9, first, last);
	return 1;
}

/* ---- a run ---- */

/* Ends the exports, closes every output. */
static int finish(struct run *r, int status)
{
	orbit__rp_dispatch_flush(&r->d);
	for (size_t i = 0; r->begun && status != ORBIT_REPLAY_OUTPUT && i < r->nex; i++)
		if (r->ex[i].ex->end)
			r->ex[i].ex->end(&r->ex[i]);
	int bad = 0;
	for (size_t i = 0; i < r->nex; i++)
		if (r->ex[i].out != &r->out)
			bad |= close_file(r, r->ex[i].out);
	bad |= close_file(r, &r->out);
	if (bad || status == ORBIT_REPLAY_OUTPUT)
		return ORBIT_REPLAY_OUTPUT;
	if (r->rep.damaged || status == ORBIT_REPLAY_DAMAGED)
		return ORBIT_REPLAY_DAMAGED;
	for (size_t i = 0; i < r->tl.n; i++)
		if (r->tl.caps[i].newer != 0)
			return ORBIT_REPLAY_NEWER;
	return window_misses(r) ? ORBIT_REPLAY_EMPTY : ORBIT_REPLAY_OK;
}

static void cleanup(struct run *r)
{
	for (size_t i = 0; i < r->nex; i++) {
		struct orbit_rp_export *x = &r->ex[i];
		if (x->state != NULL && x->ex->free)
			x->ex->free(x);
		free(x->state);
	}
	orbit__rp_timeline_free(&r->tl); /* it adds up what its readers read */
	r->reads.bytes += r->tl.bytes_read;
	r->reads.threads = r->tl.threads;
	orbit__rp_sched_scan_free(r->sched);
	free(r->stated);
	if (r->o->reads != NULL)
		*r->o->reads = r->reads;
	orbit__rp_dispatch_free(&r->d);
	orbit__rp_threads_free(&r->threads);
	orbit__rp_names_free(&r->names);
	orbit__rp_locations_free(&r->locs);
	orbit__rp_stats_free(&r->stats);
}

int orbit__replay_run(const struct orbit_replay_options *o)
{
	struct run *r = calloc(1, sizeof *r);
	if (r == NULL)
		return ORBIT_REPLAY_OUTPUT;
	r->o = o;
	r->rep.err = o->err;
	r->stats.hist_budget = ORBIT_RP_HIST_BUDGET;
	r->stats.by_location = o->by_location;
	r->d.threads = &r->threads;
	r->d.names = &r->names;
	r->d.locs = &r->locs;
	r->d.stats = &r->stats;
	r->d.to = UINT64_MAX;
	r->view =
	    (struct orbit_rp_view){o, &r->threads, &r->names, &r->stats, NULL, 0, 0, &r->locs};
	orbit__rp_out_stream(&r->out, o->out ? o->out : stdout, "stdout");
	int status = open_exports(r);
	if (status == 0 && o->pages_path != NULL)
		status = orbit__rp_pages(&r->out, &r->rep, o->pages_path,
		                         o->page_size ? o->page_size : 4096);
	if (status != ORBIT_REPLAY_OUTPUT && o->ninputs > 0) {
		if (r->needs & ORBIT_RP_NEED_SCHED)
			r->sched = orbit__rp_sched_scan_new(o->ninputs);
		read_inputs(r);
	}
	status = finish(r, status);
	cleanup(r);
	free(r);
	return status;
}
