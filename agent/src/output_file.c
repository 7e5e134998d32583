/*
 * output_file.c — a capture file (ORBIT_CAPTURE): the stream's frames,
 * written with write() as each is finished, so a frame settles at once.
 *
 * The same output is the local copy beside a collector (both ORBIT_COLLECTOR
 * and ORBIT_CAPTURE set): it takes the frames of one stream, byte for byte
 * what the collector receives, and its failures stop the copy, not tracing.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "output.h"

struct file_output {
	struct orbit__output o;
	int fd;
	int copy;
	char target[PATH_MAX]; /* as configured, then the path opened */
};

static int open_locked(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	/* The lock before the truncation: a file another live agent is
	 * writing is never cut. */
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	if (ftruncate(fd, 0) != 0) {
		int err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* "%p" in the name stands for the pid. A file that another live agent is
 * writing (a child that inherited the variable, say) is never truncated:
 * this process writes PATH.PID instead, and says so. */
static int file_start(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	char path[PATH_MAX], alt[PATH_MAX];
	char *p = strstr(f->target, "%p");
	int n = p != NULL ? snprintf(path, sizeof path, "%.*s%d%s", (int)(p - f->target), f->target,
	                             (int)getpid(), p + 2)
	                  : snprintf(path, sizeof path, "%s", f->target);
	int fd = n < 0 || (size_t)n >= sizeof path ? -ENAMETOOLONG : open_locked(path);
	if (fd == -EWOULDBLOCK) {
		n = snprintf(alt, sizeof alt, "%s.%d", path, (int)getpid());
		if (n < 0 || (size_t)n >= sizeof alt) {
			fd = -ENAMETOOLONG;
		} else {
			fprintf(stderr,
			        "orbit: the capture %s is being written by another "
			        "process; writing %s\n",
			        path, alt);
			memcpy(path, alt, (size_t)n + 1);
			fd = open_locked(path);
		}
	}
	if (fd < 0) {
		fprintf(stderr, "orbit: cannot create the capture %s: %s; %s\n", path,
		        strerror(-fd), f->copy ? "no local copy" : "tracing is off");
		return fd;
	}
	f->fd = fd;
	memcpy(f->target, path, strlen(path) + 1);
	o->streaming = 1;
	return 0; /* ready now */
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static void file_stop(struct file_output *f, int sync)
{
	if (f->fd < 0)
		return;
	if (sync)
		fsync(f->fd);
	close(f->fd);
	f->fd = -1;
	f->o.streaming = 0;
}

static int file_send(struct orbit__output *o, const struct orbit__frame *fr)
{
	struct file_output *f = (struct file_output *)o;
	if (f->fd < 0)
		return -EBADF;
	int err = write_all(f->fd, fr->bytes, fr->len);
	if (err == 0) {
		o->ev->settled(o->ev->ctx, o, fr->seq, 1);
		return 0;
	}
	if (f->copy)
		fprintf(stderr, "orbit: cannot write the local copy %s: %s; it stops here\n",
		        f->target, strerror(-err));
	else
		fprintf(stderr, "orbit: cannot write the capture %s: %s; tracing is off\n",
		        f->target, strerror(-err));
	file_stop(f, 0);
	o->ev->broken(o->ev->ctx, o, 1);
	return err;
}

static size_t file_pending(const struct orbit__output *o)
{
	(void)o;
	return 0;
}

static int file_coming(const struct orbit__output *o)
{
	(void)o;
	return 0;
}

static void file_hurry(struct orbit__output *o)
{
	(void)o;
}

/* A file holds one stream: it ends with it. The local copy is synced, as a
 * finished capture beside the collector's. */
static void file_end(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	file_stop(f, f->copy);
}

static void file_close(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	file_stop(f, f->copy);
	free(f);
}

static void file_forget(struct orbit__output *o)
{
	/* The parent's file: close our copy of the descriptor; the lock is
	 * the parent's open file and stays. */
	struct file_output *f = (struct file_output *)o;
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static const struct orbit__output_ops file_ops = {
    .start = file_start,
    .send = file_send,
    .pending = file_pending,
    .coming = file_coming,
    .hurry = file_hurry,
    .end = file_end,
    .close = file_close,
    .forget = file_forget,
};

struct orbit__output *orbit__output_file(uv_loop_t *loop, const struct orbit__config *cfg,
                                         const struct orbit__output_events *ev, int copy)
{
	struct file_output *f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	f->o = (struct orbit__output){.ops = &file_ops, .ev = ev, .loop = loop};
	f->fd = -1;
	f->copy = copy;
	snprintf(f->target, sizeof f->target, "%s", cfg->capture);
	return &f->o;
}
