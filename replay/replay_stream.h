/*
 * replay_stream.h — captures and their streams: what each one held, its
 * loss accounting and the two equations (docs/format.md section 6), for
 * the summaries, the checks and the exporters (replay_stream.c).
 */
#ifndef ORBIT_REPLAY_STREAM_H
#define ORBIT_REPLAY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"
#include "loss.h"
#include "reconstruct.h"
#include "replay_open.h"

struct orbit_rp_report;
struct orbit_rp_dispatch;

/* What orbit-dump says of a capture it made (its Dump packet). */
struct orbit_rp_dump {
	uint32_t ended; /* 1 a snapshot of the live process, 2 the process was gone */
	char *segment;
	uint64_t monotonic_ns, realtime_ns;
	uint64_t flight_frames, flight_dropped, flight_damaged, ring_records, log_pages;
	char *problem;      /* "" none */
	uint32_t completed; /* the frames before are the stream's own: the dump completed it */
};

struct orbit_rp_capture;
struct orbit_rp_location;

/* The call sites a stream's SourceLocations named (replay_locations.c). */
struct orbit_rp_site {
	uint64_t addr; /* 0: empty */
	const struct orbit_rp_location *loc;
};
struct orbit_rp_sites {
	struct orbit_rp_site *all;
	uint32_t cap, n;
};
void orbit__rp_sites_put(struct orbit_rp_sites *m, uint64_t addr,
                         const struct orbit_rp_location *loc);
/* The location of a site the stream named, or NULL. */
const struct orbit_rp_location *orbit__rp_sites_get(const struct orbit_rp_sites *m, uint64_t addr);
void orbit__rp_sites_free(struct orbit_rp_sites *m);
struct orbit__rp_sched_decoder;
struct orbit__rp_sched_timeline;

/* A stream's kernel scheduling (docs/format.md 4.10): what its Handshake
 * said, what its KernelPage and KernelLoss packets held, and, when an
 * exporter wants them, the decoded states (replay_sched_scan.h: final at
 * the end of the stream, and up to each scope's end when it is
 * dispatched). */
struct orbit_rp_kernel {
	int on;    /* the Handshake has a KernelSched */
	char *off; /* its kernel_sched_off, or NULL */
	char *instance;
	char *release;  /* the kernel's uname release, or NULL */
	uint32_t *tids; /* the threads listed when recording began */
	size_t ntids;
	uint32_t cpus, page_size, buffer_kb;
	uint64_t monotonic_ns, boottime_ns; /* the pair KernelSched carries; 0: none */
	uint64_t pages, records;            /* KernelPage packets and their records */
	uint64_t bad_pages;                 /* pages the page parser rejects */
	uint64_t events;                    /* records decoded, when an exporter took them */
	struct orbit__kernel_loss *loss;    /* the last KernelLoss of each CPU (cumulative) */
	uint32_t nloss;
	struct orbit__rp_sched_decoder *dec;       /* for exporters of kernel events */
	const struct orbit__rp_sched_timeline *tl; /* the states (the scan's), or NULL */
};

/* One stream: a Handshake and what follows it, up to EndOfStream. */
struct orbit_rp_stream {
	struct orbit_rp_capture *cap;
	struct orbit_rp_stream *next;
	struct orbit_rp_dispatch *to; /* where its events go; NULL: times only */
	int handshake;                /* 0: packets came before any handshake */
	uint32_t version;             /* its protocol version (docs/format.md 4.0) */
	uint32_t pid;
	char *process, *host, *agent;
	/* The image before an exec (Handshake.exec_of): generation 0: none. */
	uint32_t exec_generation;
	char *exec_process, *exec_capture;
	char **cmdline;
	size_t ncmd;
	uint64_t realtime_ns, monotonic_ns;
	uint32_t ring_count, page_ring_count, page_size;
	uint64_t ring_start[ORBIT_MAX_RINGS];
	uint64_t delivered[ORBIT_MAX_RINGS];
	struct orbit__loss loss[ORBIT_MAX_RINGS]; /* each ring's last Loss (format/loss.h) */
	uint64_t ring_time[ORBIT_MAX_RINGS];      /* last record time read from each ring */
	uint64_t next_claim[ORBIT_MAX_RINGS]; /* the claim each ring's next batch should start at */
	uint8_t claim_known[ORBIT_MAX_RINGS]; /* next_claim is known (from the handshake) */
	uint64_t claimed[ORBIT_MAX_RINGS];
	uint32_t nclaimed;
	/* Frames passed over (options.frame_skip): the reader's count at each
	 * ring's last batch, and the claims they held, as their gaps tell. */
	uint64_t ring_skips[ORBIT_MAX_RINGS];
	uint64_t unshown;
	int ended;
	uint32_t cut; /* Ack.end of the collector's frame that ends a cut capture */
	uint64_t untrusted_times, clock_resets; /* EndOfStream 5 and 6 */
	uint32_t ended_by;          /* EndOfStream 11: 0 the agent, 1 snapshot, 2 gone */
	struct orbit_rp_dump *dump; /* orbit-dump's word, or NULL */
	uint64_t flight_size;       /* Handshake 32: kept in a flight ring of that size */
	uint32_t dumped; /* Handshake 34: orbit-dump wrote it, 1 continuing the agent's stream */
	struct orbit_rp_open open_at_end; /* scopes open when the input ended */
	int finishing;                    /* the reconstructor's finish is running */
	/* page rings: records delivered, lost (last PageLoss), reserved (End) */
	uint64_t *page_delivered, *page_lost, *page_pages, *page_unsent, *page_reserved;
	uint64_t *page_time; /* last log record time of each page ring */
	uint32_t npage, npage_reserved;
	struct orbit_reconstruct *rc;
	struct orbit_reconstruct_stats rstats;
	struct orbit_rp_sites sites; /* call-site addresses to source locations */
	uint64_t records, scopes, spans, values, thread_names, logs, markers;
	uint64_t bad_logs;
	uint32_t threads;
	uint64_t first, last; /* earliest and latest time of its events and log lines;
	                         first > last: none */
	/* The account of the process's previous stream its Handshake carried
	 * (PreviousStream, docs/format.md 7.4), per ring; has_account: one came. */
	int has_account;
	uint64_t account_ns; /* which stream: its Handshake's monotonic_ns */
	uint64_t acc_claimed[ORBIT_MAX_RINGS], acc_acked[ORBIT_MAX_RINGS];
	uint64_t acc_unacked[ORBIT_MAX_RINGS], acc_lost[ORBIT_MAX_RINGS];
	struct orbit_rp_kernel kernel;
};

