/*
 * ingest.c — `orbit-collector --ingest FILE...`: spool files (what an agent
 * kept when no collector acknowledged its stream, agent/src/output_composite.c)
 * taken into the capture directory as if their streams had arrived over
 * TCP. Every frame meets the rules a connection's frames meet
 * (frame_rules.c) before anything is written; a file that does not is
 * taken in no part.
 *
 * A spool file is a stream's Handshake frame, then frames of that stream,
 * byte for byte as the agent wrote them: all of them (the stream went to
 * the spool from its start), or those after the last one the collector
 * acknowledged (its connection died). Taking one in:
 *
 *  1. Its Handshake frame is looked for in the directory: a capture whose
 *     first frame is the same bytes holds the start of the same stream
 *     (a Handshake names its process and the nanosecond it began). None:
 *     a new capture, named as a connection's would be, takes the frames.
 *  2. Found: the capture's whole frames are walked (a torn last frame, its
 *     collector killed mid-write, is cut off). The spool's first frame
 *     after its Handshake is looked for among them; from there the two
 *     must agree byte for byte, and the spool's frames past the capture's
 *     end are appended. Not found: the capture ends before the spool's
 *     frames begin (a collector has written every frame it acknowledged,
 *     and the spool begins right after the last acknowledged one), and
 *     all of them are appended.
 *  3. So a file ingested twice adds nothing the second time, and the
 *     collector's capture of a stream and the spool of its tail end up
 *     one capture holding every frame once.
 *
 * A capture its collector cut at a cap (its last frame the collector's own
 * Ack, docs/format.md 7.3) takes nothing more; a capture a collector is
 * still writing (it holds the file's lock, capture_file.c) is left alone,
 * said, and can be ingested into once its stream ended. Memory: one frame
 * of each file (4 MiB at most), and 16 bytes per frame of the capture.
 */
#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "orbit.pb-c.h"

#define RAW_CAP (ORBIT_FRAME_MAX_COMPRESSED + 64u)

/* Frames of a file, read one at a time. */
struct raw {
	int fd;
	uint8_t *buf;
	size_t len, pos;
	uint64_t off; /* the file offset of buf[pos] */
	int eof;
};

static int raw_open(struct raw *r, int fd)
{
	*r = (struct raw){.fd = fd};
	r->buf = malloc(RAW_CAP);
	return r->buf != NULL ? 0 : -ENOMEM;
}

static void raw_close(struct raw *r)
{
	free(r->buf);
	r->buf = NULL;
}

/* The frame at r->off: 1 and *p, *n (valid until the next call); 0 at a
 * clean end; ORBIT_FRAME_ETRUNC when the file ends inside a frame; another
 * negative error when the bytes there are no frame. */
