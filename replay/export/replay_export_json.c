/*
 * replay_export_json.c — --json FILE: the summary as JSON ("-": stdout,
 * instead of the text): captures[] with streams[] holding every figure of
 * the text summary in ns, then scopes[], async_spans[] and threads[], each
 * cut to --top rows (docs/replay.md, "The summary"). With the kernel's
 * scheduling, a stream's "kernel" says what was recorded and lost, and a
 * scope name's row its split: sched_ns of its time covered, of which
 * oncpu_ns, runnable_ns and blocked_ns. With --by location, also
 * scope_locations[] and async_span_locations[]: the same rows by source
 * location (file, line, function, and the first name seen there).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export.h"

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
	struct orbit__loss l = orbit__rp_stream_loss(s);
	uint64_t pr, pp, pd;
	orbit__rp_stream_page_loss(s, &pr, &pp, &pd);
	int f = 1;
	orbit__rp_out_c(o, '{');
#define LOSS_KEY(x) ju64(o, #x, l.x, &f);
	ORBIT__LOSS_FIELDS(LOSS_KEY);
#undef LOSS_KEY
	ju64(o, "log_records", pr, &f);
	ju64(o, "log_pages", pp, &f);
	orbit__rp_out_c(o, '}');
}

/* The scopes open when the input ended: [{"tid":..,"stack":[names...]}]. */
static void json_open(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	struct orbit_rp_open *op = (struct orbit_rp_open *)&s->open_at_end;
	orbit__rp_open_sort(op);
	orbit__rp_out_s(o, ",\"open_at_end\":[");
	for (size_t i = 0; i < op->n;) {
		uint32_t tid = op->v[i].tid;
		if (i)
			orbit__rp_out_c(o, ',');
		orbit__rp_out_printf(o, "{\"tid\":%" PRIu32 ",\"stack\":[", tid);
		for (size_t j = i; i < op->n && op->v[i].tid == tid; i++) {
			if (i > j)
				orbit__rp_out_c(o, ',');
			orbit__rp_out_json(o, op->v[i].name, op->v[i].name_len);
		}
		orbit__rp_out_s(o, "]}");
	}
	orbit__rp_out_c(o, ']');
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
	ju64(o, "time_untrusted", r->untrusted_events, &f);
	ju64(o, "thread_ends", r->thread_ends, &f);
	ju64(o, "reused_tids", r->reused_tids, &f);
	ju64(o, "depth_assumed", r->depth_assumed, &f);
	ju64(o, "depth_misplaced", r->depth_misplaced, &f);
	ju64(o, "agent_untrusted_times", s->untrusted_times, &f);
	ju64(o, "agent_clock_resets", s->clock_resets, &f);
	orbit__rp_out_c(o, '}');
}

/* The stream's kernel scheduling (ORBIT_SCHED); null when not asked for. */
static void json_kernel(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	static const char *eq[] = {"fails", "holds", "unknown"};
	const struct orbit_rp_kernel *k = &s->kernel;
	int f = 1;
	if (!k->on && k->off == NULL) {
		orbit__rp_out_s(o, "null");
		return;
	}
	orbit__rp_out_c(o, '{');
	jkey(o, "on", &f);
	orbit__rp_out_s(o, k->on ? "true" : "false");
	if (!k->on) {
		jstr(o, "off", k->off, &f);
		orbit__rp_out_c(o, '}');
		return;
	}
	struct orbit__kernel_loss sum = orbit__rp_stream_kernel_sums(s);
	jstr(o, "instance", k->instance, &f);
	ju64(o, "cpus", k->cpus, &f);
	ju64(o, "buffer_kb", k->buffer_kb, &f);
	ju64(o, "pages", k->pages, &f);
	ju64(o, "events", k->records, &f);
	ju64(o, "bad_pages", k->bad_pages, &f);
#define KERNEL_KEY(x) ju64(o, #x, sum.x, &f);
	ORBIT__KERNEL_LOSS_FIELDS(KERNEL_KEY);
#undef KERNEL_KEY
	int e = orbit__rp_kernel_equation(s);
	jstr(o, "equation", eq[e < 0 ? 2 : e], &f);
	jkey(o, "states", &f);
	orbit__rp_out_s(o, k->tl != NULL ? "true" : "false");
	orbit__rp_out_c(o, '}');
}

