/*
 * replay_internal.h — the parts of orbit-replay below the core: buffered
 * output and escaping (replay_out.h), interned names (replay_names.c),
 * histograms (replay_hist.c), the tie order (replay_order.c), threads
 * (replay_threads.c) and statistics (replay_stats.c). Prefix orbit__rp_.
 *
 * Data flow (replay_run.c drives it):
 *
 *   capture files --(merge by time, replay_merge.c)--> packets
 *   packets --(replay_packets.c)--> per stream: loss accounting
 *       (replay_stream.c), reconstructor (format/reconstruct.h),
 *       log pages (replay_log.c)
 *   events, log lines --(replay_dispatch.c)--> filters --> statistics
 *       --> every exporter's callbacks (replay_export.h)
 */
#ifndef ORBIT_REPLAY_INTERNAL_H
#define ORBIT_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "replay.h"
#include "replay_event.h"
#include "replay_out.h"
#include "replay_sched.h"
#include "replay_values.h"

/* ---- names: interned once, referred to by id ---- */

#define ORBIT_RP_NAME_NONE UINT32_MAX
#define ORBIT_RP_MAX_NAMES (1u << 18)
#define ORBIT_RP_MAX_NAME_BYTES (32u << 20)

struct orbit_rp_names {
	struct orbit_rp_name_slot *slots;
	size_t mask;
	struct orbit_rp_name *ents;
	uint32_t n, cap;
	struct orbit_rp_arena *arena;
	uint64_t bytes;
	uint64_t refused; /* lookups of new names past the limits */
};

struct orbit_rp_name {
	const char *bytes;
	uint32_t len;
};

/* The id of a name (new names are added), or ORBIT_RP_NAME_NONE past the
 * limits or out of memory. */
uint32_t orbit__rp_names_intern(struct orbit_rp_names *t, const char *s, size_t len);
void orbit__rp_names_free(struct orbit_rp_names *t);

static inline const struct orbit_rp_name *orbit__rp_name(const struct orbit_rp_names *t,
                                                         uint32_t id)
{
	return &t->ents[id];
}

/* ---- source locations: interned once (replay_locations.c) ---- */

struct orbit_rp_location;
struct orbit_rp_locations {
	struct orbit_rp_names keys;     /* (file, line, function) keys */
	struct orbit_rp_location **all; /* by id */
	uint32_t cap, n;                /* n: ids given */
};

/* The run's one location for (file, line, function), added if new; NULL
 * past the limits or out of memory. */
const struct orbit_rp_location *orbit__rp_location(struct orbit_rp_locations *t, const char *file,
                                                   size_t flen, uint32_t line, const char *fn,
                                                   size_t fnlen);
void orbit__rp_locations_free(struct orbit_rp_locations *t);

/* ---- log-bucketed histograms ---- */

#define ORBIT_RP_HIST_SUB 6u /* 64 buckets per power of two: under 0.8 % error */
#define ORBIT_RP_HIST_BUCKETS ((64u - ORBIT_RP_HIST_SUB + 1u) << ORBIT_RP_HIST_SUB)
#define ORBIT_RP_HIST_INLINE 4u

struct orbit_rp_hist {
	uint32_t lo; /* first bucket held */
	uint32_t n;  /* buckets held; 0 while the values are inline */
	uint32_t *counts;
	uint32_t ninline;
	uint8_t approx; /* memory budget or a count saturated: clamped */
	uint64_t inl[ORBIT_RP_HIST_INLINE];
};

/* Adds v; *budget is the bytes the caller still allows histograms to take. */
void orbit__rp_hist_add(struct orbit_rp_hist *h, uint64_t v, int64_t *budget);
/* The p-th percentile (0 < p <= 100) by nearest rank, within 1 % (exact
 * while the values are inline); min and max clamp the estimate. */
uint64_t orbit__rp_hist_pct(const struct orbit_rp_hist *h, double p, uint64_t min, uint64_t max);
void orbit__rp_hist_free(struct orbit_rp_hist *h);
static inline uint32_t orbit__rp_hist_bucket(uint64_t v)
{
	if (v < (1u << ORBIT_RP_HIST_SUB))
		return (uint32_t)v;
	unsigned msb = 63u - (unsigned)__builtin_clzll(v);
	unsigned shift = msb - ORBIT_RP_HIST_SUB;
	uint32_t sub = (uint32_t)(v >> shift) & ((1u << ORBIT_RP_HIST_SUB) - 1);
	return ((shift + 1u) << ORBIT_RP_HIST_SUB) | sub;
}
void orbit__rp_hist_range(uint32_t b, uint64_t *lo, uint64_t *hi);

/* ---- tie ordering for the exporters (replay_order.c) ---- */

struct orbit_rp_item;
struct orbit_rp_group;

struct orbit_rp_order {
	struct orbit_rp_item *items;
	uint32_t n, cap;
	struct orbit_rp_group *groups;
	uint32_t ng, gcap;
};

#define ORBIT_RP_HOLD_MAX 4096u     /* held items per thread before giving up on ties */
#define ORBIT_RP_HELD_TOTAL 262144u /* held items of all threads together */

typedef void (*orbit_rp_emit_fn)(void *ctx, const struct orbit_rp_span *s, int end);
void orbit__rp_order_scope(struct orbit_rp_order *o, const struct orbit_rp_span *s,
                           orbit_rp_emit_fn fn, void *ctx);
