/*
 * replay.h — the replay core behind orbit-replay, also driven in-process by
 * the tests, the fuzz target and orbit-bench-replay.
 *
 * One call reads every capture given, as one timeline, and writes what the
 * options ask for. Everything streams: memory follows what is open
 * (unfinished scopes per thread, held ties, statistics), never the size of
 * the captures (docs/replay.md, "Memory").
 */
#ifndef ORBIT_REPLAY_H
#define ORBIT_REPLAY_H

#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses of orbit-replay (and return values of orbit__replay_run). */
enum orbit_replay_status {
	ORBIT_REPLAY_OK = 0,
	ORBIT_REPLAY_USAGE = 1,   /* bad options (decided by the caller) */
	ORBIT_REPLAY_DAMAGED = 2, /* some input could not be read, or is inconsistent */
	ORBIT_REPLAY_OUTPUT = 3,  /* an output could not be written */
	ORBIT_REPLAY_EMPTY = 4,   /* --from/--to select nothing of the captures (said) */
	ORBIT_REPLAY_NEWER = 5,   /* a stream made by a newer Orbit was left out (said) */
};

enum orbit_replay_sort {
	ORBIT_REPLAY_SORT_TOTAL,
	ORBIT_REPLAY_SORT_SELF,
	ORBIT_REPLAY_SORT_COUNT,
	ORBIT_REPLAY_SORT_MAX,
};

/* A time bound of --from / --to: absolute CLOCK_MONOTONIC ns, or ns after
 * the start of the earliest capture. */
struct orbit_replay_bound {
	int set;
	int relative; /* counted from the origin; 0: absolute CLOCK_MONOTONIC ns */
	uint64_t ns;
};

struct orbit_rp_exporter;
struct orbit_rp_ch_options;

/* What a run read of its inputs (struct orbit_replay_options.reads). */
struct orbit_replay_reads {
	uint64_t bytes;   /* read from the input files, every reading together */
	uint64_t before;  /* captures read whole before the run: their kernel states, origin */
	uint64_t tails;   /* captures whose end was read first: names, origin */
	uint64_t threads; /* captures of the run read on threads of their own */
};

struct orbit_replay_options {
	const char *const *inputs; /* capture files */
	size_t ninputs;
	const char *json_path; /* NULL: not written; "-": stdout */
	const char *csv_path;
	const char *values_csv_path; /* --values-csv */
	const char *chrome_path;
	const char *perfetto_path;
	const char *html_path;  /* --html: the self-contained page */
	size_t html_max_scopes; /* spans the page keeps, the longest (0: all) */
	const char *pages_path; /* --pages: a raw ftrace page file */
	uint32_t page_size;     /* of the --pages file; 0: 4096 */
	int log;                /* print the log lines instead of the summary */
	int quiet;              /* no summary on stdout */
	size_t top;             /* rows per table; 0: all */
	enum orbit_replay_sort sort;
	int by_location; /* --by location: the summary's tables by source location */
	int has_thread;
	uint32_t thread;
	const char *name; /* substring filter, NULL: none */
	struct orbit_replay_bound from, to;
	int progress; /* 1: always, 0: never, -1: when stderr is a tty and input large */
	FILE *out;    /* stdout */
	FILE *err;    /* stderr: one line per problem */
	/* The exporters to offer the options to (replay_export.h),
	 * NULL-terminated; NULL: all of orbit-replay's. */
	const struct orbit_rp_exporter *const *exporters;
	/* --clickhouse URL and its options (replay_export_clickhouse.h);
	 * NULL: not loading. */
	const struct orbit_rp_ch_options *clickhouse;
	/* 1: take nothing a capture states up front (docs/format.md 4.13):
	 * read each as one of protocol version 2 (its kernel states and origin
	 * before the run, its names from its tail). The outputs are the same;
	 * the tests compare the two readings. */
	int up_front_off;
	/* 1: every capture read in-line, on the run's thread (replay_prefetch.h:
	 * the outputs are the same; the tests compare the two). */
	int inline_reads;
	/* --follow: the one input is read while it is being written, a table
	 * drawn about once a second, until its stream ends or *stop is set
	 * (NULL: never). */
	int follow;
	atomic_int *stop; /* lock-free: a signal handler may set it */
	/* The live view's data source (orbit-collector --ui): while following,
	 * about every html_live_every_ns and once more at the end, html_live
	 * gets the --html page's data block (docs/replay.md, "The page's data
	 * block": base64 lines) of the spans, values, log lines and loss marks
	 * of the newest html_live_history_ns, the longest html_max_scopes of
	 * its spans; the block is valid during the call, cost_ns is the run
	 * thread's CPU time it took. Blocks come only after something new, and
	 * take at most 2 % of the thread's time. NULL: not live. */
	void (*html_live)(void *ctx, const char *block, size_t len, uint64_t cost_ns);
	void *html_live_ctx;
	uint64_t html_live_history_ns, html_live_every_ns;
	/* While following: frames frame_skip (format/frame.h,
	 * orbit__capture_skip_frames) passes over are not read, a reader's
	 * budget. The claims they held are not lost but unshown (struct
	 * orbit_rp_stream.unshown): the live view says so, and marks no loss.
	 * NULL: every frame is read. */
	int (*frame_skip)(void *ctx, uint64_t offset, size_t len);
	void *frame_skip_ctx;
	/* Filled at the end when not NULL: what the run read. */
	struct orbit_replay_reads *reads;
};

/* Fills defaults: top 20, sort total, progress auto, stdout/stderr. */
void orbit__replay_defaults(struct orbit_replay_options *o);

/* Runs a replay. Returns an enum orbit_replay_status (never USAGE). */
int orbit__replay_run(const struct orbit_replay_options *o);

/* Parses a bound: "1.5s", "+200ms", "10us", "7" (ns), counted from the
 * origin, or "@123456789", "@12.5s", absolute CLOCK_MONOTONIC; 0 or -EINVAL. */
int orbit__replay_parse_bound(const char *s, struct orbit_replay_bound *b);

#endif
