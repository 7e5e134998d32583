/*
 * replay_export_html.c — --html FILE: one self-contained page (code,
 * styles and data inline, nothing fetched) with the timeline, a flame
 * graph and the statistics; docs/replay.md, "--html".
 *
 * The events are kept as they come: scopes and async spans under the cap
 * of --html-max-scopes N (replay_export_html_keep.c), values and log
 * lines thinned past N / 2 and N / 4 (struct orbit_rp_html_thin), loss
 * marks, with the processes, lanes (a
 * thread's, a process's async spans, a value track) and sites (name,
 * colour, source location) they refer to, and every text interned in the
 * page's string table. At the end, when every thread has its final name,
 * replay_export_html_tables.c writes them as the page's tables.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_ns.h"
#include "replay_export.h"
#include "replay_html.h"

#define TEXT_BYTES (16u << 20) /* log text kept; past it lines keep no text */
#define LOSS_MARKS 65536u
#define MARKER_SHOWN 64u /* marker bytes shown, in hex */

/* ---- small helpers ---- */

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 33);
}

/* The slot of hash h whose id eq() accepts, or the empty slot to fill. */
static uint32_t *map_slot(struct orbit_rp_html_idmap *m, uint64_t h,
                          int (*eq)(struct orbit_rp_html *, uint32_t), struct orbit_rp_html *c)
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

static void map_free(struct orbit_rp_html_idmap *m)
{
	free(m->hash);
	free(m->id);
}

/* ---- processes, lanes, sites ---- */

static uint32_t lane_new(struct orbit_rp_html *h, uint8_t kind, uint32_t proc, uint32_t tid)
{
	if (orbit__rp_html_grow32((void **)&h->lanes, &h->lanes_alloc, h->nlanes,
	                          sizeof *h->lanes) != 0)
		return ORBIT_RP_HTML_BIG;
	h->lanes[h->nlanes] = (struct orbit_rp_html_lane){
	    .kind = kind, .proc = proc, .tid = tid, .name = ORBIT_RP_HTML_NO_STR};
	return h->nlanes++;
}

/* The lane of a thread: the exporter's word of the thread holds it + 1. */
static uint32_t thread_lane(struct orbit_rp_html *h, const struct orbit_rp_export *x,
                            struct orbit_rp_thread *th, uint32_t pid)
{
	if (th == NULL)
		return ORBIT_RP_HTML_BIG;
	if (th->export[x->slot])
		return (uint32_t)th->export[x->slot] - 1;
	uint32_t p = orbit__rp_html_proc_of(h, pid);
	if (p == ORBIT_RP_HTML_BIG)
		return ORBIT_RP_HTML_BIG;
	uint32_t l = lane_new(h, ORBIT_RP_HTML_THREAD, p, th->tid);
	if (l == ORBIT_RP_HTML_BIG)
		return ORBIT_RP_HTML_BIG;
	h->lanes[l].th = th;
	th->export[x->slot] = (uint64_t)l + 1;
	return l;
}

static uint32_t async_lane(struct orbit_rp_html *h, uint32_t pid)
{
	uint32_t p = orbit__rp_html_proc_of(h, pid);
	if (p == ORBIT_RP_HTML_BIG)
		return ORBIT_RP_HTML_BIG;
	if (h->procs[p].async_lane == 0) {
		uint32_t l = lane_new(h, ORBIT_RP_HTML_ASYNC, p, 0);
		if (l == ORBIT_RP_HTML_BIG)
			return ORBIT_RP_HTML_BIG;
		h->procs[p].async_lane = l + 1;
	}
	return h->procs[p].async_lane - 1;
}

static int value_eq(struct orbit_rp_html *h, uint32_t id)
{
	const struct orbit_rp_html_lane *l = &h->lanes[id];
	return l->proc == h->value_key.proc && l->name == h->value_key.name &&
	       l->color == h->value_key.color && l->attrs == h->value_key.attrs;
}

static uint64_t value_hash(const struct orbit_rp_html_lane *l)
{
	return mix((uint64_t)l->proc << 32 ^ l->name ^ (uint64_t)l->color << 17 ^
	           (uint64_t)l->attrs << 63);
}

