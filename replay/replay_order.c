/*
 * replay_order.c — the order in which a thread's scopes reach the
 * exporters, so that viewers nest them right when timestamps tie.
 *
 * The reconstructor reports a scope when it ends: children before their
 * parent (post-order). Perfetto's trace processor and chrome://tracing sort
 * events by timestamp and keep the file order of events with equal
 * timestamps; a viewer builds the nesting from that order. Written in
 * post-order, a parent's begin that has the same timestamp as a child's
 * begin (or end) lands after it, and the child comes out as the parent's
 * sibling or parent. With 10 ns clock steps such ties are real.
 *
 * How it works, per thread:
 *  1. Only a begin can be misplaced, and only against events of its own
 *     descendants that have exactly its timestamp: every other event of a
 *     descendant is later in time, every end is already in record order.
 *  2. So when a scope S (depth d, start s) ends, its begin is held, with the
 *     events of its descendants that have timestamp s, in a group (s, d),
 *     until the scope at depth d - 1 that encloses it ends too. Its end is
 *     written at once unless it is also at s.
 *  3. When a scope P at depth k ends, every group deeper than k belongs to
 *     its descendants. Groups whose time is P's start follow P's begin into
 *     P's own group; the others can no longer tie with anything still open
 *     and are written, in the order they were held.
 *  4. A group is written at once when nothing can tie with its begin: at
 *     depth 0 (no parent), and when an earlier sibling of the scope
 *     already holds a group at an earlier time (the parent began no later
 *     than that sibling). So a level holds one group, for its first child.
 * A held event therefore waits only while some open scope may start at its
 * exact timestamp: held events share one timestamp per level, a handful in
 * practice. ORBIT_RP_HOLD_MAX bounds them anyway (hostile captures): past it
 * a thread's held events are written as they are.
 */
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

struct orbit_rp_item {
	struct orbit_rp_span span;
	int end;
	char *owned;                      /* the name, when it has no id */
	struct orbit_rp_sched_time sched; /* a copy of *span.sched, when it has one */
};

struct orbit_rp_group {
	uint64_t t;
	uint32_t depth;
	uint32_t first; /* index of its first item */
};

static void item_emit(struct orbit_rp_item *it, orbit_rp_emit_fn fn, void *ctx)
{
	if (it->span.sched != NULL) /* items move: point at this one's copy */
		it->span.sched = &it->sched;
	fn(ctx, &it->span, it->end);
	free(it->owned);
	it->owned = NULL;
}

static int order_room(struct orbit_rp_order *o, uint32_t items, uint32_t groups)
{
	if (o->n + items > o->cap) {
		uint32_t cap = o->cap ? o->cap : 16;
		while (cap < o->n + items)
			cap *= 2;
		struct orbit_rp_item *it = realloc(o->items, cap * sizeof *it);
		if (it == NULL)
			return -1;
		o->items = it;
		o->cap = cap;
	}
	if (o->ng + groups > o->gcap) {
		uint32_t cap = o->gcap ? o->gcap * 2 : 8;
		struct orbit_rp_group *g = realloc(o->groups, cap * sizeof *g);
		if (g == NULL)
			return -1;
		o->groups = g;
		o->gcap = cap;
	}
	return 0;
}

static int item_set(struct orbit_rp_item *it, const struct orbit_rp_span *s, int end)
{
	it->span = *s;
	it->end = end;
	it->owned = NULL;
	if (s->sched != NULL) /* valid during the call only: kept with the item */
		it->sched = *s->sched;
	if (s->name_id != ORBIT_RP_NAME_NONE || s->name_len == 0)
		return 0;
	it->owned = malloc(s->name_len);
	if (it->owned == NULL)
		return -1;
	memcpy(it->owned, s->name, s->name_len);
	it->span.name = it->owned;
	return 0;
}

