/*
 * replay_synth.c — writes small captures with exactly known contents for
 * the orbit-replay tests: what real runs rarely make on demand (hostile
 * names, timestamp ties, log pages of several rings out of order, loss,
 * streams cut short). Streams are written with the format's stream writer
 * (format/stream_writer.h), as the agent does; log pages are built in the
 * ftrace page layout.
 *
 *   replay_synth SCENARIO OUT [DATA]
 *
 * Scenarios (each documented where it is built):
 *   names    hostile scope, span, value, thread and log names
 *   ties     nested scopes whose starts and ends share timestamps
 *   logs     log lines and a marker on two page rings, out of order
 *   loss     a ring gap with its Loss packet: the equation holds
 *   v1       a stream of protocol 1, its batches in encoding 1
 *   newer    a stream of the protocol after the newest this tree reads
 *   noend    a stream without EndOfStream
 *   badeq    an EndOfStream claiming more than was delivered or lost
 *   streams  two streams (two handshakes) in one file
 *   marks    what is uncertain, on every kind of event: untrusted times, a
 *            lost name continuation, a scope never stopped ended by its
 *            thread's end record
 *   sched    protocol version 3, the kernel's scheduling: the real pages of
 *            DATA (tests/data/sched) in passes, each after the scopes of its
 *            threads and before a KernelMark, names before records,
 *            EndOfStream.first_ns
 *   sched2   the same events as protocol version 2 writes them: names at
 *            the end, no marks, no first_ns
 *
 * Every scenario but sched is protocol version 2: what a reader does with
 * a capture that states nothing up front (docs/format.md 4.13).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "frame.h"
#include "ftrace_page.h"
#include "record.h"
#include "stream_writer.h"

#define PID 777u
#define T0 5000000000ull
#define PAGE 4096u

static struct orbit__sw *sw; /* frames end where a scenario says */
static FILE *out;
static uint64_t claims[ORBIT_MAX_RINGS];

static void must(int err, const char *what)
{
	if (err != 0) {
		fprintf(stderr, "replay_synth: %s failed\n", what);
		exit(1);
	}
}

static int write_frame(void *ctx, const struct orbit__sw_frame *f)
{
	(void)ctx;
	return fwrite(f->bytes, 1, f->len, out) == f->len ? 0 : -EIO;
}

static struct orbit__sw *writer_new(void)
{
	const struct orbit__sw_sink sink = {.frame = write_frame};
	return orbit__sw_new(3, ORBIT_SW_NO_CUT, &sink);
}

static void frame(void)
{
	must(orbit__sw_cut(sw), "write");
}

static uint32_t hs_version = 2;       /* the next handshake's protocol version */
static uint64_t hs_time = T0;         /* ... its monotonic_ns */
static Orbit__KernelSched *hs_kernel; /* ... its kernel_sched */

static void handshake(uint32_t pid, const char *process)
{
	uint64_t start[4] = {0, 0, 0, 0};
	char *cmd[] = {(char *)"synth", (char *)"--scenario"};
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = hs_version;
	h.pid = pid;
	h.process_name = (char *)process;
	h.host_name = (char *)"synth-host";
	h.n_command_line = 2;
	h.command_line = cmd;
	h.agent_version = (char *)"synth";
	h.clock = &clock;
	h.kernel_sched = hs_kernel;
	h.monotonic_ns = hs_time;
	h.realtime_ns = 1800000000000000000ull;
	h.ring_count = 4;
	h.slots_per_ring = 1024;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = 4;
	h.ring_start = start;
	h.page_ring_count = 2;
	h.page_size = PAGE;
	must(orbit__sw_handshake(sw, &h, NULL, 0), "write");
	memset(claims, 0, sizeof claims);
}

/* ---- records ---- */

static uint8_t recs[4][256 * ORBIT_RECORD_SIZE];
static uint32_t nrecs[4];

static uint8_t rec_flags; /* flags of the next head or stop record */

