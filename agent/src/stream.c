/* stream.c — the agent's stream on its output: when it begins and takes
 * records, what it says and when, what its death costs; see stream.h. */
#include "stream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "ftrace_page.h"
#include "ledger.h"
#include "logs.h"
#include "sched_tracefs.h"
#include "site_resolve.h"
#include "stream_writer.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "0"
#endif

#define FRAME_AGE_MS 100u        /* a frame goes out this long after its first packet */
#define KEEPALIVE_MS 30000u      /* well inside the collector's idle timeout */
#define TRIM_MS 2000u            /* buffers of a stream quiet this long are freed */
#define SITES_MAX (1u << 16)     /* call sites one stream resolves; later ones stay unnamed */
#define SITES_FLIGHT_MS 1000u    /* with a flight ring: sites named again this often, */
#define SITES_FLIGHT_FRAMES 32u  /* or after this many frames, */
#define SITES_FLIGHT_MIN_MS 100u /* but not more often than this */
#define NAMES_MS 1000u           /* the threads' names read again this often */
#define NAMES_KEPT 4096u         /* names remembered for threads gone by their records */

/* The call-site addresses a stream has looked at (resolved and sent, or
 * found bad), an open-addressing set; 0 is never a site. */
struct sites {
	uint64_t *addr;
	uint32_t cap, n; /* cap: a power of two, or 0 */
};

#define SCHED_TIDS_MAX 4096u /* KernelSched.tids sent at most (docs/format.md 4.10) */

/* One CPU of the kernel recorder in this stream (KernelLoss, 4.10): the
 * counts when the stream began, and what the last KernelLoss said. */
struct kcpu {
	struct orbit__sched_cpu base;
	uint64_t unsent; /* pages read and not put in a frame, this stream */
	Orbit__KernelLoss sent;
	int any_sent;
};

/* The sites a packet's records name for the first time, resolved, as one
 * SourceLocations packet into the frame before that packet. */
struct site_list {
	Orbit__SourceLocation e[8];
	Orbit__SourceLocation *p[8];
	struct orbit__site_text text[8];
	size_t n;
};

struct orbit__stream {
	const struct orbit__config *cfg;
	struct orbit__drain *drain;
	struct orbit__clock_conv *clock;
	struct orbit__ledger ledger;
	struct orbit__logs *logs; /* NULL: no page rings */
	struct orbit__output *out;
	struct orbit__output_events out_ev; /* what out says, to us */
	const struct orbit__stream_events *ev;
	uint32_t rings;
	struct orbit__sw *sw; /* the packets and frames (format/stream_writer.h) */
	int open;
	uint64_t last_frame_ms;  /* when the last frame went out */
	int framed;              /* a frame went out since the last pass */
	uint64_t frame_since_ms; /* when the frame being built got its first packet */
	uint64_t now_ms;         /* as of the last pass */
	uint64_t untrusted0;     /* the clock's counts when the stream began */
	uint64_t resets0;        /*   (EndOfStream sends the differences) */
	struct sites sites;      /* the call sites this stream has resolved */
	struct site_list list;   /* the sites of one packet, being resolved */
	uint64_t sites_since_ms; /* when they were last forgotten (ORBIT_FLIGHT), */
	uint64_t sites_seq;      /* and the frame sequence then */

	/* kernel scheduling (ORBIT_SCHED) */
	int sched_wait;             /* the Handshake waits for orbit__stream_sched */
	int begin_due;              /* a stream began while it waited */
	uint64_t begin_ms;          /* ... then */
	struct orbit__sched *sched; /* the recorder, or NULL */
	char sched_off[ORBIT__SCHED_WHY];
	struct kcpu *kcpu; /* cpu_count, while a stream with kernel_sched is open */
	uint32_t kcpus;
	uint64_t mark_from;  /* KernelMark: when the last read to the end began; 0 none */
	uint64_t mark_sent;  /* the last KernelMark sent */
	uint64_t mark_reads; /* the recorder's reads at the last pass */

	/* thread names (docs/format.md 4.5): as last read from /proc */
	uint64_t names_ms;
	struct {
		uint32_t tid;
		char name[ORBIT_SW_NAME];
	} names[NAMES_KEPT];
	uint32_t nnames;

	/* on the output */
	int dead;                /* refused, or the file failed: tracing is off */
	int blocked;             /* the queue held the drain back */
	int streams;             /* streams answered */
	int answered;            /* the open stream's Handshake was settled */
	struct orbit__fate last; /* the last broken stream's, for the end line */
	void (*idle_cb)(void *ctx);
	void *idle_ctx;
};

static void sites_forget(struct orbit__stream *s);

/* ---- frames: where the writer's go (its sink) ---- */

static uint32_t to_u32(uint64_t v)
{
	return v < UINT32_MAX ? (uint32_t)v : UINT32_MAX;
}

