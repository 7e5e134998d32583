/*
 * replay_once.c — one read per capture (docs/format.md 4.13, docs/replay.md
 * "Reading a capture once"), counted by the replay core itself
 * (struct orbit_replay_reads: every byte any of its readers read from the
 * inputs). A capture of protocol version 3 is read exactly once, whatever
 * the outputs, and gives the same bytes in every output as the same capture
 * read the way a version-2 capture must be (options.up_front_off: its
 * kernel states, names and origin read before the run); a version-2
 * capture still gets those reads.
 *
 *   replay_once CASE SYNTH_DIR
 *   CASE: states   sched.orbit.zst with every file output: one read
 *         log      --log: one read and its end, first; the same lines
 *         window   relative --from/--to: the same
 *         old      sched2.orbit.zst (version 2): the reads it needs, and
 *                  names.orbit.zst's names from its tail for the CSV
 *         stated   a version-3 capture whose end states a wrong origin:
 *                  said, exit 2
 *         held     a version-3 stream with kernel pages and no marks: the
 *                  queue stays bounded, the run says so and ends well
 *         threads  every synthetic capture, and one damaged in two places,
 *                  read on a reader thread (replay_prefetch.h) and in-line
 *                  (options.inline_reads): the same bytes in every output,
 *                  the same problems, the same status
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "harness.h"
#include "record.h"
#include "replay.h"

static char dir[256];
static const char *synth_dir_arg; /* replay_synth's captures: SYNTH_DIR */

