/*
 * replay_report.h — what orbit-replay says on stderr while it runs: one
 * line per problem, and the progress bar that such a line first clears
 * (replay_report.c). The lowest part of the core: everything may report.
 */
#ifndef ORBIT_REPLAY_REPORT_H
#define ORBIT_REPLAY_REPORT_H

#include <stdint.h>
#include <stdio.h>

struct orbit_rp_report {
	FILE *err;   /* NULL: say nothing */
	int damaged; /* a problem was reported: the run exits 2 */
	int bar;     /* a progress bar is on the line */
	uint64_t next_ns;
};

/* One line about damaged or inconsistent input, "orbit-replay: ...": the
 * run will exit 2. */
void orbit__rp_problem(struct orbit_rp_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* One line about something else (an output): no exit status of its own. */
void orbit__rp_say(struct orbit_rp_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Whether the bar is due again (every 100 ms). */
int orbit__rp_progress_due(struct orbit_rp_report *r);
/* Draws the bar: done of total bytes. */
void orbit__rp_progress_show(struct orbit_rp_report *r, uint64_t done, uint64_t total);
void orbit__rp_progress_clear(struct orbit_rp_report *r);

#endif
