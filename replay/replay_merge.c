/*
 * replay_merge.c — the captures as one timeline. Every capture is open at
 * once and the next packet always comes from the capture whose pending
 * packet is earliest: a ring batch by its first record's time, a log page
 * or a kernel page by its page time; other packets go as soon as they are
 * next in their file. Only one frame per capture is in memory (format/frame.h), so
 * memory does not grow with the captures' size. A capture read ahead for
 * the kernel's states (replay_timeline.h) also holds what waits in its
 * queue, at most ORBIT_RP_AHEAD_BYTES: the order of the merge is the same,
 * since a packet's place depends only on the packets of its own capture
 * before it.
 *
 * A frame the reader cannot read, or a packet outside the format's limits,
 * is one line on stderr naming the file and the frame's byte offset; the
 * reader resynchronises at the next frame. A file that holds no Orbit
 * capture at all gets one line saying so instead: missing, a directory, a
 * zstd file whose first frame Orbit would never write (no content size or
 * checksum, too large) or whose content is not packets, or no zstd at all.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "replay_dispatch.h"
#include "replay_prefetch.h"
#include "replay_report.h"
#include "replay_sched_scan.h"
#include "replay_timeline.h"

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
	case ORBIT__PACKET__BODY_KERNEL_PAGE:
		return "kernel page";
	case ORBIT__PACKET__BODY_KERNEL_LOSS:
		return "kernel loss";
	case ORBIT__PACKET__BODY_KERNEL_MARK:
		return "kernel mark";
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
	if (p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE && p->kernel_page->page.len >= 8)
		return orbit__le64(p->kernel_page->page.data);
	return prev;
}

/* ---- reading, and reading ahead ---- */

static struct orbit_rp_read *q_at(struct orbit_rp_source *src, size_t k)
{
	return &src->q[(src->qhead + k) % src->qcap];
}

/* Room for one more read in the queue: 0, or -1 without memory. */
static int q_room(struct orbit_rp_source *src)
{
	if (src->qlen < src->qcap)
		return 0;
	size_t cap = src->qcap ? src->qcap * 2 : 4;
	struct orbit_rp_read *q = malloc(cap * sizeof *q);
	if (q == NULL)
		return -1;
	for (size_t k = 0; k < src->qlen; k++)
		q[k] = *q_at(src, k);
	free(src->q);
	src->q = q;
	src->qcap = cap;
	src->qhead = 0;
	return 0;
}

static struct orbit_rp_read *q_push(struct orbit_rp_source *src)
{
	struct orbit_rp_read *e = q_at(src, src->qlen++);
	memset(e, 0, sizeof *e);
	return e;
}

static void q_pop(struct orbit_rp_source *src)
{
	src->qbytes -= q_at(src, 0)->bytes;
	src->qhead = (src->qhead + 1) % src->qcap;
	src->qlen--;
}

/* Buffers for a batch's records decoded ahead, ORBIT_BATCH_MAX records
 * each: kept for the next batches rather than given back (a fresh one
 * costs the kernel's page faults, every batch). */
static uint8_t *records_take(struct orbit_rp_timeline *tl)
{
	if (tl->nspare > 0)
		return tl->spare[--tl->nspare];
	return malloc((size_t)ORBIT_BATCH_MAX * ORBIT_RECORD_SIZE);
}

static void records_give(struct orbit_rp_timeline *tl, uint8_t *b)
{
	if (b != NULL && tl->nspare < ORBIT_RP_SPARE)
		tl->spare[tl->nspare++] = b;
	else
		free(b);
}

static void read_free(struct orbit_rp_timeline *tl, struct orbit_rp_read *e)
{
	if (e->p != NULL)
		orbit__packet__free_unpacked(e->p, NULL);
	records_give(tl, e->records);
}

/* A ring batch read ahead: its records decoded once, now, and the latest
 * of their times, up to which its stream's states must be final. */
