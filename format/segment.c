/* segment.c — the segment's layout and its validation, opening a segment
 * read-only, and finding segments and asking whether their writers live;
 * see segment.h and docs/format.md section 1. */
#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the segment and capture formats are little-endian"
#endif

_Static_assert(sizeof(struct orbit__seg_header) == 184, "docs/format.md 1.2: 184 bytes");
_Static_assert(offsetof(struct orbit__seg_header, magic) == 0, "magic first");
_Static_assert(offsetof(struct orbit__seg_header, start_time) == 80, "version 1 fields first");
_Static_assert(offsetof(struct orbit__seg_header, state_offset) == 88, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, page_ring_count) == 112, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, page_ring_stride) == 128, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, flight_offset) == 136, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, created_ns) == 152, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, comm) == 160, "format.md 1.2");
_Static_assert(offsetof(struct orbit__seg_header, uid) == 176, "format.md 1.2");
_Static_assert(sizeof(struct orbit__seg_point) == 16, "format.md 1.7");
_Static_assert(offsetof(struct orbit__seg_clock, amb_lo) == 24, "format.md 1.7");
_Static_assert(offsetof(struct orbit__seg_clock, point) == 40, "format.md 1.7");
_Static_assert(sizeof(struct orbit__seg_clock) == 40 + 16 * ORBIT__SEG_CLOCK_POINTS + 8,
               "format.md 1.7");
_Static_assert(sizeof(struct orbit__seg_name) == 20, "format.md 1.7");
_Static_assert(offsetof(struct orbit__seg_names, entry) == 24, "format.md 1.7");
_Static_assert(sizeof(struct orbit__seg_names) == 24 + 20 * ORBIT__SEG_NAMES + 8, "format.md 1.7");
_Static_assert(sizeof(struct orbit__seg_clock) % 8 == 0 && sizeof(struct orbit__seg_names) % 8 == 0,
               "blocks stay 8-aligned");
_Static_assert(sizeof(_Atomic uint64_t) == 8 && ATOMIC_LLONG_LOCK_FREE == 2,
               "64-bit atomics must be lock-free in shared memory");

static int is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

int orbit__segment_plan(const struct orbit__seg_geometry *g, struct orbit__seg_layout *out)
{
	const uint64_t P = g->page_size;
	if (!is_pow2(P) || P < ORBIT__SEG_MIN_PAGE_SIZE || P > ORBIT__SEG_MAX_PAGE_SIZE)
		return ORBIT__SEG_EBADSEG;
	if (g->ring_count < 1 || g->ring_count > ORBIT_MAX_RINGS)
		return ORBIT__SEG_EBADSEG;
	if (!is_pow2(g->slots_per_ring) || g->slots_per_ring < ORBIT__SEG_MIN_SLOTS ||
	    g->slots_per_ring > ORBIT__SEG_MAX_SLOTS)
		return ORBIT__SEG_EBADSEG;
	if (g->page_ring_count > ORBIT_MAX_PAGE_RINGS)
		return ORBIT__SEG_EBADSEG;
	if (g->page_ring_count > 0 &&
	    (g->page_ring_pages < ORBIT__SEG_MIN_LOG_PAGES ||
	     g->page_ring_pages > ORBIT__SEG_MAX_LOG_PAGES || !is_pow2(g->page_ring_page_size) ||
	     g->page_ring_page_size < ORBIT__SEG_MIN_LOG_PAGE_SIZE || g->page_ring_page_size > P))
		return ORBIT__SEG_EBADSEG;
	if (g->flight_size != 0 && (g->flight_size < ORBIT__SEG_MIN_FLIGHT ||
	                            g->flight_size > ORBIT__SEG_MAX_FLIGHT || g->flight_size % P))
		return ORBIT__SEG_EBADSEG;
	/* With these ranges no sum or product below passes 2^50. */
	memset(out, 0, sizeof *out);
	out->page_size = (uint32_t)P;
	out->ring_count = g->ring_count;
	out->slots_per_ring = g->slots_per_ring;
	out->state_offset = 2 * P;
	out->state_size = round_up(sizeof(struct orbit__seg_state), P);
	out->rings_offset = out->state_offset + out->state_size;
	out->ring_stride = ORBIT__RING_HEADER + (uint64_t)g->slots_per_ring * ORBIT__SLOT_SIZE;
	out->pages_offset = round_up(out->rings_offset + g->ring_count * out->ring_stride, P);
	out->page_ring_count = g->page_ring_count;
	if (g->page_ring_count > 0) {
		out->page_ring_pages = g->page_ring_pages;
		out->page_ring_page_size = g->page_ring_page_size;
		out->page_ring_stride = round_up(
		    (uint64_t)g->page_ring_pages * (g->page_ring_page_size + ORBIT__SEG_PAGE_STATE),
		    P);
	}
	out->flight_offset = out->pages_offset + g->page_ring_count * out->page_ring_stride;
	out->flight_size = g->flight_size;
	out->total_size = out->flight_offset + g->flight_size;
	return 0;
}