static void tmpdir(void)
{
	snprintf(dir, sizeof dir, "/tmp/replay_once.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
}

static uint64_t file_size(const char *path)
{
	struct stat st;
	CHECK(stat(path, &st) == 0);
	return (uint64_t)st.st_size;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	CHECK(b != NULL);
	for (size_t k; (k = fread(b + n, 1, cap - n, f)) > 0;) {
		n += k;
		if (n == cap)
			CHECK((b = realloc(b, cap *= 2)) != NULL);
	}
	fclose(f);
	*len = n;
	return b;
}

/* The page's nonce is fresh every time: the rest must be the same. */
static size_t drop_nonce(char *b, size_t n)
{
	static const char key[] = "nonce";
	size_t w = 0;
	for (size_t r = 0; r < n;) {
		if (n - r >= 5 && memcmp(b + r, key, 5) == 0) {
			memcpy(b + w, key, 5);
			w += 5;
			r += 5;
			while (r < n && (b[r] == '-' || b[r] == '=' || b[r] == '"'))
				b[w++] = b[r++];
			while (r < n &&
			       (b[r] == '+' || b[r] == '/' || (b[r] >= '0' && b[r] <= '9') ||
			        (b[r] >= 'a' && b[r] <= 'z') || (b[r] >= 'A' && b[r] <= 'Z')))
				r++;
			continue;
		}
		b[w++] = b[r++];
	}
	return w;
}

static void same_file(const char *a, const char *b)
{
	size_t na, nb;
	char *x = slurp(a, &na), *y = slurp(b, &nb);
	if (strstr(a, ".html") != NULL) {
		na = drop_nonce(x, na);
		nb = drop_nonce(y, nb);
	}
	if (na != nb || memcmp(x, y, na) != 0) {
		fprintf(stderr, "%s and %s differ (%zu and %zu bytes)\n", a, b, na, nb);
		exit(1);
	}
	CHECK(na > 0);
	free(x);
	free(y);
}

enum {
	CSV = 1,
	JSON = 2,
	CHROME = 4,
	PERFETTO = 8,
	HTML = 16,
	SUMMARY = 32,
	LOG = 64,
	WINDOW = 128
};

/* How a run reads (run's `how`). */
enum { UP_FRONT_OFF = 1, INLINE_READS = 2 };

/* One run on input with the outputs asked for, into dir/TAG.*; its status. */
static int run(const char *input, unsigned what, unsigned how, const char *tag,
               struct orbit_replay_reads *reads)
{
	static char csv[512], json[512], chrome[512], perf[512], html[512], out[512], err[512];
	const char *inputs[] = {input};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	snprintf(csv, sizeof csv, "%s/%s.csv", dir, tag);
	snprintf(json, sizeof json, "%s/%s.json", dir, tag);
	snprintf(chrome, sizeof chrome, "%s/%s.chrome.json", dir, tag);
	snprintf(perf, sizeof perf, "%s/%s.pftrace", dir, tag);
	snprintf(html, sizeof html, "%s/%s.html", dir, tag);
	snprintf(out, sizeof out, "%s/%s.out", dir, tag);
	snprintf(err, sizeof err, "%s/%s.err", dir, tag);
	FILE *fo = fopen(out, "w"), *fe = fopen(err, "w");
	CHECK(fo != NULL && fe != NULL);
	o.inputs = inputs;
	o.ninputs = 1;
	o.out = fo;
	o.err = fe;
	o.progress = 0;
	o.top = 0;
	o.quiet = !(what & (SUMMARY | LOG));
	o.log = (what & LOG) != 0;
	o.csv_path = what & CSV ? csv : NULL;
	o.json_path = what & JSON ? json : NULL;
	o.chrome_path = what & CHROME ? chrome : NULL;
	o.perfetto_path = what & PERFETTO ? perf : NULL;
	o.html_path = what & HTML ? html : NULL;
	if (what & WINDOW) {
		CHECK(orbit__replay_parse_bound("+2ms", &o.from) == 0);
		CHECK(orbit__replay_parse_bound("+40ms", &o.to) == 0);
	}
	o.up_front_off = (how & UP_FRONT_OFF) != 0;
	o.inline_reads = (how & INLINE_READS) != 0;
	o.reads = reads;
	int status = orbit__replay_run(&o);
	fclose(fo);
	fclose(fe);
	return status;
}

/* The two readings of input give the same bytes in every output. */
static void both(const char *input, unsigned what, struct orbit_replay_reads *once,
                 struct orbit_replay_reads *twice)
{
	static const struct {
		unsigned bit;
		const char *ext;
	} outs[] = {{CSV, "csv"},          {JSON, "json"}, {CHROME, "chrome.json"},
	            {PERFETTO, "pftrace"}, {HTML, "html"}, {SUMMARY | LOG, "out"}};
	char a[600], b[600];
	CHECK(run(input, what, 0, "once", once) == ORBIT_REPLAY_OK);
	CHECK(run(input, what, UP_FRONT_OFF, "twice", twice) == ORBIT_REPLAY_OK);
	for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
		if (!(what & outs[i].bit))
			continue;
		snprintf(a, sizeof a, "%s/once.%s", dir, outs[i].ext);
		snprintf(b, sizeof b, "%s/twice.%s", dir, outs[i].ext);
		same_file(a, b);
	}
	snprintf(a, sizeof a, "%s/once.err", dir);
	snprintf(b, sizeof b, "%s/twice.err", dir);
	CHECK(file_size(a) == 0 && file_size(b) == 0);
}

static void synth(char *path, size_t n, const char *synth_dir, const char *name)
{
	snprintf(path, n, "%s/%s.orbit.zst", synth_dir, name);
}

static void case_states(const char *synth_dir)
{
	char in[512];
	struct orbit_replay_reads once, twice;
	synth(in, sizeof in, synth_dir, "sched");
	uint64_t size = file_size(in);
	both(in, CSV | JSON | CHROME | PERFETTO | HTML | SUMMARY, &once, &twice);
	/* Read once: every byte of the file, once; nothing before, no tail. */
	CHECK_EQ_U64(once.bytes, size);
	CHECK_EQ_U64(once.before, 0);
	CHECK_EQ_U64(once.tails, 0);
	/* As version 2: its states read whole before, its names from its tail. */
	CHECK_EQ_U64(twice.before, 1);
	CHECK_EQ_U64(twice.tails, 1);
	CHECK_EQ_U64(twice.bytes, 3 * size); /* the tail is the whole small file */
	/* The scopes got their states: the CSV has splits. */
	size_t n;
	char csv[600];
	snprintf(csv, sizeof csv, "%s/once.csv", dir);
	char *b = slurp(csv, &n);
	CHECK(memmem(b, n, ",scope,,,,,,,", 13) != NULL);
	size_t split = 0;
	for (char *p = b; (p = memchr(p, '\n', (size_t)(b + n - p))) != NULL; p++)
		split += p > b && p[-2] != ',';
	printf("%zu CSV rows with a split; read %" PRIu64 " bytes once, %" PRIu64
	       " the other way\n",
	       split, once.bytes, twice.bytes);
	CHECK(split > 10);
	free(b);
}

