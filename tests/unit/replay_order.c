/* replay_order.c — the tie order of replay/replay_order.c. Random scope
 * trees on one thread, with many equal timestamps and zero-length scopes,
 * go in as the reconstructor reports them (each scope when it ends); what
 * comes out, sorted by timestamp with file order kept on ties (what
 * Perfetto's trace processor and chrome://tracing do), must rebuild exactly
 * the tree: begin/end pairs that close the scope they opened, at its depth
 * (Perfetto), and complete events that nest at their depth (Chrome).
 * Cases: perfetto, chrome, hold (the ORBIT_RP_HOLD_MAX limit). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_internal.h"

#define MAX_SCOPES 4096
#define MAX_DEPTH 8

struct scope {
	uint64_t start, end;
	uint32_t depth;
};

struct out {
	uint32_t id; /* index of the scope */
	int end;
	uint64_t ts;
};

static struct scope sc[MAX_SCOPES];
static uint32_t nsc;
static struct out outs[2 * MAX_SCOPES];
static uint32_t nout;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static void emit(void *ctx, const struct orbit_rp_span *s, int end)
{
	(void)ctx;
	CHECK(nout < 2 * MAX_SCOPES);
	outs[nout++] = (struct out){(uint32_t)s->id, end, end ? s->end : s->start};
}

/* A random tree, each scope handed to the orderer when it ends. With
 * no_end_ties, no zero-length scope ends with its parent (complete events
 * cannot say which of the two encloses the other). */
static void tree(struct orbit_rp_order *o, uint32_t ops, unsigned tie_pct, int no_end_ties)
{
	uint32_t stack[MAX_DEPTH], depth = 0, last_depth = 0;
	uint64_t t = 1000, last_end = 0;
	nsc = nout = 0;
	for (uint32_t i = 0; i < ops || depth > 0; i++) {
		if (test_rand(&rng) % 100 >= tie_pct)
			t += 1 + test_rand(&rng) % 3;
		int push = i < ops && depth < MAX_DEPTH && nsc < MAX_SCOPES && test_rand(&rng) % 2;
		if (push || depth == 0) {
			if (nsc == MAX_SCOPES)
				break;
			sc[nsc] = (struct scope){t, 0, depth};
			stack[depth++] = nsc++;
			continue;
		}
		uint32_t k = stack[--depth];
		if (no_end_ties && last_end == t && last_depth > depth)
			t++; /* a child that just ended here would end with its parent */
		sc[k].end = t;
		last_end = t;
		last_depth = depth;
		struct orbit_rp_span sp = {
		    .pid = 1,
		    .tid = 1,
		    .depth = sc[k].depth,
		    .id = k,
		    .start = sc[k].start,
		    .end = t,
		    .name_id = 0,
		    .name = "s",
		    .name_len = 1,
		};
		orbit__rp_order_scope(o, &sp, emit, NULL);
	}
	orbit__rp_order_flush(o, emit, NULL);
}

static int out_cmp(const void *a, const void *b)
{
	const struct out *x = a, *y = b;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x > y) - (x < y); /* stable: callers sort an index-tagged copy */
}

struct tagged {
	struct out o;
	uint32_t pos;
};

static int tagged_cmp(const void *a, const void *b)
{
	const struct tagged *x = a, *y = b;
	if (x->o.ts != y->o.ts)
		return x->o.ts < y->o.ts ? -1 : 1;
	return x->pos < y->pos ? -1 : 1;
}

static struct tagged sorted[2 * MAX_SCOPES];

static void sort_outs(void)
{
	for (uint32_t i = 0; i < nout; i++)
		sorted[i] = (struct tagged){outs[i], i};
	qsort(sorted, nout, sizeof *sorted, tagged_cmp);
	(void)out_cmp;
}

/* Perfetto: a begin pushes, an end closes the innermost open slice. */
static void check_perfetto(void)
{
	uint32_t stack[MAX_SCOPES], depth = 0, begins = 0;
	CHECK_EQ_U64(nout, 2 * nsc);
	sort_outs();
	for (uint32_t i = 0; i < nout; i++) {
		const struct out *o = &sorted[i].o;
		if (!o->end) {
			CHECK_EQ_U64(depth, sc[o->id].depth);
			stack[depth++] = o->id;
			begins++;
		} else {
			CHECK(depth > 0);
			CHECK_EQ_U64(stack[depth - 1], o->id);
			depth--;
		}
	}
	CHECK_EQ_U64(begins, nsc);
	CHECK_EQ_U64(depth, 0);
}

/* Chrome: complete events sorted by start; one is inside the innermost
 * open one that has not ended by its start. */
static void check_chrome(void)
{
	uint64_t ends[MAX_SCOPES];
	uint32_t depth = 0;
	sort_outs();
	for (uint32_t i = 0; i < nout; i++) {
		const struct out *o = &sorted[i].o;
		if (o->end)
			continue;
		while (depth > 0 && ends[depth - 1] <= o->ts)
			depth--;
		CHECK_EQ_U64(depth, sc[o->id].depth);
		ends[depth++] = sc[o->id].end;
	}
}

/* 3000 random trees, their order checked as Chrome or Perfetto reads it. */
static void random_trees(int chrome)
{
	struct orbit_rp_order o;
	memset(&o, 0, sizeof o);
	for (int trial = 0; trial < 3000; trial++) {
		tree(&o, 50 + (uint32_t)(test_rand(&rng) % 1500), (unsigned)(trial % 10) * 10,
		     chrome);
		if (chrome)
			check_chrome();
		else
			check_perfetto();
		CHECK_EQ_U64(o.n, 0);
	}
	orbit__rp_order_free(&o);
}

static void case_perfetto(void)
{
	random_trees(0);
}

static void case_chrome(void)
{
	random_trees(1);
}

/* Everything at one instant: every scope ties with its parent, so
 * everything is held, up to the limit; nothing is lost. */
static void case_hold(void)
{
	struct orbit_rp_order o;
	memset(&o, 0, sizeof o);
	tree(&o,
	     3 * ORBIT_RP_HOLD_MAX / 2 < MAX_SCOPES ? 3 * ORBIT_RP_HOLD_MAX / 2 : MAX_SCOPES - 1,
	     100, 0);
	CHECK_EQ_U64(nout, 2 * nsc);
	uint32_t seen[MAX_SCOPES] = {0};
	for (uint32_t i = 0; i < nout; i++)
		seen[outs[i].id] += outs[i].end ? 16 : 1;
	for (uint32_t i = 0; i < nsc; i++)
		CHECK_EQ_U64(seen[i], 17);
	orbit__rp_order_free(&o);
}

static const struct test_case cases[] = {
    {"perfetto", case_perfetto},
    {"chrome", case_chrome},
    {"hold", case_hold},
};

TEST_MAIN(cases)
