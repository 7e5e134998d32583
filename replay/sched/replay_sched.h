/*
 * replay_sched.h — kernel scheduling in orbit-replay: the pages
 * the agent recorded from its tracefs instance (agent/src/sched_tracefs.h),
 * decoded with the event descriptions shipped beside them, and the states of
 * every thread over time.
 *
 * Decoding (replay_sched_decode.c). The capture carries the kernel's own
 * `format` text of each event and `header_page`; libtraceevent parses them
 * (tep_parse_header_page, tep_parse_event), so field offsets, sizes and
 * signedness always come from the capture, never from this source. Pages
 * are walked by format/ftrace_page.c, the bounds-checked page parser that
 * `--pages` uses (it decodes as libtraceevent's kbuffer does), and each
 * field is read only after its offset and size are checked against the
 * record, since libtraceevent's field readers trust the record. Records of
 * events we do not know are counted and skipped.
 *
 * States (replay_sched_states.c). Events are collected in any order, then
 * sorted by time (ties keep the order they were added in, so one CPU's
 * events stay in page order) and run through one state machine per thread:
 *
 *	sched_switch      prev: runnable if its prev_state's low byte is 0
 *	                  (preempted, "R"/"R+"), dead if it is X or Z, else
 *	                  blocked with that state (S, D, ...); next: running
 *	                  on the event's CPU
 *	sched_waking      a blocked (or unknown) thread becomes runnable; the
 *	                  blocked span records the waker (common_pid) and
 *	                  whether it woke from interrupt context. A waking that
 *	                  arrives while the thread still runs (it has not
 *	                  switched out yet) is kept and applied to that
 *	                  switch-out: the thread goes runnable, not blocked
 *	sched_wakeup_new  a new thread becomes runnable
 *	sched_process_fork, task_rename, and the comm fields of the others:
 *	                  thread names and creation; sched_process_exit: end
 *	before the first  unknown; for a thread recorded from the start
 *	event             (orbit__rp_sched_recording), what its first event
 *	                  implies, back to the start
 *	lost events       a page with the lost-events bit on CPU c: the events
 *	                  between the last one read on c and that page are
 *	                  missing, so every thread that may have changed state
 *	                  on c in that window (running on c, runnable, blocked,
 *	                  or already unknown) is unknown from the window's start
 *	                  (or its own last event, if later) until its next event
 *
 * A thread's spans are sorted and contiguous, each lasting until the next
 * one starts (the last until the timeline's end), and each carries the
 * running, runnable and blocked nanoseconds of all the spans before it, so
 * the times of any [start, end) are two searches and a subtraction:
 * O(log spans) per scope whatever its length, O(1) amortised for scopes in
 * start order through a cursor.
 *
 * Marks (KernelMark, docs/format.md 4.10). A stream of protocol version 3
 * says, pass after pass, up to which time its kernel events are complete.
 * At each mark the events up to it are run through the state machines at
 * once, and the states up to it are final: later events cannot change them,
 * because an event is never taken as earlier than the last mark before its
 * page (a late one is counted, `late`, and taken at that mark), and what an
 * event implies about the past (a lost window, a switch never seen: the
 * thread unknown since its last event) reaches back no further than the
 * last mark at or before it. So a reader can ask for a scope's times once a
 * mark has passed its end (orbit__rp_sched_final), with the answer the
 * finished timeline gives, and the events run are freed as it goes. One
 * exception holds a listed thread's answers longer: what it did from the
 * start of recording to its first event is known only at that event. A
 * timeline without marks runs everything at finish, as it always did.
 *
 * Thread 0 is each CPU's idle task and is not tracked. Threads that are not
 * the traced process's appear too (the other side of a switch, wakers), with
 * only the spans those events show; look up the process's own threads.
 */
#ifndef ORBIT_REPLAY_SCHED_H
#define ORBIT_REPLAY_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h" /* the format's limits */

#define ORBIT__RP_SCHED_COMM 16                              /* comm bytes, NUL included */
#define ORBIT__RP_SCHED_MAX_TEXT ORBIT_KERNEL_MAX_FORMAT     /* longest format text */
#define ORBIT__RP_SCHED_MAX_FORMATS ORBIT_KERNEL_MAX_FORMATS /* formats per decoder */
#define ORBIT__RP_SCHED_MAX_CPUS ORBIT_KERNEL_MAX_CPUS

/* ---- decoding ---- */

