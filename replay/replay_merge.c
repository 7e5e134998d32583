/*
 * replay_merge.c — the captures as one timeline. Every capture is open at
 * once and the next packet always comes from the capture whose pending
 * packet is earliest: a ring batch by its first record's time, a log page
 * by its page time; other packets go as soon as they are next in their
 * file. Only one frame per capture is in memory (format/frame.h), so
 * memory does not grow with the captures' size.
 *
 * A frame the reader cannot read, or a packet outside the format's limits,
 * is one line on stderr naming the file and the frame's byte offset; the
 * reader resynchronises at the next frame.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "frame.h"
#include "replay_report.h"
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
static void peek(struct orbit_rp_timeline *tl, struct orbit_rp_source *src)
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
			orbit__rp_problem(tl->rep, "%s: offset %" PRIu64 ": %s%s", path,
			                  prob.offset, orbit__frame_strerror(prob.error),
			                  prob.error == ORBIT_FRAME_EPACKET ? ": packet skipped"
			                                                    : ": frame skipped");
			src->cap->damaged++;
			continue;
		}
		if (rc < 0) {
			orbit__rp_problem(tl->rep, "%s: read error at offset %" PRIu64 ": %s", path,
			                  before, strerror(-rc));
			src->cap->io_error = 1;
			src->done = 1;
			return;
		}
		if (orbit__capture_offset(src->r) != before)
			src->frame_at = before;
		if (orbit__packet_validate(p) != 0) {
			orbit__rp_problem(tl->rep,
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
	for (size_t i = 0; i < n; i++) {
		struct orbit_rp_source *src = &tl->srcs[i];
		struct orbit_rp_capture *cap = &tl->caps[i];
		struct stat st;
		int err = 0;
		cap->path = paths[i];
		src->cap = cap;
		if (stat(cap->path, &st) == 0)
			cap->size = (uint64_t)st.st_size;
		tl->total_bytes += cap->size;
		src->r = orbit__capture_open(cap->path, &err);
		if (src->r == NULL) {
			orbit__rp_problem(tl->rep, "%s: %s", cap->path, orbit__frame_strerror(err));
			cap->io_error = 1;
			src->done = 1;
			continue;
		}
		peek(tl, src);
	}
	return 0;
}

uint32_t orbit__rp_timeline_first_pid(const struct orbit_rp_timeline *tl, size_t i)
{
	const Orbit__Packet *p = tl->srcs[i].peek;
	return p && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE ? p->handshake->pid : 0;
}

static struct orbit_rp_source *next_source(struct orbit_rp_timeline *tl)
{
	struct orbit_rp_source *best = NULL;
	for (size_t i = 0; i < tl->n; i++)
		if (!tl->srcs[i].done && (best == NULL || tl->srcs[i].key < best->key))
			best = &tl->srcs[i];
	return best;
}

static void progress(struct orbit_rp_timeline *tl)
{
	if (!orbit__rp_progress_due(tl->rep))
		return;
	uint64_t done = 0;
	for (size_t i = 0; i < tl->n; i++)
		done += tl->srcs[i].r && !tl->srcs[i].done ? orbit__capture_offset(tl->srcs[i].r)
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
		peek(tl, src);
		if (src->done)
			orbit__rp_source_finish(tl, src);
		if (tl->progress && (++tick & 63) == 0)
			progress(tl);
	}
	orbit__rp_progress_clear(tl->rep);
	for (size_t i = 0; i < tl->n; i++)
		if (tl->caps[i].streams == NULL && !tl->caps[i].io_error)
			orbit__rp_problem(tl->rep, "%s: no stream could be read", tl->caps[i].path);
}

void orbit__rp_timeline_free(struct orbit_rp_timeline *tl)
{
	for (size_t i = 0; tl->srcs && i < tl->n; i++) {
		if (tl->srcs[i].peek)
			orbit__packet__free_unpacked(tl->srcs[i].peek, NULL);
		orbit__capture_close(tl->srcs[i].r);
	}
	for (size_t i = 0; tl->caps && i < tl->n; i++)
		orbit__rp_capture_free(&tl->caps[i]);
	free(tl->srcs);
	free(tl->caps);
	free(tl->batch);
	tl->srcs = NULL;
	tl->caps = NULL;
	tl->batch = NULL;
}
