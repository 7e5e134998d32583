/*
 * bench_dump.c — orbit-bench-dump: what orbit-dump costs per MiB of flight
 * ring, beside reading the same bytes with pread in the same run.
 * Prints medians; never passes or fails.
 *
 * Usage: orbit-bench-dump [runs] [sizes...]   (default 7 runs; 4M 16M 64M)
 *
 * For each ORBIT_FLIGHT size a child process traces with the flight ring
 * alone: scopes with a random value each (so frames do not compress to
 * nothing), orbit_flush() every 20000 scopes, until the flight ring has
 * overwritten its first frames (it is full), then a few thousand scopes no
 * frame holds, then SIGKILL to itself. Its segment stays in /dev/shm; the
 * parent then times, on that one dead segment (in the page cache: tmpfs):
 *
 *   pread flight    the flight area's bytes, 1 MiB pread at a time
 *   pread segment   every byte of the segment, the same way (what a dump
 *                   could read at most: header, state, scope rings, log
 *                   pages, flight ring)
 *   dump            orbit__dump_run, orbit-dump's whole reading, to
 *                   /dev/null: validation, the state area, every frame of
 *                   the flight ring copied and checked (zstd checksum and
 *                   packets), the scope rings read and their records
 *                   encoded, the log pages, the capture's own frames
 *                   compressed
 *   dump to file    the same, the capture written to a file in $TMPDIR
 *
 * "per MiB" divides by the MiB of frames the flight ring held (tail - head
 * of its metadata), the figure docs/performance.md quotes.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dump.h"
#include "flight.h"
#include "orbit.h"
#include "segment.h"

#define MAX_RUNS 31

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof v[0], cmp_u64);
	return v[n / 2];
}

static int find_segment(pid_t pid, char *path, size_t len)
{
	char pat[64];
	snprintf(pat, sizeof pat, "/dev/shm/orbit-%d-*", (int)pid);
	glob_t g;
	if (glob(pat, 0, NULL, &g) != 0 || g.gl_pathc != 1) {
		globfree(&g);
		return -1;
	}
	snprintf(path, len, "%s", g.gl_pathv[0]);
	globfree(&g);
	return 0;
}

/* The flight ring's newer complete metadata block of the segment at path. */
static int flight_meta(const char *path, struct orbit__flight_meta *m, uint64_t *flight_at)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct orbit__seg_header h;
	static struct orbit__flight_header fh;
	struct orbit__seg_layout l;
	int ok = pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h;
	struct stat st;
	ok = ok && fstat(fd, &st) == 0 &&
	     orbit__segment_validate(&h, (size_t)st.st_size, &l, NULL) == 0 && l.flight_size;
	ok = ok && pread(fd, &fh, sizeof fh, (off_t)l.flight_offset) == (ssize_t)sizeof fh;
	ok = ok && orbit__flight_validate(&fh, l.flight_size, NULL) == 0 &&
	     orbit__flight_meta_pick(&fh, l.ring_count, m, NULL) == 0;
	close(fd);
	*flight_at = ok ? l.flight_offset : 0;
	return ok ? 0 : -1;
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* The child: traces until its flight ring is full, then dies. */
static void child(const char *size)
{
	setenv("ORBIT_FLIGHT", size, 1);
	if (orbit_init() != 0)
		_exit(3);
	char path[300];
	if (find_segment(getpid(), path, sizeof path) != 0)
		_exit(4);
	for (uint64_t round = 0; round < 100000; round++) {
		for (int i = 0; i < 20000; i++) {
			ORBIT_SCOPE("bench");
			ORBIT_UINT64("value", rnd());
		}
		orbit_flush();
		struct orbit__flight_meta m;
		uint64_t at;
		if (flight_meta(path, &m, &at) == 0 && m.dropped_frames > 0)
			break;
	}
	for (int i = 0; i < 4000; i++) { /* in no frame: the rings give them */
		ORBIT_SCOPE("bench");
		ORBIT_UINT64("value", rnd());
	}
	raise(SIGKILL);
	_exit(5);
}

