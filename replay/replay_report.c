/*
 * replay_report.c — orbit-replay's stderr: one line per problem, naming the
 * file (and the byte offset) it concerns, and the progress bar. The bar is
 * redrawn in place with \r, so a problem line clears it first and the bar
 * comes back at its next turn.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_ns.h"
#include "replay_report.h"

#define PROGRESS_EVERY_NS 100000000ull
#define BAR 32

static void clear_bar(struct orbit_rp_report *r)
{
	if (!r->bar)
		return;
	fputs("\r\033[K", r->err);
	r->bar = 0;
}

static void line(struct orbit_rp_report *r, const char *fmt, va_list ap)
{
	clear_bar(r);
	fputs("orbit-replay: ", r->err);
	vfprintf(r->err, fmt, ap);
	fputc('\n', r->err);
}

/* Keeps a problem line; 0, or -1 when it cannot (then it is printed). */
static int keep(struct orbit_rp_report *r, const char *fmt, va_list ap)
{
	if (r->nheld == ORBIT_RP_HELD_LINES) {
		orbit__rp_release(r);
		return -1;
	}
	char *text = NULL;
	if (vasprintf(&text, fmt, ap) < 0)
		return -1;
	r->held[r->nheld++] = text;
	return 0;
}

void orbit__rp_problem(struct orbit_rp_report *r, const char *fmt, ...)
{
	va_list ap;
	r->damaged = 1;
	if (r->err == NULL)
		return;
	if (r->holding) {
		va_start(ap, fmt);
		int kept = keep(r, fmt, ap) == 0;
		va_end(ap);
		if (kept)
			return;
	}
	va_start(ap, fmt);
	line(r, fmt, ap);
	va_end(ap);
}

void orbit__rp_hold(struct orbit_rp_report *r)
{
	r->holding = r->err != NULL;
	r->nheld = 0;
}

int orbit__rp_held_all(const struct orbit_rp_report *r)
{
	return r->holding;
}

static void held_lines(struct orbit_rp_report *r, int print)
{
	r->holding = 0;
	for (unsigned i = 0; i < r->nheld; i++) {
		if (print)
			orbit__rp_say(r, "%s", r->held[i]);
		free(r->held[i]);
	}
	r->nheld = 0;
}

void orbit__rp_release(struct orbit_rp_report *r)
{
	held_lines(r, 1);
}

void orbit__rp_drop(struct orbit_rp_report *r)
{
	held_lines(r, 0);
}

void orbit__rp_say(struct orbit_rp_report *r, const char *fmt, ...)
{
	va_list ap;
	if (r->err == NULL)
		return;
	va_start(ap, fmt);
	line(r, fmt, ap);
	va_end(ap);
}

int orbit__rp_progress_due(struct orbit_rp_report *r)
{
	uint64_t now = orbit__clock_ns(CLOCK_MONOTONIC);
	if (now < r->next_ns)
		return 0;
	r->next_ns = now + PROGRESS_EVERY_NS;
	return 1;
}

void orbit__rp_progress_show(struct orbit_rp_report *r, uint64_t done, uint64_t total)
{
	if (r->err == NULL)
		return;
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	if (pct > 100)
		pct = 100;
	char bar[BAR + 1];
	memset(bar, '.', BAR);
	memset(bar, '#', pct * BAR / 100);
	bar[BAR] = '\0';
	fprintf(r->err, "\r[%s] %3u%% %" PRIu64 "/%" PRIu64 " MiB", bar, pct, done >> 20,
	        total >> 20);
	fflush(r->err);
	r->bar = 1;
}

void orbit__rp_progress_clear(struct orbit_rp_report *r)
{
	if (!r->bar)
		return;
	clear_bar(r);
	fflush(r->err);
}
