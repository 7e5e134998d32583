/*
 * output_file.c — a capture file (ORBIT_CAPTURE): the stream's frames,
 * written with write() as each is finished, so a frame settles at once.
 *
 * The same output is the local copy beside a collector (both ORBIT_COLLECTOR
 * and ORBIT_CAPTURE set): it takes the frames of one stream, byte for byte
 * what the collector receives, and its failures stop the copy, not tracing;
 * and a spool file (output_composite.c): mode 0600, at most max bytes.
 *
 * Opening (open_capture; docs/operations.md states the rule for users). The
 * agent runs in someone else's process, perhaps as root, and the path may
 * be in a directory others can write (/tmp), so:
 *
 *  1. A path that does not exist is created with O_CREAT | O_EXCL |
 *     O_NOFOLLOW: a file, never through a symbolic link.
 *  2. A file is never truncated and never written unless this process
 *     created it. An existing path is taken only when it is a regular file
 *     of this process's user (an earlier capture) that no live agent holds
 *     (flock): a new file is created beside it and renamed over it, so the
 *     old inode, and any other name it has, is left as it was.
 *  3. A symbolic link, anything but a regular file, or a file of another
 *     user is refused, with one line saying which; the link is not
 *     followed, the file not touched.
 *  4. A file another live agent holds (its lock) is left to it: this
 *     process writes PATH.PID instead, by the same rules.
 *
 * Replacing holds the lock of the file the path names while checking that
 * it still names it and while renaming, and a file is locked before its
 * name is published, so two agents racing for one path never replace each
 * other's live capture: the loser finds a locked file and takes PATH.PID.
 *
 * Writing. A frame is written whole or not at all: before each one the file
 * size limit (RLIMIT_FSIZE) is checked, and after a failed or short write
 * the file is cut back to its last complete frame. The agent thread blocks
 * SIGXFSZ (guest_checks.c), so passing the limit is the error EFBIG, not the
 * host's death. Any write error costs one line and turns tracing off.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "output.h"

struct file_output {
	struct orbit__output o;
	int fd;
	enum orbit__file_role role;
	uint64_t max;          /* the spool's bound; UINT64_MAX: none */
	uint64_t size;         /* bytes of complete frames in the file */
	uint64_t frames;       /* ... and how many */
	char target[PATH_MAX]; /* as configured, then the path opened */
};

/* Why open_capture refused a path, for the one line. */
enum refusal { R_NONE, R_LINK, R_NOT_REGULAR, R_OTHER_USER, R_BUSY };

static int fresh(const char *path, mode_t mode)
{
	return open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
}

/* A new locked file at path, in place of the unlocked earlier capture that
 * old (locked by us) is; -errno on failure. */
static int replace(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];
	int fd = -1;
	for (unsigned i = 0; i < 16 && fd < 0; i++) {
		int n = snprintf(tmp, sizeof tmp, "%s.%d-%u.tmp", path, (int)getpid(), i);
		if (n < 0 || (size_t)n >= sizeof tmp)
			return -ENAMETOOLONG;
		fd = fresh(tmp, mode);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	int err = flock(fd, LOCK_EX | LOCK_NB) != 0 ? -errno : 0;
	if (err == 0 && rename(tmp, path) != 0)
		err = -errno;
	if (err != 0) {
		unlink(tmp);
		close(fd);
		return err;
	}
	return fd;
}

/* Opens path for a new stream by the rules above: a locked, empty file this
 * process created, or -errno (*why says which rule refused it). */
