/* collector_options.c — orbit-collector's command line. */
#include "collector.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live.h"
#include "parse.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "unknown"
#endif

static const char usage[] =
    "usage: orbit-collector [--listen HOST:PORT] [--dir DIR] [--token-file FILE]\n"
    "                       [--max-connections N] [--max-pending N]\n"
    "                       [--max-capture-size SIZE] [--max-dir-size SIZE|auto]\n"
    "                       [--ui HOST:PORT|off] [--ui-history SECONDS]\n"
    "                       [--quiet] [--help]\n"
    "       orbit-collector --ingest [--dir DIR] SPOOL...\n"
    "\n"
    "Receives Orbit agents' streams over TCP and writes one capture file per\n"
    "connection: DIR/<process>-<pid>-<UTC time>.orbit.zst (a plain zstd stream).\n"
    "\n"
    "With --ingest it takes agents' spool files (what an agent kept when no\n"
    "collector acknowledged it: docs/operations.md, ORBIT_SPOOL) into DIR, as\n"
    "if they had arrived over TCP, then exits: a spool that continues a capture\n"
    "in DIR is appended to it, each frame once; taking a file in twice adds\n"
    "nothing. Exit 0 when every file was taken in.\n"
    "\n"
    "  --listen HOST:PORT     address to listen on (default 127.0.0.1:7411);\n"
    "                         IPv6 as [::1]:7411; port 0 picks a free port.\n"
    "                         The first line on stdout is 'listening on HOST:PORT'.\n"
    "  --dir DIR              where capture files go (default .; created if missing)\n"
    "  --token-file FILE      accept only agents whose handshake carries this token\n"
    "                         (the file's bytes, one trailing newline stripped)\n"
    "  --max-connections N    streams (accepted handshakes) served at once\n"
    "                         (default 256); a handshake beyond is closed\n"
    "  --max-pending N        connections without an accepted handshake held at\n"
    "                         once (default 256); a new one beyond takes the\n"
    "                         place of the oldest of the busiest peer address\n"
    "  --max-capture-size SIZE  cut a stream before its file would pass SIZE\n"
    "                         (default 4G; 0: no limit; at least 128K)\n"
    "  --max-dir-size SIZE    cut streams and refuse new ones before the captures\n"
    "                         in DIR would pass SIZE (default auto: those there\n"
    "                         at start plus half the free space; 0: no limit)\n"
    "                         SIZE: a number, optionally K, M, G or T (2^10 ...)\n"
    "  --handshake-timeout-ms N  a new connection must complete its handshake\n"
    "                         within N ms (default 3000; 0: no limit)\n"
    "  --frame-timeout-ms N   a frame whose first bytes arrived must be complete\n"
    "                         within N ms (default 30000; 0: no limit)\n"
    "  --idle-timeout-ms N    close a connection that sent nothing for N ms\n"
    "                         (default 300000; 0: no limit)\n"
    "  --ui HOST:PORT|off     the live view, a web page of every stream while it\n"
    "                         is received (default 127.0.0.1:7412; port 0 picks a\n"
    "                         free port); the second line on stdout is\n"
    "                         'live view: http://HOST:PORT/'. Off loopback only\n"
    "                         with --token-file, whose token every request needs\n"
    "                         (open /login?token=TOKEN once). With the default\n"
    "                         and its port taken, one line, and no live view\n"
    "  --ui-history SECONDS   what the live view keeps of each stream to scroll\n"
    "                         back over (default 60; 1 to 3600); older is in the\n"
    "                         capture file\n"
    "  -q, --quiet            no info lines and no status line; errors still shown\n"
    "  -h, --help             this text\n"
    "      --version          the version\n"
    "\n"
    "SIGINT or SIGTERM: stop accepting, write the frames already received whole,\n"
    "fsync and close every file, exit 0. See docs/collector.md.\n";

