/* reconstruct.c — scopes, spans and values from scope-ring records.
 * The rules are in reconstruct.h. */
#include "reconstruct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A name: in place while short (most are), on the heap beyond; no pointer
 * into itself, so it moves by plain assignment. */
#define NAME_SMALL 32u
struct name_buf {
	char *heap; /* NULL while the name fits small */
	uint32_t len;
	uint32_t cap; /* of heap */
	char small[NAME_SMALL];
};

static const char *name_data(const struct name_buf *n)
{
	return n->heap ? n->heap : n->small;
}

struct open_item { /* an open scope, or an open async span */
	uint64_t id;
	uint64_t start;
	uint64_t group;
	uint64_t site;          /* the head's call site (flag bit 2), 0: none */
	uint64_t suspect_until; /* if suspect: its thread's last record before the gap */
	/* An open scope's place in its thread (unused for spans): */
	uint64_t seq;           /* the thread's starts before it: later ones start above */
	uint64_t finished_then; /* the thread's scopes finished when it started */
	uint64_t first_inner;   /* if has_inner: when a scope first started after it */
	uint32_t tid;
	uint32_t depth;
	uint32_t color;
	uint8_t has_attrs;
	uint8_t incomplete;
	uint8_t untrusted; /* the start's time */
	uint8_t suspect;   /* open across a gap: its stop may be lost */
	uint8_t undecided; /* whether it counts in the depth of the scopes above it
	                    * is not known yet (it may never be stopped) */
	uint8_t has_inner;
	struct name_buf name;
};

/* A finished scope waiting for the scopes open under it to be decided. */
struct held {
	struct open_item it;
	uint64_t end;
	uint32_t end_tid;
	int unfinished;
	int end_untrusted;
};

struct thread_state {
	uint32_t tid;
	struct thread_state *next; /* hash chain */
	/* the head whose continuations are still coming */
	int pending;
	struct orbit_record head;
	struct name_buf name;
	uint16_t next_part;
	uint8_t pending_flags; /* flags of the head and its continuations so far */
	/* open scopes, innermost last */
	struct open_item *open;
	size_t nopen, capopen;
	size_t nsuspect;
	size_t nundecided;        /* open scopes not decided (open_item.undecided) */
	uint32_t ring;            /* ring its records came from, + 1 (0: unknown) */
	uint64_t last_start_id;   /* the thread's highest scope id so far (0: none) */
	uint64_t last_time;       /* its last record's time: the latest it is known alive */
	uint64_t last_scope_time; /* its last scope start's or stop's: the latest surely
	                           * of this thread, not of a new one under its id */
	uint64_t starts;          /* scopes started, ever */
	uint64_t finished;        /* scopes finished (off the stack), ever */
	/* finished scopes waiting, in the order they finished: some only while
	 * nundecided > 0 */
	struct held *held;
	size_t nheld, capheld;
};

struct span_node {
	struct open_item item;
	int stop; /* a stop waiting for its start (it came first) */
	uint64_t stop_time;
	uint32_t stop_tid;
	int stop_untrusted;
	struct span_node *next;
};

#define THREAD_BUCKETS 1024u
#define MAX_OPEN 1024u /* open scopes kept per thread; older ones end unfinished */
#define SWEEP_THREADS 4096u
#define RECENT 16u               /* threads looked up last, by tid */
#define MAX_WAITING_STOPS 65536u /* async stops whose start has not come */
#define MAX_OPEN_SPANS                                                                             \
	(1u << 20) /* async spans whose stop has not come */ /* past this many, threads with       \
	                                                        nothing open are forgotten */
#define SPAN_BUCKETS 4096u
#define MAX_HELD 65536u         /* finished scopes one thread keeps waiting */
#define MAX_HELD_ALL (1u << 18) /* ... all threads together */

struct orbit_reconstruct {
	orbit_event_fn fn;
	void *ctx;
	struct orbit_reconstruct_stats stats;
	struct thread_state *threads[THREAD_BUCKETS];
	struct span_node *spans[SPAN_BUCKETS];
	uint64_t next_claim[ORBIT_MAX_RINGS]; /* + 1; 0: ring not seen */
	uint32_t nthreads;
	uint64_t last_time; /* the latest record time of the input */
	uint32_t waiting_stops;
	uint32_t open_spans;
	size_t held;                         /* finished scopes waiting, all threads */
	struct thread_state *recent[RECENT]; /* by tid % RECENT */
};