static void ahead_batch(struct orbit_rp_timeline *tl, struct orbit_rp_read *e)
{
	const Orbit__RingBatch *b = e->p->ring_batch;
	if (b->count == 0 || (e->records = records_take(tl)) == NULL)
		return;
	if (orbit__batch_decode(b, e->records) != 0) { /* said when it is applied */
		records_give(tl, e->records);
		e->records = NULL;
		return;
	}
	for (uint32_t k = 0; k < b->count; k++) { /* the record layout: time at 0 */
		uint64_t t = orbit__le64(e->records + (size_t)k * ORBIT_RECORD_SIZE);
		e->need = t > e->need ? t : e->need;
	}
	e->bytes += (size_t)b->count * ORBIT_RECORD_SIZE;
}

static int stopped(const struct orbit_rp_timeline *tl)
{
	return tl->stop != NULL && atomic_load_explicit(tl->stop, memory_order_relaxed) != 0;
}

/* Following, the file has nothing more yet: the exporters' tick, then a
 * pause before the next read. */
static void wait_more(struct orbit_rp_timeline *tl)
{
	if (tl->d != NULL)
		orbit__rp_dispatch_tick(tl->d);
	struct timespec ts = {0, 50 * 1000 * 1000};
	nanosleep(&ts, NULL); /* a signal cuts it short: stopped() says why */
}

/* Nothing more is read from src (input i). A capture followed has the size
 * it grew to as it was read. */
static void at_end(struct orbit_rp_timeline *tl, struct orbit_rp_source *src, size_t i)
{
	src->eof = 1;
	if (src->ahead)
		orbit__rp_sched_scan_end(tl->sched, i);
	if (tl->follow && src->pf == NULL && orbit__capture_offset(src->r) > src->cap->size)
		src->cap->size = orbit__capture_offset(src->r);
}

/* Reads what comes next in src into its queue (which has room); at the
 * end, or on a read error, the reader is done. What is read ahead goes to
 * the scan now. */
static void read_one(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	struct orbit_rp_fetched f;
	size_t i = (size_t)(src->cap - tl->caps);
	struct orbit_rp_read *e;

	if (tl->follow && stopped(tl)) { /* what was read is the capture */
		at_end(tl, src, i);
		return;
	}
	if (src->pf != NULL) {
		orbit__rp_prefetch_take(src->pf, &f);
		if (f.last) { /* the thread has ended: the reader is ours again */
			orbit__rp_prefetch_free(src->pf);
			src->pf = NULL;
		}
	} else {
		orbit__rp_prefetch_read(src->r, &f);
	}
	Orbit__Packet *p = f.p;
	if (f.rc == ORBIT_CAPTURE_AGAIN) { /* following: the end, for now */
		if (src->ended) {          /* and its stream's end: the capture's */
			f.rc = 0;
			f.last = 1;
		} else {
			wait_more(tl);
			return;
		}
	}
	if (f.last) {
		if (f.rc < 0) {
			e = q_push(src);
			e->read_error = f.rc;
			e->error_at = f.before;
		}
		at_end(tl, src, i);
		return;
	}
	/* A stream made by a newer Orbit: said once, at its handshake's turn,
	 * and its packets left out, up to the next handshake. */
	if (f.rc == 1 && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE)
		src->newer = p->handshake->protocol_version > ORBIT_PROTOCOL_VERSION_MAX
		                 ? p->handshake->protocol_version
		                 : 0;
	if (f.rc == 1 && src->newer != 0) {
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
			e = q_push(src);
			e->newer = src->newer;
			e->error_at = f.before;
		}
		orbit__packet__free_unpacked(p, NULL);
		return;
	}
	e = q_push(src);
	if (f.rc < 0) {
		e->frame_error = f.prob.error;
		e->error_at = f.prob.offset;
		return;
	}
	if (f.after != f.before)
		src->frame_read = f.before;
	e->frame_at = src->frame_read;
	if (!f.valid) {
		e->invalid = packet_kind(p);
		orbit__packet__free_unpacked(p, NULL);
		return;
	}
	if (!src->read_any && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
		src->version = p->handshake->protocol_version;
		src->ahead =
		    tl->ahead && tl->sched != NULL && src->version >= ORBIT_PROTOCOL_UP_FRONT;
	}
	src->read_any = 1;
	src->ended = p->body_case == ORBIT__PACKET__BODY_END;
	e->p = p;
	e->bytes = 64;
	if (!src->ahead)
		return;
	orbit__rp_sched_scan_packet(tl->sched, i, p);
	e->states = orbit__rp_sched_scan_current(tl->sched, i);
	if (p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE)
		e->bytes += p->kernel_page->page.len;
	if (e->states != NULL && p->body_case == ORBIT__PACKET__BODY_RING_BATCH) {
		e->bytes += p->ring_batch->records.len;
		ahead_batch(tl, e);
	}
	src->qbytes += e->bytes;
}

