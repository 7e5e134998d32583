/*
 * exec_chain.c — the image of a process after exec (exec_chain.h).
 *
 * exec replaces the image and ends every thread but the caller's, the
 * agent's among them, without a word: the earlier image's capture stops at
 * the last frame its agent wrote, cut, and its segment stays in /dev/shm
 * with what its rings still held. This image is the same process (the same
 * pid and start time), so its first orbit_init finds what the earlier one
 * left:
 *
 *  1. The segment: /dev/shm/orbit-PID-START-*, this process's pid and
 *     start in the name and in the header, the lock free (exec closed the
 *     earlier image's descriptor: O_CLOEXEC). The segment this image is
 *     about to make is not there yet.
 *  2. The capture: ORBIT_CAPTURE as this image has it ("%p" the pid) is
 *     generation 0,
 *     PATH.exec1 the first image after an exec, PATH.execN the N-th. The
 *     earlier image's is the newest of them whose first packet is the
 *     Handshake of a stream of this pid begun after that segment was made,
 *     and whose lock is free.
 *  3. That capture is completed from the segment by the dump's reader
 *     (dump/dump.h, orbit__dump_complete: a torn last frame cut off, then
 *     what the rings and log pages held past its frames, the loss, a Dump
 *     packet with completed = 1 and EndOfStream), so claimed == delivered +
 *     lost holds for it; the segment is removed after. The tracefs instance
 *     the earlier image recorded in goes with the next start's leftovers
 *     (tracefs_leftovers.h: an instance of the caller's own pid).
 *  4. This image writes generation N + 1's name, never the earlier one's,
 *     and its Handshake names the earlier image (ExecOf): generation,
 *     its stream, its capture, its command.
 *
 * Without a capture of the earlier image here (it streamed to a collector
 * only, or ORBIT_CAPTURE changed), what its rings held has nowhere to go:
 * one line says so, and the segment is removed. This runs before main, on
 * the thread that calls orbit_init, and costs one read of the earlier
 * capture.
 */
#include "exec_chain.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dump.h"
#include "frame.h"
#include "segment.h"

#define MAX_GENERATION 1000u

struct found {
	uint32_t pid;
	uint64_t start;
	char file[96];
	uint64_t mtime_s;
	int n;
};

/* The newest segment of this pid and start (an image that exec'd into an
 * untraced one, then that into a traced one, leaves one that nobody
 * completed: it stays for orbit-dump --complete). */
static int pick(void *ctx, const struct orbit__seg_entry *e)
{
	struct found *f = ctx;
	if (e->pid != f->pid || e->start != f->start || e->uid != (uint32_t)geteuid())
		return 0;
	if (f->n++ == 0 || e->mtime_s >= f->mtime_s) {
		snprintf(f->file, sizeof f->file, "%s", e->file);
		f->mtime_s = e->mtime_s;
	}
	return 0;
}

/* Generation g's capture path: base for 0, base.execG after. */
static int name_of(const char *base, uint32_t g, char *out, size_t len)
{
	int n = g == 0 ? snprintf(out, len, "%s", base) : snprintf(out, len, "%s.exec%u", base, g);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Whether the capture at path (a regular file of ours, unlocked) begins
 * with the Handshake of a stream of pid begun after created_ns (realtime);
 * then its own exec generation and monotonic_ns. */
static int is_stream_of(const char *path, uint32_t pid, uint64_t created_ns, uint32_t *gen,
                        uint64_t *mono)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	struct stat st;
	int ok = 0, err = 0;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
	    flock(fd, LOCK_SH | LOCK_NB) == 0) {
		struct orbit_capture_reader *r = orbit__capture_from_fd(fd, &err);
		Orbit__Packet *p = NULL;
		struct orbit_capture_problem pr;
		if (r != NULL && orbit__capture_next(r, &p, &pr) == 1) {
			const Orbit__Handshake *h = p->handshake;
			if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE && h->pid == pid &&
			    h->realtime_ns + 1000000000ull >= created_ns) {
				ok = 1;
				*gen = h->exec_of != NULL ? h->exec_of->generation : 0;
				*mono = h->monotonic_ns;
			}
			orbit__packet__free_unpacked(p, NULL);
		}
		orbit__capture_close(r);
	}
	close(fd);
	return ok;
}

/* The earlier image's capture among the generations of base: its path and
 * generation, or -1. */
