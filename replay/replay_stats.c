/*
 * replay_stats.c — statistics per name and per thread, and the tables
 * they sort into, for the summaries (replay_export_summary.c,
 * replay_export_json.c) and any exporter that shows them.
 *
 * Self time: when a scope at depth d ends, its children (depth d + 1) have
 * all ended before it, so a per-thread sum of the time of finished scopes
 * at each depth gives the children's time; self = duration - children.
 * That needs every scope of the thread, so it is computed before the
 * filters. A scope reported unfinished has no duration: its children's
 * time is dropped with it.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

#define MAX_DEPTH 256u /* deeper scopes: self time = duration, not counted in their parent */

/* ---- accumulation ---- */

uint64_t orbit__rp_self_time(struct orbit_rp_thread *t, uint32_t depth, uint64_t dur,
                             int unfinished)
{
	if (depth + 2 > t->nchild) {
		if (depth + 2 > MAX_DEPTH)
			return unfinished ? 0 : dur;
		uint32_t n = t->nchild ? t->nchild : 8;
		while (n < depth + 2)
			n *= 2;
		uint64_t *c = realloc(t->child, n * sizeof *c);
		if (c == NULL)
			return unfinished ? 0 : dur;
		memset(c + t->nchild, 0, (n - t->nchild) * sizeof *c);
		t->child = c;
		t->nchild = n;
	}
	uint64_t kids = t->child[depth + 1];
	t->child[depth + 1] = 0;
	if (unfinished)
		return 0;
	t->child[depth] += dur;
	return dur > kids ? dur - kids : 0;
}

/* Entry id of the array *a of *n, grown as needed; other when out of
 * memory or without an id. */
static struct orbit_rp_stat *stat_in(struct orbit_rp_stat **a, uint32_t *n, uint32_t id,
                                     struct orbit_rp_stat *other)
{
	if (id == ORBIT_RP_NAME_NONE)
		return other;
	if (id >= *n) {
		uint32_t cap = *n ? *n : 256;
		while (cap <= id)
			cap *= 2;
		struct orbit_rp_stat *s = realloc(*a, cap * sizeof *s);
		if (s == NULL)
			return other;
		memset(s + *n, 0, (cap - *n) * sizeof *s);
		*a = s;
		*n = cap;
	}
	return &(*a)[id];
}

static struct orbit_rp_stat *stat_of(struct orbit_rp_stats *st, int async, uint32_t id)
{
	return async ? stat_in(&st->async, &st->nasync, id, &st->other_async)
	             : stat_in(&st->scope, &st->nscope, id, &st->other_scope);
}

static struct orbit_rp_stat *loc_stat_of(struct orbit_rp_stats *st, int async,
                                         const struct orbit_rp_location *loc)
{
	uint32_t id = loc ? loc->id : ORBIT_RP_NAME_NONE;
	return async ? stat_in(&st->loc_async, &st->nloc_async, id, &st->no_loc_async)
	             : stat_in(&st->loc_scope, &st->nloc_scope, id, &st->no_loc_scope);
}

/* One finished span's duration into x (0 when unfinished). */
static int stat_add(struct orbit_rp_stats *st, struct orbit_rp_stat *x,
                    const struct orbit_rp_span *s)
{
	if (x->name1 == 0 && s->name_id != ORBIT_RP_NAME_NONE)
		x->name1 = s->name_id + 1;
	if (s->flags & ORBIT_RP_UNFINISHED) {
		x->unfinished++;
		return 0;
	}
	uint64_t d = s->end - s->start;
	if (x->count == 0 || d < x->min)
		x->min = d;
	if (d > x->max)
		x->max = d;
	x->count++;
	x->total += d;
	x->self += s->self;
	orbit__rp_hist_add(&x->hist, d, &st->hist_budget);
	if (s->sched != NULL) {
		x->sched_count++;
		x->sched_total += d;
		x->oncpu += s->sched->oncpu_ns;
		x->runnable += s->sched->runnable_ns;
		x->blocked += s->sched->blocked_ns;
	}
	return 1;
}

void orbit__rp_stats_span(struct orbit_rp_stats *st, const struct orbit_rp_span *s)
{
	int async = (s->flags & ORBIT_RP_ASYNC) != 0;
	if (st->by_location)
		stat_add(st, loc_stat_of(st, async, s->loc), s);
	int finished = stat_add(st, stat_of(st, async, s->name_id), s);
	uint64_t d = s->end - s->start;
	struct orbit_rp_thread *t = s->thread;
	if (t == NULL || async)
		return;
	if (finished)
		t->scopes++;
	/* A thread caught inside its scopes (a crash, a dump) was busy in them
	 * up to the last time they were known open. */
	if (s->depth == 0 && (finished || (s->flags & ORBIT_RP_OPEN_AT_END)))
		t->busy_ns += d;
}

static void stat_array_free(struct orbit_rp_stat *a, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		orbit__rp_hist_free(&a[i].hist);
	free(a);
}

