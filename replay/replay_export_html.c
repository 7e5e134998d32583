/*
 * replay_export_html.c — --html FILE: one self-contained page (code,
 * styles and data inline, nothing fetched) with the timeline, a flame
 * graph and the statistics; docs/replay.md, "--html".
 *
 * The events are kept as they come (scopes and async spans under the cap
 * of --html-max-scopes, replay_export_html_keep.c; values and log lines up
 * to the same number each) and written at the end, when every thread has
 * its final name, as tables of the data block (replay_export_html_data.c)
 * that the page's code (replay/html/) reads:
 *
 *   META  k s v        key (string), text value, number value
 *   STRO, STRB         the string table
 *   PROC  pid name host cmd          one per process (pid), in order seen
 *   STRM  proc file frst last wall recs scop span vals logs thrd clmd dlvd
 *         lost lrec eq   logq cmpl   one per stream: its summary
 *   LANE  kind proc tid name colr attr mrgd scop busy
 *         kind 1: a thread's scopes and logs, 2: a process's async spans,
 *         3: a value track (name: the value's); in display order
 *   SITE  name colr attr file func line     name, colour, source location
 *   ROWS  lane dpth frst cnt t0      one per (lane, depth): the spans
 *         frst .. frst + cnt - 1, sorted by start; t0 the first's start
 *   SPAN  dt dur self site flag      dt: start minus the previous start of
 *         the row (0xffffffff: in SOVR), dur and self in ns (0xffffffff:
 *         in DOVR); flag: enum orbit_rp_flag's low byte
 *   SOVR  idx t        DOVR idx dur self     what did not fit in a u32
 *   SEXT  idx gplo gphi stid etid schd oncp runb blkd   group id, an
 *         async span's start and stop threads, where its time went
 *         (issue 13)
 *   VROW  lane frst cnt                VALS t v      value samples by track
 *   LOGS  lane t text flag             log lines and markers by lane
 *   LOSS  proc from to cnt ring flag   records lost, where (a ring's
 *         loss belongs to its process: a ring holds several threads)
 *   STAT  kind name cnt totl self mean min p50 p95 p99 max unf apx
 *         the statistics of every span (filtered, never capped)
 *   DENS  lane lo w frst               DBIN c    where left-out spans were
 *   THST  lane t0 t1 stat cpu kst wakr thread states (issue 13: empty now)
 *
 * Times are ns after the time origin (docs/replay.md), as doubles (exact
 * up to 104 days) or u32 deltas. Every text, whatever its bytes, is an
 * index into the string table: nothing from a capture is ever HTML.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export.h"
#include "replay_export_html.h"

#define NTABLES 20u
#define TEXT_BYTES (64u << 20) /* log text kept; past it lines keep no text */
#define LOSS_MARKS 65536u
#define ASYNC_ROWS 256u
#define MARKER_SHOWN 64u /* marker bytes shown, in hex */
#define BIG 0xffffffffu
#define NAME_BYTES 65535u /* orbit.h's ORBIT_NAME_MAX */

enum lane_kind { LANE_THREAD = 1, LANE_ASYNC = 2, LANE_VALUE = 3 };

struct proc {
	uint32_t pid;
	uint32_t name, host, cmd;
	uint32_t async_lane; /* + 1; 0: none yet */
};

struct lane {
	uint8_t kind;
	uint8_t attrs;
	uint32_t proc;
	uint32_t tid;
	uint32_t name; /* a value track's name */
	uint32_t color;
	const struct orbit_rp_thread *th;
	uint32_t order; /* its place on the page */
};

struct site {
	uint32_t name, color, file, func, line;
	uint8_t attrs;
	const struct orbit_rp_location *loc;
};

struct value {
	uint64_t t;
	double v;
	uint32_t lane;
};

struct line {
	uint64_t t;
	uint32_t lane, text;
	uint8_t flags;
};

struct loss {
	uint64_t from, to, count;
	uint32_t proc, ring;
	uint8_t flags;
};

struct row_row;
struct vrow_row;
struct meta_row;

/* An open-addressing map from a 64-bit hash to ids; equality is the
 * caller's (the hash may collide). */
struct idmap {
	uint64_t *hash;
	uint32_t *id; /* id + 1; 0: empty */
	size_t mask;
	uint32_t n;
};

struct html {
	struct orbit_rp_html_strs strs;
	struct orbit_rp_html_keep keep;
	struct proc *procs;
	uint32_t nprocs, procs_alloc, last_proc;
	struct lane *lanes;
	uint32_t nlanes, lanes_alloc;
	struct site *sites;
	uint32_t nsites, sites_alloc;
	struct idmap site_map, value_map;
	uint32_t *name_str; /* core name id -> string + 1 */
	uint32_t nname_str;
	struct value *values;
	size_t nvalues, values_alloc;
	uint64_t values_dropped;
	struct line *lines;
	size_t nlines, lines_alloc;
	uint64_t lines_dropped, texts_dropped, text_bytes;
	struct loss *losses;
	uint32_t nlosses, losses_alloc;
	uint64_t losses_dropped;
	size_t limit; /* values and lines kept, each (0: all) */
	int oom;
	struct lane value_key; /* what value_eq and site_eq compare with */
	struct site site_key;
	/* at the end */
	const struct orbit_rp_export *x;
	uint64_t origin;
	const struct orbit_rp_stream **stream_tab;
	struct row_row *row_tab;
	uint32_t *sovr_tab, *dovr_tab, *sext_tab, *dens_tab;
	struct vrow_row *vrow_tab;
	struct orbit_rp_row *stat_rows[2];
	size_t stat_n[2];
	struct meta_row *meta_tab;
};

/* ---- small helpers ---- */

static int grow(void **p, size_t *alloc, size_t n, size_t size)
{
	if (n < *alloc)
		return 0;
	size_t a = *alloc ? *alloc * 2 : 1024;
	void *q = realloc(*p, a * size);
	if (q == NULL)
		return -1;
	*p = q;
	*alloc = a;
	return 0;
}

