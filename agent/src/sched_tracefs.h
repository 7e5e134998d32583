/*
 * sched_tracefs.h — the kernel's scheduling events for the traced process,
 * recorded through a tracefs instance of its own.
 *
 * What it does. orbit__sched_open creates
 *
 *	<tracefs>/instances/orbit-<pid>-<start time>-<n>
 *
 * (tracefs at /sys/kernel/tracing, else /sys/kernel/debug/tracing; it never
 * mounts anything) and configures only that instance: trace_clock mono (so
 * every event time is CLOCK_MONOTONIC ns, the capture's one timeline),
 * buffer_size_kb, options/overwrite 1 and options/event-fork 1,
 * set_event_pid = every thread of the process (threads created later are
 * added by the kernel through event-fork), and the events of
 * orbit__sched_events below. orbit__sched_read copies the instance's
 * per_cpu/cpuN/trace_pipe_raw pages, verbatim, into a callback, without ever
 * blocking. orbit__sched_close disables the instance and removes it.
 *
 * Guarantees (the tests cite them by number):
 *
 *  1. The system's tracing state is never touched: tracing_on, trace_clock,
 *     the top-level buffers, the events enabled outside the instance and
 *     every other instance stay as they were. Only files inside our own
 *     instance are written.
 *  2. No call blocks on the kernel's buffers: the trace_pipe_raw descriptors
 *     are O_NONBLOCK; an empty buffer is -EAGAIN, which ends that CPU's turn.
 *     No signal is sent, none is handled.
 *  3. Bounded resources: one descriptor for the instance directory plus one
 *     per CPU buffer (per_cpu/cpuN: the kernel's possible CPUs), held from
 *     open to close; one page buffer of page_size bytes; the formats text
 *     (a few KiB). The kernel holds cpu_count x buffer_kb KiB for the
 *     instance (256 KiB per CPU by default).
 *  4. Leftovers are removed: open first removes every instance named
 *     orbit-<pid>-<start>-<n> whose process is not alive (no such pid, a
 *     zombie, or another start time: a recycled pid). The kernel refuses to
 *     remove an instance while any of its files is open (EBUSY), so a live
 *     recorder's instance, which always holds its per-CPU descriptors, is
 *     never removed, even by a process in another pid namespace that
 *     misjudges its liveness. Instances of this same process (an image
 *     before exec) are tried too and go only when nobody holds them.
 *  5. Loss is counted, never hidden: every page read is checked for the
 *     kernel's lost-events bit and stored count (struct orbit__sched_cpu),
 *     and orbit__sched_stats reads the kernel's per-CPU overrun and dropped
 *     counters. Pages that orbit__sched_read hands out are never changed.
 *  6. Where tracefs cannot be used, open fails with a negative errno and a
 *     one-line reason (no line is printed: the caller prints it), and leaves
 *     no instance behind.
 *  7. Teardown is complete: close turns tracing off in the instance,
 *     disables its events, closes every descriptor and removes the
 *     directory. A forked child's copy of the handle closes only its
 *     descriptors: the instance belongs to the process that created it.
 *  8. It does not outlive what it traces for long: an exec of the process
 *     turns the instance off in the kernel (a traceoff trigger on
 *     sched_process_exec, for the process's own pid only: a child followed
 *     by event-fork execs freely; the event itself is filtered out and never
 *     recorded), so an image it execs into, traced or not, is not recorded
 *     by it; and every orbit_init, with ORBIT_SCHED or without, removes the
 *     leftovers of 4 (orbit__sched_remove_stale), so one of a killed or
 *     crashed process goes at the next traced start, or at orbit-dump
 *     --remove of its process (format/tracefs_leftovers.h, the one removal
 *     for both). Where the kernel has no such event or trigger, the
 *     instance records on until then.
 *
 * Threads. A handle is used by one thread at a time (the agent thread).
 * open and close take the mutex of the opener's list of live instances
 * (struct orbit__sched_live), so that the removal of leftovers never races
 * its own instance being created.
 *
 * Limits. The process's thread ids must be the kernel's: a process in a pid
 * namespace other than tracefs's gets -EOPNOTSUPP (its /proc/self/task ids
 * would filter other processes' threads). Processes forked by the traced
 * process are followed too (event-fork follows any clone), so their switches
 * appear in the pages; a reader tells threads from processes by the stream's
 * own thread ids.
 */
