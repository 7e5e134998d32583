/*
 * replay_internal.h — what the replay modules share. Prefix orbit__rp_.
 *
 * Data flow (replay_core.c reads, the others consume):
 *
 *   capture files --(merge by time)--> packets --> per stream: loss
 *   accounting, reconstructor (format/reconstruct.h) --> events
 *   events --> filters --> statistics (replay_stats.c)
 *                      --> CSV rows (completion order)
 *                      --> tie ordering per thread (replay_order.c)
 *                              --> Chrome JSON, Perfetto protobuf
 *   FtracePage packets --> log lines --> --log window, Chrome, Perfetto
 */
#ifndef ORBIT_REPLAY_INTERNAL_H
#define ORBIT_REPLAY_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capture.h"
#include "reconstruct.h"
#include "replay.h"

/* ---- output: a buffered writer that remembers its first error ---- */

struct orbit_rp_out {
	FILE *f;
	const char *path; /* for messages */
	int own;          /* fclose at the end */
	char *buf;
	size_t len, cap;
	int err; /* first errno, 0 while all is well */
};

int orbit__rp_out_open(struct orbit_rp_out *o, const char *path);
void orbit__rp_out_stream(struct orbit_rp_out *o, FILE *f, const char *name);
void orbit__rp_out_flush(struct orbit_rp_out *o);
/* Flushes and closes; returns 0 or the first -errno seen. */
int orbit__rp_out_close(struct orbit_rp_out *o);
/* The slow path of orbit__rp_out_write: flushes, or writes straight through. */
void orbit__rp_out_slow(struct orbit_rp_out *o, const void *p, size_t n);

