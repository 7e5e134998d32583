/*
 * replay_memory.c — orbit-replay's memory follows what is open, not the
 * size of the capture: a generated capture holding 2 GiB of records (16
 * threads, nested scopes, long names, values) is replayed by the real
 * binary with every export on, and its peak RSS (wait4) must stay under
 * 64 MiB. Skipped under the sanitizers, whose shadow memory says nothing
 * about ours.
 *
 *   replay_memory peak_rss ORBIT_REPLAY
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "harness.h"
#include "stream_writer.h"

#define THREADS 16u
#define RECORDS (2ull << 30) / ORBIT_RECORD_SIZE
#define BATCH 4096u
#define LIMIT_KIB (64 * 1024)

static struct orbit__sw *sw; /* frames of 1 MiB of content */
static int fd;
static uint8_t recs[THREADS][BATCH * ORBIT_RECORD_SIZE];
static uint32_t nrec[THREADS];
static uint64_t claims[THREADS], total;

static int write_frame(void *ctx, const struct orbit__sw_frame *f)
{
	(void)ctx;
	CHECK(write(fd, f->bytes, f->len) == (ssize_t)f->len);
	return 0;
}

static void flush(uint32_t t)
{
	CHECK(orbit__sw_records(sw, t, claims[t], recs[t], nrec[t]) == nrec[t]);
	claims[t] += nrec[t];
	nrec[t] = 0;
}

static void rec(uint32_t t, uint64_t time, uint8_t kind, uint64_t id, const char *name)
{
	size_t len = strlen(name), k = len < 32 ? len : 32;
	struct orbit_record r = {time, id, 100 + t, kind, 0, (uint16_t)len, {0}};
	memcpy(r.name, name, k);
	for (uint16_t part = 0;; part++) {
		orbit__record_encode(&r, recs[t] + (size_t)nrec[t] * ORBIT_RECORD_SIZE);
		total++;
		if (++nrec[t] == BATCH)
			flush(t);
		if (k >= len)
			break;
		size_t m = len - k < 32 ? len - k : 32;
		r = (struct orbit_record){
		    time, id, 100 + t, ORBIT_REC_NAME_CONT, 0, (uint16_t)(part + 1), {0}};
		memcpy(r.name, name + k, m);
		k += m;
	}
}

static void generate(const char *path)
{
	static const char *names[] = {"frame",
	                              "update",
	                              "physics step",
	                              "render pass",
	                              "a scope name long enough to need two continuation records",
	                              "audio",
	                              "net"};
	uint64_t start[THREADS] = {0}, time[THREADS], id[THREADS] = {0};
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	const struct orbit__sw_sink sink = {.frame = write_frame};
	sw = orbit__sw_new(1, 1u << 20, &sink);
	CHECK(fd >= 0 && sw != NULL);
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_VERSION;
	h.pid = 99;
	h.ring_count = THREADS;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = THREADS;
	h.ring_start = start;
	h.monotonic_ns = 1000;
	CHECK(orbit__sw_handshake(sw, &h, NULL, 0) == 0);
	for (uint32_t t = 0; t < THREADS; t++)
		time[t] = 1000 + t;
	uint64_t rng = 1;
	while (total < RECORDS) {
		for (uint32_t t = 0; t < THREADS; t++) {
			uint64_t d = 0, stack[4];
			for (uint32_t i = 0; i < 12; i++) { /* a frame: depth up to 4 */
				rng = rng * 6364136223846793005ull + 1442695040888963407ull;
				time[t] += 20 + (rng >> 58);
				if (d < 4 && (d == 0 || (rng >> 40) % 3)) {
					stack[d++] = ++id[t];
					rec(t, time[t], ORBIT_REC_SCOPE_START, id[t],
					    names[(rng >> 33) % 7]);
				} else if (d > 0) {
					rec(t, time[t], ORBIT_REC_SCOPE_STOP, stack[--d], "");
				}
			}
			rec(t, time[t], ORBIT_REC_INT64, rng >> 50, "queue");
			while (d > 0)
				rec(t, time[t] += 30, ORBIT_REC_SCOPE_STOP, stack[--d], "");
		}
	}
	for (uint32_t t = 0; t < THREADS; t++)
		if (nrec[t])
			flush(t);
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = THREADS;
	e.claimed_per_ring = claims;
	CHECK(orbit__sw_end(sw, &e) == 0);
	orbit__sw_free(sw);
	close(fd);
}

static const char *replay_exe;

static void case_peak_rss(void)
{
	char path[] = "/tmp/orbit-replay-memory-XXXXXX";
	CHECK(replay_exe != NULL);
	if (getenv("ORBIT_SANITIZED"))
		SKIP("peak RSS means nothing under the sanitizers");
	int tmp = mkstemp(path);
	CHECK(tmp >= 0);
	close(tmp);
	generate(path);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		execl(replay_exe, replay_exe, path, "--csv", "/dev/null", "--chrome", "/dev/null",
		      "--perfetto", "/dev/null", "--no-progress", (char *)NULL);
		_exit(127);
	}
	int st;
	struct rusage ru;
	CHECK(wait4(pid, &st, 0, &ru) == pid);
	unlink(path);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	printf("%llu records (%llu MiB of records) replayed in %ld MiB peak RSS\n",
	       (unsigned long long)total, (unsigned long long)(total * ORBIT_RECORD_SIZE >> 20),
	       ru.ru_maxrss / 1024);
	CHECK(ru.ru_maxrss < LIMIT_KIB);
}

static const struct test_case cases[] = {
    {"peak_rss", case_peak_rss},
};

TEST_MAIN_WITH(cases, .args = "ORBIT-REPLAY", .arg = &replay_exe)