static int open_capture(const char *path, mode_t mode, enum refusal *why, uid_t *owner)
{
	*why = R_NONE;
	for (int tries = 0; tries < 8; tries++) {
		int fd = fresh(path, mode);
		if (fd >= 0) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				return fd;
			/* Another agent locked it first, to replace it: it is
			 * theirs now. */
			close(fd);
			*why = R_BUSY;
			return -EWOULDBLOCK;
		}
		if (errno != EEXIST)
			return -errno;
		struct stat st, now;
		if (lstat(path, &st) != 0) {
			if (errno == ENOENT)
				continue; /* gone meanwhile */
			return -errno;
		}
		if (S_ISLNK(st.st_mode)) {
			*why = R_LINK;
			return -ELOOP;
		}
		if (!S_ISREG(st.st_mode)) {
			*why = R_NOT_REGULAR;
			return -EEXIST;
		}
		if (st.st_uid != geteuid()) {
			*why = R_OTHER_USER;
			*owner = st.st_uid;
			return -EEXIST;
		}
		int old = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (old < 0) {
			if (errno == ENOENT || errno == ELOOP)
				continue; /* replaced meanwhile: look again */
			return -errno;
		}
		if (fstat(old, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
			close(old);
			continue;
		}
		if (flock(old, LOCK_EX | LOCK_NB) != 0) {
			int err = errno;
			close(old);
			if (err != EWOULDBLOCK)
				return -err;
			*why = R_BUSY; /* a live agent writes it */
			return -EWOULDBLOCK;
		}
		/* Under its lock: does the path still name it? */
		if (lstat(path, &now) != 0 || now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
			close(old);
			continue;
		}
		fd = replace(path, mode);
		close(old); /* its lock goes with it */
		return fd;
	}
	return -EAGAIN;
}

static void say_refused(const struct file_output *f, const char *path, int err, enum refusal why,
                        uid_t owner)
{
	char reason[128];
	if (why == R_LINK)
		snprintf(reason, sizeof reason, "it is a symbolic link, which is not followed");
	else if (why == R_NOT_REGULAR)
		snprintf(reason, sizeof reason, "it exists and is not a regular file");
	else if (why == R_OTHER_USER)
		snprintf(reason, sizeof reason, "it belongs to another user (uid %u)",
		         (unsigned)owner);
	else
		snprintf(reason, sizeof reason, "%s", strerror(-err));
	static const char *const what[] = {"the capture", "the capture", "the spool file"};
	static const char *const then[] = {"tracing is off", "no local copy", "no spool"};
	fprintf(stderr, "orbit: cannot create %s %s: %s; %s\n", what[f->role], path, reason,
	        then[f->role]);
}

/* "%p" in the name stands for the pid. A file that another live agent is
 * writing (a child that inherited the variable, say) is left to it: this
 * process writes PATH.PID instead, and says so. */
static int file_start(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	char path[PATH_MAX], alt[PATH_MAX];
	enum refusal why = R_NONE;
	uid_t owner = 0;
	int n;
	int fd = orbit__config_capture_path(f->target, path, sizeof path);
	if (fd == 0 && f->role == ORBIT__FILE_SPOOL) {
		/* A name of its own (output_composite.c): an earlier spool
		 * there is never replaced. */
		fd = fresh(path, 0600);
		if (fd < 0)
			fd = -errno;
		else if (flock(fd, LOCK_EX | LOCK_NB) != 0)
			fd = -errno;
	} else if (fd == 0) {
		fd = open_capture(path, 0644, &why, &owner);
	}
	if (fd < 0 && why == R_BUSY) {
		n = snprintf(alt, sizeof alt, "%s.%d", path, (int)getpid());
		if (n < 0 || (size_t)n >= sizeof alt) {
			fd = -ENAMETOOLONG;
		} else {
			fprintf(stderr,
			        "orbit: the capture %s is being written by another "
			        "process; writing %s\n",
			        path, alt);
			memcpy(path, alt, (size_t)n + 1);
			fd = open_capture(path, 0644, &why, &owner);
		}
	}
	if (fd < 0) {
		say_refused(f, path, fd, why, owner);
		return fd;
	}
	f->fd = fd;
	f->size = 0;
	f->frames = 0;
	memcpy(f->target, path, strlen(path) + 1);
	o->streaming = 1;
	return 0; /* ready now */
}