void orbit__rp_order_flush(struct orbit_rp_order *o, orbit_rp_emit_fn fn, void *ctx)
{
	for (uint32_t i = 0; i < o->n; i++)
		item_emit(&o->items[i], fn, ctx);
	o->n = 0;
	o->ng = 0;
}

/* Holds nothing more: writes every held event, then both ends of s. */
static void order_give_up(struct orbit_rp_order *o, const struct orbit_rp_span *s,
                          orbit_rp_emit_fn fn, void *ctx)
{
	orbit__rp_order_flush(o, fn, ctx);
	fn(ctx, s, 0);
	fn(ctx, s, 1);
}

/* Appends the items of the groups from g on (s's descendants) that tie
 * with s's begin to o->items after `at`, writes the others (step 3). */
static void resolve_groups(struct orbit_rp_order *o, uint32_t g, uint64_t t, uint32_t at,
                           orbit_rp_emit_fn fn, void *ctx)
{
	for (uint32_t k = g; k < o->ng; k++) {
		uint32_t end = k + 1 < o->ng ? o->groups[k + 1].first : o->n;
		int keep = o->groups[k].t == t;
		for (uint32_t i = o->groups[k].first; i < end; i++) {
			if (keep)
				o->items[at++] = o->items[i];
			else
				item_emit(&o->items[i], fn, ctx);
		}
	}
	o->n = at;
	o->ng = g;
}

/* Writes the items from base on, then s's end unless it is among them. */
static void order_write(struct orbit_rp_order *o, uint32_t base, const struct orbit_rp_span *s,
                        orbit_rp_emit_fn fn, void *ctx)
{
	for (uint32_t i = base; i < o->n; i++)
		item_emit(&o->items[i], fn, ctx);
	o->n = base;
	fn(ctx, s, 1);
}

void orbit__rp_order_scope(struct orbit_rp_order *o, const struct orbit_rp_span *s,
                           orbit_rp_emit_fn fn, void *ctx)
{
	uint32_t g = o->ng;
	while (g > 0 && o->groups[g - 1].depth > s->depth)
		g--;
	if (order_room(o, 2, 1) != 0) {
		order_give_up(o, s, fn, ctx);
		return;
	}
	/* The begin goes in front of what its descendants' groups keep. */
	uint32_t base = g < o->ng ? o->groups[g].first : o->n;
	size_t after = (o->n - base) * sizeof *o->items;
	memmove(&o->items[base + 1], &o->items[base], after);
	if (item_set(&o->items[base], s, 0) != 0) {
		memmove(&o->items[base], &o->items[base + 1], after);
		order_give_up(o, s, fn, ctx);
		return;
	}
	for (uint32_t k = g; k < o->ng; k++)
		o->groups[k].first++;
	o->n++;
	resolve_groups(o, g, s->start, base + 1, fn, ctx);
	/* A group left at s's depth is an earlier sibling's: the parent began
	 * no later than it, so a later begin cannot tie with the parent's. */
	const struct orbit_rp_group *top = o->ng ? &o->groups[o->ng - 1] : NULL;
	int sibling = top != NULL && top->depth == s->depth;
	if (s->depth == 0 || (sibling && top->t != s->start)) {
		order_write(o, base, s, fn, ctx); /* step 4 */
		return;
	}
	if (s->end == s->start && item_set(&o->items[o->n], s, 1) == 0)
		o->n++;
	else
		fn(ctx, s, 1); /* step 2: an end after s ties with nothing held */
	if (!sibling)
		o->groups[o->ng++] = (struct orbit_rp_group){s->start, s->depth, base};
	if (o->n > ORBIT_RP_HOLD_MAX)
		orbit__rp_order_flush(o, fn, ctx);
}

void orbit__rp_order_free(struct orbit_rp_order *o)
{
	for (uint32_t i = 0; i < o->n; i++)
		free(o->items[i].owned);
	free(o->items);
	free(o->groups);
	memset(o, 0, sizeof *o);
}
