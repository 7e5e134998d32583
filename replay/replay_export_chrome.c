/*
 * replay_export_chrome.c — --chrome: the Trace Event Format (JSON) that
 * chrome://tracing and Perfetto UI open.
 *
 *   scopes       "X" complete events (ts, dur), in the tie order of
 *                replay_order.c; unfinished: dur 0, args.unfinished
 *   async spans  "b" / "e" nestable async events, id as a hex string
 *   values       "C" counters, one series per name and process
 *   log lines    "i" instants on their thread, markers with their bytes
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

#include "replay_internal.h"

struct orbit_rp_chrome {
	int events; /* written so far: the next one needs a comma */
};

static struct orbit_rp_out *event_open(struct orbit_rp_run *run, const char *ph)
{
	struct orbit_rp_out *o = &run->chrome_out;
	orbit__rp_out_s(o, run->chrome->events++ ? ",\n{\"ph\":\"" : "\n{\"ph\":\"");
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

int orbit__rp_chrome_begin(struct orbit_rp_run *run)
{
	run->chrome = calloc(1, sizeof *run->chrome);
	if (run->chrome == NULL)
		return -1;
	orbit__rp_out_s(&run->chrome_out, "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[");
	return 0;
}

void orbit__rp_chrome_process(struct orbit_rp_run *run, const struct orbit_rp_stream *s)
{
	struct orbit_rp_out *o = event_open(run, "M");
	put_u64(o, ",\"pid\":", s->pid);
	orbit__rp_out_s(o, ",\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":");
	const char *n = s->process ? s->process : "";
	orbit__rp_out_json(o, n, strlen(n));
	orbit__rp_out_s(o, "}}");
}

static void span_flags(struct orbit_rp_out *o, const struct orbit_rp_span *s)
{
	if (!s->unfinished && !s->name_incomplete)
		return;
	orbit__rp_out_s(o, ",\"args\":{");
	if (s->unfinished)
		orbit__rp_out_s(o, s->name_incomplete ? "\"unfinished\":true,"
		                                      : "\"unfinished\":true");
	if (s->name_incomplete)
		orbit__rp_out_s(o, "\"name_incomplete\":true");
	orbit__rp_out_c(o, '}');
}

void orbit__rp_chrome_item(struct orbit_rp_run *run, const struct orbit_rp_span *s, int end)
{
	if (end)
		return; /* a complete event says both */
	struct orbit_rp_out *o = event_open(run, "X");
	put_u64(o, ",\"pid\":", s->pid);
	put_u64(o, ",\"tid\":", s->tid);
	put_ts(o, ",\"ts\":", s->start);
	put_ts(o, ",\"dur\":", s->end - s->start);
	orbit__rp_out_s(o, ",\"cat\":\"scope\"");
	put_name(o, s->name, s->name_len);
	span_flags(o, s);
	orbit__rp_out_c(o, '}');
}

static void async_event(struct orbit_rp_run *run, const struct orbit_rp_span *s, int end)
{
	struct orbit_rp_out *o = event_open(run, end ? "e" : "b");
	put_u64(o, ",\"pid\":", s->pid);
	put_u64(o, ",\"tid\":", end ? s->end_tid : s->tid);
	put_ts(o, ",\"ts\":", end ? s->end : s->start);
	orbit__rp_out_printf(o, ",\"cat\":\"async\",\"id\":\"0x%" PRIx64 "\"", s->id);
	put_name(o, s->name, s->name_len);
	if (!end)
		span_flags(o, s);
	orbit__rp_out_c(o, '}');
}

void orbit__rp_chrome_async(struct orbit_rp_run *run, const struct orbit_rp_span *s)
{
	async_event(run, s, 0);
	async_event(run, s, 1);
}

static void value_of(struct orbit_rp_out *o, const struct orbit_event *ev)
{
	uint64_t b = ev->value_bits;
	double d;
	switch (ev->value_kind) {
	case ORBIT_REC_INT:
	case ORBIT_REC_INT64:
		orbit__rp_out_i64(o, (int64_t)b);
		return;
	case ORBIT_REC_UINT:
	case ORBIT_REC_UINT64:
		orbit__rp_out_u64(o, b);
		return;
	default:
		memcpy(&d, &b, sizeof d);
		orbit__rp_out_double(o, d);
	}
}

void orbit__rp_chrome_value(struct orbit_rp_run *run, uint32_t pid, const struct orbit_event *ev)
{
	struct orbit_rp_out *o = event_open(run, "C");
	put_u64(o, ",\"pid\":", pid);
	put_u64(o, ",\"tid\":", ev->tid);
	put_ts(o, ",\"ts\":", ev->start);
	put_name(o, ev->name, ev->name_len);
	orbit__rp_out_s(o, ",\"args\":{\"value\":");
	value_of(o, ev);
	orbit__rp_out_s(o, "}}");
}

static void hex_bytes(struct orbit_rp_out *o, const char *p, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	orbit__rp_out_c(o, '"');
	for (size_t i = 0; i < n; i++) {
		char b[2] = {hex[(unsigned char)p[i] >> 4], hex[(unsigned char)p[i] & 15]};
		orbit__rp_out_write(o, b, 2);
	}
	orbit__rp_out_c(o, '"');
}

void orbit__rp_chrome_log(struct orbit_rp_run *run, uint32_t pid, uint32_t tid, uint64_t time,
                          int marker, const char *text, size_t len)
{
	struct orbit_rp_out *o = event_open(run, "i");
	put_u64(o, ",\"pid\":", pid);
	put_u64(o, ",\"tid\":", tid);
	put_ts(o, ",\"ts\":", time);
	orbit__rp_out_s(o, ",\"s\":\"t\",\"cat\":\"log\"");
	if (marker) {
		orbit__rp_out_s(o, ",\"name\":\"marker\",\"args\":{\"bytes\":");
		hex_bytes(o, text, len);
		orbit__rp_out_c(o, '}');
	} else {
		put_name(o, text, len);
	}
	orbit__rp_out_c(o, '}');
}

static void thread_names(struct orbit_rp_run *run)
{
	for (uint32_t i = 0; i < run->threads.n; i++) {
		const struct orbit_rp_thread *t = run->threads.all[i];
		if (t->name == NULL)
			continue;
		struct orbit_rp_out *o = event_open(run, "M");
		put_u64(o, ",\"pid\":", t->pid);
		put_u64(o, ",\"tid\":", t->tid);
		orbit__rp_out_s(o, ",\"name\":\"thread_name\",\"args\":{\"name\":");
		orbit__rp_out_json(o, t->name, t->name_len);
		orbit__rp_out_s(o, "}}");
	}
}

void orbit__rp_chrome_end(struct orbit_rp_run *run)
{
	if (run->chrome == NULL)
		return;
	thread_names(run);
	orbit__rp_out_s(&run->chrome_out, "\n]}\n");
	free(run->chrome);
	run->chrome = NULL;
}
