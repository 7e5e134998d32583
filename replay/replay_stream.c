/*
 * replay_stream.c — a capture's streams: what each one held, its loss
 * accounting, and the one place that states the two equations
 * (docs/format.md section 6):
 *
 *   scope ring r:  claimed_per_ring[r] == delivered + lapped + writer_gone
 *                                         + backstop + at_end + flight_dropped
 *   page ring r:   reserved_per_page_ring[r] == delivered + PageLoss.records
 *
 * unsent is shown but never counted: those records belong to an earlier
 * stream of the process. A stream without EndOfStream has no claims, so
 * its equations are unknown.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "replay_report.h"
#include "replay_stream.h"

struct orbit_rp_stream *orbit__rp_stream_new(struct orbit_rp_capture *cap)
{
	struct orbit_rp_stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->cap = cap;
	s->first = UINT64_MAX;
	if (cap->tail)
		cap->tail->next = s;
	else
		cap->streams = s;
	cap->tail = s;
	return s;
}

static char *str_dup(const char *s)
{
	return strdup(s ? s : "");
}

void orbit__rp_stream_info(struct orbit_rp_stream *s, const Orbit__Handshake *h)
{
	s->handshake = 1;
	s->pid = h->pid;
	s->process = str_dup(h->process_name);
	s->host = str_dup(h->host_name);
	s->agent = str_dup(h->agent_version);
	s->cmdline = h->n_command_line ? calloc(h->n_command_line, sizeof *s->cmdline) : NULL;
	for (size_t i = 0; s->cmdline && i < h->n_command_line; i++)
		if ((s->cmdline[s->ncmd] = str_dup(h->command_line[i])) != NULL)
			s->ncmd++;
	s->realtime_ns = h->realtime_ns;
	s->monotonic_ns = h->monotonic_ns;
	s->ring_count = h->ring_count;
	s->page_ring_count = h->page_ring_count;
	s->page_size = h->page_size;
	s->flight_size = h->flight_size;
	for (uint32_t r = 0; r < h->n_ring_start && r < ORBIT_MAX_RINGS; r++) {
		s->ring_start[r] = h->ring_start[r];
		s->next_claim[r] = h->ring_start[r];
		s->claim_known[r] = 1;
	}
}

static void *grow_zero(void *p, size_t old, size_t n, size_t size)
{
	uint8_t *q = realloc(p, n * size);
	if (q != NULL)
		memset(q + old * size, 0, (n - old) * size);
	return q;
}

int orbit__rp_stream_page_ring(struct orbit_rp_stream *s, uint32_t ring)
{
	if (ring >= ORBIT_RP_PAGE_RINGS)
		return -1;
	if (ring < s->npage)
		return 0;
	uint32_t n = ring + 1 > 8 ? ring + 1 : 8;
	uint64_t **a[] = {&s->page_delivered, &s->page_lost, &s->page_pages, &s->page_unsent,
	                  &s->page_time};
	for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
		uint64_t *p = grow_zero(*a[i], s->npage, n, sizeof **a[i]);
		if (p == NULL)
			return -1;
		*a[i] = p;
	}
	s->npage = n;
	return 0;
}

void orbit__rp_stream_add_stats(struct orbit_rp_stream *s, const struct orbit_reconstruct_stats *st)
{
	s->rstats.records += st->records;
	s->rstats.bad_records += st->bad_records;
	s->rstats.unmatched_stops += st->unmatched_stops;
	s->rstats.unfinished += st->unfinished;
	s->rstats.incomplete_names += st->incomplete_names;
	s->rstats.orphan_continuations += st->orphan_continuations;
	s->rstats.gaps += st->gaps;
	s->rstats.untrusted_events += st->untrusted_events;
	s->rstats.thread_ends += st->thread_ends;
	s->rstats.reused_tids += st->reused_tids;
}

/* ---- the equations ---- */

static uint64_t claimed_of(const struct orbit_rp_stream *s, uint32_t r)
{
	return r < s->nclaimed ? s->claimed[r] : 0;
}

int orbit__rp_ring_holds(const struct orbit_rp_stream *s, uint32_t r)
{
	return claimed_of(s, r) == s->delivered[r] + orbit__rp_loss_sum(&s->loss[r]);
}

void orbit__rp_stream_equation(const struct orbit_rp_stream *s, struct orbit_rp_equation *eq)
{
	*eq = (struct orbit_rp_equation){0, 0, 0, s->ended ? 1 : -1, 0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		eq->delivered += s->delivered[r];
		eq->lost += orbit__rp_loss_sum(&s->loss[r]);
		eq->claimed += claimed_of(s, r);
		if (s->ended && eq->holds == 1 && !orbit__rp_ring_holds(s, r)) {
			eq->holds = 0;
			eq->bad_ring = r;
		}
	}
}