/* Whether the packet e may be applied now: the states of every thread of
 * its records are final up to the record's time (orbit__rp_sched_final),
 * so every scope it ends gets the split the finished timeline gives. */
static int ready(struct orbit_rp_read *e)
{
	uint64_t done;
	const Orbit__RingBatch *b;

	if (e->states == NULL || e->records == NULL)
		return 1;
	done = orbit__rp_sched_complete(e->states);
	if (done == UINT64_MAX)
		return 1;
	if (e->need > done || e->checked == done)
		return 0;
	if (orbit__rp_sched_undecided(e->states) == 0)
		return 1; /* final up to done for every thread */
	b = e->p->ring_batch;
	for (uint32_t k = 0; k < b->count; k++) {
		const uint8_t *r = e->records + (size_t)k * ORBIT_RECORD_SIZE;
		if (!orbit__rp_sched_final(e->states, (int32_t)orbit__le32(r + 16),
		                           orbit__le64(r))) {
			e->checked = done;
			return 0;
		}
	}
	return 1;
}

/* A problem read from src, said at its turn. */
static void say(struct orbit_rp_timeline *tl, struct orbit_rp_source *src, struct orbit_rp_read *e)
{
	const char *path = src->cap->path;
	if (e->frame_error != 0) {
		if (src->problems++ == 0) {
			src->first_error = e->frame_error;
			src->first_at = e->error_at;
		}
		orbit__rp_problem(tl->rep, "%s: offset %" PRIu64 ": %s%s", path, e->error_at,
		                  orbit__frame_strerror(e->frame_error),
		                  e->frame_error == ORBIT_FRAME_EPACKET ? ": packet skipped"
		                                                        : ": frame skipped");
		src->cap->damaged++;
	} else if (e->read_error != 0) {
		orbit__rp_problem(tl->rep, "%s: read error at offset %" PRIu64 ": %s", path,
		                  e->error_at, strerror(-e->read_error));
		src->cap->io_error = 1;
		src->done = 1;
	} else if (e->newer != 0) {
		orbit__rp_say(tl->rep,
		              "%s: offset %" PRIu64
		              ": a stream made by a newer Orbit (protocol %" PRIu32
		              "); this orbit-replay reads protocols %u to %u: left out",
		              path, e->error_at, e->newer, ORBIT_PROTOCOL_VERSION_MIN,
		              ORBIT_PROTOCOL_VERSION_MAX);
		src->cap->newer = e->newer;
	} else if (e->invalid != NULL) {
		orbit__rp_problem(tl->rep,
		                  "%s: frame at offset %" PRIu64 ": %s packet outside the "
		                  "format's limits",
		                  path, e->frame_at, e->invalid);
		src->cap->invalid++;
	}
}

/* Takes src's next good packet into src->peek, saying the problems before
 * it; at the end (or after a read error) marks src done. A capture read
 * ahead reads on while its next packet is not ready and its queue has room. */
static void peek(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	for (;;) {
		if (src->done)
			return;
		if (src->qlen == 0) {
			if (src->eof) {
				src->done = 1;
				return;
			}
			read_one(tl, src); /* the queue has room for one at least */
			continue;
		}
		struct orbit_rp_read *e = q_at(src, 0);
		if (e->p == NULL) {
			say(tl, src, e);
			q_pop(src);
			continue;
		}
		if (src->ahead && !ready(e)) {
			if (!src->eof && src->qbytes < ORBIT_RP_AHEAD_BYTES &&
			    src->qlen < ORBIT_RP_AHEAD_READS && q_room(src) == 0) {
				read_one(tl, src);
				continue;
			}
			if (!src->eof && !src->forced)
				orbit__rp_say(
				    tl->rep,
				    "%s: offset %" PRIu64 ": %u MiB read ahead without the "
				    "kernel events that settle its scopes' thread states: "
				    "from here on a scope may get less of them than the "
				    "capture holds",
				    src->cap->path, e->frame_at, ORBIT_RP_AHEAD_BYTES >> 20);
			src->forced = 1;
		}
		src->peek = e->p;
		src->peek_records = e->records;
		src->frame_at = e->frame_at;
		src->key = packet_key(e->p, src->key);
		q_pop(src);
		return;
	}
}

