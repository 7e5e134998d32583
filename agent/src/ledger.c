/* ledger.c — the loss ledger; the equations are in ledger.h. */
#include "ledger.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "logs.h"

int orbit__ledger_init(struct orbit__ledger *l, const struct orbit__drain *d,
                       struct orbit__logs *logs)
{
	uint32_t page_rings = logs != NULL ? orbit__logs_ring_count(logs) : 0;
	memset(l, 0, sizeof *l);
	l->drain = d;
	l->logs = logs;
	l->rings = d->seg->layout.ring_count;
	l->page_rings = page_rings;
	l->page_base = calloc(page_rings + 1, sizeof *l->page_base);
	l->page_sent = calloc(page_rings + 1, sizeof *l->page_sent);
	l->page_seen = calloc(page_rings + 1, sizeof *l->page_seen);
	l->page_read = calloc(page_rings + 1, sizeof *l->page_read);
	if (l->page_base == NULL || l->page_sent == NULL || l->page_seen == NULL ||
	    l->page_read == NULL) {
		orbit__ledger_free(l);
		return -ENOMEM;
	}
	return 0;
}

void orbit__ledger_free(struct orbit__ledger *l)
{
	orbit__ledger_settle_all(l, 0);
	free(l->page_base);
	free(l->page_sent);
	free(l->page_seen);
	free(l->page_read);
	l->page_base = l->page_sent = l->page_seen = NULL;
	l->page_read = NULL;
}

void orbit__ledger_begin(struct orbit__ledger *l)
{
	for (uint32_t r = 0; r < l->rings; r++) {
		const struct orbit__ring_state *s = &l->drain->ring[r];
		l->ring[r].start = s->next;
		l->ring[r].base = (struct orbit__ring_loss){
		    .lapped = s->lost_lapped, .gone = s->lost_dead, .backstop = s->lost_backstop};
		l->ring[r].sent = (struct orbit__ring_loss){0};
		l->ring[r].sent.unsent = 0;
		l->ring[r].framing = 0;
		l->ring[r].acked = 0;
		l->ring[r].s_unsent = 0;
	}
	l->ended = 0;
	l->stream_ns = 0;
	/* Losses since the last pass of the previous stream (an outage, say)
	 * are this stream's: nothing read them. */
	for (uint32_t r = 0; r < l->page_rings; r++) {
		struct orbit__page_count *b = &l->page_base[r];
		b->records = l->page_seen[r].records;
		b->pages = l->page_seen[r].pages;
		b->reserved = l->page_read[r] + b->records;
		l->page_sent[r] = (struct orbit__page_count){0, 0, 0};
	}
}

void orbit__ledger_framed(struct orbit__ledger *l, uint32_t r, uint32_t n)
{
	l->ring[r].framing += n;
}

/* n records of ring r of this stream never reach its destination. */
static void unsent(struct orbit__ledger *l, uint32_t r, uint64_t n)
{
	l->ring[r].unsent += n;
	l->ring[r].s_unsent += n;
}

void orbit__ledger_unsent(struct orbit__ledger *l, uint32_t r, uint64_t n)
{
	unsent(l, r, n);
}

void orbit__ledger_frame_done(struct orbit__ledger *l, uint64_t seq)
{
	uint32_t n = 0;
	for (uint32_t r = 0; r < l->rings; r++)
		n += l->ring[r].framing != 0;
	if (n == 0)
		return; /* no records: nothing to settle */
	struct orbit__ledger_frame *f = malloc(sizeof *f + n * sizeof f->e[0]);
	if (f == NULL) { /* untracked: counted unsent now, whatever becomes of it */
		orbit__ledger_frame_dropped(l);
		return;
	}
	f->next = NULL;
	f->seq = seq;
	f->n = 0;
	for (uint32_t r = 0; r < l->rings; r++) {
		if (l->ring[r].framing == 0)
			continue;
		f->e[f->n].ring = r;
		f->e[f->n].records = l->ring[r].framing;
		f->n++;
		l->ring[r].framing = 0;
	}
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
}

void orbit__ledger_frame_dropped(struct orbit__ledger *l)
{
	for (uint32_t r = 0; r < l->rings; r++) {
		unsent(l, r, l->ring[r].framing);
		l->ring[r].framing = 0;
	}
}

void orbit__ledger_settled(struct orbit__ledger *l, uint64_t seq, int ok)
{
	while (l->head != NULL && l->head->seq <= seq) {
		struct orbit__ledger_frame *f = l->head;
		l->head = f->next;
		if (l->head == NULL)
			l->tail = NULL;
		for (uint32_t i = 0; i < f->n; i++) {
			if (ok)
				l->ring[f->e[i].ring].acked += f->e[i].records;
			else
				unsent(l, f->e[i].ring, f->e[i].records);
		}
		free(f);
	}
}

void orbit__ledger_lost(struct orbit__ledger *l, uint64_t seq)
{
	struct orbit__ledger_frame **p = &l->head, *prev = NULL;
	while (*p != NULL && (*p)->seq != seq) {
		prev = *p;
		p = &(*p)->next;
	}
	struct orbit__ledger_frame *f = *p;
	if (f == NULL)
		return;
	*p = f->next;
	if (l->tail == f)
		l->tail = prev;
	for (uint32_t i = 0; i < f->n; i++)
		unsent(l, f->e[i].ring, f->e[i].records);
	free(f);
}

void orbit__ledger_settle_all(struct orbit__ledger *l, int ok)
{
	if (l->tail != NULL)
		orbit__ledger_settled(l, l->tail->seq, ok);
}