static void case_log(const char *synth_dir)
{
	char in[512];
	struct orbit_replay_reads once, twice;
	synth(in, sizeof in, synth_dir, "sched");
	uint64_t size = file_size(in);
	both(in, LOG | CSV, &once, &twice);
	/* Its end first (the origin), then the capture. */
	CHECK_EQ_U64(once.tails, 1);
	CHECK_EQ_U64(once.before, 0);
	CHECK_EQ_U64(once.bytes, 2 * size);
	CHECK(twice.before >= 1);
}

static void case_window(const char *synth_dir)
{
	char in[512];
	struct orbit_replay_reads once, twice;
	synth(in, sizeof in, synth_dir, "sched");
	both(in, WINDOW | CSV | JSON | SUMMARY, &once, &twice);
	CHECK_EQ_U64(once.tails, 1);
	CHECK_EQ_U64(once.before, 0);
	CHECK(twice.before >= 1);
	size_t n;
	char csv[600];
	snprintf(csv, sizeof csv, "%s/once.csv", dir);
	free(slurp(csv, &n));
	CHECK(n > 200); /* the window holds scopes */
}

static void case_old(const char *synth_dir)
{
	char in[512];
	struct orbit_replay_reads once, twice;
	synth(in, sizeof in, synth_dir, "sched2");
	uint64_t size = file_size(in);
	both(in, SUMMARY, &once, &twice);
	/* Version 2: the states need a whole read before the run. */
	CHECK_EQ_U64(once.before, 1);
	CHECK_EQ_U64(once.bytes, 2 * size);
	CHECK_EQ_U64(twice.bytes, 2 * size);
	synth(in, sizeof in, synth_dir, "names");
	size = file_size(in);
	both(in, CSV, &once, &twice);
	CHECK_EQ_U64(once.tails, 1); /* the names from its end, for the rows */
	CHECK_EQ_U64(once.bytes, 2 * size);
}

/* ---- captures written here ---- */

static struct orbit_frame_writer fw;
static FILE *cap_out;

static void frame(void)
{
	CHECK(orbit__frame_finish(&fw) == 0);
	CHECK(fwrite(fw.out, 1, fw.out_len, cap_out) == fw.out_len);
}

static void add(Orbit__Packet *p)
{
	CHECK(orbit__frame_add(&fw, p) == 0);
}

static void handshake(Orbit__KernelSched *k)
{
	uint64_t start[1] = {0};
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_UP_FRONT;
	h.pid = 99;
	h.process_name = "once";
	h.host_name = "here";
	h.agent_version = "test";
	h.monotonic_ns = 1000000;
	h.ring_count = 1;
	h.slots_per_ring = 1024;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = 1;
	h.ring_start = start;
	h.kernel_sched = k;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_HANDSHAKE;
	p.handshake = &h;
	add(&p);
	frame();
}