enum orbit__rp_sched_kind {
	ORBIT__RP_SCHED_SWITCH = 1,
	ORBIT__RP_SCHED_WAKING,
	ORBIT__RP_SCHED_WAKEUP_NEW,
	ORBIT__RP_SCHED_FORK,
	ORBIT__RP_SCHED_EXIT,
	ORBIT__RP_SCHED_RENAME,
	ORBIT__RP_SCHED_KINDS
};

/* One decoded event. Numbers absent from the event's format are 0 (pids,
 * priorities, states) and strings are empty; the required fields (see
 * orbit__rp_sched_ready) are always there. Strings are NUL-terminated, cut
 * at ORBIT__RP_SCHED_COMM - 1 bytes. */
struct orbit__rp_sched_event {
	uint64_t time;        /* CLOCK_MONOTONIC ns */
	uint32_t cpu;         /* the page's CPU */
	uint16_t kind;        /* enum orbit__rp_sched_kind */
	uint16_t type;        /* common_type: the event's id in its format */
	int32_t common_pid;   /* the thread the event happened in (WAKING: the waker) */
	uint8_t common_flags; /* irqs-off, hardirq (0x08), softirq (0x10), ... */
	union {
		struct { /* ORBIT__RP_SCHED_SWITCH */
			int32_t prev_pid, prev_prio, next_pid, next_prio;
			int64_t prev_state;
			char prev_comm[ORBIT__RP_SCHED_COMM], next_comm[ORBIT__RP_SCHED_COMM];
		} sw;
		struct { /* WAKING, WAKEUP_NEW */
			int32_t pid, prio, target_cpu;
			char comm[ORBIT__RP_SCHED_COMM];
		} wake;
		struct { /* FORK */
			int32_t parent_pid, child_pid;
			char parent_comm[ORBIT__RP_SCHED_COMM], child_comm[ORBIT__RP_SCHED_COMM];
		} fork;
		struct { /* EXIT */
			int32_t pid, prio;
			char comm[ORBIT__RP_SCHED_COMM];
		} exit;
		struct { /* RENAME */
			int32_t pid;
			char oldcomm[ORBIT__RP_SCHED_COMM], newcomm[ORBIT__RP_SCHED_COMM];
		} rename;
	} u;
};

/* What one page held, besides its events. */
struct orbit__rp_sched_page {
	uint64_t timestamp;    /* the page header's */
	uint64_t first, last;  /* times of its first and last data record */
	uint8_t missed;        /* lost-events bit: events lost before this page */
	uint8_t missed_stored; /* ... and their count is missed_count */
	uint64_t missed_count;
	uint32_t records;       /* data records */
	uint32_t events;        /* of them, events handed to the callback */
	uint32_t other;         /* of an event this decoder does not decode */
	uint32_t short_records; /* too short for their fields: skipped */
	int err;                /* 0, or the ORBIT__FTRACE_E* code that ended the page */
	uint32_t err_off;       /* its byte offset */
};

struct orbit__rp_sched_decoder;
struct tep_handle;

/* Returns 0 to go on, or a negative value that stops the page. */
typedef int (*orbit__rp_sched_event_fn)(void *ctx, const struct orbit__rp_sched_event *ev);

struct orbit__rp_sched_decoder *orbit__rp_sched_decoder_new(void);
void orbit__rp_sched_decoder_free(struct orbit__rp_sched_decoder *d);

/* The events/header_page text. Returns 0, -E2BIG (over MAX_TEXT), -EINVAL
 * (libtraceevent finds no page layout in it), -ENOMEM. */
int orbit__rp_sched_header_page(struct orbit__rp_sched_decoder *d, const char *text, size_t len);

/* One event's format text and its system ("sched"). Returns 0 (also for an
 * event the decoder does not use: it is known, not decoded), -E2BIG,
 * -EINVAL (libtraceevent rejects it, or ran out of memory parsing it: it
 * does not tell the two apart), -ENOSPC (MAX_FORMATS reached), -ENOMEM. */
int orbit__rp_sched_format(struct orbit__rp_sched_decoder *d, const char *system, const char *text,
                           size_t len);

/* Resolves the events to decode; call after the last format. Returns 0, or
 * -ENOENT without header_page or sched_switch, -EPROTO if the pages are not
 * the 64-bit little-endian layout or a field the decoder needs is missing
 * or has an unusable type or size (events other than sched_switch with such
 * a field are dropped from decoding instead, and reported by
 * orbit__rp_sched_decodes). */
int orbit__rp_sched_ready(struct orbit__rp_sched_decoder *d);

/* Whether events of this kind will be decoded (after ready). */
int orbit__rp_sched_decodes(const struct orbit__rp_sched_decoder *d, enum orbit__rp_sched_kind k);