struct orbit__ring_loss orbit__ledger_loss(const struct orbit__ledger *l, uint32_t r)
{
	const struct orbit__ring_state *s = &l->drain->ring[r];
	const struct orbit__ring_loss *b = &l->ring[r].base;
	return (struct orbit__ring_loss){.lapped = s->lost_lapped - b->lapped,
	                                 .gone = s->lost_dead - b->gone,
	                                 .backstop = s->lost_backstop - b->backstop,
	                                 .unsent = l->ring[r].unsent};
}

int orbit__ledger_loss_due(struct orbit__ledger *l, uint32_t r, int at_end,
                           struct orbit__ring_loss *out)
{
	const struct orbit__ring_state *s = &l->drain->ring[r];
	struct orbit__ring_loss now = orbit__ledger_loss(l, r);
	if (at_end) {
		now.at_end = s->end > s->next ? s->end - s->next : 0;
		l->ended = 1; /* the final packets: claims now run to end */
	}
	if (at_end && now.at_end + now.lapped + now.gone + now.backstop + now.unsent == 0)
		return 0;
	if (!at_end && memcmp(&now, &l->ring[r].sent, sizeof now) == 0)
		return 0;
	l->ring[r].sent = now;
	*out = now;
	return 1;
}

void orbit__ledger_handshake(struct orbit__ledger *l, Orbit__Handshake *h)
{
	l->stream_ns = h->monotonic_ns;
	struct orbit__ledger_report *p = &l->report;
	if (!p->pending)
		return;
	Orbit__PreviousStream *m = &p->msg;
	orbit__previous_stream__init(m);
	m->monotonic_ns = p->monotonic_ns;
	m->frames_sent = p->fate.frames_sent;
	m->frames_acknowledged = p->fate.frames_acked;
	m->end = p->fate.end;
	m->n_claimed = m->n_acknowledged = m->n_unacknowledged = m->n_lost = l->rings;
	m->claimed = p->claimed;
	m->acknowledged = p->acked;
	m->unacknowledged = p->unacked;
	m->lost = p->lost;
	h->previous_stream = m;
}

void orbit__ledger_answered(struct orbit__ledger *l)
{
	l->report.pending = 0;
}

void orbit__ledger_died(struct orbit__ledger *l, const struct orbit__fate *fate, int answered)
{
	/* Frames in flight: the destination may have them, or surely not. */
	uint64_t maybe[ORBIT_MAX_RINGS] = {0};
	while (l->head != NULL) {
		struct orbit__ledger_frame *f = l->head;
		l->head = f->next;
		for (uint32_t i = 0; i < f->n; i++) {
			if (fate->certain)
				unsent(l, f->e[i].ring, f->e[i].records);
			else {
				maybe[f->e[i].ring] += f->e[i].records;
				if (!fate->late) /* late: they are in the spool (output.h) */
					l->ring[f->e[i].ring].unsent += f->e[i].records;
			}
		}
		free(f);
	}
	l->tail = NULL;
	if (!answered)
		return; /* nothing was drained into it: nothing is owed */
	struct orbit__ledger_report *p = &l->report;
	p->pending = 1;
	p->fate = *fate;
	p->monotonic_ns = l->stream_ns;
	for (uint32_t r = 0; r < l->rings; r++) {
		const struct orbit__ring_state *s = &l->drain->ring[r];
		struct orbit__ring_loss now = orbit__ledger_loss(l, r);
		uint64_t upto = l->ended && s->end > s->next ? s->end : s->next;
		p->claimed[r] = upto - l->ring[r].start;
		p->acked[r] = l->ring[r].acked;
		p->unacked[r] = maybe[r];
		p->lost[r] =
		    now.lapped + now.gone + now.backstop + l->ring[r].s_unsent + (upto - s->next);
	}
}

uint64_t orbit__ledger_undelivered(const struct orbit__ledger *l)
{
	uint64_t n = 0;
	for (uint32_t r = 0; l->report.pending && r < l->rings; r++)
		n += l->report.claimed[r] - l->report.acked[r];
	return n;
}

uint64_t orbit__ledger_claimed(const struct orbit__ledger *l, uint32_t r)
{
	return l->drain->ring[r].end - l->ring[r].start;
}

void orbit__ledger_page_read(struct orbit__ledger *l, uint32_t r, uint64_t records)
{
	if (r < l->page_rings)
		l->page_read[r] += records;
}

struct orbit__page_count orbit__ledger_page_now(const struct orbit__ledger *l, uint32_t r)
{
	struct orbit__page_count c;
	orbit__logs_totals(l->logs, r, &c.reserved, &c.records, &c.pages);
	c.reserved -= l->page_base[r].reserved;
	c.records -= l->page_base[r].records;
	c.pages -= l->page_base[r].pages;
	return c;
}

int orbit__ledger_page_loss_due(struct orbit__ledger *l, uint32_t r, struct orbit__page_count *out)
{
	uint64_t reserved;
	orbit__logs_totals(l->logs, r, &reserved, &l->page_seen[r].records, &l->page_seen[r].pages);
	struct orbit__page_count now = orbit__ledger_page_now(l, r);
	if (now.records == l->page_sent[r].records && now.pages == l->page_sent[r].pages)
		return 0;
	l->page_sent[r] = now;
	*out = now;
	return 1;
}

uint64_t orbit__ledger_unsent_total(const struct orbit__ledger *l)
{
	uint64_t n = 0;
	for (uint32_t r = 0; r < l->rings; r++)
		n += l->ring[r].unsent;
	return n;
}