/* The first check that fails decides; why says which (docs/format.md 1.6). */
#define REFUSE(err, field, ...)                                                                    \
	do {                                                                                       \
		if (why != NULL) {                                                                 \
			why->offset = offsetof(struct orbit__seg_header, field);                   \
			snprintf(why->what, sizeof why->what, __VA_ARGS__);                        \
		}                                                                                  \
		return (err);                                                                      \
	} while (0)

int orbit__segment_validate(const void *base, size_t mapped_len, struct orbit__seg_layout *out,
                            struct orbit__seg_problem *why)
{
	struct orbit__seg_header h;
	if (mapped_len < sizeof h) {
		if (why != NULL) {
			why->offset = mapped_len;
			snprintf(why->what, sizeof why->what,
			         "the segment ends at %zu bytes, inside its %zu-byte header",
			         mapped_len, sizeof h);
		}
		return ORBIT__SEG_ETRUNC;
	}
	/* Acquire: pairs with the creator's release store of magic, after
	 * which every other header field is complete. */
	uint64_t magic = atomic_load_explicit(&((const struct orbit__seg_header *)base)->magic,
	                                      memory_order_acquire);
	if (magic == 0)
		REFUSE(ORBIT__SEG_ENOTINIT, magic,
		       "magic is 0: the segment is not initialised yet");
	if (magic != ORBIT__SEG_MAGIC)
		REFUSE(ORBIT__SEG_EBADSEG, magic, "magic is 0x%016llx, not ORBTSEG1",
		       (unsigned long long)magic);
	/* One private copy: a hostile writer changing the header later cannot
	 * change what was validated. */
	memcpy((char *)&h + sizeof h.magic, (const char *)base + sizeof h.magic,
	       sizeof h - sizeof h.magic);
	if (h.version != ORBIT__SEG_VERSION)
		REFUSE(ORBIT__SEG_EVERSION, version, "version %u, this reader reads %u", h.version,
		       ORBIT__SEG_VERSION);
	if (h.header_size != sizeof h)
		REFUSE(ORBIT__SEG_EBADSEG, header_size, "header_size %u is not %zu", h.header_size,
		       sizeof h);
	if (h.record_size != ORBIT_RECORD_SIZE)
		REFUSE(ORBIT__SEG_EBADSEG, record_size, "record_size %u is not %u", h.record_size,
		       ORBIT_RECORD_SIZE);
	if (h.slot_size != ORBIT__SLOT_SIZE)
		REFUSE(ORBIT__SEG_EBADSEG, slot_size, "slot_size %u is not %u", h.slot_size,
		       ORBIT__SLOT_SIZE);
	if (h.ring_header_size != ORBIT__RING_HEADER)
		REFUSE(ORBIT__SEG_EBADSEG, ring_header_size, "ring_header_size %u is not %u",
		       h.ring_header_size, ORBIT__RING_HEADER);
	if (!is_pow2(h.page_size) || h.page_size < ORBIT__SEG_MIN_PAGE_SIZE ||
	    h.page_size > ORBIT__SEG_MAX_PAGE_SIZE)
		REFUSE(ORBIT__SEG_EBADSEG, page_size, "page_size %u is not a power of two %u..%u",
		       h.page_size, ORBIT__SEG_MIN_PAGE_SIZE, ORBIT__SEG_MAX_PAGE_SIZE);
	if (h.ring_count < 1 || h.ring_count > ORBIT_MAX_RINGS)
		REFUSE(ORBIT__SEG_EBADSEG, ring_count, "ring_count %u is not 1..%u", h.ring_count,
		       ORBIT_MAX_RINGS);
	if (!is_pow2(h.slots_per_ring) || h.slots_per_ring < ORBIT__SEG_MIN_SLOTS ||
	    h.slots_per_ring > ORBIT__SEG_MAX_SLOTS)
		REFUSE(ORBIT__SEG_EBADSEG, slots_per_ring,
		       "slots_per_ring %u is not a power of two 16..2^24", h.slots_per_ring);
	if (h.clock_source > ORBIT__SEG_CLOCK_CNTVCT)
		REFUSE(ORBIT__SEG_EBADSEG, clock_source, "clock_source %u is not 0..2",
		       h.clock_source);
	if (h.page_ring_count > ORBIT_MAX_PAGE_RINGS)
		REFUSE(ORBIT__SEG_EBADSEG, page_ring_count, "page_ring_count %u is over %u",
		       h.page_ring_count, ORBIT_MAX_PAGE_RINGS);
	struct orbit__seg_geometry g = {
	    .page_size = h.page_size,
	    .ring_count = h.ring_count,
	    .slots_per_ring = h.slots_per_ring,
	    .page_ring_count = h.page_ring_count,
	    .page_ring_pages = h.page_ring_pages,
	    .page_ring_page_size = h.page_ring_page_size,
	    .flight_size = h.flight_size,
	};
	struct orbit__seg_layout l;
	if (orbit__segment_plan(&g, &l) != 0) {
		if (h.page_ring_count > 0 && (h.page_ring_pages < ORBIT__SEG_MIN_LOG_PAGES ||
		                              h.page_ring_pages > ORBIT__SEG_MAX_LOG_PAGES))
			REFUSE(ORBIT__SEG_EBADSEG, page_ring_pages,
			       "page_ring_pages %u is not %u..%u", h.page_ring_pages,
			       ORBIT__SEG_MIN_LOG_PAGES, ORBIT__SEG_MAX_LOG_PAGES);
		if (h.page_ring_count > 0)
			REFUSE(ORBIT__SEG_EBADSEG, page_ring_page_size,
			       "page_ring_page_size %u is not a power of two %u..page_size",
			       h.page_ring_page_size, ORBIT__SEG_MIN_LOG_PAGE_SIZE);
		REFUSE(
		    ORBIT__SEG_EBADSEG, flight_size,
		    "flight_size %llu is not 0 or a multiple of the page size from 1 MiB to 4 GiB",
		    (unsigned long long)h.flight_size);
	}
	/* Every offset must be the one the dimensions give (format.md 1.1). */
	if (h.control_offset != h.page_size)
		REFUSE(ORBIT__SEG_EBADSEG, control_offset, "control_offset %llu is not %u",
		       (unsigned long long)h.control_offset, h.page_size);
	if (h.state_offset != l.state_offset || h.state_size != l.state_size)
		REFUSE(ORBIT__SEG_EBADSEG, state_offset,
		       "the state area is not at %llu, %llu bytes",
		       (unsigned long long)l.state_offset, (unsigned long long)l.state_size);
	if (h.rings_offset != l.rings_offset)
		REFUSE(ORBIT__SEG_EBADSEG, rings_offset, "rings_offset %llu is not %llu",
		       (unsigned long long)h.rings_offset, (unsigned long long)l.rings_offset);
	if (h.ring_stride != l.ring_stride)
		REFUSE(ORBIT__SEG_EBADSEG, ring_stride, "ring_stride %llu is not %llu",
		       (unsigned long long)h.ring_stride, (unsigned long long)l.ring_stride);
	if (h.pages_offset != l.pages_offset)
		REFUSE(ORBIT__SEG_EBADSEG, pages_offset, "pages_offset %llu is not %llu",
		       (unsigned long long)h.pages_offset, (unsigned long long)l.pages_offset);
	if (h.page_ring_stride != l.page_ring_stride)
		REFUSE(ORBIT__SEG_EBADSEG, page_ring_stride, "page_ring_stride %llu is not %llu",
		       (unsigned long long)h.page_ring_stride,
		       (unsigned long long)l.page_ring_stride);
	if (h.flight_offset != l.flight_offset)
		REFUSE(ORBIT__SEG_EBADSEG, flight_offset, "flight_offset %llu is not %llu",
		       (unsigned long long)h.flight_offset, (unsigned long long)l.flight_offset);
	if (h.total_size != l.total_size)
		REFUSE(ORBIT__SEG_EBADSEG, total_size, "total_size %llu is not %llu",
		       (unsigned long long)h.total_size, (unsigned long long)l.total_size);
	if (l.total_size > mapped_len) {
		if (why != NULL) {
			why->offset = mapped_len;
			snprintf(why->what, sizeof why->what,
			         "the segment ends at %zu bytes; its header describes %llu",
			         mapped_len, (unsigned long long)l.total_size);
		}
		return ORBIT__SEG_ETRUNC;
	}
	l.pid = h.pid;
	l.clock_source = h.clock_source;
	l.start_time = h.start_time;
	l.created_ns = h.created_ns;
	l.uid = h.uid;
	memcpy(l.comm, h.comm, sizeof l.comm - 1);
	l.comm[sizeof l.comm - 1] = '\0';
	*out = l;
	return 0;
}

