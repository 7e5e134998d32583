/* segment_create.c — creating this process's segment, and keeping the
 * segments of dead processes within bounds; see segment_create.h. */
#include "segment_create.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "flight.h"
#include "record.h"
#include "scope_slot.h"

/* The inline write path (orbit/internal.h, an installed header that stands
 * alone) and the format agree: format/ restates the layout and cannot
 * include it. */
_Static_assert(sizeof(struct orbit__slot) == ORBIT__SLOT_SIZE, "slot is 64 bytes");
_Static_assert(offsetof(struct orbit__slot, time) == 8, "record follows the stamp");
_Static_assert(offsetof(struct orbit__slot, id) == 16, "record layout");
_Static_assert(offsetof(struct orbit__slot, meta) == 24, "record layout: tid, kind, flags, len");
_Static_assert(offsetof(struct orbit__slot, name) == 32, "record layout");
_Static_assert(sizeof(struct orbit__slot) - 8 == ORBIT_RECORD_SIZE &&
                   sizeof(((struct orbit__slot *)0)->name) == ORBIT_RECORD_NAME,
               "the record is the slot's tail");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "slot words are plain 64-bit words");
/* The record's fields as readers decode them (format/record.h); the two
 * enums are compared as the integers a record holds. */
#define SAME_KIND(w, r) ((int)ORBIT__##w == (int)ORBIT_REC_##r)
_Static_assert(SAME_KIND(SCOPE_START, SCOPE_START) && SAME_KIND(SCOPE_STOP, SCOPE_STOP) &&
                   SAME_KIND(ASYNC_START, ASYNC_START) && SAME_KIND(ASYNC_STOP, ASYNC_STOP) &&
                   SAME_KIND(VALUE_INT, INT) && SAME_KIND(VALUE_INT64, INT64) &&
                   SAME_KIND(VALUE_UINT, UINT) && SAME_KIND(VALUE_UINT64, UINT64) &&
                   SAME_KIND(VALUE_FLOAT, FLOAT) && SAME_KIND(VALUE_DOUBLE, DOUBLE) &&
                   SAME_KIND(THREAD_NAME, THREAD_NAME) && SAME_KIND(NAME_CONT, NAME_CONT) &&
                   SAME_KIND(THREAD_END, THREAD_END) && SAME_KIND(THREAD_END, KIND_MAX),
               "record kinds: the write path's are the readers', the last is the last known");
#undef SAME_KIND
_Static_assert(ORBIT__FLAG_ATTRS == ORBIT_REC_FLAG_ATTRS &&
                   ORBIT__FLAG_TIME_UNTRUSTED == ORBIT_REC_FLAG_TIME_UNTRUSTED &&
                   ORBIT__FLAG_SITE == ORBIT_REC_FLAG_SITE,
               "record flags");
_Static_assert(ORBIT__INLINE_NAME == ORBIT_RECORD_NAME && ORBIT__ATTR_BYTES == ORBIT_RECORD_ATTRS &&
                   ORBIT__SITE_BYTES == ORBIT_RECORD_SITE,
               "the name area: its size, the attributes, the call site");
_Static_assert(ORBIT_NAME_MAX == ORBIT_NAME_LIMIT, "the longest name: the record's 16-bit len");
/* The readers' view of a slot (format/scope_slot.h) is this one. */
_Static_assert(sizeof(struct orbit__seg_slot) == sizeof(struct orbit__slot) &&
                   offsetof(struct orbit__seg_slot, stamp) == offsetof(struct orbit__slot, seq) &&
                   offsetof(struct orbit__seg_slot, word) == offsetof(struct orbit__slot, time) &&
                   offsetof(struct orbit__seg_slot, word[3]) == offsetof(struct orbit__slot, name),
               "format/scope_slot.h's slot is the write path's");
