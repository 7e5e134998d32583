/*
 * replay_export_html_tables.c — the end of --html: the events kept
 * (replay_export_html.c) put in page order (lanes by process, a process's
 * main thread first; spans by lane, depth and start, async spans packed
 * into rows; values and log lines by lane and time) and written as the
 * tables of the page's data block (replay_export_html_data.c), which the
 * page's code (replay/html/model.js) reads:
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
 *
 *   VROW  lane frst cnt                VALS t v      value samples by track
 *   LOGS  lane t text flag             log lines and markers by lane
 *   LOSS  proc from to cnt ring flag   records lost, where (a ring's
 *         loss belongs to its process: a ring holds several threads)
 *   STAT  kind name cnt totl self mean min p50 p95 p99 max unf apx
 *         the statistics of every span (filtered, never capped)
 *   DENS  lane lo w frst               DBIN c    where left-out spans were
 *   THST  lane t0 t1 stat cpu kst wakr thread states, from the kernel's
 *         scheduling (ORBIT_SCHED), by lane and t0
 *   CPUS  proc cpu t0 t1 lane          when each thread lane ran on each
 *         CPU: the CPU tracks, by proc, cpu and t0
 *
 * Times are ns after the time origin (docs/replay.md), as doubles (exact
 * up to 104 days) or u32 deltas. Every text, whatever its bytes, is an
 * index into the string table: nothing from a capture is ever HTML.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export.h"
#include "replay_html.h"

#define NTABLES 21u
/* States and CPU intervals the page holds at most (each); past it the
 * lanes after are left without (META states_dropped). */
#define STATE_ROWS_MAX (1u << 20)
#define ASYNC_ROWS 256u

struct meta_row {
	uint32_t k, s;
	double v;
};

#define META_MAX 20u

struct row_row;
struct vrow_row;
struct thst_row;
struct cpus_row;

/* What the tables are written from, besides the events. */
struct orbit_rp_html_tables {
	struct orbit_rp_html *h;
	const struct orbit_rp_export *x;
	uint64_t origin;
	const struct orbit_rp_stream **stream_tab;
	struct row_row *row_tab;
	uint32_t *sovr_tab, *dovr_tab, *sext_tab, *dens_tab;
	struct vrow_row *vrow_tab;
	struct orbit_rp_row *stat_rows[2];
	size_t stat_n[2];
	struct meta_row *meta_tab;
	size_t nstreams, nrows, nsovr, ndovr, nsext, nvrows, ndens, nmeta;
	struct thst_row *thst_tab;
	struct cpus_row *cpus_tab;
	size_t nthst, ncpus;
	uint64_t states_dropped;
	struct meta_row meta[META_MAX];
};

static uint64_t rel(const struct orbit_rp_html *h, uint64_t t)
{
	return t > h->tables->origin ? t - h->tables->origin : 0;
}

/* ---- order ---- */