static void free_thread(struct thread_state *t)
{
	for (size_t i = 0; i < t->nopen; i++)
		free(t->open[i].name.heap);
	for (size_t i = 0; i < t->nheld; i++)
		free(t->held[i].it.name.heap);
	free(t->held);
	free(t->open);
	free(t->name.heap);
	free(t);
}

/* Memory follows what is open, not how many threads a stream named: a
 * thread with nothing open and no name pending carries no state worth
 * keeping. */
static void sweep_threads(struct orbit_reconstruct *rc)
{
	for (uint32_t b = 0; b < THREAD_BUCKETS; b++) {
		struct thread_state **p = &rc->threads[b];
		while (*p) {
			struct thread_state *t = *p;
			if (t->nopen == 0 && !t->pending) {
				if (rc->recent[t->tid % RECENT] == t)
					rc->recent[t->tid % RECENT] = NULL;
				*p = t->next;
				free_thread(t);
				rc->nthreads--;
			} else {
				p = &t->next;
			}
		}
	}
}

static uint32_t hash64(uint64_t v, uint32_t buckets)
{
	return (uint32_t)((v * 0x9e3779b97f4a7c15ull) >> 40) & (buckets - 1);
}

static int name_append(struct name_buf *n, const uint8_t *bytes, size_t len)
{
	if (len == 0)
		return 0;
	if (n->heap == NULL && n->len + len <= NAME_SMALL) {
		memcpy(n->small + n->len, bytes, len);
		n->len += (uint32_t)len;
		return 0;
	}
	if (n->len + len > n->cap) {
		uint32_t cap = n->cap ? n->cap : 2 * NAME_SMALL;
		while (cap < n->len + len)
			cap *= 2;
		char *b = realloc(n->heap, cap);
		if (b == NULL)
			return -ENOMEM;
		if (n->heap == NULL)
			memcpy(b, n->small, n->len);
		n->heap = b;
		n->cap = cap;
	}
	memcpy(n->heap + n->len, bytes, len);
	n->len += (uint32_t)len;
	return 0;
}

static struct thread_state *thread_get(struct orbit_reconstruct *rc, uint32_t tid)
{
	/* A ring's records interleave a few threads: a small cache by tid
	 * saves the hash chain. */
	struct thread_state **c = &rc->recent[tid % RECENT];
	if (*c != NULL && (*c)->tid == tid)
		return *c;
	uint32_t h = hash64(tid, THREAD_BUCKETS);
	for (struct thread_state *t = rc->threads[h]; t; t = t->next)
		if (t->tid == tid)
			return *c = t;
	if (rc->nthreads >= SWEEP_THREADS)
		sweep_threads(rc);
	struct thread_state *t = calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	t->tid = tid;
	t->next = rc->threads[h];
	rc->threads[h] = t;
	rc->nthreads++;
	return *c = t;
}

static uint8_t attrs_of(const struct orbit_record *r, uint32_t *color, uint64_t *group)
{
	return (uint8_t)orbit__record_attrs(r, color, group);
}

/* end: the stop's time, or for an unfinished item the latest time it is known
 * to have been open (never before its start). */
static void emit_item(struct orbit_reconstruct *rc, enum orbit_event_type type,
                      const struct open_item *it, uint64_t end, uint32_t end_tid, int unfinished,
                      int end_untrusted)
{
	/* Every field set, no initializer: zeroing the rest was a rep stos. */
	struct orbit_event ev;
	ev.type = type;
	ev.tid = it->tid;
	ev.end_tid = end_tid;
	ev.depth = it->depth;
	ev.unfinished = unfinished;
	ev.name_incomplete = it->incomplete;
	ev.time_untrusted = it->untrusted || end_untrusted;
	ev.id = it->id;
	ev.start = it->start;
	ev.end = unfinished ? it->start : end;
	ev.open_until = end < it->start ? it->start : end;
	ev.name = name_data(&it->name);
	ev.name_len = it->name.len;
	ev.has_attrs = it->has_attrs;
	ev.color = it->color;
	ev.group = it->group;
	ev.site = it->site;
	ev.value_kind = 0;
	ev.value_bits = 0;
	if (unfinished)
		rc->stats.unfinished++;
	if (ev.time_untrusted)
		rc->stats.untrusted_events++;
	rc->fn(rc->ctx, &ev);
}