static int bad(const char *opt, const char *value, const char *what)
{
	if (value != NULL)
		fprintf(stderr, "orbit-collector: %s '%s': %s (see --help)\n", opt, value, what);
	else
		fprintf(stderr, "orbit-collector: %s: %s (see --help)\n", opt, what);
	return -1;
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;

	if (s[0] < '0' || s[0] > '9')
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

/* HOST:PORT or [IPV6]:PORT, port 0 allowed: the one rule, shared with the
 * agent's ORBIT_COLLECTOR (format/parse.h). */
int orbit__collector_split_listen(const char *s, char *host, size_t hostlen, char *port,
                                  size_t portlen, const char **why)
{
	uint16_t p;

	if (orbit__parse_host_port(s, 1, host, hostlen, &p, why) != 0)
		return -EINVAL;
	if ((size_t)snprintf(port, portlen, "%u", (unsigned)p) >= portlen) {
		*why = "too long";
		return -EINVAL;
	}
	return 0;
}

/* "--name value" or "--name=value": the value, or NULL after an error line. */
static const char *value_of(int argc, char **argv, int *i, const char *name)
{
	const char *arg = argv[*i];
	size_t n = strlen(name);

	if (arg[n] == '=')
		return arg + n + 1;
	if (*i + 1 >= argc) {
		bad(name, NULL, "needs a value");
		return NULL;
	}
	return argv[++*i];
}

static int is_opt(const char *arg, const char *name)
{
	size_t n = strlen(name);

	return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

static int parse_timeout(const char *name, const char *v, uint64_t *out)
{
	if (parse_u64(v, 24ull * 3600 * 1000, out) != 0)
		return bad(name, v, "expected milliseconds from 0 to 86400000");
	return 0;
}

static int parse_one(int argc, char **argv, int *i, struct orbit_collector_options *o)
{
	const char *arg = argv[*i], *v;
	static const char *const valued[] = {"--listen",
	                                     "--dir",
	                                     "--token-file",
	                                     "--max-connections",
	                                     "--handshake-timeout-ms",
	                                     "--frame-timeout-ms",
	                                     "--idle-timeout-ms",
	                                     "--max-pending",
	                                     "--max-capture-size",
	                                     "--max-dir-size",
	                                     "--ui",
	                                     "--ui-history"};

	for (size_t n = 0; n < sizeof valued / sizeof valued[0]; n++) {
		const char *name = valued[n];

		if (!is_opt(arg, name))
			continue;
		if ((v = value_of(argc, argv, i, name)) == NULL)
			return -1;
		if (n == 0) {
			char host[256], port[8];
			const char *why;
			if (orbit__collector_split_listen(v, host, sizeof host, port, sizeof port,
			                                  &why) != 0)
				return bad(name, v, why);
			o->listen = v;
		} else if (n == 1) {
			if (v[0] == '\0')
				return bad(name, v, "empty directory name");
			o->dir = v;
		} else if (n == 2) {
			o->token_file = v;
		} else if (n == 3 || n == 7) {
			uint64_t m;
			if (parse_u64(v, 1000000, &m) != 0 || m == 0)
				return bad(name, v, "expected a number from 1 to 1000000");
			*(n == 3 ? &o->max_connections : &o->max_pending) = (unsigned)m;
		} else if (n == 8) {
			if (orbit__parse_size(v, &o->max_capture_size) != 0 ||
			    (o->max_capture_size != 0 &&
			     o->max_capture_size < ORBIT_COLLECTOR_CAPTURE_MIN))
				return bad(name, v, "expected 0 or a size of at least 128K");
		} else if (n == 10) {
			if (strcmp(v, "off") == 0) {
				o->ui = NULL;
			} else {
				char host[256], port[8];
				const char *why;
				if (orbit__collector_split_listen(v, host, sizeof host, port,
				                                  sizeof port, &why) != 0)
					return bad(name, v, why);
				o->ui = v;
			}
			o->ui_default = 0;
		} else if (n == 11) {
			uint64_t secs;
			if (parse_u64(v, 3600, &secs) != 0 || secs == 0)
				return bad(name, v, "expected seconds from 1 to 3600");
			o->ui_history_ns = secs * 1000000000ull;
		} else if (n == 9) {
			o->dir_size_auto = strcmp(v, "auto") == 0;
			if (!o->dir_size_auto && orbit__parse_size(v, &o->max_dir_size) != 0)
				return bad(name, v, "expected a size (0: no limit) or auto");
		} else {
			uint64_t *t = n == 4   ? &o->handshake_timeout_ms
			              : n == 5 ? &o->frame_timeout_ms
			                       : &o->idle_timeout_ms;
			return parse_timeout(name, v, t);
		}
		return 0;
	}
	if (strcmp(arg, "--quiet") == 0 || strcmp(arg, "-q") == 0) {
		o->quiet = 1;
		return 0;
	}
	if (strcmp(arg, "--ingest") == 0) {
		o->ingest = 1;
		return 0;
	}
	if (arg[0] != '-' && o->files != NULL) { /* a file for --ingest */
		o->files[o->nfiles++] = argv[*i];
		return 0;
	}
	if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
		fputs(usage, stdout);
		return 1;
	}
	if (strcmp(arg, "--version") == 0) {
		printf("orbit-collector %s\n", ORBIT_VERSION);
		return 1;
	}
	if (arg[0] == '-')
		return bad(arg, NULL, "unknown option");
	return bad(arg, NULL, "unexpected argument");
}

int orbit__collector_parse_args(int argc, char **argv, struct orbit_collector_options *o)
{
	memset(o, 0, sizeof *o);
	o->listen = "127.0.0.1:7411";
	o->dir = ".";
	o->max_connections = 256;
	o->max_pending = 256;
	o->max_capture_size = 4ull << 30;
	o->dir_size_auto = 1;
	o->handshake_timeout_ms = 3000;
	o->frame_timeout_ms = 30000;
	o->idle_timeout_ms = 300000;
	o->ui = ORBIT_LIVE_DEFAULT;
	o->ui_default = 1;
	o->ui_history_ns = ORBIT_LIVE_HISTORY_NS;
	/* Files are taken only with --ingest, wherever it stands. */
	for (int i = 1; i < argc && o->files == NULL; i++)
		if (strcmp(argv[i], "--ingest") == 0 &&
		    (o->files = calloc((size_t)argc, sizeof *o->files)) == NULL) {
			fprintf(stderr, "orbit-collector: no memory\n");
			return -1;
		}
	for (int i = 1; i < argc; i++) {
		int r = parse_one(argc, argv, &i, o);
		if (r != 0)
			return r;
	}
	if (o->ingest && o->nfiles == 0) {
		fprintf(stderr, "orbit-collector: --ingest needs the spool files to take in; see "
		                "--help\n");
		return -1;
	}
	return 0;
}