/* The frame's bytes, from the writer, for an output that queues them
 * (output.h, orbit__frame_take). */
static uint8_t *give_frame(void *owner)
{
	return orbit__sw_take(owner);
}

/* A finished frame: the ledger knows it before any output can settle it. */
static int on_frame(void *ctx, const struct orbit__sw_frame *f)
{
	struct orbit__stream *s = ctx;
	for (uint32_t r = 0; r < f->rings; r++)
		if (f->ring_records[r] != 0)
			orbit__ledger_framed(&s->ledger, r, to_u32(f->ring_records[r]));
	orbit__ledger_frame_done(&s->ledger, f->seq);
	static const enum orbit__frame_kind kinds[] = {
	    [ORBIT__SW_HANDSHAKE] = ORBIT__FRAME_HANDSHAKE,
	    [ORBIT__SW_DATA] = ORBIT__FRAME_DATA,
	    [ORBIT__SW_END] = ORBIT__FRAME_END,
	};
	struct orbit__frame out = {.bytes = f->bytes,
	                           .len = f->len,
	                           .seq = f->seq,
	                           .kind = kinds[f->kind],
	                           .rings = f->rings,
	                           .ring_end = f->ring_end,
	                           .ring_framed = f->ring_framed,
	                           .give = give_frame,
	                           .owner = s->sw};
	s->framed = 1;
	s->frame_since_ms = s->now_ms; /* what follows starts the next frame */
	if (s->out->ops->send(s->out, &out) != 0) {
		orbit__ledger_lost(&s->ledger, f->seq);
		sites_forget(s); /* nor the sites it named */
		return -EIO;
	}
	return 0;
}

/* The frame being built will never leave (no memory to compress it, or the
 * stream broke): its records are unsent, and the sites it named unnamed. */
static void on_lost(void *ctx, const uint64_t *records, uint32_t rings)
{
	struct orbit__stream *s = ctx;
	for (uint32_t r = 0; r < rings; r++)
		if (records[r] != 0)
			orbit__ledger_unsent(&s->ledger, r, records[r]);
	sites_forget(s);
}

/* Before a packet: the frame's age counts from its first one. */
static void note_first(struct orbit__stream *s)
{
	if (orbit__sw_pending(s->sw) == 0)
		s->frame_since_ms = s->now_ms;
}

/* ---- the handshake ---- */

