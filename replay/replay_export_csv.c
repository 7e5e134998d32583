/*
 * replay_export_csv.c — --csv: one row per scope and async span, RFC 4180
 * (CRLF line ends, fields with , " CR LF or other control characters
 * quoted, quotes doubled). Rows come in the order scopes end (a scope after
 * the scopes inside it); sort by start_ns for a timeline. An unfinished
 * scope has empty end_ns and duration_ns: its end is unknown, not zero.
 */
#include "replay_internal.h"

void orbit__rp_csv_begin(struct orbit_rp_run *run)
{
	orbit__rp_out_s(&run->csv,
	                "pid,tid,thread_name,depth,name,start_ns,end_ns,duration_ns,kind\r\n");
}

void orbit__rp_csv_span(struct orbit_rp_run *run, const struct orbit_rp_span *s)
{
	struct orbit_rp_out *o = &run->csv;
	const struct orbit_rp_thread *t = s->thread;
	orbit__rp_out_u64(o, s->pid);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->tid);
	orbit__rp_out_c(o, ',');
	if (t != NULL && t->name != NULL && t->tid == s->tid)
		orbit__rp_out_csv(o, t->name, t->name_len);
	orbit__rp_out_c(o, ',');
	if (!s->async)
		orbit__rp_out_u64(o, s->depth);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_csv(o, s->name, s->name_len);
	orbit__rp_out_c(o, ',');
	orbit__rp_out_u64(o, s->start);
	orbit__rp_out_c(o, ',');
	if (!s->unfinished) {
		orbit__rp_out_u64(o, s->end);
		orbit__rp_out_c(o, ',');
		orbit__rp_out_u64(o, s->end - s->start);
	} else {
		orbit__rp_out_c(o, ',');
	}
	orbit__rp_out_s(o, s->async ? ",async\r\n" : ",scope\r\n");
}
