/* segment.c — create, find, open and validate the shared-memory segment.
 * The layout is described in segment.h. */
#include "segment.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the segment and capture formats are little-endian"
#endif

/* The inline write path in orbit.h and the record format must agree. */
_Static_assert(sizeof(struct orbit__slot) == ORBIT__SLOT_SIZE, "slot is 64 bytes");
_Static_assert(offsetof(struct orbit__slot, time) == 8, "record follows the stamp");
_Static_assert(offsetof(struct orbit__slot, id) == 16, "record layout");
_Static_assert(offsetof(struct orbit__slot, meta) == 24, "record layout: tid, kind, flags, len");
_Static_assert(offsetof(struct orbit__slot, name) == 32, "record layout");
_Static_assert(sizeof(_Atomic uint64_t) == 8, "slot words are plain 64-bit words");
_Static_assert(sizeof(struct orbit__ring) == ORBIT__RING_HEADER, "ring header");
_Static_assert(offsetof(struct orbit__ring, slots) == ORBIT__RING_HEADER, "ring header");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics must be lock-free in shared memory");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics must be lock-free in shared memory");
_Static_assert(sizeof(struct orbit__seg_header) <= 4096, "header fits page 0");
_Static_assert(offsetof(struct orbit__seg_header, magic) == 0, "magic first");

static int is_pow2(uint64_t v)
{
	return v != 0 && (v & (v - 1)) == 0;
}

int orbit__segment_validate(const void *base, size_t mapped_len, struct orbit__seg_layout *out)
{
	struct orbit__seg_header h;
	if (mapped_len < sizeof h)
		return ORBIT_ETRUNC;
	/* Acquire: pairs with the creator's release store of magic, after
	 * which every other header field is complete. */
	uint64_t magic = atomic_load_explicit(&((const struct orbit__seg_header *)base)->magic,
	                                      memory_order_acquire);
	if (magic == 0)
		return ORBIT_ENOTINIT;
	if (magic != ORBIT__SEG_MAGIC)
		return ORBIT_EBADSEG;
	/* One private copy: a hostile writer changing the header later cannot
	 * change what was validated. */
	memcpy((char *)&h + sizeof h.magic, (const char *)base + sizeof h.magic,
	       sizeof h - sizeof h.magic);
	if (h.version != ORBIT__SEG_VERSION)
		return ORBIT_EVERSION;
	if (h.header_size != sizeof h || h.record_size != ORBIT__RECORD_SIZE ||
	    h.slot_size != ORBIT__SLOT_SIZE || h.ring_header_size != ORBIT__RING_HEADER)
		return ORBIT_EBADSEG;
	if (!is_pow2(h.page_size) || h.page_size < 4096 || h.page_size > (1u << 16))
		return ORBIT_EBADSEG;
	if (h.ring_count < 1 || h.ring_count > ORBIT__SEG_MAX_RINGS)
		return ORBIT_EBADSEG;
	if (!is_pow2(h.slots_per_ring) || h.slots_per_ring < ORBIT__SEG_MIN_SLOTS ||
	    h.slots_per_ring > ORBIT__SEG_MAX_SLOTS)
		return ORBIT_EBADSEG;
	if (h.clock_source > ORBIT__CLOCK_CNTVCT)
		return ORBIT_EBADSEG;
	/* With the ranges above none of these products can overflow 64 bits. */
	uint64_t stride = ORBIT__RING_HEADER + (uint64_t)h.slots_per_ring * ORBIT__SLOT_SIZE;
	if (h.control_offset != h.page_size || h.rings_offset != 2ull * h.page_size ||
	    h.ring_stride != stride)
		return ORBIT_EBADSEG;
	uint64_t total = h.rings_offset + (uint64_t)h.ring_count * stride;
	if (h.total_size != total)
		return ORBIT_EBADSEG;
	if (total > mapped_len)
		return ORBIT_ETRUNC;
	*out = (struct orbit__seg_layout){
	    .page_size = h.page_size,
	    .ring_count = h.ring_count,
	    .slots_per_ring = h.slots_per_ring,
	    .pid = h.pid,
	    .clock_source = h.clock_source,
	    .start_time = h.start_time,
	    .rings_offset = h.rings_offset,
	    .ring_stride = h.ring_stride,
	    .total_size = h.total_size,
	};
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

int orbit__process_alive(pid_t pid, uint64_t start_time)
{
	char state;
	uint64_t start;
	if (read_stat(pid, &state, &start) != 0 || state == 'Z' || state == 'X')
		return 0;
	/* A recycled pid belongs to another process. */
	return start == start_time;
}

/* Segments of processes that died without unlinking theirs (killed, or
 * crashed) would pile up in /dev/shm: the next process to trace removes them.
 * A name whose pid lives with the start time in the name is left alone.
 * Liveness is judged in this process's pid namespace: processes that share
 * /dev/shm without sharing it would look dead (container runtimes give each
 * container its own /dev/shm, which avoids this).
 */
static void remove_stale_segments(void)
{
	DIR *d = opendir("/dev/shm");
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		int pid;
		unsigned long long start;
		char tail;
		if (sscanf(e->d_name, "orbit-%d-%llu%c", &pid, &start, &tail) != 2 || pid <= 0)
			continue;
		if (orbit__process_alive(pid, start))
			continue;
		char name[300];
		snprintf(name, sizeof name, "/%s", e->d_name);
		shm_unlink(name);
	}
	closedir(d);
}

