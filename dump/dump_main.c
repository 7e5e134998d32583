/*
 * dump_main.c — orbit-dump's command line (dump.h).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "dump_find.h"
#include "parse.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "unknown"
#endif

static const char usage_text[] =
    "usage: orbit-dump [-o FILE] PID|SEGMENT\n"
    "       orbit-dump --list\n"
    "       orbit-dump --remove PID|SEGMENT\n"
    "       orbit-dump --complete CAPTURE PID|SEGMENT\n"
    "\n"
    "Reads the shared-memory segment of a traced process, dead or alive, and\n"
    "writes a capture that orbit-replay reads: the frames its flight ring kept\n"
    "(ORBIT_FLIGHT), then what its scope rings and log page rings still hold\n"
    "that no frame did, its threads' names, and how it ended: a snapshot of a\n"
    "live process (it is not stopped, nor slowed), or a process that is gone.\n"
    "Times are converted with the calibration the agent left in the segment;\n"
    "claimed == delivered + lost can be checked as for any capture.\n"
    "\n"
    "  PID              the process's segment in /dev/shm (a live process's,\n"
    "                   else the newest one named for that pid)\n"
    "  SEGMENT          a segment's name in /dev/shm, or a path to one (a copy)\n"
    "  -o, --output FILE\n"
    "                   the capture ('-': stdout); default\n"
    "                   orbit-dump-PID-UTCTIME.orbit.zst here\n"
    "  --list           the segments in /dev/shm: pid, command, alive or dead,\n"
    "                   size, flight ring, age\n"
    "  --remove         removes a segment whose process is proven dead (its\n"
    "                   lock is free and /proc says it is gone), and the\n"
    "                   tracefs instance it left recording, if any\n"
    "  --complete CAPTURE\n"
    "                   completes CAPTURE, the cut capture file of that\n"
    "                   segment's own stream (its image exec'd into a program\n"
    "                   that is not traced, or its agent was killed): what the\n"
    "                   rings hold past its frames, the loss and the end are\n"
    "                   appended to it; its lock must be free\n"
    "  -h, --help       this text\n"
    "  --version\n"
    "\n"
    "Only a segment's owner, or root, reads it. Exit status: 0 a complete dump;\n"
    "1 usage, no such segment, or not the caller's; 2 the segment is damaged (one\n"
    "line says where; the capture holds what could be read); 3 the capture\n"
    "could not be written.\n";

/* A usage error: one line, and where the help is. */
static int usage(const char *fmt, const char *arg)
{
	fputs("orbit-dump: ", stderr);
	fprintf(stderr, fmt, arg);
	fputs("; see orbit-dump --help\n", stderr);
	return ORBIT_DUMP_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"list", no_argument, NULL, 'l'},
	    {"remove", no_argument, NULL, 'r'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"complete", required_argument, NULL, 'c'},
	    {NULL, 0, NULL, 0},
	};
	const char *out = NULL, *complete = NULL;
	int list = 0, rm = 0, c, li = -1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:h", opts, &li)) != -1) {
		const char *word;
		if (orbit__parse_long_whole(argv, optind, optarg, opts, li, &word) != 0)
			return usage("'%s' is not an option: long options are written whole", word);
		li = -1;
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'l':
			list = 1;
			break;
		case 'r':
			rm = 1;
			break;
		case 'c':
			complete = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case 'V':
			printf("orbit-dump %s\n", ORBIT_VERSION);
			return 0;
		default:
			return usage("bad option or missing value: '%s'",
			             optind > 1 ? argv[optind - 1] : "?");
		}
	}
	int left = argc - optind;
	if (list) {
		if (left != 0 || rm || out || complete)
			return usage("%s", "--list takes no other option and no segment");
		return orbit__dump_list(stdout, stderr);
	}
	if (left != 1)
		return usage("%s",
		             left == 0 ? "no PID or SEGMENT given" : "one PID or SEGMENT only");
	if ((rm && out) || (complete && (rm || out)))
		return usage("%s", rm ? "--remove writes no capture: no -o"
		                      : "--complete takes no -o or --remove");
	if (rm)
		return orbit__dump_remove(argv[optind], stdout, stderr);

	/* A reader that writes to a closed pipe says so in its one line. */
	signal(SIGPIPE, SIG_IGN);
	char path[300];
	if (orbit__dump_resolve(argv[optind], path, sizeof path, stderr) != 0)
		return ORBIT_DUMP_USAGE;
	int fd = orbit__dump_open(path, stderr);
	if (fd < 0)
		return ORBIT_DUMP_USAGE;
	static struct orbit_dump d; /* large: not on the stack */
	memset(&d, 0, sizeof d);
	d.name = path;
	d.fd = fd;
	d.err = stderr;
	d.life = ORBIT__SEG_UNKNOWN; /* until the segment's header is read */
	if (complete != NULL) {
		int cfd = orbit__dump_open_capture(complete, stderr);
		if (cfd < 0) {
			close(fd);
			return ORBIT_DUMP_USAGE;
		}
		int status = orbit__dump_complete(&d, cfd, complete);
		close(fd);
		if (status == ORBIT_DUMP_OK || status == ORBIT_DUMP_DAMAGED)
			printf("%s: %s: %llu frames of its own, then %llu records from the rings, "
			       "%llu log pages\n",
			       complete, d.completing ? "completed" : "left as it was",
			       (unsigned long long)d.capture_frames,
			       (unsigned long long)d.ring_records, (unsigned long long)d.log_pages);
		return status;
	}
	d.out_replace = out != NULL;
	char def[200];
	if (out == NULL) {
		struct orbit__seg_header h;
		uint32_t pid = 0;
		if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h)
			pid = h.pid;
		time_t now = time(NULL);
		struct tm tm;
		gmtime_r(&now, &tm);
		char stamp[32];
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		snprintf(def, sizeof def, "orbit-dump-%u-%s.orbit.zst", (unsigned)pid, stamp);
		out = def;
	}
	int status = orbit__dump_run(&d, out);
	close(fd);
	/* Only a capture that was written is described. */
	if ((status == ORBIT_DUMP_OK || status == ORBIT_DUMP_DAMAGED) && d.out.path != NULL) {
		if (strcmp(out, "-") != 0)
			printf("%s: %s; %llu frames from the flight ring, %llu records from the "
			       "rings, "
			       "%llu log pages\n",
			       out,
			       d.life == ORBIT__SEG_ALIVE ? "a snapshot of a live process"
			       : d.life == ORBIT__SEG_DEAD
			           ? "the process is gone"
			           : "whether the process lives is unknown (no /proc to say)",
			       (unsigned long long)d.kept_frames,
			       (unsigned long long)d.ring_records, (unsigned long long)d.log_pages);
	}
	return status;
}
