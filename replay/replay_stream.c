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
 * its equations are unknown, unless a later stream of the process among the
 * inputs carries its account (PreviousStream, docs/format.md 7.4): then per
 * ring claimed == acknowledged + unacknowledged + lost, and the file holds
 * from acknowledged to acknowledged + unacknowledged of the ring's records.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "frame.h"
#include "replay_report.h"
#include "replay_sched.h"
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

/* The streams whose Handshake carried an account, to find the stream each
 * one is about when the equations are asked for (after the inputs are
 * read, so the order of the files does not matter). */
#define MAX_ACCOUNTS 1024
static const struct orbit_rp_stream *accounts[MAX_ACCOUNTS];

static void account_keep(struct orbit_rp_stream *s, const Orbit__PreviousStream *ps)
{
	if (ps->n_claimed > ORBIT_MAX_RINGS || ps->n_acknowledged != ps->n_claimed ||
	    ps->n_unacknowledged != ps->n_claimed || ps->n_lost != ps->n_claimed)
		return;
	for (size_t i = 0; i < MAX_ACCOUNTS; i++) {
		if (accounts[i] != NULL)
			continue;
		s->has_account = 1;
		s->account_ns = ps->monotonic_ns;
		for (size_t r = 0; r < ps->n_claimed; r++) {
			s->acc_claimed[r] = ps->claimed[r];
			s->acc_acked[r] = ps->acknowledged[r];
			s->acc_unacked[r] = ps->unacknowledged[r];
			s->acc_lost[r] = ps->lost[r];
		}
		accounts[i] = s;
		return;
	}
}

/* The account of s from a later stream of its process, or NULL. */
static const struct orbit_rp_stream *account_of(const struct orbit_rp_stream *s)
{
	for (size_t i = 0; s->handshake && i < MAX_ACCOUNTS; i++) {
		const struct orbit_rp_stream *a = accounts[i];
		if (a != NULL && a != s && a->account_ns == s->monotonic_ns && a->pid == s->pid &&
		    strcmp(a->host, s->host) == 0)
			return a;
	}
	return NULL;
}

void orbit__rp_stream_info(struct orbit_rp_stream *s, const Orbit__Handshake *h)
{
	s->handshake = 1;
	s->version = h->protocol_version;
	s->pid = h->pid;
	s->process = str_dup(h->process_name);
	s->host = str_dup(h->host_name);
	s->agent = str_dup(h->agent_version);
	if (h->exec_of != NULL && h->exec_of->generation > 0) {
		s->exec_generation = h->exec_of->generation;
		s->exec_process = str_dup(h->exec_of->process_name);
		s->exec_capture = str_dup(h->exec_of->capture);
	}
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
	s->dumped = h->dumped;
	for (uint32_t r = 0; r < h->n_ring_start && r < ORBIT_MAX_RINGS; r++) {
		s->ring_start[r] = h->ring_start[r];
		s->next_claim[r] = h->ring_start[r];
		s->claim_known[r] = 1;
	}
	if (h->previous_stream != NULL)
		account_keep(s, h->previous_stream);
}

static void kernel_free(struct orbit_rp_kernel *k)
{
	free(k->off);
	free(k->instance);
	free(k->release);
	free(k->tids);
	free(k->loss);
	orbit__rp_sched_decoder_free(k->dec);
	memset(k, 0, sizeof *k);
}

void orbit__rp_stream_kernel(struct orbit_rp_stream *s, const Orbit__Handshake *h)
{
	struct orbit_rp_kernel *k = &s->kernel;
	kernel_free(k); /* a reused stream (replay_packets.c) starts afresh */
	if (h->kernel_sched_off != NULL && h->kernel_sched_off[0] != '\0')
		k->off = str_dup(h->kernel_sched_off);
	const Orbit__KernelSched *ks = h->kernel_sched;
	if (ks == NULL)
		return;
	k->on = 1;
	k->instance = str_dup(ks->instance);
	if (ks->kernel_release != NULL && ks->kernel_release[0] != '\0')
		k->release = str_dup(ks->kernel_release);
	if (ks->n_tids > 0 && (k->tids = malloc(ks->n_tids * sizeof *k->tids)) != NULL) {
		memcpy(k->tids, ks->tids, ks->n_tids * sizeof *k->tids);
		k->ntids = ks->n_tids;
	}
	k->cpus = ks->cpu_count;
	k->page_size = ks->page_size;
	k->buffer_kb = ks->buffer_kb;
	k->monotonic_ns = ks->monotonic_ns;
	k->boottime_ns = ks->boottime_ns;
}

