/*
 * sched_reader.h — the kernel's scheduling pages in the agent (ORBIT_SCHED):
 * the recorder (sched_tracefs.h) opened on the agent thread, its pages read
 * into the stream at every pass within a budget, how soon the next pass
 * must come for its buffers, and its closing once the stream has ended.
 *
 * The recorder is opened before the agent's loop runs (35-45 ms in the
 * kernel, docs/operations.md) and the first Handshake waits for it
 * (stream.h): a Handshake says whether kernel pages follow. Each pass reads
 * every CPU until it is empty, at most one buffer's worth of pages per
 * CPU; a pass cut short is followed by the next at once. Each CPU's record
 * bytes per pass give its fill rate, remembered like a scope ring's
 * (pass_plan.h), and the next pass comes before the fastest-filling buffer
 * would be a quarter full.
 *
 * Agent thread only.
 */
#ifndef ORBIT_AGENT_SCHED_READER_H
#define ORBIT_AGENT_SCHED_READER_H

#include <stdint.h>

#include "config.h"
#include "sched_tracefs.h"

struct orbit__sched;
struct orbit__stream;

struct orbit__sched_reader {
	struct orbit__sched *sched; /* NULL: not recording */
	uint32_t cpus;
	uint32_t budget;               /* pages a pass reads at most */
	double quarter;                /* a quarter of one CPU's buffer, bytes */
	uint64_t *seen;                /* per CPU: record bytes read, at the last plan */
	double *rate;                  /* per CPU: bytes per ns, remembered */
	int said;                      /* why it is off was said (once per process) */
	struct orbit__sched_live live; /* the instances opened, for a forked child */
};

/* A reader that never opened (static, in the agent). */
#define ORBIT__SCHED_READER_INIT                                                                   \
	{                                                                                          \
		.live = ORBIT__SCHED_LIVE_INIT                                                     \
	}

/* With cfg->sched, opens the recorder, and tells the stream its formats or
 * why there are none (one line, once per process). */
void orbit__sched_reader_open(struct orbit__sched_reader *r, const struct orbit__config *cfg,
                              struct orbit__stream *st);
/* Reads the kernel's pages into the stream: at most a buffer's worth per
 * CPU, or, on the final pass (tracing already off), everything left. 1 if
 * the budget cut the reading short. */
int orbit__sched_reader_pass(struct orbit__sched_reader *r, struct orbit__stream *st, int final);
/* The time until the fastest-filling buffer is a quarter full at its rate
 * (rates seen over window ns, remembered faded by fade), if sooner than
 * soonest; else soonest. */
double orbit__sched_reader_soonest(struct orbit__sched_reader *r, double window, double fade,
                                   double soonest);
/* After the stream's end: the instance removed (70-90 ms in the kernel). */
void orbit__sched_reader_close(struct orbit__sched_reader *r);
/* In a forked child: the recorder's descriptors are the parent's copies,
 * closed without removing its instance. */
void orbit__sched_reader_forget(struct orbit__sched_reader *r);

#endif