int orbit__segment_open(const char *name, struct orbit__segment *seg)
{
	memset(seg, 0, sizeof *seg);
	seg->fd = -1;
	snprintf(seg->name, sizeof seg->name, "%s", name);
	int fd = shm_open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out;
	}
	if (st.st_size < (off_t)sizeof(struct orbit__seg_header)) {
		err = ORBIT__SEG_ETRUNC;
		goto out;
	}
	void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	err = orbit__segment_validate(base, (size_t)st.st_size, &seg->layout, NULL);
	if (err) {
		munmap(base, (size_t)st.st_size);
		goto out;
	}
	void *ctl = mmap(NULL, seg->layout.page_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	                 (off_t)seg->layout.page_size);
	if (ctl == MAP_FAILED) {
		err = -errno;
		munmap(base, (size_t)st.st_size);
		goto out;
	}
	seg->base = base;
	seg->size = (size_t)st.st_size;
	seg->control = ctl;
out:
	close(fd);
	return err;
}

void orbit__segment_close(struct orbit__segment *seg)
{
	if (seg->base == NULL)
		return;
	if (!seg->owner)
		munmap(seg->control, seg->layout.page_size);
	munmap(seg->base, seg->size);
	seg->base = NULL;
	seg->control = NULL;
	if (seg->fd >= 0)
		close(seg->fd);
	seg->fd = -1;
}