static int find_capture(const char *base, uint32_t pid, uint64_t created_ns, char *path,
                        uint32_t *gen, uint64_t *mono)
{
	uint32_t top = 0;
	char p[PATH_MAX];
	struct stat st;
	while (top + 1 < MAX_GENERATION && name_of(base, top + 1, p, sizeof p) == 0 &&
	       lstat(p, &st) == 0)
		top++;
	for (uint32_t g = top + 1; g-- > 0;) {
		uint32_t its = 0;
		if (name_of(base, g, p, sizeof p) == 0 &&
		    is_stream_of(p, pid, created_ns, &its, mono)) {
			snprintf(path, PATH_MAX, "%s", p);
			*gen = its > g ? its : g;
			return 0;
		}
	}
	return -1;
}

static void complete(const struct orbit__config *c, struct orbit__exec_link *l,
                     const char *seg_path, int sfd, const struct orbit__seg_header *h)
{
	char path[PATH_MAX];
	uint32_t gen = 0;
	uint64_t mono = 0;
	for (size_t i = 0; i + 1 < sizeof l->comm && h->comm[i] >= ' ' && h->comm[i] < 127; i++)
		l->comm[i] = h->comm[i];
	l->generation = 1;
	char base[PATH_MAX];
	if (!c->capture_set || !c->capture_ok ||
	    orbit__config_capture_path(c->capture, base, sizeof base) != 0 ||
	    find_capture(base, h->pid, h->created_ns, path, &gen, &mono) != 0) {
		fprintf(stderr,
		        "orbit: the image before this one's exec (%s) left no capture here: what "
		        "its rings still held is lost; its segment %s is removed\n",
		        l->comm[0] ? l->comm : "?", seg_path);
		return;
	}
	l->generation = gen + 1;
	l->monotonic_ns = mono;
	snprintf(l->capture, sizeof l->capture, "%s", path);
	l->renamed = 1;
	if (name_of(base, gen + 1, l->next, sizeof l->next) != 0) {
		fprintf(stderr,
		        "orbit: the capture after exec would be named %s.exec%u, longer than a "
		        "path can be; tracing is off\n",
		        base, gen + 1);
		l->name_too_long = 1;
	}
	int cfd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0 || flock(cfd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr,
		        "orbit: cannot complete %s, the capture of the image before exec: %s\n",
		        path, strerror(errno));
		if (cfd >= 0)
			close(cfd);
		return;
	}
	static struct orbit_dump d; /* large; orbit_init is serialized (lifecycle.c) */
	memset(&d, 0, sizeof d);
	d.name = seg_path;
	d.who = "orbit";
	d.fd = sfd;
	d.err = stderr;
	d.life = ORBIT__SEG_UNKNOWN;
	orbit__dump_complete(&d, cfd, path); /* closes cfd; says what went wrong */
}

void orbit__exec_apply(const struct orbit__exec_link *l, struct orbit__config *c)
{
	c->exec_generation = l->generation;
	c->exec_monotonic_ns = l->monotonic_ns;
	memcpy(c->exec_capture, l->capture, sizeof c->exec_capture);
	memcpy(c->exec_comm, l->comm, sizeof c->exec_comm);
	if (l->renamed && c->capture_set && c->capture_ok) {
		if (l->name_too_long)
			c->capture_ok = 0; /* the outputs refuse it (output_composite.c) */
		else
			memcpy(c->capture, l->next, sizeof c->capture);
	}
}

void orbit__exec_take_over(const struct orbit__config *c, struct orbit__exec_link *l)
{
	memset(l, 0, sizeof *l);
	struct found f = {.pid = (uint32_t)getpid(), .start = orbit__process_start_time(getpid())};
	if (f.start == 0 || orbit__segment_list(pick, &f) != 0 || f.n == 0)
		return;
	char seg_path[160];
	snprintf(seg_path, sizeof seg_path, "%s/%s", ORBIT__SEG_DIR, f.file);
	int sfd = open(seg_path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (sfd < 0)
		return;
	struct orbit__seg_header h;
	struct stat st;
	/* Its lock, held while it is read: no other image or orbit-dump
	 * completes it at the same time. */
	if (fstat(sfd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    pread(sfd, &h, sizeof h, 0) != (ssize_t)sizeof h || h.pid != f.pid ||
	    h.start_time != f.start || flock(sfd, LOCK_SH | LOCK_NB) != 0) {
		close(sfd);
		return;
	}
	complete(c, l, seg_path, sfd, &h);
	/* Its reader is done with it (nothing maps it): the name goes. */
	unlink(seg_path);
	close(sfd);
}