_Static_assert(sizeof(struct orbit__ring) == ORBIT__RING_HEADER, "ring header");
_Static_assert(offsetof(struct orbit__ring, slots) == ORBIT__RING_HEADER, "ring header");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free in shared memory");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free in shared memory");
_Static_assert(ORBIT__CLOCK_MONOTONIC == ORBIT__SEG_CLOCK_MONOTONIC &&
                   ORBIT__CLOCK_TSC == ORBIT__SEG_CLOCK_TSC &&
                   ORBIT__CLOCK_CNTVCT == ORBIT__SEG_CLOCK_CNTVCT,
               "clock sources");
_Static_assert(ORBIT_EBADSEG == ORBIT__SEG_EBADSEG && ORBIT_ENOTINIT == ORBIT__SEG_ENOTINIT &&
                   ORBIT_EVERSION == ORBIT__SEG_EVERSION && ORBIT_ETRUNC == ORBIT__SEG_ETRUNC,
               "the reader's errors are orbit.h's");

/* ---- the segments of dead processes ---- */

struct dead {
	char file[96];
	char comm[16];
	uint32_t pid;
	uint64_t held;       /* bytes of memory it holds (blocks) */
	uint64_t created_ns; /* CLOCK_REALTIME */
};

struct dead_list {
	struct dead *v;
	size_t n, cap;
	uint32_t uid;
	uint32_t self_pid;
	uint64_t self_start;
	uint64_t now_s;
	int dfd;
};

/* The header's creation time, else the file's (ns since 1970), and the
 * process's name if the header has one. */
static uint64_t created_ns(int fd, uint64_t mtime_s, char comm[16])
{
	struct orbit__seg_header h;
	memset(comm, 0, 16);
	if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
	    atomic_load_explicit(&h.magic, memory_order_relaxed) == ORBIT__SEG_MAGIC &&
	    h.created_ns != 0) {
		for (size_t i = 0; i < 15 && h.comm[i] >= ' ' && h.comm[i] < 127; i++)
			comm[i] = h.comm[i];
		return h.created_ns;
	}
	return mtime_s * 1000000000ull;
}

static int note_dead(void *ctx, const struct orbit__seg_entry *e)
{
	struct dead_list *l = ctx;
	if (e->uid != l->uid || (e->pid == l->self_pid && e->start == l->self_start))
		return 0;
	int fd = openat(l->dfd, e->file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	/* Never remove what cannot be proven dead: the lock free *and* /proc
	 * saying the process is gone (no /proc: it stays). */
	int life = orbit__segment_life(fd, e->pid, e->start);
	char comm[16];
	uint64_t created = created_ns(fd, e->mtime_s, comm);
	struct stat st;
	uint64_t held = fstat(fd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : e->size;
	close(fd);
	if (life != ORBIT__SEG_DEAD)
		return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct dead *v = realloc(l->v, cap * sizeof *v);
		if (v == NULL)
			return 1;
		l->v = v;
		l->cap = cap;
	}
	struct dead *d = &l->v[l->n++];
	snprintf(d->file, sizeof d->file, "%s", e->file);
	memcpy(d->comm, comm, sizeof d->comm);
	d->pid = e->pid;
	d->held = held;
	d->created_ns = created;
	return 0;
}

static int younger_first(const void *a, const void *b)
{
	const struct dead *x = a, *y = b;
	return x->created_ns > y->created_ns ? -1 : x->created_ns < y->created_ns;
}

/*
 * Keeps this user's dead segments within the bounds (segment_create.h):
 * the youngest first, as long as each bound holds; the rest are removed,
 * each with one line that says which and why (it was a dead process's
 * evidence). A file is judged by its lock and /proc (orbit__segment_life),
 * never by its name alone, and only files of this user are ever judged.
 */
static void keep_dead_bounded(uint32_t self_pid, uint64_t self_start)
{
	struct dead_list l = {.uid = (uint32_t)getuid(),
	                      .self_pid = self_pid,
	                      .self_start = self_start,
	                      .now_s = (uint64_t)time(NULL)};
	DIR *d = opendir(ORBIT__SEG_DIR);
	if (d == NULL)
		return;
	l.dfd = dirfd(d);
	orbit__segment_list(note_dead, &l);
	if (l.n > 1) /* l.v is NULL when there are none */
		qsort(l.v, l.n, sizeof *l.v, younger_first);
	uint64_t bytes = 0;
	for (size_t i = 0; i < l.n; i++) {
		const struct dead *v = &l.v[i];
		bytes += v->held;
		char why[80];
		uint64_t made_s = v->created_ns / 1000000000ull;
		if (l.now_s > made_s && l.now_s - made_s > ORBIT__SEG_KEEP_AGE_S)
			snprintf(why, sizeof why, "it is older than %u days",
			         ORBIT__SEG_KEEP_AGE_S / 86400u);
		else if (i >= ORBIT__SEG_KEEP_DEAD)
			snprintf(why, sizeof why, "the %u younger ones are kept",
			         ORBIT__SEG_KEEP_DEAD);
		else if (bytes > ORBIT__SEG_KEEP_BYTES)
			snprintf(why, sizeof why,
			         "with the younger ones it holds more than %llu MiB",
			         (unsigned long long)(ORBIT__SEG_KEEP_BYTES >> 20));
		else
			continue;
		if (unlinkat(l.dfd, v->file, 0) != 0)
			continue;
		fprintf(stderr,
		        "orbit: removed %s/%s, the segment of dead process %u (%s, %.1f MiB held), "
		        "which orbit-dump could still read: %s\n",
		        ORBIT__SEG_DIR, v->file, v->pid, v->comm[0] ? v->comm : "?",
		        (double)v->held / 1048576.0, why);
	}
	closedir(d);
	free(l.v);
}

/* ---- creating ---- */

static uint64_t nonce(void)
{
	uint64_t v;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) == (ssize_t)sizeof v)
		return v;
	/* No entropy yet (early boot): the name still must not be guessed
	 * easily; O_EXCL keeps it ours either way. */
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	v = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)&v ^
	    ((uint64_t)getpid() << 32);
	return v ^ (v >> 29);
}

