/*
 * replay_sched_states.c — per-thread scheduling states over time, and the
 * on-CPU / runnable / blocked time of any interval (replay_sched.h has the
 * rules).
 *
 * Building. orbit__rp_sched_add keeps each event that changes a state as a
 * 32-byte item (switches, wakings, new threads, gaps); names, creation and
 * exit times are settled on the spot (the latest time wins). Items wait
 * until a mark passes them (orbit__rp_sched_mark) or finish, are then
 * sorted by (time, order added) and run once, appending spans, and are
 * freed. The order in which items run is the same whether they run at
 * marks or all at finish: an item added after a mark is never taken as
 * earlier than it, so every item run at a later mark sorts after those run
 * before (ties keep the order added). Each item's position in that order
 * numbers it; a thread remembers the position and time of its last one.
 *
 * Gaps are applied lazily: a thread's state can only be disturbed by a gap
 * that comes after its own last item, and only by the first such gap that
 * concerns it (a gap on its CPU while it runs; any gap otherwise). Before
 * each item of a thread, after each mark, and at the end, that first gap is
 * found by binary search (in the list of all gaps run, or of its CPU's), so
 * the cost is O(log gaps) per item whatever the number of threads, and
 * hostile input with many gaps and many threads stays near-linear. What an
 * item implies about the past (a gap's window, a switch never seen) starts
 * no earlier than the last mark at or before the item (docs/format.md
 * 4.10), so the spans up to a mark never change after it.
 *
 * Queries. Each span stores the running, runnable and blocked time of the
 * spans before it, kept as spans are added; the time of [a, b) is F(b) -
 * F(a) with F found by one binary search each, up to the timeline's end so
 * far (the last mark). A listed thread's time before its first item is
 * added to what its spans say until finish makes it their first span.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay_sched.h"

#define GAP_KIND 0xff
#define STATE_MASK 0xffu        /* prev_state's report bits; 0 = runnable */
#define STATE_DEAD 0x30u        /* EXIT_DEAD (X) | EXIT_ZOMBIE (Z) */
#define IRQ_FLAGS (0x08 | 0x10) /* common_flags: hardirq, softirq */

struct item {
	uint64_t time;
	uint64_t arg; /* SWITCH: prev_state; GAP: the window's start */
	uint32_t seq;
	int32_t a, b; /* SWITCH prev, next; WAKING/WAKEUP_NEW pid, waker */
	uint16_t cpu;
	uint8_t kind;
	uint8_t flags; /* WAKING: common_flags */
};
_Static_assert(sizeof(struct item) == 32, "items are 32 bytes");

/* What a thread's first item said about it (struct orbit__rp_sched_thread
 * first_role): what it was doing before, back to the recording's start. */
enum first_role {
	FIRST_NONE = 0, /* no item yet */
	FIRST_RAN,      /* switched out, or an event in its context: running */
	FIRST_IN,       /* switched in: it was waiting for a CPU */
	FIRST_WOKEN,    /* woken: it was asleep */
	FIRST_NEW,      /* created: nothing before */
};

/* A gap that has run: its position, and where its window starts. */
struct gap_at {
	uint64_t pos;
	uint64_t from;
};

struct gap_list {
	struct gap_at *v;
	size_t n, cap;
};

struct orbit__rp_sched_timeline {
	struct item *items; /* added, not yet run */
	size_t count, cap;
	uint32_t seq;
	struct orbit__rp_sched_thread **threads; /* each allocated once: addresses stay */
	uint32_t thread_count, thread_cap;
	uint32_t *hash; /* thread index + 1, 0 empty; open addressing */
	uint32_t hash_cap;
	int finished;
	int sorted; /* threads[] sorted by tid (finish) */
	uint64_t end;
	uint64_t since;     /* orbit__rp_sched_recording; 0: not known */
	uint32_t undecided; /* listed threads whose time before their first item is open */
	struct orbit__rp_sched_stats stats;
	/* marks: items added from now on are taken at mark or later */
	uint64_t mark;
	uint64_t *marks; /* the marks not yet behind every item, ascending */
	size_t nmarks, marks_cap;
	/* per CPU (cpu_cap of each) */
	uint32_t cpu_cap;
	uint64_t *cpu_last;        /* last record time read (add_page), +1; 0 none */
	int32_t *cur;              /* the task current there, 0 idle, -1 unknown */
	uint64_t *cpu_time;        /* the time of its last item run */
	struct gap_list *cpu_gaps; /* the gaps of that CPU run */
	/* running */
	uint64_t ran;       /* items run: the next one's position */
	uint64_t ran_to;    /* every item at or before it has run (the last mark run) */
	uint64_t last_time; /* the latest time of an item run */
	struct gap_list gaps;
	uint64_t last_gap_pos; /* the position of the last gap run + 1; 0 none */
	uint64_t first_gap;    /* the earliest window start of a gap run */
};

struct orbit__rp_sched_timeline *orbit__rp_sched_timeline_new(void)
{
	struct orbit__rp_sched_timeline *tl = calloc(1, sizeof *tl);
	if (tl != NULL)
		tl->first_gap = UINT64_MAX;
	return tl;
}

void orbit__rp_sched_timeline_free(struct orbit__rp_sched_timeline *tl)
{
	if (tl == NULL)
		return;
	for (uint32_t i = 0; i < tl->thread_count; i++) {
		free(tl->threads[i]->spans);
		free(tl->threads[i]);
	}
	for (uint32_t c = 0; tl->cpu_gaps != NULL && c < tl->cpu_cap; c++)
		free(tl->cpu_gaps[c].v);
	free(tl->cpu_gaps);
	free(tl->gaps.v);
	free(tl->threads);
	free(tl->items);
	free(tl->hash);
	free(tl->marks);
	free(tl->cpu_last);
	free(tl->cur);
	free(tl->cpu_time);
	free(tl);
}