/* What a file that gave no packet at all is, when that is clear: NULL for
 * damage (a cut or corrupt first frame of what may be a capture). */
static const char *not_a_capture(const struct orbit_rp_source *src)
{
	if (src->cap->io_error || src->problems == 0 || src->first_at != 0)
		return NULL;
	switch (src->first_error) {
	case ORBIT_FRAME_ENOSIZE: /* Orbit's writers always set both */
	case ORBIT_FRAME_ECHECKSUM:
	case ORBIT_FRAME_EBIG:    /* over the format's limits */
	case ORBIT_FRAME_EPACKET: /* a sound zstd frame holding no packets */
		return "not an Orbit capture (no handshake frame)";
	case ORBIT_FRAME_EMAGIC: /* and no zstd frame anywhere after it */
		return src->problems == 1 ? "not an Orbit capture (not zstd)" : NULL;
	default:
		return NULL;
	}
}

static const char *open_error(int err)
{
	switch (-err) {
	case ENOENT:
		return "no such file";
	case EACCES:
	case EPERM:
		return "permission denied";
	case EISDIR:
		return "is a directory";
	default:
		return orbit__frame_strerror(err);
	}
}

/* Opens src and reads its first packet, holding its problems until then: a
 * file that gives no packet at all may be no capture, said in one line. */
