/*
 * replay_export_log.c — --log: the log lines and markers in time order, on
 * the run's standard output instead of the summary, one per line:
 *
 *   <seconds since the origin> [pid/tid thread name] text
 *
 * Pages of different rings (one per CPU) and of different captures
 * interleave in time, so lines wait in a window (a min-heap on time, at
 * most LOG_LINES lines or LOG_BYTES bytes of text) and leave it earliest
 * first when it is full and at the end: the order is exact unless lines
 * arrive further out of order than the window holds. Thread names are
 * read when a line is printed. Markers print their bytes in hex; control
 * characters and invalid UTF-8 as \xNN.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export.h"

#define LOG_LINES 65536u
#define LOG_BYTES (16u << 20)

struct line {
	uint64_t time, seq;
	uint32_t pid, tid;
	const struct orbit_rp_thread *thread;
	int marker;
	uint32_t len;
	char *text;
};

struct window {
	struct line *heap;
	size_t n, cap, bytes;
	uint64_t seq;
};

static int line_less(const struct line *a, const struct line *b)
{
	return a->time != b->time ? a->time < b->time : a->seq < b->seq;
}

static void heap_up(struct line *h, size_t i)
{
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!line_less(&h[i], &h[p]))
			break;
		struct line t = h[i];
		h[i] = h[p];
		h[p] = t;
		i = p;
	}
}

static void heap_down(struct line *h, size_t n, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < n && line_less(&h[l], &h[m]))
			m = l;
		if (l + 1 < n && line_less(&h[l + 1], &h[m]))
			m = l + 1;
		if (m == i)
			return;
		struct line t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static void print_line(struct orbit_rp_export *x, const struct line *l)
{
	struct orbit_rp_out *o = x->out;
	uint64_t origin = x->view->origin;
	uint64_t rel = l->time >= origin ? l->time - origin : 0;
	const char *sign = l->time >= origin ? "" : "-";
	if (l->time < origin)
		rel = origin - l->time;
	orbit__rp_out_printf(o, "%s%" PRIu64 ".%09" PRIu64 " [%" PRIu32 "/%" PRIu32, sign,
	                     rel / 1000000000, rel % 1000000000, l->pid, l->tid);
	const struct orbit_rp_thread *t = l->thread;
	if (t != NULL && t->name != NULL && t->tid == l->tid) {
		orbit__rp_out_c(o, ' ');
		orbit__rp_out_text(o, t->name, t->name_len);
	}
	orbit__rp_out_s(o, "] ");
	if (l->marker) {
		orbit__rp_out_printf(o, "marker (%" PRIu32 " bytes):", l->len);
		for (uint32_t i = 0; i < l->len; i++)
			orbit__rp_out_printf(o, " %02x", (unsigned char)l->text[i]);
	} else {
		orbit__rp_out_text(o, l->text, l->len);
	}
	orbit__rp_out_c(o, '\n');
}

static void pop_line(struct orbit_rp_export *x)
{
	struct window *w = x->state;
	struct line l = w->heap[0];
	w->heap[0] = w->heap[--w->n];
	heap_down(w->heap, w->n, 0);
	print_line(x, &l);
	w->bytes -= l.len;
	free(l.text);
}

static void log_line(struct orbit_rp_export *x, const struct orbit_rp_line *in)
{
	struct window *w = x->state;
	size_t len = in->len;
	while (w->n > 0 && (w->n >= LOG_LINES || w->bytes + len > LOG_BYTES))
		pop_line(x);
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 1024;
		struct line *h = realloc(w->heap, cap * sizeof *h);
		if (h == NULL)
			return;
		w->heap = h;
		w->cap = cap;
	}
	struct line l = {in->time,      w->seq++,
	                 in->pid,       in->tid,
	                 in->thread,    (in->flags & ORBIT_RP_MARKER) != 0,
	                 (uint32_t)len, malloc(len ? len : 1)};
	if (l.text == NULL)
		return;
	memcpy(l.text, in->text, len);
	w->heap[w->n] = l;
	heap_up(w->heap, w->n++);
	w->bytes += len;
}

static void log_end(struct orbit_rp_export *x)
{
	struct window *w = x->state;
	while (w->n > 0)
		pop_line(x);
}

static void log_free(struct orbit_rp_export *x)
{
	struct window *w = x->state;
	for (size_t i = 0; i < w->n; i++)
		free(w->heap[i].text);
	free(w->heap);
}

static const char *log_wanted(const struct orbit_replay_options *o)
{
	return o->log ? "stdout" : NULL;
}

const struct orbit_rp_exporter orbit__rp_export_log = {
    .name = "log",
    .wanted = log_wanted,
    .needs = ORBIT_RP_NEED_STDOUT | ORBIT_RP_NEED_EARLY_NAMES | ORBIT_RP_NEED_ORIGIN,
    .state_size = sizeof(struct window),
    .line = log_line,
    .end = log_end,
    .free = log_free,
};
