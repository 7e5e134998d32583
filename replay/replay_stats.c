/*
 * replay_stats.c — statistics per name and per thread, and the summary
 * that prints them (text on stdout, or JSON with --json).
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
#include <time.h>

#include "replay_internal.h"

#define MAX_DEPTH 256u /* deeper scopes: self time = duration, not counted in their parent */
#define NAME_SHOWN 80u

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

static struct orbit_rp_stat *stat_of(struct orbit_rp_stats *st, int async, uint32_t id)
{
	if (id == ORBIT_RP_NAME_NONE)
		return async ? &st->other_async : &st->other_scope;
	struct orbit_rp_stat **a = async ? &st->async : &st->scope;
	uint32_t *n = async ? &st->nasync : &st->nscope;
	if (id >= *n) {
		uint32_t cap = *n ? *n : 256;
		while (cap <= id)
			cap *= 2;
		struct orbit_rp_stat *s = realloc(*a, cap * sizeof *s);
		if (s == NULL)
			return async ? &st->other_async : &st->other_scope;
		memset(s + *n, 0, (cap - *n) * sizeof *s);
		*a = s;
		*n = cap;
	}
	return &(*a)[id];
}

void orbit__rp_stats_span(struct orbit_rp_run *run, const struct orbit_rp_span *s, uint64_t self)
{
	struct orbit_rp_stats *st = &run->stats;
	struct orbit_rp_stat *x = stat_of(st, s->async, s->name_id);
	if (s->unfinished) {
		x->unfinished++;
		return;
	}
	uint64_t d = s->end - s->start;
	if (x->count == 0 || d < x->min)
		x->min = d;
	if (d > x->max)
		x->max = d;
	x->count++;
	x->total += d;
	x->self += self;
	orbit__rp_hist_add(&x->hist, d, &st->hist_budget);
	struct orbit_rp_thread *t = s->thread;
	if (t != NULL && !s->async) {
		t->scopes++;
		if (s->depth == 0)
			t->busy_ns += d;
	}
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
	orbit__rp_hist_free(&st->other_scope.hist);
	orbit__rp_hist_free(&st->other_async.hist);
	memset(st, 0, sizeof *st);
}

/* ---- tables ---- */

struct row {
	const struct orbit_rp_stat *st;
	const char *name;
	size_t len;
};

static enum orbit_replay_sort sort_key;

static uint64_t row_key(const struct row *r)
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
	const struct row *x = a, *y = b;
	uint64_t kx = row_key(x), ky = row_key(y);
	if (kx != ky)
		return kx > ky ? -1 : 1;
	if (x->st->unfinished != y->st->unfinished)
		return x->st->unfinished > y->st->unfinished ? -1 : 1;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* The names with something to show, sorted; *n rows. */
static struct row *rows_of(struct orbit_rp_run *run, int async, size_t *n)
{
	struct orbit_rp_stats *st = &run->stats;
	const struct orbit_rp_stat *a = async ? st->async : st->scope;
	uint32_t na = async ? st->nasync : st->nscope;
	if (na > run->names.n)
		na = run->names.n;
	struct row *r = malloc(((size_t)na + 1) * sizeof *r);
	*n = 0;
	if (r == NULL)
		return NULL;
	for (uint32_t i = 0; i < na; i++) {
		if (a[i].count == 0 && a[i].unfinished == 0)
			continue;
		const struct orbit_rp_name *nm = orbit__rp_name(&run->names, i);
		r[(*n)++] = (struct row){&a[i], nm->bytes, nm->len};
	}
	const struct orbit_rp_stat *o = async ? &st->other_async : &st->other_scope;
	if (o->count || o->unfinished)
		r[(*n)++] = (struct row){o, "[names past the limit]", 22};
	sort_key = run->o->sort;
	qsort(r, *n, sizeof *r, row_cmp);
	return r;
}

static size_t shown(const struct orbit_rp_run *run, size_t n)
{
	return run->o->top && run->o->top < n ? run->o->top : n;
}