#ifndef ORBIT_AGENT_SCHED_TRACEFS_H
#define ORBIT_AGENT_SCHED_TRACEFS_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define ORBIT__SCHED_DEFAULT_BUFFER_KB 256u /* per CPU, in the kernel */
#define ORBIT__SCHED_MAX_BUFFER_KB 65536u
#define ORBIT__SCHED_MIN_BUFFER_KB 16u
#define ORBIT__SCHED_WHY 256u /* room for the reason an open failed */

/* The events the instance enables: system, name, required. Without a
 * required one open fails; optional ones missing from an old kernel are
 * skipped (and absent from the formats). */
#define ORBIT__SCHED_EVENTS(X)                                                                     \
	X("sched", "sched_switch", 1)                                                              \
	X("sched", "sched_waking", 0)                                                              \
	X("sched", "sched_wakeup_new", 0)                                                          \
	X("sched", "sched_process_fork", 0)                                                        \
	X("sched", "sched_process_exit", 0)                                                        \
	X("task", "task_rename", 0)

struct orbit__sched;

/*
 * The instances an opener (the agent: one per process) has made and not yet
 * removed, and what serialises their making and removal: a forked child
 * closes every descriptor it inherited on them, those of an open still
 * under way in another thread at the fork included (orbit__sched_forget).
 */
#define ORBIT__SCHED_LIVE_MAX 8
struct orbit__sched_live {
	pthread_mutex_t lock;                  /* open, close and the removal of leftovers */
	unsigned serial;                       /* numbers the instances; under lock */
	char path[ORBIT__SCHED_LIVE_MAX][512]; /* "" where free; under lock */
};
#define ORBIT__SCHED_LIVE_INIT                                                                     \
	{                                                                                          \
		.lock = PTHREAD_MUTEX_INITIALIZER                                                  \
	}

struct orbit__sched_params {
	uint32_t buffer_kb;  /* per-CPU buffer, KiB; 0 = the default */
	const char *tracefs; /* tracefs mount to use; NULL = look (see above) */
	/* The opener's live instances; NULL: the handle keeps a list of its
	 * own (an opener that never forks, a test). */
	struct orbit__sched_live *live;
};

/* One event's description, the kernel's text as tracefs gives it. */
struct orbit__sched_format {
	const char *system; /* "sched", "task" */
	const char *name;   /* "sched_switch", ... */
	const char *text;   /* events/<system>/<name>/format, whole */
	size_t len;
};

/* Everything a reader needs to decode the pages, to ship once per stream.
 * Valid until orbit__sched_close. */
struct orbit__sched_formats {
	const char *header_page; /* events/header_page */
	size_t header_page_len;
	const char *header_event; /* events/header_event */
	size_t header_event_len;
	const struct orbit__sched_format *events;
	uint32_t event_count;
	uint32_t cpu_count;   /* per-CPU buffers; pages carry cpu < cpu_count */
	uint32_t page_size;   /* bytes of every page read (the sub-buffer size) */
	uint32_t buffer_kb;   /* per-CPU buffer size as configured */
	const char *clock;    /* "mono" */
	const char *instance; /* the instance's name, e.g. orbit-123-456-0 */
	const uint32_t *tids; /* threads written to set_event_pid at open (the
	                         stream sends at most the first 4096:
	                         docs/format.md 4.10) */
	uint32_t tid_count;
	uint64_t since_ns; /* CLOCK_MONOTONIC right after tracing_on 1: from then
	                      on every switch and waking of the tids is recorded */
};

/* Per-CPU counts. The first group comes from the pages this handle read
 * (cumulative since open); the second from per_cpu/cpuN/stats, as the
 * kernel counts them since the instance was created. */
struct orbit__sched_cpu {
	uint64_t pages;         /* pages handed to the callback */
	uint64_t bytes;         /* their bytes */
	uint64_t data_bytes;    /* of them, record bytes (the pages' commit size):
	                           how much of the kernel's buffer they took */
	uint64_t flagged_pages; /* pages with the lost-events bit (commit bit 31) */
	uint64_t stored_lost;   /* sum of the lost counts stored on those pages */
	uint64_t bad_pages;     /* pages the page decoder rejects (never seen) */
	uint64_t read_errors;   /* read() failures other than EAGAIN/EINTR */
	int last_error;         /* the last one's -errno */
	/* per_cpu/cpuN/stats; filled by orbit__sched_stats */
	uint64_t entries;        /* "entries": events in the buffer now */
	uint64_t overrun;        /* "overrun": overwritten before being read */
	uint64_t commit_overrun; /* "commit overrun" */
	uint64_t dropped;        /* "dropped events" (overwrite off; 0 here) */
	uint64_t read_events;    /* "read events": events handed to readers */
};