void orbit__rp_stats_free(struct orbit_rp_stats *st)
{
	stat_array_free(st->scope, st->nscope);
	stat_array_free(st->async, st->nasync);
	stat_array_free(st->loc_scope, st->nloc_scope);
	stat_array_free(st->loc_async, st->nloc_async);
	orbit__rp_hist_free(&st->no_loc_scope.hist);
	orbit__rp_hist_free(&st->no_loc_async.hist);
	orbit__rp_hist_free(&st->other_scope.hist);
	orbit__rp_hist_free(&st->other_async.hist);
	orbit__rp_values_free(&st->vals);
	memset(st, 0, sizeof *st);
}

/* ---- tables ---- */

static enum orbit_replay_sort sort_key; /* of the qsort running */

static uint64_t row_key(const struct orbit_rp_row *r)
{
	switch (sort_key) {
	case ORBIT_REPLAY_SORT_SELF:
		return r->st->self;
	case ORBIT_REPLAY_SORT_COUNT:
		return r->st->count;
	case ORBIT_REPLAY_SORT_MAX:
		return r->st->max;
	default:
		return r->st->total;
	}
}

static int row_cmp(const void *a, const void *b)
{
	const struct orbit_rp_row *x = a, *y = b;
	uint64_t kx = row_key(x), ky = row_key(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->st->unfinished != y->st->unfinished)
		return x->st->unfinished > y->st->unfinished ? -1 : 1;
	if (x->label && y->label) { /* by location: the label decides */
		int c = strcmp(x->label, y->label);
		if (c)
			return c;
	}
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

struct orbit_rp_row *orbit__rp_stats_rows(const struct orbit_rp_stats *st,
                                          const struct orbit_rp_names *names, int async,
                                          enum orbit_replay_sort key, size_t *n)
{
	const struct orbit_rp_stat *a = async ? st->async : st->scope;
	uint32_t na = async ? st->nasync : st->nscope;
	if (na > names->n)
		na = names->n;
	struct orbit_rp_row *r = malloc(((size_t)na + 1) * sizeof *r);
	*n = 0;
	if (r == NULL)
		return NULL;
	for (uint32_t i = 0; i < na; i++) {
		if (a[i].count == 0 && a[i].unfinished == 0)
			continue;
		const struct orbit_rp_name *nm = orbit__rp_name(names, i);
		r[(*n)++] = (struct orbit_rp_row){&a[i], nm->bytes, nm->len, NULL, 0, NULL};
	}
	const struct orbit_rp_stat *o = async ? &st->other_async : &st->other_scope;
	if (o->count || o->unfinished)
		r[(*n)++] = (struct orbit_rp_row){o, "[names past the limit]", 22, NULL, 0, NULL};
	sort_key = key;
	qsort(r, *n, sizeof *r, row_cmp);
	return r;
}

struct orbit_rp_row *orbit__rp_stats_loc_rows(const struct orbit_rp_stats *st,
                                              const struct orbit_rp_locations *locs,
                                              const struct orbit_rp_names *names, int async,
                                              enum orbit_replay_sort key, size_t *n)
{
	const struct orbit_rp_stat *a = async ? st->loc_async : st->loc_scope;
	uint32_t na = async ? st->nloc_async : st->nloc_scope;
	if (na > locs->n)
		na = locs->n;
	struct orbit_rp_row *r = malloc(((size_t)na + 1) * sizeof *r);
	*n = 0;
	if (r == NULL)
		return NULL;
	for (uint32_t i = 0; i <= na; i++) {
		const struct orbit_rp_stat *x = i < na  ? &a[i]
		                                : async ? &st->no_loc_async
		                                        : &st->no_loc_scope;
		const struct orbit_rp_location *l = i < na ? locs->all[i] : NULL;
		if ((x->count == 0 && x->unfinished == 0) || (i < na && l == NULL))
			continue;
		struct orbit_rp_row row = {
		    x, "", 0, l ? l->label : "[no location]", l ? l->label_len : 13, l};
		if (x->name1 != 0 && x->name1 - 1 < names->n) {
			row.name = orbit__rp_name(names, x->name1 - 1)->bytes;
			row.len = orbit__rp_name(names, x->name1 - 1)->len;
		}
		r[(*n)++] = row;
	}
	sort_key = key;
	qsort(r, *n, sizeof *r, row_cmp);
	return r;
}

static int thread_cmp(const void *a, const void *b)
{
	const struct orbit_rp_thread *x = *(const struct orbit_rp_thread *const *)a;
	const struct orbit_rp_thread *y = *(const struct orbit_rp_thread *const *)b;
	if (x->busy_ns != y->busy_ns)
		return x->busy_ns > y->busy_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->tid > y->tid) - (x->tid < y->tid);
}

struct orbit_rp_thread **orbit__rp_threads_by_busy(const struct orbit_rp_threads *t, size_t *n)
{
	struct orbit_rp_thread **a = malloc(((size_t)t->n + 1) * sizeof *a);
	*n = 0;
	if (a == NULL)
		return NULL;
	for (uint32_t i = 0; i < t->n; i++)
		if (t->all[i]->stream != NULL) /* had events, not only a name */
			a[(*n)++] = t->all[i];
	if (t->overflow && t->overflow->scopes)
		a[(*n)++] = t->overflow;
	qsort(a, *n, sizeof *a, thread_cmp);
	return a;
}