/* Emits the scopes thread t holds, in the order they finished: nothing open
 * under them is undecided any more. */
static void flush_held(struct orbit_reconstruct *rc, struct thread_state *t)
{
	for (size_t i = 0; i < t->nheld; i++) {
		struct held *h = &t->held[i];
		emit_item(rc, ORBIT_EVENT_SCOPE, &h->it, h->end, h->end_tid, h->unfinished,
		          h->end_untrusted);
		free(h->it.name.heap);
	}
	rc->held -= t->nheld;
	t->nheld = 0;
}

/* Every undecided open scope of t is taken as around the scopes above it
 * (it counts in their depth), so what t holds goes out: memory is bounded. */
static void assume_open(struct orbit_reconstruct *rc, struct thread_state *t)
{
	for (size_t i = 0; i < t->nopen; i++) {
		if (t->open[i].undecided) {
			t->open[i].undecided = 0;
			rc->stats.depth_assumed++;
		}
	}
	t->nundecided = 0;
	flush_held(rc, t);
}

/* it is no longer open on t: decided either way. */
static void decide(struct orbit_reconstruct *rc, struct thread_state *t, const struct open_item *it)
{
	if (it->suspect)
		t->nsuspect--;
	if (it->undecided && --t->nundecided == 0)
		flush_held(rc, t);
}

static int reserve_held(struct thread_state *t)
{
	if (t->nheld < t->capheld)
		return 0;
	size_t cap = t->capheld ? t->capheld * 2 : 64;
	struct held *h = realloc(t->held, cap * sizeof *h);
	if (h == NULL)
		return -ENOMEM;
	t->held = h;
	t->capheld = cap;
	return 0;
}

/* Holds it at place pos among t's held scopes. */
static int hold_at(struct orbit_reconstruct *rc, struct thread_state *t, size_t pos,
                   const struct open_item *it, uint64_t end, uint32_t end_tid, int unfinished,
                   int end_untrusted)
{
	if (t->nheld >= MAX_HELD || rc->held >= MAX_HELD_ALL || reserve_held(t) != 0)
		return -ENOMEM;
	if (pos < t->nheld) /* a scope never stopped, before those after it */
		memmove(&t->held[pos + 1], &t->held[pos], (t->nheld - pos) * sizeof *t->held);
	struct held *h = &t->held[pos];
	h->it = *it;
	h->end = end;
	h->end_tid = end_tid;
	h->unfinished = unfinished;
	h->end_untrusted = end_untrusted;
	t->nheld++;
	rc->held++;
	return 0;
}

/* A scope of t has finished (it is off the stack, decided, counted in
 * t->finished): out now, or held while a scope open under it is
 * undecided. Takes its name. */
static void finish_scope(struct orbit_reconstruct *rc, struct thread_state *t,
                         const struct open_item *it, uint64_t end, uint32_t end_tid, int unfinished,
                         int end_untrusted)
{
	if (t->nundecided > 0 &&
	    hold_at(rc, t, t->nheld, it, end, end_tid, unfinished, end_untrusted) == 0)
		return;
	if (t->nundecided > 0) /* too many wait, or no memory: decided now */
		assume_open(rc, t);
	emit_item(rc, ORBIT_EVENT_SCOPE, it, end, end_tid, unfinished, end_untrusted);
	free(it->name.heap);
}

/*
 * Ends open scope k of t, unfinished, at end. skipped: it was never stopped
 * (a stop of a scope around it came, or its thread's end record), so it
 * counts in the depth of no scope, and it was open no later than the first
 * scope started after it: it comes out before the scopes that finished
 * after that. Otherwise nothing more is known (the input ended, the
 * thread's id was reused, too many are open): it counts as around the
 * scopes above it.
 */
