/*
 * caps.c — the size caps: --max-capture-size per capture file and
 * --max-dir-size for every capture in the directory, so that the disk never
 * fills by surprise.
 *
 *  1. A frame is written only if the file stays within --max-capture-size
 *     and the directory within --max-dir-size, counting the room kept for
 *     the cut frame (ORBIT_ACK_FRAME_MAX per open stream). So neither cap is
 *     ever passed by a byte.
 *  2. The first frame that does not fit ends the stream: it and everything
 *     after it are dropped, and the file ends with the collector's own
 *     frame, an Ack whose end says which cap (docs/format.md section 7).
 *     The file stays a valid capture of complete frames.
 *  3. A new stream is refused, with the refusal line, while the directory
 *     has no room for the largest handshake frame and a cut frame
 *     (ORBIT_HANDSHAKE_FRAME_MAX + ORBIT_ACK_FRAME_MAX).
 *  4. The directory's use is the sum of the sizes of its regular files named
 *     *.orbit.zst, measured at start and then counted as frames are written
 *     (writes in flight count in full). When a cap would refuse or cut, the
 *     directory is measured again, at most every DIR_RESCAN_MS, so that
 *     captures deleted meanwhile give their room back.
 *  5. The default --max-dir-size, "auto", is the captures already there plus
 *     half the space free on the file system when the collector starts.
 */
#include "collector.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define DIR_RESCAN_MS 2000u
#define CAPTURE_SUFFIX ".orbit.zst"

static void size_text(uint64_t v, char *out, size_t n)
{
	static const char *const unit[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
	double d = (double)v;
	int u = 0;

	while (d >= 1024 && u < 4) {
		d /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(out, n, "%" PRIu64 " bytes", v);
	else
		snprintf(out, n, "%.1f %s", d, unit[u]);
}

static int dir_measure(struct orbit_collector *c, uint64_t *out)
{
	int fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	const size_t sl = sizeof CAPTURE_SUFFIX - 1;
	struct dirent *e;
	uint64_t sum = 0;

	if (d == NULL) {
		int err = -errno;
		if (fd >= 0)
			close(fd);
		return err;
	}
	while ((e = readdir(d)) != NULL) {
		size_t len = strlen(e->d_name);
		struct stat st;
		if (len <= sl || strcmp(e->d_name + len - sl, CAPTURE_SUFFIX) != 0)
			continue;
		if (fstatat(c->dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			sum += (uint64_t)st.st_size;
	}
	closedir(d);
	*out = sum;
	return 0;
}

/* Measures again (at most every DIR_RESCAN_MS): the files, plus what is in
 * flight or reserved. */
static void dir_refresh(struct orbit_collector *c)
{
	uint64_t now = uv_now(&c->loop), used;

	if (now - c->dir_scan_ms < DIR_RESCAN_MS || dir_measure(c, &used) != 0)
		return;
	c->dir_scan_ms = now;
	for (const struct orbit_conn *k = c->conns; k != NULL; k = k->next)
		used += k->dir_reserved + (k->writing ? k->wlen - k->wdone : 0);
	c->dir_used = used;
}

int orbit__caps_setup(struct orbit_collector *c)
{
	struct orbit_collector_options *o = &c->opt;
	struct statvfs v;
	int err = dir_measure(c, &c->dir_used);

	if (err) {
		fprintf(stderr, "orbit-collector: %s: cannot read the directory: %s\n", c->dir,
		        strerror(-err));
		return -1;
	}
	c->dir_scan_ms = uv_now(&c->loop);
	if (o->dir_size_auto) {
		if (fstatvfs(c->dirfd, &v) != 0) {
			fprintf(stderr,
			        "orbit-collector: %s: cannot see the free space (%s); give "
			        "--max-dir-size\n",
			        c->dir, strerror(errno));
			return -1;
		}
		o->max_dir_size = c->dir_used + (uint64_t)v.f_bavail * v.f_frsize / 2;
	}
	return 0;
}

void orbit__caps_text(const struct orbit_collector *c, char *out, size_t n)
{
	const struct orbit_collector_options *o = &c->opt;
	char each[32] = "no limit", all[32] = "no limit", now[32];

	if (o->max_capture_size)
		size_text(o->max_capture_size, each, sizeof each);
	if (o->max_dir_size)
		size_text(o->max_dir_size, all, sizeof all);
	size_text(c->dir_used, now, sizeof now);
	snprintf(out, n, "at most %s each, %s in all%s; %s there now", each, all,
	         o->dir_size_auto ? " (half the free space)" : "", now);
}

static int dir_fits(struct orbit_collector *c, uint64_t more)
{
	uint64_t cap = c->opt.max_dir_size;

	if (cap == 0 || c->dir_used + more <= cap)
		return 1;
	dir_refresh(c);
	return c->dir_used + more <= cap;
}

int orbit__caps_admit(struct orbit_conn *k, size_t flen, char *why, size_t n)
{
	struct orbit_collector *c = k->c;
	char cap[32];

	(void)flen; /* any handshake: the largest one must fit */
	if (!dir_fits(c, ORBIT_HANDSHAKE_FRAME_MAX + ORBIT_ACK_FRAME_MAX)) {
		size_text(c->opt.max_dir_size, cap, sizeof cap);
		snprintf(why, n, "the capture directory is full (--max-dir-size %s)", cap);
		return -EDQUOT;
	}
	k->dir_reserved = ORBIT_ACK_FRAME_MAX;
	c->dir_used += k->dir_reserved;
	return 0;
}

uint32_t orbit__caps_check(struct orbit_conn *k, uint64_t pending, size_t flen, char *why, size_t n)
{
	struct orbit_collector *c = k->c;
	uint64_t at = k->stream_off + pending, cap = c->opt.max_capture_size;
	char text[32];

	if (cap != 0 && k->file.size + pending + flen + ORBIT_ACK_FRAME_MAX > cap) {
		size_text(cap, text, sizeof text);
		snprintf(why, n,
		         "capture size cap: the frame at stream byte %" PRIu64
		         " would take the file past %s (--max-capture-size); the stream is cut "
		         "there",
		         at, text);
		return ORBIT_ACK_CAPTURE_CAP;
	}
	if (!dir_fits(c, pending + flen)) {
		size_text(c->opt.max_dir_size, text, sizeof text);
		snprintf(why, n,
		         "directory size cap: the frame at stream byte %" PRIu64
		         " would take %s past %s (--max-dir-size); the stream is cut there",
		         at, c->dir, text);
		return ORBIT_ACK_DIR_CAP;
	}
	return 0;
}

void orbit__caps_count(struct orbit_collector *c, int64_t bytes)
{
	if (bytes < 0 && (uint64_t)-bytes > c->dir_used) /* after a measure */
		c->dir_used = 0;
	else
		c->dir_used += (uint64_t)bytes; /* a negative count wraps back */
}

void orbit__caps_release(struct orbit_conn *k)
{
	orbit__caps_count(k->c, -(int64_t)k->dir_reserved);
	k->dir_reserved = 0;
}

size_t orbit__caps_marker(struct orbit_conn *k, uint8_t *out)
{
	/* In a file, every frame before the Ack is there: synced = frames. */
	size_t n =
	    orbit__ack_encode(k->c, k->file.frames, k->file.size, k->file.frames, k->cut, out);

	orbit__caps_release(k); /* the frame's bytes count when it is written */
	return n;
}
