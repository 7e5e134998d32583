/*
 * replay_export_summary.c — the summary orbit-replay prints by default:
 * for each capture and stream the process, start, duration, events,
 * threads, loss and whether the equation holds, then the tables of scopes,
 * async spans, values and threads (docs/replay.md, "The summary"). Written at the
 * end, on the run's standard output; not with --log, -q or --json -.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "replay_export.h"

#define NAME_SHOWN 80u

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

/* On-CPU, runnable, blocked and unknown time (the one vocabulary of every
 * output) as shares of the time of the name's scopes that the kernel's
 * scheduling covers: unknown is what the kernel's events leave (none
 * there, or lost), so the four printed add up to 100 %. */
static void sched_shares(struct orbit_rp_out *o, const struct orbit_rp_stat *x)
{
	if (x->sched_count == 0 || x->sched_total == 0) {
		orbit__rp_out_printf(o, " %8s %8s %8s %8s", "-", "-", "-", "-");
		return;
	}
	double t = (double)x->sched_total, share[3];
	const uint64_t part[3] = {x->oncpu, x->runnable, x->blocked};
	double left = 100.0;
	for (int i = 0; i < 3; i++) { /* rounded as printed, so the rest is exact */
		share[i] = (double)(long long)(1000.0 * (double)part[i] / t + 0.5) / 10.0;
		left -= share[i];
	}
	orbit__rp_out_printf(o, " %7.1f%% %7.1f%% %7.1f%% %7.1f%%", share[0], share[1], share[2],
	                     left > 0.0 ? left : 0.0);
}

static void scope_table(const struct orbit_rp_view *v, struct orbit_rp_out *o, int async)
{
	static const char *by[] = {"total time", "self time", "count", "max"};
	size_t n;
	int loc = v->o->by_location;
	struct orbit_rp_row *r =
	    loc ? orbit__rp_stats_loc_rows(v->stats, v->locs, v->names, async, v->o->sort, &n)
	        : orbit__rp_stats_rows(v->stats, v->names, async, v->o->sort, &n);
	if (n == 0) {
		free(r);
		return;
	}
	size_t k = orbit__rp_top(v->o, n);
	int sched = 0; /* the kernel's split of the scopes' time, when any has one */
	for (size_t i = 0; !async && i < n; i++)
		sched |= r[i].st->sched_count > 0;
	orbit__rp_out_printf(o, "\n%s by %s%s (%zu of %zu %s)\n", async ? "async spans" : "scopes",
	                     loc ? "location, by " : "", by[v->o->sort], k, n,
	                     loc ? "locations" : "names");
	orbit__rp_out_printf(o, "%10s %14s %14s %14s %14s %14s %14s %14s %8s", "count", "total",
	                     async ? "-" : "self", "mean", "p50", "p95", "p99", "max", "unfin.");
	if (sched)
		orbit__rp_out_printf(o, " %8s %8s %8s %8s", "on-CPU", "runnable", "blocked",
		                     "unknown");
	orbit__rp_out_s(o, loc ? "  location  name\n" : "  name\n");
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
		orbit__rp_out_printf(o, " %8" PRIu64, x->unfinished);
		if (sched)
			sched_shares(o, x);
		orbit__rp_out_s(o, "  ");
		if (r[i].label) {
			orbit__rp_out_text(o, r[i].label, r[i].label_len);
			orbit__rp_out_s(o, "  ");
		}
		out_name(o, r[i].name, r[i].len);
		orbit__rp_out_c(o, '\n');
	}
	free(r);
}

/* A value as the values table shows it: integers whole, other numbers to
 * six significant digits. */
static void out_num(struct orbit_rp_out *o, double x, int integral, int approx)
{
	char b[40];
	if (integral && orbit__rp_value_whole(x))
		snprintf(b, sizeof b, "%lld", (long long)x);
	else
		snprintf(b, sizeof b, "%.6g", x);
	orbit__rp_out_printf(o, " %c%13s", approx ? '~' : ' ', b);
}