static uint32_t hash_tid(int32_t tid, uint32_t cap)
{
	return (uint32_t)(((uint64_t)(uint32_t)tid * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int rehash(struct orbit__rp_sched_timeline *tl, uint32_t cap)
{
	uint32_t *h = calloc(cap, sizeof *h);

	if (h == NULL)
		return -ENOMEM;
	for (uint32_t i = 0; i < tl->thread_count; i++) {
		uint32_t j = hash_tid(tl->threads[i]->tid, cap);

		while (h[j] != 0)
			j = (j + 1) & (cap - 1);
		h[j] = i + 1;
	}
	free(tl->hash);
	tl->hash = h;
	tl->hash_cap = cap;
	return 0;
}

/* The thread tid if it is tracked, else NULL. */
static struct orbit__rp_sched_thread *find(const struct orbit__rp_sched_timeline *tl, int32_t tid)
{
	if (tid <= 0 || tl->hash_cap == 0)
		return NULL;
	for (uint32_t j = hash_tid(tid, tl->hash_cap); tl->hash[j] != 0;
	     j = (j + 1) & (tl->hash_cap - 1))
		if (tl->threads[tl->hash[j] - 1]->tid == tid)
			return tl->threads[tl->hash[j] - 1];
	return NULL;
}

/* The thread tid, created if new; NULL without memory. */
static struct orbit__rp_sched_thread *thread_get(struct orbit__rp_sched_timeline *tl, int32_t tid)
{
	struct orbit__rp_sched_thread *th = find(tl, tid);
	uint32_t j;

	if (th != NULL)
		return th;
	if (tl->thread_count == tl->thread_cap) {
		uint32_t cap = tl->thread_cap ? tl->thread_cap * 2 : 64;
		struct orbit__rp_sched_thread **t;

		if (cap > (1u << 30))
			return NULL;
		t = realloc(tl->threads, cap * sizeof *t);
		if (t == NULL)
			return NULL;
		tl->threads = t;
		tl->thread_cap = cap;
	}
	if ((uint64_t)(tl->thread_count + 1) * 2 > tl->hash_cap &&
	    rehash(tl, tl->hash_cap ? tl->hash_cap * 2 : 128) < 0)
		return NULL;
	th = calloc(1, sizeof *th);
	if (th == NULL)
		return NULL;
	th->tid = tid;
	th->pending_waker = -1;
	th->end = tl->ran_to;
	tl->threads[tl->thread_count] = th;
	for (j = hash_tid(tid, tl->hash_cap); tl->hash[j] != 0; j = (j + 1) & (tl->hash_cap - 1))
		;
	tl->hash[j] = ++tl->thread_count;
	return th;
}

static void set_name(struct orbit__rp_sched_thread *th, const char *comm, uint64_t t)
{
	if (comm[0] == '\0' || t < th->comm_time)
		return;
	memcpy(th->comm, comm, ORBIT__RP_SCHED_COMM);
	th->comm[ORBIT__RP_SCHED_COMM - 1] = '\0';
	th->comm_time = t;
}

/* A thread named by an event (tid > 0); -1 without memory, 0 otherwise. */
static int note(struct orbit__rp_sched_timeline *tl, int32_t tid, const char *comm, uint64_t t,
                struct orbit__rp_sched_thread **out)
{
	struct orbit__rp_sched_thread *th;

	if (out != NULL)
		*out = NULL;
	if (tid <= 0)
		return 0;
	th = thread_get(tl, tid);
	if (th == NULL)
		return -1;
	if (comm != NULL)
		set_name(th, comm, t);
	if (out != NULL)
		*out = th;
	return 0;
}

/* Room for CPU cpu in every per-CPU array. */
static int cpus_grow(struct orbit__rp_sched_timeline *tl, uint32_t cpu)
{
	uint32_t old = tl->cpu_cap, cap;
	uint64_t *last, *ctime;
	int32_t *cur;
	struct gap_list *g;

	if (cpu < old)
		return 0;
	cap = cpu + 1 > old * 2 ? cpu + 1 : old * 2;
	last = realloc(tl->cpu_last, cap * sizeof *last);
	if (last != NULL)
		tl->cpu_last = last;
	cur = realloc(tl->cur, cap * sizeof *cur);
	if (cur != NULL)
		tl->cur = cur;
	ctime = realloc(tl->cpu_time, cap * sizeof *ctime);
	if (ctime != NULL)
		tl->cpu_time = ctime;
	g = realloc(tl->cpu_gaps, cap * sizeof *g);
	if (g != NULL)
		tl->cpu_gaps = g;
	if (last == NULL || cur == NULL || ctime == NULL || g == NULL)
		return -ENOMEM;
	for (uint32_t c = old; c < cap; c++) {
		tl->cpu_last[c] = 0;
		tl->cur[c] = -1;
		tl->cpu_time[c] = 0;
		memset(&tl->cpu_gaps[c], 0, sizeof tl->cpu_gaps[c]);
	}
	tl->cpu_cap = cap;
	return 0;
}

/* An item, never earlier than the last mark (docs/format.md 4.10). */
static int push_item(struct orbit__rp_sched_timeline *tl, struct item *it)
{
	if (it->time < tl->mark) {
		it->time = tl->mark;
		tl->stats.late++;
	}
	if (tl->count == tl->cap) {
		size_t cap = tl->cap ? tl->cap * 2 : 1024;
		struct item *n = realloc(tl->items, cap * sizeof *n);

		if (n == NULL)
			return -ENOMEM;
		tl->items = n;
		tl->cap = cap;
	}
	tl->items[tl->count++] = *it;
	return 0;
}

int orbit__rp_sched_add(struct orbit__rp_sched_timeline *tl, const struct orbit__rp_sched_event *ev)
{
	struct orbit__rp_sched_thread *th;
	struct item it;

	if (tl->finished || ev->cpu >= ORBIT__RP_SCHED_MAX_CPUS)
		return -EINVAL;
	memset(&it, 0, sizeof it);
	it.time = ev->time;
	it.cpu = (uint16_t)ev->cpu;
	it.kind = (uint8_t)ev->kind;
	tl->stats.events++;
	switch (ev->kind) {
	case ORBIT__RP_SCHED_SWITCH:
		if (note(tl, ev->u.sw.prev_pid, ev->u.sw.prev_comm, ev->time, NULL) < 0 ||
		    note(tl, ev->u.sw.next_pid, ev->u.sw.next_comm, ev->time, NULL) < 0)
			return -ENOMEM;
		it.a = ev->u.sw.prev_pid;
		it.b = ev->u.sw.next_pid;
		it.arg = (uint64_t)ev->u.sw.prev_state;
		break;
	case ORBIT__RP_SCHED_WAKING:
	case ORBIT__RP_SCHED_WAKEUP_NEW:
		if (note(tl, ev->u.wake.pid, ev->u.wake.comm, ev->time, &th) < 0)
			return -ENOMEM;
		if (th != NULL && ev->kind == ORBIT__RP_SCHED_WAKEUP_NEW &&
		    (th->created == 0 || ev->time < th->created))
			th->created = ev->time;
		it.a = ev->u.wake.pid;
		it.b = ev->common_pid;
		it.flags = ev->common_flags;
		break;
	case ORBIT__RP_SCHED_FORK:
		if (note(tl, ev->u.fork.parent_pid, ev->u.fork.parent_comm, ev->time, NULL) < 0 ||
		    note(tl, ev->u.fork.child_pid, ev->u.fork.child_comm, ev->time, &th) < 0)
			return -ENOMEM;
		if (th != NULL && (th->created == 0 || ev->time < th->created))
			th->created = ev->time;
		return 0;
	case ORBIT__RP_SCHED_EXIT:
		if (note(tl, ev->u.exit.pid, ev->u.exit.comm, ev->time, &th) < 0)
			return -ENOMEM;
		if (th != NULL && ev->time > th->exited)
			th->exited = ev->time;
		return 0;
	case ORBIT__RP_SCHED_RENAME:
		return note(tl, ev->u.rename.pid, ev->u.rename.newcomm, ev->time, NULL) < 0
		           ? -ENOMEM
		           : 0;
	default:
		return -EINVAL;
	}
	if (it.a <= 0 && it.b <= 0 && ev->kind != ORBIT__RP_SCHED_SWITCH)
		return 0;
	if (cpus_grow(tl, it.cpu) < 0)
		return -ENOMEM;
	it.seq = tl->seq++;
	return push_item(tl, &it);
}

static int push_gap(struct orbit__rp_sched_timeline *tl, uint32_t cpu, uint64_t since,
                    uint64_t until, uint32_t seq)
{
	struct item it;

	if (cpus_grow(tl, cpu) < 0)
		return -ENOMEM;
	memset(&it, 0, sizeof it);
	it.time = until;
	it.arg = since < until ? since : until;
	it.cpu = (uint16_t)cpu;
	it.kind = GAP_KIND;
	it.seq = seq;
	tl->stats.gaps++;
	return push_item(tl, &it);
}

int orbit__rp_sched_add_gap(struct orbit__rp_sched_timeline *tl, uint32_t cpu, uint64_t since,
                            uint64_t until, int64_t count)
{
	if (tl->finished || cpu >= ORBIT__RP_SCHED_MAX_CPUS)
		return -EINVAL;
	if (count >= 0)
		tl->stats.lost_known += (uint64_t)count;
	else
		tl->stats.lost_unknown++;
	return push_gap(tl, cpu, since, until, tl->seq++);
}

static int add_event_cb(void *ctx, const struct orbit__rp_sched_event *ev)
{
	return orbit__rp_sched_add(ctx, ev);
}

int orbit__rp_sched_add_page(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_decoder *d,
                             uint32_t cpu, const uint8_t *page, size_t len)
{
	struct orbit__rp_sched_page info;
	uint32_t gap_seq;
	int r;

	if (tl->finished || cpu >= ORBIT__RP_SCHED_MAX_CPUS)
		return -EINVAL;
	if (cpus_grow(tl, cpu) < 0)
		return -ENOMEM;
	/* The gap, if any, is ordered before the page's first event. */
	gap_seq = tl->seq++;
	r = orbit__rp_sched_decode_page(d, cpu, page, len, add_event_cb, tl, &info);
	tl->stats.pages++;
	tl->stats.short_records += info.short_records;
	tl->stats.other_records += info.other;
	if (info.err != 0)
		tl->stats.bad_pages++;
	if (r < 0 && info.err == 0)
		return r; /* not the page: memory, or not ready */
	if (info.missed) {
		uint64_t until = info.records ? info.first : info.timestamp;
		uint64_t since = tl->cpu_last[cpu] ? tl->cpu_last[cpu] - 1 : 0;

		if (info.missed_stored)
			tl->stats.lost_known += info.missed_count;
		else
			tl->stats.lost_unknown++;
		if (push_gap(tl, cpu, since, until, gap_seq) < 0)
			return -ENOMEM;
	}
	if (info.records)
		tl->cpu_last[cpu] = info.last + 1;
	return r;
}

int orbit__rp_sched_recording(struct orbit__rp_sched_timeline *tl, uint64_t since,
                              const uint32_t *tids, size_t n)
{
	if (tl->finished)
		return -EINVAL;
	tl->since = since;
	for (size_t i = 0; i < n; i++) {
		struct orbit__rp_sched_thread *th;
		if (tids[i] == 0 || tids[i] > INT32_MAX)
			continue;
		th = thread_get(tl, (int32_t)tids[i]);
		if (th == NULL)
			return -ENOMEM;
		if (!th->listed && !th->bf_decided)
			tl->undecided++;
		th->listed = 1;
	}
	return 0;
}

/* ---- the state machine ---- */

static int cmp_item(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;

	if (a->time != b->time)
		return a->time < b->time ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static uint8_t state_of(const struct orbit__rp_sched_thread *th)
{
	return th->span_count ? th->spans[th->span_count - 1].state : ORBIT__RP_SCHED_UNKNOWN;
}

/* Running, runnable and blocked time of span s lasting until stop, added to
 * acc. */
static void span_sum(const struct orbit__rp_sched_span *s, uint64_t stop, uint64_t acc[3])
{
	if (s->state >= ORBIT__RP_SCHED_RUNNING && s->state <= ORBIT__RP_SCHED_BLOCKED &&
	    stop > s->start)
		acc[s->state - ORBIT__RP_SCHED_RUNNING] += stop - s->start;
}

/* Starts a span at t (never before the last one: items come sorted). A span
 * starting where the last one does replaces it; one like the last extends
 * it. Each span's before[] is kept: it depends on the spans before only. */
static int push_span(struct orbit__rp_sched_thread *th, uint64_t t, uint8_t state, uint16_t cpu,
                     uint32_t kstate, int32_t waker, uint8_t wflags)
{
	struct orbit__rp_sched_span s, *last;

	memset(&s, 0, sizeof s);
	s.start = t;
	s.state = state;
	s.cpu = cpu;
	s.kstate = kstate;
	s.waker = waker;
	s.waker_flags = wflags;
	if (th->span_count > 0) {
		last = &th->spans[th->span_count - 1];
		if (t <= last->start) {
			s.start = last->start;
			memcpy(s.before, last->before, sizeof s.before);
			*last = s;
			/* A replaced span may now repeat the one before. */
			if (th->span_count > 1) {
				struct orbit__rp_sched_span *p = last - 1;

				if (p->state == s.state && p->cpu == s.cpu &&
				    p->kstate == s.kstate && p->waker == s.waker)
					th->span_count--;
			}
			return 0;
		}
		if (last->state == state && last->cpu == cpu && last->kstate == kstate &&
		    last->waker == waker)
			return 0;
		memcpy(s.before, last->before, sizeof s.before);
		span_sum(last, t, s.before);
	}
	if (th->span_count == th->span_cap) {
		uint32_t cap = th->span_cap ? th->span_cap * 2 : 16;
		struct orbit__rp_sched_span *n;

		if (cap > (1u << 31))
			return -ENOMEM;
		n = realloc(th->spans, (size_t)cap * sizeof *n);
		if (n == NULL)
			return -ENOMEM;
		th->spans = n;
		th->span_cap = cap;
	}
	th->spans[th->span_count++] = s;
	return 0;
}

/* First entry of v[0..n) whose position is above pos, or n. */
static size_t first_after(const struct gap_at *v, size_t n, uint64_t pos)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].pos <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Applies to th the first gap that concerns it between its last item and
 * position pos (exclusive). */
static int sync_gaps(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_thread *th,
                     uint64_t pos)
{
	uint8_t st = state_of(th);
	const struct gap_list *l;
	size_t g;
	uint64_t from;

	if (th->last_pos == 0 || st == ORBIT__RP_SCHED_UNKNOWN || st == ORBIT__RP_SCHED_DEAD)
		return 0;
	if (st == ORBIT__RP_SCHED_RUNNING) {
		uint16_t c = th->spans[th->span_count - 1].cpu;

		if (c >= tl->cpu_cap)
			return 0;
		l = &tl->cpu_gaps[c];
	} else {
		l = &tl->gaps;
	}
	g = first_after(l->v, l->n, th->last_pos - 1);
	if (g == l->n || l->v[g].pos >= pos)
		return 0;
	from = l->v[g].from > th->last_time ? l->v[g].from : th->last_time;
	th->has_pending = 0;
	return push_span(th, from, ORBIT__RP_SCHED_UNKNOWN, 0, 0, -1, 0);
}

/* Brings thread tid (if tracked) up to position pos; it, or NULL. */
static struct orbit__rp_sched_thread *touch(struct orbit__rp_sched_timeline *tl, int32_t tid,
                                            uint64_t pos, int *err)
{
	struct orbit__rp_sched_thread *th = find(tl, tid);

	if (th != NULL && sync_gaps(tl, th, pos) < 0)
		*err = -ENOMEM;
	return th;
}

static void seen(struct orbit__rp_sched_thread *th, uint64_t pos, uint64_t t)
{
	th->last_pos = pos + 1;
	th->last_time = t;
}

/* The thread is no longer known to run on cpu: it was switched out at some
 * point since its last item, unseen (and after floor, the last mark). */
static int lost_track(struct orbit__rp_sched_thread *th, uint16_t cpu, uint64_t floor)
{
	if (state_of(th) != ORBIT__RP_SCHED_RUNNING || th->spans[th->span_count - 1].cpu != cpu)
		return 0;
	th->has_pending = 0;
	return push_span(th, th->last_time > floor ? th->last_time : floor, ORBIT__RP_SCHED_UNKNOWN,
	                 0, 0, -1, 0);
}

static void first_seen(struct orbit__rp_sched_thread *th, uint8_t role, uint64_t t, uint16_t cpu)
{
	if (th->first_role != FIRST_NONE)
		return;
	th->first_role = role;
	th->first_time = t;
	th->first_cpu = cpu;
}

/* Every event names the task current on its CPU (common_pid; a switch's
 * prev). When that is not what the switches so far say, a switch was not
 * seen (a task outside the filter or hidden from tracing ran in between,
 * or events were lost unflagged): the CPU's previous task stopped at some
 * unseen point, and this one started at some unseen point after both its
 * own last item and the CPU's (and after the last mark); both are unknown
 * over what was not seen. */
static int current_is(struct orbit__rp_sched_timeline *tl, uint16_t cpu, int32_t tid, uint64_t t,
                      uint64_t pos, uint64_t floor)
{
	int err = 0;
	int32_t cur = tl->cur[cpu];
	struct orbit__rp_sched_thread *th = find(tl, tid), *c;
	uint64_t from;

	if (th != NULL)
		first_seen(th, FIRST_RAN, t, cpu);
	if (cur == tid) {
		if (th != NULL)
			seen(th, pos, t); /* seen running here again */
		return 0;
	}
	if (cur != -1)
		tl->stats.unseen_switches++;
	c = touch(tl, cur, pos, &err);
	if (c != NULL && lost_track(c, cpu, floor) < 0)
		return -ENOMEM;
	tl->cur[cpu] = tid;
	th = touch(tl, tid, pos, &err);
	if (th == NULL)
		return err;
	if (state_of(th) == ORBIT__RP_SCHED_RUNNING && th->spans[th->span_count - 1].cpu == cpu)
		return err;
	from =
	    th->last_pos && th->last_time > tl->cpu_time[cpu] ? th->last_time : tl->cpu_time[cpu];
	from = from > floor ? from : floor;
	if (state_of(th) != ORBIT__RP_SCHED_UNKNOWN && from < t &&
	    push_span(th, from, ORBIT__RP_SCHED_UNKNOWN, 0, 0, -1, 0) < 0)
		return -ENOMEM;
	th->has_pending = 0;
	seen(th, pos, t);
	if (push_span(th, t, ORBIT__RP_SCHED_RUNNING, cpu, 0, -1, 0) < 0)
		return -ENOMEM;
	return err;
}

static int run_switch(struct orbit__rp_sched_timeline *tl, const struct item *it, uint64_t pos,
                      uint64_t floor)
{
	int err = current_is(tl, it->cpu, it->a, it->time, pos, floor);
	struct orbit__rp_sched_thread *th;

	if (err < 0)
		return err;
	th = find(tl, it->a);
	if (th != NULL) {
		uint32_t ks = (uint32_t)it->arg;

		if (ks & STATE_DEAD)
			err |= push_span(th, it->time, ORBIT__RP_SCHED_DEAD, 0, ks, -1, 0);
		else if ((ks & STATE_MASK) == 0)
			err |=
			    push_span(th, it->time, ORBIT__RP_SCHED_RUNNABLE, it->cpu, ks, -1, 0);
		else if (th->has_pending)
			err |= push_span(th, it->time, ORBIT__RP_SCHED_RUNNABLE, it->cpu, 0,
			                 th->pending_waker, th->pending_flags);
		else
			err |= push_span(th, it->time, ORBIT__RP_SCHED_BLOCKED, 0, ks, -1, 0);
		th->has_pending = 0;
		seen(th, pos, it->time);
	}
	th = touch(tl, it->b, pos, &err);
	if (th != NULL) {
		first_seen(th, FIRST_IN, it->time, it->cpu);
		/* Running elsewhere by what we know: that switch-out was unseen. */
		if (state_of(th) == ORBIT__RP_SCHED_RUNNING &&
		    th->spans[th->span_count - 1].cpu != it->cpu)
			tl->stats.unseen_switches++;
		err |= push_span(th, it->time, ORBIT__RP_SCHED_RUNNING, it->cpu, 0, -1, 0);
		th->has_pending = 0;
		seen(th, pos, it->time);
	}
	tl->cur[it->cpu] = it->b;
	return err < 0 ? -ENOMEM : 0;
}

static int run_wake(struct orbit__rp_sched_timeline *tl, const struct item *it, uint64_t pos,
                    uint64_t floor)
{
	int err = current_is(tl, it->cpu, it->b, it->time, pos, floor);
	struct orbit__rp_sched_thread *th;
	uint8_t st, wf = (it->flags & IRQ_FLAGS) ? ORBIT__RP_SCHED_WAKER_IRQ : 0;

	if (err < 0)
		return err;
	th = touch(tl, it->a, pos, &err);
	if (th == NULL)
		return err;
	first_seen(th, it->kind == ORBIT__RP_SCHED_WAKEUP_NEW ? FIRST_NEW : FIRST_WOKEN, it->time,
	           it->cpu);
	st = state_of(th);
	/* Only a waking that changes the state says something about it: the
	 * position of a thread's last item is that of its last known state. */
	if (st == ORBIT__RP_SCHED_RUNNING) {
		if (it->kind == ORBIT__RP_SCHED_WAKING) {
			/* Woken before its switch-out was recorded. */
			th->has_pending = 1;
			th->pending_waker = it->b;
			th->pending_flags = wf;
		}
		return err;
	}
	if (st == ORBIT__RP_SCHED_RUNNABLE)
		return err;
	seen(th, pos, it->time);
	if (st == ORBIT__RP_SCHED_BLOCKED) {
		th->spans[th->span_count - 1].waker = it->b;
		th->spans[th->span_count - 1].waker_flags = wf;
	}
	if (push_span(th, it->time, ORBIT__RP_SCHED_RUNNABLE, 0, 0, it->b, wf) < 0)
		return -ENOMEM;
	return err;
}

static int gap_add(struct gap_list *l, uint64_t pos, uint64_t from)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct gap_at *v = realloc(l->v, cap * sizeof *v);

		if (v == NULL)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct gap_at){pos, from};
	return 0;
}

/* Nothing is known about the CPU from the window's start (at the earliest
 * the last mark) on. */
static int run_gap(struct orbit__rp_sched_timeline *tl, const struct item *it, uint64_t pos,
                   uint64_t floor)
{
	uint64_t from = it->arg > floor ? it->arg : floor;

	tl->cur[it->cpu] = -1;
	tl->cpu_time[it->cpu] = it->arg;
	tl->last_gap_pos = pos + 1;
	if (from < tl->first_gap)
		tl->first_gap = from;
	if (gap_add(&tl->gaps, pos, from) < 0 || gap_add(&tl->cpu_gaps[it->cpu], pos, from) < 0)
		return -ENOMEM;
	return 0;
}

/* The last mark at or before t, 0 if none (marks ascending). */
static uint64_t floor_of(const struct orbit__rp_sched_timeline *tl, uint64_t t)
{
	size_t lo = 0, hi = tl->nmarks;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->marks[mid] <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? tl->marks[lo - 1] : 0;
}

/* What a listed thread did from the recording's start to its first item,
 * as that item implies, unless events were lost before it (the earliest
 * gap's window starts before the item: a change may be in it) or it was
 * created after the start: 1 and *state, *cpu, or 0. */
static int before_first(const struct orbit__rp_sched_timeline *tl,
                        const struct orbit__rp_sched_thread *th, uint8_t *state, uint16_t *cpu)
{
	if (!th->listed || tl->since == 0 || th->first_time <= tl->since ||
	    tl->first_gap <= th->first_time || (th->created != 0 && th->created > tl->since))
		return 0;
	*cpu = 0;
	switch (th->first_role) {
	case FIRST_RAN:
		*state = ORBIT__RP_SCHED_RUNNING;
		*cpu = th->first_cpu;
		break;
	case FIRST_IN:
		*state = ORBIT__RP_SCHED_RUNNABLE;
		break;
	case FIRST_WOKEN:
		*state = ORBIT__RP_SCHED_BLOCKED;
		break;
	default:
		return 0;
	}
	return th->span_count > 0 && th->spans[0].start == th->first_time;
}

/* The time before a listed thread's first item, known once a mark has
 * passed it: a gap run later starts at that mark or after. */
static void decide(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_thread *th)
{
	uint8_t state;
	uint16_t cpu;

	if (th->bf_decided || th->first_role == FIRST_NONE || th->first_time >= tl->ran_to)
		return;
	th->bf_decided = 1;
	if (th->listed)
		tl->undecided--;
	if (before_first(tl, th, &state, &cpu)) {
		th->bf_state = state;
		th->bf_cpu = cpu;
		th->bf_from = tl->since;
	}
}

/* Runs the items at or before `to` (all of them: every one). */
static int run(struct orbit__rp_sched_timeline *tl, uint64_t to, int every)
{
	size_t n = 0;
	int err = 0;

	if (tl->count > 1)
		qsort(tl->items, tl->count, sizeof *tl->items, cmp_item);
	while (n < tl->count && (every || tl->items[n].time <= to))
		n++;
	for (size_t i = 0; i < n && err == 0; i++) {
		const struct item *it = &tl->items[i];
		uint64_t pos = tl->ran++, floor = floor_of(tl, it->time);

		if (it->kind == ORBIT__RP_SCHED_SWITCH)
			err = run_switch(tl, it, pos, floor);
		else if (it->kind == GAP_KIND)
			err = run_gap(tl, it, pos, floor);
		else
			err = run_wake(tl, it, pos, floor);
		if (it->kind != GAP_KIND)
			tl->cpu_time[it->cpu] = it->time;
		if (it->time > tl->last_time)
			tl->last_time = it->time;
	}
	if (n > 0 && n < tl->count)
		memmove(tl->items, tl->items + n, (tl->count - n) * sizeof *tl->items);
	tl->count -= n;
	return err;
}

int orbit__rp_sched_mark(struct orbit__rp_sched_timeline *tl, uint64_t complete)
{
	int err;
	size_t keep = 0;

	if (tl->finished)
		return -EINVAL;
	if (complete <= tl->mark)
		return 0;
	tl->mark = complete;
	if (tl->nmarks == tl->marks_cap) {
		size_t cap = tl->marks_cap ? tl->marks_cap * 2 : 16;
		uint64_t *m = realloc(tl->marks, cap * sizeof *m);

		if (m == NULL)
			return -ENOMEM;
		tl->marks = m;
		tl->marks_cap = cap;
	}
	tl->marks[tl->nmarks++] = complete;
	err = run(tl, complete, 0);
	if (err < 0)
		return err;
	tl->ran_to = complete;
	/* Every item left, and every one to come, is at this mark or later: the
	 * marks before it are nobody's floor any more. */
	while (keep + 1 < tl->nmarks && tl->marks[keep + 1] <= complete)
		keep++;
	memmove(tl->marks, tl->marks + keep, (tl->nmarks - keep) * sizeof *tl->marks);
	tl->nmarks -= keep;
	/* The states up to the mark, as the finished timeline will have them:
	 * the gaps that concern each thread applied, its end moved up. */
	for (uint32_t i = 0; i < tl->thread_count; i++) {
		struct orbit__rp_sched_thread *th = tl->threads[i];

		if (th->last_pos != 0 && th->last_pos <= tl->last_gap_pos &&
		    sync_gaps(tl, th, tl->ran) < 0)
			return -ENOMEM;
		th->end = complete;
		decide(tl, th);
	}
	return 0;
}

uint64_t orbit__rp_sched_complete(const struct orbit__rp_sched_timeline *tl)
{
	return tl->finished ? UINT64_MAX : tl->ran_to;
}

uint32_t orbit__rp_sched_undecided(const struct orbit__rp_sched_timeline *tl)
{
	return tl->finished ? 0 : tl->undecided;
}

int orbit__rp_sched_final(const struct orbit__rp_sched_timeline *tl, int32_t tid, uint64_t t)
{
	const struct orbit__rp_sched_thread *th;

	if (tl->finished)
		return 1;
	if (t > tl->ran_to)
		return 0;
	if (tl->undecided == 0 || t <= tl->since)
		return 1;
	th = find(tl, tid);
	return th == NULL || !th->listed || th->bf_decided;
}

/* Puts a listed thread's time before its first item in spans[0]. */
static int backfill(struct orbit__rp_sched_timeline *tl, struct orbit__rp_sched_thread *th)
{
	uint8_t state;
	uint16_t cpu;

	th->bf_state = 0;
	if (!before_first(tl, th, &state, &cpu))
		return 0;
	if (th->span_count == th->span_cap) {
		uint32_t cap = th->span_cap ? th->span_cap * 2 : 16;
		struct orbit__rp_sched_span *n = realloc(th->spans, (size_t)cap * sizeof *n);

		if (n == NULL)
			return -ENOMEM;
		th->spans = n;
		th->span_cap = cap;
	}
	memmove(th->spans + 1, th->spans, th->span_count * sizeof *th->spans);
	memset(&th->spans[0], 0, sizeof th->spans[0]);
	th->spans[0].start = tl->since;
	th->spans[0].state = state;
	th->spans[0].cpu = cpu;
	th->spans[0].waker = -1;
	th->span_count++;
	return 0;
}

static int cmp_thread(const void *pa, const void *pb)
{
	const struct orbit__rp_sched_thread *a = *(const struct orbit__rp_sched_thread *const *)pa,
	                                    *b = *(const struct orbit__rp_sched_thread *const *)pb;

	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

/* Each span's running, runnable and blocked time before it. */
static void prefix_sums(struct orbit__rp_sched_thread *th, uint64_t end)
{
	uint64_t acc[3] = {0, 0, 0};

	th->end = end;
	for (uint32_t i = 0; i < th->span_count; i++) {
		struct orbit__rp_sched_span *s = &th->spans[i];
		uint64_t stop = i + 1 < th->span_count ? th->spans[i + 1].start : end;

		memcpy(s->before, acc, sizeof acc);
		span_sum(s, stop, acc);
	}
}

int orbit__rp_sched_finish(struct orbit__rp_sched_timeline *tl, uint64_t end)
{
	int err;

	if (tl->finished)
		return -EINVAL;
	err = run(tl, 0, 1);
	if (end == 0)
		end = tl->last_time > tl->mark ? tl->last_time : tl->mark;
	for (uint32_t i = 0; i < tl->thread_count && err == 0; i++)
		err = sync_gaps(tl, tl->threads[i], tl->ran);
	for (uint32_t i = 0; i < tl->thread_count && err == 0; i++)
		err = backfill(tl, tl->threads[i]);
	if (err < 0)
		return -ENOMEM;
	tl->end = end;
	for (uint32_t i = 0; i < tl->thread_count; i++)
		prefix_sums(tl->threads[i], end);
	if (tl->thread_count > 1)
		qsort(tl->threads, tl->thread_count, sizeof *tl->threads, cmp_thread);
	/* The hash points at indices: sorted, they moved. */
	if (tl->thread_count > 0 && rehash(tl, tl->hash_cap) < 0)
		return -ENOMEM;
	free(tl->items);
	free(tl->marks);
	tl->items = NULL;
	tl->marks = NULL;
	tl->count = tl->cap = 0;
	tl->nmarks = tl->marks_cap = 0;
	tl->undecided = 0;
	tl->finished = 1;
	tl->sorted = 1;
	return 0;
}

/* ---- look-ups ---- */

const struct orbit__rp_sched_thread *
orbit__rp_sched_thread(const struct orbit__rp_sched_timeline *tl, int32_t tid)
{
	return find(tl, tid);
}

const struct orbit__rp_sched_thread *const *
orbit__rp_sched_threads(const struct orbit__rp_sched_timeline *tl, uint32_t *count)
{
	*count = tl->sorted ? tl->thread_count : 0;
	return (const struct orbit__rp_sched_thread *const *)tl->threads;
}

const struct orbit__rp_sched_stats *orbit__rp_sched_stats(const struct orbit__rp_sched_timeline *tl)
{
	return &tl->stats;
}

/* Number of spans in [lo, hi) starting at or before t, plus lo: the index
 * after the last such span (spans are sorted by start). */
static uint32_t upper_bound(const struct orbit__rp_sched_thread *th, uint64_t t, uint32_t lo,
                            uint32_t hi)
{
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (th->spans[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Index of the last span starting at or before t; -1 before the first. */
static long span_index(const struct orbit__rp_sched_thread *th, uint64_t t)
{
	return (long)upper_bound(th, t, 0, th->span_count) - 1;
}

/* The same, galloping from index hint: O(log distance). */
static long span_index_from(const struct orbit__rp_sched_thread *th, uint64_t t, uint32_t hint)
{
	uint32_t n = th->span_count, lo, hi, step = 1;

	if (n == 0)
		return -1;
	if (hint >= n)
		hint = n - 1;
	if (th->spans[hint].start <= t) {
		/* Forward: the answer is in [hint, n). */
		lo = hint + 1;
		while (lo + step <= n && th->spans[lo + step - 1].start <= t) {
			lo += step;
			step *= 2;
		}
		hi = lo + step <= n ? lo + step : n;
		return (long)upper_bound(th, t, lo, hi) - 1;
	}
	/* Backward: the answer is below hint. */
	hi = hint;
	while (hi >= step && th->spans[hi - step].start > t) {
		hi -= step;
		step *= 2;
	}
	lo = hi >= step ? hi - step : 0;
	return (long)upper_bound(th, t, lo, hi) - 1;
}

const struct orbit__rp_sched_span *orbit__rp_sched_span_at(const struct orbit__rp_sched_thread *th,
                                                           uint64_t t)
{
	long i = th != NULL ? span_index(th, t) : -1;

	return i >= 0 ? &th->spans[i] : NULL;
}

/* Running, runnable and blocked ns before t (t <= th->end), given i, the
 * last span starting at or before t. Scalars, not an array: a vector load of
 * words just stored one by one stalls on store forwarding. */
struct sched_sums {
	uint64_t running, runnable, blocked;
};

static struct sched_sums cumulative(const struct orbit__rp_sched_thread *th, uint64_t t, long i)
{
	struct sched_sums r = {0, 0, 0};
	if (i < 0)
		return r;
	const struct orbit__rp_sched_span *s = &th->spans[i];
	r.running = s->before[0];
	r.runnable = s->before[1];
	r.blocked = s->before[2];
	uint64_t d = t > s->start ? t - s->start : 0;
	if (s->state == ORBIT__RP_SCHED_RUNNING)
		r.running += d;
	else if (s->state == ORBIT__RP_SCHED_RUNNABLE)
		r.runnable += d;
	else if (s->state == ORBIT__RP_SCHED_BLOCKED)
		r.blocked += d;
	return r;
}

/* Times of [start, end), the span of start searched from hint (gallop) or
 * by bisection; end's is searched from start's. Returns start's span index
 * (or 0). */
static uint32_t times_from(const struct orbit__rp_sched_thread *th, uint64_t start, uint64_t end,
                           uint32_t hint, int gallop, struct orbit__rp_sched_times *out)
{
	uint64_t sa = start > th->end ? th->end : start, sb = end > th->end ? th->end : end;
	long ia, ib;

	memset(out, 0, sizeof *out);
	if (end <= start)
		return hint;
	ia = gallop ? span_index_from(th, sa, hint) : span_index(th, sa);
	ib = span_index_from(th, sb, ia >= 0 ? (uint32_t)ia : 0);
	struct sched_sums a = cumulative(th, sa, ia), b = cumulative(th, sb, ib);
	out->oncpu_ns = b.running - a.running;
	out->runnable_ns = b.runnable - a.runnable;
	out->blocked_ns = b.blocked - a.blocked;
	/* Before finish, the time before a listed thread's first item. */
	if (th->bf_state != 0 && th->span_count > 0) {
		uint64_t lo = sa > th->bf_from ? sa : th->bf_from;
		uint64_t hi = sb < th->spans[0].start ? sb : th->spans[0].start;

		if (hi > lo) {
			if (th->bf_state == ORBIT__RP_SCHED_RUNNING)
				out->oncpu_ns += hi - lo;
			else if (th->bf_state == ORBIT__RP_SCHED_RUNNABLE)
				out->runnable_ns += hi - lo;
			else
				out->blocked_ns += hi - lo;
		}
	}
	out->unknown_ns = (end - start) - out->oncpu_ns - out->runnable_ns - out->blocked_ns;
	return ia >= 0 ? (uint32_t)ia : 0;
}

void orbit__rp_sched_times(const struct orbit__rp_sched_thread *th, uint64_t start, uint64_t end,
                           struct orbit__rp_sched_times *out)
{
	memset(out, 0, sizeof *out);
	if (th == NULL || end <= start)
		return;
	times_from(th, start, end, 0, 0, out);
}

void orbit__rp_sched_cursor_init(struct orbit__rp_sched_cursor *c,
                                 const struct orbit__rp_sched_thread *th)
{
	c->th = th;
	c->at = 0;
}

void orbit__rp_sched_cursor_times(struct orbit__rp_sched_cursor *c, uint64_t start, uint64_t end,
                                  struct orbit__rp_sched_times *out)
{
	memset(out, 0, sizeof *out);
	if (c->th == NULL || end <= start)
		return;
	c->at = times_from(c->th, start, end, c->at, 1, out);
}