static void rec(uint32_t ring, uint64_t time, uint32_t tid, uint8_t kind, uint64_t id,
                const char *name, size_t len)
{
	struct orbit_record r = {time, id, tid, kind, rec_flags, (uint16_t)len, {0}};
	rec_flags = 0;
	size_t k = len < ORBIT_RECORD_NAME ? len : ORBIT_RECORD_NAME;
	memcpy(r.name, name, k);
	orbit__record_encode(&r, recs[ring] + (size_t)nrecs[ring]++ * ORBIT_RECORD_SIZE);
	for (uint16_t part = 1; k < len; part++) {
		struct orbit_record c = {time, id, tid, ORBIT_REC_NAME_CONT, 0, part, {0}};
		size_t m = len - k < ORBIT_RECORD_NAME ? len - k : ORBIT_RECORD_NAME;
		memcpy(c.name, name + k, m);
		orbit__record_encode(&c, recs[ring] + (size_t)nrecs[ring]++ * ORBIT_RECORD_SIZE);
		k += m;
	}
}

static void stop(uint32_t ring, uint64_t time, uint32_t tid, uint64_t id)
{
	rec(ring, time, tid, ORBIT_REC_SCOPE_STOP, id, "", 0);
}

/* Sends ring's pending records as one batch; skip claims first (a gap). */
static void batch(uint32_t ring, uint64_t skip)
{
	claims[ring] += skip;
	if (orbit__sw_records(sw, ring, claims[ring], recs[ring], nrecs[ring]) != nrecs[ring])
		must(-1, "a batch");
	claims[ring] += nrecs[ring];
	nrecs[ring] = 0;
}

/* Sends ring's pending records as one batch in encoding 1 (columns: time
 * and id deltas, then meta words, then name areas), as writers of
 * protocol 1 did. */
static void batch_columns(uint32_t ring)
{
	uint32_t n = nrecs[ring];
	uint8_t *col = calloc(n ? n : 1, ORBIT_RECORD_SIZE);
	must(col != NULL ? 0 : -1, "memory");
	uint64_t pt = 0, pi = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = recs[ring] + (size_t)i * ORBIT_RECORD_SIZE;
		uint64_t t = orbit__le64(r), id = orbit__le64(r + 8);
		orbit__put_le64(col + (size_t)i * 8, t - pt);
		orbit__put_le64(col + (size_t)n * 8 + (size_t)i * 8, id - pi);
		memcpy(col + (size_t)n * 16 + (size_t)i * 8, r + 16, 8);
		memcpy(col + (size_t)n * 24 + (size_t)i * ORBIT_RECORD_NAME, r + 24,
		       ORBIT_RECORD_NAME);
		pt = t;
		pi = id;
	}
	Orbit__RingBatch b = ORBIT__RING_BATCH__INIT;
	b.ring = ring;
	b.first_claim = claims[ring];
	b.count = n;
	b.encoding = ORBIT_BATCH_COLUMNS;
	b.records.data = col;
	b.records.len = (size_t)n * ORBIT_RECORD_SIZE;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	p.body_case = ORBIT__PACKET__BODY_RING_BATCH;
	p.ring_batch = &b;
	must(orbit__sw_packet(sw, &p), "a batch in encoding 1");
	claims[ring] += n;
	nrecs[ring] = 0;
	free(col);
}

static void thread_name(uint32_t tid, const char *name)
{
	must(orbit__sw_thread_name(sw, tid, name), "a thread name");
}

static void loss(uint32_t ring, uint64_t lapped)
{
	Orbit__Loss l = ORBIT__LOSS__INIT;
	l.ring = ring;
	l.lapped = lapped;
	must(orbit__sw_loss(sw, &l), "a loss");
}

static uint64_t end_untrusted, end_resets; /* EndOfStream 5 and 6 */
static uint64_t end_first;                 /* EndOfStream 12 */

static void end(uint64_t extra, const uint64_t *reserved, size_t nreserved)
{
	uint64_t claimed[4];
	for (int r = 0; r < 4; r++)
		claimed[r] = claims[r] + (r == 0 ? extra : 0);
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = 4;
	e.claimed_per_ring = claimed;
	e.n_reserved_per_page_ring = nreserved;
	e.reserved_per_page_ring = (uint64_t *)reserved;
	e.untrusted_times = end_untrusted;
	e.clock_resets = end_resets;
	e.first_ns = end_first;
	must(orbit__sw_end(sw, &e), "write");
}

/* ---- log pages: the ftrace layout, records of type_len 0 (length word) ---- */

struct page {
	uint8_t b[PAGE];
	uint32_t off;
	uint64_t last;
};

static void page_start(struct page *pg, uint64_t ts)
{
	memset(pg, 0, sizeof *pg);
	orbit__put_le64(pg->b, ts);
	pg->off = 16;
	pg->last = ts;
}