/* Values by name, then process and thread: one row per series. */
static void value_table(const struct orbit_rp_view *v, struct orbit_rp_out *o)
{
	uint32_t n;
	struct orbit_rp_vseries *r =
	    orbit__rp_values_rows((struct orbit_rp_values *)&v->stats->vals, &n);
	if (n == 0)
		return;
	size_t k = orbit__rp_top(v->o, n);
	orbit__rp_out_printf(
	    o, "\nvalues by name (%zu of %" PRIu32 " series: name, process, thread)\n", k, n);
	orbit__rp_out_printf(o, "%10s %14s %14s %14s %14s %14s %14s %10s %10s  %s\n", "count",
	                     "min", "mean", "p50", "p95", "max", "last", "pid", "tid", "name");
	for (size_t i = 0; i < k; i++) {
		const struct orbit_rp_vseries *x = &r[i];
		orbit__rp_out_printf(o, "%10" PRIu64, x->count);
		out_num(o, x->min, x->integral, 0);
		out_num(o, x->sum / (double)x->count, 0, 0);
		out_num(o, orbit__rp_vseries_pct(x, 50), x->integral, x->approx);
		out_num(o, orbit__rp_vseries_pct(x, 95), x->integral, x->approx);
		out_num(o, x->max, x->integral, 0);
		out_num(o, x->last, x->integral, 0);
		orbit__rp_out_printf(o, " %10" PRIu32 " %10" PRIu32 "  ", x->pid, x->tid);
		out_name(o, x->name, x->name_len);
		orbit__rp_out_c(o, '\n');
	}
	if (v->stats->vals.unkept)
		orbit__rp_out_printf(
		    o, "%" PRIu64 " samples of further series are counted, not shown\n",
		    v->stats->vals.unkept);
}

static void thread_table(const struct orbit_rp_view *v, struct orbit_rp_out *o)
{
	size_t n;
	struct orbit_rp_thread **a = orbit__rp_threads_by_busy(v->threads, &n);
	if (n == 0) {
		free(a);
		return;
	}
	size_t k = orbit__rp_top(v->o, n);
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

static void stream_loss_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	struct orbit__loss l = orbit__rp_stream_loss(s);
	uint64_t pr, pp, pd;
	orbit__rp_stream_page_loss(s, &pr, &pp, &pd);
	if (orbit__loss_sum(&l) + l.unsent + pr + pp == 0) {
		orbit__rp_out_s(o, "  loss       none\n");
		return;
	}
	orbit__rp_out_printf(o,
	                     "  loss       %" PRIu64 " records: lapped %" PRIu64
	                     ", writer gone %" PRIu64 ", backstop %" PRIu64 ", at end %" PRIu64,
	                     orbit__loss_sum(&l), l.lapped, l.writer_gone, l.backstop, l.at_end);
	if (l.flight_dropped)
		orbit__rp_out_printf(o, ", flight ring %" PRIu64, l.flight_dropped);
	orbit__rp_out_c(o, '\n');
	if (l.flight_dropped)
		orbit__rp_out_s(o,
		                "             flight ring: in frames it overwrote with newer ones "
		                "before the dump; ORBIT_FLIGHT in the traced process keeps more\n");
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
	struct orbit_rp_equation t;
	orbit__rp_stream_equation(s, &t);
	if (t.holds < 0) {
		orbit__rp_out_printf(o,
		                     "  equation   unknown: no end of stream (delivered %" PRIu64
		                     ", lost %" PRIu64 " so far)\n",
		                     t.delivered, t.lost);
		return;
	}
	orbit__rp_out_printf(
	    o, "  equation   claimed %" PRIu64 " == delivered %" PRIu64 " + lost %" PRIu64 ": %s%s",
	    t.claimed, t.delivered, t.lost, t.holds ? "holds" : "DOES NOT HOLD",
	    t.by_account ? " (by the account a later stream gave of it)" : "");
	if (!t.holds)
		orbit__rp_out_printf(o, " (first on ring %u)", t.bad_ring);
	orbit__rp_out_c(o, '\n');
	int pe = orbit__rp_page_equation(s);
	if (pe < 0 && (s->npage_reserved || s->npage))
		orbit__rp_out_s(o,
		                "  logs       reserved == delivered + lost: unknown (a dump: the "
		                "agent's counts are not in the segment)\n");
	else if (s->npage_reserved || s->npage)
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
	if (r->depth_misplaced > 0)
		orbit__rp_out_printf(o,
		                     "  depth      %" PRIu64
		                     " scopes one level too deep: more scopes finished inside a "
		                     "scope than could wait to learn whether it was ever stopped, "
		                     "and it was not\n",
		                     r->depth_misplaced);
}

/* Clock trouble: said only when there was some. */
static void stream_clock_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	const struct orbit_reconstruct_stats *r = &s->rstats;
	if (r->untrusted_events + s->untrusted_times + s->clock_resets == 0)
		return;
	orbit__rp_out_printf(o,
	                     "  clock      %" PRIu64 " events with a time not trusted (%" PRIu64
	                     " records, %" PRIu64 " counter resets, says the agent)\n",
	                     r->untrusted_events, s->untrusted_times, s->clock_resets);
}