/* One step smaller (asked: what the configuration asked for); 0 when
 * nothing is left to give up. The flight ring halves down to 1 MiB, the
 * scope rings' slots down to ORBIT__SEG_SLOTS_FLOOR, then the log page rings
 * leave the segment (and the slots start again from what was asked), then
 * the slots halve down to 16. */
static int shrink(struct orbit__seg_params *p, const struct orbit__seg_params *asked)
{
	if (p->flight_size > ORBIT__SEG_MIN_FLIGHT) {
		p->flight_size = p->flight_size / 2 / ORBIT__SEG_MIN_FLIGHT * ORBIT__SEG_MIN_FLIGHT;
		if (p->flight_size < ORBIT__SEG_MIN_FLIGHT)
			p->flight_size = ORBIT__SEG_MIN_FLIGHT;
		return 1;
	}
	uint32_t floor = p->page_ring_count > 0 ? ORBIT__SEG_SLOTS_FLOOR : ORBIT__SEG_MIN_SLOTS;
	if (p->slots_per_ring > floor) {
		p->slots_per_ring /= 2;
		return 1;
	}
	if (p->page_ring_count > 0) {
		p->page_ring_count = 0;
		p->page_ring_pages = 0;
		p->slots_per_ring = asked->slots_per_ring;
		return 1;
	}
	return 0;
}

static int plan(const struct orbit__seg_params *p, uint32_t page, struct orbit__seg_layout *l)
{
	struct orbit__seg_geometry g = {
	    .page_size = page,
	    .ring_count = p->ring_count,
	    .slots_per_ring = p->slots_per_ring,
	    .page_ring_count = p->page_ring_count,
	    .page_ring_pages = p->page_ring_pages,
	    .page_ring_page_size = page,
	    .flight_size = p->flight_size,
	};
	return orbit__segment_plan(&g, l);
}

/* RLIMIT_FSIZE: ftruncate or fallocate past it raises SIGXFSZ, whose
 * default action kills the process. */