static int raw_next(struct raw *r, const uint8_t **p, size_t *n)
{
	for (;;) {
		size_t avail = r->len - r->pos, flen = 0;
		int e = avail > 0 ? orbit__frame_size(r->buf + r->pos, avail, &flen) : 1;
		if (e == 0) {
			*p = r->buf + r->pos;
			*n = flen;
			r->pos += flen;
			r->off += flen;
			return 1;
		}
		if (e < 0)
			return e;
		if (r->eof)
			return avail > 0 ? ORBIT_FRAME_ETRUNC : 0;
		memmove(r->buf, r->buf + r->pos, avail);
		r->len = avail;
		r->pos = 0;
		ssize_t got = read(r->fd, r->buf + r->len, RAW_CAP - r->len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		r->eof = got == 0;
		r->len += (size_t)got;
	}
}

static uint64_t fnv(const uint8_t *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

/* One frame of the capture being ingested into. */
struct mark {
	uint64_t off;
	uint32_t len;
	uint32_t hash; /* fnv's low bits: a frame is compared in full when they agree */
};

struct ingest {
	const char *dir;
	int dirfd;
	struct orbit_frame_scratch scratch;
	/* the spool file's stream */
	uint8_t hs[ORBIT_HANDSHAKE_FRAME_MAX];
	size_t hs_len;
	char process[256];
	uint32_t pid;
	uint64_t realtime_ns; /* when the stream began */
};

static int take_handshake(void *ctx, const Orbit__Packet *p, char *why, size_t n)
{
	struct ingest *g = ctx;
	(void)why;
	(void)n;
	if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
		snprintf(g->process, sizeof g->process, "%s",
		         p->handshake->process_name ? p->handshake->process_name : "");
		g->pid = p->handshake->pid;
		g->realtime_ns = p->handshake->realtime_ns;
	}
	return 0;
}

/* The whole spool meets the rules: its frames after the Handshake (count),
 * and how the file ends. 0, or -1 after one line. */
static int spool_check(struct ingest *g, const char *path, int fd, uint64_t *count)
{
	struct raw r;
	if (raw_open(&r, fd) != 0) {
		fprintf(stderr, "orbit-collector: %s: no memory\n", path);
		return -1;
	}
	const uint8_t *p;
	size_t n;
	char why[256];
	int e, rc = 0;
	*count = 0;
	for (uint64_t i = 0; (e = raw_next(&r, &p, &n)) == 1; i++) {
		uint64_t at = r.off - n;
		if (i == 0 && n > sizeof g->hs)
			e = ORBIT_FRAME_EBIG;
		else
			e = orbit__frame_rules(&g->scratch, p, n, i == 0, take_handshake, g, why,
			                       sizeof why);
		if (e != 0) {
			fprintf(stderr,
			        "orbit-collector: %s: frame %" PRIu64 " at offset %" PRIu64
			        ": %s; nothing taken from it\n",
			        path, i + 1, at, i == 0 && n > sizeof g->hs ? "over 64 KiB" : why);
			rc = -1;
			break;
		}
		if (i == 0) {
			memcpy(g->hs, p, n);
			g->hs_len = n;
		} else {
			++*count;
		}
	}
	if (rc == 0 && e == ORBIT_FRAME_ETRUNC && g->hs_len > 0) {
		fprintf(stderr,
		        "orbit-collector: %s: the file ends inside a frame at offset %" PRIu64
		        " (its agent died writing it); the frames before it are taken\n",
		        path, r.off);
	} else if (rc == 0 && e != 0) {
		fprintf(stderr,
		        "orbit-collector: %s: at offset %" PRIu64 ": %s; nothing taken from it\n",
		        path, r.off, orbit__frame_strerror(e));
		rc = -1;
	} else if (rc == 0 && g->hs_len == 0) {
		fprintf(stderr, "orbit-collector: %s: no frame in it; nothing taken\n", path);
		rc = -1;
	}
	raw_close(&r);
	return rc;
}

/* A capture in the directory whose first frame is the spool's Handshake:
 * its descriptor (read-write, locked) and name, 0 when there is none, or
 * -1 after one line. */
static int find_capture(struct ingest *g, const char *path, char *name, size_t len)
{
	DIR *d = fdopendir(dup(g->dirfd));
	if (d == NULL) {
		fprintf(stderr, "orbit-collector: %s: cannot read it: %s\n", g->dir,
		        strerror(errno));
		return -1;
	}
	rewinddir(d);
	int found = 0;
	uint8_t *first = malloc(g->hs_len);
	struct dirent *e;
	while (first != NULL && found == 0 && (e = readdir(d)) != NULL) {
		size_t nl = strlen(e->d_name);
		if (nl < 10 || strcmp(e->d_name + nl - 10, ".orbit.zst") != 0)
			continue;
		int fd = openat(g->dirfd, e->d_name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		ssize_t got = pread(fd, first, g->hs_len, 0);
		size_t flen;
		if (got == (ssize_t)g->hs_len && memcmp(first, g->hs, g->hs_len) == 0 &&
		    orbit__frame_size(first, g->hs_len, &flen) == 0 && flen == g->hs_len) {
			if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
				fprintf(
				    stderr,
				    "orbit-collector: %s: its stream's capture %s/%s is still "
				    "being "
				    "written by a collector; nothing taken (ingest it once that "
				    "stream ended)\n",
				    path, g->dir, e->d_name);
				close(fd);
				found = -1;
				break;
			}
			snprintf(name, len, "%s", e->d_name);
			found = fd;
			break;
		}
		close(fd);
	}
	free(first);
	closedir(d);
	return found;
}

/* The capture's whole frames, in *marks; where they end in *end. 1 when its
 * last frame is its collector's cut (an Ack), 0, or -1 after one line. */
static int capture_walk(struct ingest *g, int fd, const char *name, struct mark **marks,
                        size_t *count, uint64_t *end)
{
	struct raw r;
	*marks = NULL;
	*count = 0;
	*end = 0;
	if (raw_open(&r, fd) != 0)
		return -1;
	size_t cap = 0;
	const uint8_t *p;
	size_t n;
	int e, cut = 0;
	while ((e = raw_next(&r, &p, &n)) == 1) {
		if (*count == cap) {
			cap = cap ? cap * 2 : 1024;
			struct mark *m = realloc(*marks, cap * sizeof *m);
			if (m == NULL) {
				e = -ENOMEM;
				break;
			}
			*marks = m;
		}
		(*marks)[(*count)++] = (struct mark){
		    .off = r.off - n, .len = (uint32_t)n, .hash = (uint32_t)fnv(p, n)};
		*end = r.off;
		cut = 0;
		if (n <= ORBIT_ACK_FRAME_MAX && orbit__frame_decompress(&g->scratch, p, n) == 0) {
			size_t off = 0, plen;
			const uint8_t *bytes;
			while (orbit__frame_next_packet(&g->scratch, &off, &bytes, &plen)) {
				Orbit__Packet *pk = orbit__packet__unpack(NULL, plen, bytes);
				cut |= pk != NULL && pk->body_case == ORBIT__PACKET__BODY_ACK;
				if (pk != NULL)
					orbit__packet__free_unpacked(pk, NULL);
			}
		}
	}
	raw_close(&r);
	if (e != 0 && e != ORBIT_FRAME_ETRUNC) {
		fprintf(stderr, "orbit-collector: %s/%s: at offset %" PRIu64 ": %s\n", g->dir, name,
		        *end, e == -ENOMEM ? "no memory" : orbit__frame_strerror(e));
		free(*marks);
		*marks = NULL;
		return -1;
	}
	return cut;
}

/* Appends the spool's frames from number `from` (1: the first after its
 * Handshake) to the capture at fd, which ends at end; checks on the way
 * that frames `from - overlap` to `from - 1` are the capture's last ones
 * (marks). The frames written, or -1 after one line (the capture cut back
 * to end). */
static int64_t append(struct ingest *g, const char *path, int sfd, int fd, const char *name,
                      uint64_t end, uint64_t first_match, const struct mark *marks, size_t nmarks,
                      uint64_t *already)
{
	struct raw r;
	if (lseek(sfd, 0, SEEK_SET) != 0 || raw_open(&r, sfd) != 0)
		return -1;
	uint8_t *cmp = malloc(ORBIT_FRAME_MAX_COMPRESSED);
	const uint8_t *p;
	size_t n;
	int64_t wrote = 0;
	uint64_t at = end, i = 0, k = first_match;
	int bad = cmp == NULL;
	*already = 0;
	for (; !bad && raw_next(&r, &p, &n) == 1; i++) {
		if (i == 0)
			continue; /* the Handshake: the capture's first frame */
		if (k < nmarks) { /* the capture has this one: the same bytes? */
			bad = marks[k].len != n || marks[k].hash != (uint32_t)fnv(p, n) ||
			      pread(fd, cmp, n, (off_t)marks[k].off) != (ssize_t)n ||
			      memcmp(cmp, p, n) != 0;
			if (bad)
				fprintf(stderr,
				        "orbit-collector: %s: frame %" PRIu64
				        " differs from frame %zu of %s/%s, which holds the same "
				        "stream; nothing taken\n",
				        path, i + 1, (size_t)k + 1, g->dir, name);
			k++;
			++*already;
			continue;
		}
		ssize_t w = pwrite(fd, p, n, (off_t)at);
		if (w != (ssize_t)n) {
			fprintf(stderr, "orbit-collector: %s/%s: cannot write: %s; nothing taken\n",
			        g->dir, name, w < 0 ? strerror(errno) : "short write");
			bad = 1;
			break;
		}
		at += n;
		wrote++;
	}
	free(cmp);
	raw_close(&r);
	if (!bad && fsync(fd) != 0) {
		fprintf(stderr, "orbit-collector: %s/%s: cannot sync: %s; nothing taken\n", g->dir,
		        name, strerror(errno));
		bad = 1;
	}
	if (bad) {
		if (ftruncate(fd, (off_t)end) != 0)
			fprintf(stderr,
			        "orbit-collector: %s/%s: cannot cut it back to %" PRIu64
			        " bytes: %s\n",
			        g->dir, name, end, strerror(errno));
		return -1;
	}
	return wrote;
}

/* The spool's first frame after its Handshake among the capture's frames:
 * its index, or nmarks when it is not there. */
static size_t find_frame(struct ingest *g, int sfd, int fd, const struct mark *marks, size_t nmarks)
{
	struct raw r;
	size_t at = nmarks;
	if (lseek(sfd, 0, SEEK_SET) != 0 || raw_open(&r, sfd) != 0)
		return nmarks;
	const uint8_t *p;
	size_t n;
	uint8_t *cmp = malloc(ORBIT_FRAME_MAX_COMPRESSED);
	if (cmp != NULL && raw_next(&r, &p, &n) == 1 && raw_next(&r, &p, &n) == 1) {
		uint32_t h = (uint32_t)fnv(p, n);
		for (size_t k = 1; k < nmarks && at == nmarks; k++)
			if (marks[k].len == n && marks[k].hash == h &&
			    pread(fd, cmp, n, (off_t)marks[k].off) == (ssize_t)n &&
			    memcmp(cmp, p, n) == 0)
				at = k;
	}
	(void)g;
	free(cmp);
	raw_close(&r);
	return at;
}

static int ingest_one(struct ingest *g, const char *path)
{
	int sfd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (sfd < 0 || fstat(sfd, &st) != 0 || !S_ISREG(st.st_mode)) {
		fprintf(stderr, "orbit-collector: %s: %s\n", path,
		        sfd < 0 ? strerror(errno) : "not a regular file");
		if (sfd >= 0)
			close(sfd);
		return -1;
	}
	g->hs_len = 0;
	uint64_t frames = 0;
	if (spool_check(g, path, sfd, &frames) != 0) {
		close(sfd);
		return -1;
	}
	char name[256];
	int fd = find_capture(g, path, name, sizeof name);
	int rc = 0;
	if (fd < 0) {
		rc = -1;
	} else if (fd == 0) { /* a stream the directory does not have */
		struct orbit_capture_file f;
		/* Named by when the stream began, as its connection's would be. */
		int64_t when =
		    g->realtime_ns ? (int64_t)(g->realtime_ns / 1000000000u) : time(NULL);
		int err = orbit__capfile_create(g->dirfd, g->process, g->pid, when, &f);
		if (err != 0) {
			fprintf(stderr, "orbit-collector: %s: cannot create a capture in %s: %s\n",
			        path, g->dir, strerror(-err));
			rc = -1;
		} else {
			uint64_t already;
			ssize_t w = pwrite(f.fd, g->hs, g->hs_len, 0);
			int64_t n = w == (ssize_t)g->hs_len
			                ? append(g, path, sfd, f.fd, f.name, g->hs_len, 0, NULL, 0,
			                         &already)
			                : -1;
			close(f.fd);
			if (n < 0) {
				if (w != (ssize_t)g->hs_len)
					fprintf(stderr,
					        "orbit-collector: %s/%s: cannot write: %s\n",
					        g->dir, f.name,
					        w < 0 ? strerror(errno) : "short write");
				unlinkat(g->dirfd, f.name, 0);
				rc = -1;
			} else {
				printf("%s: a new capture %s/%s, %" PRIu64 " frame(s) after its "
				       "handshake\n",
				       path, g->dir, f.name, (uint64_t)n);
			}
		}
	} else {
		struct mark *marks;
		size_t nmarks;
		uint64_t end;
		int cut = capture_walk(g, fd, name, &marks, &nmarks, &end);
		if (cut < 0) {
			rc = -1;
		} else if (cut) {
			fprintf(stderr,
			        "orbit-collector: %s: its stream's capture %s/%s was cut at its "
			        "collector's size cap and takes no more; the spool file keeps the "
			        "rest\n",
			        path, g->dir, name);
			rc = -1;
		} else {
			size_t from = find_frame(g, sfd, fd, marks, nmarks);
			uint64_t already;
			int64_t n =
			    append(g, path, sfd, fd, name, end, from, marks, nmarks, &already);
			if (n < 0)
				rc = -1;
			else if (n == 0)
				printf("%s: nothing new; its %" PRIu64 " frame(s) are in %s/%s\n",
				       path, frames, g->dir, name);
			else
				printf("%s: %" PRIu64 " frame(s) appended to %s/%s (%" PRIu64
				       " were there)\n",
				       path, (uint64_t)n, g->dir, name, already);
		}
		free(marks);
		close(fd);
	}
	close(sfd);
	return rc;
}

int orbit__ingest(const char *dir, char **files, int nfiles)
{
	struct ingest g = {.dir = dir};
	if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "orbit-collector: %s: cannot create it: %s\n", dir,
		        strerror(errno));
		return 1;
	}
	g.dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (g.dirfd < 0) {
		fprintf(stderr, "orbit-collector: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	int failed = 0;
	for (int i = 0; i < nfiles; i++)
		failed |= ingest_one(&g, files[i]) != 0;
	orbit__frame_scratch_free(&g.scratch);
	close(g.dirfd);
	return failed;
}