/* The file size limit now (the host may change it), or UINT64_MAX. */
static uint64_t size_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)rl.rlim_cur;
}

/* One whole frame at the end of the file, or nothing: -errno, and the file
 * cut back to its complete frames. */
static int write_frame(struct file_output *f, const uint8_t *p, size_t len)
{
	if (len > size_limit() || f->size > size_limit() - len || len > f->max ||
	    f->size > f->max - len)
		return -EFBIG; /* not even a part of it */
	size_t left = len;
	while (left > 0) {
		ssize_t n = write(f->fd, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int err = n < 0 ? -errno : -EIO;
			if (left != len && ftruncate(f->fd, (off_t)f->size) == 0)
				lseek(f->fd, (off_t)f->size, SEEK_SET);
			return err;
		}
		p += n;
		left -= (size_t)n;
	}
	f->size += len;
	f->frames++;
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

static int file_send(struct orbit__output *o, struct orbit__frame *fr)
{
	struct file_output *f = (struct file_output *)o;
	if (f->fd < 0)
		return -EBADF;
	int err = write_frame(f, fr->bytes, fr->len);
	if (err == 0) {
		o->ev->settled(o->ev->ctx, o, fr->seq, 1);
		return 0;
	}
	char extra[96] = "";
	if (err == -EFBIG && f->size + fr->len > f->max)
		snprintf(extra, sizeof extra,
		         " (the spool's bound, ORBIT_SPOOL_MAX, is %llu bytes)",
		         (unsigned long long)f->max);
	else if (err == -EFBIG && size_limit() != UINT64_MAX)
		snprintf(extra, sizeof extra, " (the file size limit, RLIMIT_FSIZE, is %llu bytes)",
		         (unsigned long long)size_limit());
	static const char *const what[] = {"the capture", "the local copy", "the spool file"};
	fprintf(stderr, "orbit: cannot write %s %s: %s%s; %s\n", what[f->role], f->target,
	        strerror(-err), extra,
	        f->role == ORBIT__FILE_CAPTURE ? "tracing is off" : "it stops here");
	file_stop(f, 0);
	struct orbit__fate fate = {
	    .frames_sent = f->frames + 1, .frames_acked = f->frames, .certain = 1};
	o->ev->broken(o->ev->ctx, o, 1, &fate);
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

static void file_give_up(struct orbit__output *o)
{
	(void)o; /* every frame settled when it was written */
}

static const char *file_trouble(const struct orbit__output *o)
{
	(void)o;
	return "";
}

/* A file holds one stream: it ends with it. The local copy and the spool
 * are synced, as finished captures beside the collector's. */
static void file_end(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	file_stop(f, f->role != ORBIT__FILE_CAPTURE);
}

/* Bytes written so far (the spool's account of its bound). */
uint64_t orbit__output_file_size(const struct orbit__output *o)
{
	return ((const struct file_output *)o)->size;
}

static void file_close(struct orbit__output *o)
{
	struct file_output *f = (struct file_output *)o;
	file_stop(f, f->role != ORBIT__FILE_CAPTURE);
	free(f);
}

static void file_forget(struct orbit__output *o, int copies)
{
	/* The parent's file: close our copy of the descriptor, if we have
	 * one; the lock is the parent's open file and stays. */
	struct file_output *f = (struct file_output *)o;
	if (copies && f->fd >= 0)
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
    .give_up = file_give_up,
    .trouble = file_trouble,
    .close = file_close,
    .forget = file_forget,
};

struct orbit__output *orbit__output_file(uv_loop_t *loop, const char *path,
                                         enum orbit__file_role role, uint64_t max)
{
	struct file_output *f = calloc(1, sizeof *f);
	if (f == NULL)
		return NULL;
	f->o = (struct orbit__output){.ops = &file_ops, .loop = loop};
	f->fd = -1;
	f->role = role;
	f->max = max;
	snprintf(f->target, sizeof f->target, "%s", path);
	return &f->o;
}
