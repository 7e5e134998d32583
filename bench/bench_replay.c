/*
 * bench_replay.c — orbit-bench-replay: how fast orbit-replay reads a large
 * capture, and how much memory it takes. Prints a table; never passes or
 * fails.
 *
 *   orbit-bench-replay [--records N] [--capture FILE] [--keep] [--runs N]
 *                      [--sched] [--version 2|3]
 *
 * Writes a capture of N records (default 50 M) with the format's stream
 * writer (format/stream_writer.h), as the agent does (1 MiB frames, zstd
 * level 1, 16 rings,
 * 4096-record batches): 16 threads, one per ring, each repeating a frame of
 * about 90 records: nested scopes (depth up to 6) named from a pool of 300
 * names, a tenth of them longer than a record holds (continuations),
 * values, async spans that start on one thread and stop on the next; every
 * frame's durations vary by a few percent, one frame in fifty is 8 times
 * slower. Then replays it in a child process per mode (summary only;
 * summary + CSV; + Chrome JSON; + Perfetto), outputs to /dev/null, and
 * reports records per second of wall time (one thread: the replay is
 * single-threaded), scopes per second, and the child's peak RSS from
 * wait4(). --capture FILE replays FILE instead if it exists (and keeps what
 * it writes there otherwise). Numbers worth quoting come from the release
 * preset (cmake --preset release; build/release/bench/orbit-bench-replay).
 *
 * --sched adds the kernel's scheduling as the agent sends it: a Handshake
 * with a KernelSched (sched_switch's format), and after every 32768
 * records (a pass) the batches, then each of 4 CPUs' pages of sched_switch
 * events (one every 25 us of the capture's time per CPU, among the 4
 * threads that run there and idle), and the KernelLoss totals at the end.
 * --version says how the stream is written (docs/format.md 4.0, 4.13): 3
 * (the default) as the agent writes it, names before the records, a
 * KernelMark after each pass's pages, EndOfStream.first_ns; 2 as the
 * previous release's agent wrote the same events, names at the end only,
 * no marks. The two give the same outputs; the first is read once.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "record.h"
#include "replay.h"
#include "stream_writer.h"

#define RINGS 16u
#define THREADS 16u
#define NAMES 300u
#define MAX_DEPTH 6u
#define SCRIPT 96u
#define FRAME_CONTENT (1u << 20)
#define BATCH 4096u
#define CPUS 4u
#define PASS_RECORDS 32768u /* the agent's staging area: records of one pass */
#define SWITCH_NS 25000u    /* a sched_switch on each CPU this often */
#define KPAGE 4096u
#define SWITCH_ID 372u /* sched_switch's ID in the format below */

/* The events' descriptions, in the kernel's own words (a Linux 6.18
 * instance's events/header_page and events/sched/sched_switch/format). */