static void page_record(struct page *pg, uint64_t time, uint16_t type, uint32_t tid,
                        const void *data, size_t len)
{
	uint32_t payload = (uint32_t)(8 + len + 3) & ~3u;
	orbit__put_le32(pg->b + pg->off, (uint32_t)(time - pg->last) << 5); /* type_len 0 */
	orbit__put_le32(pg->b + pg->off + 4, payload + 4);
	uint8_t *d = pg->b + pg->off + 8;
	orbit__put_le16(d, type);
	orbit__put_le32(d + 4, tid);
	memcpy(d + 8, data, len);
	pg->off += 8 + payload;
	pg->last = time;
}

static void page_send(struct page *pg, uint32_t ring)
{
	orbit__put_le64(pg->b + 8, pg->off - 16);
	must(orbit__sw_log_page(sw, ring, pg->b, PAGE), "a page");
}

/* ---- scenarios ---- */

#define S(lit)                                                                                     \
	{                                                                                          \
		lit, sizeof(lit) - 1                                                               \
	}
#define REC_S(ring, t, tid, kind, id, lit) rec(ring, t, tid, kind, id, lit, sizeof(lit) - 1)

/* Names: one scope each on thread 11, depth 0, in this order. */
static const struct {
	const char *s;
	size_t n;
} hostile[] = {
    S("plain"),
    S("quote \" and backslash \\"),
    S("comma, and \"quoted\", field"),
    S("newline\nand\ttab\rand cr"),
    S("control \x01\x02\x1f\x7f bytes"),
    S("nul\0inside"),
    S("invalid \xff\xfe utf-8"),
    S("overlong \xc0\xaf and surrogate \xed\xa0\x80"),
    S("truncated \xe2\x82"),
    S("utf-8 \xc3\xa9 \xe6\xbc\xa2 \xf0\x9f\x9a\x80"),
    S("a name longer than one record can hold, with continuations after the head"),
    S(""),
    S("</script><script>alert(1)</script>"),
};

static void scenario_names(void)
{
	handshake(PID, "names \"synth\"\n");
	uint64_t t = T0 + 1000;
	REC_S(0, t, 11, ORBIT_REC_THREAD_NAME, 0, "thread \"\\\x01\xff");
	for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) {
		rec(0, t, 11, ORBIT_REC_SCOPE_START, i + 1, hostile[i].s, hostile[i].n);
		stop(0, t + 100, 11, i + 1);
		t += 1000;
	}
	REC_S(0, t, 11, ORBIT_REC_ASYNC_START, 0xabc, "span \"\\\n\xff");
	REC_S(0, t + 10, 11, ORBIT_REC_INT64, (uint64_t)-5, "value \"\\\x02\xfe");
	rec(0, t + 20, 11, ORBIT_REC_ASYNC_STOP, 0xabc, "", 0);
	batch(0, 0);
	struct page pg;
	page_start(&pg, t);
	static const char line[] = "log \"\\\x03\xff line";
	page_record(&pg, t + 30, 1, 11, line, sizeof line - 1);
	page_send(&pg, 0);
	thread_name(12, "os-named \"thread\"");
	uint64_t reserved[1] = {1};
	end(0, reserved, 1);
}

/*
 * Ties, thread 21 (times relative to T0):
 *   A [100, 200] depth 0
 *     B [100, 150] depth 1        starts with its parent
 *       C [100, 100] depth 2      zero length, at the same time
 *     D [150, 200] depth 1        starts as B ends, ends with A
 *   E [200, 200] depth 0          zero length, as A ends
 *   F [300, 400] depth 0
 *     G [300, 300], H [300, 300]  two zero-length children at F's start
 *     I [350, 400] depth 1
 */