/* How the stream ended, when orbit-dump made it. */
static void stream_end_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	const struct orbit_rp_dump *d = s->dump;
	if (d == NULL && s->ended_by == ORBIT_ENDED_AGENT)
		return;
	uint32_t how = d != NULL ? d->ended : s->ended_by;
	char wall[64] = "";
	if (d != NULL)
		orbit__rp_wallclock(s, d->monotonic_ns, wall, sizeof wall);
	if (d != NULL && d->completed) {
		/* The agent's own frames, then what the dump added (format.md 4.11). */
		orbit__rp_wallclock(s, d->monotonic_ns, wall, sizeof wall);
		orbit__rp_out_printf(o,
		                     "  ended      cut when its image exec'd (or its agent was "
		                     "killed), then completed at %s from ",
		                     wall);
		orbit__rp_out_text(o, d->segment, strlen(d->segment));
		orbit__rp_out_printf(
		    o, "\n             %" PRIu64 " records from its rings, %" PRIu64 " log pages",
		    d->ring_records, d->log_pages);
		if (d->problem[0]) {
			orbit__rp_out_s(o, "\n  DAMAGED    the segment: ");
			orbit__rp_out_text(o, d->problem, strlen(d->problem));
		}
		orbit__rp_out_c(o, '\n');
		return;
	}
	orbit__rp_out_printf(o, "  ended      %s",
	                     how == ORBIT_ENDED_SNAPSHOT
	                         ? "snapshot of the live process"
	                         : "process gone (it crashed, was killed or exited without its "
	                           "exit handler)");
	if (d != NULL) {
		orbit__rp_out_printf(o, "; orbit-dump at %s from ", wall);
		orbit__rp_out_text(o, d->segment, strlen(d->segment));
		orbit__rp_out_printf(o,
		                     "\n             %" PRIu64
		                     " frames of its flight ring (%" PRIu64 " overwritten, %" PRIu64
		                     " left out as damaged), %" PRIu64
		                     " records from its rings, %" PRIu64 " log pages",
		                     d->flight_frames, d->flight_dropped, d->flight_damaged,
		                     d->ring_records, d->log_pages);
		if (d->problem[0]) {
			orbit__rp_out_s(o, "\n  DAMAGED    the segment: ");
			orbit__rp_out_text(o, d->problem, strlen(d->problem));
		}
	}
	orbit__rp_out_c(o, '\n');
}

/* Each thread's scopes open when the input ended, outermost first. */
static void stream_open_text(const struct orbit_rp_view *v, struct orbit_rp_out *o,
                             struct orbit_rp_stream *s)
{
	struct orbit_rp_open *op = &s->open_at_end;
	if (op->n == 0)
		return;
	orbit__rp_open_sort(op);
	const char *label = "  open       ";
	for (size_t i = 0; i < op->n;) {
		uint32_t tid = op->v[i].tid;
		orbit__rp_out_s(o, label);
		label = "             ";
		struct orbit_rp_thread *th = orbit__rp_thread(v->threads, s->pid, tid);
		if (th != NULL && th->tid == tid && th->name != NULL)
			out_name(o, th->name, th->name_len);
		else
			orbit__rp_out_printf(o, "tid %" PRIu32, tid);
		orbit__rp_out_s(o, ": ");
		for (size_t j = i; i < op->n && op->v[i].tid == tid; i++) {
			if (i > j)
				orbit__rp_out_s(o, " > ");
			out_name(o, op->v[i].name, op->v[i].name_len);
		}
		orbit__rp_out_c(o, '\n');
	}
	if (op->dropped)
		orbit__rp_out_printf(o, "             and %" PRIu64 " more\n", op->dropped);
}