static const char HEADER_PAGE[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
                                  "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
                                  "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
                                  "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
static const char SWITCH_FORMAT[] =
    "name: sched_switch\nID: 372\nformat:\n"
    "\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n"
    "\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n"
    "\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n"
    "\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n"
    "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n"
    "\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;\n"
    "\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;\n"
    "\tfield:char next_comm[16];\toffset:40;\tsize:16;\tsigned:0;\n"
    "\tfield:pid_t next_pid;\toffset:56;\tsize:4;\tsigned:1;\n"
    "\tfield:int next_prio;\toffset:60;\tsize:4;\tsigned:1;\n\n"
    "print fmt: \"prev_pid=%d next_pid=%d\", REC->prev_pid, REC->next_pid\n";

/* One CPU's kernel buffer: the page being filled, who runs there. */
struct kcpu {
	uint8_t page[KPAGE];
	uint32_t off;   /* bytes of the page used */
	uint64_t last;  /* the time of its last record */
	uint64_t clock; /* the next switch's time */
	uint32_t cur;   /* index of the thread running, THREADS: idle */
	uint32_t turn;
	uint64_t events;
};

/* One step of a thread's frame: what real loops do, the same scopes in
 * the same order every frame, with durations that vary a little and
 * sometimes a lot. */
struct op {
	uint8_t kind; /* start, stop, value, async start/stop */
	uint16_t name;
	uint32_t gap; /* typical ns since the previous record */
};

struct gen_thread {
	uint32_t tid;
	uint64_t time;
	uint64_t next_id;
	uint64_t stack[MAX_DEPTH];
	uint32_t depth;
	struct op script[SCRIPT];
	uint32_t nscript;
	uint64_t frame;
};

struct gen {
	uint64_t rng;
	struct gen_thread th[THREADS];
	char names[NAMES][80];
	uint64_t claims[RINGS];
	uint8_t *ring_buf[RINGS]; /* pending records per ring */
	uint32_t ring_n[RINGS];
	struct orbit__sw *sw;
	int fd;
	uint64_t records, scopes;
	uint64_t async_id[THREADS]; /* span started by thread i - 1, to stop here */
	uint64_t async_time[THREADS];
	/* --sched, --version */
	int sched;
	uint32_t version;
	struct kcpu kcpu[CPUS];
	uint64_t pass_records; /* records at the last pass */
	uint64_t mark;         /* the last pass's end: the next KernelMark */
	uint64_t first;        /* the earliest head record's time */
};

static uint64_t rnd(struct gen *g)
{
	g->rng ^= g->rng << 13;
	g->rng ^= g->rng >> 7;
	g->rng ^= g->rng << 17;
	return g->rng;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The writer's sink: each frame into the file. */
static int write_frame(void *ctx, const struct orbit__sw_frame *f)
{
	struct gen *g = ctx;
	const uint8_t *p = f->bytes;
	size_t n = f->len;
	while (n > 0) {
		ssize_t w = write(g->fd, p, n);
		if (w < 0) {
			perror("orbit-bench-replay: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void must(int err)
{
	if (err != 0) {
		fprintf(stderr, "orbit-bench-replay: writing the capture failed\n");
		exit(1);
	}
}

static void flush_ring(struct gen *g, uint32_t ring)
{
	uint32_t n = g->ring_n[ring];
	if (n == 0)
		return;
	must(orbit__sw_records(g->sw, ring, g->claims[ring], g->ring_buf[ring], n) != n);
	g->claims[ring] += n;
	g->ring_n[ring] = 0;
}

static void put(struct gen *g, const struct orbit_record *r)
{
	uint32_t ring = r->tid % RINGS;
	orbit__record_encode(r, g->ring_buf[ring] + (size_t)g->ring_n[ring] * ORBIT_RECORD_SIZE);
	g->records++;
	if (++g->ring_n[ring] == BATCH)
		flush_ring(g, ring);
}

/* A head record and the continuations its name needs. */
static void put_named(struct gen *g, struct gen_thread *t, uint8_t kind, uint64_t id,
                      const char *name)
{
	struct orbit_record r = {t->time, id, t->tid, kind, 0, 0, {0}};
	if (t->time < g->first)
		g->first = t->time;
	size_t len = strlen(name), k = len < ORBIT_RECORD_NAME ? len : ORBIT_RECORD_NAME;
	r.len = (uint16_t)len;
	memcpy(r.name, name, k);
	put(g, &r);
	for (uint16_t part = 1; k < len; part++) {
		struct orbit_record c = {t->time, id, t->tid, ORBIT_REC_NAME_CONT, 0, part, {0}};
		size_t m = len - k < ORBIT_RECORD_NAME ? len - k : ORBIT_RECORD_NAME;
		memcpy(c.name, name + k, m);
		put(g, &c);
		k += m;
	}
}

/* ---- the kernel's scheduling (--sched) ---- */

static void kpage_send(struct gen *g, uint32_t cpu)
{
	struct kcpu *k = &g->kcpu[cpu];
	if (k->off <= 16)
		return;
	orbit__put_le64(k->page + 8, k->off - 16); /* commit: the records' bytes */
	must(orbit__sw_kernel_page(g->sw, cpu, k->page, KPAGE));
	k->off = 0;
}

/* A sched_switch of prev to next on cpu at t: a 64-byte payload,
 * type_len 16, in the page layout of docs/format.md 5.1. */
static void kswitch(struct gen *g, uint32_t cpu, uint64_t t, uint32_t prev, uint32_t next,
                    int64_t state)
{
	struct kcpu *k = &g->kcpu[cpu];
	if (k->off != 0 && k->off + 68 > KPAGE)
		kpage_send(g, cpu);
	if (k->off == 0) {
		memset(k->page, 0, sizeof k->page);
		orbit__put_le64(k->page, t);
		k->off = 16;
		k->last = t;
	}
	uint8_t *r = k->page + k->off;
	orbit__put_le32(r, 16u | (uint32_t)(t - k->last) << 5);
	uint8_t *d = r + 4;
	orbit__put_le16(d, SWITCH_ID);
	orbit__put_le32(d + 4, prev);
	snprintf((char *)d + 8, 16, prev ? "worker" : "swapper/%u", cpu);
	orbit__put_le32(d + 24, prev);
	orbit__put_le32(d + 28, 120);
	orbit__put_le64(d + 32, (uint64_t)state);
	snprintf((char *)d + 40, 16, next ? "worker" : "swapper/%u", cpu);
	orbit__put_le32(d + 56, next);
	orbit__put_le32(d + 60, 120);
	k->off += 68;
	k->last = t;
	k->events++;
}

/* Each CPU's switches up to t: it runs its 4 threads in turn and idles,
 * a thread going to sleep before idle and preempted otherwise. */
static void kernel_until(struct gen *g, uint64_t t)
{
	for (uint32_t c = 0; c < CPUS; c++) {
		struct kcpu *k = &g->kcpu[c];
		while (k->clock <= t) {
			uint32_t next = k->turn++ % (THREADS / CPUS + 1);
			uint32_t ni = next < THREADS / CPUS ? c + CPUS * next : THREADS;
			uint32_t prev = k->cur < THREADS ? g->th[k->cur].tid : 0;
			uint32_t nt = ni < THREADS ? g->th[ni].tid : 0;
			kswitch(g, c, k->clock, prev, nt, ni == THREADS ? 1 : 0);
			k->cur = ni;
			k->clock += SWITCH_NS;
		}
		kpage_send(g, c); /* a pass reads every page, the last one partly filled */
	}
}

static void kernel_mark(struct gen *g, uint64_t t)
{
	must(orbit__sw_kernel_mark(g->sw, t));
}

static void flush_ring(struct gen *g, uint32_t ring);

/* What the agent's pass sends: the records drained, then the kernel's
 * pages up to now, and (version 3) a mark: complete up to the last pass's
 * end. */
static void pass(struct gen *g)
{
	uint64_t now = 0;
	for (uint32_t r = 0; r < RINGS; r++)
		flush_ring(g, r);
	for (uint32_t i = 0; i < THREADS; i++)
		now = g->th[i].time > now ? g->th[i].time : now;
	kernel_until(g, now);
	if (g->version >= 3 && g->mark != 0)
		kernel_mark(g, g->mark);
	g->mark = now;
	g->pass_records = g->records;
}

enum { OP_START, OP_STOP, OP_VALUE, OP_ASYNC };

/* A thread's frame: a random tree of scopes under one root, values and an
 * async span handed to the next thread. */
static void make_script(struct gen *g, struct gen_thread *t)
{
	uint32_t n = 0, depth = 0;
	t->script[n++] = (struct op){OP_START, (uint16_t)(rnd(g) % 8), 200};
	depth = 1;
	while (n < SCRIPT - MAX_DEPTH - 2) {
		uint64_t r = rnd(g) % 100;
		uint32_t gap = (uint32_t)(20 + rnd(g) % 2000);
		if (depth < MAX_DEPTH && r < 40) {
			uint16_t name = (uint16_t)(8 + rnd(g) % (NAMES - 8));
			t->script[n++] = (struct op){OP_START, name, gap};
			depth++;
		} else if (depth > 1 && r < 80) {
			t->script[n++] = (struct op){OP_STOP, 0, gap};
			depth--;
		} else if (r < 97)
			t->script[n++] = (struct op){OP_VALUE, (uint16_t)(r & 1), gap};
		else
			t->script[n++] = (struct op){OP_ASYNC, 0, gap};
	}
	while (depth-- > 0)
		t->script[n++] = (struct op){OP_STOP, 0, 50};
	t->nscript = n;
}

/* Most frames within a few percent of the script, one in fifty slow. */
static uint64_t jitter(struct gen *g, uint32_t gap, int slow)
{
	uint64_t j = gap + rnd(g) % (gap / 16 + 1);
	return slow ? j * 8 : j;
}

static void thread_op(struct gen *g, struct gen_thread *t, const struct op *op, int slow)
{
	uint32_t self = (uint32_t)(t - g->th);
	t->time += jitter(g, op->gap, slow);
	switch (op->kind) {
	case OP_START:
		t->stack[t->depth++] = ++t->next_id;
		put_named(g, t, ORBIT_REC_SCOPE_START, t->next_id, g->names[op->name]);
		g->scopes++;
		break;
	case OP_STOP: {
		struct orbit_record s = {
		    t->time, t->stack[--t->depth], t->tid, ORBIT_REC_SCOPE_STOP, 0, 0, {0}};
		put(g, &s);
		break;
	}
	case OP_VALUE:
		put_named(g, t, op->name ? ORBIT_REC_INT64 : ORBIT_REC_DOUBLE,
		          op->name ? t->frame % 64 : 0x3fe0000000000000ull,
		          op->name ? "queue depth" : "frame budget used");
		break;
	default:
		if (g->async_id[self] && t->time > g->async_time[self]) {
			struct orbit_record s = {
			    t->time, g->async_id[self], t->tid, ORBIT_REC_ASYNC_STOP, 0, 0, {0}};
			put(g, &s);
			g->async_id[self] = 0;
		} else if (g->async_id[(self + 1) % THREADS] == 0) {
			uint64_t id = (uint64_t)self << 40 | ++t->next_id;
			put_named(g, t, ORBIT_REC_ASYNC_START, id, "upload");
			g->async_id[(self + 1) % THREADS] = id;
			g->async_time[(self + 1) % THREADS] = t->time;
		}
	}
}

static void thread_frame(struct gen *g, struct gen_thread *t)
{
	int slow = rnd(g) % 50 == 0;
	for (uint32_t i = 0; i < t->nscript; i++)
		thread_op(g, t, &t->script[i], slow);
	t->frame++;
}

static void make_names(struct gen *g)
{
	static const char *parts[] = {"physics", "render", "audio", "net",    "ai",
	                              "anim",    "ui",     "io",    "script", "streaming"};
	for (uint32_t i = 0; i < NAMES; i++) {
		if (i % 10 == 9)
			snprintf(g->names[i], sizeof g->names[i],
			         "%s::subsystem_update_with_a_long_descriptive_name_%u",
			         parts[i % 10], i);
		else
			snprintf(g->names[i], sizeof g->names[i], "%s::step %u", parts[i % 10], i);
	}
}

static void handshake(struct gen *g, uint64_t t0)
{
	uint64_t start[RINGS] = {0};
	uint32_t tids[THREADS];
	char *cmd[] = {(char *)"orbit-bench-replay"};
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	Orbit__KernelSched k = ORBIT__KERNEL_SCHED__INIT;
	Orbit__KernelEventFormat ev = ORBIT__KERNEL_EVENT_FORMAT__INIT, *pev = &ev;
	if (g->sched) {
		ev.system = (char *)"sched";
		ev.format = (char *)SWITCH_FORMAT;
		k.header_page = (char *)HEADER_PAGE;
		k.n_events = 1;
		k.events = &pev;
		k.cpu_count = CPUS;
		k.page_size = KPAGE;
		k.trace_clock = (char *)"mono";
		k.instance = (char *)"orbit-bench";
		for (uint32_t i = 0; i < THREADS; i++)
			tids[i] = 10000 + i;
		k.n_tids = THREADS;
		k.tids = tids;
		k.recording_ns = t0 - 1000;
		h.kernel_sched = &k;
	}
	h.protocol_version = g->version;
	h.pid = 4242;
	h.process_name = (char *)"generated";
	h.host_name = (char *)"bench";
	h.n_command_line = 1;
	h.command_line = cmd;
	h.agent_version = (char *)"bench";
	h.clock = &clock;
	h.monotonic_ns = t0;
	h.realtime_ns = 1700000000000000000ull;
	h.ring_count = RINGS;
	h.slots_per_ring = 65536;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = RINGS;
	h.ring_start = start;
	must(orbit__sw_handshake(g->sw, &h, NULL, 0));
}

/* The threads' names: before their records (protocol version 3,
 * docs/format.md 4.5), and at the end. */
static void thread_names(struct gen *g)
{
	for (uint32_t i = 0; i < THREADS; i++) {
		char name[32];
		snprintf(name, sizeof name, "worker %u", i);
		must(orbit__sw_thread_name(g->sw, g->th[i].tid, name));
	}
}

static void trailer(struct gen *g)
{
	for (uint32_t r = 0; r < RINGS; r++)
		flush_ring(g, r);
	thread_names(g);
	if (g->sched) {
		pass(g);
		if (g->version >= 3)
			kernel_mark(g, g->mark); /* every event there is is in */
		for (uint32_t c = 0; c < CPUS; c++) {
			Orbit__KernelLoss l = ORBIT__KERNEL_LOSS__INIT;
			l.cpu = c;
			l.read_events = g->kcpu[c].events;
			must(orbit__sw_kernel_loss(g->sw, &l));
		}
	}
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = RINGS;
	e.claimed_per_ring = g->claims;
	e.first_ns = g->version >= 3 ? g->first : 0;
	must(orbit__sw_end(g->sw, &e));
}

static void generate(const char *path, uint64_t records, int sched, uint32_t version)
{
	struct gen *g = calloc(1, sizeof *g);
	const struct orbit__sw_sink sink = {.ctx = g, .frame = write_frame};
	if (g == NULL || (g->sw = orbit__sw_new(1, FRAME_CONTENT, &sink)) == NULL) {
		fprintf(stderr, "orbit-bench-replay: out of memory\n");
		exit(1);
	}
	g->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (g->fd < 0) {
		fprintf(stderr, "orbit-bench-replay: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	g->rng = 0x2545f4914f6cdd1dull;
	g->sched = sched;
	g->version = version;
	g->first = UINT64_MAX;
	make_names(g);
	uint64_t t0 = 1000000000000ull;
	for (uint32_t c = 0; c < CPUS; c++)
		g->kcpu[c] = (struct kcpu){.clock = t0 + c * 3001, .cur = THREADS};
	for (uint32_t r = 0; r < RINGS; r++)
		g->ring_buf[r] = malloc((size_t)BATCH * ORBIT_RECORD_SIZE);
	handshake(g, t0);
	for (uint32_t i = 0; i < THREADS; i++)
		g->th[i].tid = 10000 + i;
	if (version >= 3) /* before their records (docs/format.md 4.5) */
		thread_names(g);
	for (uint32_t i = 0; i < THREADS; i++) {
		g->th[i] = (struct gen_thread){.tid = 10000 + i, .time = t0 + i * 777};
		make_script(g, &g->th[i]);
		char name[32];
		snprintf(name, sizeof name, "worker %u", i);
		put_named(g, &g->th[i], ORBIT_REC_THREAD_NAME, 0, name);
	}
	while (g->records < records) {
		for (uint32_t i = 0; i < THREADS; i++)
			thread_frame(g, &g->th[i]);
		if (sched && g->records - g->pass_records >= PASS_RECORDS)
			pass(g);
	}
	trailer(g);
	close(g->fd);
	printf("generated %s: %" PRIu64 " records, %" PRIu64 " scopes\n", path, g->records,
	       g->scopes);
	for (uint32_t r = 0; r < RINGS; r++)
		free(g->ring_buf[r]);
	orbit__sw_free(g->sw);
	free(g);
}

struct mode {
	const char *name;
	int csv, chrome, perfetto;
};

static const struct mode modes[] = {
    {"summary", 0, 0, 0},
    {"summary + csv", 1, 0, 0},
    {"summary + chrome", 0, 1, 0},
    {"summary + perfetto", 0, 0, 1},
};

struct result {
	double wall, cpu;
	long maxrss_kib;
	int status;
};

static void child(const char *path, const struct mode *m)
{
	const char *inputs[] = {path};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	FILE *null = fopen("/dev/null", "w");
	o.inputs = inputs;
	o.ninputs = 1;
	o.out = null;
	o.progress = 0;
	o.csv_path = m->csv ? "/dev/null" : NULL;
	o.chrome_path = m->chrome ? "/dev/null" : NULL;
	o.perfetto_path = m->perfetto ? "/dev/null" : NULL;
	_exit(orbit__replay_run(&o));
}

static struct result measure(const char *path, const struct mode *m)
{
	struct result r = {0, 0, 0, -1};
	uint64_t t = now_ns();
	pid_t pid = fork();
	if (pid == 0)
		child(path, m);
	struct rusage ru;
	int st;
	if (pid < 0 || wait4(pid, &st, 0, &ru) != pid)
		return r;
	r.wall = (double)(now_ns() - t) / 1e9;
	r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	        (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	r.maxrss_kib = ru.ru_maxrss;
	r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return r;
}

/* Records and scopes in the capture, from the replay's own JSON summary. */
static void count(const char *path, uint64_t *records, uint64_t *scopes)
{
	char tmp[] = "/tmp/orbit-bench-replay-XXXXXX";
	int fd = mkstemp(tmp);
	const char *inputs[] = {path};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	FILE *null = fopen("/dev/null", "w");
	o.inputs = inputs;
	o.ninputs = 1;
	o.out = null;
	o.progress = 0;
	o.json_path = tmp;
	o.quiet = 1;
	orbit__replay_run(&o);
	fclose(null);
	*records = *scopes = 0;
	FILE *f = fdopen(fd, "r");
	char buf[4096];
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	buf[n] = '\0';
	const char *p = strstr(buf, "\"records\":"), *q = strstr(buf, "\"scopes\":");
	if (p)
		*records = strtoull(p + 10, NULL, 10);
	if (q)
		*scopes = strtoull(q + 9, NULL, 10);
	if (f)
		fclose(f);
	unlink(tmp);
}

int main(int argc, char **argv)
{
	uint64_t want = 50000000;
	const char *path = NULL;
	int keep = 0, runs = 1, sched = 0;
	uint32_t version = ORBIT_PROTOCOL_VERSION;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
			want = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--capture") == 0 && i + 1 < argc)
			path = argv[++i];
		else if (strcmp(argv[i], "--keep") == 0)
			keep = 1;
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--sched") == 0)
			sched = 1;
		else if (strcmp(argv[i], "--version") == 0 && i + 1 < argc &&
		         (atoi(argv[i + 1]) == 2 || atoi(argv[i + 1]) == 3))
			version = (uint32_t)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: orbit-bench-replay [--records N] [--capture FILE] "
			                "[--keep] [--runs N] [--sched] [--version 2|3]\n");
			return 1;
		}
	}
	char tmp[] = "/tmp/orbit-bench-replay-XXXXXX.zst";
	struct stat st;
	if (path == NULL) {
		int fd = mkstemps(tmp, 4);
		if (fd < 0) {
			perror("orbit-bench-replay: mkstemps");
			return 1;
		}
		close(fd);
		path = tmp;
	} else {
		keep = 1;
	}
	if (path == tmp || stat(path, &st) != 0) {
		uint64_t t = now_ns();
		generate(path, want, sched, version);
		printf("generated in %.1f s\n", (double)(now_ns() - t) / 1e9);
	}
	if (stat(path, &st) != 0) {
		perror(path);
		return 1;
	}
	uint64_t records, scopes;
	count(path, &records, &scopes);
	printf("capture %s: %.1f MiB, %" PRIu64 " records, %" PRIu64 " scopes\n\n", path,
	       (double)st.st_size / 1048576.0, records, scopes);
	printf("%-20s %10s %10s %16s %16s %12s\n", "mode", "wall s", "cpu s", "records/s",
	       "scopes/s", "peak RSS");
	for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
		struct result best = {0, 0, 0, -1};
		for (int k = 0; k < runs; k++) {
			struct result r = measure(path, &modes[i]);
			if (best.status < 0 || r.wall < best.wall)
				best = r;
		}
		printf("%-20s %10.2f %10.2f %14.1f M %14.1f M %9.1f MiB%s\n", modes[i].name,
		       best.wall, best.cpu, (double)records / best.wall / 1e6,
		       (double)scopes / best.wall / 1e6, (double)best.maxrss_kib / 1024.0,
		       best.status == 0 ? "" : "  (exit status not 0)");
	}
	if (!keep)
		unlink(path);
	return 0;
}