static int grow32(void **p, uint32_t *alloc, uint32_t n, size_t size)
{
	size_t a = *alloc;
	int r = grow(p, &a, n, size);
	*alloc = (uint32_t)(a > UINT32_MAX ? UINT32_MAX : a);
	return r;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* The slot of hash h whose id eq() accepts, or the empty slot to fill. */
static uint32_t *map_slot(struct idmap *m, uint64_t h, int (*eq)(struct html *, uint32_t),
                          struct html *c)
{
	if ((m->n + 1) * 2 > m->mask) {
		size_t cap = m->mask ? (m->mask + 1) * 2 : 1024;
		uint64_t *hs = calloc(cap, sizeof *hs);
		uint32_t *ids = calloc(cap, sizeof *ids);
		if (hs == NULL || ids == NULL) {
			free(hs);
			free(ids);
			return NULL;
		}
		for (size_t i = 0; m->mask && i <= m->mask; i++) {
			if (m->id[i] == 0)
				continue;
			size_t j = m->hash[i] & (cap - 1);
			while (ids[j])
				j = (j + 1) & (cap - 1);
			hs[j] = m->hash[i];
			ids[j] = m->id[i];
		}
		free(m->hash);
		free(m->id);
		m->hash = hs;
		m->id = ids;
		m->mask = cap - 1;
	}
	size_t j = h & m->mask;
	while (m->id[j] && !(m->hash[j] == h && eq(c, m->id[j] - 1)))
		j = (j + 1) & m->mask;
	m->hash[j] = h;
	return &m->id[j];
}

static void map_free(struct idmap *m)
{
	free(m->hash);
	free(m->id);
}

static uint64_t rel(const struct html *h, uint64_t t)
{
	return t > h->origin ? t - h->origin : 0;
}

/* ---- processes, lanes, sites ---- */

static uint32_t proc_of(struct html *h, uint32_t pid)
{
	if (h->last_proc < h->nprocs && h->procs[h->last_proc].pid == pid)
		return h->last_proc;
	for (uint32_t i = 0; i < h->nprocs; i++)
		if (h->procs[i].pid == pid)
			return h->last_proc = i;
	if (grow32((void **)&h->procs, &h->procs_alloc, h->nprocs, sizeof *h->procs) != 0)
		return BIG;
	h->procs[h->nprocs] =
	    (struct proc){pid, ORBIT_RP_HTML_NO_STR, ORBIT_RP_HTML_NO_STR, ORBIT_RP_HTML_NO_STR, 0};
	return h->last_proc = h->nprocs++;
}

static uint32_t lane_new(struct html *h, uint8_t kind, uint32_t proc, uint32_t tid)
{
	if (grow32((void **)&h->lanes, &h->lanes_alloc, h->nlanes, sizeof *h->lanes) != 0)
		return BIG;
	h->lanes[h->nlanes] =
	    (struct lane){.kind = kind, .proc = proc, .tid = tid, .name = ORBIT_RP_HTML_NO_STR};
	return h->nlanes++;
}

/* The lane of a thread: the exporter's word of the thread holds it + 1. */
static uint32_t thread_lane(struct html *h, const struct orbit_rp_export *x,
                            struct orbit_rp_thread *th, uint32_t pid)
{
	if (th == NULL)
		return BIG;
	if (th->export[x->slot])
		return (uint32_t)th->export[x->slot] - 1;
	uint32_t p = proc_of(h, pid);
	if (p == BIG)
		return BIG;
	uint32_t l = lane_new(h, LANE_THREAD, p, th->tid);
	if (l == BIG)
		return BIG;
	h->lanes[l].th = th;
	th->export[x->slot] = (uint64_t)l + 1;
	return l;
}

static uint32_t async_lane(struct html *h, uint32_t pid)
{
	uint32_t p = proc_of(h, pid);
	if (p == BIG)
		return BIG;
	if (h->procs[p].async_lane == 0) {
		uint32_t l = lane_new(h, LANE_ASYNC, p, 0);
		if (l == BIG)
			return BIG;
		h->procs[p].async_lane = l + 1;
	}
	return h->procs[p].async_lane - 1;
}

static int value_eq(struct html *h, uint32_t id)
{
	const struct lane *l = &h->lanes[id];
	return l->proc == h->value_key.proc && l->name == h->value_key.name &&
	       l->color == h->value_key.color && l->attrs == h->value_key.attrs;
}

static uint32_t value_lane(struct html *h, uint32_t pid, uint32_t name, uint32_t color, int attrs)
{
	uint32_t p = proc_of(h, pid);
	if (p == BIG)
		return BIG;
	h->value_key = (struct lane){
	    .proc = p, .name = name, .color = attrs ? color : 0, .attrs = (uint8_t)attrs};
	uint64_t k = mix((uint64_t)p << 32 ^ name ^ (uint64_t)h->value_key.color << 17 ^
	                 (uint64_t)attrs << 63);
	uint32_t *slot = map_slot(&h->value_map, k, value_eq, h);
	if (slot == NULL)
		return BIG;
	if (*slot)
		return *slot - 1;
	uint32_t l = lane_new(h, LANE_VALUE, p, 0);
	if (l == BIG)
		return BIG;
	h->lanes[l].name = name;
	h->lanes[l].color = h->value_key.color;
	h->lanes[l].attrs = (uint8_t)attrs;
	*slot = l + 1;
	h->value_map.n++;
	return l;
}

static int site_eq(struct html *h, uint32_t id)
{
	const struct site *s = &h->sites[id];
	return s->name == h->site_key.name && s->color == h->site_key.color &&
	       s->attrs == h->site_key.attrs && s->loc == h->site_key.loc;
}

static uint32_t str_of(struct html *h, const char *s, size_t n, size_t max)
{
	return orbit__rp_html_str_intern(&h->strs, s, n < max ? n : max);
}

/* The string of a span's name: the core's name id, looked up once. */
static uint32_t span_name(struct html *h, const struct orbit_rp_span *s)
{
	if (s->name_id == ORBIT_RP_NAME_NONE)
		return str_of(h, s->name, s->name_len, NAME_BYTES);
	if (s->name_id >= h->nname_str) {
		uint32_t n = h->nname_str ? h->nname_str : 1024;
		while (n <= s->name_id)
			n *= 2;
		uint32_t *m = realloc(h->name_str, n * sizeof *m);
		if (m == NULL)
			return ORBIT_RP_HTML_NO_STR;
		memset(m + h->nname_str, 0, (n - h->nname_str) * sizeof *m);
		h->name_str = m;
		h->nname_str = n;
	}
	if (h->name_str[s->name_id] == 0) {
		uint32_t id = orbit__rp_html_str_intern(&h->strs, s->name, s->name_len);
		if (id == ORBIT_RP_HTML_NO_STR)
			return id;
		h->name_str[s->name_id] = id + 1;
	}
	return h->name_str[s->name_id] - 1;
}

static uint32_t site_of(struct html *h, uint32_t name, uint32_t color, int attrs,
                        const struct orbit_rp_location *loc)
{
	h->site_key = (struct site){
	    .name = name, .color = attrs ? color : 0, .attrs = (uint8_t)attrs, .loc = loc};
	uint64_t k = mix((uint64_t)name << 32 ^ h->site_key.color ^ (uint64_t)attrs << 62 ^
	                 (uint64_t)(uintptr_t)loc * 31);
	uint32_t *slot = map_slot(&h->site_map, k, site_eq, h);
	if (slot == NULL)
		return BIG;
	if (*slot)
		return *slot - 1;
	if (grow32((void **)&h->sites, &h->sites_alloc, h->nsites, sizeof *h->sites) != 0)
		return BIG;
	struct site *s = &h->sites[h->nsites];
	*s = h->site_key;
	s->file = s->func = ORBIT_RP_HTML_NO_STR;
	s->line = 0;
	if (loc != NULL) {
		if (loc->file)
			s->file = str_of(h, loc->file, loc->file_len, 4096);
		if (loc->function)
			s->func = str_of(h, loc->function, loc->function_len, 4096);
		s->line = loc->line;
	}
	*slot = ++h->nsites;
	h->site_map.n++;
	return h->nsites - 1;
}

/* ---- the events ---- */

static int html_begin(struct orbit_rp_export *x)
{
	struct html *h = x->state;
	orbit__rp_html_keep_init(&h->keep, x->view->o->html_max_scopes);
	h->limit = x->view->o->html_max_scopes;
	return 0;
}

static void html_stream(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct html *h = x->state;
	uint32_t p = proc_of(h, s->pid);
	if (p == BIG) {
		h->oom = 1;
		return;
	}
	struct proc *pr = &h->procs[p];
	if (s->process && pr->name == ORBIT_RP_HTML_NO_STR)
		pr->name = str_of(h, s->process, strlen(s->process), 4096);
	if (s->host && pr->host == ORBIT_RP_HTML_NO_STR)
		pr->host = str_of(h, s->host, strlen(s->host), 4096);
	if (s->ncmd > 0 && pr->cmd == ORBIT_RP_HTML_NO_STR) {
		size_t len = 0;
		for (size_t i = 0; i < s->ncmd; i++)
			len += strlen(s->cmdline[i]) + 1;
		char *b = malloc(len);
		if (b == NULL)
			return;
		size_t at = 0;
		for (size_t i = 0; i < s->ncmd; i++) {
			size_t n = strlen(s->cmdline[i]);
			memcpy(b + at, s->cmdline[i], n);
			at += n;
			b[at++] = ' ';
		}
		pr->cmd = str_of(h, b, at - 1, 65536);
		free(b);
	}
}

static void html_span(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct html *h = x->state;
	int async = (s->flags & ORBIT_RP_ASYNC) != 0;
	uint32_t lane = async ? async_lane(h, s->pid) : thread_lane(h, x, s->thread, s->pid);
	uint32_t name = span_name(h, s);
	uint32_t site = lane == BIG
	                    ? BIG
	                    : site_of(h, name, s->color, (s->flags & ORBIT_RP_ATTRS) != 0, s->loc);
	if (site == BIG) {
		h->oom = 1;
		return;
	}
	uint32_t depth = async ? 0 : s->depth;
	struct orbit_rp_html_span sp = {
	    .start = s->start,
	    .end = s->end < s->start ? s->start : s->end,
	    .self = async ? 0 : s->self,
	    .lane = lane,
	    .site = site,
	    .depth_flags = (depth > ORBIT_RP_HTML_DEPTH_MAX ? ORBIT_RP_HTML_DEPTH_MAX : depth) |
	                   (s->flags & 0xffu) << 24,
	};
	struct orbit_rp_html_extra e = {.group = s->group, .tid = s->tid, .end_tid = s->end_tid};
	if (s->sched != NULL) {
		e.has_sched = 1;
		e.sched = *s->sched;
	}
	int extra = (s->flags & ORBIT_RP_ATTRS && s->group != 0) || async || e.has_sched;
	if (orbit__rp_html_keep(&h->keep, &sp, extra ? &e : NULL) != 0)
		h->oom = 1;
}

static double value_of(const struct orbit_rp_value *v)
{
	double d;
	switch (v->kind) {
	case ORBIT_REC_INT:
	case ORBIT_REC_INT64:
		return (double)(int64_t)v->bits;
	case ORBIT_REC_UINT:
	case ORBIT_REC_UINT64:
		return (double)v->bits;
	default:
		memcpy(&d, &v->bits, sizeof d);
		return d;
	}
}

static void html_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	struct html *h = x->state;
	if (h->limit && h->nvalues >= h->limit) {
		h->values_dropped++;
		return;
	}
	uint32_t name = str_of(h, v->name, v->name_len, NAME_BYTES);
	uint32_t lane = value_lane(h, v->pid, name, v->color, (v->flags & ORBIT_RP_ATTRS) != 0);
	if (lane == BIG ||
	    grow((void **)&h->values, &h->values_alloc, h->nvalues, sizeof *h->values) != 0) {
		h->oom = 1;
		return;
	}
	h->values[h->nvalues++] = (struct value){v->time, value_of(v), lane};
}