static void end_open(struct orbit_reconstruct *rc, struct thread_state *t, size_t k, uint64_t end,
                     int end_untrusted, int skipped)
{
	struct open_item it = t->open[k]; /* a copy: k need not be the top */
	memmove(&t->open[k], &t->open[k + 1], (t->nopen - k - 1) * sizeof it);
	t->nopen--;
	t->finished++;
	size_t pos = t->nheld;
	if (it.suspect) {
		/* Its stop may be in the gap; the scopes above it from before
		 * the gap were inside it, those after never counted it. */
		if (it.suspect_until < end)
			end = it.suspect_until;
	} else if (skipped) {
		/* Every scope finished since it started started above it and
		 * counted it: those still held are mended (and it goes before
		 * them), those gone out (it was assumed) are counted. */
		for (; pos > 0 && t->held[pos - 1].it.seq > it.seq; pos--)
			t->held[pos - 1].it.depth--;
		rc->stats.depth_misplaced += t->finished - 1 - it.finished_then - (t->nheld - pos);
		if (it.has_inner && it.first_inner < end)
			end = it.first_inner;
	}
	if (it.suspect)
		t->nsuspect--;
	if (it.undecided) {
		it.undecided = 0;
		t->nundecided--;
	}
	if (t->nheld > 0 && hold_at(rc, t, pos, &it, end, it.tid, 1, end_untrusted) == 0) {
		if (t->nundecided == 0)
			flush_held(rc, t);
		return;
	}
	if (t->nundecided == 0)
		flush_held(rc, t);
	finish_scope(rc, t, &it, end, it.tid, 1, end_untrusted);
}

static int push_scope(struct orbit_reconstruct *rc, struct thread_state *t,
                      const struct orbit_record *head, struct name_buf *name, int incomplete,
                      int untrusted)
{
	if (t->nopen == MAX_OPEN)
		end_open(rc, t, 0, head->time, untrusted, 0);
	if (t->nopen == t->capopen) {
		size_t cap = t->capopen ? t->capopen * 2 : 16;
		struct open_item *o = realloc(t->open, cap * sizeof *o);
		if (o == NULL)
			return -ENOMEM;
		t->open = o;
		t->capopen = cap;
	}
	if (t->nopen > 0 && !t->open[t->nopen - 1].has_inner) {
		t->open[t->nopen - 1].has_inner = 1;
		t->open[t->nopen - 1].first_inner = head->time;
	}
	/* Every field set, no memset: that was a rep stos, slow at this size. */
	struct open_item *it = &t->open[t->nopen];
	it->id = head->id;
	it->start = head->time;
	it->has_attrs = attrs_of(head, &it->color, &it->group);
	it->site = orbit__record_site(head);
	it->suspect_until = 0;
	it->seq = ++t->starts;
	it->finished_then = t->finished;
	it->first_inner = 0;
	it->tid = head->tid;
	it->depth = (uint32_t)(t->nopen - t->nsuspect);
	it->incomplete = (uint8_t)incomplete;
	it->untrusted = (uint8_t)untrusted;
	it->suspect = 0;
	it->undecided = 1;
	it->has_inner = 0;
	it->name = *name; /* takes the buffer */
	t->nundecided++;
	memset(name, 0, sizeof *name);
	t->nopen++;
	return 0;
}

/* Ends every open scope of t, unfinished, at end: its thread is over
 * (skipped: by its end record, see end_open). */
static void end_thread(struct orbit_reconstruct *rc, struct thread_state *t, uint64_t end,
                       int end_untrusted, int skipped)
{
	while (t->nopen > 0)
		end_open(rc, t, t->nopen - 1, end, end_untrusted, skipped);
	t->last_start_id = 0;
}

/*
 * Async spans: a start and its stop may come from threads on different
 * rings, so either may be read first. Each waits in the table, keyed by id,
 * for the other; a stop takes a start no later than itself, and a start a
 * stop no earlier, so an id used again and again pairs in time order.
 */
static struct span_node **find_span(struct orbit_reconstruct *rc, uint64_t id, int stop,
                                    uint64_t time)
{
	struct span_node **p = &rc->spans[hash64(id, SPAN_BUCKETS)];
	for (; *p; p = &(*p)->next) {
		const struct span_node *n = *p;
		if (n->item.id == id && n->stop == stop &&
		    (stop ? n->stop_time >= time : n->item.start <= time))
			return p;
	}
	return NULL;
}

static struct span_node *add_span(struct orbit_reconstruct *rc, uint64_t id)
{
	struct span_node *n = calloc(1, sizeof *n);
	if (n == NULL)
		return NULL;
	uint32_t h = hash64(id, SPAN_BUCKETS);
	n->item.id = id;
	n->next = rc->spans[h];
	rc->spans[h] = n;
	return n;
}