int orbit__segment_create(const struct orbit__seg_params *p, struct orbit__segment *seg)
{
	remove_stale_segments();
	memset(seg, 0, sizeof *seg);
	long page = sysconf(_SC_PAGESIZE);
	pid_t pid = getpid();
	uint64_t start = orbit__process_start_time(pid);
	uint64_t stride = ORBIT__RING_HEADER + (uint64_t)p->slots_per_ring * ORBIT__SLOT_SIZE;
	uint64_t total = 2ull * (uint64_t)page + (uint64_t)p->ring_count * stride;
	snprintf(seg->name, sizeof seg->name, "/orbit-%d-%llu", (int)pid,
	         (unsigned long long)start);
	int fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/* Left by an earlier run of this very process (an exec kept
		 * the pid and start time): it is ours to replace. */
		shm_unlink(seg->name);
		fd = shm_open(seg->name, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return -errno;
	int err = 0;
	if (ftruncate(fd, (off_t)total) != 0) {
		err = -errno;
		goto fail;
	}
	void *base = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	close(fd);
	struct orbit__seg_header *h = base;
	h->version = ORBIT__SEG_VERSION;
	h->header_size = sizeof *h;
	h->page_size = (uint32_t)page;
	h->record_size = ORBIT__RECORD_SIZE;
	h->slot_size = ORBIT__SLOT_SIZE;
	h->ring_header_size = ORBIT__RING_HEADER;
	h->ring_count = p->ring_count;
	h->slots_per_ring = p->slots_per_ring;
	h->control_offset = (uint64_t)page;
	h->rings_offset = 2ull * (uint64_t)page;
	h->ring_stride = stride;
	h->total_size = total;
	h->pid = (uint32_t)pid;
	h->clock_source = p->clock_source;
	h->start_time = start;
	/* Release: pairs with the acquire load in orbit__segment_validate;
	 * everything above (and the zeroed rings) is visible first. */
	atomic_store_explicit(&h->magic, ORBIT__SEG_MAGIC, memory_order_release);
	seg->base = base;
	seg->size = total;
	seg->control = (struct orbit__seg_control *)((uint8_t *)base + page);
	seg->owner = 1;
	err = orbit__segment_validate(base, total, &seg->layout);
	if (err) {
		munmap(base, total);
		shm_unlink(seg->name);
		seg->base = NULL;
	}
	return err;
fail:
	close(fd);
	shm_unlink(seg->name);
	return err;
}

int orbit__segment_open(const char *name, struct orbit__segment *seg)
{
	memset(seg, 0, sizeof *seg);
	snprintf(seg->name, sizeof seg->name, "%s", name);
	int fd = shm_open(name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	struct stat st;
	int err = 0;
	if (fstat(fd, &st) != 0) {
		err = -errno;
		goto out;
	}
	if (st.st_size < (off_t)sizeof(struct orbit__seg_header)) {
		err = ORBIT_ETRUNC;
		goto out;
	}
	void *base = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED) {
		err = -errno;
		goto out;
	}
	err = orbit__segment_validate(base, (size_t)st.st_size, &seg->layout);
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

int orbit__segment_find(pid_t pid, char *name, size_t len)
{
	/* The name carries the start time: a segment left by an earlier process
	 * with the same pid does not match the one running now. */
	char want[64];
	snprintf(want, sizeof want, "orbit-%d-%llu", (int)pid,
	         (unsigned long long)orbit__process_start_time(pid));
	DIR *d = opendir("/dev/shm");
	if (d == NULL)
		return -errno;
	struct dirent *e;
	int err = -ENOENT;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, want) == 0) {
			snprintf(name, len, "/%s", e->d_name);
			err = 0;
			break;
		}
	}
	closedir(d);
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
}

void orbit__segment_unlink(struct orbit__segment *seg)
{
	if (seg->owner && seg->name[0])
		shm_unlink(seg->name);
}