/* "123 ns", "1.234 us", "12.345 ms", "1.234 s" */
static void fmt_dur(char *b, size_t len, uint64_t ns)
{
	if (ns < 1000)
		snprintf(b, len, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(b, len, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(b, len, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(b, len, "%.3f s", (double)ns / 1e9);
}

static void out_dur(struct orbit_rp_out *o, uint64_t ns, int approx)
{
	char b[40];
	fmt_dur(b, sizeof b, ns);
	orbit__rp_out_printf(o, " %c%12s", approx ? '~' : ' ', b);
}

static void out_name(struct orbit_rp_out *o, const char *s, size_t n)
{
	orbit__rp_out_text(o, s, n > NAME_SHOWN ? NAME_SHOWN : n);
	if (n > NAME_SHOWN)
		orbit__rp_out_s(o, "...");
}

static void scope_table(struct orbit_rp_run *run, struct orbit_rp_out *o, int async)
{
	static const char *by[] = {"total time", "self time", "count", "max"};
	size_t n;
	struct row *r = rows_of(run, async, &n);
	if (n == 0) {
		free(r);
		return;
	}
	size_t k = shown(run, n);
	orbit__rp_out_printf(o, "\n%s by %s (%zu of %zu names)\n", async ? "async spans" : "scopes",
	                     by[run->o->sort], k, n);
	orbit__rp_out_printf(o, "%10s %14s %14s %14s %14s %14s %14s %14s %8s  %s\n", "count",
	                     "total", async ? "-" : "self", "mean", "p50", "p95", "p99", "max",
	                     "unfin.", "name");
	for (size_t i = 0; i < k; i++) {
		const struct orbit_rp_stat *x = r[i].st;
		int ap = x->hist.approx;
		orbit__rp_out_printf(o, "%10" PRIu64, x->count);
		out_dur(o, x->total, 0);
		if (async)
			orbit__rp_out_printf(o, " %13s", "-");
		else
			out_dur(o, x->self, 0);
		out_dur(o, x->count ? x->total / x->count : 0, 0);
		out_dur(o, orbit__rp_hist_pct(&x->hist, 50, x->min, x->max), ap);
		out_dur(o, orbit__rp_hist_pct(&x->hist, 95, x->min, x->max), ap);
		out_dur(o, orbit__rp_hist_pct(&x->hist, 99, x->min, x->max), ap);
		out_dur(o, x->max, 0);
		orbit__rp_out_printf(o, " %8" PRIu64 "  ", x->unfinished);
		out_name(o, r[i].name, r[i].len);
		orbit__rp_out_c(o, '\n');
	}
	free(r);
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

/* Threads with anything to show, busiest first. */
static struct orbit_rp_thread **threads_sorted(struct orbit_rp_run *run, size_t *n)
{
	struct orbit_rp_threads *t = &run->threads;
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

static void thread_table(struct orbit_rp_run *run, struct orbit_rp_out *o)
{
	size_t n;
	struct orbit_rp_thread **a = threads_sorted(run, &n);
	if (n == 0) {
		free(a);
		return;
	}
	size_t k = shown(run, n);
	orbit__rp_out_printf(o, "\nthreads by busy time (%zu of %zu)\n", k, n);
	orbit__rp_out_printf(o, "%10s %10s %10s %14s  %s\n", "pid", "tid", "scopes", "busy",
	                     "name");
	for (size_t i = 0; i < k; i++) {
		orbit__rp_out_printf(o, "%10" PRIu32 " %10" PRIu32 " %10" PRIu64, a[i]->pid,
		                     a[i]->tid, a[i]->scopes);
		out_dur(o, a[i]->busy_ns, 0);
		orbit__rp_out_s(o, "  ");
		if (a[i]->name)
			out_name(o, a[i]->name, a[i]->name_len);
		orbit__rp_out_c(o, '\n');
	}
	free(a);
}

/* ---- per stream ---- */

void orbit__rp_wallclock(const struct orbit_rp_stream *s, uint64_t mono, char *buf, size_t len)
{
	/* Modular on purpose: a time before the handshake pair goes back. A
	 * capture may hold any pair, so anything past year 9999 is unknown. */
	uint64_t wall = s->realtime_ns + (mono - s->monotonic_ns);
	if (!s->handshake || s->realtime_ns == 0 || wall > 253402300799ull * 1000000000ull) {
		snprintf(buf, len, "unknown");
		return;
	}
	time_t sec = (time_t)(wall / 1000000000);
	long ns = (long)(wall % 1000000000);
	struct tm tm;
	if (gmtime_r(&sec, &tm) == NULL) {
		snprintf(buf, len, "unknown");
		return;
	}
	char d[40];
	strftime(d, sizeof d, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09ldZ", d, ns);
}

struct totals {
	uint64_t claimed, delivered, lost;
	int holds; /* 1 holds, 0 fails, -1 unknown (no end of stream) */
	uint32_t bad_ring;
};

static uint64_t loss_sum(const struct orbit_rp_loss *l)
{
	return l->lapped + l->gone + l->backstop + l->at_end;
}

/* The equation of every ring: claimed == delivered + lost. */
static struct totals equation(const struct orbit_rp_stream *s)
{
	struct totals t = {0, 0, 0, s->ended ? 1 : -1, 0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		uint64_t lost = loss_sum(&s->loss[r]);
		uint64_t claimed = r < s->nclaimed ? s->claimed[r] : 0;
		t.delivered += s->delivered[r];
		t.lost += lost;
		t.claimed += claimed;
		if (s->ended && claimed != s->delivered[r] + lost && t.holds == 1) {
			t.holds = 0;
			t.bad_ring = r;
		}
	}
	return t;
}

/* Page rings: reserved == records delivered + records lost, when known. */
static int page_equation(const struct orbit_rp_stream *s)
{
	if (!s->ended)
		return -1;
	for (uint32_t r = 0; r < s->npage_reserved; r++) {
		uint64_t got = r < s->npage ? s->page_delivered[r] + s->page_lost[r] : 0;
		if (s->page_reserved[r] != got)
			return 0;
	}
	for (uint32_t r = s->npage_reserved; r < s->npage; r++)
		if (s->page_delivered[r] + s->page_lost[r] != 0)
			return 0;
	return 1;
}

static struct orbit_rp_loss loss_total(const struct orbit_rp_stream *s)
{
	struct orbit_rp_loss t = {0, 0, 0, 0, 0};
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		t.lapped += s->loss[r].lapped;
		t.gone += s->loss[r].gone;
		t.backstop += s->loss[r].backstop;
		t.unsent += s->loss[r].unsent;
		t.at_end += s->loss[r].at_end;
	}
	return t;
}

static void page_loss(const struct orbit_rp_stream *s, uint64_t *records, uint64_t *pages,
                      uint64_t *delivered)
{
	*records = *pages = *delivered = 0;
	for (uint32_t r = 0; r < s->npage; r++) {
		*records += s->page_lost[r];
		*pages += s->page_pages[r];
		*delivered += s->page_delivered[r];
	}
}

static void stream_loss_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	struct orbit_rp_loss l = loss_total(s);
	uint64_t pr, pp, pd;
	page_loss(s, &pr, &pp, &pd);
	if (loss_sum(&l) + l.unsent + pr + pp == 0) {
		orbit__rp_out_s(o, "  loss       none\n");
		return;
	}
	orbit__rp_out_printf(o,
	                     "  loss       %" PRIu64 " records: lapped %" PRIu64
	                     ", writer gone %" PRIu64 ", backstop %" PRIu64 ", at end %" PRIu64
	                     "\n",
	                     loss_sum(&l), l.lapped, l.gone, l.backstop, l.at_end);
	if (l.lapped)
		orbit__rp_out_s(o, "             lapped: producers overwrote them before the agent "
		                   "read them; ORBIT_RING_BUDGET in the traced process gives the "
		                   "rings more room\n");
	if (l.unsent)
		orbit__rp_out_printf(o,
		                     "             %" PRIu64 " records of an earlier stream "
		                     "never sent (not in this stream's claims)\n",
		                     l.unsent);
	if (pr + pp)
		orbit__rp_out_printf(
		    o, "             log records lost %" PRIu64 ", log pages lost %" PRIu64 "\n",
		    pr, pp);
}

static void stream_equation_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	struct totals t = equation(s);
	if (t.holds < 0) {
		orbit__rp_out_printf(o,
		                     "  equation   unknown: no end of stream (delivered %" PRIu64
		                     ", lost %" PRIu64 " so far)\n",
		                     t.delivered, t.lost);
		return;
	}
	orbit__rp_out_printf(
	    o, "  equation   claimed %" PRIu64 " == delivered %" PRIu64 " + lost %" PRIu64 ": %s",
	    t.claimed, t.delivered, t.lost, t.holds ? "holds" : "DOES NOT HOLD");
	if (!t.holds)
		orbit__rp_out_printf(o, " (first on ring %u)", t.bad_ring);
	orbit__rp_out_c(o, '\n');
	int pe = page_equation(s);
	if (s->npage_reserved || s->npage)
		orbit__rp_out_printf(o, "  logs       reserved == delivered + lost: %s\n",
		                     pe ? "holds" : "DOES NOT HOLD");
}

static void stream_recon_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	const struct orbit_reconstruct_stats *r = &s->rstats;
	if (r->bad_records + r->unmatched_stops + r->unfinished + r->incomplete_names +
	        r->orphan_continuations + r->gaps + s->bad_logs ==
	    0)
		return;
	orbit__rp_out_printf(o,
	                     "  rebuilt    %" PRIu64 " unfinished, %" PRIu64
	                     " stops without start, %" PRIu64 " incomplete names, %" PRIu64
	                     " orphan name parts, %" PRIu64 " gaps, %" PRIu64
	                     " bad records, %" PRIu64 " bad log records\n",
	                     r->unfinished, r->unmatched_stops, r->incomplete_names,
	                     r->orphan_continuations, r->gaps, r->bad_records, s->bad_logs);
}

static void stream_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	char wall[64], dur[40];
	uint64_t first = s->first <= s->last ? s->first : s->monotonic_ns;
	uint64_t last = s->first <= s->last ? s->last : first;
	if (s->handshake) {
		orbit__rp_out_s(o, "  process    ");
		orbit__rp_out_text(o, s->process ? s->process : "",
		                   s->process ? strlen(s->process) : 0);
		orbit__rp_out_printf(o, ", pid %" PRIu32 ", host ", s->pid);
		orbit__rp_out_text(o, s->host ? s->host : "", s->host ? strlen(s->host) : 0);
		orbit__rp_out_s(o, "\n");
		if (s->ncmd) {
			orbit__rp_out_s(o, "  command   ");
			for (size_t i = 0; i < s->ncmd; i++) {
				orbit__rp_out_c(o, ' ');
				orbit__rp_out_text(o, s->cmdline[i], strlen(s->cmdline[i]));
			}
			orbit__rp_out_c(o, '\n');
		}
	} else {
		orbit__rp_out_s(o, "  process    unknown: packets before any handshake\n");
	}
	orbit__rp_wallclock(s, first, wall, sizeof wall);
	fmt_dur(dur, sizeof dur, last - first);
	orbit__rp_out_printf(o, "  start      %s (CLOCK_MONOTONIC %" PRIu64 " ns)\n", wall, first);
	orbit__rp_out_printf(o, "  duration   %s\n", dur);
	orbit__rp_out_printf(o,
	                     "  events     %" PRIu64 " records: %" PRIu64 " scopes, %" PRIu64
	                     " async spans, %" PRIu64 " values, %" PRIu64 " thread names; %" PRIu64
	                     " log lines, %" PRIu64 " markers\n",
	                     s->records, s->scopes, s->spans, s->values, s->thread_names, s->logs,
	                     s->markers);
	orbit__rp_out_printf(o, "  threads    %" PRIu32 "\n", s->threads);
	stream_loss_text(o, s);
	stream_equation_text(o, s);
	stream_recon_text(o, s);
}

static void capture_text(struct orbit_rp_out *o, const struct orbit_rp_capture *c)
{
	orbit__rp_out_s(o, "capture ");
	orbit__rp_out_text(o, c->path, strlen(c->path));
	orbit__rp_out_printf(o, " (%" PRIu64 " bytes)\n", c->size);
	int n = 0;
	for (const struct orbit_rp_stream *s = c->streams; s; s = s->next, n++) {
		if (c->streams->next)
			orbit__rp_out_printf(o, " stream %d\n", n + 1);
		stream_text(o, s);
	}
	if (c->streams == NULL)
		orbit__rp_out_s(o, "  nothing could be read\n");
	if (c->damaged || c->invalid || c->io_error)
		orbit__rp_out_printf(o,
		                     "  DAMAGED    %" PRIu64 " frames could not be read, %" PRIu64
		                     " packets rejected%s\n",
		                     c->damaged, c->invalid, c->io_error ? ", read error" : "");
	for (const struct orbit_rp_stream *s = c->streams; s; s = s->next)
		if (!s->ended) {
			orbit__rp_out_s(o, "  INCOMPLETE no end of stream: the agent was killed or "
			                   "the capture was cut\n");
			break;
		}
}

void orbit__rp_summary_text(struct orbit_rp_run *run, struct orbit_rp_out *o)
{
	for (size_t i = 0; i < run->ncaps; i++) {
		if (i)
			orbit__rp_out_c(o, '\n');
		capture_text(o, &run->caps[i]);
	}
	scope_table(run, o, 0);
	scope_table(run, o, 1);
	thread_table(run, o);
	if (run->names.refused)
		orbit__rp_out_printf(o,
		                     "\n%" PRIu64 " events had names past the %u-name limit; "
		                     "their statistics are merged\n",
		                     run->names.refused, ORBIT_RP_MAX_NAMES);
}

/* ---- JSON ---- */

static void jkey(struct orbit_rp_out *o, const char *k, int *first)
{
	if (!*first)
		orbit__rp_out_c(o, ',');
	*first = 0;
	orbit__rp_out_c(o, '"');
	orbit__rp_out_s(o, k);
	orbit__rp_out_s(o, "\":");
}

static void ju64(struct orbit_rp_out *o, const char *k, uint64_t v, int *first)
{
	jkey(o, k, first);
	orbit__rp_out_u64(o, v);
}

static void jstr(struct orbit_rp_out *o, const char *k, const char *v, int *first)
{
	jkey(o, k, first);
	orbit__rp_out_json(o, v ? v : "", v ? strlen(v) : 0);
}

static void json_loss(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	struct orbit_rp_loss l = loss_total(s);
	uint64_t pr, pp, pd;
	page_loss(s, &pr, &pp, &pd);
	int f = 1;
	orbit__rp_out_c(o, '{');
	ju64(o, "lapped", l.lapped, &f);
	ju64(o, "writer_gone", l.gone, &f);
	ju64(o, "backstop", l.backstop, &f);
	ju64(o, "at_end", l.at_end, &f);
	ju64(o, "unsent", l.unsent, &f);
	ju64(o, "log_records", pr, &f);
	ju64(o, "log_pages", pp, &f);
	orbit__rp_out_c(o, '}');
}

static void json_recon(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	const struct orbit_reconstruct_stats *r = &s->rstats;
	int f = 1;
	orbit__rp_out_c(o, '{');
	ju64(o, "unfinished", r->unfinished, &f);
	ju64(o, "unmatched_stops", r->unmatched_stops, &f);
	ju64(o, "incomplete_names", r->incomplete_names, &f);
	ju64(o, "orphan_continuations", r->orphan_continuations, &f);
	ju64(o, "gaps", r->gaps, &f);
	ju64(o, "bad_records", r->bad_records, &f);
	ju64(o, "bad_log_records", s->bad_logs, &f);
	orbit__rp_out_c(o, '}');
}

static void json_stream(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	static const char *eq[] = {"fails", "holds", "unknown"};
	char wall[64];
	uint64_t first = s->first <= s->last ? s->first : s->monotonic_ns;
	uint64_t last = s->first <= s->last ? s->last : first;
	struct totals t = equation(s);
	int f = 1;
	orbit__rp_out_c(o, '{');
	jkey(o, "handshake", &f);
	orbit__rp_out_s(o, s->handshake ? "true" : "false");
	ju64(o, "pid", s->pid, &f);
	jstr(o, "process", s->process, &f);
	jstr(o, "host", s->host, &f);
	jstr(o, "agent_version", s->agent, &f);
	jkey(o, "command_line", &f);
	orbit__rp_out_c(o, '[');
	for (size_t i = 0; i < s->ncmd; i++) {
		if (i)
			orbit__rp_out_c(o, ',');
		orbit__rp_out_json(o, s->cmdline[i], strlen(s->cmdline[i]));
	}
	orbit__rp_out_c(o, ']');
	orbit__rp_wallclock(s, first, wall, sizeof wall);
	jstr(o, "start_utc", wall, &f);
	ju64(o, "start_ns", first, &f);
	ju64(o, "end_ns", last, &f);
	ju64(o, "duration_ns", last - first, &f);
	ju64(o, "records", s->records, &f);
	ju64(o, "scopes", s->scopes, &f);
	ju64(o, "async_spans", s->spans, &f);
	ju64(o, "values", s->values, &f);
	ju64(o, "thread_names", s->thread_names, &f);
	ju64(o, "log_lines", s->logs, &f);
	ju64(o, "markers", s->markers, &f);
	ju64(o, "threads", s->threads, &f);
	jkey(o, "loss", &f);
	json_loss(o, s);
	ju64(o, "claimed", t.claimed, &f);
	ju64(o, "delivered", t.delivered, &f);
	ju64(o, "lost", t.lost, &f);
	jstr(o, "equation", eq[t.holds < 0 ? 2 : t.holds], &f);
	int pe = page_equation(s);
	jstr(o, "log_equation", eq[pe < 0 ? 2 : pe], &f);
	jkey(o, "complete", &f);
	orbit__rp_out_s(o, s->ended ? "true" : "false");
	jkey(o, "rebuilt", &f);
	json_recon(o, s);
	orbit__rp_out_c(o, '}');
}

static void json_capture(struct orbit_rp_out *o, const struct orbit_rp_capture *c)
{
	int f = 1, complete = c->streams != NULL;
	orbit__rp_out_c(o, '{');
	jstr(o, "file", c->path, &f);
	ju64(o, "bytes", c->size, &f);
	ju64(o, "damaged_frames", c->damaged, &f);
	ju64(o, "rejected_packets", c->invalid, &f);
	for (const struct orbit_rp_stream *s = c->streams; s; s = s->next)
		complete &= s->ended;
	jkey(o, "complete", &f);
	orbit__rp_out_s(o, complete ? "true" : "false");
	jkey(o, "streams", &f);
	orbit__rp_out_c(o, '[');
	for (const struct orbit_rp_stream *s = c->streams; s; s = s->next) {
		if (s != c->streams)
			orbit__rp_out_c(o, ',');
		json_stream(o, s);
	}
	orbit__rp_out_s(o, "]}");
}

static void json_rows(struct orbit_rp_run *run, struct orbit_rp_out *o, int async)
{
	size_t n;
	struct row *r = rows_of(run, async, &n);
	size_t k = shown(run, n);
	orbit__rp_out_c(o, '[');
	for (size_t i = 0; i < k; i++) {
		const struct orbit_rp_stat *x = r[i].st;
		int f = 1;
		orbit__rp_out_s(o, i ? ",\n{" : "\n{");
		jkey(o, "name", &f);
		orbit__rp_out_json(o, r[i].name, r[i].len);
		ju64(o, "count", x->count, &f);
		ju64(o, "total_ns", x->total, &f);
		if (!async)
			ju64(o, "self_ns", x->self, &f);
		ju64(o, "mean_ns", x->count ? x->total / x->count : 0, &f);
		ju64(o, "min_ns", x->count ? x->min : 0, &f);
		ju64(o, "p50_ns", orbit__rp_hist_pct(&x->hist, 50, x->min, x->max), &f);
		ju64(o, "p95_ns", orbit__rp_hist_pct(&x->hist, 95, x->min, x->max), &f);
		ju64(o, "p99_ns", orbit__rp_hist_pct(&x->hist, 99, x->min, x->max), &f);
		ju64(o, "max_ns", x->max, &f);
		ju64(o, "unfinished", x->unfinished, &f);
		jkey(o, "percentiles_approximate", &f);
		orbit__rp_out_s(o, x->hist.approx ? "true" : "false");
		orbit__rp_out_c(o, '}');
	}
	orbit__rp_out_c(o, ']');
	free(r);
}

static void json_threads(struct orbit_rp_run *run, struct orbit_rp_out *o)
{
	size_t n;
	struct orbit_rp_thread **a = threads_sorted(run, &n);
	size_t k = shown(run, n);
	orbit__rp_out_c(o, '[');
	for (size_t i = 0; i < k; i++) {
		int f = 1;
		orbit__rp_out_s(o, i ? ",\n{" : "\n{");
		ju64(o, "pid", a[i]->pid, &f);
		ju64(o, "tid", a[i]->tid, &f);
		jkey(o, "name", &f);
		orbit__rp_out_json(o, a[i]->name ? a[i]->name : "", a[i]->name_len);
		ju64(o, "scopes", a[i]->scopes, &f);
		ju64(o, "busy_ns", a[i]->busy_ns, &f);
		orbit__rp_out_c(o, '}');
	}
	orbit__rp_out_c(o, ']');
	free(a);
}

void orbit__rp_summary_json(struct orbit_rp_run *run, struct orbit_rp_out *o)
{
	static const char *by[] = {"total", "self", "count", "max"};
	orbit__rp_out_s(o, "{\"captures\":[");
	for (size_t i = 0; i < run->ncaps; i++) {
		if (i)
			orbit__rp_out_c(o, ',');
		orbit__rp_out_c(o, '\n');
		json_capture(o, &run->caps[i]);
	}
	orbit__rp_out_printf(o, "],\n\"sort\":\"%s\",\n\"scopes\":", by[run->o->sort]);
	json_rows(run, o, 0);
	orbit__rp_out_s(o, ",\n\"async_spans\":");
	json_rows(run, o, 1);
	orbit__rp_out_s(o, ",\n\"threads\":");
	json_threads(run, o);
	orbit__rp_out_printf(o,
	                     ",\n\"values\":%" PRIu64 ",\n\"log_lines\":%" PRIu64
	                     ",\n\"names_past_limit\":%" PRIu64 "}\n",
	                     run->stats.values, run->stats.logs, run->names.refused);
}