static void end_span(struct orbit_reconstruct *rc, struct span_node **p, uint64_t end,
                     uint32_t end_tid, int end_untrusted)
{
	struct span_node *n = *p;
	*p = n->next;
	emit_item(rc, ORBIT_EVENT_ASYNC, &n->item, end, end_tid, 0, end_untrusted);
	free(n->item.name.heap);
	free(n);
}

static int open_span(struct orbit_reconstruct *rc, const struct orbit_record *head,
                     struct name_buf *name, int incomplete, int untrusted)
{
	struct span_node **waiting = find_span(rc, head->id, 1, head->time);
	if (waiting == NULL && rc->open_spans >= MAX_OPEN_SPANS) {
		/* Memory follows what is open, within a bound: past it a start is
		 * reported at once, unfinished, rather than kept. */
		struct open_item it = {.id = head->id,
		                       .start = head->time,
		                       .tid = head->tid,
		                       .name = *name,
		                       .incomplete = incomplete,
		                       .untrusted = untrusted};
		it.has_attrs = attrs_of(head, &it.color, &it.group);
		it.site = orbit__record_site(head);
		emit_item(rc, ORBIT_EVENT_ASYNC, &it, head->time, head->tid, 1, 0);
		return 0;
	}
	struct span_node *n = waiting ? *waiting : add_span(rc, head->id);
	if (n == NULL)
		return -ENOMEM;
	if (waiting == NULL)
		rc->open_spans++;
	n->item.start = head->time;
	n->item.tid = head->tid;
	n->item.name = *name;
	n->item.incomplete = incomplete;
	n->item.untrusted = untrusted;
	n->item.has_attrs = attrs_of(head, &n->item.color, &n->item.group);
	n->item.site = orbit__record_site(head);
	memset(name, 0, sizeof *name);
	if (waiting) {
		n->stop = 0;
		rc->waiting_stops--;
		end_span(rc, waiting, n->stop_time, n->stop_tid, n->stop_untrusted);
	}
	return 0;
}

/* A head record whose whole name is known (or never will be); flags: the
 * head's and its continuations'. */
static int complete_head(struct orbit_reconstruct *rc, struct thread_state *t,
                         const struct orbit_record *head, struct name_buf *name, int incomplete,
                         uint8_t flags)
{
	if (incomplete)
		rc->stats.incomplete_names++;
	int untrusted = (flags & ORBIT_REC_FLAG_TIME_UNTRUSTED) != 0;
	int err = 0;
	switch (head->kind) {
	case ORBIT_REC_SCOPE_START:
		return push_scope(rc, t, head, name, incomplete, untrusted);
	case ORBIT_REC_ASYNC_START:
		return open_span(rc, head, name, incomplete, untrusted);
	case ORBIT_REC_THREAD_NAME:
	default: {                     /* the value kinds */
		struct orbit_event ev; /* every field set: see emit_item */
		ev.type = head->kind == ORBIT_REC_THREAD_NAME ? ORBIT_EVENT_THREAD_NAME
		                                              : ORBIT_EVENT_VALUE;
		ev.tid = head->tid;
		ev.end_tid = head->tid;
		ev.depth = 0;
		ev.unfinished = 0;
		ev.name_incomplete = incomplete;
		ev.time_untrusted = untrusted;
		ev.id = 0;
		ev.start = head->time;
		ev.end = head->time;
		ev.open_until = head->time;
		ev.name = name_data(name);
		ev.name_len = name->len;
		ev.has_attrs = attrs_of(head, &ev.color, &ev.group);
		ev.site = orbit__record_site(head);
		ev.value_kind = head->kind;
		ev.value_bits = head->id;
		if (untrusted)
			rc->stats.untrusted_events++;
		rc->fn(rc->ctx, &ev);
		name->len = 0;
		break;
	}
	}
	return err;
}

static int flush_pending(struct orbit_reconstruct *rc, struct thread_state *t)
{
	if (!t->pending)
		return 0;
	t->pending = 0;
	return complete_head(rc, t, &t->head, &t->name, 1, t->pending_flags);
}

