/*
 * replay_report.h — what orbit-replay says on stderr while it runs: one
 * line per problem, and the progress bar that such a line first clears
 * (replay_report.c). The lowest part of the core: everything may report.
 */
#ifndef ORBIT_REPLAY_REPORT_H
#define ORBIT_REPLAY_REPORT_H

#include <stdint.h>
#include <stdio.h>

#define ORBIT_RP_HELD_LINES 16u

struct orbit_rp_report {
	FILE *err;   /* NULL: say nothing */
	int damaged; /* a problem was reported: the run exits 2 */
	int bar;     /* a progress bar is on the line */
	uint64_t next_ns;
	int holding;                     /* problem lines are kept, not printed */
	char *held[ORBIT_RP_HELD_LINES]; /* their text, without the prefix */
	unsigned nheld;
};

/* One line about damaged or inconsistent input, "orbit-replay: ...": the
 * run will exit 2. */
void orbit__rp_problem(struct orbit_rp_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* One line about something else (an output): no exit status of its own. */
void orbit__rp_say(struct orbit_rp_report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Problem lines are kept from now on, until released or dropped: what a
 * file's first problems mean depends on whether anything of it can be read.
 * Past ORBIT_RP_HELD_LINES they are released and printed as they come. */
void orbit__rp_hold(struct orbit_rp_report *r);
/* Prints the lines kept, in order, and stops keeping them. */
void orbit__rp_release(struct orbit_rp_report *r);
/* Forgets the lines kept (the run still exits 2), and stops keeping them. */
void orbit__rp_drop(struct orbit_rp_report *r);
/* Whether the lines since orbit__rp_hold are all still kept. */
int orbit__rp_held_all(const struct orbit_rp_report *r);
/* Whether the bar is due again (every 100 ms). */
int orbit__rp_progress_due(struct orbit_rp_report *r);
/* Draws the bar: done of total bytes. */
void orbit__rp_progress_show(struct orbit_rp_report *r, uint64_t done, uint64_t total);
void orbit__rp_progress_clear(struct orbit_rp_report *r);

#endif