/* Kernel scheduling (ORBIT_SCHED): said only when it was asked for. */
static void stream_kernel_text(struct orbit_rp_out *o, const struct orbit_rp_stream *s)
{
	const struct orbit_rp_kernel *k = &s->kernel;
	if (!k->on) {
		if (k->off != NULL) {
			orbit__rp_out_s(o, "  kernel     off: ");
			orbit__rp_out_text(o, k->off, strlen(k->off));
			orbit__rp_out_c(o, '\n');
		}
		return;
	}
	struct orbit__kernel_loss sum = orbit__rp_stream_kernel_sums(s);
	orbit__rp_out_printf(o,
	                     "  kernel     %" PRIu64 " scheduling events on %" PRIu64
	                     " pages from %" PRIu32 " CPUs; lost %" PRIu64 " (overwritten %" PRIu64
	                     ", dropped %" PRIu64 "), %" PRIu64 " pages with a gap, %" PRIu64
	                     " pages not sent\n",
	                     k->records, k->pages, k->cpus, orbit__kernel_loss_sum(&sum),
	                     sum.overrun, sum.dropped, sum.flagged_pages, sum.unsent_pages);
	int eq = orbit__rp_kernel_equation(s);
	if (eq >= 0)
		orbit__rp_out_printf(o,
		                     "  kernel     read %" PRIu64 " == delivered %" PRIu64 ": %s\n",
		                     sum.read_events, k->records, eq ? "holds" : "DOES NOT HOLD");
	if (orbit__kernel_loss_sum(&sum))
		orbit__rp_out_s(o, "             lost: the agent read the kernel's buffers too "
		                   "late; where, the threads' states are unknown\n");
}

static void stream_text(const struct orbit_rp_view *v, struct orbit_rp_out *o,
                        const struct orbit_rp_stream *s)
{
	char wall[64], dur[40];
	uint64_t first, last;
	orbit__rp_stream_span(s, &first, &last);
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
		if (s->exec_generation > 0) {
			orbit__rp_out_printf(
			    o, "  exec       image %" PRIu32 " of the process, after ",
			    s->exec_generation + 1);
			const char *p = s->exec_process ? s->exec_process : "";
			orbit__rp_out_text(o, p, strlen(p));
			orbit__rp_out_s(o, " exec'd");
			if (s->exec_capture != NULL && s->exec_capture[0]) {
				orbit__rp_out_s(o, "; its capture: ");
				orbit__rp_out_text(o, s->exec_capture, strlen(s->exec_capture));
			} else {
				orbit__rp_out_s(o, "; it left no capture");
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
	stream_end_text(o, s);
	stream_loss_text(o, s);
	stream_equation_text(o, s);
	stream_recon_text(o, s);
	stream_clock_text(o, s);
	stream_kernel_text(o, s);
	stream_open_text(v, o, (struct orbit_rp_stream *)s);
}

static void capture_text(const struct orbit_rp_view *v, struct orbit_rp_out *o,
                         const struct orbit_rp_capture *c)
{
	orbit__rp_out_s(o, "capture ");
	orbit__rp_out_text(o, c->path, strlen(c->path));
	if (c->error != NULL && c->size == 0) { /* not opened */
		orbit__rp_out_printf(o, "\n  not read   %s\n", c->error);
		return;
	}
	orbit__rp_out_printf(o, " (%" PRIu64 " bytes)\n", c->size);
	if (c->error != NULL) {
		orbit__rp_out_printf(o, "  not read   %s\n", c->error);
		return;
	}
	int n = 0;
	for (const struct orbit_rp_stream *s = c->streams; s; s = s->next, n++) {
		if (c->streams->next)
			orbit__rp_out_printf(o, " stream %d\n", n + 1);
		stream_text(v, o, s);
	}
	if (c->newer != 0)
		orbit__rp_out_printf(
		    o,
		    "  NEWER      a stream made by a newer Orbit (protocol %" PRIu32
		    ") left out: this orbit-replay reads protocols %u to %u\n",
		    c->newer, ORBIT_PROTOCOL_VERSION_MIN, ORBIT_PROTOCOL_VERSION_MAX);
	else if (c->streams == NULL)
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

static void summary_end(struct orbit_rp_export *x)
{
	const struct orbit_rp_view *v = x->view;
	struct orbit_rp_out *o = x->out;
	for (size_t i = 0; i < v->ncaps; i++) {
		if (i)
			orbit__rp_out_c(o, '\n');
		capture_text(v, o, &v->caps[i]);
	}
	scope_table(v, o, 0);
	scope_table(v, o, 1);
	value_table(v, o);
	thread_table(v, o);
	if (v->names->refused)
		orbit__rp_out_printf(o,
		                     "\n%" PRIu64 " events had names past the %u-name limit; "
		                     "their statistics are merged\n",
		                     v->names->refused, ORBIT_RP_MAX_NAMES);
}

static const char *summary_wanted(const struct orbit_replay_options *o)
{
	if (o->quiet || o->log || o->ninputs == 0 ||
	    (o->json_path && strcmp(o->json_path, "-") == 0))
		return NULL;
	return "stdout";
}

const struct orbit_rp_exporter orbit__rp_export_summary = {
    .name = "summary",
    .wanted = summary_wanted,
    .needs = ORBIT_RP_NEED_STDOUT | ORBIT_RP_NEED_SCHED,
    .end = summary_end,
};