static void scenario_ties(void)
{
	handshake(PID, "ties");
	uint64_t b = T0;
	rec(0, b + 100, 21, ORBIT_REC_SCOPE_START, 1, "A", 1);
	rec(0, b + 100, 21, ORBIT_REC_SCOPE_START, 2, "B", 1);
	rec(0, b + 100, 21, ORBIT_REC_SCOPE_START, 3, "C", 1);
	stop(0, b + 100, 21, 3);
	stop(0, b + 150, 21, 2);
	rec(0, b + 150, 21, ORBIT_REC_SCOPE_START, 4, "D", 1);
	stop(0, b + 200, 21, 4);
	stop(0, b + 200, 21, 1);
	rec(0, b + 200, 21, ORBIT_REC_SCOPE_START, 5, "E", 1);
	stop(0, b + 200, 21, 5);
	rec(0, b + 300, 21, ORBIT_REC_SCOPE_START, 6, "F", 1);
	rec(0, b + 300, 21, ORBIT_REC_SCOPE_START, 7, "G", 1);
	stop(0, b + 300, 21, 7);
	rec(0, b + 300, 21, ORBIT_REC_SCOPE_START, 8, "H", 1);
	stop(0, b + 300, 21, 8);
	rec(0, b + 350, 21, ORBIT_REC_SCOPE_START, 9, "I", 1);
	stop(0, b + 400, 21, 9);
	stop(0, b + 400, 21, 6);
	batch(0, 0);
	end(0, NULL, 0);
}

/* Logs: ring 1's page (lines at +20, +40) comes before ring 0's (+10,
 * +30, marker at +50); --log must print them in time order. */
static void scenario_logs(void)
{
	handshake(PID, "logs");
	rec(0, T0, 31, ORBIT_REC_THREAD_NAME, 0, "logger one", 10);
	rec(0, T0, 32, ORBIT_REC_THREAD_NAME, 0, "logger two", 10);
	batch(0, 0);
	struct page p1, p0;
	page_start(&p1, T0 + 20);
	page_record(&p1, T0 + 20, 1, 32, "second line", 11);
	page_record(&p1, T0 + 40, 1, 32, "fourth line\0\0", 13);
	page_send(&p1, 1);
	page_start(&p0, T0 + 10);
	page_record(&p0, T0 + 10, 1, 31, "first line", 10);
	page_record(&p0, T0 + 30, 1, 31, "third line", 10);
	page_record(&p0, T0 + 50, 2, 31, "\x01\x02\x03\x04", 4);
	page_send(&p0, 0);
	uint64_t reserved[2] = {3, 2};
	end(0, reserved, 2);
}

/* Loss: thread 41 on ring 0 opens X, the claims holding X's stop and Y's
 * start are lapped (a gap of 2 claims), then Z comes whole. X ends
 * unfinished; Z is at depth 0, not under X. */
static void scenario_loss(void)
{
	handshake(PID, "loss");
	rec(0, T0 + 100, 41, ORBIT_REC_SCOPE_START, 1, "X", 1);
	batch(0, 0);
	rec(0, T0 + 400, 41, ORBIT_REC_SCOPE_START, 3, "Z", 1);
	stop(0, T0 + 500, 41, 3);
	batch(0, 2);
	loss(0, 2);
	end(0, NULL, 0);
}

static void scenario_noend(void)
{
	handshake(PID, "noend");
	rec(0, T0 + 100, 51, ORBIT_REC_SCOPE_START, 1, "done", 4);
	stop(0, T0 + 200, 51, 1);
	rec(0, T0 + 300, 51, ORBIT_REC_SCOPE_START, 2, "open", 4);
	batch(0, 0);
	frame();
}

/* A stream of protocol 1, its batches in encoding 1: what the first
 * release's agents sent. */
static void scenario_v1(void)
{
	hs_version = 1;
	handshake(PID, "v1");
	for (uint64_t k = 0; k < 10; k++) {
		rec(0, T0 + 1000 * k, 81, ORBIT_REC_SCOPE_START, 2 * k + 1, "outer", 5);
		rec(0, T0 + 1000 * k + 100, 81, ORBIT_REC_SCOPE_START, 2 * k + 2, "inner", 5);
		stop(0, T0 + 1000 * k + 400, 81, 2 * k + 2);
		stop(0, T0 + 1000 * k + 900, 81, 2 * k + 1);
	}
	batch_columns(0);
	end(0, NULL, 0);
}

/* A stream of the protocol after the newest this tree reads. */
static void scenario_newer(void)
{
	hs_version = ORBIT_PROTOCOL_VERSION_MAX + 1;
	handshake(PID, "newer");
	rec(0, T0 + 100, 71, ORBIT_REC_SCOPE_START, 1, "next", 4);
	stop(0, T0 + 200, 71, 1);
	batch(0, 0);
	end(0, NULL, 0);
}

static void scenario_badeq(void)
{
	handshake(PID, "badeq");
	rec(0, T0 + 100, 61, ORBIT_REC_SCOPE_START, 1, "s", 1);
	stop(0, T0 + 200, 61, 1);
	batch(0, 0);
	end(5, NULL, 0);
}