/* Decodes one page of CPU `cpu` (`len` bytes), calling fn for every event
 * of a decoded kind, in page order; fills *info (may be NULL). Returns the
 * events handed out, an ORBIT__FTRACE_E* code for a malformed page (the
 * events before the fault were handed out), -EINVAL before ready, or what
 * fn returned if negative. */
int orbit__rp_sched_decode_page(struct orbit__rp_sched_decoder *d, uint32_t cpu,
                                const uint8_t *page, size_t len, orbit__rp_sched_event_fn fn,
                                void *ctx, struct orbit__rp_sched_page *info);

/* libtraceevent's handle holding the formats (their fields: it is given
 * no print formats, so tep_print_event prints no event text with it). */
struct tep_handle *orbit__rp_sched_tep(const struct orbit__rp_sched_decoder *d);

/* ---- states ---- */

enum orbit__rp_sched_state {
	ORBIT__RP_SCHED_UNKNOWN = 0, /* before the first event, after a gap */
	ORBIT__RP_SCHED_RUNNING,     /* on `cpu` */
	ORBIT__RP_SCHED_RUNNABLE,    /* preempted or woken, waiting for a CPU */
	ORBIT__RP_SCHED_BLOCKED,     /* sleeping: `kstate`, woken by `waker` */
	ORBIT__RP_SCHED_DEAD,        /* after its last switch-out */
};

#define ORBIT__RP_SCHED_WAKER_IRQ 1u /* the waking ran in hard or soft irq context */

struct orbit__rp_sched_span {
	uint64_t start;      /* ns; lasts until the next span's start */
	uint64_t before[3];  /* running, runnable, blocked ns in the spans before */
	int32_t waker;       /* BLOCKED: tid that woke it, -1 not known (RUNNABLE: the same) */
	uint32_t kstate;     /* BLOCKED: the kernel's prev_state; RUNNABLE: it, if preempted */
	uint16_t cpu;        /* RUNNING: the CPU; RUNNABLE after a preemption: where */
	uint8_t state;       /* enum orbit__rp_sched_state */
	uint8_t waker_flags; /* ORBIT__RP_SCHED_WAKER_* */
};

struct orbit__rp_sched_thread {
	int32_t tid;
	char comm[ORBIT__RP_SCHED_COMM]; /* the latest name an event gave it */
	uint64_t created;                /* fork or wakeup_new time; 0 not seen */
	uint64_t exited;                 /* sched_process_exit time; 0 not seen */
	uint32_t span_count;
	struct orbit__rp_sched_span *spans; /* sorted by start */
	uint64_t end;                       /* the timeline's end (so far: the last mark) */
	/* the state machine's, while building */
	uint64_t first_time; /* its first item's, and what that said of it */
	uint16_t first_cpu;
	uint8_t first_role;
	uint8_t listed; /* recorded from the start (orbit__rp_sched_recording) */
	int32_t pending_waker;
	uint8_t pending_flags;
	uint8_t has_pending;
	uint32_t span_cap;
	uint64_t comm_time;
	uint64_t last_pos;  /* position of its last item + 1; 0 none */
	uint64_t last_time; /* that item's time */
	/* What it did from the recording's start to its first item, once known
	 * and until finish puts it in spans[0]: bf_state (0 none) on bf_cpu. */
	uint8_t bf_decided;
	uint8_t bf_state;
	uint16_t bf_cpu;
	uint64_t bf_from;
};

struct orbit__rp_sched_times {
	uint64_t oncpu_ns, runnable_ns, blocked_ns;
	uint64_t unknown_ns; /* the rest of the interval: no data, or dead */
};

struct orbit__rp_sched_stats {
	uint64_t events;          /* events added */
	uint64_t gaps;            /* lost-events windows (flagged pages) */
	uint64_t lost_known;      /* sum of the counts those pages stored */
	uint64_t lost_unknown;    /* flagged pages without a stored count */
	uint64_t unseen_switches; /* switches the events imply and the pages lack */
	uint64_t pages, bad_pages, short_records, other_records;
	uint64_t late; /* events older than the mark before their page: taken at it */
};

struct orbit__rp_sched_timeline;

struct orbit__rp_sched_timeline *orbit__rp_sched_timeline_new(void);
void orbit__rp_sched_timeline_free(struct orbit__rp_sched_timeline *tl);

/* Adds one event (any order). Returns 0 or -ENOMEM. */
int orbit__rp_sched_add(struct orbit__rp_sched_timeline *tl,
                        const struct orbit__rp_sched_event *ev);