static void stop_scope(struct orbit_reconstruct *rc, struct thread_state *t,
                       const struct orbit_record *r)
{
	size_t k = t->nopen;
	while (k > 0 && t->open[k - 1].id != r->id)
		k--;
	if (k == 0) {
		rc->stats.unmatched_stops++;
		return;
	}
	/* Scopes opened inside the one stopping never got their stop: they
	 * end with it. */
	int untrusted = (r->flags & ORBIT_REC_FLAG_TIME_UNTRUSTED) != 0;
	while (t->nopen > k)
		end_open(rc, t, t->nopen - 1, r->time, untrusted, 1);
	/* The top: its slot stays as it is until the next push. */
	const struct open_item *it = &t->open[--t->nopen];
	t->finished++;
	decide(rc, t, it);
	finish_scope(rc, t, it, r->time, r->tid, 0, untrusted);
}

static int stop_span(struct orbit_reconstruct *rc, const struct orbit_record *r)
{
	int untrusted = (r->flags & ORBIT_REC_FLAG_TIME_UNTRUSTED) != 0;
	struct span_node **p = find_span(rc, r->id, 0, r->time);
	if (p != NULL) {
		rc->open_spans--;
		end_span(rc, p, r->time, r->tid, untrusted);
		return 0;
	}
	if (rc->waiting_stops >= MAX_WAITING_STOPS) { /* starts lost, or hostile */
		rc->stats.unmatched_stops++;
		return 0;
	}
	struct span_node *n = add_span(rc, r->id);
	if (n == NULL)
		return -ENOMEM;
	rc->waiting_stops++;
	n->stop = 1;
	n->stop_time = r->time;
	n->stop_tid = r->tid;
	n->stop_untrusted = untrusted;
	return 0;
}

static int continuation(struct orbit_reconstruct *rc, struct thread_state *t,
                        const struct orbit_record *r)
{
	if (!t->pending || r->id != t->head.id || r->len != t->next_part) {
		rc->stats.orphan_continuations++;
		return flush_pending(rc, t);
	}
	size_t want = t->head.len - t->name.len;
	size_t take = want < ORBIT_RECORD_NAME ? want : ORBIT_RECORD_NAME;
	if (name_append(&t->name, r->name, take) != 0)
		return -ENOMEM;
	t->next_part++;
	t->pending_flags |= r->flags;
	if (t->name.len < t->head.len)
		return 0;
	t->pending = 0;
	return complete_head(rc, t, &t->head, &t->name, 0, t->pending_flags);
}

/* One valid record of thread t. */
static int add_record(struct orbit_reconstruct *rc, struct thread_state *t,
                      const struct orbit_record *r)
{
	if (r->kind == ORBIT_REC_NAME_CONT)
		return continuation(rc, t, r);
	int err = flush_pending(rc, t);
	if (err)
		return err;
	switch (r->kind) {
	case ORBIT_REC_SCOPE_STOP:
		stop_scope(rc, t, r);
		t->last_scope_time = r->time;
		return 0;
	case ORBIT_REC_ASYNC_STOP:
		return stop_span(rc, r);
	case ORBIT_REC_THREAD_END:
		rc->stats.thread_ends++;
		end_thread(rc, t, r->time, (r->flags & ORBIT_REC_FLAG_TIME_UNTRUSTED) != 0, 1);
		return 0;
	case ORBIT_REC_SCOPE_START:
		/* Scope ids of one thread only increase: one not above the
		 * last is a new thread under a reused id, whose thread-end
		 * record never came. The old one was alive at its last scope
		 * record; a value or a name since may be either thread's (a
		 * new thread names itself first), so its scopes end there. */
		if (r->id <= t->last_start_id) {
			rc->stats.reused_tids++;
			end_thread(rc, t, t->last_scope_time, 0, 0);
		}
		t->last_start_id = r->id;
		t->last_scope_time = r->time;
		break;
	default:
		break;
	}
	const uint8_t *inl;
	size_t n = orbit__record_head_name(r, &inl);
	t->name.len = 0;
	if (name_append(&t->name, inl, n) != 0)
		return -ENOMEM;
	if (n < r->len) { /* continuations follow */
		t->pending = 1;
		t->head = *r;
		t->next_part = 1;
		t->pending_flags = r->flags;
		return 0;
	}
	return complete_head(rc, t, r, &t->name, 0, r->flags);
}

static int add_to(struct orbit_reconstruct *rc, struct thread_state *t,
                  const struct orbit_record *r)
{
	int err = add_record(rc, t, r);
	t->last_time = r->time;
	if (r->time > rc->last_time)
		rc->last_time = r->time;
	return err;
}