/* n scopes of thread 5, from time t on, as batches of 256 records. */
static uint64_t scopes(uint64_t first_claim, uint64_t t, uint32_t n)
{
	static uint8_t recs[256 * ORBIT_RECORD_SIZE], enc[ORBIT_BATCH_COMPACT_BOUND(256)];
	uint32_t k = 0;
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record a = {t + 10 * i, i + 1, 5, ORBIT_REC_SCOPE_START, 0, 4, "step"};
		struct orbit_record b = {t + 10 * i + 5, i + 1, 5, ORBIT_REC_SCOPE_STOP, 0, 0, {0}};
		orbit__record_encode(&a, recs + (size_t)k++ * ORBIT_RECORD_SIZE);
		orbit__record_encode(&b, recs + (size_t)k++ * ORBIT_RECORD_SIZE);
		if (k == 256 || i + 1 == n) {
			Orbit__RingBatch rb = ORBIT__RING_BATCH__INIT;
			rb.first_claim = first_claim;
			rb.count = k;
			rb.encoding = ORBIT_BATCH_COMPACT;
			rb.records.data = enc;
			rb.records.len = orbit__batch_encode(recs, k, enc);
			Orbit__Packet p = ORBIT__PACKET__INIT;
			p.body_case = ORBIT__PACKET__BODY_RING_BATCH;
			p.ring_batch = &rb;
			add(&p);
			first_claim += k;
			k = 0;
			if (fw.len > (1u << 20))
				frame();
		}
	}
	return first_claim;
}

static void end(uint64_t claimed, uint64_t first_ns)
{
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = 1;
	e.claimed_per_ring = &claimed;
	e.first_ns = first_ns;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_END;
	p.end = &e;
	add(&p);
	frame();
}

static void open_capture(const char *path)
{
	cap_out = fopen(path, "wb");
	CHECK(cap_out != NULL && orbit__frame_writer_init(&fw, 1) == 0);
}

static void close_capture(void)
{
	orbit__frame_writer_free(&fw);
	CHECK(fclose(cap_out) == 0);
}

static void case_stated(void)
{
	char in[512], err[600];
	struct orbit_replay_reads reads;
	snprintf(in, sizeof in, "%s/stated.orbit.zst", dir);
	open_capture(in);
	handshake(NULL);
	uint64_t claimed = scopes(0, 2000000, 10);
	end(claimed, 1999000); /* a lie: the first start is at 2000000 */
	close_capture();
	CHECK(run(in, LOG, 0, "stated", &reads) == ORBIT_REPLAY_DAMAGED);
	snprintf(err, sizeof err, "%s/stated.err", dir);
	size_t n;
	char *b = slurp(err, &n);
	CHECK(memmem(b, n,
	             "its end of stream says its earliest event is at 1999000 ns, it is at "
	             "2000000 ns",
	             78) != NULL);
	free(b);
	CHECK_EQ_U64(reads.tails, 1);
	CHECK_EQ_U64(reads.before, 0);
}

/* A KernelSched the decoder takes: the stored formats of data/sched. */
static char *text(const char *name)
{
	char path[512];
	size_t n;
	snprintf(path, sizeof path, "%s/sched/%s", ORBIT_TEST_DATA, name);
	char *b = slurp(path, &n);
	CHECK((b = realloc(b, n + 1)) != NULL);
	b[n] = '\0';
	return b;
}

static void case_held(void)
{
	char in[512], err[600];
	struct orbit_replay_reads reads;
	Orbit__KernelEventFormat ev = ORBIT__KERNEL_EVENT_FORMAT__INIT, *pev = &ev;
	Orbit__KernelSched k = ORBIT__KERNEL_SCHED__INIT;
	ev.system = "sched";
	ev.format = text("sched.sched_switch.format");
	k.header_page = text("header_page");
	k.n_events = 1;
	k.events = &pev;
	k.cpu_count = 1;
	k.page_size = 4096;
	snprintf(in, sizeof in, "%s/held.orbit.zst", dir);
	open_capture(in);
	handshake(&k);
	/* 1 M records, 56 MiB decoded: more than the queue holds, and not a
	 * mark to release any of it. */
	uint64_t claimed = scopes(0, 2000000, 1u << 19);
	end(claimed, 2000000);
	close_capture();
	CHECK(run(in, CSV, 0, "held", &reads) == ORBIT_REPLAY_OK);
	CHECK_EQ_U64(reads.bytes, file_size(in));
	snprintf(err, sizeof err, "%s/held.err", dir);
	size_t n;
	char *b = slurp(err, &n);
	CHECK(memmem(b, n, "32 MiB read ahead without the kernel events", 43) != NULL);
	free(b);
	char csv[600];
	snprintf(csv, sizeof csv, "%s/held.csv", dir);
	b = slurp(csv, &n);
	size_t rows = 0;
	for (size_t i = 0; i < n; i++)
		rows += b[i] == '\n';
	CHECK_EQ_U64(rows, (1u << 19) + 1); /* every scope, and the header */
	free(b);
	free(ev.format);
	free(k.header_page);
}