/* One input file. */
struct orbit_rp_capture {
	const char *path;
	uint64_t size;
	struct orbit_rp_stream *streams, *tail;
	uint64_t damaged; /* frames that could not be read */
	uint64_t invalid; /* packets, batches or pages rejected */
	uint32_t newer;   /* a stream of this newer protocol was left out; 0 none */
	int io_error;
	const char *error; /* why none of it was read: "no such file", ... */
};

/* A new stream at the end of cap's list, or NULL. */
struct orbit_rp_stream *orbit__rp_stream_new(struct orbit_rp_capture *cap);
/* Takes the process, host, command line, clock pair and ring geometry. */
void orbit__rp_stream_info(struct orbit_rp_stream *s, const Orbit__Handshake *h);
/* Makes room for page ring `ring` in s's page arrays; 0 or -1. */
int orbit__rp_stream_page_ring(struct orbit_rp_stream *s, uint32_t ring);
/* Adds the reconstructor's counts to the stream's (once per reconstructor). */
void orbit__rp_stream_add_stats(struct orbit_rp_stream *s,
                                const struct orbit_reconstruct_stats *st);
/* The problems a finished stream shows: no end, an equation that fails,
 * records of unknown kind. */
void orbit__rp_stream_check(const struct orbit_rp_stream *s, struct orbit_rp_report *rep);
void orbit__rp_capture_free(struct orbit_rp_capture *cap);

/* Takes a Handshake's KernelSched (or its kernel_sched_off). */
void orbit__rp_stream_kernel(struct orbit_rp_stream *s, const Orbit__Handshake *h);
/* A KernelLoss packet; 0 or -1 (a CPU past the stream's, or no memory). */
int orbit__rp_stream_kernel_loss(struct orbit_rp_stream *s, const Orbit__KernelLoss *l);
/* The kernel's loss of every CPU added up (its lost events:
 * orbit__kernel_loss_sum). */
struct orbit__kernel_loss orbit__rp_stream_kernel_sums(const struct orbit_rp_stream *s);
/* The kernel equation (format.md 4.10, orbit__kernel_loss_holds) for a
 * complete stream: 1 holds, 0 fails, -1 unknown. */
int orbit__rp_kernel_equation(const struct orbit_rp_stream *s);

/* The scope-ring equation of a stream (format/loss.h), over all its rings:
 * claimed == delivered + orbit__loss_sum. */
struct orbit_rp_equation {
	uint64_t claimed, delivered, lost;
	int holds;         /* 1 holds, 0 fails, -1 unknown (no end of stream) */
	uint32_t bad_ring; /* the first ring where it fails */
	int by_account;    /* no end of stream, but a later stream's account of it:
	                      lost = claimed - delivered, and holds says whether what
	                      the file holds agrees with the account */
};
void orbit__rp_stream_equation(const struct orbit_rp_stream *s, struct orbit_rp_equation *eq);
/* Whether ring r's equation holds (a stream with an end). */
int orbit__rp_ring_holds(const struct orbit_rp_stream *s, uint32_t r);
/* Page rings: reserved == delivered + lost, for every ring: 1 holds, 0
 * fails, -1 unknown (no end of stream). */
int orbit__rp_page_equation(const struct orbit_rp_stream *s);
/* The loss of all rings added up (orbit__loss_sum of it: the records lost). */
struct orbit__loss orbit__rp_stream_loss(const struct orbit_rp_stream *s);
/* Page rings: records and pages lost, records delivered. */
void orbit__rp_stream_page_loss(const struct orbit_rp_stream *s, uint64_t *records, uint64_t *pages,
                                uint64_t *delivered);
/* An event or a log line of s from start to end (end < start: start). */
static inline void orbit__rp_stream_saw(struct orbit_rp_stream *s, uint64_t start, uint64_t end)
{
	end = end > start ? end : start;
	if (s->first > start)
		s->first = start;
	if (s->last < end)
		s->last = end;
}

/* The stream's start and end: the first and last time of its events
 * (scopes, async spans, values, thread names) and log lines if it had any,
 * else its handshake's time. */
void orbit__rp_stream_span(const struct orbit_rp_stream *s, uint64_t *first, uint64_t *last);
/* Wall-clock text of a CLOCK_MONOTONIC time of a stream, "2026-...Z". */
void orbit__rp_wallclock(const struct orbit_rp_stream *s, uint64_t mono, char *buf, size_t len);

#endif
