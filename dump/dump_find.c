/*
 * dump_find.c — orbit-dump's segments in /dev/shm: which one a pid names,
 * the list, and removing a dead one (docs/operations.md, "The
 * shared-memory segment").
 *
 * The lookup by pid trusts no name: a file named for a live process counts
 * only if the process's user owns it (another user may create any name in
 * /dev/shm), and of a dead process only the caller's own files (or, for
 * root, anyone's); either way only when its header names the same pid and
 * start time as its name (a file renamed to another process's name is not
 * that process's segment). Alive or dead is the owner's
 * lock first, /proc second (orbit__segment_life); a segment is removed only
 * when both say dead. Nothing that is not a regular file is ever opened
 * for reading without O_NONBLOCK (a FIFO would block), and names from
 * segments are printed with anything but printable ASCII replaced.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dump_find.h"
#include "tracefs_leftovers.h"

static int ours(uint32_t uid)
{
	return geteuid() == 0 || uid == (uint32_t)geteuid();
}

/* Opens a regular file for reading: without blocking on a FIFO or a
 * device, which it refuses (-1, errno ENODEV... as open would say, or
 * EINVAL for what is not a regular file). */
static int open_regular(const char *path)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

static int open_in_dir(const char *file)
{
	char path[160];
	snprintf(path, sizeof path, "%s/%s", ORBIT__SEG_DIR, file);
	return open_regular(path);
}

/* s with everything but printable ASCII as '?' (a name from a segment may
 * hold terminal escapes). */
static const char *printable(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] != '\0' && i + 1 < len; i++)
		buf[i] = s[i] >= ' ' && s[i] < 127 ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* What the header says, when it can be read (else zeros). */
static void header_of(int fd, struct orbit__seg_header *h)
{
	memset(h, 0, sizeof *h);
	if (pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h ||
	    atomic_load_explicit(&h->magic, memory_order_relaxed) != ORBIT__SEG_MAGIC ||
	    h->version != ORBIT__SEG_VERSION)
		memset(h, 0, sizeof *h);
	h->comm[sizeof h->comm - 1] = '\0';
}

/* ---- by pid ---- */

struct by_pid {
	uint32_t pid;
	uint64_t start_now; /* of the live process with that pid, 0: none */
	uint32_t uid_now;
	int n;
	int best_live;
	uint64_t best_mtime;
	char best[96];
	int foreign; /* files named for it that its user does not own */
};

/* Whether the file's header says what its name does: the segment of that
 * pid and start time. */
static int header_agrees(const struct orbit__seg_entry *e)
{
	int fd = open_in_dir(e->file);
	if (fd < 0)
		return 0;
	struct orbit__seg_header h;
	header_of(fd, &h);
	close(fd);
	return h.pid == e->pid && h.start_time == e->start;
}

static int pick(void *ctx, const struct orbit__seg_entry *e)
{
	struct by_pid *b = ctx;
	if (e->pid != b->pid)
		return 0;
	int live = b->start_now != 0 && e->start == b->start_now;
	if (live && e->uid != b->uid_now) {
		b->foreign++; /* a squatter's file: not the process's */
		return 0;
	}
	if (!live && !ours(e->uid))
		return 0;
	if (!header_agrees(e)) {
		b->foreign++; /* renamed, or a header another file's */
		return 0;
	}
	b->n++;
	if (b->n == 1 || live > b->best_live ||
	    (live == b->best_live && e->mtime_s >= b->best_mtime)) {
		snprintf(b->best, sizeof b->best, "%s", e->file);
		b->best_live = live;
		b->best_mtime = e->mtime_s;
	}
	return 0;
}

