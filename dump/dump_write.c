/* dump_write.c — orbit-dump's capture file: the stream writer's frames
 * (format/stream_writer.h), the flight ring's as they are and its own
 * (docs/format.md 3.3: one stream, a plain zstd stream). Root may run it
 * in a directory others can write, so a file is created new (O_EXCL,
 * O_NOFOLLOW: never someone else's file, a FIFO or a link's target); a path
 * given with -o that is a regular file of the caller's is replaced by a
 * new file renamed over it, as the agent replaces a capture; the default
 * name never replaces anything. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump.h"

static int write_all(struct orbit_dump_out *o, const uint8_t *p, size_t len)
{
	if (o->failed)
		return -EIO;
	while (len > 0) {
		ssize_t n = write(o->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			fprintf(stderr, "%s: cannot write %s: %s\n", o->who, o->path,
			        strerror(err));
			o->failed = 1;
			return -err;
		}
		p += n;
		len -= (size_t)n;
		o->bytes += (uint64_t)n;
	}
	return 0;
}

static int on_frame(void *ctx, const struct orbit__sw_frame *f)
{
	return write_all(ctx, f->bytes, f->len);
}

/* A frame the writer could not compress (memory): its records are lost. */
static void on_lost(void *ctx, const uint64_t *records, uint32_t rings)
{
	(void)records;
	(void)rings;
	struct orbit_dump_out *o = ctx;
	if (!o->failed)
		fprintf(stderr, "%s: out of memory while writing %s\n", o->who, o->path);
	o->failed = 1;
}

/* A new file at path, or (replace) over a regular file of the caller's
 * there: a new file beside it, renamed over it. The descriptor, or -1
 * after one line. */
static int create_new(const char *path, int replace, FILE *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd >= 0 || errno != EEXIST) {
		if (fd < 0)
			fprintf(err, "orbit-dump: cannot create %s: %s\n", path, strerror(errno));
		return fd;
	}
	struct stat st;
	if (lstat(path, &st) != 0) {
		fprintf(err, "orbit-dump: cannot create %s: %s\n", path, strerror(errno));
		return -1;
	}
	const char *why = !replace                 ? "it exists (name one with -o)"
	                  : !S_ISREG(st.st_mode)   ? "it is not a regular file"
	                  : st.st_uid != geteuid() ? "it belongs to another user"
	                                           : NULL;
	if (why != NULL) {
		fprintf(err, "orbit-dump: %s: %s; not written\n", path, why);
		return -1;
	}
	char tmp[4200];
	for (int tries = 0; tries < 16; tries++) {
		snprintf(tmp, sizeof tmp, "%s.orbit-dump-%d-%d", path, (int)getpid(), tries);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0 || rename(tmp, path) != 0) {
		fprintf(err, "orbit-dump: cannot replace %s: %s\n", path, strerror(errno));
		if (fd >= 0) {
			unlink(tmp);
			close(fd);
		}
		return -1;
	}
	return fd;
}

static int new_writer(struct orbit_dump_out *o, FILE *err)
{
	const struct orbit__sw_sink sink = {.ctx = o, .frame = on_frame, .lost = on_lost};
	o->sw = orbit__sw_new(-1, ORBIT_FRAME_TARGET, &sink);
	if (o->sw == NULL) {
		fprintf(err, "%s: out of memory\n", o->who);
		return -1;
	}
	return 0;
}

int orbit__dump_out_open(struct orbit_dump_out *o, const char *path, int replace, FILE *err)
{
	memset(o, 0, sizeof o[0]);
	o->path = path;
	o->who = "orbit-dump";
	if (strcmp(path, "-") == 0) {
		o->fd = 1;
	} else {
		o->fd = create_new(path, replace, err);
		if (o->fd < 0)
			return -1;
	}
	return new_writer(o, err);
}

int orbit__dump_out_append(struct orbit_dump_out *o, int fd, const char *path, const char *who,
                           FILE *err)
{
	memset(o, 0, sizeof o[0]);
	o->path = path;
	o->who = who;
	o->fd = fd;
	return new_writer(o, err);
}

int orbit__dump_open_capture(const char *path, FILE *err)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	const char *why = NULL;
	struct stat st;
	if (fd < 0) {
		fprintf(err, "orbit-dump: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		why = "it is not a regular file";
	else if (st.st_uid != geteuid())
		why = "it belongs to another user";
	else if (flock(fd, LOCK_EX | LOCK_NB) != 0)
		why = "a live agent is writing it";
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
		why = strerror(errno);
	if (why != NULL) {
		fprintf(err, "orbit-dump: %s: %s; not completed\n", path, why);
		close(fd);
		return -1;
	}
	return fd;
}

int orbit__dump_out_close(struct orbit_dump_out *o)
{
	int err = o->sw != NULL ? orbit__sw_cut(o->sw) : 0;
	orbit__sw_free(o->sw);
	o->sw = NULL;
	if (o->fd > 2 && close(o->fd) != 0 && !o->failed) {
		fprintf(stderr, "%s: cannot write %s: %s\n", o->who, o->path, strerror(errno));
		o->failed = 1;
	}
	return err || o->failed ? -1 : 0;
}