static void case_states_(void)
{
	case_states(synth_dir_arg);
}
static void case_log_(void)
{
	case_log(synth_dir_arg);
}
static void case_window_(void)
{
	case_window(synth_dir_arg);
}
static void case_old_(void)
{
	case_old(synth_dir_arg);
}

/* input read on a thread and in-line: the same status, the same bytes in
 * every output and on stderr; the threaded run used its thread. */
static void threaded_and_inline(const char *input, unsigned what)
{
	static const char *const outs[] = {"csv",  "json", "chrome.json", "pftrace",
	                                   "html", "out",  "err"};
	static const unsigned bits[] = {CSV, JSON, CHROME, PERFETTO, HTML, SUMMARY | LOG, 0};
	struct orbit_replay_reads a, b;
	unsigned compared = 0;
	char x[600], y[600];
	int sa = run(input, what, 0, "thread", &a);
	int sb = run(input, what, INLINE_READS, "inline", &b);
	CHECK_EQ_U64((uint64_t)sa, (uint64_t)sb);
	CHECK_EQ_U64(a.threads, sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 1 : 0);
	CHECK_EQ_U64(b.threads, 0);
	CHECK_EQ_U64(a.bytes, b.bytes);
	for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
		snprintf(x, sizeof x, "%s/thread.%s", dir, outs[i]);
		snprintf(y, sizeof y, "%s/inline.%s", dir, outs[i]);
		if ((bits[i] != 0 && !(what & bits[i])) || (file_size(x) == 0 && file_size(y) == 0))
			continue; /* not asked, or empty in both (--log of no lines, no problem) */
		same_file(x, y);
		compared++;
	}
	CHECK(compared > 0);
}

static void case_threads(void)
{
	static const char *const names[] = {"sched", "sched2", "names", "streams", "ties",
	                                    "marks", "badeq",  "logs",  "loss",    "noend"};
	char in[512], bad[600];
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		synth(in, sizeof in, synth_dir_arg, names[i]);
		threaded_and_inline(in, CSV | JSON | CHROME | PERFETTO | HTML | SUMMARY);
		threaded_and_inline(in, LOG | WINDOW | CSV);
	}
	/* Damaged in two places: frames skipped, said in the same words at
	 * the same offsets. */
	synth(in, sizeof in, synth_dir_arg, "sched");
	size_t n;
	char *b = slurp(in, &n);
	CHECK(n > 3000);
	b[n / 3] ^= 0x5a;
	b[2 * n / 3] ^= 0x5a;
	snprintf(bad, sizeof bad, "%s/damaged.orbit.zst", dir);
	FILE *f = fopen(bad, "wb");
	CHECK(f != NULL && fwrite(b, 1, n, f) == n && fclose(f) == 0);
	free(b);
	threaded_and_inline(bad, CSV | JSON | SUMMARY);
	snprintf(in, sizeof in, "%s/thread.err", dir);
	CHECK(file_size(in) > 0);
}

static const struct test_case cases[] = {
    {"states", case_states_}, {"log", case_log_},  {"window", case_window_},  {"old", case_old_},
    {"stated", case_stated},  {"held", case_held}, {"threads", case_threads},
};

/* Each case in a directory of its own, removed when it passed. */
static void case_done(void)
{
	test_rm_tree(dir);
}

TEST_MAIN_WITH(cases, .args = "SYNTH_DIR", .arg = &synth_dir_arg, .begin = tmpdir, .end = case_done)