int orbit__dump_resolve(const char *target, char *path, size_t len, FILE *err)
{
	const char *p = target;
	while (*p >= '0' && *p <= '9')
		p++;
	if (*target != '\0' && *p == '\0') {
		struct by_pid b;
		memset(&b, 0, sizeof b);
		unsigned long long pid = strtoull(target, NULL, 10);
		if (pid == 0 || pid > UINT32_MAX) {
			fprintf(err, "orbit-dump: %s is not a process id\n", target);
			return -1;
		}
		b.pid = (uint32_t)pid;
		char proc[64];
		struct stat st;
		snprintf(proc, sizeof proc, "/proc/%llu", pid);
		if (stat(proc, &st) == 0) {
			b.start_now = orbit__process_start_time((pid_t)pid);
			b.uid_now = (uint32_t)st.st_uid;
		}
		int e = orbit__segment_list(pick, &b);
		if (e != 0) {
			fprintf(err, "orbit-dump: cannot list %s: %s\n", ORBIT__SEG_DIR,
			        strerror(-e));
			return -1;
		}
		if (b.n == 0) {
			fprintf(err, "orbit-dump: no segment of process %s in %s%s\n", target,
			        ORBIT__SEG_DIR,
			        b.foreign
			            ? " (a file with its name belongs to another user, or its "
			              "header names another process: not its segment)"
			            : "");
			return -1;
		}
		if (b.n > 1)
			fprintf(
			    err,
			    "orbit-dump: %d segments of pid %s; dumping %s, the %s (see --list)\n",
			    b.n, target, b.best, b.best_live ? "live process's" : "newest");
		snprintf(path, len, "%s/%s", ORBIT__SEG_DIR, b.best);
		return 0;
	}
	if (strchr(target, '/') != NULL)
		snprintf(path, len, "%s", target);
	else
		snprintf(path, len, "%s/%s", ORBIT__SEG_DIR, target);
	return 0;
}