static void scenario_streams(void)
{
	handshake(PID, "first");
	rec(0, T0 + 100, 71, ORBIT_REC_SCOPE_START, 1, "one", 3);
	stop(0, T0 + 200, 71, 1);
	batch(0, 0);
	end(0, NULL, 0);
	handshake(PID + 1, "second");
	rec(1, T0 + 300, 72, ORBIT_REC_SCOPE_START, 1, "two", 3);
	stop(1, T0 + 400, 72, 1);
	batch(1, 0);
	end(0, NULL, 0);
}

/* Marks: thread 81 writes a scope whose start's time the agent
 * did not trust, one whose stop's it did not, a scope never stopped around
 * a child and a scope whose name lost its continuation (40 bytes, 32
 * arrive), an async span stopped with an untrusted time, a value with one,
 * and its thread-end record, which ends the scope never stopped. The agent
 * says 4 untrusted times and 1 counter reset. */
static void scenario_marks(void)
{
	const uint8_t u = ORBIT_REC_FLAG_TIME_UNTRUSTED;
	handshake(PID, "marks");
	rec_flags = u;
	rec(0, T0 + 100, 81, ORBIT_REC_SCOPE_START, 1, "start untrusted", 15);
	stop(0, T0 + 200, 81, 1);
	rec(0, T0 + 300, 81, ORBIT_REC_SCOPE_START, 2, "stop untrusted", 14);
	rec_flags = u;
	stop(0, T0 + 400, 81, 2);
	rec(0, T0 + 500, 81, ORBIT_REC_SCOPE_START, 3, "never stopped", 13);
	rec(0, T0 + 600, 81, ORBIT_REC_SCOPE_START, 4, "child", 5);
	stop(0, T0 + 700, 81, 4);
	const char *cut = "a name of forty bytes, cut at 32, lost";
	struct orbit_record h = {T0 + 800, 5, 81, ORBIT_REC_SCOPE_START, 0, 40, {0}};
	memcpy(h.name, cut, 32); /* its continuation never comes */
	orbit__record_encode(&h, recs[0] + (size_t)nrecs[0]++ * ORBIT_RECORD_SIZE);
	stop(0, T0 + 900, 81, 5);
	rec(0, T0 + 1000, 81, ORBIT_REC_ASYNC_START, 0x99, "span", 4);
	rec_flags = u;
	rec(0, T0 + 1100, 81, ORBIT_REC_ASYNC_STOP, 0x99, "", 0);
	rec_flags = u;
	rec(0, T0 + 1200, 81, ORBIT_REC_INT64, 7, "value", 5);
	rec(0, T0 + 1300, 81, ORBIT_REC_THREAD_END, 0, "", 0);
	batch(0, 0);
	end_untrusted = 4;
	end_resets = 1;
	end(0, NULL, 0);
}

/* ---- the kernel's scheduling ---- */

static const char *data_dir;

static char *loaded[16]; /* freed at the end of the scenario */
static size_t nloaded;

static char *load(const char *name, size_t *len)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", data_dir, name);
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	size_t n = 0, cap = 0;
	if (f == NULL) {
		perror(path);
		exit(1);
	}
	for (;;) {
		if (n + 4096 + 1 > cap && (b = realloc(b, cap = cap * 2 + 8192)) == NULL)
			exit(1);
		size_t k = fread(b + n, 1, 4096, f);
		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	b[n] = '\0';
	*len = n;
	if (nloaded < sizeof loaded / sizeof loaded[0])
		loaded[nloaded++] = b;
	return b;
}

#define SCHED_PAGES 8
#define SCHED_TIDS 64
#define SCHED_RECS 4096

static struct {
	uint32_t cpu;
	uint8_t *page;
	uint64_t first, last; /* record times */
} kpages[SCHED_PAGES];
static size_t nkpages;

struct srec {
	uint64_t time;
	uint32_t tid;
	uint8_t kind;
	uint64_t id;
};
static struct srec srecs[SCHED_RECS];
static size_t nsrecs;
static uint32_t stids[SCHED_TIDS];
static size_t nstids;

static int by_time(const void *a, const void *b)
{
	const struct srec *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time;
}

static int by_first(const void *a, const void *b)
{
	uint64_t x = ((const __typeof__(kpages[0]) *)a)->first;
	uint64_t y = ((const __typeof__(kpages[0]) *)b)->first;
	return x < y ? -1 : x > y;
}