static uint64_t time_pread(const char *path, uint64_t off, uint64_t len, uint8_t *buf)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	uint64_t t0 = now_ns();
	for (uint64_t at = 0; at < len;) {
		size_t n = len - at < (1u << 20) ? (size_t)(len - at) : (1u << 20);
		ssize_t got = pread(fd, buf, n, (off_t)(off + at));
		if (got <= 0)
			break;
		at += (uint64_t)got;
	}
	uint64_t t = now_ns() - t0;
	close(fd);
	return t;
}

static uint64_t time_dump(const char *path, const char *out, struct orbit_dump *d, FILE *devnull)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	memset(d, 0, sizeof *d);
	d->name = path;
	d->fd = fd;
	d->err = devnull;
	uint64_t t0 = now_ns();
	int status = orbit__dump_run(d, out);
	uint64_t t = now_ns() - t0;
	close(fd);
	if (status != ORBIT_DUMP_OK)
		fprintf(stderr, "orbit-bench-dump: the dump exited %d\n", status);
	return t;
}

int main(int argc, char **argv)
{
	int runs = argc > 1 ? atoi(argv[1]) : 7;
	if (runs < 1 || runs > MAX_RUNS)
		runs = 7;
	static const char *defaults[] = {"4M", "16M", "64M"};
	const char **sizes = argc > 2 ? (const char **)argv + 2 : defaults;
	int nsizes = argc > 2 ? argc - 2 : 3;
	uint8_t *buf = malloc(1u << 20);
	FILE *devnull = fopen("/dev/null", "w");
	static struct orbit_dump d;
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char file[512];
	snprintf(file, sizeof file, "%s/orbit-bench-dump-%d.orbit.zst", tmp, (int)getpid());
	if (buf == NULL || devnull == NULL)
		return 1;
	printf("orbit-bench-dump: medians of %d runs on one dead segment per size (tmpfs)\n\n",
	       runs);
	printf("%-7s %10s %7s %9s | %11s %12s | %9s %9s %9s | %10s %8s\n", "flight", "frames MiB",
	       "frames", "records", "pread fl ms", "pread seg ms", "dump ms", "ms/MiB", "MiB/s",
	       "to file ms", "dump/pr");
	for (int s = 0; s < nsizes; s++) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			child(sizes[s]);
		int st;
		waitpid(pid, &st, 0);
		char path[300];
		if (!WIFSIGNALED(st) || WTERMSIG(st) != SIGKILL ||
		    find_segment(pid, path, sizeof path) != 0) {
			fprintf(stderr,
			        "orbit-bench-dump: the child for %s did not leave a segment\n",
			        sizes[s]);
			continue;
		}
		struct orbit__flight_meta m;
		uint64_t flight_at;
		struct stat sst;
		if (flight_meta(path, &m, &flight_at) != 0 || stat(path, &sst) != 0) {
			unlink(path);
			continue;
		}
		uint64_t held = m.tail - m.head, seg = (uint64_t)sst.st_size;
		uint64_t flight_size = seg - flight_at;
		uint64_t pf[MAX_RUNS], ps[MAX_RUNS], dn[MAX_RUNS], df[MAX_RUNS];
		for (int r = 0; r < runs; r++) {
			pf[r] = time_pread(path, flight_at, flight_size, buf);
			ps[r] = time_pread(path, 0, seg, buf);
			dn[r] = time_dump(path, "/dev/null", &d, devnull);
			df[r] = time_dump(path, file, &d, devnull);
			unlink(file);
		}
		uint64_t records = d.ring_records;
		uint64_t frames = d.kept_frames;
		double mib = (double)held / (1 << 20);
		double mpf = median(pf, runs) / 1e6, mps = median(ps, runs) / 1e6;
		double mdn = median(dn, runs) / 1e6, mdf = median(df, runs) / 1e6;
		printf(
		    "%-7s %9.1f %7llu %9llu | %11.2f %11.2f | %9.1f %9.2f %9.0f | %9.1f %7.0fx\n",
		    sizes[s], mib, (unsigned long long)frames, (unsigned long long)records, mpf,
		    mps, mdn, mdn / mib, mib / (mdn / 1e3), mdf, mdn / mpf);
		unlink(path);
	}
	printf("\nframes MiB: the flight ring's entries (tail - head); records: taken from "
	       "the scope rings\npread fl / seg: the flight area / the whole segment, 1 MiB "
	       "preads; dump/pr: dump / pread fl\n");
	free(buf);
	return 0;
}