int orbit__rp_stream_kernel_loss(struct orbit_rp_stream *s, const Orbit__KernelLoss *l)
{
	struct orbit_rp_kernel *k = &s->kernel;
	if (l->cpu >= ORBIT__RP_SCHED_MAX_CPUS || (k->on && l->cpu >= k->cpus))
		return -1;
	if (l->cpu >= k->nloss) {
		uint32_t n = l->cpu + 1 > 8 ? l->cpu + 1 : 8;
		struct orbit__kernel_loss *a = realloc(k->loss, n * sizeof *a);
		if (a == NULL)
			return -1;
		memset(a + k->nloss, 0, (n - k->nloss) * sizeof *a);
		k->loss = a;
		k->nloss = n;
	}
	orbit__kernel_loss_of(&k->loss[l->cpu], l);
	return 0;
}

struct orbit__kernel_loss orbit__rp_stream_kernel_sums(const struct orbit_rp_stream *s)
{
	struct orbit__kernel_loss t = {0};
	for (uint32_t c = 0; c < s->kernel.nloss; c++)
		orbit__kernel_loss_add(&t, &s->kernel.loss[c]);
	return t;
}

int orbit__rp_kernel_equation(const struct orbit_rp_stream *s)
{
	if (!s->kernel.on || !s->ended)
		return -1;
	struct orbit__kernel_loss t = orbit__rp_stream_kernel_sums(s);
	return orbit__kernel_loss_holds(&t, s->kernel.records);
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
	if (ring >= ORBIT_MAX_PAGE_RINGS)
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
	s->rstats.depth_assumed += st->depth_assumed;
	s->rstats.depth_misplaced += st->depth_misplaced;
}

/* ---- the equations ---- */

static uint64_t claimed_of(const struct orbit_rp_stream *s, uint32_t r)
{
	return r < s->nclaimed ? s->claimed[r] : 0;
}

int orbit__rp_ring_holds(const struct orbit_rp_stream *s, uint32_t r)
{
	return orbit__loss_holds(claimed_of(s, r), s->delivered[r], &s->loss[r]);
}

/* A stream without its end, by the account a later stream gave of it. */
static void account_equation(const struct orbit_rp_stream *s, const struct orbit_rp_stream *a,
                             struct orbit_rp_equation *eq)
{
	*eq = (struct orbit_rp_equation){0, 0, 0, 1, 0, 1};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		uint64_t found = s->delivered[r];
		eq->claimed += a->acc_claimed[r];
		eq->delivered += found;
		int ok =
		    a->acc_claimed[r] == a->acc_acked[r] + a->acc_unacked[r] + a->acc_lost[r] &&
		    found >= a->acc_acked[r] && found - a->acc_acked[r] <= a->acc_unacked[r];
		if (eq->holds == 1 && !ok) {
			eq->holds = 0;
			eq->bad_ring = r;
		}
	}
	eq->lost = eq->claimed >= eq->delivered ? eq->claimed - eq->delivered : 0;
}

void orbit__rp_stream_equation(const struct orbit_rp_stream *s, struct orbit_rp_equation *eq)
{
	const struct orbit_rp_stream *a = s->ended ? NULL : account_of(s);
	if (a != NULL) {
		account_equation(s, a, eq);
		return;
	}
	*eq = (struct orbit_rp_equation){0, 0, 0, s->ended ? 1 : -1, 0, 0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		eq->delivered += s->delivered[r];
		eq->lost += orbit__loss_sum(&s->loss[r]);
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
	if (!s->ended || (s->ended_by != ORBIT_ENDED_AGENT && s->npage_reserved == 0))
		return -1;
	uint32_t n = s->npage > s->npage_reserved ? s->npage : s->npage_reserved;
	for (uint32_t r = 0; r < n; r++) {
		uint64_t reserved = r < s->npage_reserved ? s->page_reserved[r] : 0;
		uint64_t delivered = r < s->npage ? s->page_delivered[r] : 0;
		uint64_t lost = r < s->npage ? s->page_lost[r] : 0;
		if (!orbit__loss_page_holds(reserved, delivered, lost))
			return 0;
	}
	return 1;
}

struct orbit__loss orbit__rp_stream_loss(const struct orbit_rp_stream *s)
{
	struct orbit__loss t = {0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++)
		orbit__loss_add(&t, &s->loss[r]);
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
			                  orbit__loss_sum(&s->loss[r]));
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
	for (size_t i = 0; s->has_account && i < MAX_ACCOUNTS; i++)
		if (accounts[i] == s)
			accounts[i] = NULL;
	orbit__reconstruct_free(s->rc);
	orbit__rp_sites_free(&s->sites);
	free(s->process);
	free(s->host);
	free(s->agent);
	free(s->exec_process);
	free(s->exec_capture);
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
	kernel_free(&s->kernel);
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
