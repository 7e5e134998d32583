/*
 * stream_clock.c — a stream's EndOfStream carries the clock's trouble during
 * that stream (docs/format.md 4.8: untrusted_times, clock_resets), and
 * orbit-replay's summary says it. The stream writer (agent/src/stream.c)
 * runs on a real segment, drain, ledger and clock conversion; the clock gets
 * counter resets injected as calibration pairs (clock.h, guarantee 3), one
 * before the stream begins (not this stream's) and one during it, and
 * conversions outside the epoch (guarantee 4) on both sides too. The frames
 * go to a capture file through the agent's output (ORBIT_CAPTURE's), which
 * the test and orbit-replay then read.
 *
 *   stream_clock end_of_stream ORBIT-REPLAY DIR
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "config.h"
#include "frame.h"
#include "harness.h"
#include "orbit.pb-c.h"
#include "output.h"
#include "record.h"
#include "scope_ring.h"
#include "segment_create.h"
#include "stream.h"

#define STEP 100000000ull /* a pair every 100 ms */

static const char *replay_exe, *dir; /* where the capture goes */

static struct orbit__stream *stream;
static uint64_t end_untrusted = UINT64_MAX, end_resets = UINT64_MAX;

/* The capture's EndOfStream. */
static void read_end(const char *path)
{
	int err;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	CHECK(r != NULL);
	Orbit__Packet *pk;
	struct orbit_capture_problem problem;
	while ((err = orbit__capture_next(r, &pk, &problem)) == 1) {
		if (pk->body_case == ORBIT__PACKET__BODY_END) {
			end_untrusted = pk->end->untrusted_times;
			end_resets = pk->end->clock_resets;
		}
		orbit__packet__free_unpacked(pk, NULL);
	}
	CHECK(err == 0);
	orbit__capture_close(r);
}

static void can_drain(void *ctx)
{
	(void)ctx;
}

/* An epoch of pairs at 3 ticks per ns from ns on, counter at 3 * (ns - base):
 * returns the ns after the last pair. */
static uint64_t epoch(struct orbit__clock_conv *c, uint64_t ns, uint64_t base, int pairs,
                      int first_resets)
{
	for (int i = 0; i < pairs; i++, ns += STEP) {
		int r = orbit__clock_add_pair(c, (struct orbit__clock_pair){3 * (ns - base), ns});
		CHECK_EQ_U64(r, i == 0 && first_resets ? ORBIT__CLOCK_RESET : ORBIT__CLOCK_ADDED);
	}
	return ns;
}

/* The agent's pass, in short: times to ns, then the stream. */
static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	uint8_t copy[16 * ORBIT_RECORD_SIZE];
	CHECK(n <= 16);
	memcpy(copy, recs, (size_t)n * ORBIT_RECORD_SIZE);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t t;
		memcpy(&t, copy + (size_t)i * ORBIT_RECORD_SIZE, 8);
		t = orbit__clock_to_ns(ctx, t);
		memcpy(copy + (size_t)i * ORBIT_RECORD_SIZE, &t, 8);
	}
	orbit__stream_records(stream, ring, first, copy, n);
}

/* A conversion from before the current epoch: untrusted (and counted). */
static void untrusted_conversion(struct orbit__clock_conv *c, uint64_t ticks)
{
	struct orbit__clock_cursor cur;
	orbit__clock_cursor_init(&cur, c);
	orbit__clock_cursor_to_ns(&cur, ticks);
	CHECK(orbit__clock_cursor_untrusted(&cur));
}