/* A marker's text: "marker" and its first bytes in hex. */
static uint32_t marker_text(struct html *h, const struct orbit_rp_line *l)
{
	static const char hex[] = "0123456789abcdef";
	char b[8 + 3 * MARKER_SHOWN + 8];
	size_t n = (size_t)snprintf(b, sizeof b, "marker");
	for (uint32_t i = 0; i < l->len && i < MARKER_SHOWN; i++) {
		b[n++] = ' ';
		b[n++] = hex[(uint8_t)l->text[i] >> 4];
		b[n++] = hex[(uint8_t)l->text[i] & 15];
	}
	if (l->len > MARKER_SHOWN)
		n += (size_t)snprintf(b + n, sizeof b - n, " ...");
	return orbit__rp_html_str_intern(&h->strs, b, n);
}

static void html_line(struct orbit_rp_export *x, const struct orbit_rp_line *l)
{
	struct html *h = x->state;
	if (h->limit && h->nlines >= h->limit) {
		h->lines_dropped++;
		return;
	}
	uint32_t lane = thread_lane(h, x, l->thread, l->pid);
	if (lane == BIG ||
	    grow((void **)&h->lines, &h->lines_alloc, h->nlines, sizeof *h->lines) != 0) {
		h->oom = 1;
		return;
	}
	uint32_t text = ORBIT_RP_HTML_NO_STR;
	if (l->flags & ORBIT_RP_MARKER)
		text = marker_text(h, l);
	else if (h->text_bytes + l->len <= TEXT_BYTES) {
		text = orbit__rp_html_str_intern(&h->strs, l->text, l->len);
		h->text_bytes += l->len;
	}
	if (text == ORBIT_RP_HTML_NO_STR)
		h->texts_dropped++;
	h->lines[h->nlines++] = (struct line){l->time, lane, text, (uint8_t)l->flags};
}

static void html_loss(struct orbit_rp_export *x, const struct orbit_rp_loss_mark *m)
{
	struct html *h = x->state;
	uint32_t p = proc_of(h, m->stream->pid);
	if (p == BIG || h->nlosses >= LOSS_MARKS ||
	    grow32((void **)&h->losses, &h->losses_alloc, h->nlosses, sizeof *h->losses) != 0) {
		h->losses_dropped++;
		return;
	}
	h->losses[h->nlosses++] =
	    (struct loss){m->from, m->to, m->count, p, m->ring, (uint8_t)m->flags};
}

/* ---- the end: order, rows, tables ---- */

static int lane_cmp(const void *a, const void *b)
{
	const struct lane *x = *(const struct lane *const *)a, *y = *(const struct lane *const *)b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == LANE_THREAD) {
		/* The process's main thread first, then by thread id. */
		const struct orbit_rp_thread *tx = x->th, *ty = y->th;
		int mx = tx->tid == tx->pid, my = ty->tid == ty->pid;
		if (mx != my)
			return mx ? -1 : 1;
		if (x->tid != y->tid)
			return x->tid < y->tid ? -1 : 1;
	}
	return x < y ? -1 : x > y;
}