static void source_open(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
{
	struct orbit_rp_capture *cap = src->cap;
	struct stat st;
	int err = 0;
	if (stat(cap->path, &st) != 0)
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	else
		cap->size = (uint64_t)st.st_size;
	tl->total_bytes += cap->size;
	src->r = err ? NULL : orbit__capture_open(cap->path, &err);
	if (src->r != NULL && q_room(src) != 0) {
		orbit__capture_close(src->r);
		src->r = NULL;
		err = -ENOMEM;
	}
	if (src->r == NULL) {
		cap->error = open_error(err);
		orbit__rp_problem(tl->rep, "%s: %s", cap->path, cap->error);
		src->done = 1;
		return;
	}
	if (tl->follow) {
		orbit__capture_follow(src->r);
		if (tl->frame_skip != NULL) /* following reads in-line: the count is ours */
			orbit__capture_skip_frames(src->r, tl->frame_skip, tl->frame_skip_ctx);
	} else if (tl->threads_left > 0 && (src->pf = orbit__rp_prefetch_start(src->r)) != NULL) {
		tl->threads_left--;
		tl->threads++;
	}
	orbit__rp_hold(tl->rep);
	peek(tl, src);
	const char *what = src->peek == NULL ? not_a_capture(src) : NULL;
	if (what != NULL && orbit__rp_held_all(tl->rep))
		orbit__rp_drop(tl->rep); /* one line says it all */
	else
		orbit__rp_release(tl->rep);
	if (what != NULL) {
		cap->error = what;
		orbit__rp_problem(tl->rep, "%s: %s", cap->path, what);
	}
}

int orbit__rp_timeline_open(struct orbit_rp_timeline *tl, const char *const *paths, size_t n)
{
	tl->srcs = calloc(n, sizeof *tl->srcs);
	tl->caps = calloc(n, sizeof *tl->caps);
	tl->batch = malloc((size_t)ORBIT_BATCH_MAX * ORBIT_RECORD_SIZE);
	if (tl->srcs == NULL || tl->caps == NULL || tl->batch == NULL) {
		orbit__rp_problem(tl->rep, "out of memory");
		return -1;
	}
	tl->n = n;
	/* Reader threads while a CPU is left beside the merge's. */
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	tl->threads_left = tl->inline_reads || cpus < 2                 ? 0
	                   : cpus - 1 < (long)ORBIT_RP_PREFETCH_THREADS ? (unsigned)(cpus - 1)
	                                                                : ORBIT_RP_PREFETCH_THREADS;
	for (size_t i = 0; i < n; i++) {
		tl->caps[i].path = paths[i];
		tl->srcs[i].cap = &tl->caps[i];
		source_open(tl, &tl->srcs[i]);
	}
	return 0;
}

uint32_t orbit__rp_timeline_first_pid(const struct orbit_rp_timeline *tl, size_t i)
{
	const Orbit__Packet *p = tl->srcs[i].peek;
	return p && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE ? p->handshake->pid : 0;
}

uint32_t orbit__rp_timeline_first_version(const struct orbit_rp_timeline *tl, size_t i)
{
	return tl->srcs[i].version;
}

uint64_t orbit__rp_timeline_bytes_read(const struct orbit_rp_timeline *tl)
{
	uint64_t n = tl->bytes_read;
	for (size_t i = 0; tl->srcs && i < tl->n; i++)
		if (tl->srcs[i].r != NULL)
			n += orbit__capture_bytes_read(tl->srcs[i].r);
	return n;
}

static struct orbit_rp_source *next_source(struct orbit_rp_timeline *tl)
{
	struct orbit_rp_source *best = NULL;
	for (size_t i = 0; i < tl->n; i++)
		if (!tl->srcs[i].done && (best == NULL || tl->srcs[i].key < best->key))
			best = &tl->srcs[i];
	return best;
}

/* Where src's reads taken so far reach in its file. */
static uint64_t source_offset(const struct orbit_rp_source *src)
{
	return src->pf != NULL ? orbit__rp_prefetch_offset(src->pf) : orbit__capture_offset(src->r);
}

static void progress(struct orbit_rp_timeline *tl)
{
	if (!orbit__rp_progress_due(tl->rep))
		return;
	uint64_t done = 0;
	for (size_t i = 0; i < tl->n; i++)
		done += tl->srcs[i].r && !tl->srcs[i].done ? source_offset(&tl->srcs[i])
		                                           : tl->caps[i].size;
	orbit__rp_progress_show(tl->rep, done, tl->total_bytes);
}

void orbit__rp_timeline_read(struct orbit_rp_timeline *tl)
{
	uint32_t tick = 0;
	if (tl->progress)
		progress(tl);
	for (;;) {
		struct orbit_rp_source *src = next_source(tl);
		if (src == NULL)
			break;
		Orbit__Packet *p = src->peek;
		src->peek = NULL;
		if (p != NULL) {
			orbit__rp_packet(tl, src, p);
			orbit__packet__free_unpacked(p, NULL);
		}
		records_give(tl, src->peek_records);
		src->peek_records = NULL;
		peek(tl, src);
		if (src->done)
			orbit__rp_source_finish(tl, src);
		if ((++tick & 63) == 0) {
			if (tl->progress)
				progress(tl);
			if (tl->follow && tl->d != NULL)
				orbit__rp_dispatch_tick(tl->d);
		}
	}
	orbit__rp_progress_clear(tl->rep);
	for (size_t i = 0; i < tl->n; i++)
		if (tl->caps[i].streams == NULL && !tl->caps[i].io_error && !tl->caps[i].error &&
		    !tl->caps[i].newer)
			orbit__rp_problem(tl->rep, "%s: no stream could be read", tl->caps[i].path);
}

void orbit__rp_timeline_free(struct orbit_rp_timeline *tl)
{
	for (size_t i = 0; tl->srcs && i < tl->n; i++) {
		struct orbit_rp_source *src = &tl->srcs[i];
		if (src->peek)
			orbit__packet__free_unpacked(src->peek, NULL);
		orbit__rp_prefetch_free(src->pf); /* the thread stopped: the reader is ours */
		src->pf = NULL;
		free(src->peek_records);
		for (size_t k = 0; k < src->qlen; k++)
			read_free(tl, q_at(src, k));
		free(src->q);
		if (src->r != NULL)
			tl->bytes_read += orbit__capture_bytes_read(src->r);
		orbit__capture_close(src->r);
		src->r = NULL;
	}
	for (size_t i = 0; tl->caps && i < tl->n; i++)
		orbit__rp_capture_free(&tl->caps[i]);
	free(tl->srcs);
	free(tl->caps);
	free(tl->batch);
	while (tl->nspare > 0)
		free(tl->spare[--tl->nspare]);
	free(tl->kev);
	tl->kev = NULL;
	tl->srcs = NULL;
	tl->caps = NULL;
	tl->batch = NULL;
}
