/*
 * replay_log.c — log lines and markers from the page rings (FtracePage
 * packets), for --log and the exporters.
 *
 * Each page is decoded with the hostile-input parser (ftrace_page.h). A
 * record's payload starts like the kernel's common fields: u16 type (1 log
 * line, 2 marker), u8 flags, u8 preempt count, s32 tid; then the text
 * (up to the first NUL: the ring pads to 4 bytes with zeros) or the
 * marker's bytes.
 *
 * --log prints lines in time order. Pages of different rings (one per CPU)
 * and of different captures interleave in time, so lines wait in a window
 * (a min-heap on time, at most LOG_LINES lines or LOG_BYTES bytes of text)
 * and leave it earliest first when it is full and at the end: the order is
 * exact unless lines arrive further out of order than the window holds.
 * Thread names are looked up when a line is printed.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "replay_internal.h"

#define LOG_LINES 65536u
#define LOG_BYTES (16u << 20)
#define LOG_HEADER 8u

struct line {
	uint64_t time, seq;
	uint32_t pid, tid;
	int marker;
	uint32_t len;
	char *text;
};

struct orbit_rp_log {
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

static void print_line(struct orbit_rp_run *run, const struct line *l)
{
	struct orbit_rp_out *o = &run->out;
	uint64_t rel = l->time >= run->origin ? l->time - run->origin : 0;
	const char *sign = l->time >= run->origin ? "" : "-";
	if (l->time < run->origin)
		rel = run->origin - l->time;
	orbit__rp_out_printf(o, "%s%" PRIu64 ".%09" PRIu64 " [%" PRIu32 "/%" PRIu32, sign,
	                     rel / 1000000000, rel % 1000000000, l->pid, l->tid);
	struct orbit_rp_thread *t = orbit__rp_thread(&run->threads, l->pid, l->tid);
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

static void pop_line(struct orbit_rp_run *run)
{
	struct orbit_rp_log *lg = run->log;
	struct line l = lg->heap[0];
	lg->heap[0] = lg->heap[--lg->n];
	heap_down(lg->heap, lg->n, 0);
	print_line(run, &l);
	lg->bytes -= l.len;
	free(l.text);
}

static void window_add(struct orbit_rp_run *run, uint32_t pid, uint32_t tid, uint64_t time,
                       int marker, const char *text, size_t len)
{
	struct orbit_rp_log *lg = run->log;
	while (lg->n > 0 && (lg->n >= LOG_LINES || lg->bytes + len > LOG_BYTES))
		pop_line(run);
	if (lg->n == lg->cap) {
		size_t cap = lg->cap ? lg->cap * 2 : 1024;
		struct line *h = realloc(lg->heap, cap * sizeof *h);
		if (h == NULL)
			return;
		lg->heap = h;
		lg->cap = cap;
	}
	struct line l = {time, lg->seq++, pid, tid, marker, (uint32_t)len, malloc(len ? len : 1)};
	if (l.text == NULL)
		return;
	memcpy(l.text, text, len);
	lg->heap[lg->n] = l;
	heap_up(lg->heap, lg->n++);
	lg->bytes += len;
}

int orbit__rp_log_begin(struct orbit_rp_run *run)
{
	run->log = calloc(1, sizeof *run->log);
	return run->log ? 0 : -1;
}

void orbit__rp_log_end(struct orbit_rp_run *run)
{
	if (run->log == NULL)
		return;
	while (run->log->n > 0)
		pop_line(run);
	free(run->log->heap);
	free(run->log);
	run->log = NULL;
}

/* One record of a page: a line, a marker, or something we do not know. */
static void log_record(struct orbit_rp_run *run, struct orbit_rp_stream *s,
                       const struct orbit__ftrace_record *rec)
{
	if (rec->len < LOG_HEADER) {
		s->bad_logs++;
		return;
	}
	uint16_t type = orbit__le16(rec->data);
	uint32_t tid = orbit__le32(rec->data + 4);
	const char *text = (const char *)rec->data + LOG_HEADER;
	size_t len = rec->len - LOG_HEADER;
	if (type == 1) {
		const char *nul = memchr(text, '\0', len);
		len = nul ? (size_t)(nul - text) : len;
		s->logs++;
	} else if (type == 2) {
		s->markers++;
	} else {
		s->bad_logs++;
		return;
	}
	if (s->first > rec->time)
		s->first = rec->time;
	if (s->last < rec->time)
		s->last = rec->time;
	if (!orbit__rp_passes(run, tid, type == 1 ? text : NULL, len, rec->time, rec->time))
		return;
	run->stats.logs++;
	if (run->chrome)
		orbit__rp_chrome_log(run, s->pid, tid, rec->time, type == 2, text, len);
	if (run->perfetto)
		orbit__rp_perfetto_log(run, s->pid, tid, rec->time, type == 2, text, len);
	if (run->log)
		window_add(run, s->pid, tid, rec->time, type == 2, text, len);
}

void orbit__rp_log_page(struct orbit_rp_run *run, struct orbit_rp_stream *s, uint32_t ring,
                        const uint8_t *page, size_t len)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	int err = orbit__ftrace_open(&it, page, len, &h);
	uint64_t bad = s->bad_logs;
	int have_ring = orbit__rp_stream_page_ring(s, ring) == 0;
	while (err == 0 && (err = orbit__ftrace_next(&it, &rec)) == 1) {
		if (have_ring)
			s->page_delivered[ring]++;
		log_record(run, s, &rec);
		err = 0;
	}
	if (err < 0) {
		orbit__rp_problem(
		    run, "%s: log page of ring %" PRIu32 ": %s at byte %" PRIu32 " of the page",
		    s->cap->path, ring, orbit__ftrace_strerror(err), it.err_off);
		s->cap->invalid++;
	} else if (!have_ring) {
		orbit__rp_problem(run,
		                  "%s: log page of ring %" PRIu32 ", past the %u page rings a "
		                  "capture may have",
		                  s->cap->path, ring, ORBIT_RP_PAGE_RINGS);
		s->cap->invalid++;
	}
	if (s->bad_logs > bad)
		orbit__rp_problem(run,
		                  "%s: %" PRIu64 " log records of unknown type or too short in a "
		                  "page of ring %" PRIu32,
		                  s->cap->path, s->bad_logs - bad, ring);
}
