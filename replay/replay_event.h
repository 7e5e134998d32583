/*
 * replay_event.h — the events every exporter sees (replay_export.h), as the
 * core hands them over: filtered, names interned, with their thread and
 * stream. One struct per kind of event; each carries a flags word, and a
 * new per-event column is one field here, filled in one place of the core
 * (replay_dispatch.c), written by each exporter that wants it.
 *
 * Pointers in an event are valid during the callback only, except where a
 * field says otherwise. Times are CLOCK_MONOTONIC ns, as in the capture.
 */
#ifndef ORBIT_REPLAY_EVENT_H
#define ORBIT_REPLAY_EVENT_H

#include <stddef.h>
#include <stdint.h>

struct orbit_rp_stream;
struct orbit_rp_thread;

/* Bits of the flags word of every event. */
enum orbit_rp_flag {
	ORBIT_RP_ASYNC = 1u << 0,           /* span: an async span, not a scope */
	ORBIT_RP_UNFINISHED = 1u << 1,      /* span: its stop never came; end is the latest
	                                     * time it is known open (reconstruct.h) */
	ORBIT_RP_NAME_INCOMPLETE = 1u << 2, /* a continuation of the name was lost */
	ORBIT_RP_ATTRS = 1u << 3,           /* color and group were given (..._WITH_COLOR) */
	ORBIT_RP_MARKER = 1u << 4,          /* line: a marker; text is its bytes */
	ORBIT_RP_LOG_RING = 1u << 5,        /* loss mark: of a page ring (log lines) */
	ORBIT_RP_TIME_UNTRUSTED = 1u << 6,  /* span, value: the agent could not trust the
	                                     * conversion of a time (record flag bit 1) */
	ORBIT_RP_OPEN_AT_END = 1u << 7,     /* scope: unfinished, open when the input ended
	                                     * (a crash, a kill, a dump): end is the last
	                                     * time it was known open */
};

/* Where an event was written in the program's source. The
 * pointers live for the whole run, so a held event may keep them. */
struct orbit_rp_location {
	const char *file, *function; /* not NUL-terminated */
	uint32_t file_len, function_len;
	uint32_t line;
	uint32_t id;       /* interned: one per distinct (file, line, function) of the run */
	const char *label; /* "file:line function", NUL-terminated */
	uint32_t label_len;
};

/* Where a scope's time went, from the kernel's sched events.
 * The tie order (replay_order.c) copies it when it holds a scope. */
struct orbit_rp_sched_time {
	uint64_t oncpu_ns, runnable_ns, blocked_ns;
};

/* A scope or an async span (ORBIT_RP_ASYNC). */
struct orbit_rp_span {
	const struct orbit_rp_stream *stream;
	struct orbit_rp_thread *thread; /* of the start; NULL when out of memory */
	uint32_t pid, tid, end_tid;     /* end_tid: the thread of an async span's stop */
	uint32_t depth;                 /* scopes: the thread's scopes open at its start */
	uint32_t flags;                 /* enum orbit_rp_flag */
	uint32_t color;                 /* 0xRRGGBBAA, with ORBIT_RP_ATTRS */
	uint64_t group;                 /* group id, with ORBIT_RP_ATTRS */
	uint64_t id;                    /* scope id, or the async span's id */
	uint64_t start, end;
	uint64_t self;    /* scopes: duration minus the children's (replay_stats.c) */
	uint32_t name_id; /* interned name (struct orbit_rp_names); ORBIT_RP_NAME_NONE: none */
	uint32_t name_len;
	const char *name; /* not NUL-terminated; with a name id it lives for the run */
	const struct orbit_rp_location *loc;     /* NULL: not known */
	const struct orbit_rp_sched_time *sched; /* NULL: not known */
};

/* A value sample (ORBIT_INT ... ORBIT_DOUBLE). Names are not interned. */
struct orbit_rp_value {
	const struct orbit_rp_stream *stream;
	struct orbit_rp_thread *thread;
	uint32_t pid, tid;
	uint32_t flags;
	uint32_t color;
	uint64_t group;
	uint64_t time;
	uint8_t kind; /* ORBIT_REC_INT ... ORBIT_REC_DOUBLE (format/record.h) */
	uint64_t bits;
	const char *name;
	uint32_t name_len;
	const struct orbit_rp_location *loc;
};

/* A log line, or a marker (ORBIT_RP_MARKER). */
struct orbit_rp_line {
	const struct orbit_rp_stream *stream;
	struct orbit_rp_thread *thread;
	uint32_t pid, tid;
	uint32_t flags;
	uint64_t time;
	const char *text; /* a line: up to its first NUL; a marker: its bytes */
	uint32_t len;
	const struct orbit_rp_location *loc;
};

/* Records lost on one ring, where they were lost. For a scope ring: a
 * gap in the ring's claims between two batches (from: the last record
 * time read from the ring before it, or the stream's start; to: the first
 * record time after it), or at the stream's end the claims that never came
 * (to == from). For a page ring (ORBIT_RP_LOG_RING), when a PageLoss
 * raised the ring's count: from == to, the last log time read from it. A
 * ring holds the records of several threads, so a loss belongs to the
 * ring, not to one thread. Not filtered. */
struct orbit_rp_loss_mark {
	const struct orbit_rp_stream *stream;
	uint32_t ring;
	uint32_t flags; /* ORBIT_RP_LOG_RING */
	uint64_t from, to;
	uint64_t count; /* records lost there */
};

/* The kernel's events on one KernelPage (docs/format.md 4.10), decoded
 * with the formats of the stream's Handshake (replay_sched.h), in page
 * order; those outside --from/--to are left out (the other filters do
 * not apply: an event concerns two threads, or none of the process's). */
struct orbit__rp_sched_event;
struct orbit__rp_sched_page;
struct orbit_rp_kernel_page {
	const struct orbit_rp_stream *stream;
	uint32_t cpu;
	const struct orbit__rp_sched_page *info; /* the page: its loss bit, counts */
	const struct orbit__rp_sched_event *events;
	size_t n;
};

#endif