static uint64_t size_limit(void)
{
	struct rlimit r;
	if (getrlimit(RLIMIT_FSIZE, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	return (uint64_t)r.rlim_cur;
}

/* Whether this kernel populates a range on request and says so when it
 * cannot (MADV_POPULATE_WRITE, Linux 5.14): then a scope ring's memory is
 * reserved when a thread first takes it, never a SIGBUS; otherwise all of
 * it is reserved at once. */
static int populate_works(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 0;
	int ok = madvise(p, page, MADV_POPULATE_WRITE) == 0;
	munmap(p, page);
	return ok;
}

static uint64_t page_up(uint64_t v, uint64_t page)
{
	return (v + page - 1) / page * page;
}

/* What is reserved when the segment is made: every byte, or (lazy) every
 * byte but the scope rings' slots past each ring's first page (which holds
 * its header: the drain reads every ring's cursor) and the flight ring's
 * entries past its header and handshake (output_flight.c reserves them as
 * it writes). The rest must fit in the file system's free room now, as the
 * whole did. Returns 0 or a positive errno. */
static int reserve_parts(int fd, const struct orbit__seg_layout *l, int lazy)
{
	if (!lazy)
		return posix_fallocate(fd, 0, (off_t)l->total_size);
	const uint64_t P = l->page_size;
	int err = posix_fallocate(fd, 0, (off_t)l->rings_offset);
	for (uint32_t i = 0; err == 0 && i < l->ring_count; i++) {
		uint64_t at = l->rings_offset + (uint64_t)i * l->ring_stride;
		uint64_t from = at / P * P, to = page_up(at + ORBIT__RING_HEADER, P);
		err = posix_fallocate(fd, (off_t)from, (off_t)(to - from));
	}
	uint64_t eager_end = l->flight_size > 0
	                         ? page_up(l->flight_offset + ORBIT__FLIGHT_RING_AT, P)
	                         : l->total_size;
	if (err == 0 && eager_end > l->pages_offset)
		err = posix_fallocate(fd, (off_t)l->pages_offset,
		                      (off_t)(eager_end - l->pages_offset));
	uint64_t later = (l->pages_offset - l->rings_offset) + (l->total_size - eager_end);
	/* A tmpfs mounted without a size (size=0) says f_blocks 0: no bound
	 * but memory, which the reservation as rings are taken still meets. */
	struct statvfs vfs;
	if (err == 0 && fstatvfs(fd, &vfs) == 0 && vfs.f_blocks != 0 &&
	    (uint64_t)vfs.f_bavail * vfs.f_frsize < later)
		err = ENOSPC;
	return err;
}

/* Sizes the file and reserves it (reserve_parts). SIGXFSZ is blocked on
 * this thread meanwhile and, if one of our calls raised it, taken back, so
 * the host never sees it (the size limit is checked before, this is the
 * second line). Returns 0 or a positive errno. */
static int reserve(int fd, const struct orbit__seg_layout *l, int lazy)
{
	const uint64_t total = l->total_size;
	sigset_t xfsz, old, pending;
	sigemptyset(&xfsz);
	sigaddset(&xfsz, SIGXFSZ);
	pthread_sigmask(SIG_BLOCK, &xfsz, &old);
	sigpending(&pending);
	int was_pending = sigismember(&pending, SIGXFSZ);
	int err = 0;
	if (ftruncate(fd, (off_t)total) != 0)
		err = errno;
	else
		err = reserve_parts(fd, l, lazy);
	if (!was_pending && !sigismember(&old, SIGXFSZ)) {
		sigpending(&pending);
		if (sigismember(&pending, SIGXFSZ)) {
			struct timespec zero = {0, 0};
			sigtimedwait(&xfsz, NULL, &zero);
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}

/* The owner's lock: a reader that found the file a moment ago may hold a
 * shared lock to ask about it; it lets go at once. */
static int take_lock(int fd)
{
	for (int i = 0; i < 200; i++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		struct timespec ts = {0, 100000};
		nanosleep(&ts, NULL);
	}
	return -EWOULDBLOCK;
}

static void read_comm(char *out, size_t len)
{
	memset(out, 0, len);
	int fd = open("/proc/self/comm", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, out, len - 1);
	close(fd);
	if (n > 0 && out[n - 1] == '\n')
		out[n - 1] = '\0';
}

static void describe(char *buf, size_t len, const struct orbit__seg_params *p, uint64_t total)
{
	int n = snprintf(buf, len, "%llu bytes: %u rings of %u slots", (unsigned long long)total,
	                 p->ring_count, p->slots_per_ring);
	if (n > 0 && (size_t)n < len && p->flight_size)
		n += snprintf(buf + n, len - (size_t)n, ", a flight ring of %llu MiB",
		              (unsigned long long)(p->flight_size >> 20));
	if (n > 0 && (size_t)n < len && p->page_ring_count == 0)
		snprintf(buf + n, len - (size_t)n, ", log pages outside the segment");
}

int orbit__segment_create(struct orbit__seg_params *p, struct orbit__segment *seg)
{
	memset(seg, 0, sizeof *seg);
	seg->fd = -1;
	long page = sysconf(_SC_PAGESIZE);
	pid_t pid = getpid();
	uint64_t start = orbit__process_start_time(pid);
	keep_dead_bounded((uint32_t)pid, start);

	const struct orbit__seg_params asked = *p;
	struct orbit__seg_layout l;
	int err = plan(p, (uint32_t)page, &l);
	if (err)
		return err;
	const uint64_t first_total = l.total_size;
	/* The file size limit first: no call below may pass it. */
	const uint64_t limit = size_limit();
	while (l.total_size > limit) {
		if (!shrink(p, &asked)) {
			*p = asked;
			fprintf(stderr,
			        "orbit: the file size limit (ulimit -f, %llu bytes) is below the "
			        "smallest segment; tracing is off\n",
			        (unsigned long long)limit);
			return -EFBIG;
		}
		plan(p, (uint32_t)page, &l);
	}

	int fd = -1;
	for (int tries = 0; fd < 0 && tries < 16; tries++) {
		snprintf(seg->name, sizeof seg->name, "/orbit-%d-%llu-%016llx", (int)pid,
		         (unsigned long long)start, (unsigned long long)nonce());
		fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	err = take_lock(fd);
	if (err)
		goto fail;
	int why = 0, first_why = 0;
	const int lazy = populate_works();
	while ((why = reserve(fd, &l, lazy)) != 0) {
		if (why != ENOSPC && why != EFBIG && why != ENOMEM && why != EDQUOT) {
			err = -why;
			goto fail;
		}
		if (!first_why)
			first_why = why;
		if (!shrink(p, &asked)) {
			fprintf(stderr,
			        "orbit: %s has no room for the smallest segment (%s); tracing is "
			        "off\n",
			        ORBIT__SEG_DIR, strerror(why));
			err = -why;
			goto fail;
		}
		plan(p, (uint32_t)page, &l);
	}
	if (first_why || l.total_size < first_total) {
		char got[200];
		describe(got, sizeof got, p, l.total_size);
		if (first_why)
			fprintf(
			    stderr,
			    "orbit: %s has no room for a segment of %llu bytes (%s); using %s\n",
			    ORBIT__SEG_DIR, (unsigned long long)first_total, strerror(first_why),
			    got);
		else
			fprintf(
			    stderr,
			    "orbit: the file size limit (ulimit -f, %llu bytes) is below a segment "
			    "of %llu bytes; using %s\n",
			    (unsigned long long)limit, (unsigned long long)first_total, got);
	}
	void *base = mmap(NULL, l.total_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	struct orbit__seg_header *h = base;
	h->version = ORBIT__SEG_VERSION;
	h->header_size = sizeof *h;
	h->page_size = (uint32_t)page;
	h->record_size = ORBIT_RECORD_SIZE;
	h->slot_size = ORBIT__SLOT_SIZE;
	h->ring_header_size = ORBIT__RING_HEADER;
	h->ring_count = l.ring_count;
	h->slots_per_ring = l.slots_per_ring;
	h->control_offset = (uint64_t)page;
	h->rings_offset = l.rings_offset;
	h->ring_stride = l.ring_stride;
	h->total_size = l.total_size;
	h->pid = (uint32_t)pid;
	h->clock_source = p->clock_source;
	h->start_time = start;
	h->state_offset = l.state_offset;
	h->state_size = l.state_size;
	h->pages_offset = l.pages_offset;
	h->page_ring_count = l.page_ring_count;
	h->page_ring_pages = l.page_ring_pages;
	h->page_ring_page_size = l.page_ring_page_size;
	h->page_ring_stride = l.page_ring_stride;
	h->flight_offset = l.flight_offset;
	h->flight_size = l.flight_size;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	h->created_ns = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	read_comm(h->comm, sizeof h->comm);
	h->uid = (uint32_t)getuid();
	/* Release: pairs with the acquire load in orbit__segment_validate;
	 * everything above (and the zeroed rings) is visible first. */
	atomic_store_explicit(&h->magic, ORBIT__SEG_MAGIC, memory_order_release);
	seg->base = base;
	seg->size = l.total_size;
	seg->control = (struct orbit__seg_control *)((uint8_t *)base + page);
	seg->owner = 1;
	seg->fd = fd;
	seg->lazy = lazy;
	err = orbit__segment_validate(base, l.total_size, &seg->layout, NULL);
	if (err) {
		munmap(base, l.total_size);
		seg->base = NULL;
		goto fail;
	}
	return 0;
fail:
	close(fd);
	seg->fd = -1;
	shm_unlink(seg->name);
	return err;
}

int orbit__segment_reserve(const struct orbit__segment *seg, uint64_t offset, uint64_t len)
{
	if (!seg->lazy || len == 0)
		return 0;
	const uint64_t P = seg->layout.page_size;
	const uint64_t from = offset / P * P, to = page_up(offset + len, P);
	if (madvise(seg->base + from, to - from, MADV_POPULATE_WRITE) != 0)
		return errno == EFAULT ? -ENOSPC : -errno; /* EFAULT: it would have been a SIGBUS */
	return 0;
}

int orbit__segment_ring_reserve(struct orbit__segment *seg, uint32_t i)
{
	if (orbit__segment_ring_usable(seg, i))
		return 0;
	const struct orbit__seg_layout *l = &seg->layout;
	int err = orbit__segment_reserve(seg, l->rings_offset + (uint64_t)i * l->ring_stride,
	                                 l->ring_stride);
	if (err != 0)
		return err;
	/* Release: pairs with the acquire load in orbit__segment_ring_usable;
	 * the pages are there before any claim of this thread. */
	atomic_store_explicit(&seg->ring_ready[i], 1, memory_order_release);
	return 0;
}

void orbit__segment_unlink(struct orbit__segment *seg)
{
	if (seg->owner && seg->name[0])
		shm_unlink(seg->name);
}

void orbit__segment_forget(struct orbit__segment *seg)
{
	if (seg->fd >= 0)
		close(seg->fd);
	seg->fd = -1;
}

struct find {
	uint32_t pid;
	uint64_t start;
	uint32_t uid;
	uint64_t best_mtime;
	char *name;
	size_t len;
	int found;
};

static int match(void *ctx, const struct orbit__seg_entry *e)
{
	struct find *f = ctx;
	if (e->pid != f->pid || e->start != f->start || e->uid != f->uid)
		return 0;
	if (!f->found || e->mtime_s >= f->best_mtime) {
		snprintf(f->name, f->len, "/%s", e->file);
		f->best_mtime = e->mtime_s;
		f->found = 1;
	}
	return 0;
}

int orbit__segment_find(pid_t pid, char *name, size_t len)
{
	/* The name carries the start time: a segment left by an earlier process
	 * with the same pid does not match the one running now; and its owner
	 * must be the process's: a file another user made under that name is
	 * not its segment. */
	char proc[64];
	struct stat st;
	snprintf(proc, sizeof proc, "/proc/%d", (int)pid);
	if (stat(proc, &st) != 0)
		return -ENOENT;
	struct find f = {.pid = (uint32_t)pid,
	                 .start = orbit__process_start_time(pid),
	                 .uid = (uint32_t)st.st_uid,
	                 .name = name,
	                 .len = len};
	int err = orbit__segment_list(match, &f);
	if (err)
		return err;
	return f.found ? 0 : -ENOENT;
}