static int span_cmp(const void *a, const void *b)
{
	const struct orbit_rp_html_span *x = a, *y = b;
	uint32_t dx = x->depth_flags & ORBIT_RP_HTML_DEPTH_MAX,
	         dy = y->depth_flags & ORBIT_RP_HTML_DEPTH_MAX;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	if (dx != dy)
		return dx < dy ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static int value_cmp(const void *a, const void *b)
{
	const struct value *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int line_cmp(const void *a, const void *b)
{
	const struct line *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Lanes in page order; every lane index in the events renumbered. */
static int order_lanes(struct html *h)
{
	const struct lane **by = malloc((h->nlanes + 1) * sizeof *by);
	uint32_t *to = malloc((h->nlanes + 1) * sizeof *to);
	if (by == NULL || to == NULL) {
		free(by);
		free(to);
		return -1;
	}
	for (uint32_t i = 0; i < h->nlanes; i++)
		by[i] = &h->lanes[i];
	qsort(by, h->nlanes, sizeof *by, lane_cmp);
	for (uint32_t i = 0; i < h->nlanes; i++)
		to[by[i] - h->lanes] = i;
	struct lane *sorted = malloc((h->nlanes + 1) * sizeof *sorted);
	if (sorted == NULL) {
		free(by);
		free(to);
		return -1;
	}
	for (uint32_t i = 0; i < h->nlanes; i++)
		sorted[i] = *by[i];
	free(by);
	struct orbit_rp_html_keep *k = &h->keep;
	for (size_t i = 0; i < k->n; i++)
		k->spans[i].lane = to[k->spans[i].lane];
	for (size_t i = 0; i < h->nvalues; i++)
		h->values[i].lane = to[h->values[i].lane];
	for (size_t i = 0; i < h->nlines; i++)
		h->lines[i].lane = to[h->lines[i].lane];
	/* Merged counts and densities are per lane too. */
	uint64_t *merged = calloc(h->nlanes + 1, sizeof *merged);
	struct orbit_rp_html_density **dens = calloc(h->nlanes + 1, sizeof *dens);
	if (merged == NULL || dens == NULL) {
		free(merged);
		free(dens);
		free(sorted);
		free(to);
		return -1;
	}
	for (uint32_t i = 0; i < k->nlanes && i < h->nlanes; i++) {
		merged[to[i]] = k->lane_merged[i];
		dens[to[i]] = k->density[i];
	}
	for (uint32_t i = h->nlanes; i < k->nlanes; i++)
		free(k->density[i]);
	free(k->lane_merged);
	free(k->density);
	k->lane_merged = merged;
	k->density = dens;
	k->nlanes = h->nlanes;
	free(h->lanes);
	h->lanes = sorted;
	h->lanes_alloc = h->nlanes;
	free(to);
	return 0;
}

/* Async spans of each lane, sorted by start, go to the first row free at
 * their start; then the lane is sorted by (row, start) like a thread's. */
static void pack_async(struct html *h)
{
	struct orbit_rp_html_keep *k = &h->keep;
	uint64_t ends[ASYNC_ROWS];
	for (size_t i = 0; i < k->n;) {
		size_t j = i;
		while (j < k->n && k->spans[j].lane == k->spans[i].lane)
			j++;
		if (h->lanes[k->spans[i].lane].kind == LANE_ASYNC) {
			unsigned rows = 0;
			for (size_t m = i; m < j; m++) {
				struct orbit_rp_html_span *s = &k->spans[m];
				int unfinished =
				    ((s->depth_flags >> 24) & ORBIT_RP_UNFINISHED) != 0;
				unsigned r = 0;
				while (r < rows && ends[r] > s->start)
					r++;
				if (r == ASYNC_ROWS)
					r = ASYNC_ROWS - 1;
				else if (r == rows)
					rows++;
				ends[r] = unfinished ? UINT64_MAX : s->end;
				s->depth_flags = (s->depth_flags & ~ORBIT_RP_HTML_DEPTH_MAX) | r;
			}
			qsort(k->spans + i, j - i, sizeof *k->spans, span_cmp);
		}
		i = j;
	}
}

/* ---- writing the tables ---- */

struct meta_row {
	uint32_t k, s;
	double v;
};

#define META_MAX 16u

static uint32_t key(struct html *h, const char *s)
{
	return orbit__rp_html_str_intern(&h->strs, s, strlen(s));
}

static size_t meta_rows(struct html *h, struct meta_row *m)
{
	const struct orbit_replay_options *o = h->x->view->o;
	size_t n = 0;
	char b[512];
	snprintf(b, sizeof b, "%" PRIu64, h->origin);
	m[n++] = (struct meta_row){key(h, "origin_ns"), key(h, b), (double)h->origin};
	m[n++] = (struct meta_row){key(h, "cap"), ORBIT_RP_HTML_NO_STR, (double)h->keep.cap};
	m[n++] = (struct meta_row){key(h, "kept"), ORBIT_RP_HTML_NO_STR, (double)h->keep.n};
	m[n++] = (struct meta_row){key(h, "merged"), ORBIT_RP_HTML_NO_STR, (double)h->keep.merged};
	m[n++] = (struct meta_row){key(h, "merged_max_ns"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->keep.merged_max};
	m[n++] = (struct meta_row){key(h, "values_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->values_dropped};
	m[n++] = (struct meta_row){key(h, "lines_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->lines_dropped};
	m[n++] = (struct meta_row){key(h, "texts_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->texts_dropped};
	m[n++] = (struct meta_row){key(h, "loss_marks_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->losses_dropped};
	m[n++] = (struct meta_row){key(h, "out_of_memory"), ORBIT_RP_HTML_NO_STR,
	                           (double)(h->oom || h->keep.oom)};
	size_t at = 0;
	b[0] = '\0';
	if (o->has_thread)
		at += (size_t)snprintf(b + at, sizeof b - at, "--thread %" PRIu32 " ", o->thread);
	if (o->name && at < sizeof b)
		at += (size_t)snprintf(b + at, sizeof b - at, "--name %.200s ", o->name);
	if (o->from.set && at < sizeof b)
		at += (size_t)snprintf(b + at, sizeof b - at, "--from %s%" PRIu64 " ",
		                       o->from.relative ? "+" : "", o->from.ns);
	if (o->to.set && at < sizeof b)
		at += (size_t)snprintf(b + at, sizeof b - at, "--to %s%" PRIu64 " ",
		                       o->to.relative ? "+" : "", o->to.ns);
	if (at > 0) {
		at = at < sizeof b ? at : sizeof b - 1;
		m[n++] = (struct meta_row){key(h, "filter"), str_of(h, b, at - 1, sizeof b), 0};
	}
	/* Counted last: strings the table could not take. */
	m[n++] = (struct meta_row){key(h, "strings_dropped"), ORBIT_RP_HTML_NO_STR, 0};
	return n;
}

/* A table from rows that get() fills one at a time, column by column. */
struct col {
	char name[5];
	char type;
	size_t off;
};

typedef void (*row_fn)(struct html *h, size_t i, void *row);

#define COL(n, t, type_, field)                                                                    \
	{                                                                                          \
		n, t, offsetof(type_, field)                                                       \
	}

static void table(struct orbit_rp_html_data *d, struct html *h, const char *tag, size_t n,
                  row_fn get, const struct col *cols, unsigned ncols)
{
	_Alignas(8) unsigned char row[256];
	orbit__rp_html_table(d, tag, (uint32_t)n, ncols);
	for (unsigned c = 0; c < ncols; c++) {
		orbit__rp_html_col(d, cols[c].name, cols[c].type);
		for (size_t i = 0; i < n; i++) {
			get(h, i, row);
			const unsigned char *p = row + cols[c].off;
			uint32_t u32;
			uint16_t u16;
			double f;
			switch (cols[c].type) {
			case ORBIT_RP_HTML_U8:
				orbit__rp_html_u8(d, *p);
				break;
			case ORBIT_RP_HTML_U16:
				memcpy(&u16, p, sizeof u16);
				orbit__rp_html_u16(d, u16);
				break;
			case ORBIT_RP_HTML_U32:
				memcpy(&u32, p, sizeof u32);
				orbit__rp_html_u32(d, u32);
				break;
			default:
				memcpy(&f, p, sizeof f);
				orbit__rp_html_f64(d, f);
			}
		}
		orbit__rp_html_col_end(d);
	}
}

#define TABLE(d, h, tag, n, get, cols) table(d, h, tag, n, get, cols, sizeof cols / sizeof cols[0])

/* META */
static void meta_get(struct html *h, size_t i, void *row)
{
	(void)h;
	*(struct meta_row *)row = h->meta_tab[i];
}
static const struct col meta_cols[] = {
    COL("k   ", 'I', struct meta_row, k),
    COL("s   ", 'I', struct meta_row, s),
    COL("v   ", 'd', struct meta_row, v),
};

/* PROC */
struct proc_row {
	uint32_t pid, name, host, cmd;
};
static void proc_get(struct html *h, size_t i, void *row)
{
	const struct proc *p = &h->procs[i];
	*(struct proc_row *)row = (struct proc_row){p->pid, p->name, p->host, p->cmd};
}
static const struct col proc_cols[] = {
    COL("pid ", 'I', struct proc_row, pid),
    COL("name", 'I', struct proc_row, name),
    COL("host", 'I', struct proc_row, host),
    COL("cmd ", 'I', struct proc_row, cmd),
};

/* STRM */
struct stream_row {
	uint32_t proc, file, wall;
	double first, last, records, scopes, spans, values, logs, markers, threads;
	double claimed, delivered, lost, log_lost;
	uint8_t eq, log_eq, complete, handshake;
};
static void stream_get(struct html *h, size_t i, void *row)
{
	const struct orbit_rp_stream *s = h->stream_tab[i];
	struct stream_row *r = row;
	uint64_t first, last, pr, pp, pd;
	char wall[64];
	orbit__rp_stream_span(s, &first, &last);
	orbit__rp_wallclock(s, first, wall, sizeof wall);
	struct orbit_rp_equation t;
	orbit__rp_stream_equation(s, &t);
	orbit__rp_stream_page_loss(s, &pr, &pp, &pd);
	int pe = orbit__rp_page_equation(s);
	uint32_t p = proc_of(h, s->pid);
	*r = (struct stream_row){
	    .proc = p,
	    .file = str_of(h, s->cap->path, strlen(s->cap->path), 4096),
	    .wall = str_of(h, wall, strlen(wall), sizeof wall),
	    .first = (double)rel(h, first),
	    .last = (double)rel(h, last),
	    .records = (double)s->records,
	    .scopes = (double)s->scopes,
	    .spans = (double)s->spans,
	    .values = (double)s->values,
	    .logs = (double)s->logs,
	    .markers = (double)s->markers,
	    .threads = (double)s->threads,
	    .claimed = (double)t.claimed,
	    .delivered = (double)t.delivered,
	    .lost = (double)t.lost,
	    .log_lost = (double)pr,
	    .eq = (uint8_t)(t.holds < 0 ? 2 : t.holds),
	    .log_eq = (uint8_t)(pe < 0 ? 2 : pe),
	    .complete = (uint8_t)s->ended,
	    .handshake = (uint8_t)s->handshake,
	};
}
static const struct col stream_cols[] = {
    COL("proc", 'I', struct stream_row, proc),     COL("file", 'I', struct stream_row, file),
    COL("frst", 'd', struct stream_row, first),    COL("last", 'd', struct stream_row, last),
    COL("wall", 'I', struct stream_row, wall),     COL("recs", 'd', struct stream_row, records),
    COL("scop", 'd', struct stream_row, scopes),   COL("span", 'd', struct stream_row, spans),
    COL("vals", 'd', struct stream_row, values),   COL("logs", 'd', struct stream_row, logs),
    COL("mark", 'd', struct stream_row, markers),  COL("thrd", 'd', struct stream_row, threads),
    COL("clmd", 'd', struct stream_row, claimed),  COL("dlvd", 'd', struct stream_row, delivered),
    COL("lost", 'd', struct stream_row, lost),     COL("lrec", 'd', struct stream_row, log_lost),
    COL("eq  ", 'B', struct stream_row, eq),       COL("logq", 'B', struct stream_row, log_eq),
    COL("cmpl", 'B', struct stream_row, complete), COL("hand", 'B', struct stream_row, handshake),
};

/* LANE */
struct lane_row {
	uint32_t proc, tid, name, color;
	double merged, scopes, busy;
	uint8_t kind, attrs;
};
static void lane_get(struct html *h, size_t i, void *row)
{
	const struct lane *l = &h->lanes[i];
	struct lane_row *r = row;
	*r = (struct lane_row){.proc = l->proc,
	                       .tid = l->tid,
	                       .name = l->name,
	                       .color = l->color,
	                       .kind = l->kind,
	                       .attrs = l->attrs,
	                       .merged = (double)(i < h->keep.nlanes ? h->keep.lane_merged[i] : 0)};
	if (l->kind == LANE_THREAD) {
		const struct orbit_rp_thread *t = l->th;
		r->name = t->name ? str_of(h, t->name, t->name_len, 4096) : ORBIT_RP_HTML_NO_STR;
		r->scopes = (double)t->scopes;
		r->busy = (double)t->busy_ns;
	}
}
static const struct col lane_cols[] = {
    COL("kind", 'B', struct lane_row, kind),   COL("proc", 'I', struct lane_row, proc),
    COL("tid ", 'I', struct lane_row, tid),    COL("name", 'I', struct lane_row, name),
    COL("colr", 'I', struct lane_row, color),  COL("attr", 'B', struct lane_row, attrs),
    COL("mrgd", 'd', struct lane_row, merged), COL("scop", 'd', struct lane_row, scopes),
    COL("busy", 'd', struct lane_row, busy),
};

/* SITE */
static void site_get(struct html *h, size_t i, void *row)
{
	*(struct site *)row = h->sites[i];
}
static const struct col site_cols[] = {
    COL("name", 'I', struct site, name),  COL("colr", 'I', struct site, color),
    COL("attr", 'B', struct site, attrs), COL("file", 'I', struct site, file),
    COL("func", 'I', struct site, func),  COL("line", 'I', struct site, line),
};

/* ROWS: one per (lane, depth) run of the sorted spans. */
struct row_row {
	uint32_t lane, depth, first, count;
	double t0;
};
static void row_get(struct html *h, size_t i, void *row)
{
	(void)h;
	*(struct row_row *)row = h->row_tab[i];
}
static const struct col row_cols[] = {
    COL("lane", 'I', struct row_row, lane),  COL("dpth", 'I', struct row_row, depth),
    COL("frst", 'I', struct row_row, first), COL("cnt ", 'I', struct row_row, count),
    COL("t0  ", 'd', struct row_row, t0),
};

/* SPAN */
struct span_row {
	uint32_t dt, dur, self, site;
	uint16_t site16;
	uint8_t flags;
};
static int first_of_row(const struct orbit_rp_html_span *s, size_t i)
{
	return i == 0 || s[i].lane != s[i - 1].lane ||
	       (s[i].depth_flags & ORBIT_RP_HTML_DEPTH_MAX) !=
	           (s[i - 1].depth_flags & ORBIT_RP_HTML_DEPTH_MAX);
}
static uint64_t span_dt(const struct orbit_rp_html_span *s, size_t i)
{
	return first_of_row(s, i) ? 0 : s[i].start - s[i - 1].start;
}
static void span_get(struct html *h, size_t i, void *row)
{
	const struct orbit_rp_html_span *s = h->keep.spans;
	uint64_t dt = span_dt(s, i), dur = s[i].end - s[i].start;
	*(struct span_row *)row = (struct span_row){
	    .dt = dt >= BIG ? BIG : (uint32_t)dt,
	    .dur = dur >= BIG ? BIG : (uint32_t)dur,
	    .self = dur >= BIG ? BIG : (uint32_t)s[i].self,
	    .site = s[i].site,
	    .site16 = (uint16_t)s[i].site,
	    .flags = (uint8_t)(s[i].depth_flags >> 24),
	};
}
static const struct col span_cols[] = {
    COL("dt  ", 'I', struct span_row, dt),    COL("dur ", 'I', struct span_row, dur),
    COL("self", 'I', struct span_row, self),  COL("site", 'I', struct span_row, site),
    COL("flag", 'B', struct span_row, flags),
};
static const struct col span_cols16[] = {
    COL("dt  ", 'I', struct span_row, dt),    COL("dur ", 'I', struct span_row, dur),
    COL("self", 'I', struct span_row, self),  COL("site", 'H', struct span_row, site16),
    COL("flag", 'B', struct span_row, flags),
};

/* SOVR, DOVR, SEXT: the few spans that need more. */
struct sovr_row {
	uint32_t idx;
	double t;
};
static void sovr_get(struct html *h, size_t i, void *row)
{
	uint32_t k = h->sovr_tab[i];
	*(struct sovr_row *)row = (struct sovr_row){k, (double)rel(h, h->keep.spans[k].start)};
}
static const struct col sovr_cols[] = {
    COL("idx ", 'I', struct sovr_row, idx),
    COL("t   ", 'd', struct sovr_row, t),
};
struct dovr_row {
	uint32_t idx;
	double dur, self;
};
static void dovr_get(struct html *h, size_t i, void *row)
{
	uint32_t k = h->dovr_tab[i];
	const struct orbit_rp_html_span *s = &h->keep.spans[k];
	*(struct dovr_row *)row =
	    (struct dovr_row){k, (double)(s->end - s->start), (double)s->self};
}
static const struct col dovr_cols[] = {
    COL("idx ", 'I', struct dovr_row, idx),
    COL("dur ", 'd', struct dovr_row, dur),
    COL("self", 'd', struct dovr_row, self),
};
struct sext_row {
	uint32_t idx, group_lo, group_hi, tid, end_tid;
	double oncpu, runnable, blocked;
	uint8_t sched;
};
static void sext_get(struct html *h, size_t i, void *row)
{
	uint32_t k = h->sext_tab[i];
	const struct orbit_rp_html_extra *e = &h->keep.extras[h->keep.spans[k].extra];
	*(struct sext_row *)row = (struct sext_row){
	    .idx = k,
	    .group_lo = (uint32_t)e->group,
	    .group_hi = (uint32_t)(e->group >> 32),
	    .tid = e->tid,
	    .end_tid = e->end_tid,
	    .sched = e->has_sched,
	    .oncpu = (double)e->sched.oncpu_ns,
	    .runnable = (double)e->sched.runnable_ns,
	    .blocked = (double)e->sched.blocked_ns,
	};
}
static const struct col sext_cols[] = {
    COL("idx ", 'I', struct sext_row, idx),      COL("gplo", 'I', struct sext_row, group_lo),
    COL("gphi", 'I', struct sext_row, group_hi), COL("stid", 'I', struct sext_row, tid),
    COL("etid", 'I', struct sext_row, end_tid),  COL("schd", 'B', struct sext_row, sched),
    COL("oncp", 'd', struct sext_row, oncpu),    COL("runb", 'd', struct sext_row, runnable),
    COL("blkd", 'd', struct sext_row, blocked),
};

/* VROW, VALS */
struct vrow_row {
	uint32_t lane, first, count;
};
static void vrow_get(struct html *h, size_t i, void *row)
{
	(void)h;
	*(struct vrow_row *)row = h->vrow_tab[i];
}
static const struct col vrow_cols[] = {
    COL("lane", 'I', struct vrow_row, lane),
    COL("frst", 'I', struct vrow_row, first),
    COL("cnt ", 'I', struct vrow_row, count),
};
struct val_row {
	double t, v;
};
static void val_get(struct html *h, size_t i, void *row)
{
	*(struct val_row *)row = (struct val_row){(double)rel(h, h->values[i].t), h->values[i].v};
}
static const struct col val_cols[] = {
    COL("t   ", 'd', struct val_row, t),
    COL("v   ", 'd', struct val_row, v),
};

/* LOGS */
struct log_row {
	uint32_t lane, text;
	double t;
	uint8_t flags;
};
static void log_get(struct html *h, size_t i, void *row)
{
	const struct line *l = &h->lines[i];
	*(struct log_row *)row = (struct log_row){l->lane, l->text, (double)rel(h, l->t), l->flags};
}
static const struct col log_cols[] = {
    COL("lane", 'I', struct log_row, lane),
    COL("t   ", 'd', struct log_row, t),
    COL("text", 'I', struct log_row, text),
    COL("flag", 'B', struct log_row, flags),
};

/* LOSS */
struct loss_row {
	uint32_t proc, ring;
	double from, to, count;
	uint8_t flags;
};
static void loss_get(struct html *h, size_t i, void *row)
{
	const struct loss *l = &h->losses[i];
	*(struct loss_row *)row = (struct loss_row){
	    l->proc,          l->ring, (double)rel(h, l->from), (double)rel(h, l->to),
	    (double)l->count, l->flags};
}
static const struct col loss_cols[] = {
    COL("proc", 'I', struct loss_row, proc), COL("from", 'd', struct loss_row, from),
    COL("to  ", 'd', struct loss_row, to),   COL("cnt ", 'd', struct loss_row, count),
    COL("ring", 'I', struct loss_row, ring), COL("flag", 'B', struct loss_row, flags),
};

/* STAT: every name of the statistics (never cut to --top). */
struct stat_row {
	uint32_t name;
	double count, total, self, mean, min, p50, p95, p99, max, unfinished;
	uint8_t kind, approx;
};
static void stat_get(struct html *h, size_t i, void *row)
{
	int async = i >= h->stat_n[0];
	const struct orbit_rp_row *r = &h->stat_rows[async][async ? i - h->stat_n[0] : i];
	const struct orbit_rp_stat *x = r->st;
	*(struct stat_row *)row = (struct stat_row){
	    .name = str_of(h, r->name, r->len, NAME_BYTES),
	    .count = (double)x->count,
	    .total = (double)x->total,
	    .self = async ? 0 : (double)x->self,
	    .mean = x->count ? (double)x->total / (double)x->count : 0,
	    .min = (double)(x->count ? x->min : 0),
	    .p50 = (double)orbit__rp_hist_pct(&x->hist, 50, x->min, x->max),
	    .p95 = (double)orbit__rp_hist_pct(&x->hist, 95, x->min, x->max),
	    .p99 = (double)orbit__rp_hist_pct(&x->hist, 99, x->min, x->max),
	    .max = (double)x->max,
	    .unfinished = (double)x->unfinished,
	    .kind = (uint8_t)async,
	    .approx = x->hist.approx,
	};
}
static const struct col stat_cols[] = {
    COL("kind", 'B', struct stat_row, kind),   COL("name", 'I', struct stat_row, name),
    COL("cnt ", 'd', struct stat_row, count),  COL("totl", 'd', struct stat_row, total),
    COL("self", 'd', struct stat_row, self),   COL("mean", 'd', struct stat_row, mean),
    COL("min ", 'd', struct stat_row, min),    COL("p50 ", 'd', struct stat_row, p50),
    COL("p95 ", 'd', struct stat_row, p95),    COL("p99 ", 'd', struct stat_row, p99),
    COL("max ", 'd', struct stat_row, max),    COL("unf ", 'd', struct stat_row, unfinished),
    COL("apx ", 'B', struct stat_row, approx),
};

/* DENS, DBIN */
struct dens_row {
	uint32_t lane, first;
	double lo, w;
};
static void dens_get(struct html *h, size_t i, void *row)
{
	const struct orbit_rp_html_density *d = h->keep.density[h->dens_tab[i]];
	/* Bins start at lo in absolute time; the page wants it after the origin. */
	double lo = d->lo >= h->origin ? (double)(d->lo - h->origin) : -(double)(h->origin - d->lo);
	*(struct dens_row *)row = (struct dens_row){
	    h->dens_tab[i], (uint32_t)i * ORBIT_RP_HTML_DENSITY_BINS, lo, (double)d->width};
}
static const struct col dens_cols[] = {
    COL("lane", 'I', struct dens_row, lane),
    COL("lo  ", 'd', struct dens_row, lo),
    COL("w   ", 'd', struct dens_row, w),
    COL("frst", 'I', struct dens_row, first),
};
static void dbin_get(struct html *h, size_t i, void *row)
{
	const struct orbit_rp_html_density *d =
	    h->keep.density[h->dens_tab[i / ORBIT_RP_HTML_DENSITY_BINS]];
	*(uint32_t *)row = d->count[i % ORBIT_RP_HTML_DENSITY_BINS];
}
static const struct col dbin_cols[] = {{"c   ", 'I', 0}};

/*
 * THST: thread states, the hook for issue 13. One row per span of a thread
 * lane's states: [t0, t1) in state stat (enum orbit__rp_sched_state of
 * replay_sched.h: 0 unknown, 1 running, 2 runnable, 3 blocked, 4 dead), on
 * CPU cpu when running (0xffff: none), with the kernel's prev_state kst
 * when blocked (2: D, uninterruptible) and the tid that woke it, wakr
 * (0xffffffff: not known). The page draws a state track under each thread
 * lane that has rows here (html/timeline.js, TRACKS.state), and each
 * scope's split (struct orbit_rp_span.sched) is already in SEXT. Nothing
 * fills it yet: once the sched states reach the exporters, end() looks up
 * each thread lane's struct orbit__rp_sched_thread by tid and writes its
 * spans here (t1: the next span's start, the last one's: the thread's
 * end), sorted by (lane, t0), with the same row struct and columns.
 */
struct thst_row {
	uint32_t lane, kstate, waker;
	double t0, t1;
	uint8_t state;
	uint16_t cpu;
};
static void thst_get(struct html *h, size_t i, void *row)
{
	(void)h;
	(void)i;
	memset(row, 0, sizeof(struct thst_row));
}
static const struct col thst_cols[] = {
    COL("lane", 'I', struct thst_row, lane),  COL("t0  ", 'd', struct thst_row, t0),
    COL("t1  ", 'd', struct thst_row, t1),    COL("stat", 'B', struct thst_row, state),
    COL("cpu ", 'H', struct thst_row, cpu),   COL("kst ", 'I', struct thst_row, kstate),
    COL("wakr", 'I', struct thst_row, waker),
};

/* ---- the end ---- */

struct end_state {
	struct html *h;
	size_t nstreams, nrows, nsovr, ndovr, nsext, nvrows, ndens, nmeta;
	struct meta_row meta[META_MAX];
};

static void write_data(void *ctx, struct orbit_rp_out *o)
{
	struct end_state *e = ctx;
	struct html *h = e->h;
	struct orbit_rp_html_data d;
	orbit__rp_html_data_begin(&d, o, NTABLES);
	TABLE(&d, h, "PROC", h->nprocs, proc_get, proc_cols);
	TABLE(&d, h, "STRM", e->nstreams, stream_get, stream_cols);
	TABLE(&d, h, "LANE", h->nlanes, lane_get, lane_cols);
	TABLE(&d, h, "SITE", h->nsites, site_get, site_cols);
	TABLE(&d, h, "ROWS", e->nrows, row_get, row_cols);
	if (h->nsites <= UINT16_MAX)
		TABLE(&d, h, "SPAN", h->keep.n, span_get, span_cols16);
	else
		TABLE(&d, h, "SPAN", h->keep.n, span_get, span_cols);
	TABLE(&d, h, "SOVR", e->nsovr, sovr_get, sovr_cols);
	TABLE(&d, h, "DOVR", e->ndovr, dovr_get, dovr_cols);
	TABLE(&d, h, "SEXT", e->nsext, sext_get, sext_cols);
	TABLE(&d, h, "VROW", e->nvrows, vrow_get, vrow_cols);
	TABLE(&d, h, "VALS", h->nvalues, val_get, val_cols);
	TABLE(&d, h, "LOGS", h->nlines, log_get, log_cols);
	TABLE(&d, h, "LOSS", h->nlosses, loss_get, loss_cols);
	TABLE(&d, h, "STAT", h->stat_n[0] + h->stat_n[1], stat_get, stat_cols);
	TABLE(&d, h, "DENS", e->ndens, dens_get, dens_cols);
	TABLE(&d, h, "DBIN", e->ndens * ORBIT_RP_HTML_DENSITY_BINS, dbin_get, dbin_cols);
	TABLE(&d, h, "THST", 0, thst_get, thst_cols);
	e->nmeta = meta_rows(h, e->meta);
	e->meta[e->nmeta - 1].v = (double)h->strs.refused;
	h->meta_tab = e->meta;
	TABLE(&d, h, "META", e->nmeta, meta_get, meta_cols);
	orbit__rp_html_strs_write(&d, &h->strs);
	orbit__rp_html_data_end(&d);
}

/* Rows, overrides, extras and value tracks of the sorted events. */
static int index_events(struct end_state *e)
{
	struct html *h = e->h;
	const struct orbit_rp_html_span *s = h->keep.spans;
	size_t n = h->keep.n;
	for (size_t i = 0; i < n; i++) {
		e->nrows += first_of_row(s, i);
		e->nsovr += span_dt(s, i) >= BIG;
		e->ndovr += s[i].end - s[i].start >= BIG;
		e->nsext += s[i].extra != ORBIT_RP_HTML_NO_EXTRA;
	}
	for (size_t i = 0; i < h->nvalues; i++)
		e->nvrows += i == 0 || h->values[i].lane != h->values[i - 1].lane;
	for (uint32_t i = 0; i < h->keep.nlanes; i++)
		e->ndens += h->keep.density[i] != NULL;
	h->row_tab = malloc((e->nrows + 1) * sizeof *h->row_tab);
	h->sovr_tab = malloc((e->nsovr + 1) * sizeof *h->sovr_tab);
	h->dovr_tab = malloc((e->ndovr + 1) * sizeof *h->dovr_tab);
	h->sext_tab = malloc((e->nsext + 1) * sizeof *h->sext_tab);
	h->vrow_tab = malloc((e->nvrows + 1) * sizeof *h->vrow_tab);
	h->dens_tab = malloc((e->ndens + 1) * sizeof *h->dens_tab);
	if (!h->row_tab || !h->sovr_tab || !h->dovr_tab || !h->sext_tab || !h->vrow_tab ||
	    !h->dens_tab)
		return -1;
	size_t r = 0, so = 0, dov = 0, se = 0;
	for (size_t i = 0; i < n; i++) {
		if (first_of_row(s, i))
			h->row_tab[r++] =
			    (struct row_row){s[i].lane, s[i].depth_flags & ORBIT_RP_HTML_DEPTH_MAX,
			                     (uint32_t)i, 0, (double)rel(h, s[i].start)};
		h->row_tab[r - 1].count++;
		if (span_dt(s, i) >= BIG)
			h->sovr_tab[so++] = (uint32_t)i;
		if (s[i].end - s[i].start >= BIG)
			h->dovr_tab[dov++] = (uint32_t)i;
		if (s[i].extra != ORBIT_RP_HTML_NO_EXTRA)
			h->sext_tab[se++] = (uint32_t)i;
	}
	size_t v = 0;
	for (size_t i = 0; i < h->nvalues; i++) {
		if (i == 0 || h->values[i].lane != h->values[i - 1].lane)
			h->vrow_tab[v++] = (struct vrow_row){h->values[i].lane, (uint32_t)i, 0};
		h->vrow_tab[v - 1].count++;
	}
	size_t dn = 0;
	for (uint32_t i = 0; i < h->keep.nlanes; i++)
		if (h->keep.density[i] != NULL)
			h->dens_tab[dn++] = i;
	return 0;
}

static void end_free(struct html *h)
{
	free(h->row_tab);
	free(h->sovr_tab);
	free(h->dovr_tab);
	free(h->sext_tab);
	free(h->vrow_tab);
	free(h->dens_tab);
	free(h->stream_tab);
	free(h->stat_rows[0]);
	free(h->stat_rows[1]);
	h->row_tab = NULL;
	h->sovr_tab = h->dovr_tab = h->sext_tab = h->dens_tab = NULL;
	h->vrow_tab = NULL;
	h->stream_tab = NULL;
	h->stat_rows[0] = h->stat_rows[1] = NULL;
	h->meta_tab = NULL;
}

static void html_end(struct orbit_rp_export *x)
{
	struct html *h = x->state;
	const struct orbit_rp_view *v = x->view;
	struct end_state e = {.h = h};
	h->x = x;
	h->origin = v->origin;
	for (size_t c = 0; c < v->ncaps; c++)
		for (const struct orbit_rp_stream *s = v->caps[c].streams; s; s = s->next)
			e.nstreams++;
	h->stream_tab = malloc((e.nstreams + 1) * sizeof *h->stream_tab);
	if (h->stream_tab == NULL || order_lanes(h) != 0)
		goto oom;
	e.nstreams = 0;
	for (size_t c = 0; c < v->ncaps; c++)
		for (const struct orbit_rp_stream *s = v->caps[c].streams; s; s = s->next)
			h->stream_tab[e.nstreams++] = s;
	qsort(h->keep.spans, h->keep.n, sizeof *h->keep.spans, span_cmp);
	pack_async(h);
	qsort(h->values, h->nvalues, sizeof *h->values, value_cmp);
	qsort(h->lines, h->nlines, sizeof *h->lines, line_cmp);
	for (int async = 0; async < 2; async++) {
		h->stat_rows[async] = orbit__rp_stats_rows(
		    v->stats, v->names, async, ORBIT_REPLAY_SORT_TOTAL, &h->stat_n[async]);
		if (h->stat_rows[async] == NULL)
			goto oom;
	}
	if (index_events(&e) != 0)
		goto oom;
	orbit__rp_html_page(x->out, write_data, &e);
	end_free(h);
	return;
oom:
	end_free(h);
	x->out->err = x->out->err ? x->out->err : ENOMEM;
}

static void html_free(struct orbit_rp_export *x)
{
	struct html *h = x->state;
	orbit__rp_html_strs_free(&h->strs);
	orbit__rp_html_keep_free(&h->keep);
	map_free(&h->site_map);
	map_free(&h->value_map);
	free(h->procs);
	free(h->lanes);
	free(h->sites);
	free(h->name_str);
	free(h->values);
	free(h->lines);
	free(h->losses);
}

static const char *html_wanted(const struct orbit_replay_options *o)
{
	return o->html_path;
}

const struct orbit_rp_exporter orbit__rp_export_html = {
    .name = "html",
    .wanted = html_wanted,
    .state_size = sizeof(struct html),
    .begin = html_begin,
    .stream = html_stream,
    .scope = html_span,
    .async = html_span,
    .value = html_value,
    .line = html_line,
    .loss = html_loss,
    .end = html_end,
    .free = html_free,
};