static uint32_t value_lane(struct orbit_rp_html *h, uint32_t pid, uint32_t name, uint32_t color,
                           int attrs)
{
	uint32_t p = orbit__rp_html_proc_of(h, pid);
	if (p == ORBIT_RP_HTML_BIG)
		return ORBIT_RP_HTML_BIG;
	h->value_key = (struct orbit_rp_html_lane){
	    .proc = p, .name = name, .color = attrs ? color : 0, .attrs = (uint8_t)attrs};
	uint32_t *slot = map_slot(&h->value_map, value_hash(&h->value_key), value_eq, h);
	if (slot == NULL)
		return ORBIT_RP_HTML_BIG;
	if (*slot)
		return *slot - 1;
	uint32_t l = lane_new(h, ORBIT_RP_HTML_VALUE, p, 0);
	if (l == ORBIT_RP_HTML_BIG)
		return ORBIT_RP_HTML_BIG;
	h->lanes[l].name = name;
	h->lanes[l].color = h->value_key.color;
	h->lanes[l].attrs = (uint8_t)attrs;
	*slot = l + 1;
	h->value_map.n++;
	return l;
}

static int site_eq(struct orbit_rp_html *h, uint32_t id)
{
	const struct orbit_rp_html_site *s = &h->sites[id];
	return s->name == h->site_key.name && s->color == h->site_key.color &&
	       s->attrs == h->site_key.attrs && s->loc == h->site_key.loc;
}

/* The string of a span's name: the core's name id, looked up once. */
static uint32_t span_name(struct orbit_rp_html *h, const struct orbit_rp_span *s)
{
	if (s->name_id == ORBIT_RP_NAME_NONE)
		return orbit__rp_html_str_cut(h, s->name, s->name_len, ORBIT_NAME_LIMIT);
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

static uint64_t site_hash(const struct orbit_rp_html_site *s)
{
	return mix((uint64_t)s->name << 32 ^ s->color ^ (uint64_t)s->attrs << 62 ^
	           (uint64_t)(uintptr_t)s->loc * 31);
}

static uint32_t site_of(struct orbit_rp_html *h, uint32_t name, uint32_t color, int attrs,
                        const struct orbit_rp_location *loc)
{
	h->site_key = (struct orbit_rp_html_site){
	    .name = name, .color = attrs ? color : 0, .attrs = (uint8_t)attrs, .loc = loc};
	uint32_t *slot = map_slot(&h->site_map, site_hash(&h->site_key), site_eq, h);
	if (slot == NULL)
		return ORBIT_RP_HTML_BIG;
	if (*slot)
		return *slot - 1;
	if (orbit__rp_html_grow32((void **)&h->sites, &h->sites_alloc, h->nsites,
	                          sizeof *h->sites) != 0)
		return ORBIT_RP_HTML_BIG;
	struct orbit_rp_html_site *s = &h->sites[h->nsites];
	*s = h->site_key;
	s->file = s->func = ORBIT_RP_HTML_NO_STR;
	s->line = 0;
	if (loc != NULL) {
		if (loc->file)
			s->file = orbit__rp_html_str_cut(h, loc->file, loc->file_len, 4096);
		if (loc->function)
			s->func = orbit__rp_html_str_cut(h, loc->function, loc->function_len, 4096);
		s->line = loc->line;
	}
	*slot = ++h->nsites;
	h->site_map.n++;
	return h->nsites - 1;
}

/* ---- the events ---- */

static int html_begin(struct orbit_rp_export *x)
{
	struct orbit_rp_html *h = x->state;
	orbit__rp_html_keep_init(&h->keep, x->view->o->html_max_scopes);
	size_t cap = x->view->o->html_max_scopes;
	if (x->view->o->html_live != NULL) {
		/* The live view's history bounds what is kept by time, its
		 * caps by count (live_evict), not by thinning. */
		h->live = 1;
		h->values_thin = h->lines_thin = (struct orbit_rp_html_thin){.stride = 1};
		return 0;
	}
	/* With the default cap, 1 M spans, 500 k values and 250 k log lines
	 * with their 16 MiB of text stay under 64 MiB of page. */
	h->values_thin = (struct orbit_rp_html_thin){.limit = cap ? (cap + 1) / 2 : 0, .stride = 1};
	h->lines_thin = (struct orbit_rp_html_thin){.limit = cap ? (cap + 3) / 4 : 0, .stride = 1};
	return 0;
}

static void html_stream(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct orbit_rp_html *h = x->state;
	h->live_dirty = 1;
	uint32_t p = orbit__rp_html_proc_of(h, s->pid);
	if (p == ORBIT_RP_HTML_BIG) {
		h->oom = 1;
		return;
	}
	struct orbit_rp_html_proc *pr = &h->procs[p];
	if (s->process && pr->name == ORBIT_RP_HTML_NO_STR)
		pr->name = orbit__rp_html_str_cut(h, s->process, strlen(s->process), 4096);
	if (s->host && pr->host == ORBIT_RP_HTML_NO_STR)
		pr->host = orbit__rp_html_str_cut(h, s->host, strlen(s->host), 4096);
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
		pr->cmd = orbit__rp_html_str_cut(h, b, at - 1, 65536);
		free(b);
	}
}

