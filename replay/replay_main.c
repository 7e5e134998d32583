/*
 * replay_main.c — orbit-replay's command line. Everything else is the
 * replay core (replay.h).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "replay.h"
#include "replay_export_clickhouse.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "unknown"
#endif

static const char usage_text[] =
    "usage: orbit-replay [options] CAPTURE...\n"
    "       orbit-replay --pages FILE [--page-size N]\n"
    "\n"
    "Reads Orbit captures (several make one timeline) and prints a summary:\n"
    "each capture's process, host, start, duration, events, threads, loss and\n"
    "whether claimed == delivered + lost holds; scopes by total time (count,\n"
    "total, self, mean, p50, p95, p99, max); threads by busy time.\n"
    "\n"
    "Output:\n"
    "  --top N          rows per table (default 20; 0: all)\n"
    "  --sort KEY       order scopes by total, self, count or max (default total)\n"
    "  --by KEY         group the summary's scopes by name (default) or location\n"
    "                   (file:line function where the scope is written)\n"
    "  --json FILE      the summary as JSON ('-': stdout, instead of the text)\n"
    "  --csv FILE       one row per scope and async span (RFC 4180)\n"
    "  --values-csv FILE  one row per value sample (RFC 4180)\n"
    "  --chrome FILE    Trace Event JSON (Perfetto UI; DevTools' Performance panel\n"
    "                   shows its slices; for a page offline, --html)\n"
    "  --perfetto FILE  Perfetto protobuf trace (Perfetto UI, trace processor)\n"
    "  --html FILE      one self-contained page: timeline, flame graph, statistics\n"
    "                   (any browser opens it from disk, offline)\n"
    "  --html-max-scopes N\n"
    "                   scopes and async spans the page keeps, the longest\n"
    "                   (default 1000000; 0: all); the page counts the others\n"
    "  --log            print the log lines in time order instead of the summary\n"
    "  --follow         read the one CAPTURE while it is being written (by the\n"
    "                   collector or ORBIT_CAPTURE) and draw a table about once a\n"
    "                   second: scopes by total time in the last second, with\n"
    "                   count, total, p50 and p99 since the start; events/s,\n"
    "                   loss, threads. Ends when the stream ends, or on Ctrl-C,\n"
    "                   with the summary; to a pipe, one table per second\n"
    "  --pages FILE     print every page header and record of a raw ftrace page\n"
    "                   file (ours, or a copy of a kernel trace_pipe_raw)\n"
    "  --page-size N    page size of the --pages file (default 4096)\n"
    "  -q, --quiet      no summary on stdout\n"
    "  --progress, --no-progress\n"
    "                   progress bar on stderr (default: when stderr is a\n"
    "                   terminal and the captures hold 64 MiB or more)\n"
    "\n"
    "Loading into ClickHouse (instead of the summary; docs/operations.md):\n"
    "  --clickhouse URL loads each capture over HTTP, e.g.\n"
    "                   http://host:8123/?database=orbit; a capture already\n"
    "                   there is not loaded again\n"
    "  --clickhouse-create\n"
    "                   creates the database and tables first (none there yet)\n"
    "  --clickhouse-cluster NAME\n"
    "                   with --clickhouse-create: NAME_local tables and\n"
    "                   Distributed tables over the cluster NAME\n"
    "  --clickhouse-batch N\n"
    "                   rows per INSERT (default 262144, at most 1048576)\n"
    "  --clickhouse-retries N\n"
    "                   attempts after a failure that may pass (default 4)\n"
    "  --clickhouse-timeout S\n"
    "                   the longest one request may take, whole, in seconds\n"
    "                   (default 300): a server that trickles or never answers\n"
    "                   fails it\n"
    "\n"
    "Filters (statistics and every output):\n"
    "  --thread TID     only this thread\n"
    "  --name TEXT      only scopes, spans, values and log lines whose name or\n"
    "                   text contains TEXT\n"
    "  --from T, --to T only what overlaps [from, to]. T is N[ns|us|ms|s] after\n"
    "                   the start of the earliest capture (+N the same), or\n"
    "                   @N[ns|us|ms|s] absolute CLOCK_MONOTONIC (as in the CSV)\n"
    "\n"
    "Exit status: 0 clean, 1 usage, 2 damaged or incomplete input (one line per\n"
    "problem on stderr, everything readable still used), 3 output failure,\n"
    "4 --from/--to select nothing of the captures (one line says their range),\n"
    "5 a stream made by a newer Orbit, left out (one line says so).\n";

enum {
	OPT_TOP = 256,
	OPT_SORT,
	OPT_BY,
	OPT_JSON,
	OPT_CSV,
	OPT_VALUES_CSV,
	OPT_CHROME,
	OPT_PERFETTO,
	OPT_HTML,
	OPT_HTML_MAX,
	OPT_LOG,
	OPT_FOLLOW,
	OPT_PAGES,
	OPT_PAGE_SIZE,
	OPT_THREAD,
	OPT_NAME,
	OPT_FROM,
	OPT_TO,
	OPT_PROGRESS,
	OPT_NO_PROGRESS,
	OPT_VERSION,
	OPT_CLICKHOUSE,
	OPT_CH_CREATE,
	OPT_CH_CLUSTER,
	OPT_CH_BATCH,
	OPT_CH_RETRIES,
	OPT_CH_TIMEOUT,
};

static const struct option long_opts[] = {
    {"top", required_argument, NULL, OPT_TOP},
    {"sort", required_argument, NULL, OPT_SORT},
    {"by", required_argument, NULL, OPT_BY},
    {"json", required_argument, NULL, OPT_JSON},
    {"csv", required_argument, NULL, OPT_CSV},
    {"values-csv", required_argument, NULL, OPT_VALUES_CSV},
    {"chrome", required_argument, NULL, OPT_CHROME},
    {"perfetto", required_argument, NULL, OPT_PERFETTO},
    {"html", required_argument, NULL, OPT_HTML},
    {"html-max-scopes", required_argument, NULL, OPT_HTML_MAX},
    {"log", no_argument, NULL, OPT_LOG},
    {"follow", no_argument, NULL, OPT_FOLLOW},
    {"pages", required_argument, NULL, OPT_PAGES},
    {"page-size", required_argument, NULL, OPT_PAGE_SIZE},
    {"thread", required_argument, NULL, OPT_THREAD},
    {"name", required_argument, NULL, OPT_NAME},
    {"from", required_argument, NULL, OPT_FROM},
    {"to", required_argument, NULL, OPT_TO},
    {"quiet", no_argument, NULL, 'q'},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, OPT_VERSION},
    {"clickhouse", required_argument, NULL, OPT_CLICKHOUSE},
    {"clickhouse-create", no_argument, NULL, OPT_CH_CREATE},
    {"clickhouse-cluster", required_argument, NULL, OPT_CH_CLUSTER},
    {"clickhouse-batch", required_argument, NULL, OPT_CH_BATCH},
    {"clickhouse-retries", required_argument, NULL, OPT_CH_RETRIES},
    {"clickhouse-timeout", required_argument, NULL, OPT_CH_TIMEOUT},
    {NULL, 0, NULL, 0},
};

static int usage(const char *fmt, const char *arg)
{
	fputs("orbit-replay: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("; see orbit-replay --help\n", stderr);
	return 1;
}

/* A decimal number in [min, max]; 0 or -1. */
static int number(const char *s, unsigned long long min, unsigned long long max,
                  unsigned long long *v)
{
	char *end;
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end || *v < min || *v > max ? -1 : 0;
}

