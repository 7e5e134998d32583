/*
 * replay_export.h — the exporter interface: every output of orbit-replay
 * (CSV, Chrome JSON, Perfetto, --log, the text and JSON summaries) is one
 * table of callbacks, struct orbit_rp_exporter, listed once in
 * replay_exporters.c. The core never names an exporter: it asks each one
 * whether the options want it, opens its output, and hands every event to
 * the callbacks it has (replay_dispatch.c).
 *
 * A run, for each exporter the options want (in the list's order):
 *   begin                      once, after every output opened
 *   stream                     a stream begins (its handshake was read)
 *   scope | slice, async,      the events that passed the filters, in the
 *   value, line                order the captures give them (below)
 *   loss                       a ring's loss counted, never filtered
 *   kernel                     a kernel page's events (within --from/--to)
 *   tick                       --follow: every few packets read, and every
 *                              50 ms while the file has nothing more yet
 *   stream_end                 a stream is over: counts, loss, equation final
 *   end                        after the last event, when every thread has
 *                              its final name and the statistics and the
 *                              captures' summaries are complete
 *   free                       always, for every exporter that began
 *
 * Order of spans: scope gets each scope as it ends, children before their
 * parent (the reconstructor's order), with its depth. slice gets each
 * scope's begin and end for trace viewers, which sort events by time and
 * keep the file order of equal times: sorted that way, the calls nest
 * exactly into the scopes and depths, parents first where times tie
 * (replay_order.c). The calls themselves are not in time order (a begin
 * may be held after its own end). An exporter has one of the two. async
 * gets async spans as they end.
 *
 * Adding an exporter: a file replay_export_NAME.c defining one const
 * struct orbit_rp_exporter (NULL for the callbacks it does not need), a
 * line in replay_exporters.c, its option in replay.h and replay_main.c.
 * Adding a per-event column: a field in replay_event.h, filled in
 * replay_dispatch.c; each exporter then writes it or not.
 */
#ifndef ORBIT_REPLAY_EXPORT_H
#define ORBIT_REPLAY_EXPORT_H

#include "replay_event.h"
#include "replay_internal.h"
#include "replay_stream.h"

/* What an exporter needs beyond its callbacks (struct orbit_rp_exporter.needs). */
enum orbit_rp_need {
	/* It writes on the run's standard output (options.out), not a file. */
	ORBIT_RP_NEED_STDOUT = 1u << 0,
	/* Thread names before the first event: it writes rows as they come.
	 * A capture of protocol version 3 names its threads before their
	 * records; one of version 2 at its end, which is read first
	 * (replay_tail.c). */
	ORBIT_RP_NEED_EARLY_NAMES = 1u << 1,
	/* The time origin during events, not only at the end: read from the
	 * end of a capture of version 3, from a read of the others before the
	 * run (replay_origin.c). */
	ORBIT_RP_NEED_ORIGIN = 1u << 2,
	/* The kernel's scheduling states: each scope's on-CPU, runnable and
	 * blocked time (struct orbit_rp_span.sched) and each stream's timeline
	 * (struct orbit_rp_kernel.tl, finished at the stream's end), built
	 * as a capture of version 3 is read, or from a read of a capture of
	 * version 2 before the run (replay_sched_scan.h). */
	ORBIT_RP_NEED_SCHED = 1u << 3,
};

/* What the run shows every exporter, from begin to free. */
struct orbit_rp_view {
	const struct orbit_replay_options *o;
	struct orbit_rp_threads *threads;    /* every (pid, tid) seen so far */
	const struct orbit_rp_names *names;  /* the span name ids */
	const struct orbit_rp_stats *stats;  /* statistics: complete at end */
	const struct orbit_rp_capture *caps; /* the inputs and their streams: set before the
	                                        first event, complete at end */
	size_t ncaps;
	uint64_t origin; /* the time origin (docs/replay.md): set before the first event
	                    with ORBIT_RP_NEED_ORIGIN, and always at end */
	const struct orbit_rp_locations *locs; /* the source locations, by id */
};

/* One exporter at work in a run: what its callbacks get. */
struct orbit_rp_export {
	const struct orbit_rp_exporter *ex;
	void *state;              /* ex->state_size bytes, zeroed; freed by the run */
	struct orbit_rp_out *out; /* its file, or the run's standard output */
	const struct orbit_rp_view *view;
	unsigned slot; /* its word in struct orbit_rp_thread.export[] */
};

struct orbit_rp_exporter {
	const char *name;
	/* Non-NULL when the options ask for it: the path of its file ("-":
	 * stdout), or with ORBIT_RP_NEED_STDOUT any string. */
	const char *(*wanted)(const struct orbit_replay_options *o);
	unsigned needs; /* enum orbit_rp_need */
	size_t state_size;
	/* 0, or -1 when out of memory (the run then exits 3). */
	int (*begin)(struct orbit_rp_export *x);
	void (*stream)(struct orbit_rp_export *x, const struct orbit_rp_stream *s);
	void (*stream_end)(struct orbit_rp_export *x, const struct orbit_rp_stream *s);
	void (*scope)(struct orbit_rp_export *x, const struct orbit_rp_span *s);
	void (*slice)(struct orbit_rp_export *x, const struct orbit_rp_span *s, int end);
	void (*async)(struct orbit_rp_export *x, const struct orbit_rp_span *s);
	void (*value)(struct orbit_rp_export *x, const struct orbit_rp_value *v);
	void (*line)(struct orbit_rp_export *x, const struct orbit_rp_line *l);
	void (*loss)(struct orbit_rp_export *x, const struct orbit_rp_loss_mark *m);
	/* The kernel events of each KernelPage, as the pages come. */
	void (*kernel)(struct orbit_rp_export *x, const struct orbit_rp_kernel_page *p);
	void (*tick)(struct orbit_rp_export *x);
	void (*end)(struct orbit_rp_export *x);
	void (*free)(struct orbit_rp_export *x);
};

/* Every exporter orbit-replay has, in the order they begin and end
 * (replay_exporters.c); NULL-terminated. */
extern const struct orbit_rp_exporter *const orbit__rp_exporters[];

extern const struct orbit_rp_exporter orbit__rp_export_csv;
extern const struct orbit_rp_exporter orbit__rp_export_values_csv;
extern const struct orbit_rp_exporter orbit__rp_export_chrome;
extern const struct orbit_rp_exporter orbit__rp_export_perfetto;
extern const struct orbit_rp_exporter orbit__rp_export_html;
extern const struct orbit_rp_exporter orbit__rp_export_log;
extern const struct orbit_rp_exporter orbit__rp_export_clickhouse;
extern const struct orbit_rp_exporter orbit__rp_export_summary;
extern const struct orbit_rp_exporter orbit__rp_export_json;
extern const struct orbit_rp_exporter orbit__rp_export_follow;

#endif
