/* replay_open.c — the scopes open at the end of a stream; see
 * replay_open.h. */
#include "replay_open.h"

#include <stdlib.h>
#include <string.h>

void orbit__rp_open_note(struct orbit_rp_open *o, uint32_t tid, uint32_t depth, uint64_t start,
                         const char *name, size_t len)
{
	if (o->n == ORBIT_RP_OPEN_MAX) {
		o->dropped++;
		return;
	}
	if (o->n == o->cap) {
		size_t cap = o->cap ? 2 * o->cap : 16;
		struct orbit_rp_open_scope *v = realloc(o->v, cap * sizeof *v);
		if (v == NULL) {
			o->dropped++;
			return;
		}
		o->v = v;
		o->cap = cap;
	}
	struct orbit_rp_open_scope *s = &o->v[o->n++];
	s->tid = tid;
	s->depth = depth;
	s->start = start;
	s->name_len = (uint32_t)(len < ORBIT_RP_OPEN_NAME ? len : ORBIT_RP_OPEN_NAME);
	if (s->name_len)
		memcpy(s->name, name, s->name_len);
	o->sorted = 0;
}

/* By tid (a process's main thread, whose tid is its pid, usually first),
 * then depth, then start. */
static int order(const void *a, const void *b)
{
	const struct orbit_rp_open_scope *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

void orbit__rp_open_sort(struct orbit_rp_open *o)
{
	if (!o->sorted && o->n > 1)
		qsort(o->v, o->n, sizeof *o->v, order);
	o->sorted = 1;
}

void orbit__rp_open_free(struct orbit_rp_open *o)
{
	free(o->v);
	memset(o, 0, sizeof *o);
}