void orbit__rp_order_flush(struct orbit_rp_order *o, orbit_rp_emit_fn fn, void *ctx);
void orbit__rp_order_free(struct orbit_rp_order *o);

/* ---- threads ---- */

enum orbit_rp_name_source {
	ORBIT_RP_NAMED_NONE = 0,
	ORBIT_RP_NAMED_OS = 1,     /* ThreadName packet: comm */
	ORBIT_RP_NAMED_RECORD = 2, /* ORBIT_THREAD_NAME in the program */
};

#define ORBIT_RP_MAX_THREADS (1u << 16)
#define ORBIT_RP_EXPORTS 8u /* exporters at work in one run, at most */

struct orbit_rp_thread {
	uint32_t pid, tid;
	char *name;
	uint32_t name_len;
	uint8_t name_source;
	uint32_t name_version; /* bumped by every change */
	const void *stream;    /* last stream that counted it */
	uint64_t scopes, busy_ns;
	uint64_t *child; /* time of finished children, by depth (self time) */
	uint32_t nchild;
	struct orbit_rp_order order;
	uint64_t export[ORBIT_RP_EXPORTS]; /* a word for each exporter's own use */
	const void *sched_tl;              /* the timeline sched_cur is a cursor of */
	struct orbit__rp_sched_cursor sched_cur;
};

struct orbit_rp_threads {
	struct orbit_rp_thread **slots;
	size_t mask;
	struct orbit_rp_thread **all; /* in creation order */
	uint32_t n, cap;
	struct orbit_rp_thread *last;
	struct orbit_rp_thread *overflow; /* past ORBIT_RP_MAX_THREADS */
};

struct orbit_rp_thread *orbit__rp_thread(struct orbit_rp_threads *t, uint32_t pid, uint32_t tid);
/* Sets the name unless one from a stronger source is already there. */
void orbit__rp_thread_name(struct orbit_rp_thread *t, const char *name, size_t len, int source);
void orbit__rp_threads_free(struct orbit_rp_threads *t);

/* ---- statistics ---- */

struct orbit_rp_stat {
	uint64_t count, total, self, max, min;
	uint64_t unfinished;
	struct orbit_rp_hist hist;
	uint32_t name1; /* by location: the id + 1 of the first name seen there */
	/* scopes whose time the kernel's scheduling splits (span.sched): how
	 * many, their total time, and its split; the rest of sched_total is
	 * unknown (no events there, or lost) */
	uint64_t sched_count, sched_total, oncpu, runnable, blocked;
};

struct orbit_rp_stats {
	struct orbit_rp_stat *scope, *async; /* by name id */
	uint32_t nscope, nasync;
	struct orbit_rp_stat other_scope, other_async; /* names past the limit */
	struct orbit_rp_stat *loc_scope, *loc_async;   /* by location id (--by location) */
	uint32_t nloc_scope, nloc_async;
	struct orbit_rp_stat no_loc_scope, no_loc_async; /* spans without a location */
	int by_location;                                 /* keep the loc_ tables */
	int64_t hist_budget;
	uint64_t values, logs;
	struct orbit_rp_values vals; /* the values that passed, by process, thread and name */
};

#define ORBIT_RP_HIST_BUDGET (96ll << 20)
/* Self time of a scope of thread t that just ended (see replay_stats.c);
 * call for every scope, filtered or not, in the order they end. */
uint64_t orbit__rp_self_time(struct orbit_rp_thread *t, uint32_t depth, uint64_t dur,
                             int unfinished);
/* Counts a span that passed the filters. */
void orbit__rp_stats_span(struct orbit_rp_stats *st, const struct orbit_rp_span *s);
void orbit__rp_stats_free(struct orbit_rp_stats *st);

/* One row of a table by name: its statistics and its name (by location:
 * the location's label, and the first name seen there in name). */
struct orbit_rp_row {
	const struct orbit_rp_stat *st;
	const char *name;
	size_t len;
	const char *label; /* by location; NULL by name */
	size_t label_len;
	const struct orbit_rp_location *loc; /* by location; NULL: none, or by name */
};
/* The names with something to show (scopes, or async spans), sorted by
 * key, largest first; *n rows, to free. NULL when out of memory. */
struct orbit_rp_row *orbit__rp_stats_rows(const struct orbit_rp_stats *st,
                                          const struct orbit_rp_names *names, int async,
                                          enum orbit_replay_sort key, size_t *n);
/* The same by location (--by location): one row per source location,
 * and one for the spans without one. */
struct orbit_rp_row *orbit__rp_stats_loc_rows(const struct orbit_rp_stats *st,
                                              const struct orbit_rp_locations *locs,
                                              const struct orbit_rp_names *names, int async,
                                              enum orbit_replay_sort key, size_t *n);
/* How many of n rows a table shows (--top; 0: all). */
static inline size_t orbit__rp_top(const struct orbit_replay_options *o, size_t n)
{
	return o->top && o->top < n ? o->top : n;
}
/* The threads that had events, busiest first; *n of them, to free. */
struct orbit_rp_thread **orbit__rp_threads_by_busy(const struct orbit_rp_threads *t, size_t *n);

#endif
