/*
 * segment.h — the shared-memory segment a traced process writes, as a
 * format (docs/format.md section 1 is normative): its layout, the checks a
 * reader makes before it trusts one byte of it, and where segments are
 * found. The writer is liborbit (agent/src/segment_create.c); the readers
 * are the agent's own drain, tests, and orbit-dump, which reads segments of
 * processes dead or alive.
 *
 *   page 0        header (struct orbit__seg_header); magic stored last
 *   page 1        control page: the capture flag, the only page a reader
 *                 may map writable
 *   state         what a dump needs besides the rings: the clock
 *                 calibration and the thread names (struct orbit__seg_state)
 *   rings         ring_count scope rings, ring_stride bytes apart: a
 *                 128-byte ring header (the cursor), then slots_per_ring
 *                 64-byte slots
 *   page rings    page_ring_count log page rings: each its pages, then one
 *                 64-byte state line per page (format/ftrace_page.h says
 *                 what a reader takes from them)
 *   flight        the flight ring (format/flight.h), flight_size bytes, or
 *                 nothing
 *
 * Every offset follows from the dimensions (orbit__segment_plan); a reader
 * recomputes them and refuses a header that says anything else.
 *
 * Nothing here includes the agent's headers (format/ depends on no other
 * folder): the ring and slot layout the write path in orbit/internal.h
 * uses is restated as the constants below, and agent/src/segment_create.c
 * asserts that the two agree.
 */
#ifndef ORBIT_FORMAT_SEGMENT_H
#define ORBIT_FORMAT_SEGMENT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "record.h"      /* ORBIT_RECORD_SIZE */
#include "wire_limits.h" /* ORBIT_MAX_RINGS, ORBIT_MAX_PAGE_RINGS */

#define ORBIT__SEG_MAGIC 0x314745535442524full /* "ORBTSEG1" */
/* 3: the state, page-ring and flight areas, and stamps with a marker and a
 * check in which every record word has a weight of its own (docs/format.md
 * 1.2, 1.5; version 2 folded a call site's address into the meta word's) */
#define ORBIT__SEG_VERSION 3u
#define ORBIT__SEG_MAX_SLOTS (1u << 24)
#define ORBIT__SEG_MIN_SLOTS 16u
#define ORBIT__RING_HEADER 128u
#define ORBIT__SLOT_SIZE 64u /* the 8-byte stamp, then the record */
/* page_size: a power of two in this range */
#define ORBIT__SEG_MIN_PAGE_SIZE 4096u
#define ORBIT__SEG_MAX_PAGE_SIZE 65536u
/* The log page rings: page_ring_pages pages each, of page_ring_page_size
 * bytes, a power of two from ORBIT__SEG_MIN_LOG_PAGE_SIZE to page_size. */
#define ORBIT__SEG_MIN_LOG_PAGES 2u
#define ORBIT__SEG_MAX_LOG_PAGES (1u << 20)
#define ORBIT__SEG_MIN_LOG_PAGE_SIZE 128u
#define ORBIT__SEG_PAGE_STATE 64u          /* bytes of state per log page */
#define ORBIT__SEG_MIN_FLIGHT (1ull << 20) /* ORBIT_FLIGHT's range */
#define ORBIT__SEG_MAX_FLIGHT (4ull << 30)

/* A log page's 64-byte state line in the page-ring area, as a reader takes
 * it (agent/src/page_ring.c's struct orbit__page_state, whose words take
 * these bits from here and assert these offsets): a u64 claim word at 0,
 * bits 0..16 the bytes of records claimed on the page, bit 17 set once the
 * page is closed; a u32 writers word at 16, bits 0..30 the writers inside
 * the page now, bit 31 set while it is open. */