static int sort_of(const char *s, enum orbit_replay_sort *k)
{
	static const char *keys[] = {"total", "self", "count", "max"};
	for (int i = 0; i < 4; i++)
		if (strcmp(s, keys[i]) == 0) {
			*k = (enum orbit_replay_sort)i;
			return 0;
		}
	return -1;
}

static struct orbit_rp_ch_options ch;

/* One option; 0, 1 for a usage error, or -1 when done (help, version). */
static int option(struct orbit_replay_options *o, int c, const char *arg)
{
	unsigned long long v;
	switch (c) {
	case OPT_CLICKHOUSE:
		ch.url = arg;
		o->clickhouse = &ch;
		return 0;
	case OPT_CH_CREATE:
		ch.create = 1;
		return 0;
	case OPT_CH_CLUSTER:
		if (*arg == '\0')
			return usage("--clickhouse-cluster takes a cluster name%s", "");
		ch.cluster = arg;
		return 0;
	case OPT_CH_BATCH:
		if (number(arg, 1, ORBIT_RP_CH_BATCH_MAX, &v))
			return usage("--clickhouse-batch takes 1 to 1048576 rows, not '%s'", arg);
		ch.batch_rows = (uint32_t)v;
		return 0;
	case OPT_CH_RETRIES:
		if (number(arg, 0, 100, &v))
			return usage("--clickhouse-retries takes 0 to 100, not '%s'", arg);
		ch.retries = (uint32_t)v;
		return 0;
	case OPT_CH_TIMEOUT:
		if (number(arg, 1, 86400, &v))
			return usage("--clickhouse-timeout takes 1 to 86400 seconds, not '%s'",
			             arg);
		ch.timeout_s = (uint32_t)v;
		return 0;
	case OPT_TOP:
		if (number(arg, 0, 1000000000, &v))
			return usage("--top takes a number, not '%s'", arg);
		o->top = (size_t)v;
		return 0;
	case OPT_SORT:
		return sort_of(arg, &o->sort) ? usage("--sort takes total, self, count or max, "
		                                      "not '%s'",
		                                      arg)
		                              : 0;
	case OPT_BY:
		if (strcmp(arg, "name") == 0 || strcmp(arg, "location") == 0) {
			o->by_location = arg[0] == 'l';
			return 0;
		}
		return usage("--by takes name or location, not '%s'", arg);
	case OPT_JSON:
		o->json_path = arg;
		return 0;
	case OPT_CSV:
		o->csv_path = arg;
		return 0;
	case OPT_VALUES_CSV:
		o->values_csv_path = arg;
		return 0;
	case OPT_CHROME:
		o->chrome_path = arg;
		return 0;
	case OPT_PERFETTO:
		o->perfetto_path = arg;
		return 0;
	case OPT_HTML:
		o->html_path = arg;
		return 0;
	case OPT_HTML_MAX:
		if (number(arg, 0, 1000000000, &v))
			return usage("--html-max-scopes takes a number, not '%s'", arg);
		o->html_max_scopes = (size_t)v;
		return 0;
	case OPT_FOLLOW:
		o->follow = 1;
		return 0;
	case OPT_LOG:
		o->log = 1;
		return 0;
	case OPT_PAGES:
		o->pages_path = arg;
		return 0;
	case OPT_PAGE_SIZE:
		if (number(arg, 16, 1u << 20, &v))
			return usage("--page-size takes 16 to 1048576 bytes, not '%s'", arg);
		o->page_size = (uint32_t)v;
		return 0;
	case OPT_THREAD:
		if (number(arg, 0, UINT32_MAX, &v))
			return usage("--thread takes a thread id, not '%s'", arg);
		o->has_thread = 1;
		o->thread = (uint32_t)v;
		return 0;
	case OPT_NAME:
		o->name = arg;
		return 0;
	case OPT_FROM:
	case OPT_TO:
		if (orbit__replay_parse_bound(arg, c == OPT_FROM ? &o->from : &o->to))
			return usage("--from and --to take N[ns|us|ms|s] from the start, or @N "
			             "absolute, not '%s'",
			             arg);
		return 0;
	case 'q':
		o->quiet = 1;
		return 0;
	case OPT_PROGRESS:
	case OPT_NO_PROGRESS:
		o->progress = c == OPT_PROGRESS;
		return 0;
	case 'h':
		fputs(usage_text, stdout);
		return -1;
	case OPT_VERSION:
		printf("orbit-replay %s\n", ORBIT_VERSION);
		return -1;
	default:
		return usage("%s", "unknown option");
	}
}

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "a signal handler sets an atomic_int");
static atomic_int interrupted; /* lock-free: a handler may set it */

