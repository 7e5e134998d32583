/*
 * replay_export_chrome.c — --chrome: the Trace Event Format (JSON) that
 * Perfetto UI opens (and DevTools' Performance panel, slices only).
 *
 *   scopes       "X" complete events (ts, dur), in the tie order of
 *                replay_order.c; what is uncertain in args: unfinished (dur
 *                runs to the latest time it is known open), name_incomplete,
 *                time_untrusted; args.color "#rrggbbaa" and args.group when
 *                given; args.file, args.line, args.function where the
 *                capture has the scope's source location
 *                and args.oncpu_ns, runnable_ns and blocked_ns with the
 *                kernel's scheduling (ORBIT_SCHED)
 *   async spans  "b" / "e" nestable async events, id as a hex string, the
 *                same args on "b"
 *   values       "C" counters, one series per name and process
 *   log lines    "i" instants on their thread, markers with their bytes;
 *                ORBIT_LOG's lines with args.file, line, function
 *   names        "M" process_name (at each stream) and thread_name (at the
 *                end, when every name is known)
 *
 * ts and dur are microseconds with three decimals: nanoseconds kept, as
 * JSON numbers (exact in a double up to about 100 days of uptime). Every
 * string goes through orbit__rp_out_json: valid JSON whatever its bytes.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export.h"

struct chrome {
	int events; /* written so far: the next one needs a comma */
};

