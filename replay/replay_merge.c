/*
 * replay_merge.c — the captures as one timeline. Every capture is open at
 * once and the next packet always comes from the capture whose pending
 * packet is earliest: a ring batch by its first record's time, a log page
 * or a kernel page by its page time; other packets go as soon as they are
 * next in their file. Only one frame per capture is in memory (format/frame.h), so
 * memory does not grow with the captures' size.
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
			if (src->problems++ == 0) {
				src->first_error = prob.error;
				src->first_at = prob.offset;
			}
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
	if (src->r == NULL) {
		cap->error = open_error(err);
		orbit__rp_problem(tl->rep, "%s: %s", cap->path, cap->error);
		src->done = 1;
		return;
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
		if (tl->caps[i].streams == NULL && !tl->caps[i].io_error && !tl->caps[i].error)
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
	free(tl->kev);
	tl->kev = NULL;
	tl->srcs = NULL;
	tl->caps = NULL;
	tl->batch = NULL;
}