static inline void orbit__rp_out_write(struct orbit_rp_out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		orbit__rp_out_slow(o, p, n);
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

void orbit__rp_out_s(struct orbit_rp_out *o, const char *s);
void orbit__rp_out_c(struct orbit_rp_out *o, char c);
void orbit__rp_out_u64(struct orbit_rp_out *o, uint64_t v);
void orbit__rp_out_i64(struct orbit_rp_out *o, int64_t v);
/* ns as microseconds with three decimals, "123.456". */
void orbit__rp_out_us(struct orbit_rp_out *o, uint64_t ns);
void orbit__rp_out_double(struct orbit_rp_out *o, double v); /* %.17g; "null" if not finite */
void orbit__rp_out_printf(struct orbit_rp_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string with its quotes: escapes '"', '\\' and control characters,
 * replaces bytes that are not UTF-8 with U+FFFD. */
void orbit__rp_out_json(struct orbit_rp_out *o, const char *s, size_t n);
/* An RFC 4180 field: quoted when it holds , " CR LF or another control
 * character; quotes doubled. Bytes are kept as they are. */
void orbit__rp_out_csv(struct orbit_rp_out *o, const char *s, size_t n);
/* Bytes a terminal may show: printable ASCII and valid UTF-8 kept,
 * everything else as \xNN. */
void orbit__rp_out_text(struct orbit_rp_out *o, const char *s, size_t n);

/* Length of the valid UTF-8 prefix of s (n when all of it is valid). */
size_t orbit__rp_utf8_valid(const char *s, size_t n);
/* Writes s into dst (room for 3 * n bytes) with invalid bytes replaced by
 * U+FFFD; returns the length. */
size_t orbit__rp_utf8_fix(const char *s, size_t n, char *dst);

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

/* ---- spans: a scope or an async span that passed the filters ---- */

struct orbit_rp_thread;

struct orbit_rp_span {
	struct orbit_rp_thread *thread; /* of the start */
	uint32_t pid, tid, end_tid;
	uint32_t depth;
	uint8_t async, unfinished, name_incomplete;
	uint64_t id, start, end;
	uint32_t name_id; /* ORBIT_RP_NAME_NONE: only name/name_len */
	const char *name;
	uint32_t name_len;
};

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

struct orbit_rp_thread {
	uint32_t pid, tid;
	char *name;
	uint32_t name_len;
	uint8_t name_source;
	uint32_t name_version; /* bumped by every change */
	uint32_t pf_version;   /* version the Perfetto descriptor carries */
	const void *stream;    /* last stream that counted it */
	uint64_t scopes, busy_ns;
	uint64_t *child; /* time of finished children, by depth (self time) */
	uint32_t nchild;
	struct orbit_rp_order order;
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
};

struct orbit_rp_stats {
	struct orbit_rp_stat *scope, *async; /* by name id */
	uint32_t nscope, nasync;
	struct orbit_rp_stat other_scope, other_async; /* names past the limit */
	int64_t hist_budget;
	uint64_t values, logs;
};

/* ---- streams and captures ---- */

struct orbit_rp_loss {
	uint64_t lapped, gone, backstop, unsent, at_end;
};

#define ORBIT_RP_PAGE_RINGS 4096u

struct orbit_rp_run;
struct orbit_rp_capture;

/* One stream: a Handshake and what follows it, up to EndOfStream. */
struct orbit_rp_stream {
	struct orbit_rp_run *run;
	struct orbit_rp_capture *cap;
	struct orbit_rp_stream *next;
	int handshake; /* 0: packets came before any handshake */
	uint32_t pid;
	char *process, *host, *agent;
	char **cmdline;
	size_t ncmd;
	uint64_t realtime_ns, monotonic_ns;
	uint32_t ring_count, page_ring_count, page_size;
	uint64_t ring_start[ORBIT_MAX_RINGS];
	uint64_t delivered[ORBIT_MAX_RINGS];
	struct orbit_rp_loss loss[ORBIT_MAX_RINGS];
	uint64_t claimed[ORBIT_MAX_RINGS];
	uint32_t nclaimed;
	int ended;
	uint32_t cut; /* Ack.end of the collector's frame that ends a cut capture */
	/* page rings: records delivered, lost (last PageLoss), reserved (End) */
	uint64_t *page_delivered, *page_lost, *page_pages, *page_unsent, *page_reserved;
	uint32_t npage, npage_reserved;
	struct orbit_reconstruct *rc;
	struct orbit_reconstruct_stats rstats;
	uint64_t records, scopes, spans, values, thread_names, logs, markers;
	uint64_t bad_logs;
	uint32_t threads;
	uint64_t first, last; /* times of the events seen, first > last: none */
};

/* One input file. */
struct orbit_rp_capture {
	const char *path;
	uint64_t size;
	struct orbit_rp_stream *streams, *tail;
	uint64_t damaged; /* frames that could not be read */
	uint64_t invalid; /* packets, batches or pages rejected */
	int io_error;
};

struct orbit_rp_chrome;
struct orbit_rp_perfetto;
struct orbit_rp_log;

struct orbit_rp_run {
	const struct orbit_replay_options *o;
	struct orbit_rp_out out; /* stdout */
	struct orbit_rp_out csv, chrome_out, perfetto_out, json;
	struct orbit_rp_names names;
	struct orbit_rp_threads threads;
	struct orbit_rp_stats stats;
	struct orbit_rp_chrome *chrome;
	struct orbit_rp_perfetto *perfetto;
	struct orbit_rp_log *log;
	struct orbit_rp_capture *caps;
	size_t ncaps;
	uint8_t *batch;    /* ORBIT_BATCH_MAX records */
	uint32_t streams;  /* made so far */
	uint64_t from, to; /* the time window, inclusive */
	uint64_t origin;   /* start of the earliest capture */
	int damaged;
	int export_order; /* Chrome or Perfetto: ties need ordering */
	int filtering;    /* some filter is set */
	int64_t held;     /* items the threads' tie orders hold */
	uint64_t total_bytes;
	int progress;
	uint64_t progress_next_ns;
	int progress_shown;
};

/* core */
/* Makes room for page ring `ring` in s's page arrays; 0 or -1. */
int orbit__rp_stream_page_ring(struct orbit_rp_stream *s, uint32_t ring);
/* One line on stderr about damaged or inconsistent input; the run will
 * exit 2. */
void orbit__rp_problem(struct orbit_rp_run *run, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int orbit__rp_filter(const struct orbit_rp_run *run, uint32_t tid, const char *name, size_t len,
                     uint64_t start, uint64_t end);
/* Whether an event passes --thread, --name, --from and --to. */
static inline int orbit__rp_passes(const struct orbit_rp_run *run, uint32_t tid, const char *name,
                                   size_t len, uint64_t start, uint64_t end)
{
	return !run->filtering || orbit__rp_filter(run, tid, name, len, start, end);
}

/* statistics (replay_stats.c) */
#define ORBIT_RP_HIST_BUDGET (96ll << 20)
/* Self time of a scope of thread t that just ended (see replay_stats.c);
 * call for every scope, filtered or not, in the order they end. */
uint64_t orbit__rp_self_time(struct orbit_rp_thread *t, uint32_t depth, uint64_t dur,
                             int unfinished);
void orbit__rp_stats_span(struct orbit_rp_run *run, const struct orbit_rp_span *s, uint64_t self);
void orbit__rp_stats_free(struct orbit_rp_stats *st);
void orbit__rp_summary_text(struct orbit_rp_run *run, struct orbit_rp_out *o);
void orbit__rp_summary_json(struct orbit_rp_run *run, struct orbit_rp_out *o);
/* Wall-clock text of a CLOCK_MONOTONIC time of a stream, "2026-...Z". */
void orbit__rp_wallclock(const struct orbit_rp_stream *s, uint64_t mono, char *buf, size_t len);

/* CSV (replay_export_csv.c) */
void orbit__rp_csv_begin(struct orbit_rp_run *run);
void orbit__rp_csv_span(struct orbit_rp_run *run, const struct orbit_rp_span *s);

/* Chrome JSON (replay_export_chrome.c) */
int orbit__rp_chrome_begin(struct orbit_rp_run *run);
void orbit__rp_chrome_process(struct orbit_rp_run *run, const struct orbit_rp_stream *s);
void orbit__rp_chrome_item(struct orbit_rp_run *run, const struct orbit_rp_span *s, int end);
void orbit__rp_chrome_async(struct orbit_rp_run *run, const struct orbit_rp_span *s);
void orbit__rp_chrome_value(struct orbit_rp_run *run, uint32_t pid, const struct orbit_event *ev);
void orbit__rp_chrome_log(struct orbit_rp_run *run, uint32_t pid, uint32_t tid, uint64_t time,
                          int marker, const char *text, size_t len);
void orbit__rp_chrome_end(struct orbit_rp_run *run);

/* Perfetto (replay_export_perfetto.c) */
int orbit__rp_perfetto_begin(struct orbit_rp_run *run);
void orbit__rp_perfetto_process(struct orbit_rp_run *run, const struct orbit_rp_stream *s);
void orbit__rp_perfetto_item(struct orbit_rp_run *run, const struct orbit_rp_span *s, int end);
void orbit__rp_perfetto_async(struct orbit_rp_run *run, const struct orbit_rp_span *s);
void orbit__rp_perfetto_value(struct orbit_rp_run *run, uint32_t pid, const struct orbit_event *ev,
                              uint32_t name_id);
void orbit__rp_perfetto_log(struct orbit_rp_run *run, uint32_t pid, uint32_t tid, uint64_t time,
                            int marker, const char *text, size_t len);
void orbit__rp_perfetto_end(struct orbit_rp_run *run);

/* log lines (replay_log.c) */
int orbit__rp_log_begin(struct orbit_rp_run *run);
/* One FtracePage packet of stream s. */
void orbit__rp_log_page(struct orbit_rp_run *run, struct orbit_rp_stream *s, uint32_t ring,
                        const uint8_t *page, size_t len);
void orbit__rp_log_end(struct orbit_rp_run *run);

/* --pages (replay_pages.c): 0, or 2 when a page is damaged, 3 output */
int orbit__rp_pages(struct orbit_rp_run *run, const char *path, uint32_t page_size);

#endif