static void on_interrupt(int sig)
{
	(void)sig;
	atomic_store_explicit(&interrupted, 1, memory_order_relaxed);
}

int main(int argc, char **argv)
{
	struct orbit_replay_options o;
	int c;
	orbit__replay_defaults(&o);
	orbit__rp_ch_defaults(&ch);
	opterr = 0;
	int li = -1;
	while ((c = getopt_long(argc, argv, "qh", long_opts, &li)) != -1) {
		if (c == '?' || c == ':') {
			const char *bad = optind > 1 ? argv[optind - 1] : "?";
			return usage("bad option or missing value: '%s'", bad);
		}
		const char *word;
		if (orbit__parse_long_whole(argv, optind, optarg, long_opts, li, &word) != 0)
			return usage("'%s' is not an option: long options are written whole", word);
		li = -1;
		int r = option(&o, c, optarg);
		if (r)
			return r < 0 ? 0 : r;
	}
	o.inputs = (const char *const *)argv + optind;
	o.ninputs = (size_t)(argc - optind);
	if (o.clickhouse || ch.create || ch.cluster) {
		if (o.clickhouse == NULL)
			return usage(
			    "%s", "--clickhouse-create and --clickhouse-cluster need --clickhouse");
		if (ch.cluster && !ch.create)
			return usage("%s", "--clickhouse-cluster goes with --clickhouse-create");
		if (o.json_path || o.csv_path || o.values_csv_path || o.chrome_path ||
		    o.perfetto_path || o.html_path || o.log || o.pages_path || o.has_thread ||
		    o.name || o.from.set || o.to.set)
			return usage("%s", "--clickhouse loads whole captures: no other output "
			                   "and no filter with it");
		if (o.ninputs == 0 && !ch.create)
			return usage("%s", "no capture given");
		return orbit__replay_clickhouse(&o);
	}
	if (o.ninputs == 0 && o.pages_path == NULL)
		return usage("%s", "no capture given");
	if (o.follow && (o.ninputs != 1 || o.pages_path || o.log))
		return usage("%s", "--follow reads one capture, without --pages or --log");
	const char *outs[] = {o.json_path,   o.csv_path,      o.values_csv_path,
	                      o.chrome_path, o.perfetto_path, o.html_path};
	for (size_t i = 0; o.follow && i < sizeof outs / sizeof outs[0]; i++)
		if (outs[i] != NULL && strcmp(outs[i], "-") == 0)
			return usage(
			    "%s", "--follow draws its tables on stdout: its outputs go to files");
	if (o.follow) { /* Ctrl-C ends the read; the run then writes what it read */
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_interrupt;
		sa.sa_flags = SA_RESETHAND; /* a second Ctrl-C ends the program */
		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
		o.stop = &interrupted;
	}
	if (o.from.set && o.to.set && o.from.relative == o.to.relative && o.from.ns > o.to.ns)
		return usage("%s", "--from is after --to");
	return orbit__replay_run(&o);
}
