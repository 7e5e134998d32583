/*
 * replay_dispatch.h — where the events of every stream go: the filters,
 * the statistics, then each exporter's callbacks (replay_dispatch.c).
 */
#ifndef ORBIT_REPLAY_DISPATCH_H
#define ORBIT_REPLAY_DISPATCH_H

#include "replay_export.h"

#define ORBIT_RP_LIST(fn_type)                                                                     \
	struct {                                                                                   \
		fn_type fn;                                                                        \
		struct orbit_rp_export *x;                                                         \
	}

typedef void (*orbit_rp_stream_cb)(struct orbit_rp_export *x, const struct orbit_rp_stream *s);
typedef void (*orbit_rp_span_cb)(struct orbit_rp_export *x, const struct orbit_rp_span *s);
typedef void (*orbit_rp_slice_cb)(struct orbit_rp_export *x, const struct orbit_rp_span *s,
                                  int end);
typedef void (*orbit_rp_value_cb)(struct orbit_rp_export *x, const struct orbit_rp_value *v);
typedef void (*orbit_rp_line_cb)(struct orbit_rp_export *x, const struct orbit_rp_line *l);
typedef void (*orbit_rp_loss_cb)(struct orbit_rp_export *x, const struct orbit_rp_loss_mark *m);
typedef void (*orbit_rp_kernel_cb)(struct orbit_rp_export *x, const struct orbit_rp_kernel_page *p);
typedef void (*orbit_rp_tick_cb)(struct orbit_rp_export *x);

struct orbit_rp_dispatch {
	struct orbit_rp_threads *threads;
	struct orbit_rp_names *names;
	struct orbit_rp_locations *locs;
	struct orbit_rp_stats *stats;
	/* the filters: --thread, --name, --from/--to (inclusive) */
	int filtering;
	int has_thread;
	uint32_t thread;
	const char *name; /* NULL: none */
	size_t name_len;
	uint64_t from, to;
	/* the exporters, by callback, in the order they were added */
	ORBIT_RP_LIST(orbit_rp_stream_cb) stream[ORBIT_RP_EXPORTS], stream_end[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_span_cb) scope[ORBIT_RP_EXPORTS], async[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_slice_cb) slice[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_value_cb) value[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_line_cb) line[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_loss_cb) loss[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_kernel_cb) kernel[ORBIT_RP_EXPORTS];
	ORBIT_RP_LIST(orbit_rp_tick_cb) tick[ORBIT_RP_EXPORTS];
	uint32_t nstream, nstream_end, nscope, nasync, nslice, nvalue, nline, nloss, nkernel, ntick;
	struct orbit__rp_sched_event *kev; /* a kernel page's events in the window */
	size_t kev_cap;
	int64_t held; /* scopes the threads' tie orders hold */
};

/* Adds an exporter's callbacks (at most ORBIT_RP_EXPORTS exporters). */
void orbit__rp_dispatch_add(struct orbit_rp_dispatch *d, struct orbit_rp_export *x);
/* Sets the filters: options' thread and name, and the resolved window. */
void orbit__rp_dispatch_filter(struct orbit_rp_dispatch *d, const struct orbit_replay_options *o,
                               uint64_t from, uint64_t to);

/* The reconstructor's callback (format/reconstruct.h); ctx is the stream,
 * whose `to` is the dispatch. */
void orbit__rp_dispatch_event(void *ctx, const struct orbit_event *ev);
/* replay_log.c's callback; ctx is the dispatch. */
void orbit__rp_dispatch_line(void *ctx, const struct orbit_rp_line *l);
void orbit__rp_dispatch_stream(struct orbit_rp_dispatch *d, const struct orbit_rp_stream *s);
void orbit__rp_dispatch_stream_end(struct orbit_rp_dispatch *d, const struct orbit_rp_stream *s);
void orbit__rp_dispatch_loss(struct orbit_rp_dispatch *d, const struct orbit_rp_loss_mark *m);
void orbit__rp_dispatch_kernel(struct orbit_rp_dispatch *d, const struct orbit_rp_kernel_page *p);
/* Following a capture (--follow): the read goes on, or waits for more. */
void orbit__rp_dispatch_tick(struct orbit_rp_dispatch *d);
void orbit__rp_dispatch_free(struct orbit_rp_dispatch *d);
/* Writes what the tie orders still hold: after the last event. */
void orbit__rp_dispatch_flush(struct orbit_rp_dispatch *d);

#endif