static int lane_cmp(const void *a, const void *b)
{
	const struct orbit_rp_html_lane *x = *(const struct orbit_rp_html_lane *const *)a,
	                                *y = *(const struct orbit_rp_html_lane *const *)b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == ORBIT_RP_HTML_THREAD) {
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
	const struct orbit_rp_html_value *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

static int line_cmp(const void *a, const void *b)
{
	const struct orbit_rp_html_line *x = a, *y = b;
	if (x->lane != y->lane)
		return x->lane < y->lane ? -1 : 1;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* Lanes in page order; every lane index in the events renumbered. */
static int order_lanes(struct orbit_rp_html *h)
{
	const struct orbit_rp_html_lane **by = malloc((h->nlanes + 1) * sizeof *by);
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
	struct orbit_rp_html_lane *sorted = malloc((h->nlanes + 1) * sizeof *sorted);
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
	/* What finds a lane by its number: a thread's word, a value track's
	 * entry, a process's async lane. */
	for (uint32_t i = 0; i < h->nlanes; i++)
		if (sorted[i].th != NULL)
			sorted[i].th->export[h->tables->x->slot] = (uint64_t)i + 1;
	for (size_t i = 0; h->value_map.mask && i <= h->value_map.mask; i++)
		if (h->value_map.id[i])
			h->value_map.id[i] = to[h->value_map.id[i] - 1] + 1;
	for (uint32_t i = 0; i < h->nprocs; i++)
		if (h->procs[i].async_lane)
			h->procs[i].async_lane = to[h->procs[i].async_lane - 1] + 1;
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
static void pack_async(struct orbit_rp_html *h)
{
	struct orbit_rp_html_keep *k = &h->keep;
	uint64_t ends[ASYNC_ROWS];
	for (size_t i = 0; i < k->n;) {
		size_t j = i;
		while (j < k->n && k->spans[j].lane == k->spans[i].lane)
			j++;
		if (h->lanes[k->spans[i].lane].kind == ORBIT_RP_HTML_ASYNC) {
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

static uint32_t key(struct orbit_rp_html *h, const char *s)
{
	return orbit__rp_html_str_intern(&h->strs, s, strlen(s));
}

static size_t meta_rows(struct orbit_rp_html *h, struct meta_row *m)
{
	const struct orbit_replay_options *o = h->tables->x->view->o;
	size_t n = 0;
	char b[512];
	snprintf(b, sizeof b, "%" PRIu64, h->tables->origin);
	m[n++] = (struct meta_row){key(h, "origin_ns"), key(h, b), (double)h->tables->origin};
	m[n++] = (struct meta_row){key(h, "cap"), ORBIT_RP_HTML_NO_STR, (double)h->keep.cap};
	m[n++] = (struct meta_row){key(h, "kept"), ORBIT_RP_HTML_NO_STR, (double)h->keep.n};
	m[n++] = (struct meta_row){key(h, "merged"), ORBIT_RP_HTML_NO_STR, (double)h->keep.merged};
	m[n++] = (struct meta_row){key(h, "merged_max_ns"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->keep.merged_max};
	m[n++] = (struct meta_row){key(h, "values_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->values_thin.dropped};
	m[n++] = (struct meta_row){key(h, "values_stride"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->values_thin.stride};
	m[n++] = (struct meta_row){key(h, "lines_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->lines_thin.dropped};
	m[n++] = (struct meta_row){key(h, "lines_stride"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->lines_thin.stride};
	m[n++] = (struct meta_row){key(h, "texts_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->texts_dropped};
	m[n++] = (struct meta_row){key(h, "loss_marks_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->losses_dropped};
	m[n++] = (struct meta_row){key(h, "out_of_memory"), ORBIT_RP_HTML_NO_STR,
	                           (double)(h->oom || h->keep.oom)};
	m[n++] = (struct meta_row){key(h, "states_dropped"), ORBIT_RP_HTML_NO_STR,
	                           (double)h->tables->states_dropped};
	if (h->live) {
		uint64_t unshown = 0;
		const struct orbit_rp_view *v = h->tables->x->view;
		for (size_t c = 0; c < v->ncaps; c++)
			for (const struct orbit_rp_stream *s = v->caps[c].streams; s; s = s->next)
				unshown += s->unshown;
		m[n++] = (struct meta_row){key(h, "live_from"), ORBIT_RP_HTML_NO_STR,
		                           (double)rel(h, h->live_from)};
		m[n++] = (struct meta_row){key(h, "live_unshown"), ORBIT_RP_HTML_NO_STR,
		                           (double)unshown};
	}
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
		m[n++] = (struct meta_row){key(h, "filter"),
		                           orbit__rp_html_str_cut(h, b, at - 1, sizeof b), 0};
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

typedef void (*row_fn)(struct orbit_rp_html *h, size_t i, void *row);

#define COL(n, t, type_, field)                                                                    \
	{                                                                                          \
		n, t, offsetof(type_, field)                                                       \
	}

static void table(struct orbit_rp_html_data *d, struct orbit_rp_html *h, const char *tag, size_t n,
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
static void meta_get(struct orbit_rp_html *h, size_t i, void *row)
{
	(void)h;
	*(struct meta_row *)row = h->tables->meta_tab[i];
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
static void proc_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_proc *p = &h->procs[i];
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
static void stream_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_stream *s = h->tables->stream_tab[i];
	struct stream_row *r = row;
	uint64_t first, last, pr, pp, pd;
	char wall[64];
	orbit__rp_stream_span(s, &first, &last);
	orbit__rp_wallclock(s, first, wall, sizeof wall);
	struct orbit_rp_equation t;
	orbit__rp_stream_equation(s, &t);
	orbit__rp_stream_page_loss(s, &pr, &pp, &pd);
	int pe = orbit__rp_page_equation(s);
	uint32_t p = orbit__rp_html_proc_of(h, s->pid);
	if (s->unshown > 0) {
		/* The live view passed frames over: their records are in the
		 * capture, not lost; the equation is the capture's to tell. */
		t.delivered += s->unshown;
		t.holds = -1;
	}
	*r = (struct stream_row){
	    .proc = p,
	    .file = orbit__rp_html_str_cut(h, s->cap->path, strlen(s->cap->path), 4096),
	    .wall = orbit__rp_html_str_cut(h, wall, strlen(wall), sizeof wall),
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
static void lane_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_lane *l = &h->lanes[i];
	struct lane_row *r = row;
	*r = (struct lane_row){.proc = l->proc,
	                       .tid = l->tid,
	                       .name = l->name,
	                       .color = l->color,
	                       .kind = l->kind,
	                       .attrs = l->attrs,
	                       .merged = (double)(i < h->keep.nlanes ? h->keep.lane_merged[i] : 0)};
	if (l->kind == ORBIT_RP_HTML_THREAD) {
		const struct orbit_rp_thread *t = l->th;
		r->name = t->name ? orbit__rp_html_str_cut(h, t->name, t->name_len, 4096)
		                  : ORBIT_RP_HTML_NO_STR;
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
static void site_get(struct orbit_rp_html *h, size_t i, void *row)
{
	*(struct orbit_rp_html_site *)row = h->sites[i];
}
static const struct col site_cols[] = {
    COL("name", 'I', struct orbit_rp_html_site, name),
    COL("colr", 'I', struct orbit_rp_html_site, color),
    COL("attr", 'B', struct orbit_rp_html_site, attrs),
    COL("file", 'I', struct orbit_rp_html_site, file),
    COL("func", 'I', struct orbit_rp_html_site, func),
    COL("line", 'I', struct orbit_rp_html_site, line),
};

/* ROWS: one per (lane, depth) run of the sorted spans. */
struct row_row {
	uint32_t lane, depth, first, count;
	double t0;
};
static void row_get(struct orbit_rp_html *h, size_t i, void *row)
{
	(void)h;
	*(struct row_row *)row = h->tables->row_tab[i];
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
static void span_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_span *s = h->keep.spans;
	uint64_t dt = span_dt(s, i), dur = s[i].end - s[i].start;
	*(struct span_row *)row = (struct span_row){
	    .dt = dt >= ORBIT_RP_HTML_BIG ? ORBIT_RP_HTML_BIG : (uint32_t)dt,
	    .dur = dur >= ORBIT_RP_HTML_BIG ? ORBIT_RP_HTML_BIG : (uint32_t)dur,
	    .self = dur >= ORBIT_RP_HTML_BIG ? ORBIT_RP_HTML_BIG : (uint32_t)s[i].self,
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
static void sovr_get(struct orbit_rp_html *h, size_t i, void *row)
{
	uint32_t k = h->tables->sovr_tab[i];
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
static void dovr_get(struct orbit_rp_html *h, size_t i, void *row)
{
	uint32_t k = h->tables->dovr_tab[i];
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
static void sext_get(struct orbit_rp_html *h, size_t i, void *row)
{
	uint32_t k = h->tables->sext_tab[i];
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
static void vrow_get(struct orbit_rp_html *h, size_t i, void *row)
{
	(void)h;
	*(struct vrow_row *)row = h->tables->vrow_tab[i];
}
static const struct col vrow_cols[] = {
    COL("lane", 'I', struct vrow_row, lane),
    COL("frst", 'I', struct vrow_row, first),
    COL("cnt ", 'I', struct vrow_row, count),
};
struct val_row {
	double t, v;
};
static void val_get(struct orbit_rp_html *h, size_t i, void *row)
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
static void log_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_line *l = &h->lines[i];
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
static void loss_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_loss *l = &h->losses[i];
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
static void stat_get(struct orbit_rp_html *h, size_t i, void *row)
{
	int async = i >= h->tables->stat_n[0];
	const struct orbit_rp_row *r =
	    &h->tables->stat_rows[async][async ? i - h->tables->stat_n[0] : i];
	const struct orbit_rp_stat *x = r->st;
	*(struct stat_row *)row = (struct stat_row){
	    .name = orbit__rp_html_str_cut(h, r->name, r->len, ORBIT_NAME_LIMIT),
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
static void dens_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_density *d = h->keep.density[h->tables->dens_tab[i]];
	/* Bins start at lo in absolute time; the page wants it after the origin. */
	double lo = d->lo >= h->tables->origin ? (double)(d->lo - h->tables->origin)
	                                       : -(double)(h->tables->origin - d->lo);
	*(struct dens_row *)row = (struct dens_row){
	    h->tables->dens_tab[i], (uint32_t)i * ORBIT_RP_HTML_DENSITY_BINS, lo, (double)d->width};
}
static const struct col dens_cols[] = {
    COL("lane", 'I', struct dens_row, lane),
    COL("lo  ", 'd', struct dens_row, lo),
    COL("w   ", 'd', struct dens_row, w),
    COL("frst", 'I', struct dens_row, first),
};
static void dbin_get(struct orbit_rp_html *h, size_t i, void *row)
{
	const struct orbit_rp_html_density *d =
	    h->keep.density[h->tables->dens_tab[i / ORBIT_RP_HTML_DENSITY_BINS]];
	*(uint32_t *)row = d->count[i % ORBIT_RP_HTML_DENSITY_BINS];
}
static const struct col dbin_cols[] = {{"c   ", 'I', 0}};

/*
 * THST: thread states. One row per span of a thread lane's
 * states: [t0, t1) in state stat (enum orbit__rp_sched_state of
 * replay_sched.h: 0 unknown, 1 running, 2 runnable, 3 blocked, 4 dead), on
 * CPU cpu when running (0xffff: none), with the kernel's prev_state kst
 * when blocked (2: D, uninterruptible) and the tid that woke it, wakr
 * (0xffffffff: not known). The page draws a state track under each thread
 * lane that has rows here (html/timeline.js, TRACKS.state); each scope's
 * split (struct orbit_rp_span.sched) is in SEXT. end() looks up each
 * thread lane's struct orbit__rp_sched_thread by tid in its stream's
 * timeline and writes its spans here (t1: the next span's start, the last
 * one's: the thread's end), sorted by (lane, t0).
 *
 * CPUS: the CPU tracks, one per CPU of a process that its threads ran on:
 * each running span of a thread lane, as [t0, t1) on CPU cpu of process
 * proc, sorted by (proc, cpu, t0). What a CPU did between them (other
 * processes, idle) is not the capture's.
 */
struct thst_row {
	uint32_t lane, kstate, waker;
	double t0, t1;
	uint8_t state;
	uint16_t cpu;
};
static void thst_get(struct orbit_rp_html *h, size_t i, void *row)
{
	*(struct thst_row *)row = h->tables->thst_tab[i];
}
static const struct col thst_cols[] = {
    COL("lane", 'I', struct thst_row, lane),  COL("t0  ", 'd', struct thst_row, t0),
    COL("t1  ", 'd', struct thst_row, t1),    COL("stat", 'B', struct thst_row, state),
    COL("cpu ", 'H', struct thst_row, cpu),   COL("kst ", 'I', struct thst_row, kstate),
    COL("wakr", 'I', struct thst_row, waker),
};

struct cpus_row {
	uint32_t proc, lane;
	double t0, t1;
	uint16_t cpu;
};
static void cpus_get(struct orbit_rp_html *h, size_t i, void *row)
{
	*(struct cpus_row *)row = h->tables->cpus_tab[i];
}
static const struct col cpus_cols[] = {
    COL("proc", 'I', struct cpus_row, proc), COL("cpu ", 'H', struct cpus_row, cpu),
    COL("t0  ", 'd', struct cpus_row, t0),   COL("t1  ", 'd', struct cpus_row, t1),
    COL("lane", 'I', struct cpus_row, lane),
};

/* A time after the origin, negative before it (kernel events may precede
 * the first scope). */
static double srel(const struct orbit_rp_html *h, uint64_t t)
{
	uint64_t o = h->tables->origin;
	return t >= o ? (double)(t - o) : -(double)(o - t);
}

static int cpus_cmp(const void *a, const void *b)
{
	const struct cpus_row *x = a, *y = b;
	if (x->proc != y->proc)
		return x->proc < y->proc ? -1 : 1;
	if (x->cpu != y->cpu)
		return x->cpu < y->cpu ? -1 : 1;
	return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* The kernel's states of thread lane l, if its stream has them. */
static const struct orbit__rp_sched_thread *lane_sched(const struct orbit_rp_html_lane *l)
{
	if (l->kind != ORBIT_RP_HTML_THREAD || l->th == NULL || l->th->stream == NULL ||
	    l->tid > INT32_MAX)
		return NULL;
	const struct orbit_rp_stream *s = l->th->stream;
	return s->kernel.tl != NULL ? orbit__rp_sched_thread(s->kernel.tl, (int32_t)l->tid) : NULL;
}

/* THST and CPUS from the lanes (in page order). */
static int index_states(struct orbit_rp_html_tables *e)
{
	struct orbit_rp_html *h = e->h;
	size_t nst = 0, ncpu = 0;
	for (uint32_t i = 0; i < h->nlanes; i++) {
		const struct orbit__rp_sched_thread *k = lane_sched(&h->lanes[i]);
		for (uint32_t j = 0; k != NULL && j < k->span_count; j++)
			ncpu += k->spans[j].state == ORBIT__RP_SCHED_RUNNING;
		nst += k != NULL ? k->span_count : 0;
	}
	nst = nst < STATE_ROWS_MAX ? nst : STATE_ROWS_MAX;
	ncpu = ncpu < STATE_ROWS_MAX ? ncpu : STATE_ROWS_MAX;
	e->thst_tab = malloc((nst + 1) * sizeof *e->thst_tab);
	e->cpus_tab = malloc((ncpu + 1) * sizeof *e->cpus_tab);
	if (e->thst_tab == NULL || e->cpus_tab == NULL)
		return -1;
	for (uint32_t i = 0; i < h->nlanes; i++) {
		const struct orbit_rp_html_lane *l = &h->lanes[i];
		const struct orbit__rp_sched_thread *k = lane_sched(l);
		if (k == NULL)
			continue;
		if (e->nthst + k->span_count > nst) { /* whole lanes, or none */
			e->states_dropped += k->span_count;
			continue;
		}
		for (uint32_t j = 0; j < k->span_count; j++) {
			const struct orbit__rp_sched_span *sp = &k->spans[j];
			uint64_t t1 = j + 1 < k->span_count ? k->spans[j + 1].start : k->end;
			int run = sp->state == ORBIT__RP_SCHED_RUNNING;
			e->thst_tab[e->nthst++] = (struct thst_row){
			    .lane = i,
			    .kstate = sp->kstate,
			    .waker = sp->waker >= 0 ? (uint32_t)sp->waker : 0xffffffffu,
			    .t0 = srel(h, sp->start),
			    .t1 = srel(h, t1 > sp->start ? t1 : sp->start),
			    .state = sp->state,
			    .cpu = run || sp->state == ORBIT__RP_SCHED_RUNNABLE ? sp->cpu : 0xffff,
			};
			if (run && e->ncpus < ncpu)
				e->cpus_tab[e->ncpus++] =
				    (struct cpus_row){l->proc, i, e->thst_tab[e->nthst - 1].t0,
				                      e->thst_tab[e->nthst - 1].t1, sp->cpu};
		}
	}
	if (e->ncpus > 1)
		qsort(e->cpus_tab, e->ncpus, sizeof *e->cpus_tab, cpus_cmp);
	return 0;
}

/* ---- the end ---- */

static void write_data(void *ctx, struct orbit_rp_out *o)
{
	struct orbit_rp_html_tables *e = ctx;
	struct orbit_rp_html *h = e->h;
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
	TABLE(&d, h, "STAT", h->tables->stat_n[0] + h->tables->stat_n[1], stat_get, stat_cols);
	TABLE(&d, h, "DENS", e->ndens, dens_get, dens_cols);
	TABLE(&d, h, "DBIN", e->ndens * ORBIT_RP_HTML_DENSITY_BINS, dbin_get, dbin_cols);
	TABLE(&d, h, "THST", e->nthst, thst_get, thst_cols);
	TABLE(&d, h, "CPUS", e->ncpus, cpus_get, cpus_cols);
	e->nmeta = meta_rows(h, e->meta);
	e->meta[e->nmeta - 1].v = (double)h->strs.refused;
	h->tables->meta_tab = e->meta;
	TABLE(&d, h, "META", e->nmeta, meta_get, meta_cols);
	orbit__rp_html_strs_write(&d, &h->strs);
	orbit__rp_html_data_end(&d);
}

/* Rows, overrides, extras and value tracks of the sorted events. */
static int index_events(struct orbit_rp_html_tables *e)
{
	struct orbit_rp_html *h = e->h;
	const struct orbit_rp_html_span *s = h->keep.spans;
	size_t n = h->keep.n;
	for (size_t i = 0; i < n; i++) {
		e->nrows += first_of_row(s, i);
		e->nsovr += span_dt(s, i) >= ORBIT_RP_HTML_BIG;
		e->ndovr += s[i].end - s[i].start >= ORBIT_RP_HTML_BIG;
		e->nsext += s[i].extra != ORBIT_RP_HTML_NO_EXTRA;
	}
	for (size_t i = 0; i < h->nvalues; i++)
		e->nvrows += i == 0 || h->values[i].lane != h->values[i - 1].lane;
	for (uint32_t i = 0; i < h->keep.nlanes; i++)
		e->ndens += h->keep.density[i] != NULL;
	h->tables->row_tab = malloc((e->nrows + 1) * sizeof *h->tables->row_tab);
	h->tables->sovr_tab = malloc((e->nsovr + 1) * sizeof *h->tables->sovr_tab);
	h->tables->dovr_tab = malloc((e->ndovr + 1) * sizeof *h->tables->dovr_tab);
	h->tables->sext_tab = malloc((e->nsext + 1) * sizeof *h->tables->sext_tab);
	h->tables->vrow_tab = malloc((e->nvrows + 1) * sizeof *h->tables->vrow_tab);
	h->tables->dens_tab = malloc((e->ndens + 1) * sizeof *h->tables->dens_tab);
	if (!h->tables->row_tab || !h->tables->sovr_tab || !h->tables->dovr_tab ||
	    !h->tables->sext_tab || !h->tables->vrow_tab || !h->tables->dens_tab)
		return -1;
	size_t r = 0, so = 0, dov = 0, se = 0;
	for (size_t i = 0; i < n; i++) {
		if (first_of_row(s, i))
			h->tables->row_tab[r++] =
			    (struct row_row){s[i].lane, s[i].depth_flags & ORBIT_RP_HTML_DEPTH_MAX,
			                     (uint32_t)i, 0, (double)rel(h, s[i].start)};
		h->tables->row_tab[r - 1].count++;
		if (span_dt(s, i) >= ORBIT_RP_HTML_BIG)
			h->tables->sovr_tab[so++] = (uint32_t)i;
		if (s[i].end - s[i].start >= ORBIT_RP_HTML_BIG)
			h->tables->dovr_tab[dov++] = (uint32_t)i;
		if (s[i].extra != ORBIT_RP_HTML_NO_EXTRA)
			h->tables->sext_tab[se++] = (uint32_t)i;
	}
	size_t v = 0;
	for (size_t i = 0; i < h->nvalues; i++) {
		if (i == 0 || h->values[i].lane != h->values[i - 1].lane)
			h->tables->vrow_tab[v++] =
			    (struct vrow_row){h->values[i].lane, (uint32_t)i, 0};
		h->tables->vrow_tab[v - 1].count++;
	}
	size_t dn = 0;
	for (uint32_t i = 0; i < h->keep.nlanes; i++)
		if (h->keep.density[i] != NULL)
			h->tables->dens_tab[dn++] = i;
	return 0;
}

static void end_free(struct orbit_rp_html *h)
{
	free(h->tables->row_tab);
	free(h->tables->sovr_tab);
	free(h->tables->dovr_tab);
	free(h->tables->sext_tab);
	free(h->tables->vrow_tab);
	free(h->tables->dens_tab);
	free(h->tables->stream_tab);
	free(h->tables->stat_rows[0]);
	free(h->tables->stat_rows[1]);
	h->tables->row_tab = NULL;
	h->tables->sovr_tab = h->tables->dovr_tab = h->tables->sext_tab = h->tables->dens_tab =
	    NULL;
	h->tables->vrow_tab = NULL;
	h->tables->stream_tab = NULL;
	h->tables->stat_rows[0] = h->tables->stat_rows[1] = NULL;
	h->tables->meta_tab = NULL;
}

int orbit__rp_html_write(struct orbit_rp_html *h, const struct orbit_rp_export *x,
                         struct orbit_rp_out *block)
{
	const struct orbit_rp_view *v = x->view;
	struct orbit_rp_html_tables e = {
	    .h = h, .x = x, .origin = h->live ? h->live_origin : v->origin};
	h->tables = &e;
	for (size_t c = 0; c < v->ncaps; c++)
		for (const struct orbit_rp_stream *s = v->caps[c].streams; s; s = s->next)
			e.nstreams++;
	e.stream_tab = malloc((e.nstreams + 1) * sizeof *e.stream_tab);
	if (e.stream_tab == NULL || order_lanes(h) != 0)
		goto oom;
	e.nstreams = 0;
	for (size_t c = 0; c < v->ncaps; c++)
		for (const struct orbit_rp_stream *s = v->caps[c].streams; s; s = s->next)
			e.stream_tab[e.nstreams++] = s;
	/* (qsort never gets NULL: the arrays are NULL while empty) */
	if (h->keep.n > 1)
		qsort(h->keep.spans, h->keep.n, sizeof *h->keep.spans, span_cmp);
	pack_async(h);
	if (h->nvalues > 1)
		qsort(h->values, h->nvalues, sizeof *h->values, value_cmp);
	if (h->nlines > 1)
		qsort(h->lines, h->nlines, sizeof *h->lines, line_cmp);
	for (int async = 0; async < 2; async++) {
		e.stat_rows[async] = orbit__rp_stats_rows(
		    v->stats, v->names, async, ORBIT_REPLAY_SORT_TOTAL, &e.stat_n[async]);
		if (e.stat_rows[async] == NULL)
			goto oom;
		if (h->live && e.stat_n[async] > ORBIT_RP_HTML_LIVE_STATS)
			e.stat_n[async] = ORBIT_RP_HTML_LIVE_STATS; /* the largest totals */
	}
	if (index_events(&e) != 0 || index_states(&e) != 0)
		goto oom;
	if (block != NULL)
		write_data(&e, block);
	else
		orbit__rp_html_page(x->out, write_data, &e);
	end_free(h);
	free(e.thst_tab);
	free(e.cpus_tab);
	h->tables = NULL;
	return 0;
oom:
	end_free(h);
	free(e.thst_tab);
	free(e.cpus_tab);
	h->tables = NULL;
	return -1;
}