int orbit__rp_page_equation(const struct orbit_rp_stream *s)
{
	/* A dump does not know what was reserved: the agent's counts are
	 * not in the segment. */
	if (!s->ended || (s->ended_by != 0 && s->npage_reserved == 0))
		return -1;
	for (uint32_t r = 0; r < s->npage_reserved; r++) {
		uint64_t got = r < s->npage ? s->page_delivered[r] + s->page_lost[r] : 0;
		if (s->page_reserved[r] != got)
			return 0;
	}
	for (uint32_t r = s->npage_reserved; r < s->npage; r++)
		if (s->page_delivered[r] + s->page_lost[r] != 0)
			return 0;
	return 1;
}

struct orbit_rp_loss orbit__rp_stream_loss(const struct orbit_rp_stream *s)
{
	struct orbit_rp_loss t = {0, 0, 0, 0, 0, 0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		t.lapped += s->loss[r].lapped;
		t.gone += s->loss[r].gone;
		t.backstop += s->loss[r].backstop;
		t.unsent += s->loss[r].unsent;
		t.at_end += s->loss[r].at_end;
		t.flight += s->loss[r].flight;
	}
	return t;
}

void orbit__rp_stream_page_loss(const struct orbit_rp_stream *s, uint64_t *records, uint64_t *pages,
                                uint64_t *delivered)
{
	*records = *pages = *delivered = 0;
	for (uint32_t r = 0; r < s->npage; r++) {
		*records += s->page_lost[r];
		*pages += s->page_pages[r];
		*delivered += s->page_delivered[r];
	}
}

void orbit__rp_stream_check(const struct orbit_rp_stream *s, struct orbit_rp_report *rep)
{
	const char *path = s->cap->path;
	if (!s->ended && s->cut)
		orbit__rp_problem(
		    rep,
		    "%s: incomplete capture: cut by the collector at its %s (pid %" PRIu32
		    "): the stream went on, the rest was not kept",
		    path,
		    s->cut == ORBIT_ACK_CAPTURE_CAP ? "--max-capture-size"
		    : s->cut == ORBIT_ACK_DIR_CAP   ? "--max-dir-size"
		                                    : "end",
		    s->pid);
	else if (!s->ended)
		orbit__rp_problem(rep,
		                  "%s: incomplete capture: no end of stream (pid %" PRIu32
		                  "): the agent was killed or the capture was cut",
		                  path, s->pid);
	for (uint32_t r = 0; s->ended && r < ORBIT_MAX_RINGS; r++)
		if (!orbit__rp_ring_holds(s, r))
			orbit__rp_problem(rep,
			                  "%s: ring %" PRIu32 ": claimed %" PRIu64
			                  " != delivered %" PRIu64 " + lost %" PRIu64,
			                  path, r, claimed_of(s, r), s->delivered[r],
			                  orbit__rp_loss_sum(&s->loss[r]));
	if (s->rstats.bad_records)
		orbit__rp_problem(rep, "%s: %" PRIu64 " records of unknown kind or flags", path,
		                  s->rstats.bad_records);
}

/* ---- times ---- */

void orbit__rp_stream_span(const struct orbit_rp_stream *s, uint64_t *first, uint64_t *last)
{
	*first = s->first <= s->last ? s->first : s->monotonic_ns;
	*last = s->first <= s->last ? s->last : *first;
}

void orbit__rp_wallclock(const struct orbit_rp_stream *s, uint64_t mono, char *buf, size_t len)
{
	/* Modular on purpose: a time before the handshake pair goes back. A
	 * capture may hold any pair, so anything past year 9999 is unknown. */
	uint64_t wall = s->realtime_ns + (mono - s->monotonic_ns);
	if (!s->handshake || s->realtime_ns == 0 || wall > 253402300799ull * 1000000000ull) {
		snprintf(buf, len, "unknown");
		return;
	}
	time_t sec = (time_t)(wall / 1000000000);
	long ns = (long)(wall % 1000000000);
	struct tm tm;
	if (gmtime_r(&sec, &tm) == NULL) {
		snprintf(buf, len, "unknown");
		return;
	}
	char d[40];
	strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09ldZ", d, ns);
}

/* ---- freeing ---- */

static void stream_free(struct orbit_rp_stream *s)
{
	orbit__reconstruct_free(s->rc);
	free(s->process);
	free(s->host);
	free(s->agent);
	for (size_t i = 0; i < s->ncmd; i++)
		free(s->cmdline[i]);
	free(s->cmdline);
	free(s->page_delivered);
	free(s->page_lost);
	free(s->page_pages);
	free(s->page_unsent);
	free(s->page_time);
	free(s->page_reserved);
	if (s->dump != NULL) {
		free(s->dump->segment);
		free(s->dump->problem);
		free(s->dump);
	}
	orbit__rp_open_free(&s->open_at_end);
	free(s);
}

void orbit__rp_capture_free(struct orbit_rp_capture *cap)
{
	struct orbit_rp_stream *s = cap->streams;
	while (s) {
		struct orbit_rp_stream *next = s->next;
		stream_free(s);
		s = next;
	}
	cap->streams = cap->tail = NULL;
}