/* Events of CPU `cpu` were lost in [since, until]: the window of a page
 * whose lost-events bit is set (`count` of them, or -1 unknown). */
int orbit__rp_sched_add_gap(struct orbit__rp_sched_timeline *tl, uint32_t cpu, uint64_t since,
                            uint64_t until, int64_t count);

/* Decodes a page with d and adds its events and, if it is flagged, the gap
 * since the last event this timeline got from that CPU. Pages of one CPU
 * must come in the order they were read. Returns what
 * orbit__rp_sched_decode_page returned. */
int orbit__rp_sched_add_page(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_decoder *d,
                             uint32_t cpu, const uint8_t *page, size_t len);

/* The recording began at `since` (CLOCK_MONOTONIC ns) with every switch
 * and waking of the n threads `tids` recorded from then on (those the
 * agent listed in set_event_pid). finish then knows what such a thread was
 * doing from `since` to its first event, when no events were lost before
 * that: running there if the event shows it running (switched out, or in
 * its context), runnable if it is switched in, blocked if it is woken; a
 * thread created after `since` stays unknown before its creation. Call
 * before finish; -ENOMEM or 0. */
int orbit__rp_sched_recording(struct orbit__rp_sched_timeline *tl, uint64_t since,
                              const uint32_t *tids, size_t n);

/* A KernelMark: every event at or before `complete` has been added (or its
 * loss flagged on a page added). Runs them, and makes the states up to it
 * final (see the opening comment). Marks below the last one are ignored.
 * Returns 0 or -ENOMEM. */
int orbit__rp_sched_mark(struct orbit__rp_sched_timeline *tl, uint64_t complete);

/* Up to when the states are final: the last mark, UINT64_MAX once
 * finished (0: not yet at all). */
uint64_t orbit__rp_sched_complete(const struct orbit__rp_sched_timeline *tl);

/* Listed threads whose time before their first item is not known yet: 0
 * when orbit__rp_sched_final depends on t alone. */
uint32_t orbit__rp_sched_undecided(const struct orbit__rp_sched_timeline *tl);

/* Whether thread tid's times in any interval ending at or before t are
 * final: t at or before the last mark (the timeline finished: always), and,
 * for a listed thread, its first item run or t not after the recording's
 * start. */
int orbit__rp_sched_final(const struct orbit__rp_sched_timeline *tl, int32_t tid, uint64_t t);

/* Runs what is left and builds the spans. `end` is where the last spans
 * stop (0: the last event's or the last mark's time, whichever is later).
 * After it, only the look-ups below are allowed. Returns 0 or -ENOMEM. */
int orbit__rp_sched_finish(struct orbit__rp_sched_timeline *tl, uint64_t end);

/* The thread, or NULL if no event names it (yet). Its address stays valid
 * until the timeline is freed, and its times up to the last mark may be
 * asked at any time (orbit__rp_sched_final). */
const struct orbit__rp_sched_thread *
orbit__rp_sched_thread(const struct orbit__rp_sched_timeline *tl, int32_t tid);

/* Every thread, sorted by tid (after finish; before it, none). */
const struct orbit__rp_sched_thread *const *
orbit__rp_sched_threads(const struct orbit__rp_sched_timeline *tl, uint32_t *count);

/* On-CPU, runnable, blocked and unknown ns of th in [start, end); all 0 for
 * NULL or an empty interval. */
void orbit__rp_sched_times(const struct orbit__rp_sched_thread *th, uint64_t start, uint64_t end,
                           struct orbit__rp_sched_times *out);

/* The same for many intervals of one thread: a cursor remembers where the
 * last interval started and searches from there (galloping, O(log
 * distance)), so intervals given in start order, as a thread's scopes come,
 * cost O(1) amortised, and any order stays correct. */
struct orbit__rp_sched_cursor {
	const struct orbit__rp_sched_thread *th;
	uint32_t at;
};

void orbit__rp_sched_cursor_init(struct orbit__rp_sched_cursor *c,
                                 const struct orbit__rp_sched_thread *th);
void orbit__rp_sched_cursor_times(struct orbit__rp_sched_cursor *c, uint64_t start, uint64_t end,
                                  struct orbit__rp_sched_times *out);

/* The span holding time t, or NULL before the first (after finish: before
 * it, without what a listed thread did before its first item). */
const struct orbit__rp_sched_span *orbit__rp_sched_span_at(const struct orbit__rp_sched_thread *th,
                                                           uint64_t t);

const struct orbit__rp_sched_stats *
orbit__rp_sched_stats(const struct orbit__rp_sched_timeline *tl);

#endif