/* The stored pages of both CPUs, and scopes on the threads the kernel saw
 * run: between two events in a thread's context, one scope, sometimes
 * wrapping the next as well. */
static void sched_load(void)
{
	static const char *files[][2] = {{"0", "cpu0.pages"}, {"1", "cpu1.pages"}};
	uint64_t last[SCHED_TIDS] = {0}, ids[SCHED_TIDS] = {0};
	for (size_t f = 0; f < 2; f++) {
		size_t len;
		uint8_t *b = (uint8_t *)load(files[f][1], &len);
		for (size_t off = 0; off + PAGE <= len && nkpages < SCHED_PAGES; off += PAGE) {
			struct orbit__ftrace_iter it;
			struct orbit__ftrace_header h;
			struct orbit__ftrace_record r;
			kpages[nkpages].cpu = (uint32_t)atoi(files[f][0]);
			kpages[nkpages].page = b + off;
			kpages[nkpages].first = UINT64_MAX;
			if (orbit__ftrace_open(&it, b + off, PAGE, &h) != 0)
				continue;
			while (orbit__ftrace_next(&it, &r) == 1) {
				uint32_t tid = r.len >= 8 ? orbit__le32(r.data + 4) : 0;
				size_t k = 0;
				if (kpages[nkpages].first == UINT64_MAX)
					kpages[nkpages].first = r.time;
				kpages[nkpages].last = r.time;
				if (tid == 0 || tid > 0x7fffffff)
					continue;
				while (k < nstids && stids[k] != tid)
					k++;
				if (k == nstids && nstids < SCHED_TIDS)
					stids[nstids++] = tid;
				if (k == nstids || nsrecs + 2 > SCHED_RECS)
					continue;
				/* a scope from the thread's last event to this one */
				if (last[k] != 0 && r.time > last[k] + 4) {
					srecs[nsrecs++] = (struct srec){
					    last[k] + 1, tid, ORBIT_REC_SCOPE_START, ++ids[k]};
					srecs[nsrecs++] = (struct srec){
					    r.time - 1, tid, ORBIT_REC_SCOPE_STOP, ids[k]};
				}
				last[k] = r.time;
			}
			nkpages++;
		}
	}
	qsort(kpages, nkpages, sizeof kpages[0], by_first);
	qsort(srecs, nsrecs, sizeof srecs[0], by_time);
}

static const char *sched_format_files[] = {
    "sched.sched_switch.format",       "sched.sched_waking.format",
    "sched.sched_wakeup_new.format",   "sched.sched_process_fork.format",
    "sched.sched_process_exit.format", "task.task_rename.format"};

static void kernel_mark(uint64_t t)
{
	must(orbit__sw_kernel_mark(sw, t), "write");
}

static void kernel_page(uint32_t cpu, uint8_t *page)
{
	must(orbit__sw_kernel_page(sw, cpu, page, PAGE), "write");
}

static void thread_named(uint32_t tid)
{
	char name[32];
	snprintf(name, sizeof name, "t%u", tid);
	thread_name(tid, name);
}

/* The records of srecs[from, to) into ring 0's batches. */
static void sched_records(size_t from, size_t to)
{
	for (size_t i = from; i < to; i++) {
		if (srecs[i].kind == ORBIT_REC_SCOPE_START)
			rec(0, srecs[i].time, srecs[i].tid, ORBIT_REC_SCOPE_START, srecs[i].id,
			    i % 3 ? "work" : "wait", 4);
		else
			stop(0, srecs[i].time, srecs[i].tid, srecs[i].id);
		if (nrecs[0] == 256)
			batch(0, 0);
	}
	if (nrecs[0] > 0)
		batch(0, 0);
}

/*
 * The agent's order (docs/format.md 4.1): pass j holds the records up to
 * the last event of its kernel page, then the page; with marks (version 3),
 * a KernelMark after it saying every event before the next unsent page of
 * any CPU is in, and names before the records of a thread.
 */