static void json_stream(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	static const char *eq[] = {"fails", "holds", "unknown"};
	char wall[64];
	uint64_t first, last;
	orbit__rp_stream_span(s, &first, &last);
	struct orbit_rp_equation t;
	orbit__rp_stream_equation(s, &t);
	int f = 1;
	orbit__rp_out_c(o, '{');
	jkey(o, "handshake", &f);
	orbit__rp_out_s(o, s->handshake ? "true" : "false");
	ju64(o, "pid", s->pid, &f);
	jstr(o, "process", s->process, &f);
	jstr(o, "host", s->host, &f);
	jstr(o, "agent_version", s->agent, &f);
	if (s->exec_generation > 0) { /* the image before an exec (format.md 4.1) */
		int g = 1;
		jkey(o, "exec_of", &f);
		orbit__rp_out_c(o, '{');
		ju64(o, "generation", s->exec_generation, &g);
		jstr(o, "process", s->exec_process, &g);
		jstr(o, "capture", s->exec_capture, &g);
		orbit__rp_out_c(o, '}');
	}
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
	ju64(o, "handshake_ns", s->monotonic_ns, &f);
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
	int pe = orbit__rp_page_equation(s);
	jstr(o, "log_equation", eq[pe < 0 ? 2 : pe], &f);
	jkey(o, "complete", &f);
	orbit__rp_out_s(o, s->ended ? "true" : "false");
	static const char *how[] = {[ORBIT_ENDED_AGENT] = "agent",
	                            [ORBIT_ENDED_SNAPSHOT] = "snapshot",
	                            [ORBIT_ENDED_GONE] = "gone"};
	uint32_t ended = s->dump != NULL ? s->dump->ended : s->ended_by;
	if (s->ended)
		jstr(o, "ended", ended < sizeof how / sizeof how[0] ? how[ended] : "unknown", &f);
	if (s->dump != NULL) { /* what orbit-dump found (format.md 4.11) */
		const struct orbit_rp_dump *d = s->dump;
		int g = 1;
		jkey(o, "dump", &f);
		orbit__rp_out_c(o, '{');
		jstr(o, "segment", d->segment, &g);
		ju64(o, "flight_frames", d->flight_frames, &g);
		ju64(o, "flight_dropped", d->flight_dropped, &g);
		ju64(o, "flight_damaged", d->flight_damaged, &g);
		ju64(o, "ring_records", d->ring_records, &g);
		ju64(o, "log_pages", d->log_pages, &g);
		jstr(o, "problem", d->problem, &g);
		if (d->completed)
			ju64(o, "completed", d->completed, &g);
		orbit__rp_out_c(o, '}');
	}
	jkey(o, "rebuilt", &f);
	json_recon(o, s);
	jkey(o, "kernel", &f);
	json_kernel(o, s);
	json_open(o, s);
	orbit__rp_out_c(o, '}');
}