int orbit__dump_open(const char *path, FILE *err)
{
	int fd = open_regular(path);
	if (fd < 0) {
		fprintf(err, "orbit-dump: %s: %s\n", path,
		        errno == EINVAL ? "not a regular file" : strerror(errno));
		return -1;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		fprintf(err, "orbit-dump: %s: %s\n", path, strerror(errno));
		close(fd);
		return -1;
	}
	if (!ours((uint32_t)st.st_uid)) {
		fprintf(err, "orbit-dump: %s belongs to uid %u: only its owner or root reads it\n",
		        path, (unsigned)st.st_uid);
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- --list ---- */

struct row {
	struct orbit__seg_entry e;
	struct orbit__seg_header h;
	int life;
	int readable;
};

struct rows {
	struct row *v;
	size_t n, cap;
};

static int add_row(void *ctx, const struct orbit__seg_entry *e)
{
	struct rows *r = ctx;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 32;
		struct row *v = realloc(r->v, cap * sizeof *v);
		if (v == NULL)
			return 1;
		r->v = v;
		r->cap = cap;
	}
	struct row *w = &r->v[r->n++];
	memset(w, 0, sizeof *w);
	w->e = *e;
	int fd = ours(e->uid) ? open_in_dir(e->file) : -1;
	w->readable = fd >= 0;
	w->life = ORBIT__SEG_UNKNOWN;
	if (fd >= 0) {
		header_of(fd, &w->h);
		w->life = orbit__segment_life(fd, e->pid, e->start);
		close(fd);
	}
	return 0;
}

static uint64_t created_s(const struct row *w)
{
	return w->h.created_ns ? w->h.created_ns / 1000000000ull : w->e.mtime_s;
}

static int newest_first(const void *a, const void *b)
{
	uint64_t x = created_s(a), y = created_s(b);
	return x > y ? -1 : x < y;
}

static void fmt_size(char *b, size_t len, uint64_t v)
{
	if (v >= (1ull << 30))
		snprintf(b, len, "%.1fG", (double)v / (1 << 30));
	else if (v >= (1ull << 20))
		snprintf(b, len, "%.1fM", (double)v / (1 << 20));
	else
		snprintf(b, len, "%.1fK", (double)v / (1 << 10));
}

static void fmt_age(char *b, size_t len, uint64_t s)
{
	if (s < 120)
		snprintf(b, len, "%llus", (unsigned long long)s);
	else if (s < 7200)
		snprintf(b, len, "%llum", (unsigned long long)(s / 60));
	else if (s < 172800)
		snprintf(b, len, "%lluh", (unsigned long long)(s / 3600));
	else
		snprintf(b, len, "%llud", (unsigned long long)(s / 86400));
}

int orbit__dump_list(FILE *out, FILE *err)
{
	struct rows r = {0};
	int e = orbit__segment_list(add_row, &r);
	if (e != 0) {
		fprintf(err, "orbit-dump: cannot list %s: %s\n", ORBIT__SEG_DIR, strerror(-e));
		return 1;
	}
	qsort(r.v, r.n, sizeof *r.v, newest_first);
	fprintf(out, "%8s  %-15s  %-7s  %7s  %7s  %7s  %s\n", "PID", "COMMAND", "STATE", "SIZE",
	        "FLIGHT", "AGE", "SEGMENT");
	uint64_t now = (uint64_t)time(NULL);
	for (size_t i = 0; i < r.n; i++) {
		const struct row *w = &r.v[i];
		char size[32], flight[32], age[32];
		fmt_size(size, sizeof size, w->e.size);
		if (w->h.flight_size)
			fmt_size(flight, sizeof flight, w->h.flight_size);
		else
			snprintf(flight, sizeof flight, "-");
		uint64_t c = created_s(w);
		fmt_age(age, sizeof age, now > c ? now - c : 0);
		const char *state = !w->readable                  ? "?"
		                    : w->life == ORBIT__SEG_ALIVE ? "alive"
		                    : w->life == ORBIT__SEG_DEAD  ? "dead"
		                                                  : "unknown";
		char comm[sizeof w->h.comm];
		fprintf(out, "%8u  %-15s  %-7s  %7s  %7s  %7s  %s%s\n", (unsigned)w->e.pid,
		        w->h.comm[0] ? printable(w->h.comm, comm, sizeof comm) : "?", state, size,
		        flight, age, w->e.file, w->readable ? "" : " (another user's)");
	}
	free(r.v);
	return 0;
}

/* ---- --remove ---- */

int orbit__dump_remove(const char *target, FILE *out, FILE *err)
{
	char path[300];
	if (orbit__dump_resolve(target, path, sizeof path, err) != 0)
		return 1;
	int fd = orbit__dump_open(path, err);
	if (fd < 0)
		return 1;
	struct orbit__seg_header h;
	header_of(fd, &h);
	uint32_t pid = h.pid;
	uint64_t start = h.start_time;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	int nonce;
	if (h.pid == 0 && orbit__segment_name_parse(base, &pid, &start, &nonce) != 0) {
		fprintf(err, "orbit-dump: %s is not a segment (no header, no segment's name)\n",
		        path);
		close(fd);
		return 1;
	}
	int life = orbit__segment_life(fd, pid, start);
	close(fd);
	if (life != ORBIT__SEG_DEAD) {
		fprintf(err, "orbit-dump: %s: %s; not removed\n", path,
		        life == ORBIT__SEG_ALIVE ? "its process is alive"
		                                 : "no /proc to prove its process is gone");
		return 1;
	}
	if (unlink(path) != 0) {
		fprintf(err, "orbit-dump: cannot remove %s: %s\n", path, strerror(errno));
		return 1;
	}
	fprintf(out, "removed %s (process %u, dead)\n", path, (unsigned)pid);
	/* Its tracefs instance, if it recorded the kernel's scheduling and was
	 * killed: that goes too (an instance records until removed). */
	int gone = orbit__tracefs_remove_dead(NULL, (int)pid);
	if (gone > 0)
		fprintf(out, "removed %d tracefs instance(s) of process %u\n", gone, (unsigned)pid);
	return 0;
}