static void html_span(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct orbit_rp_html *h = x->state;
	h->live_dirty = 1;
	int async = (s->flags & ORBIT_RP_ASYNC) != 0;
	uint32_t lane = async ? async_lane(h, s->pid) : thread_lane(h, x, s->thread, s->pid);
	uint32_t name = span_name(h, s);
	uint32_t site = lane == ORBIT_RP_HTML_BIG
	                    ? ORBIT_RP_HTML_BIG
	                    : site_of(h, name, s->color, (s->flags & ORBIT_RP_ATTRS) != 0, s->loc);
	if (site == ORBIT_RP_HTML_BIG) {
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

/* ---- thinning values and log lines ---- */

/* Whether lane's next event is kept: 1, 0, or -1 when out of memory. */
static int thin_offer(struct orbit_rp_html_thin *t, uint32_t lane)
{
	if (lane >= t->nlanes) {
		uint32_t n = t->nlanes ? t->nlanes : 64;
		while (n <= lane)
			n *= 2;
		uint32_t *s = realloc(t->seen, n * sizeof *s);
		if (s == NULL)
			return -1;
		memset(s + t->nlanes, 0, (n - t->nlanes) * sizeof *s);
		t->seen = s;
		t->nlanes = n;
	}
	if (t->seen[lane]++ % t->stride == 0)
		return 1;
	t->dropped++;
	return 0;
}

/* The limit is reached: each lane keeps every other event it has (the
 * ones it took at offers 0, 2 stride, 4 stride, ...), and the stride
 * doubles. n events of size bytes, each with its lane at lane_off. */
static void thin_half(struct orbit_rp_html_thin *t, void *events, size_t *n, size_t size,
                      size_t lane_off)
{
	uint8_t *odd = calloc(t->nlanes ? t->nlanes : 1, 1);
	if (odd == NULL)
		return; /* then the arrays just grow */
	char *e = events;
	size_t w = 0;
	for (size_t r = 0; r < *n; r++) {
		uint32_t lane;
		memcpy(&lane, e + r * size + lane_off, sizeof lane);
		if (odd[lane]++ & 1) {
			t->dropped++;
			continue;
		}
		if (w != r)
			memcpy(e + w * size, e + r * size, size);
		w++;
	}
	free(odd);
	*n = w;
	t->stride *= 2;
}

static void html_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	struct orbit_rp_html *h = x->state;
	h->live_dirty = 1;
	uint32_t name = orbit__rp_html_str_cut(h, v->name, v->name_len, ORBIT_NAME_LIMIT);
	uint32_t lane = value_lane(h, v->pid, name, v->color, (v->flags & ORBIT_RP_ATTRS) != 0);
	int keep = lane == ORBIT_RP_HTML_BIG ? -1 : thin_offer(&h->values_thin, lane);
	if (keep == 0)
		return;
	if (keep < 0 || orbit__rp_html_grow((void **)&h->values, &h->values_alloc, h->nvalues,
	                                    sizeof *h->values) != 0) {
		h->oom = 1;
		return;
	}
	h->values[h->nvalues++] =
	    (struct orbit_rp_html_value){v->time, orbit__rp_value_double(v), lane};
	if (h->values_thin.limit && h->nvalues >= h->values_thin.limit)
		thin_half(&h->values_thin, h->values, &h->nvalues, sizeof *h->values,
		          offsetof(struct orbit_rp_html_value, lane));
}

/* A marker's text: "marker" and its first bytes in hex. */
static uint32_t marker_text(struct orbit_rp_html *h, const struct orbit_rp_line *l)
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
	struct orbit_rp_html *h = x->state;
	h->live_dirty = 1;
	uint32_t lane = thread_lane(h, x, l->thread, l->pid);
	int keep = lane == ORBIT_RP_HTML_BIG ? -1 : thin_offer(&h->lines_thin, lane);
	if (keep == 0)
		return;
	if (keep < 0 || orbit__rp_html_grow((void **)&h->lines, &h->lines_alloc, h->nlines,
	                                    sizeof *h->lines) != 0) {
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
	h->lines[h->nlines++] = (struct orbit_rp_html_line){l->time, lane, text, (uint8_t)l->flags};
	if (h->lines_thin.limit && h->nlines >= h->lines_thin.limit)
		thin_half(&h->lines_thin, h->lines, &h->nlines, sizeof *h->lines,
		          offsetof(struct orbit_rp_html_line, lane));
}

static void html_loss(struct orbit_rp_export *x, const struct orbit_rp_loss_mark *m)
{
	struct orbit_rp_html *h = x->state;
	h->live_dirty = 1;
	uint32_t p = orbit__rp_html_proc_of(h, m->stream->pid);
	if (p == ORBIT_RP_HTML_BIG || h->nlosses >= LOSS_MARKS ||
	    orbit__rp_html_grow32((void **)&h->losses, &h->losses_alloc, h->nlosses,
	                          sizeof *h->losses) != 0) {
		h->losses_dropped++;
		return;
	}
	h->losses[h->nlosses++] =
	    (struct orbit_rp_html_loss){m->from, m->to, m->count, p, m->ring, (uint8_t)m->flags};
}
/* ---- the live view: a data block of the newest history, now and then ---- */

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

/* The time from which the newest max of n events of size bytes (each
 * with its time at t_off) are kept: the (n - max)th smallest, or cutoff
 * when n is within max. */
static uint64_t newest_from(const void *events, size_t n, size_t size, size_t t_off, size_t max,
                            uint64_t cutoff)
{
	if (n <= max)
		return cutoff;
	uint64_t *t = malloc(n * sizeof *t);
	if (t == NULL)
		return UINT64_MAX; /* out of memory: drop them all */
	for (size_t i = 0; i < n; i++)
		memcpy(&t[i], (const char *)events + i * size + t_off, sizeof t[i]);
	qsort(t, n, sizeof *t, u64_cmp);
	uint64_t from = t[n - max];
	free(t);
	return from > cutoff ? from : cutoff;
}

/* Keeps the events of time from or later; their order stays. */
static void drop_before(void *events, size_t *n, size_t size, size_t t_off, uint64_t from)
{
	char *e = events;
	size_t w = 0;
	for (size_t r = 0; r < *n; r++) {
		uint64_t t;
		memcpy(&t, e + r * size + t_off, sizeof t);
		if (t < from)
			continue;
		if (w != r)
			memcpy(e + w * size, e + r * size, size);
		w++;
	}
	*n = w;
}

/* The history ends at the streams' newest event; what ended before its
 * start goes, and values and log lines past their caps (a half and a
 * quarter of the spans', as the page's thinning), the oldest first. */
static void live_evict(struct orbit_rp_export *x, struct orbit_rp_html *h)
{
	const struct orbit_replay_options *o = x->view->o;
	uint64_t newest = 0, first = 0;
	for (size_t c = 0; c < x->view->ncaps; c++)
		for (const struct orbit_rp_stream *s = x->view->caps[c].streams; s; s = s->next) {
			if (s->first <= s->last && s->last > newest)
				newest = s->last;
			if (first == 0 && s->handshake)
				first = s->monotonic_ns;
		}
	if (h->live_origin == 0)
		h->live_origin = first;
	uint64_t cutoff = newest > o->html_live_history_ns ? newest - o->html_live_history_ns : 0;
	if (cutoff < h->live_from)
		cutoff = h->live_from;
	h->live_from = cutoff;
	orbit__rp_html_keep_evict(&h->keep, cutoff);
	size_t cap = o->html_max_scopes ? o->html_max_scopes : SIZE_MAX / 4;
	size_t t_off = offsetof(struct orbit_rp_html_value, t);
	drop_before(
	    h->values, &h->nvalues, sizeof *h->values, t_off,
	    newest_from(h->values, h->nvalues, sizeof *h->values, t_off, (cap + 1) / 2, cutoff));
	t_off = offsetof(struct orbit_rp_html_line, t);
	drop_before(
	    h->lines, &h->nlines, sizeof *h->lines, t_off,
	    newest_from(h->lines, h->nlines, sizeof *h->lines, t_off, (cap + 3) / 4, cutoff));
	uint32_t w = 0;
	for (uint32_t r = 0; r < h->nlosses; r++)
		if (h->losses[r].to >= cutoff)
			h->losses[w++] = h->losses[r];
	h->nlosses = w;
}

/* ---- the live view's compaction: sites and texts of what is kept ---- */

#define LIVE_SITES_SLACK 4096u     /* sites no kept span uses, before compacting */
#define LIVE_TEXT_SLACK (4u << 20) /* string bytes nothing kept uses, likewise */

/* old string index -> new (+ 1, 0: not yet), through the new table. */
struct restr {
	struct orbit_rp_html_strs *from, *to;
	uint32_t *map;
};

static uint32_t restr(struct restr *r, uint32_t id)
{
	if (id == ORBIT_RP_HTML_NO_STR || id >= r->from->n)
		return ORBIT_RP_HTML_NO_STR;
	if (r->map[id] == 0) {
		const struct orbit_rp_html_strs *f = r->from;
		uint32_t n = orbit__rp_html_str_intern(r->to, f->bytes + f->off[id],
		                                       f->off[id + 1] - f->off[id]);
		if (n == ORBIT_RP_HTML_NO_STR)
			return n;
		r->map[id] = n + 1;
	}
	return r->map[id] - 1;
}

/* Keeps the sites kept spans use and the texts what is kept refers to,
 * renumbered, and rebuilds the maps that find them: the history's memory
 * and its blocks follow what it holds, not every name it ever saw. */
static int live_compact(struct orbit_rp_html *h)
{
	uint32_t *site_to = calloc(h->nsites + 1, sizeof *site_to);
	if (site_to == NULL)
		return -1;
	for (size_t i = 0; i < h->keep.n; i++)
		if (h->keep.spans[i].site < h->nsites)
			site_to[h->keep.spans[i].site] = 1;
	uint32_t used = 0;
	for (uint32_t i = 0; i < h->nsites; i++)
		if (site_to[i]) {
			h->sites[used] = h->sites[i];
			site_to[i] = used++;
		}
	for (size_t i = 0; i < h->keep.n; i++)
		h->keep.spans[i].site = site_to[h->keep.spans[i].site];
	h->nsites = used;
	free(site_to);

	struct orbit_rp_html_strs to = {0};
	struct restr r = {&h->strs, &to, calloc(h->strs.n + 1, sizeof *r.map)};
	if (r.map == NULL)
		return -1;
	for (uint32_t i = 0; i < h->nprocs; i++) {
		h->procs[i].name = restr(&r, h->procs[i].name);
		h->procs[i].host = restr(&r, h->procs[i].host);
		h->procs[i].cmd = restr(&r, h->procs[i].cmd);
	}
	for (uint32_t i = 0; i < h->nlanes; i++)
		h->lanes[i].name = restr(&r, h->lanes[i].name);
	for (uint32_t i = 0; i < h->nsites; i++) {
		h->sites[i].name = restr(&r, h->sites[i].name);
		h->sites[i].file = restr(&r, h->sites[i].file);
		h->sites[i].func = restr(&r, h->sites[i].func);
	}
	h->text_bytes = 0;
	for (size_t i = 0; i < h->nlines; i++) {
		uint32_t t = h->lines[i].text;
		if (t != ORBIT_RP_HTML_NO_STR && t < h->strs.n &&
		    !(h->lines[i].flags & ORBIT_RP_MARKER))
			h->text_bytes += h->strs.off[t + 1] - h->strs.off[t];
		h->lines[i].text = restr(&r, t);
	}
	free(r.map);
	to.refused += h->strs.refused;
	orbit__rp_html_strs_free(&h->strs);
	h->strs = to;
	if (h->name_str != NULL) /* a cache: names are looked up again */
		memset(h->name_str, 0, h->nname_str * sizeof *h->name_str);

	/* The maps hash string and site numbers: built again. */
	map_free(&h->site_map);
	map_free(&h->value_map);
	memset(&h->site_map, 0, sizeof h->site_map);
	memset(&h->value_map, 0, sizeof h->value_map);
	for (uint32_t i = 0; i < h->nsites; i++) {
		h->site_key = h->sites[i];
		uint32_t *slot = map_slot(&h->site_map, site_hash(&h->site_key), site_eq, h);
		if (slot == NULL)
			return -1;
		*slot = i + 1;
		h->site_map.n++;
	}
	for (uint32_t i = 0; i < h->nlanes; i++) {
		if (h->lanes[i].kind != ORBIT_RP_HTML_VALUE)
			continue;
		h->value_key = h->lanes[i];
		uint32_t *slot = map_slot(&h->value_map, value_hash(&h->value_key), value_eq, h);
		if (slot == NULL)
			return -1;
		*slot = i + 1;
		h->value_map.n++;
	}
	return 0;
}

/* Whether what nothing kept uses is worth a compaction. */
static int live_slack(const struct orbit_rp_html *h)
{
	return h->nsites > h->keep.n + LIVE_SITES_SLACK ||
	       h->strs.len > h->text_bytes + (size_t)h->nsites * 64 + LIVE_TEXT_SLACK;
}

/* One data block of the history to options.html_live, with what it cost
 * the thread. */
static void live_emit(struct orbit_rp_export *x, struct orbit_rp_html *h)
{
	const struct orbit_replay_options *o = x->view->o;
	uint64_t cpu = orbit__clock_ns(CLOCK_THREAD_CPUTIME_ID);
	h->live_dirty = 0;
	live_evict(x, h);
	if (live_slack(h) && live_compact(h) != 0)
		h->oom = 1;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL)
		return;
	struct orbit_rp_out out;
	orbit__rp_out_stream(&out, f, "live view");
	int rc = orbit__rp_html_write(h, x, &out);
	int bad = rc != 0 || orbit__rp_out_close(&out) != 0 || ferror(f); /* f stays open */
	fclose(f);
	h->live_cost_ns = orbit__clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu;
	if (!bad)
		o->html_live(o->html_live_ctx, buf, len, h->live_cost_ns);
	free(buf);
}