static void scenario_sched_as(uint32_t version)
{
	size_t nfmt = sizeof sched_format_files / sizeof sched_format_files[0];
	Orbit__KernelEventFormat ev[6], *pev[6];
	Orbit__KernelSched k = ORBIT__KERNEL_SCHED__INIT;
	size_t len;
	int named[SCHED_TIDS] = {0};
	uint64_t first_log = 0;

	sched_load();
	for (size_t i = 0; i < nfmt; i++) {
		orbit__kernel_event_format__init(&ev[i]);
		ev[i].system = strncmp(sched_format_files[i], "task.", 5) == 0 ? "task" : "sched";
		ev[i].format = load(sched_format_files[i], &len);
		pev[i] = &ev[i];
	}
	k.header_page = load("header_page", &len);
	k.header_event = load("header_event", &len);
	k.n_events = nfmt;
	k.events = pev;
	k.cpu_count = 2;
	k.page_size = PAGE;
	k.trace_clock = "mono";
	k.buffer_kb = 16;
	k.instance = "orbit-synth";
	k.n_tids = nstids;
	k.tids = stids;
	k.recording_ns = kpages[0].first - 1000;
	k.monotonic_ns = kpages[0].first - 2000;
	k.boottime_ns = kpages[0].first + 7000000000ull;
	k.kernel_release = "6.18.0-synth";
	hs_version = version;
	hs_time = kpages[0].first - 2000;
	hs_kernel = &k;
	handshake(PID, version >= 3 ? "sched" : "sched2");
	size_t r = 0;
	uint64_t upto = 0;
	for (size_t j = 0; j < nkpages; j++) {
		upto = kpages[j].last > upto ? kpages[j].last : upto;
		size_t to = r;
		while (to < nsrecs && srecs[to].time <= upto)
			to++;
		for (size_t i = r; version >= 3 && i < to; i++)
			for (size_t t = 0; t < nstids; t++)
				if (stids[t] == srecs[i].tid && !named[t]) {
					named[t] = 1;
					thread_named(stids[t]);
				}
		sched_records(r, to);
		r = to;
		if (j == 1) { /* log lines of the first thread, one older than any scope */
			struct page pg;
			uint64_t t0 = srecs[0].time - 500;
			if (version >= 3 && !named[0]) {
				named[0] = 1;
				thread_named(stids[0]);
			}
			page_start(&pg, t0);
			page_record(&pg, t0, 1, stids[0], "before the first scope", 22);
			page_record(&pg, srecs[0].time + 3, 1, stids[0], "in it", 5);
			page_record(&pg, upto, 1, stids[0], "as the second page ends", 23);
			page_send(&pg, 0);
			first_log = t0;
		}
		kernel_page(kpages[j].cpu, kpages[j].page);
		if (version >= 3) { /* every event before the next unsent page of a CPU */
			uint64_t complete = upto;
			for (size_t n = j + 1; n < nkpages; n++)
				if (kpages[n].first - 1 < complete)
					complete = kpages[n].first - 1;
			kernel_mark(complete);
		}
		frame();
	}
	sched_records(r, nsrecs);
	if (version >= 3)
		kernel_mark(upto + 1);
	for (size_t t = 0; t < nstids; t++)
		thread_named(stids[t]);
	uint64_t reserved[2] = {first_log ? 3 : 0, 0};
	end_first = version < 3 ? 0 : first_log ? first_log : srecs[0].time;
	end(0, reserved, 2);
	while (nloaded > 0)
		free(loaded[--nloaded]);
}

static void scenario_sched(void)
{
	scenario_sched_as(3);
}

static void scenario_sched2(void)
{
	scenario_sched_as(2);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(void);
	} sc[] = {
	    {"names", scenario_names},     {"ties", scenario_ties},   {"logs", scenario_logs},
	    {"loss", scenario_loss},       {"noend", scenario_noend}, {"badeq", scenario_badeq},
	    {"streams", scenario_streams}, {"marks", scenario_marks}, {"sched", scenario_sched},
	    {"sched2", scenario_sched2},   {"newer", scenario_newer}, {"v1", scenario_v1}};
	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: replay_synth SCENARIO OUT [DATA]\n");
		return 1;
	}
	data_dir = argc == 4 ? argv[3] : ".";
	for (size_t i = 0; i < sizeof sc / sizeof sc[0]; i++) {
		if (strcmp(argv[1], sc[i].name) != 0)
			continue;
		out = fopen(argv[2], "wb");
		if (out == NULL || (sw = writer_new()) == NULL) {
			perror(argv[2]);
			return 1;
		}
		sc[i].fn();
		orbit__sw_free(sw);
		return fclose(out) == 0 ? 0 : 1;
	}
	fprintf(stderr, "replay_synth: unknown scenario %s\n", argv[1]);
	return 1;
}