static void read_file_line(const char *path, char *buf, size_t len)
{
	buf[0] = '\0';
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return;
	if (fgets(buf, (int)len, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- thread names (docs/format.md 4.5) ---- */

/* A comm into ORBIT_SW_NAME bytes (a comm is at most 15). */
static void copy_name(char dst[ORBIT_SW_NAME], const char *src)
{
	size_t n = strnlen(src, ORBIT_SW_NAME - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The writer's question before a thread's first records: its comm now, or,
 * for a thread gone meanwhile, what the last reading of them found. */
static int thread_name_of(void *ctx, uint32_t tid, char name[ORBIT_SW_NAME])
{
	struct orbit__stream *s = ctx;
	char path[64], line[64];
	snprintf(path, sizeof path, "/proc/self/task/%u/comm", tid);
	read_file_line(path, line, sizeof line);
	if (line[0] != '\0') {
		copy_name(name, line);
		return 1;
	}
	for (uint32_t i = 0; i < s->nnames; i++)
		if (s->names[i].tid == tid) {
			memcpy(name, s->names[i].name, ORBIT_SW_NAME);
			return 1;
		}
	return 0;
}

/* Every thread of the process now, each to fn. */
static void each_thread(struct orbit__stream *s,
                        void (*fn)(struct orbit__stream *s, uint32_t tid, const char *name))
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		char path[300], name[64];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		read_file_line(path, name, sizeof name);
		fn(s, (uint32_t)strtoul(e->d_name, NULL, 10), name);
	}
	if (d != NULL)
		closedir(d);
}

/* Once a second: the names remembered, and a ThreadName for each thread
 * the stream named whose name changed since. */
static void name_again(struct orbit__stream *s, uint32_t tid, const char *name)
{
	if (s->nnames < NAMES_KEPT) {
		s->names[s->nnames].tid = tid;
		copy_name(s->names[s->nnames].name, name);
		s->nnames++;
	}
	if (name[0] != '\0')
		orbit__sw_rename(s->sw, tid, name);
}

static void names_again(struct orbit__stream *s, uint64_t now_ms)
{
	if (now_ms - s->names_ms < NAMES_MS)
		return;
	s->names_ms = now_ms;
	s->nnames = 0;
	note_first(s);
	each_thread(s, name_again);
}

/* ---- kernel scheduling (docs/format.md 4.10) ---- */

/* What a Handshake's KernelSched points at while it is packed. */
struct kernel_sched {
	Orbit__KernelSched m;
	struct utsname uts;
	Orbit__KernelEventFormat *events;
	Orbit__KernelEventFormat **pevents;
};

/* Handshake.kernel_sched from the recorder's formats, or kernel_sched_off
 * with the reason it is off. (The writer leaves out what would not fit the
 * Handshake's frame: stream_writer.h, guarantee 1.) */
static void handshake_sched(struct orbit__stream *s, Orbit__Handshake *h, struct kernel_sched *ks)
{
	memset(ks, 0, sizeof *ks);
	if (!s->cfg->sched)
		return;
	if (s->sched == NULL) {
		h->kernel_sched_off = s->sched_off;
		return;
	}
	const struct orbit__sched_formats *f = orbit__sched_formats(s->sched);
	ks->events = calloc(f->event_count ? f->event_count : 1, sizeof *ks->events);
	ks->pevents = calloc(f->event_count ? f->event_count : 1, sizeof *ks->pevents);
	if (ks->events == NULL || ks->pevents == NULL) {
		h->kernel_sched_off = (char *)"out of memory for the kernel's event formats";
		return;
	}
	orbit__kernel_sched__init(&ks->m);
	if (uname(&ks->uts) != 0)
		ks->uts.release[0] = '\0';
	for (uint32_t i = 0; i < f->event_count; i++) {
		orbit__kernel_event_format__init(&ks->events[i]);
		ks->events[i].system = (char *)f->events[i].system;
		ks->events[i].format = (char *)f->events[i].text;
		ks->pevents[i] = &ks->events[i];
	}
	ks->m.header_page = (char *)f->header_page;
	ks->m.header_event = (char *)f->header_event;
	ks->m.n_events = f->event_count;
	ks->m.events = ks->pevents;
	ks->m.cpu_count = f->cpu_count;
	ks->m.page_size = f->page_size;
	ks->m.trace_clock = (char *)f->clock;
	ks->m.buffer_kb = f->buffer_kb;
	ks->m.instance = (char *)f->instance;
	ks->m.n_tids = f->tid_count < SCHED_TIDS_MAX ? f->tid_count : SCHED_TIDS_MAX;
	ks->m.tids = (uint32_t *)f->tids;
	ks->m.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	ks->m.boottime_ns = clock_ns(CLOCK_BOOTTIME);
	ks->m.kernel_release = ks->uts.release;
	ks->m.recording_ns = f->since_ns;
	h->kernel_sched = &ks->m;
}

/* The counts a stream's KernelLoss starts from, per CPU. */
static void kernel_begin(struct orbit__stream *s)
{
	free(s->kcpu);
	s->kcpu = NULL;
	s->kcpus = 0;
	if (s->sched == NULL)
		return;
	uint32_t n = orbit__sched_formats(s->sched)->cpu_count;
	s->kcpu = calloc(n, sizeof *s->kcpu);
	if (s->kcpu == NULL)
		return; /* pages go out all the same; their loss is not said */
	s->kcpus = n;
	for (uint32_t c = 0; c < n; c++)
		orbit__sched_stats(s->sched, c, &s->kcpu[c].base);
}

/* CPU c's KernelLoss in this stream now, from the kernel's counters read
 * now (three syscalls) and the pages read; sent if it differs from the
 * last one (at the end: if anything is non-zero). */
static void kernel_loss(struct orbit__stream *s, uint32_t c, int at_end)
{
	struct kcpu *k = &s->kcpu[c];
	struct orbit__sched_cpu now;
	if (orbit__sched_stats(s->sched, c, &now) != 0) {
		/* The page counts are filled anyway; the kernel's are not known
		 * (the CPU went away?): nothing new is said about them. */
		now.overrun = k->base.overrun + k->sent.overrun;
		now.dropped = k->base.dropped + k->sent.dropped;
		now.read_events = k->base.read_events + k->sent.read_events;
	}
	Orbit__KernelLoss l = ORBIT__KERNEL_LOSS__INIT;
	l.cpu = c;
	l.overrun = now.overrun - k->base.overrun;
	l.dropped = now.dropped - k->base.dropped;
	l.flagged_pages = now.flagged_pages - k->base.flagged_pages;
	l.stored_lost = now.stored_lost - k->base.stored_lost;
	l.read_events = now.read_events - k->base.read_events;
	l.unsent_pages = k->unsent;
	int zero = (l.overrun | l.dropped | l.flagged_pages | l.stored_lost | l.read_events |
	            l.unsent_pages) == 0;
	int same = k->any_sent && l.overrun == k->sent.overrun && l.dropped == k->sent.dropped &&
	           l.flagged_pages == k->sent.flagged_pages &&
	           l.stored_lost == k->sent.stored_lost && l.read_events == k->sent.read_events &&
	           l.unsent_pages == k->sent.unsent_pages;
	if (same || (zero && !k->any_sent) || (!at_end && zero))
		return;
	note_first(s);
	orbit__sw_kernel_loss(s->sw, &l);
	k->sent = l;
	k->any_sent = 1;
}

/* After a pass: a KernelLoss for each CPU whose pages showed loss since the
 * last one (the kernel flags the first page read after a gap, so a CPU
 * without a new flagged page has no new loss to say); at the end, the
 * totals of every CPU. */
static void send_kernel_losses(struct orbit__stream *s, int at_end)
{
	for (uint32_t c = 0; c < s->kcpus; c++) {
		struct orbit__sched_cpu now;
		if (!at_end) {
			/* The handle's page counts: no syscall. */
			orbit__sched_pages(s->sched, c, &now);
			if (now.flagged_pages - s->kcpu[c].base.flagged_pages ==
			        s->kcpu[c].sent.flagged_pages &&
			    s->kcpu[c].unsent == s->kcpu[c].sent.unsent_pages)
				continue;
		}
		kernel_loss(s, c, at_end);
	}
}

static void send_handshake(struct orbit__stream *s)
{
	char comm[64], host[256] = "", cmd[4096];
	read_file_line("/proc/self/comm", comm, sizeof comm);
	gethostname(host, sizeof host - 1);
	char *args[64];
	size_t nargs = 0;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, cmd, sizeof cmd - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n > 0) {
		cmd[n] = '\0';
		for (ssize_t i = 0; i < n && nargs < 64; i += (ssize_t)strlen(cmd + i) + 1)
			args[nargs++] = cmd + i;
	}
	uint64_t start[ORBIT_MAX_RINGS];
	for (uint32_t r = 0; r < s->rings; r++)
		start[r] = orbit__ledger_start(&s->ledger, r);
	Orbit__ClockDescription clock = ORBIT__CLOCK_DESCRIPTION__INIT;
	clock.source = s->clock->source;
	clock.ticks_per_second = orbit__clock_rate(s->clock);
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_VERSION;
	h.pid = (uint32_t)getpid();
	h.process_name = comm;
	h.host_name = host;
	h.n_command_line = nargs;
	h.command_line = args;
	h.agent_version = (char *)ORBIT_VERSION;
	h.clock = &clock;
	h.monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	h.realtime_ns = clock_ns(CLOCK_REALTIME);
	h.ring_count = s->rings;
	h.slots_per_ring = s->drain->seg->layout.slots_per_ring;
	h.record_size = ORBIT_RECORD_SIZE;
	h.token.data = (uint8_t *)s->cfg->token;
	h.token.len = s->cfg->token_len;
	h.n_ring_start = s->rings;
	h.ring_start = start;
	uint32_t pages = 0, page_size = 0;
	int overwrite;
	if (s->logs != NULL)
		orbit__logs_config(s->logs, &pages, &page_size, &overwrite);
	h.page_ring_count = s->ledger.page_rings;
	h.page_size = page_size;
	h.source_locations = 1;
	h.flight_size = s->cfg->flight ? s->drain->seg->layout.flight_size : 0; /* ORBIT_FLIGHT */
	h.acknowledgements = s->cfg->collector_set ? 1 : 0; /* output_tcp.c reads them */
	Orbit__ExecOf exec_of = ORBIT__EXEC_OF__INIT;
	if (s->cfg->exec_generation > 0) { /* an image after exec (exec_chain.h) */
		exec_of.generation = s->cfg->exec_generation;
		exec_of.monotonic_ns = s->cfg->exec_monotonic_ns;
		exec_of.capture = (char *)s->cfg->exec_capture;
		exec_of.process_name = (char *)s->cfg->exec_comm;
		h.exec_of = &exec_of;
	}
	orbit__ledger_handshake(&s->ledger, &h); /* which stream; the last one's fate */
	struct kernel_sched ks;
	handshake_sched(s, &h, &ks);
	/* The writer may find the formats too big for the frame: it says why
	 * in s->sched_off, which later Handshakes carry. */
	if (orbit__sw_handshake(s->sw, &h, s->sched_off, sizeof s->sched_off) == 1) {
		fprintf(stderr, "orbit: kernel scheduling is off: %s\n", s->sched_off);
		s->sched = NULL; /* the recorder is the agent's; its pages are not sent */
	}
	free(ks.events);
	free(ks.pevents);
}

/* ---- loss ---- */

static void send_page_losses(struct orbit__stream *s)
{
	for (uint32_t r = 0; r < s->ledger.page_rings; r++) {
		struct orbit__page_count now;
		if (!orbit__ledger_page_loss_due(&s->ledger, r, &now))
			continue;
		Orbit__PageLoss l = ORBIT__PAGE_LOSS__INIT;
		l.ring = r;
		l.records = now.records;
		l.pages = now.pages;
		note_first(s);
		orbit__sw_page_loss(s->sw, &l);
	}
}

static void add_loss(struct orbit__stream *s, uint32_t r, const struct orbit__ring_loss *now)
{
	Orbit__Loss l = ORBIT__LOSS__INIT;
	l.ring = r;
	l.lapped = now->lapped;
	l.writer_gone = now->gone;
	l.backstop = now->backstop;
	l.unsent = now->unsent;
	l.at_end = now->at_end;
	note_first(s);
	orbit__sw_loss(s->sw, &l);
}

/* Loss packets for the rings whose counts changed (at_end: the last ones). */
static void send_losses(struct orbit__stream *s, int at_end)
{
	for (uint32_t r = 0; r < s->rings; r++) {
		struct orbit__ring_loss now;
		if (orbit__ledger_loss_due(&s->ledger, r, at_end, &now))
			add_loss(s, r, &now);
	}
}

static void name_at_end(struct orbit__stream *s, uint32_t tid, const char *name)
{
	orbit__sw_thread_name(s->sw, tid, name);
}

/* At the end: every thread alive, named (docs/format.md 4.5, 3). */
static void send_thread_names(struct orbit__stream *s)
{
	note_first(s);
	each_thread(s, name_at_end);
}

/* ---- kernel marks (docs/format.md 4.10) ---- */

/* A KernelMark of t, remembered once it is in the stream. */
static void kernel_mark(struct orbit__stream *s, uint64_t t)
{
	note_first(s);
	if (orbit__sw_kernel_mark(s->sw, t) == 0)
		s->mark_sent = t;
}

/* After a pass's kernel pages (at_end: after the final one, recording off
 * before it): when the pass read every CPU's buffer to its end, a
 * KernelMark with the time the previous such read began (an event stamped
 * before it was committed, and read, by now); at the end, the time the
 * final read began, since every event there was is in. */
static void send_kernel_mark(struct orbit__stream *s, int at_end)
{
	uint64_t began, reads;
	int whole;
	if (s->sched == NULL)
		return;
	orbit__sched_last_read(s->sched, &began, &whole, &reads);
	if (at_end) {
		if (whole && began > s->mark_sent)
			kernel_mark(s, began);
		return;
	}
	if (reads == s->mark_reads) /* no read this pass */
		return;
	s->mark_reads = reads;
	if (!whole)
		return;
	if (s->mark_from != 0)
		kernel_mark(s, s->mark_from);
	s->mark_from = began;
}

/* ---- call sites (docs/format.md 4.12) ---- */

/* Whether a is new to the stream, which then remembers it; 0 when the set
 * is full or out of memory (the site stays unnamed). */
static int site_first(struct orbit__stream *s, uint64_t a)
{
	struct sites *t = &s->sites;
	if (t->n + 1 > t->cap / 2) {
		if (t->n >= SITES_MAX)
			return 0;
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		uint64_t *na = calloc(cap, sizeof *na);
		if (na == NULL)
			return 0;
		for (uint32_t i = 0; i < t->cap; i++) {
			uint64_t v = t->addr[i];
			if (v == 0)
				continue;
			uint32_t j = (uint32_t)((v * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
			while (na[j] != 0)
				j = (j + 1) & (cap - 1);
			na[j] = v;
		}
		free(t->addr);
		t->addr = na;
		t->cap = cap;
	}
	uint32_t j = (uint32_t)((a * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
	while (t->addr[j] != 0) {
		if (t->addr[j] == a)
			return 0;
		j = (j + 1) & (t->cap - 1);
	}
	t->addr[j] = a;
	t->n++;
	return 1;
}

/* A new stream, or a frame that will never arrive: every site is sent
 * again before the next record that names it. */
static void sites_forget(struct orbit__stream *s)
{
	if (s->sites.addr != NULL)
		memset(s->sites.addr, 0, s->sites.cap * sizeof *s->sites.addr);
	s->sites.n = 0;
}

static void sites_flush(struct orbit__stream *s, struct site_list *l)
{
	if (l->n == 0)
		return;
	note_first(s);
	if (orbit__sw_locations(s->sw, (const Orbit__SourceLocation *const *)l->p, l->n) != 0)
		sites_forget(s); /* not sent: named again before their next records */
	l->n = 0;
}

static void site_note(struct orbit__stream *s, struct site_list *l, uint64_t a)
{
	if (a == 0 || !site_first(s, a))
		return;
	struct orbit__site_text *t = &l->text[l->n];
	if (orbit__site_resolve(a, t) != 0)
		return; /* not a descriptor: remembered, never sent */
	Orbit__SourceLocation *e = &l->e[l->n];
	orbit__source_location__init(e);
	e->site = a;
	e->file = t->file;
	e->line = t->line;
	e->function = t->function;
	l->p[l->n] = e;
	if (++l->n == sizeof l->e / sizeof l->e[0])
		sites_flush(s, l);
}

static struct site_list *site_list(struct orbit__stream *s)
{
	s->list.n = 0;
	return &s->list;
}

/* Scope-ring records: a head with flag bit 2 names its site in the first 8
 * bytes of its name area (format/record.h). */
static void sites_of_records(struct orbit__stream *s, const uint8_t *records, uint32_t n)
{
	struct site_list *l = NULL;
	uint64_t last = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = records + (size_t)i * ORBIT_RECORD_SIZE;
		if (!(r[21] & ORBIT_REC_FLAG_SITE) || !orbit__record_has_name(r[20]))
			continue;
		uint64_t a = orbit__le64(r + 24);
		if (a == last)
			continue;
		last = a;
		if (l == NULL)
			l = site_list(s);
		site_note(s, l, a);
	}
	if (l != NULL)
		sites_flush(s, l);
}

/* A page of log records (logs.h): the records it holds, and the sites its
 * ORBIT_LOG lines name (type 3: the address after the header), sent before
 * the page when sending is on. */
static uint64_t page_records(struct orbit__stream *s, const uint8_t *page, size_t len,
                             int send_sites)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	struct site_list *l = NULL;
	uint64_t n = 0;
	if (orbit__ftrace_open(&it, page, len, &h) == 0)
		while (orbit__ftrace_next(&it, &rec) == 1) {
			n++;
			if (!send_sites || rec.len < ORBIT__LOGS_HEADER + 8 ||
			    orbit__le16(rec.data) != ORBIT__LOGS_LINE_AT)
				continue;
			if (l == NULL)
				l = site_list(s);
			site_note(s, l, orbit__le64(rec.data + ORBIT__LOGS_HEADER));
		}
	if (l != NULL)
		sites_flush(s, l);
	return n;
}

/* ---- the stream on its output ---- */

static void tracing_off(struct orbit__stream *s)
{
	atomic_store_explicit(&s->drain->seg->control->capture, 0, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
}

static void begin_now(struct orbit__stream *s, uint64_t now_ms)
{
	s->begin_due = 0;
	orbit__ledger_begin(&s->ledger);
	s->open = 1;
	s->last_frame_ms = s->now_ms = now_ms;
	s->untrusted0 = orbit__clock_untrusted(s->clock);
	s->resets0 = orbit__clock_resets(s->clock);
	sites_forget(s);
	s->mark_from = s->mark_sent = 0;
	s->mark_reads = 0;
	if (s->sched != NULL) { /* reads before the stream say nothing of it */
		uint64_t began;
		int whole;
		orbit__sched_last_read(s->sched, &began, &whole, &s->mark_reads);
	}
	s->names_ms = now_ms;
	s->nnames = 0;
	send_handshake(s); /* it may find the formats too big: s->sched is NULL then */
	kernel_begin(s);
}

/* A new stream begins where the drain stands: its Handshake frame goes out.
 * With ORBIT_SCHED, the first one waits for orbit__stream_sched (the
 * Handshake says whether kernel events follow); until then none is open. */
static void begin(struct orbit__stream *s)
{
	uint64_t now_ms = uv_now(s->out->loop);
	if (s->sched_wait) {
		s->begin_due = 1;
		s->begin_ms = now_ms;
		return;
	}
	begin_now(s, now_ms);
}

/* The stream broke (its output is gone): what is not in a finished frame
 * is unsent. */
static void abort_stream(struct orbit__stream *s)
{
	s->begin_due = 0;
	if (!s->open)
		return;
	s->open = 0;
	orbit__sw_abort(s->sw); /* on_lost: its records are unsent */
	sites_forget(s);
}

static int idle(const struct orbit__stream *s)
{
	return s->out->ops->pending(s->out) == 0;
}

static void check_idle(struct orbit__stream *s)
{
	if (s->idle_cb != NULL && idle(s)) {
		void (*cb)(void *) = s->idle_cb;
		s->idle_cb = NULL;
		cb(s->idle_ctx);
	}
}

/* The queue fell under its limit after holding the drain back. */
static void check_room(struct orbit__stream *s)
{
	if (s->blocked && s->out->ops->pending(s->out) < s->cfg->send_buffer) {
		s->blocked = 0;
		s->ev->can_drain(s->ev->ctx);
	}
}

static void on_ready(void *ctx, struct orbit__output *o)
{
	(void)o;
	struct orbit__stream *s = ctx;
	abort_stream(s); /* one open that never answered is over (a fallback) */
	s->answered = 0;
	s->blocked = 0;
	begin(s);
}

static void on_settled(void *ctx, struct orbit__output *o, uint64_t seq, int ok)
{
	(void)o;
	struct orbit__stream *s = ctx;
	orbit__ledger_settled(&s->ledger, seq, ok);
	if (ok && !s->answered && s->open) {
		/* The destination has the open stream's Handshake: records may
		 * flow, the first pass at once. */
		s->answered = 1;
		s->streams++;
		orbit__ledger_answered(&s->ledger);
		s->ev->can_drain(s->ev->ctx);
	}
	check_room(s);
}

static void on_broken(void *ctx, struct orbit__output *o, int fatal, const struct orbit__fate *fate)
{
	(void)o;
	struct orbit__stream *s = ctx;
	if (fate->late && s->open && s->answered)
		orbit__sw_cut(s->sw); /* the open frame's records go with the others */
	abort_stream(s);
	s->last = *fate;
	s->last.kept = NULL; /* valid during the call only */
	s->last.n_kept = 0;
	orbit__ledger_died(&s->ledger, fate, s->answered);
	s->answered = 0;
	if (fatal) {
		s->dead = 1;
		tracing_off(s);
	}
	check_idle(s);
}

static void on_idle(void *ctx, struct orbit__output *o)
{
	(void)o;
	check_idle(ctx);
}

static void on_unreachable(void *ctx, struct orbit__output *o)
{
	(void)o;
	struct orbit__stream *s = ctx;
	if (s->ev->gone != NULL)
		s->ev->gone(s->ev->ctx);
}

/* ---- the interface ---- */

int orbit__stream_new(struct orbit__stream **out, const struct orbit__config *cfg,
                      struct orbit__drain *drain, struct orbit__clock_conv *clock,
                      struct orbit__logs *logs, struct orbit__output *o,
                      const struct orbit__stream_events *ev)
{
	*out = NULL;
	struct orbit__stream *s = calloc(1, sizeof *s);
	if (s == NULL)
		return -ENOMEM;
	s->cfg = cfg;
	s->drain = drain;
	s->clock = clock;
	s->logs = logs;
	s->out = o;
	s->ev = ev;
	s->rings = drain->seg->layout.ring_count;
	s->sched_wait = cfg->sched; /* the agent thread says how it went */
	int err = orbit__ledger_init(&s->ledger, drain, logs);
	if (err) {
		free(s);
		return err;
	}
	const struct orbit__sw_sink to = {
	    .ctx = s, .frame = on_frame, .lost = on_lost, .name = thread_name_of};
	s->sw = orbit__sw_new(cfg->zstd_level, ORBIT_FRAME_TARGET, &to);
	if (s->sw == NULL) {
		orbit__stream_free(s);
		return -ENOMEM;
	}
	s->out_ev = (struct orbit__output_events){.ctx = s,
	                                          .ready = on_ready,
	                                          .settled = on_settled,
	                                          .broken = on_broken,
	                                          .idle = on_idle,
	                                          .unreachable = on_unreachable};
	o->ev = &s->out_ev;
	err = o->ops->start(o);
	if (err < 0) {
		orbit__stream_free(s);
		return err;
	}
	*out = s;
	if (err == 0) /* ready now: a file */
		on_ready(s, o);
	return 0;
}

void orbit__stream_free(struct orbit__stream *s)
{
	if (s == NULL)
		return;
	orbit__sw_free(s->sw);
	orbit__ledger_free(&s->ledger);
	free(s->sites.addr);
	free(s->kcpu);
	free(s);
}

void orbit__stream_sched(struct orbit__stream *s, struct orbit__sched *sched, const char *off)
{
	s->sched = sched;
	snprintf(s->sched_off, sizeof s->sched_off, "%s", sched == NULL && off ? off : "");
	s->sched_wait = 0;
	if (s->begin_due)
		begin_now(s, s->begin_ms);
}

int orbit__stream_ready(struct orbit__stream *s, int final)
{
	if (!s->open || !s->answered)
		return 0;
	if (final || s->out->ops->pending(s->out) < s->cfg->send_buffer)
		return 1;
	s->blocked = 1; /* the settlement that makes room brings the next pass */
	return 0;
}

int orbit__stream_kernel_page(struct orbit__stream *s, uint32_t cpu, const uint8_t *page,
                              size_t len)
{
	if (!s->open || s->sched == NULL)
		return -ENOTCONN;
	note_first(s);
	int err = orbit__sw_kernel_page(s->sw, cpu, page, len);
	if (err != 0 && cpu < s->kcpus)
		s->kcpu[cpu].unsent++;
	return err;
}

void orbit__stream_records(struct orbit__stream *s, uint32_t ring, uint64_t first,
                           const uint8_t *records, uint32_t n)
{
	if (!s->open)
		return;
	sites_of_records(s, records, n);
	note_first(s);
	uint32_t framed = orbit__sw_records(s->sw, ring, first, records, n);
	if (framed < n) /* no memory: drained, never sent */
		orbit__ledger_unsent(&s->ledger, ring, n - framed);
}

void orbit__stream_page(struct orbit__stream *s, uint32_t ring, const uint8_t *page, size_t len)
{
	orbit__ledger_page_read(&s->ledger, ring, page_records(s, page, len, s->open));
	if (!s->open)
		return;
	note_first(s);
	orbit__sw_log_page(s->sw, ring, page, len);
}

void orbit__stream_pass_done(struct orbit__stream *s, int cut)
{
	if (!s->open)
		return;
	uint64_t now_ms = uv_now(s->out->loop);
	s->now_ms = now_ms;
	/* A flight ring keeps only the newest frames: the stream names its
	 * sites again every second or 32 frames (at most 10 times a second),
	 * so that the frames a dump finds name the sites their records carry
	 * (docs/format.md 4.12). */
	uint64_t since = now_ms - s->sites_since_ms;
	if (s->cfg->flight && since >= SITES_FLIGHT_MIN_MS &&
	    (since >= SITES_FLIGHT_MS ||
	     orbit__sw_seq(s->sw) - s->sites_seq >= SITES_FLIGHT_FRAMES)) {
		sites_forget(s);
		orbit__sw_forget_names(s->sw); /* and the threads, the same way (4.5) */
		s->sites_since_ms = now_ms;
		s->sites_seq = orbit__sw_seq(s->sw);
	}
	send_kernel_mark(s, 0);
	names_again(s, now_ms);
	send_losses(s, 0);
	send_page_losses(s);
	send_kernel_losses(s, 0);
	/* A quiet process still says it is there, before the collector's idle
	 * timeout: its loss so far, which changes nothing for a reader. */
	if (orbit__sw_pending(s->sw) == 0 && now_ms - s->last_frame_ms >= KEEPALIVE_MS) {
		struct orbit__ring_loss now = orbit__ledger_loss(&s->ledger, 0);
		add_loss(s, 0, &now);
	}
	if (cut || now_ms - s->frame_since_ms >= FRAME_AGE_MS)
		orbit__sw_cut(s->sw);
	if (s->framed)
		s->last_frame_ms = now_ms;
	s->framed = 0;
	/* A quiet stream holds no buffers: they grow again with traffic. */
	if (now_ms - s->last_frame_ms >= TRIM_MS)
		orbit__sw_trim(s->sw);
}

void orbit__stream_end(struct orbit__stream *s)
{
	if (!s->open)
		return;
	if (!s->answered) { /* nothing in it but its Handshake */
		abort_stream(s);
		return;
	}
	send_thread_names(s);
	send_losses(s, 1);
	send_page_losses(s);
	send_kernel_mark(s, 1);
	send_kernel_losses(s, 1);
	uint64_t claimed[ORBIT_MAX_RINGS];
	for (uint32_t r = 0; r < s->rings; r++)
		claimed[r] = orbit__ledger_claimed(&s->ledger, r);
	uint32_t prings = s->ledger.page_rings;
	uint64_t *reserved = calloc(prings ? prings : 1, sizeof *reserved);
	for (uint32_t r = 0; reserved != NULL && r < prings; r++)
		reserved[r] = orbit__ledger_page_now(&s->ledger, r).reserved;
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.n_claimed_per_ring = s->rings;
	e.claimed_per_ring = claimed;
	e.n_reserved_per_page_ring = reserved != NULL ? prings : 0;
	e.reserved_per_page_ring = reserved;
	/* The clock's trouble during this stream (format.md 4.8). */
	e.untrusted_times = orbit__clock_untrusted(s->clock) - s->untrusted0;
	e.clock_resets = orbit__clock_resets(s->clock) - s->resets0;
	/* The earliest event the capture holds: not known with a flight ring,
	 * whose oldest frames a dump may not find (format.md 4.8). */
	e.first_ns = s->cfg->flight ? 0 : orbit__sw_first_ns(s->sw);
	note_first(s);
	orbit__sw_end(s->sw, &e); /* the frame it ends goes out */
	free(reserved);
	s->open = 0;
	s->out->ops->end(s->out);
}

void orbit__stream_on_idle(struct orbit__stream *s, void (*done)(void *ctx), void *ctx)
{
	s->idle_cb = done;
	s->idle_ctx = ctx;
	check_idle(s);
}

void orbit__stream_report(const struct orbit__stream *s, struct orbit__stream_report *r)
{
	*r = (struct orbit__stream_report){.dead = s->dead,
	                                   .streams = s->streams,
	                                   .open_answered = s->answered,
	                                   .unsent = orbit__ledger_unsent_total(&s->ledger),
	                                   .last = s->last,
	                                   .undelivered = orbit__ledger_undelivered(&s->ledger)};
}