/* Receives one page: `cpu` below cpu_count, `page` the bytes exactly as
 * trace_pipe_raw returned them (`len`, normally page_size). The bytes are
 * the handle's buffer: copy them before returning. A negative return stops
 * orbit__sched_read, which returns it; the page it refused is consumed (the
 * kernel has handed it out): the caller counts it as unsent. */
typedef int (*orbit__sched_page_fn)(void *ctx, uint32_t cpu, const uint8_t *page, size_t len);

/* Creates and starts the instance. Returns 0 and *out, or a negative errno
 * with a one-line reason in why (at most why_len bytes, NUL-terminated, no
 * newline, e.g. "cannot create /sys/kernel/tracing/instances/orbit-1-2-0:
 * Permission denied"). Errors: -ENOENT no tracefs mounted, -EACCES/-EPERM
 * no permission, -EMFILE/-ENFILE too few descriptors, -EOPNOTSUPP another
 * pid namespace or a kernel without a required event, -ENOMEM, or whatever
 * a tracefs write returned. */
int orbit__sched_open(const struct orbit__sched_params *p, struct orbit__sched **out, char *why,
                      size_t why_len);

/* Reads up to max_pages pages (0 = no limit), CPU by CPU, each CPU until
 * its buffer is empty, into fn. Never blocks. Returns the pages read, or
 * the first negative value fn returned. A read() error on one CPU (other
 * than EAGAIN/EINTR) ends that CPU's turn and is counted in its
 * read_errors; the other CPUs are read. Calls start where the last one
 * left off, so a budget never starves a CPU. Events not read stay in the
 * kernel's buffer for the next call. */
int orbit__sched_read(struct orbit__sched *s, uint32_t max_pages, orbit__sched_page_fn fn,
                      void *ctx);

/* The last orbit__sched_read: when it began (CLOCK_MONOTONIC ns), whether
 * it read every CPU's buffer until it was empty (no page budget cut it, no
 * read failed, its callback refused nothing), and the reads so far. What a
 * stream's KernelMark is made of (docs/format.md 4.10). */
void orbit__sched_last_read(const struct orbit__sched *s, uint64_t *began_ns, int *whole,
                            uint64_t *reads);

/* Turns tracing off in the instance (tracing_on 0): later events are not
 * recorded, what is buffered can still be read. For the final read. */
int orbit__sched_stop(struct orbit__sched *s);

const struct orbit__sched_formats *orbit__sched_formats(const struct orbit__sched *s);

/* The page counts of CPU `cpu` and, read now, its kernel stats (three
 * syscalls). Returns 0, -EINVAL for a cpu out of range, or the negative
 * errno of reading the stats (the page counts are filled anyway). */
int orbit__sched_stats(struct orbit__sched *s, uint32_t cpu, struct orbit__sched_cpu *out);

/* The page counts alone (the first group of struct orbit__sched_cpu; the
 * kernel's are zero): no syscall. -EINVAL for a cpu out of range. */
int orbit__sched_pages(const struct orbit__sched *s, uint32_t cpu, struct orbit__sched_cpu *out);

/* Tears down (guarantee 7) and frees. NULL is ignored. */
void orbit__sched_close(struct orbit__sched *s);

/* In a forked child (a pthread_atfork child handler): closes the child's
 * copies of every descriptor on an instance of live that the parent made
 * (those of an open still under way in another thread at the fork too,
 * found through /proc/self/fd) and frees the handle, without waiting for a
 * lock the parent's agent thread may have held at the fork (live's is made
 * anew) and without touching the instance, which stays the parent's
 * (guarantee 7). live is empty for the child then. s may be NULL. */
void orbit__sched_forget(struct orbit__sched_live *live, struct orbit__sched *s);

/* Removes the leftover instances of guarantee 4 under tracefs (NULL: look
 * as open does), under live's lock (NULL: none). Returns how many it
 * removed, or a negative errno if the instances directory cannot be read.
 * open calls it. */
int orbit__sched_remove_stale(struct orbit__sched_live *live, const char *tracefs);

/* The tracefs mount open would use: /sys/kernel/tracing or
 * /sys/kernel/debug/tracing if it holds a tracefs, else NULL. */
const char *orbit__sched_tracefs(void);

#endif