/* ---- names and liveness ---- */

int orbit__segment_name_parse(const char *file, uint32_t *pid, uint64_t *start, int *nonce)
{
	if (strncmp(file, "orbit-", 6) != 0)
		return -1;
	const char *p = file + 6;
	char *end;
	if (*p < '1' || *p > '9')
		return -1;
	unsigned long long v = strtoull(p, &end, 10);
	if (*end != '-' || v > UINT32_MAX)
		return -1;
	*pid = (uint32_t)v;
	p = end + 1;
	if (*p < '0' || *p > '9')
		return -1;
	*start = strtoull(p, &end, 10);
	if (*end == '\0') {
		*nonce = 0;
		return 0;
	}
	if (*end != '-')
		return -1;
	p = end + 1;
	for (int i = 0; i < 16; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return -1;
	if (p[16] != '\0')
		return -1;
	*nonce = 1;
	return 0;
}

/* Reads /proc/PID/stat: its state (field 3) and start time (field 22).
 * The command name may hold spaces and parentheses: fields count from the
 * last ')'. Returns 0, or -1 when the process is not there. */
static int read_stat(pid_t pid, char *state, uint64_t *start)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -1;
	*state = p[2];
	*start = 0;
	int field = 2;
	char *save = NULL;
	for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
		if (++field == 22) {
			*start = strtoull(tok, NULL, 10);
			break;
		}
	}
	return 0;
}