static void case_end_of_stream(void)
{
	char path[4096], cmd[8300];
	snprintf(path, sizeof path, "%s/stream_clock.orbit.zst", dir);
	unlink(path);

	static struct orbit__config cfg;
	orbit__config_read(&cfg, NULL);
	cfg.collector_set = 0;
	cfg.flight = 0;
	cfg.sched = 0;
	cfg.capture_set = 1;
	cfg.capture_ok = 1;
	snprintf(cfg.capture, sizeof cfg.capture, "%s", path);
	struct orbit__seg_params p = {.ring_count = 1, .slots_per_ring = 16, .clock_source = 1};
	static struct orbit__segment seg;
	CHECK(orbit__segment_create(&p, &seg) == 0);
	orbit__segment_unlink(&seg);
	static struct orbit__drain d;
	orbit__drain_init(&d, &seg, 1);
	static struct orbit__clock_conv c;
	orbit__clock_init(&c, ORBIT__CLOCK_TSC);

	/* Before the stream: an epoch, a reset, an untrusted conversion. */
	uint64_t ns = epoch(&c, 5000000000ull, 0, 20, 0);
	ns = epoch(&c, ns, ns - 1000000, 20, 1); /* the counter restarted 1 ms ago */
	untrusted_conversion(&c, 3 * 4000000000ull);
	CHECK_EQ_U64(orbit__clock_resets(&c), 1);
	CHECK_EQ_U64(orbit__clock_untrusted(&c), 1);

	uv_loop_t loop;
	CHECK(uv_loop_init(&loop) == 0);
	struct orbit__output *output;
	CHECK(orbit__output_composite(&output, &loop, &cfg, &seg) == 0);
	static const struct orbit__stream_events ev = {.can_drain = can_drain};
	/* The file is ready at once: the stream begins, and is answered. */
	CHECK(orbit__stream_new(&stream, &cfg, &d, &c, NULL, output, &ev) == 0);
	CHECK(orbit__stream_ready(stream, 0));
	/* During it: one more reset, and two conversions of ticks from the
	 * epoch before it. */
	ns = epoch(&c, ns, ns - 2000000, 20, 1);
	untrusted_conversion(&c, 3 * 4000000000ull);
	untrusted_conversion(&c, 3 * 4000000001ull);
	/* One scope through the rings, so that replay has something to show
	 * beside it and the stream's equation holds. */
	CHECK(orbit__segment_ring_reserve(&seg, 0) == 0); /* as a thread's attach does */
	struct orbit__ring *ring = orbit__segment_ring(&seg, 0);
	struct orbit__thread t = {.ring = ring, .mask = 15, .tid = 4242};
	uint64_t base3 = ns - 20 * STEP - 2000000, claim;
	struct orbit__slot *slot = orbit__claim(&t, &claim);
	orbit__publish(slot, claim,
	               orbit__fill(slot, 3 * (ns - 3 * STEP - base3), ORBIT__SCOPE_START, 1, t.tid,
	                           "tick", 4));
	slot = orbit__claim(&t, &claim);
	orbit__publish(
	    slot, claim,
	    orbit__fill(slot, 3 * (ns - 2 * STEP - base3), ORBIT__SCOPE_STOP, 1, t.tid, "", 0));
	struct orbit__drain_result res;
	orbit__drain_all(&d, on_records, &c, &res);
	CHECK_EQ_U64(res.records, 2);
	orbit__stream_pass_done(stream, 1);
	orbit__stream_end(stream);
	orbit__stream_free(stream);
	output->ops->close(output);
	CHECK(uv_run(&loop, UV_RUN_DEFAULT) == 0);
	CHECK(uv_loop_close(&loop) == 0);
	read_end(path);

	printf("EndOfStream: untrusted_times %llu, clock_resets %llu\n",
	       (unsigned long long)end_untrusted, (unsigned long long)end_resets);
	CHECK_EQ_U64(end_resets, 1);    /* this stream's, not the one before */
	CHECK_EQ_U64(end_untrusted, 2); /* likewise */

	/* orbit-replay's summary says what the agent counted. */
	snprintf(cmd, sizeof cmd, "'%s' '%s'", replay_exe, path);
	FILE *out = popen(cmd, "r");
	CHECK(out != NULL);
	char line[1024];
	int seen = 0;
	while (fgets(line, sizeof line, out) != NULL) {
		fputs(line, stdout);
		if (strstr(line, "clock") &&
		    strstr(line, "(2 records, 1 counter resets, says the agent)"))
			seen = 1;
	}
	CHECK(pclose(out) == 0);
	CHECK(seen);
	orbit__segment_close(&seg);
}

static const struct test_case cases[] = {
    {"end_of_stream", case_end_of_stream},
};

static void take_args(int argc, char **argv)
{
	CHECK(argc == 2);
	replay_exe = argv[0];
	dir = argv[1];
}

TEST_MAIN_WITH(cases, .args = "ORBIT-REPLAY DIR", .take = take_args)