static void html_tick(struct orbit_rp_export *x)
{
	struct orbit_rp_html *h = x->state;
	if (!h->live)
		return;
	uint64_t now = orbit__clock_ns(CLOCK_MONOTONIC);
	if (now < h->live_next || !h->live_dirty) /* a block only of something new */
		return;
	live_emit(x, h);
	/* Blocks take at most 1/ORBIT_RP_HTML_LIVE_PACE of the thread's time. */
	uint64_t gap = h->live_cost_ns * ORBIT_RP_HTML_LIVE_PACE;
	h->live_next =
	    now + (gap > x->view->o->html_live_every_ns ? gap : x->view->o->html_live_every_ns);
}

static void html_end(struct orbit_rp_export *x)
{
	struct orbit_rp_html *h = x->state;
	if (h->live) {
		live_emit(x, h);
		return;
	}
	if (orbit__rp_html_write(h, x, NULL) != 0 && x->out->err == 0)
		x->out->err = ENOMEM;
}

static void html_free(struct orbit_rp_export *x)
{
	struct orbit_rp_html *h = x->state;
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
	free(h->values_thin.seen);
	free(h->lines_thin.seen);
	free(h->losses);
}

static const char *html_wanted(const struct orbit_replay_options *o)
{
	if (o->html_path == NULL && o->html_live != NULL)
		return "-"; /* nothing is written on it: the blocks go to html_live */
	return o->html_path;
}

const struct orbit_rp_exporter orbit__rp_export_html = {
    .name = "html",
    .wanted = html_wanted,
    .needs = ORBIT_RP_NEED_SCHED,
    .state_size = sizeof(struct orbit_rp_html),
    .begin = html_begin,
    .stream = html_stream,
    .scope = html_span,
    .async = html_span,
    .value = html_value,
    .line = html_line,
    .loss = html_loss,
    .tick = html_tick,
    .end = html_end,
    .free = html_free,
};