uint64_t orbit__process_start_time(pid_t pid)
{
	char state;
	uint64_t start;
	return read_stat(pid, &state, &start) == 0 ? start : 0;
}

/* Whether process pid has a thread other than its leader that is not
 * exiting itself: /proc/PID/task/TID/stat with a state other than Z or X. */
static int other_threads(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (d == NULL)
		return 0;
	struct dirent *e;
	int found = 0;
	while (!found && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9' ||
		    strtol(e->d_name, NULL, 10) == (long)pid)
			continue;
		char stat_path[512], buf[512];
		snprintf(stat_path, sizeof stat_path, "%s/%s/stat", path, e->d_name);
		int fd = open(stat_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		const char *p = strrchr(buf, ')');
		found = p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
	}
	closedir(d);
	return found;
}

int orbit__process_alive(pid_t pid, uint64_t start_time)
{
	char state;
	uint64_t start;
	if (read_stat(pid, &state, &start) != 0) {
		/* Gone, or no /proc to ask: our own stat tells which. */
		char self;
		uint64_t s;
		return read_stat(getpid(), &self, &s) == 0 ? 0 : -1;
	}
	/* A recycled pid belongs to another process. */
	if (start != start_time)
		return 0;
	if (state == 'X')
		return 0;
	/* The leader of a thread group shows Z once its main thread has
	 * exited, for as long as any other thread runs: still alive. */
	if (state == 'Z')
		return other_threads(pid);
	return 1;
}

int orbit__segment_locked(int fd)
{
	/* The owner holds LOCK_EX: a shared lock is refused while it lives.
	 * Taking one for a moment changes nothing for the owner, who never
	 * locks again. */
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		flock(fd, LOCK_UN);
		return 0;
	}
	return errno == EWOULDBLOCK ? 1 : -errno;
}

int orbit__segment_life(int fd, uint32_t pid, uint64_t start)
{
	if (orbit__segment_locked(fd) == 1)
		return ORBIT__SEG_ALIVE;
	int alive = orbit__process_alive((pid_t)pid, start);
	if (alive < 0)
		return ORBIT__SEG_UNKNOWN;
	return alive ? ORBIT__SEG_ALIVE : ORBIT__SEG_DEAD;
}

int orbit__segment_list(int (*fn)(void *ctx, const struct orbit__seg_entry *e), void *ctx)
{
	DIR *d = opendir(ORBIT__SEG_DIR);
	if (d == NULL)
		return -errno;
	int dfd = dirfd(d);
	struct dirent *e;
	int stop = 0;
	while (!stop && (e = readdir(d)) != NULL) {
		struct orbit__seg_entry s;
		memset(&s, 0, sizeof s);
		size_t len = strlen(e->d_name);
		if (len >= sizeof s.file ||
		    orbit__segment_name_parse(e->d_name, &s.pid, &s.start, &s.nonce) != 0)
			continue;
		struct stat st;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
			continue;
		memcpy(s.file, e->d_name, len + 1); /* len < sizeof s.file */
		s.uid = st.st_uid;
		s.size = (uint64_t)st.st_size;
		s.mtime_s = (uint64_t)st.st_mtime;
		stop = fn(ctx, &s);
	}
	closedir(d);
	return 0;
}
