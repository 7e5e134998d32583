/* api_capture.c — see api_capture.h. */
#include "api_capture.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "check.h"
#include "lifecycle.h"
#include "orbit.h"
#include "reconstruct.h"
#include "record.h"
#include "segment.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *bytes;
static size_t len, cap;
struct run {
	uint32_t ring, n;
	uint64_t first;
	size_t off;
};
static struct run *runs;
static size_t nruns, capruns;
static uint64_t next_claim[ORBIT_MAX_RINGS]; /* per ring, under mu */
static uint64_t sink_gaps;                   /* under mu */

static struct capture_event *events;
static size_t nevents, capevents;

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx;
	size_t add = (size_t)n * ORBIT_RECORD_SIZE;
	pthread_mutex_lock(&mu);
	if (ring >= ORBIT_MAX_RINGS || first != next_claim[ring])
		sink_gaps++; /* a claim that never reached the sink */
	else
		next_claim[ring] = first + n;
	if (len + add > cap) {
		cap = cap ? cap : 1 << 16;
		while (cap < len + add)
			cap *= 2;
		bytes = realloc(bytes, cap);
		if (bytes == NULL)
			abort();
	}
	if (nruns == capruns) {
		capruns = capruns ? capruns * 2 : 64;
		runs = realloc(runs, capruns * sizeof *runs);
		if (runs == NULL)
			abort();
	}
	runs[nruns++] = (struct run){.ring = ring, .n = n, .first = first, .off = len};
	memcpy(bytes + len, recs, add);
	len += add;
	pthread_mutex_unlock(&mu);
}

void capture_install(void)
{
	struct orbit__sink sink = {.records = on_records, .ctx = NULL};
	orbit__agent_set_sink(orbit__root_agent(), &sink);
}

static void on_event(void *ctx, const struct orbit_event *ev)
{
	(void)ctx;
	if (nevents == capevents) {
		capevents = capevents ? capevents * 2 : 64;
		events = realloc(events, capevents * sizeof *events);
		CHECK(events != NULL);
	}
	struct capture_event *e = &events[nevents++];
	*e = (struct capture_event){
	    .type = (int)ev->type,
	    .tid = ev->tid,
	    .end_tid = ev->end_tid,
	    .depth = ev->depth,
	    .unfinished = ev->unfinished,
	    .name_incomplete = ev->name_incomplete,
	    .time_untrusted = ev->time_untrusted,
	    .id = ev->id,
	    .start = ev->start,
	    .end = ev->end,
	    .open_until = ev->open_until,
	    .name_len = ev->name_len,
	    .has_attrs = ev->has_attrs,
	    .color = ev->color,
	    .group = ev->group,
	    .value_kind = ev->value_kind,
	    .value_bits = ev->value_bits,
	};
	e->name = malloc(ev->name_len + 1);
	CHECK(e->name != NULL);
	memcpy(e->name, ev->name, ev->name_len);
	e->name[ev->name_len] = '\0';
}

int capture_collect(struct capture_stats *st)
{
	int err = orbit_flush();
	struct orbit__agent_stats as;
	orbit__agent_stats(orbit__root_agent(), &as);
	memset(st, 0, sizeof *st);
	st->claimed = as.claimed;
	st->drained = as.drained;
	st->lost = as.lost_lapped + as.lost_dead + as.lost_backstop;
	st->stalled_rings = as.stalled_rings;
	for (size_t i = 0; i < nevents; i++)
		free(events[i].name);
	nevents = 0;
	struct orbit_reconstruct *rc = orbit__reconstruct_new(on_event, NULL);
	CHECK(rc != NULL);
	pthread_mutex_lock(&mu);
	st->records = len / ORBIT_RECORD_SIZE;
	st->sink_gaps = sink_gaps;
	for (size_t i = 0; i < nruns; i++)
		CHECK(orbit__reconstruct_batch(rc, runs[i].ring, runs[i].first, bytes + runs[i].off,
		                               runs[i].n) == 0);
	len = 0;
	nruns = 0;
	pthread_mutex_unlock(&mu);
	orbit__reconstruct_finish(rc);
	const struct orbit_reconstruct_stats *rs = orbit__reconstruct_stats(rc);
	st->reconstructed = rs->records;
	st->bad_records = rs->bad_records;
	st->unmatched_stops = rs->unmatched_stops;
	st->unfinished = rs->unfinished;
	st->incomplete_names = rs->incomplete_names;
	st->orphan_continuations = rs->orphan_continuations;
	st->gaps = rs->gaps;
	orbit__reconstruct_free(rc);
	return err;
}

size_t capture_count(void)
{
	return nevents;
}

const struct capture_event *capture_get(size_t i)
{
	return i < nevents ? &events[i] : NULL;
}

long capture_find(int type, const char *name, size_t from)
{
	size_t n = strlen(name);
	for (size_t i = from; i < nevents; i++)
		if (events[i].type == type && events[i].name_len == n &&
		    memcmp(events[i].name, name, n) == 0)
			return (long)i;
	return -1;
}

uint32_t capture_tid(void)
{
	return (uint32_t)syscall(SYS_gettid);
}