#define ORBIT__SEG_PAGE_CLAIM_BITS 17u
#define ORBIT__SEG_PAGE_CLAIM_BYTES ((1ull << ORBIT__SEG_PAGE_CLAIM_BITS) - 1)
#define ORBIT__SEG_PAGE_CLAIM_CLOSED (1ull << ORBIT__SEG_PAGE_CLAIM_BITS)
#define ORBIT__SEG_PAGE_WRITERS_AT 16u
#define ORBIT__SEG_PAGE_WRITERS_OPEN (1u << 31)
#define ORBIT__SEG_PAGE_WRITERS_IN (ORBIT__SEG_PAGE_WRITERS_OPEN - 1)

/* What producers store in a record's time (orbit/internal.h's enum orbit__clock). */
#define ORBIT__SEG_CLOCK_MONOTONIC 0u
#define ORBIT__SEG_CLOCK_TSC 1u
#define ORBIT__SEG_CLOCK_CNTVCT 2u

/* The reader's errors: the values of orbit.h's ORBIT_EBADSEG, ORBIT_ENOTINIT,
 * ORBIT_EVERSION and ORBIT_ETRUNC (segment_create.c asserts they agree), so
 * orbit_strerror() describes them. */
#define ORBIT__SEG_EBADSEG (-1001)
#define ORBIT__SEG_ENOTINIT (-1002)
#define ORBIT__SEG_EVERSION (-1003)
#define ORBIT__SEG_ETRUNC (-1004)

struct orbit__seg_header {
	/* Written once by the creating process before magic; read by readers
	 * only after their acquire load of magic. */
	_Atomic uint64_t magic; /* release store, last: pairs with the
	                           acquire load in orbit__segment_validate */
	uint32_t version;
	uint32_t header_size;
	uint32_t page_size;
	uint32_t record_size;
	uint32_t slot_size;
	uint32_t ring_header_size;
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint64_t control_offset;
	uint64_t rings_offset;
	uint64_t ring_stride;
	uint64_t total_size;
	uint32_t pid;
	uint32_t clock_source; /* ORBIT__SEG_CLOCK_* */
	uint64_t start_time;   /* the process's start, /proc/PID/stat field 22 */
	/* version 2 */
	uint64_t state_offset;
	uint64_t state_size;
	uint64_t pages_offset;
	uint32_t page_ring_count; /* 0: the log page rings are not in the segment */
	uint32_t page_ring_pages;
	uint32_t page_ring_page_size;
	uint32_t reserved0;
	uint64_t page_ring_stride; /* pages × (page size + 64) */
	uint64_t flight_offset;
	uint64_t flight_size; /* 0: no flight ring */
	uint64_t created_ns;  /* CLOCK_REALTIME at creation */
	char comm[16];        /* the process's name then, NUL-padded */
	uint32_t uid;         /* the creator's real uid */
	uint32_t reserved1;
};

struct orbit__seg_control {
	/* Written by the agent or by a reader, read by the producers' macros
	 * through orbit__capture_flag (the agent mirrors it). */
	_Atomic uint32_t capture;
};

/*
 * The state area. Each part is two blocks written in turn by the agent
 * thread, the older one each time, so that a reader always finds one
 * complete block even in the segment of a process that died in the middle
 * of a write. A block is complete when gen_begin == gen_end != 0: the writer
 * stores gen_begin = g, then (release fence) the contents, then gen_end = g
 * with release; a reader copies gen_begin, the contents, gen_end, in that
 * order, and takes the complete block with the larger g.
 */
#define ORBIT__SEG_CLOCK_POINTS 256u /* calibration points kept */
#define ORBIT__SEG_NAMES 512u        /* thread names kept */

struct orbit__seg_point {
	uint64_t ticks, ns;
};

/* The agent's conversion from the producers' clock to CLOCK_MONOTONIC:
 * count points (ticks, ns) increasing in both, a polyline through which
 * ticks are interpolated: the first point of the conversion's epoch, then
 * its newest count - 1 points (docs/format.md 1.7). */
