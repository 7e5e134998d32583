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

static void csv_span(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct orbit_rp_out *o = x->out;
	const struct orbit_rp_thread *t = s->thread;
	int async = (s->flags & ORBIT_RP_ASYNC) != 0;
	orbit__rp_out_u64(o, s->pid);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->tid);
	orbit__rp_out_c(o, ',');
	if (t != NULL && t->name != NULL && t->tid == s->tid)
		orbit__rp_out_csv(o, t->name, t->name_len);
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
	if (s->flags & ORBIT_RP_ATTRS) {
		orbit__rp_out_color(o, s->color);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, s->group);
	} else {
		orbit__rp_out_c(o, ',');
	}
	orbit__rp_out_c(o, ',');
	static const struct {
		uint32_t flag;
		const char *word;
	} marks[] = {{ORBIT_RP_UNFINISHED, "unfinished"},
	             {ORBIT_RP_NAME_INCOMPLETE, "name_incomplete"},
	             {ORBIT_RP_TIME_UNTRUSTED, "time_untrusted"}};
	const char *sep = "";
	for (size_t i = 0; i < sizeof marks / sizeof marks[0]; i++) {
		if (s->flags & marks[i].flag) {
			orbit__rp_out_s(o, sep);
			orbit__rp_out_s(o, marks[i].word);
			sep = " ";
		}
	}
	orbit__rp_out_c(o, ',');
	if (s->loc != NULL) {
		orbit__rp_out_csv(o, s->loc->file, s->loc->file_len);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, s->loc->line);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_csv(o, s->loc->function, s->loc->function_len);
	} else {
		orbit__rp_out_c(o, ',');
		orbit__rp_out_c(o, ',');
	}
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