static void json_capture(struct orbit_rp_out *o, const struct orbit_rp_capture *c)
{
	int f = 1, complete = c->streams != NULL;
	orbit__rp_out_c(o, '{');
	jstr(o, "file", c->path, &f);
	if (c->error != NULL)
		jstr(o, "error", c->error, &f);
	ju64(o, "bytes", c->size, &f);
	ju64(o, "damaged_frames", c->damaged, &f);
	ju64(o, "rejected_packets", c->invalid, &f);
	if (c->newer != 0)
		ju64(o, "newer_protocol", c->newer, &f);
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

/* The scope or async span table by name, or by source location (loc:
 * --by location; each row then says its file, line, function, null for
 * the spans without one, and the first name seen there). */
static void json_rows(const struct orbit_rp_view *v, struct orbit_rp_out *o, int async, int loc)
{
	size_t n;
	struct orbit_rp_row *r =
	    loc ? orbit__rp_stats_loc_rows(v->stats, v->locs, v->names, async, v->o->sort, &n)
	        : orbit__rp_stats_rows(v->stats, v->names, async, v->o->sort, &n);
	size_t k = orbit__rp_top(v->o, n);
	orbit__rp_out_c(o, '[');
	for (size_t i = 0; i < k; i++) {
		const struct orbit_rp_stat *x = r[i].st;
		int f = 1;
		orbit__rp_out_s(o, i ? ",\n{" : "\n{");
		if (loc) {
			const struct orbit_rp_location *l = r[i].loc;
			jkey(o, "file", &f);
			if (l)
				orbit__rp_out_json(o, l->file, l->file_len);
			else
				orbit__rp_out_s(o, "null");
			ju64(o, "line", l ? l->line : 0, &f);
			jkey(o, "function", &f);
			if (l)
				orbit__rp_out_json(o, l->function, l->function_len);
			else
				orbit__rp_out_s(o, "null");
		}
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
		if (!async && x->sched_count > 0) { /* the kernel's split (ORBIT_SCHED) */
			ju64(o, "sched_count", x->sched_count, &f);
			ju64(o, "sched_ns", x->sched_total, &f);
			ju64(o, "oncpu_ns", x->oncpu, &f);
			ju64(o, "runnable_ns", x->runnable, &f);
			ju64(o, "blocked_ns", x->blocked, &f);
		}
		orbit__rp_out_c(o, '}');
	}
	orbit__rp_out_c(o, ']');
	free(r);
}

static void json_threads(const struct orbit_rp_view *v, struct orbit_rp_out *o)
{
	size_t n;
	struct orbit_rp_thread **a = orbit__rp_threads_by_busy(v->threads, &n);
	size_t k = orbit__rp_top(v->o, n);
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

/* A value: integers of an integer series whole, other numbers exact
 * (%.17g). */
static void jnum(struct orbit_rp_out *o, const char *k, double x, int integral, int *first)
{
	jkey(o, k, first);
	if (integral && orbit__rp_value_whole(x))
		orbit__rp_out_i64(o, (int64_t)x);
	else
		orbit__rp_out_double(o, x);
}

/* Values by name, then process and thread, as the summary's table. */
static void json_values(const struct orbit_rp_view *v, struct orbit_rp_out *o)
{
	uint32_t n;
	struct orbit_rp_vseries *r =
	    orbit__rp_values_rows((struct orbit_rp_values *)&v->stats->vals, &n);
	size_t k = orbit__rp_top(v->o, n);
	orbit__rp_out_c(o, '[');
	for (size_t i = 0; i < k; i++) {
		const struct orbit_rp_vseries *x = &r[i];
		int f = 1;
		orbit__rp_out_s(o, i ? ",\n{" : "\n{");
		jkey(o, "name", &f);
		orbit__rp_out_json(o, x->name, x->name_len);
		ju64(o, "pid", x->pid, &f);
		ju64(o, "tid", x->tid, &f);
		ju64(o, "count", x->count, &f);
		jnum(o, "min", x->min, x->integral, &f);
		jnum(o, "mean", x->sum / (double)x->count, 0, &f);
		jnum(o, "p50", orbit__rp_vseries_pct(x, 50), x->integral, &f);
		jnum(o, "p95", orbit__rp_vseries_pct(x, 95), x->integral, &f);
		jnum(o, "max", x->max, x->integral, &f);
		jnum(o, "last", x->last, x->integral, &f);
		ju64(o, "last_ns", x->last_time, &f);
		jkey(o, "integers", &f);
		orbit__rp_out_s(o, x->integral ? "true" : "false");
		jkey(o, "percentiles_approximate", &f);
		orbit__rp_out_s(o, x->approx ? "true" : "false");
		orbit__rp_out_c(o, '}');
	}
	orbit__rp_out_c(o, ']');
}

static void json_end(struct orbit_rp_export *x)
{
	const struct orbit_rp_view *v = x->view;
	struct orbit_rp_out *o = x->out;
	static const char *by[] = {"total", "self", "count", "max"};
	orbit__rp_out_s(o, "{\"captures\":[");
	for (size_t i = 0; i < v->ncaps; i++) {
		if (i)
			orbit__rp_out_c(o, ',');
		orbit__rp_out_c(o, '\n');
		json_capture(o, &v->caps[i]);
	}
	orbit__rp_out_printf(o, "],\n\"origin_ns\":%" PRIu64 ",\n\"sort\":\"%s\",\n\"scopes\":",
	                     v->origin, by[v->o->sort]);
	json_rows(v, o, 0, 0);
	orbit__rp_out_s(o, ",\n\"async_spans\":");
	json_rows(v, o, 1, 0);
	if (v->o->by_location) { /* --by location: the same tables by location */
		orbit__rp_out_s(o, ",\n\"scope_locations\":");
		json_rows(v, o, 0, 1);
		orbit__rp_out_s(o, ",\n\"async_span_locations\":");
		json_rows(v, o, 1, 1);
	}
	orbit__rp_out_s(o, ",\n\"threads\":");
	json_threads(v, o);
	orbit__rp_out_s(o, ",\n\"value_series\":");
	json_values(v, o);
	orbit__rp_out_printf(o,
	                     ",\n\"values\":%" PRIu64 ",\n\"log_lines\":%" PRIu64
	                     ",\n\"names_past_limit\":%" PRIu64 "}\n",
	                     v->stats->values, v->stats->logs, v->names->refused);
}

static const char *json_wanted(const struct orbit_replay_options *o)
{
	return o->json_path;
}

const struct orbit_rp_exporter orbit__rp_export_json = {
    .name = "json",
    .wanted = json_wanted,
    .needs = ORBIT_RP_NEED_SCHED,
    .end = json_end,
};