struct orbit__seg_clock {
	_Atomic uint64_t gen_begin;
	uint32_t source; /* ORBIT__SEG_CLOCK_* */
	uint32_t count;  /* points, at most ORBIT__SEG_CLOCK_POINTS */
	uint64_t resets; /* epochs started again (clock.h guarantee 3) */
	/* Ticks an earlier epoch read too (clock.h guarantee 4): a time there
	 * is untrusted. amb_hi <= amb_lo: none. */
	uint64_t amb_lo, amb_hi;
	struct orbit__seg_point point[ORBIT__SEG_CLOCK_POINTS];
	_Atomic uint64_t gen_end;
};

struct orbit__seg_name {
	uint32_t tid;
	char name[16]; /* comm, NUL-padded */
};

/* The process's threads and their names (comm) when the agent last looked. */
struct orbit__seg_names {
	_Atomic uint64_t gen_begin;
	uint32_t count; /* at most ORBIT__SEG_NAMES */
	uint32_t reserved;
	uint64_t taken_ns; /* CLOCK_MONOTONIC when they were read */
	struct orbit__seg_name entry[ORBIT__SEG_NAMES];
	_Atomic uint64_t gen_end;
};

struct orbit__seg_state {
	struct orbit__seg_clock clock[2];
	struct orbit__seg_names names[2];
};

/* The dimensions a segment is made from; everything else follows. */
struct orbit__seg_geometry {
	uint32_t page_size;
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint32_t page_ring_count; /* 0: none in the segment */
	uint32_t page_ring_pages;
	uint32_t page_ring_page_size;
	uint64_t flight_size; /* 0: none */
};

/* A validated description of a segment: the only source of sizes a reader
 * uses. */
struct orbit__seg_layout {
	uint32_t page_size;
	uint32_t ring_count;
	uint32_t slots_per_ring;
	uint32_t pid;
	uint32_t clock_source;
	uint64_t start_time;
	uint64_t rings_offset;
	uint64_t ring_stride;
	uint64_t total_size;
	uint64_t state_offset;
	uint64_t state_size;
	uint64_t pages_offset;
	uint32_t page_ring_count;
	uint32_t page_ring_pages;
	uint32_t page_ring_page_size;
	uint64_t page_ring_stride;
	uint64_t flight_offset;
	uint64_t flight_size;
	uint64_t created_ns;
	uint32_t uid;
	char comm[16]; /* NUL-terminated */
};

/* A reader's view of a segment: mapped (the agent, tests), or a private
 * copy of its header and one ring at a time (orbit-dump). */
struct orbit__segment {
	char name[96];
	uint8_t *base; /* whole segment; read-only for a reader */
	size_t size;
	struct orbit__seg_control *control; /* writable */
	struct orbit__seg_layout layout;
	int owner; /* created by this process */
	int fd;    /* the owner's descriptor, holding the liveness lock; -1 */
	/* The owner's mapping of a segment whose scope rings get their memory
	 * when a thread first takes one (agent/src/segment_create.h): which
	 * have it. 0 (every other mapping): all have. */
	int lazy;
	_Atomic uint8_t ring_ready[ORBIT_MAX_RINGS];
	_Atomic uint32_t no_room_said; /* the line for a ring without room */
};

/* Whether ring i's slots may be read through this mapping: in a lazy one,
 * not before its memory is reserved (a read fault on a tmpfs hole takes a
 * page, and with none left it is a SIGBUS). Acquire: pairs with the release
 * store in orbit__segment_ring_reserve, after its memory is there. */
static inline int orbit__segment_ring_usable(const struct orbit__segment *seg, uint32_t i)
{
	return !seg->lazy || atomic_load_explicit(&seg->ring_ready[i], memory_order_acquire);
}

/* Why a segment was refused, and where (for a reader's one line). */
struct orbit__seg_problem {
	uint64_t offset; /* of the field or byte at fault */
	char what[120];
};

/* Fills out from g: every offset and size (0, or ORBIT__SEG_EBADSEG when g
 * is outside the format's ranges). */
int orbit__segment_plan(const struct orbit__seg_geometry *g, struct orbit__seg_layout *out);