static struct orbit_rp_out *event_open(struct orbit_rp_export *x, const char *ph)
{
	struct chrome *c = x->state;
	struct orbit_rp_out *o = x->out;
	orbit__rp_out_s(o, c->events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
	orbit__rp_out_s(o, ph);
	orbit__rp_out_s(o, "\"");
	return o;
}

static void put_u64(struct orbit_rp_out *o, const char *key, uint64_t v)
{
	orbit__rp_out_s(o, key);
	orbit__rp_out_u64(o, v);
}

static void put_ts(struct orbit_rp_out *o, const char *key, uint64_t ns)
{
	orbit__rp_out_s(o, key);
	orbit__rp_out_us(o, ns);
}

static void put_name(struct orbit_rp_out *o, const char *name, size_t len)
{
	orbit__rp_out_s(o, ",\"name\":");
	orbit__rp_out_json(o, name, len);
}

/* "file":…,"line":N,"function":… of a source location. */
static void put_loc(struct orbit_rp_out *o, const struct orbit_rp_location *l)
{
	orbit__rp_out_s(o, "\"file\":");
	orbit__rp_out_json(o, l->file, l->file_len);
	put_u64(o, ",\"line\":", l->line);
	orbit__rp_out_s(o, ",\"function\":");
	orbit__rp_out_json(o, l->function, l->function_len);
}

static int chrome_begin(struct orbit_rp_export *x)
{
	orbit__rp_out_s(x->out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	return 0;
}

static void chrome_process(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct orbit_rp_out *o = event_open(x, "M");
	put_u64(o, ",\"pid\":", s->pid);
	orbit__rp_out_s(o, ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
	const char *n = s->process ? s->process : "";
	orbit__rp_out_json(o, n, strlen(n));
	orbit__rp_out_s(o, "}}");
}

/* The args of a scope or an async begin: what the reconstruction found
 * uncertain (unfinished, name_incomplete, time_untrusted), and the colour and
 * group it was given (the group as a string: a 64-bit id is not exact in a
 * JavaScript number). Values ("C" events) carry no flags: a counter's args
 * are its series. */
static void span_args(struct orbit_rp_out *o, const struct orbit_rp_span *s)
{
	const char *sep = ",\"args\":{";
	if (s->flags & ORBIT_RP_UNFINISHED) {
		orbit__rp_out_s(o, sep);
		orbit__rp_out_s(o, "\"unfinished\":true");
		sep = ",";
	}
	if (s->flags & ORBIT_RP_NAME_INCOMPLETE) {
		orbit__rp_out_s(o, sep);
		orbit__rp_out_s(o, "\"name_incomplete\":true");
		sep = ",";
	}
	if (s->flags & ORBIT_RP_TIME_UNTRUSTED) {
		orbit__rp_out_s(o, sep);
		orbit__rp_out_s(o, "\"time_untrusted\":true");
		sep = ",";
	}
	if (s->flags & ORBIT_RP_ATTRS) {
		orbit__rp_out_s(o, sep);
		orbit__rp_out_s(o, "\"color\":\"");
		orbit__rp_out_color(o, s->color);
		orbit__rp_out_s(o, "\",\"group\":\"");
		orbit__rp_out_u64(o, s->group);
		orbit__rp_out_c(o, '"');
		sep = ",";
	}
	if (s->loc != NULL) {
		orbit__rp_out_s(o, sep);
		put_loc(o, s->loc);
		sep = ",";
	}
	if (s->sched != NULL) { /* where a scope's time went (ORBIT_SCHED) */
		orbit__rp_out_s(o, sep);
		orbit__rp_out_s(o, "\"oncpu_ns\":");
		orbit__rp_out_u64(o, s->sched->oncpu_ns);
		orbit__rp_out_s(o, ",\"runnable_ns\":");
		orbit__rp_out_u64(o, s->sched->runnable_ns);
		orbit__rp_out_s(o, ",\"blocked_ns\":");
		orbit__rp_out_u64(o, s->sched->blocked_ns);
		sep = ",";
	}
	if (sep[0] == ',' && sep[1] == '\0')
		orbit__rp_out_c(o, '}');
}

static void chrome_slice(struct orbit_rp_export *x, const struct orbit_rp_span *s, int end)
{
	if (end)
		return; /* a complete event says both */
	struct orbit_rp_out *o = event_open(x, "X");
	put_u64(o, ",\"pid\":", s->pid);
	put_u64(o, ",\"tid\":", s->tid);
	put_ts(o, ",\"ts\":", s->start);
	put_ts(o, ",\"dur\":", s->end - s->start);
	orbit__rp_out_s(o, ",\"cat\":\"scope\"");
	put_name(o, s->name, s->name_len);
	span_args(o, s);
	orbit__rp_out_c(o, '}');
}

static void async_event(struct orbit_rp_export *x, const struct orbit_rp_span *s, int end)
{
	struct orbit_rp_out *o = event_open(x, end ? "e" : "b");
	put_u64(o, ",\"pid\":", s->pid);
	put_u64(o, ",\"tid\":", end ? s->end_tid : s->tid);
	put_ts(o, ",\"ts\":", end ? s->end : s->start);
	orbit__rp_out_printf(o, ",\"cat\":\"async\",\"id\":\"0x%" PRIx64 "\"", s->id);
	put_name(o, s->name, s->name_len);
	if (!end)
		span_args(o, s);
	orbit__rp_out_c(o, '}');
}

static void chrome_async(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	async_event(x, s, 0);
	async_event(x, s, 1);
}

static void chrome_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	struct orbit_rp_out *o = event_open(x, "C");
	put_u64(o, ",\"pid\":", v->pid);
	put_u64(o, ",\"tid\":", v->tid);
	put_ts(o, ",\"ts\":", v->time);
	put_name(o, v->name, v->name_len);
	orbit__rp_out_s(o, ",\"args\":{\"value\":");
	orbit__rp_out_value(o, v);
	orbit__rp_out_s(o, "}}");
}

static void chrome_line(struct orbit_rp_export *x, const struct orbit_rp_line *l)
{
	struct orbit_rp_out *o = event_open(x, "i");
	put_u64(o, ",\"pid\":", l->pid);
	put_u64(o, ",\"tid\":", l->tid);
	put_ts(o, ",\"ts\":", l->time);
	orbit__rp_out_s(o, ",\"s\":\"t\",\"cat\":\"log\"");
	if (l->flags & ORBIT_RP_MARKER) {
		orbit__rp_out_s(o, ",\"name\":\"marker\",\"args\":{\"bytes\":");
		orbit__rp_out_c(o, '"');
		orbit__rp_out_hex(o, l->text, l->len);
		orbit__rp_out_c(o, '"');
		orbit__rp_out_c(o, '}');
	} else {
		put_name(o, l->text, l->len);
		if (l->loc != NULL) { /* ORBIT_LOG's call site */
			orbit__rp_out_s(o, ",\"args\":{");
			put_loc(o, l->loc);
			orbit__rp_out_c(o, '}');
		}
	}
	orbit__rp_out_c(o, '}');
}

static void chrome_end(struct orbit_rp_export *x)
{
	const struct orbit_rp_threads *th = x->view->threads;
	for (uint32_t i = 0; i < th->n; i++) {
		const struct orbit_rp_thread *t = th->all[i];
		if (t->name == NULL)
			continue;
		struct orbit_rp_out *o = event_open(x, "M");
		put_u64(o, ",\"pid\":", t->pid);
		put_u64(o, ",\"tid\":", t->tid);
		orbit__rp_out_s(o, ",\"name\":\"thread_name\",\"args\":{\"name\":");
		orbit__rp_out_json(o, t->name, t->name_len);
		orbit__rp_out_s(o, "}}");
	}
	orbit__rp_out_s(x->out, "\n]}\n");
}

static const char *chrome_wanted(const struct orbit_replay_options *o)
{
	return o->chrome_path;
}

const struct orbit_rp_exporter orbit__rp_export_chrome = {
    .name = "chrome",
    .wanted = chrome_wanted,
    .needs = ORBIT_RP_NEED_SCHED,
    .state_size = sizeof(struct chrome),
    .begin = chrome_begin,
    .stream = chrome_process,
    .slice = chrome_slice,
    .async = chrome_async,
    .value = chrome_value,
    .line = chrome_line,
    .end = chrome_end,
};
