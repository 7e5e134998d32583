/*
 * replay_export_csv.c — --csv: one row per scope and async span, RFC 4180
 * (CRLF line ends, fields with , " CR LF or other control characters
 * quoted, quotes doubled). Rows come in the order scopes end (a scope after
 * the scopes inside it); sort by start_ns for a timeline. color
 * ("#rrggbbaa") and group_id are empty unless the event was written with
 * ..._WITH_COLOR or ..._WITH_GROUP_AND_COLOR. marks says what is uncertain
 * about the row, as space-separated words, empty when nothing is:
 *   unfinished      its stop never came: end_ns is the latest time it is
 *                   known to have been open (the stop of a scope around it,
 *                   its thread's end, the end of the capture), not its stop
 *   name_incomplete part of its name was lost: name is what arrived
 *   time_untrusted  the agent could not trust the conversion of its start's
 *                   or stop's time (its clock counter went backwards or
 *                   jumped around then)
 * file, line, function: where the macro that started it is written
 * (docs/format.md 4.12), empty when the capture does not say (an older agent, a site the
 * agent could not resolve).
 * oncpu_ns, runnable_ns and blocked_ns split a scope's time by what its
 * thread did, from the kernel's scheduling (ORBIT_SCHED): running on a
 * CPU, waiting for one, asleep; what they leave of duration_ns is
 * unknown (no kernel events there). Empty without kernel scheduling for
 * the scope's thread, and for async spans.
 *
 * --values-csv: one row per value sample, in the order the captures give
 * them (a thread's in its order): pid, tid, thread_name, name, time_ns,
 * value (an integer exactly, a floating value as %.17g), type (int or
 * double), marks (name_incomplete, time_untrusted), color, group_id, file,
 * line, function, as above.
 */
#include "replay_export.h"

static int csv_begin(struct orbit_rp_export *x)
{
	orbit__rp_out_s(
	    x->out,
	    "pid,tid,thread_name,depth,name,start_ns,end_ns,duration_ns,kind,color,group_id,"
	    "marks,file,line,function,oncpu_ns,runnable_ns,blocked_ns\r\n");
	return 0;
}

/* The marks a row's flags carry, space-separated. */
static void marks_of(struct orbit_rp_out *o, uint32_t flags)
{
	static const struct {
		uint32_t flag;
		const char *word;
	} marks[] = {{ORBIT_RP_UNFINISHED, "unfinished"},
	             {ORBIT_RP_NAME_INCOMPLETE, "name_incomplete"},
	             {ORBIT_RP_TIME_UNTRUSTED, "time_untrusted"}};
	const char *sep = "";
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
		if (flags & marks[i].flag) {
			orbit__rp_out_s(o, sep);
			orbit__rp_out_s(o, marks[i].word);
			sep = " ";
		}
	}
}

/* color,group_id,marks,file,line,function: the fields spans and values
 * share, each followed by its comma but the last. */
static void attrs_and_source(struct orbit_rp_out *o, uint32_t flags, uint32_t color, uint64_t group,
                             const struct orbit_rp_location *loc)
{
	if (flags & ORBIT_RP_ATTRS) {
		orbit__rp_out_color(o, color);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, group);
	} else {
		orbit__rp_out_c(o, ',');
	}
	orbit__rp_out_c(o, ',');
	marks_of(o, flags);
	orbit__rp_out_c(o, ',');
	if (loc != NULL) {
		orbit__rp_out_csv(o, loc->file, loc->file_len);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, loc->line);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_csv(o, loc->function, loc->function_len);
	} else {
		orbit__rp_out_c(o, ',');
		orbit__rp_out_c(o, ',');
	}
}

static void thread_name_field(struct orbit_rp_out *o, const struct orbit_rp_thread *t, uint32_t tid)
{
	if (t != NULL && t->name != NULL && t->tid == tid)
		orbit__rp_out_csv(o, t->name, t->name_len);
}

static void csv_span(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct orbit_rp_out *o = x->out;
	const struct orbit_rp_thread *t = s->thread;
	int async = (s->flags & ORBIT_RP_ASYNC) != 0;
	orbit__rp_out_u64(o, s->pid);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->tid);
	orbit__rp_out_c(o, ',');
	thread_name_field(o, t, s->tid);
	orbit__rp_out_c(o, ',');
	if (!async)
		orbit__rp_out_u64(o, s->depth);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_csv(o, s->name, s->name_len);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->start);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->end);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->end - s->start);
	orbit__rp_out_s(o, async ? ",async," : ",scope,");
	attrs_and_source(o, s->flags, s->color, s->group, s->loc);
	orbit__rp_out_c(o, ',');
	if (s->sched != NULL) {
		orbit__rp_out_u64(o, s->sched->oncpu_ns);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, s->sched->runnable_ns);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, s->sched->blocked_ns);
	} else {
		orbit__rp_out_s(o, ",,");
	}
	orbit__rp_out_s(o, "\r\n");
}

static const char *csv_wanted(const struct orbit_replay_options *o)
{
	return o->csv_path;
}

const struct orbit_rp_exporter orbit__rp_export_csv = {
    .name = "csv",
    .wanted = csv_wanted,
    .needs = ORBIT_RP_NEED_EARLY_NAMES | ORBIT_RP_NEED_SCHED,
    .begin = csv_begin,
    .scope = csv_span,
    .async = csv_span,
};

static int values_begin(struct orbit_rp_export *x)
{
	orbit__rp_out_s(x->out, "pid,tid,thread_name,name,time_ns,value,type,color,group_id,marks,"
	                        "file,line,function\r\n");
	return 0;
}

static void values_row(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	struct orbit_rp_out *o = x->out;
	orbit__rp_out_u64(o, v->pid);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, v->tid);
	orbit__rp_out_c(o, ',');
	thread_name_field(o, v->thread, v->tid);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_csv(o, v->name ? v->name : "", v->name ? v->name_len : 0);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, v->time);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_value(o, v);
	orbit__rp_out_s(o, orbit__rp_value_integral(v) ? ",int," : ",double,");
	attrs_and_source(o, v->flags, v->color, v->group, v->loc);
	orbit__rp_out_s(o, "\r\n");
}

static const char *values_wanted(const struct orbit_replay_options *o)
{
	return o->values_csv_path;
}

const struct orbit_rp_exporter orbit__rp_export_values_csv = {
    .name = "values-csv",
    .wanted = values_wanted,
    .needs = ORBIT_RP_NEED_EARLY_NAMES,
    .begin = values_begin,
    .value = values_row,
};