int orbit__reconstruct_add(struct orbit_reconstruct *rc, const struct orbit_record *r)
{
	rc->stats.records++;
	if (r->kind == 0 || r->kind > ORBIT_REC_KIND_MAX || (r->flags & ~ORBIT_REC_FLAGS_KNOWN)) {
		rc->stats.bad_records++;
		return 0;
	}
	struct thread_state *t = thread_get(rc, r->tid);
	return t == NULL ? -ENOMEM : add_to(rc, t, r);
}

/* Records of ring may have been lost here: its threads' open scopes become
 * suspect, and a name still waiting for continuations ends incomplete. */
static int gap(struct orbit_reconstruct *rc, uint32_t ring)
{
	rc->stats.gaps++;
	for (uint32_t b = 0; b < THREAD_BUCKETS; b++) {
		for (struct thread_state *t = rc->threads[b]; t; t = t->next) {
			if (t->ring != ring + 1)
				continue;
			int err = flush_pending(rc, t);
			if (err)
				return err;
			/* Suspect scopes are decided: around what came before
			 * the gap, under nothing after it. */
			for (size_t i = 0; i < t->nopen; i++) {
				if (!t->open[i].suspect)
					t->open[i].suspect_until = t->last_time;
				t->open[i].suspect = 1;
				t->open[i].undecided = 0;
			}
			t->nsuspect = t->nopen;
			t->nundecided = 0;
			flush_held(rc, t);
		}
	}
	return 0;
}

int orbit__reconstruct_batch(struct orbit_reconstruct *rc, uint32_t ring, uint64_t first_claim,
                             const uint8_t *records, size_t n)
{
	if (ring >= ORBIT_MAX_RINGS)
		return -EINVAL;
	if (rc->next_claim[ring] != 0 && rc->next_claim[ring] != first_claim + 1) {
		int err = gap(rc, ring);
		if (err)
			return err;
	}
	rc->next_claim[ring] = first_claim + n + 1;
	for (size_t i = 0; i < n; i++) {
		struct orbit_record rec;
		rc->stats.records++;
		if (orbit__record_decode(records + i * ORBIT_RECORD_SIZE, &rec) != 0) {
			rc->stats.bad_records++;
			continue;
		}
		struct thread_state *t = thread_get(rc, rec.tid);
		if (t == NULL)
			return -ENOMEM;
		t->ring = ring + 1;
		int err = add_to(rc, t, &rec);
		if (err)
			return err;
	}
	return 0;
}

struct orbit_reconstruct *orbit__reconstruct_new(orbit_event_fn fn, void *ctx)
{
	struct orbit_reconstruct *rc = calloc(1, sizeof *rc);
	if (rc == NULL)
		return NULL;
	rc->fn = fn;
	rc->ctx = ctx;
	return rc;
}

void orbit__reconstruct_finish(struct orbit_reconstruct *rc)
{
	for (uint32_t b = 0; b < THREAD_BUCKETS; b++) {
		for (struct thread_state *t = rc->threads[b]; t; t = t->next) {
			flush_pending(rc, t);
			end_thread(rc, t, t->last_time, 0, 0);
		}
	}
	for (uint32_t b = 0; b < SPAN_BUCKETS; b++) {
		while (rc->spans[b]) {
			struct span_node *n = rc->spans[b];
			rc->spans[b] = n->next;
			if (n->stop)
				rc->stats.unmatched_stops++;
			else /* open when the input ended */
				emit_item(rc, ORBIT_EVENT_ASYNC, &n->item, rc->last_time,
				          n->item.tid, 1, 0);
			free(n->item.name.heap);
			free(n);
		}
	}
}

const struct orbit_reconstruct_stats *orbit__reconstruct_stats(const struct orbit_reconstruct *rc)
{
	return &rc->stats;
}

void orbit__reconstruct_free(struct orbit_reconstruct *rc)
{
	if (rc == NULL)
		return;
	for (uint32_t b = 0; b < THREAD_BUCKETS; b++) {
		struct thread_state *t = rc->threads[b];
		while (t) {
			struct thread_state *next = t->next;
			free_thread(t);
			t = next;
		}
	}
	for (uint32_t b = 0; b < SPAN_BUCKETS; b++) {
		struct span_node *n = rc->spans[b];
		while (n) {
			struct span_node *next = n->next;
			free(n->item.name.heap);
			free(n);
			n = next;
		}
	}
	free(rc);
}