/* Validates a segment's first mapped_len bytes. Returns 0 and fills *out, or
 * ORBIT__SEG_ENOTINIT (magic not stored yet), _EBADSEG, _EVERSION or _ETRUNC;
 * with why non-NULL, says which field and its offset. Reads the header
 * once, into a private copy. */
int orbit__segment_validate(const void *base, size_t mapped_len, struct orbit__seg_layout *out,
                            struct orbit__seg_problem *why);

/* Maps the segment read-only (the control page writable). */
int orbit__segment_open(const char *name, struct orbit__segment *seg);
void orbit__segment_close(struct orbit__segment *seg);

/* Where ring i starts (its cursor), in a mapped or copied segment. The
 * type is orbit/internal.h's; format/ only computes the address. */
struct orbit__ring;
static inline struct orbit__ring *orbit__segment_ring(const struct orbit__segment *seg, uint32_t i)
{
	return (struct orbit__ring *)(seg->base + seg->layout.rings_offset +
	                              (uint64_t)i * seg->layout.ring_stride);
}

/* The ring of a thread: the tid times the 64-bit golden ratio, high bits,
 * scaled to ring_count. One rule for every thread. */
static inline uint32_t orbit__ring_of_tid(uint32_t tid, uint32_t ring_count)
{
	uint64_t h = (uint64_t)tid * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(((h >> 32) * ring_count) >> 32);
}

/* ---- where segments are, and whether their writers live ----------------
 *
 * A segment is the file /dev/shm/orbit-<pid>-<start>-<nonce>, <start> the
 * process's start time (/proc/<pid>/stat field 22), <nonce> 16 random hex
 * digits, created exclusively (O_EXCL) with mode 0600: a name cannot be
 * taken in advance. Version-1 segments were orbit-<pid>-<start>. Its owner
 * holds an exclusive flock(2) on it for as long as it lives (the lock goes
 * when the last thread of the process is gone, whatever killed it).
 */
#define ORBIT__SEG_DIR "/dev/shm"

/* Splits a file name of /dev/shm: 0 and pid, start (nonce: 1 with one),
 * or -1 when it is not a segment's name. */
int orbit__segment_name_parse(const char *file, uint32_t *pid, uint64_t *start, int *nonce);

/* The start time of process pid (/proc/PID/stat field 22), 0 if unknown. */
uint64_t orbit__process_start_time(pid_t pid);
/* 1 while process pid with that start time lives: its /proc/PID/stat is
 * there with that start time, and it is not a zombie, or it is a zombie
 * whose other threads still run (its main thread has exited). 0 when it is
 * not, -1 when it cannot be told (no /proc). */
int orbit__process_alive(pid_t pid, uint64_t start_time);
/* 1 if someone holds the owner's lock on the open segment fd (it lives),
 * 0 if not, -errno. Takes and drops a shared lock to ask. */
int orbit__segment_locked(int fd);

/* What a reader can tell of a segment's writer. */
enum orbit__seg_life {
	ORBIT__SEG_ALIVE = 1,    /* the lock is held, or /proc says it runs */
	ORBIT__SEG_DEAD = 0,     /* the lock is free and /proc says it is gone */
	ORBIT__SEG_UNKNOWN = -1, /* the lock is free, /proc cannot say */
};
int orbit__segment_life(int fd, uint32_t pid, uint64_t start);

/* One segment file of /dev/shm, as orbit__segment_list finds it. */
struct orbit__seg_entry {
	char file[96]; /* in /dev/shm */
	uint32_t pid;
	uint64_t start;
	int nonce;
	uint32_t uid;     /* owner of the file */
	uint64_t size;    /* of the file */
	uint64_t mtime_s; /* last change, seconds since 1970 */
};
/* Calls fn for each segment file of /dev/shm (names that parse, regular
 * files); stops early when fn returns non-zero. Returns 0 or -errno. */
int orbit__segment_list(int (*fn)(void *ctx, const struct orbit__seg_entry *e), void *ctx);

#endif
