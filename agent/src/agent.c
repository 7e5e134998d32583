/*
 * agent.c — the agent thread; see agent.h.
 *
 * When passes run. Each scope ring's claim rate is measured at every pass
 * (claims since the last pass over the time since) and remembered with a
 * slow decay (RATE_FADE_NS): a quiet pass does not reset it, so a
 * producer that pauses and resumes at its old rate is still covered. The
 * next pass is planned for when the fastest-filling ring would be a quarter
 * full at its rate (counting what it still holds unread), at least
 * MIN_GAP_NS and at most ORBIT_DRAIN_MS later, on a timerfd armed to the
 * nanosecond (a libuv timer counts in milliseconds). A pass that filled its
 * staging area is followed by the next one at once. With a transport, the
 * first pass comes as soon as a stream begins; without one (a test sink,
 * or nothing), after ORBIT_DRAIN_MS.
 *
 * With ORBIT_SCHED the kernel's per-CPU buffers (sched_tracefs.h) count
 * too: each CPU's record bytes read per pass give its fill rate, remembered
 * the same way, and the next pass comes before the fastest-filling buffer
 * would be a quarter full. Each pass reads every CPU until it is empty (at
 * most one buffer's worth of pages per CPU; a pass cut short is followed by
 * the next at once). The recorder is opened on the agent thread before its
 * loop runs (35-45 ms in the kernel, docs/operations.md) and the first
 * Handshake waits for it (stream.h); a stop turns its tracing off, reads
 * what is left in the final pass and closes it once the stream has ended.
 *
 * What a pass holds. The drain copies straight into a staging area of
 * STAGE_RECORDS records (scope_ring.c), allocated at the first pass that has
 * records and freed after SHRINK_NS without any; the pass converts the times
 * there and hands the runs on. Memory is therefore bounded by the staging
 * area, the frame being built (stream.c) and the send queue
 * (ORBIT_SEND_BUFFER), whatever the producers do.
 */
#include "agent.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "capture.h"
#include "clock.h"
#include "config.h"
#include "logs.h"
#include "sched_tracefs.h"
#include "segment_create.h"
#include "segment_state.h"
#include "transport.h"

#define MIN_CALIBRATION_NS 2000000ull /* first two pairs at least 2 ms apart */
#define STAGE_RECORDS 32768u          /* one pass copies at most this many */
#define MIN_GAP_NS 200000ull          /* passes at most this close (and pairs) */
#define RATE_FADE_NS 500000000.0      /* a ring's rate fades to half in 0.5 s */
#define RATE_WINDOW_NS 500000.0       /* the shortest time a rate is measured over */
#define SHRINK_NS 2000000000ull       /* staging freed after 2 s without records */
#define TIMER_SLACK_NS 10000ul        /* the agent thread's wake-up slack */
#define FIRST_GAP_NS 1000000ull       /* the first planned gap; gaps at most double */
/* File descriptors the agent may need at once: its loop (epoll, libuv's
 * process-wide signal pipe and the loop's own, the wake-up eventfd), the
 * pass timer, the collector's socket or the capture file, the local copy,
 * and two at a time while it reads /proc or replaces a capture file
 * (docs/operations.md, Limits). */
#define AGENT_FDS 12

struct run {
	uint32_t ring;
	uint32_t n;
	uint64_t first;
	const uint8_t *records;
};

static struct {
	pthread_mutex_t mu; /* guards the fields up to stats; cv signals them */
	pthread_cond_t cv;
	int running;
	int transport; /* a collector or capture file receives the records */
	int stop_req;
	int stopped;
	uint64_t flush_req;
	uint64_t flush_done;
	struct orbit__sink sink;
	struct orbit__agent_stats stats;

	/* agent thread only */
	pthread_t thread;
	uv_loop_t loop;
	int tfd; /* the pass timer, or -1: uv_timer in ms */
	uv_poll_t tpoll;
	uv_timer_t timer;
	uv_async_t wake;
	uv_timer_t stop_timer; /* how long a stop waits for a stream */
	int stop_waiting;      /* a stop waits for a stream to begin */
	int stopping;          /* the stop is under way */
	int stop_streamed;     /* ... and its final pass went into a stream */
	uint64_t stop_at_ms;   /* when it began (the loop's clock) */
	int stop_done;         /* stop_complete ran */
	uint64_t period_ns;    /* ORBIT_DRAIN_MS */
	struct orbit__segment *seg;
	struct orbit__drain drain;
	struct orbit__clock_conv clock;
	uint8_t *stage;
	uint64_t stage_used_ns; /* when the staging area last held records */
	struct run runs[STAGE_RECORDS / 16 + ORBIT_MAX_RINGS];
	size_t nruns;
	int wedged; /* a stop timed out: the thread may still run the loop */
	uint64_t last_end[ORBIT_MAX_RINGS]; /* cursors at the last pass */
	double rate[ORBIT_MAX_RINGS];       /* claims per ns, remembered */
	uint64_t last_pass_ns;
	uint64_t last_gap_ns; /* the gap planned last */
	int planned;          /* a pass is armed */
	uint64_t lapped_at_start;
	struct orbit__config cfg; /* read at every start */

	/* kernel scheduling (ORBIT_SCHED): agent thread only */
	struct orbit__sched *sched;
	uint32_t sched_cpus;
	uint32_t sched_budget; /* pages a pass reads at most */
	double sched_quarter;  /* a quarter of one CPU's buffer, bytes */
	uint64_t *sched_seen;  /* per CPU: record bytes read, at the last plan */
	double *sched_rate;    /* per CPU: bytes per ns, remembered */
} A = {.mu = PTHREAD_MUTEX_INITIALIZER, .tfd = -1};

static pthread_once_t cv_once = PTHREAD_ONCE_INIT;

/* The condition variable waits on CLOCK_MONOTONIC: a clock step must not
 * stretch or cut a flush. */
static void init_cv(void)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&A.cv, &attr);
	pthread_condattr_destroy(&attr);
}

/* The drain tells where it put a run of records (in the staging area):
 * consecutive runs of one ring become one batch on the wire. */
static void collect(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx;
	struct run *last = A.nruns ? &A.runs[A.nruns - 1] : NULL;
	if (last != NULL && last->ring == ring && last->first + last->n == first &&
	    last->records + (size_t)last->n * ORBIT_RECORD_SIZE == recs &&
	    last->n + n <= ORBIT_BATCH_MAX) {
		last->n += n;
		return;
	}
	if (A.nruns == sizeof A.runs / sizeof A.runs[0]) {
		/* Runs break only at skips and stalls; a pass with more than
		 * this many (a pathological ring) counts the rest as lapped, as
		 * they were drained and cannot be kept. */
		A.drain.ring[ring].drained -= n;
		A.drain.ring[ring].lost_lapped += n;
		return;
	}
	A.runs[A.nruns++] = (struct run){.ring = ring, .n = n, .first = first, .records = recs};
}

static void calibrate(void)
{
	orbit__clock_calibrate(&A.clock);
	if (A.clock.source == ORBIT__CLOCK_MONOTONIC)
		return;
	/* A rate from two pairs a few µs apart would be far off. Bounded: a
	 * counter that resets at every pair must not hold the agent here. */
	for (int tries = 0;
	     tries < 200 &&
	     (A.clock.count < 2 ||
	      A.clock.pair[(A.clock.head + A.clock.count - 1) % ORBIT__CLOCK_PAIRS].ns -
	              A.clock.pair[A.clock.head].ns <
	          MIN_CALIBRATION_NS);
	     tries++) {
		struct timespec ts = {0, 500000};
		nanosleep(&ts, NULL);
		orbit__clock_calibrate(&A.clock);
	}
}

static uint64_t page_to_ns(void *ctx, uint64_t ticks)
{
	return orbit__clock_to_ns(ctx, ticks);
}

static void on_page(void *arg, uint32_t ring, const uint8_t *page, size_t len)
{
	const struct orbit__sink *sink = arg;
	if (sink->page != NULL)
		sink->page(sink->ctx, ring, page, len);
	if (A.transport)
		orbit__transport_page(ring, page, len);
}

#define LOG_FLUSH_AGE_NS 100000000ull /* a page holding records 100 ms goes out */

static void mirror_capture_flag(void)
{
	/* Relaxed both ways: the flag only gates whether producers write;
	 * the segment they write to was published by orbit_init. */
	uint32_t want = atomic_load_explicit(&A.seg->control->capture, memory_order_relaxed);
	if (atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed) != want)
		atomic_store_explicit(&orbit__capture_flag, want, memory_order_relaxed);
}

/* ---- the pass timer ---- */

static void on_tick(void);
static void finish_stop(void);

static void on_tfd(uv_poll_t *p, int status, int events)
{
	(void)p;
	(void)status;
	(void)events;
	uint64_t expirations;
	if (read(A.tfd, &expirations, sizeof expirations) != sizeof expirations)
		return; /* not due yet (re-armed meanwhile) */
	on_tick();
}

static void on_uv_timer(uv_timer_t *t)
{
	(void)t;
	on_tick();
}

/* The next pass, delay_ns from now. */
static void arm(uint64_t delay_ns)
{
	A.planned = 1;
	if (A.tfd >= 0) {
		uint64_t at = orbit__monotonic_ns() + (delay_ns ? delay_ns : 1);
		struct itimerspec its = {
		    .it_value = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)}};
		if (timerfd_settime(A.tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
			return;
	}
	uv_timer_start(&A.timer, on_uv_timer, (delay_ns + 999999) / 1000000, 0);
}

/*
 * When the next pass comes: for each ring, the time until it is a quarter
 * full at its remembered rate, counting the claims it holds unread now;
 * the soonest of them, between MIN_GAP_NS and ORBIT_DRAIN_MS.
 */
static uint64_t plan(uint64_t now)
{
	const uint32_t rings = A.seg->layout.ring_count;
	const double quarter = (double)(A.seg->layout.slots_per_ring / 4);
	double dt = (double)(now - A.last_pass_ns);
	double fade = RATE_FADE_NS / (RATE_FADE_NS + dt);
	double soonest = (double)A.period_ns;
	/* A rate seen over less than RATE_WINDOW_NS counts as over that long:
	 * a producer that writes in bursts would otherwise look faster than it
	 * is between two close passes, and the remembered rate is a maximum. */
	double window = dt > RATE_WINDOW_NS ? dt : RATE_WINDOW_NS;
	for (uint32_t i = 0; i < rings; i++) {
		const struct orbit__ring_state *s = &A.drain.ring[i];
		double seen = (double)(s->end - A.last_end[i]) / window;
		A.last_end[i] = s->end;
		A.rate[i] = seen > A.rate[i] * fade ? seen : A.rate[i] * fade;
		if (A.rate[i] <= 0)
			continue;
		/* What the ring holds now, not when the pass began: a long pass
		 * (a frame compressed, the thread descheduled) brings the next
		 * one forward. */
		uint64_t cursor = orbit__ring_claimed(A.seg, i);
		double unread = cursor > s->next ? (double)(cursor - s->next) : 0;
		double t = unread >= quarter ? 0 : (quarter - unread) / A.rate[i];
		if (t < soonest)
			soonest = t;
	}
	/* The kernel's buffers: a pass empties them, so each is a quarter
	 * full a quarter buffer's bytes at its rate from now. */
	for (uint32_t c = 0; A.sched != NULL && c < A.sched_cpus; c++) {
		struct orbit__sched_cpu k;
		if (orbit__sched_pages(A.sched, c, &k) != 0)
			continue;
		double seen = (double)(k.data_bytes - A.sched_seen[c]) / window;
		A.sched_seen[c] = k.data_bytes;
		A.sched_rate[c] = seen > A.sched_rate[c] * fade ? seen : A.sched_rate[c] * fade;
		if (A.sched_rate[c] > 0 && A.sched_quarter / A.sched_rate[c] < soonest)
			soonest = A.sched_quarter / A.sched_rate[c];
	}
	A.last_pass_ns = now;
	/* Gaps shrink at once but grow at most twofold a pass, from 1 ms at
	 * the start: a rate measured over a window the producer entered half
	 * way (the first pass of a program that writes flat out from
	 * orbit_init on) reads low, and the next pass must come before the
	 * ring laps, not ORBIT_DRAIN_MS later. */
	uint64_t gap = soonest < (double)MIN_GAP_NS ? MIN_GAP_NS : (uint64_t)soonest;
	if (gap > 2 * A.last_gap_ns)
		gap = 2 * A.last_gap_ns;
	A.last_gap_ns = gap;
	return gap;
}

/* ---- a pass ---- */

static void publish_stats(const struct orbit__drain_result *res)
{
	struct orbit__agent_stats st = {.ring_count = A.seg->layout.ring_count,
	                                .stalled_rings = res->stalled_rings};
	for (uint32_t i = 0; i < st.ring_count; i++) {
		const struct orbit__ring_state *s = &A.drain.ring[i];
		st.claimed += orbit__ring_claimed(A.seg, i);
		st.drained += s->drained;
		st.lost_lapped += s->lost_lapped;
		st.lost_dead += s->lost_dead;
		st.lost_backstop += s->lost_backstop;
	}
	pthread_mutex_lock(&A.mu);
	A.stats = st;
	pthread_mutex_unlock(&A.mu);
}

/* Claims still in the rings, never read. */
static uint64_t unread(void)
{
	uint64_t n = 0;
	for (uint32_t i = 0; i < A.seg->layout.ring_count; i++) {
		uint64_t c = orbit__ring_claimed(A.seg, i);
		n += c > A.drain.ring[i].next ? c - A.drain.ring[i].next : 0;
	}
	return n;
}

/* Copies what the rings hold (at most the staging area), converts it and
 * hands it on; 1 if the staging area filled and rings were left unread. */
static int drain_once(const struct orbit__sink *sink, struct orbit__drain_result *res)
{
	uint64_t now = orbit__monotonic_ns();
	if (A.stage == NULL) {
		A.stage = malloc((size_t)STAGE_RECORDS * ORBIT_RECORD_SIZE);
		A.stage_used_ns = now;
	}
	if (A.stage == NULL) { /* no memory: the rings keep it until there is */
		memset(res, 0, sizeof *res);
		return 0;
	}
	A.nruns = 0;
	orbit__drain_stage(&A.drain, A.stage, STAGE_RECORDS);
	orbit__drain_all(&A.drain, collect, NULL, res);
	size_t n = A.drain.stage_len;
	/* The pair is taken after the copy: every record copied has ticks
	 * before it, so conversion interpolates (clock.h). */
	calibrate();
	orbit__segment_state_clock(orbit__segment_state(A.seg), &A.clock); /* for a dump */
	if (n > 0) {
		A.stage_used_ns = now;
		struct orbit__clock_cursor cur;
		orbit__clock_cursor_init(&cur, &A.clock);
		uint8_t *p = A.stage, *end = A.stage + n * ORBIT_RECORD_SIZE;
		for (; p < end; p += ORBIT_RECORD_SIZE) {
			uint64_t t;
			memcpy(&t, p, 8);
			t = orbit__clock_cursor_to_ns(&cur, t);
			memcpy(p, &t, 8);
			if (orbit__clock_cursor_untrusted(&cur)) /* flags: byte 21 (format.md) */
				p[21] |= ORBIT__FLAG_TIME_UNTRUSTED;
		}
	}
	for (size_t i = 0; i < A.nruns; i++) {
		const struct run *r = &A.runs[i];
		if (sink->records != NULL)
			sink->records(sink->ctx, r->ring, r->first, r->records, r->n);
		if (A.transport)
			orbit__transport_records(r->ring, r->first, r->records, r->n);
	}
	if (n == 0 && now - A.stage_used_ns >= SHRINK_NS) {
		free(A.stage); /* a quiet agent holds no staging */
		A.stage = NULL;
	}
	return res->full;
}

/* ---- kernel scheduling (ORBIT_SCHED) ---- */

static int on_kernel_page(void *ctx, uint32_t cpu, const uint8_t *page, size_t len)
{
	(void)ctx;
	/* Verbatim into the stream; one it could not take is counted there
	 * (KernelLoss.unsent_pages), and the other CPUs are read all the same. */
	orbit__transport_kernel_page(cpu, page, len);
	return 0;
}

/* Reads the kernel's pages into the stream: at most a buffer's worth per
 * CPU, or, on the final pass (tracing already off, so the buffers hold at
 * most that), everything left. Returns 1 if the budget cut the reading
 * short. */
static int sched_pass(int final)
{
	int r = orbit__sched_read(A.sched, A.sched_budget, on_kernel_page, NULL);
	/* Bounded: should turning tracing off have failed, the kernel keeps
	 * writing and the final pass must still end. */
	for (int i = 0; final && r > 0 && i < 4; i++)
		r = orbit__sched_read(A.sched, A.sched_budget, on_kernel_page, NULL);
	return !final && r >= (int)A.sched_budget;
}

/* Opens the recorder, on the agent thread, and tells the stream: its
 * formats for the Handshake, or why there are none (one line, once per
 * process). */
static void sched_start(void)
{
	static int said;
	char why[ORBIT__SCHED_WHY];
	struct orbit__sched *s = NULL;
	if (!A.cfg.sched || !A.transport)
		return;
	int err = orbit__sched_open(NULL, &s, why, sizeof why);
	if (err == 0) {
		const struct orbit__sched_formats *f = orbit__sched_formats(s);
		A.sched_cpus = f->cpu_count;
		A.sched_seen = calloc(f->cpu_count, sizeof *A.sched_seen);
		A.sched_rate = calloc(f->cpu_count, sizeof *A.sched_rate);
		if (A.sched_seen == NULL || A.sched_rate == NULL) {
			orbit__sched_close(s);
			s = NULL;
			err = -ENOMEM;
			snprintf(why, sizeof why, "out of memory");
		}
	}
	if (err < 0) {
		free(A.sched_seen);
		free(A.sched_rate);
		A.sched_seen = NULL;
		A.sched_rate = NULL;
		if (!said)
			fprintf(stderr, "orbit: kernel scheduling is off: %s\n", why);
		said = 1;
		orbit__transport_sched(NULL, why);
		return;
	}
	const struct orbit__sched_formats *f = orbit__sched_formats(s);
	uint64_t buffer = (uint64_t)f->buffer_kb * 1024;
	uint64_t pages = f->page_size ? buffer / f->page_size : 1;
	A.sched_quarter = (double)buffer / 4;
	A.sched_budget = (uint32_t)((pages ? pages : 1) * f->cpu_count);
	A.sched = s;
	orbit__transport_sched(s, NULL);
}

/* After the stream's end: the instance removed (70-90 ms in the kernel). */
static void sched_close(void)
{
	orbit__sched_close(A.sched);
	A.sched = NULL;
	free(A.sched_seen);
	free(A.sched_rate);
	A.sched_seen = NULL;
	A.sched_rate = NULL;
}

/* One pass: drain, convert, hand out. final: the last pass of a stream (it
 * empties the rings, however many staging areas that takes); flush: log
 * pages of any age go out, and the frame is closed. Returns 1 if rings were
 * left unread. */
static int drain_pass(int final, int flush)
{
	pthread_mutex_lock(&A.mu);
	struct orbit__sink sink = A.sink;
	pthread_mutex_unlock(&A.mu);

	mirror_capture_flag();
	orbit__segment_state_names(orbit__segment_state(A.seg), orbit__monotonic_ns());
	/* With no stream, or a full queue, the rings are left alone: producers
	 * lap them and the loss is counted when draining resumes. */
	if (A.transport && !orbit__transport_ready(final))
		return 0;
	struct orbit__drain_result res, all = {0};
	/* A flush or a final pass reads everything there was when it began,
	 * staging area after staging area (not what producers add meanwhile:
	 * they could keep it here forever). */
	uint64_t rounds = final || flush ? unread() / STAGE_RECORDS + 1 : 1;
	int more;
	do {
		more = drain_once(&sink, &res);
		all.records += res.records;
		all.lost += res.lost;
		all.backstops += res.backstops;
		all.stalled_rings = res.stalled_rings;
	} while (more && --rounds > 0);
	/* Log pages: those full, and those holding records for 100 ms; at a
	 * flush everything. */
	orbit__logs_read(page_to_ns, &A.clock, on_page, &sink, flush ? 0 : LOG_FLUSH_AGE_NS);
	if (A.sched != NULL)
		more |= sched_pass(final);
	if (A.transport)
		orbit__transport_pass_done(flush || final);
	if (all.backstops)
		fprintf(stderr,
		        "orbit: %u event(s) claimed but unpublished for 30 s were dropped "
		        "(backstop)\n",
		        all.backstops);
	publish_stats(&all);
	return more;
}

static void on_tick(void)
{
	A.planned = 0;
	if (A.stopping)
		return;
	int more = drain_pass(0, 0);
	uint64_t now = orbit__monotonic_ns();
	uint64_t delay = plan(now);
	if (A.transport && !orbit__transport_ready(0))
		delay = A.period_ns; /* can_drain brings the next pass forward */
	arm(more ? 0 : delay);
}

/* The transport can take records again (a stream began, the queue has
 * room): a pass now. */
static void can_drain(void)
{
	if (A.stop_waiting) {
		finish_stop();
		return;
	}
	if (!A.stopping)
		arm(0);
}

static const struct orbit__transport_events transport_events = {.can_drain = can_drain};

/* ---- flush and stop ---- */

static void on_close(uv_handle_t *h)
{
	(void)h;
}

static uint64_t flushing; /* the flush request being completed */

static void flush_complete(void)
{
	pthread_mutex_lock(&A.mu);
	A.flush_done = flushing;
	pthread_cond_broadcast(&A.cv);
	pthread_mutex_unlock(&A.mu);
}

static void close_handles(void)
{
	if (A.transport)
		orbit__transport_close();
	if (A.tfd >= 0) {
		uv_close((uv_handle_t *)&A.tpoll, on_close);
		close(A.tfd);
		A.tfd = -1;
	}
	uv_timer_stop(&A.timer);
	uv_close((uv_handle_t *)&A.timer, on_close);
	uv_close((uv_handle_t *)&A.stop_timer, on_close);
	uv_close((uv_handle_t *)&A.wake, on_close);
	free(A.stage);
	A.stage = NULL;
	sched_close();
}

static void say_at_end(int streamed);

/* The stop is over: every frame settled, or the deadline gave up on them. */
static void stop_complete(void)
{
	if (A.stop_done)
		return;
	A.stop_done = 1;
	uv_timer_stop(&A.stop_timer);
	say_at_end(A.stop_streamed);
	flush_complete();
	close_handles();
}

/* The end-of-run lines: what could not be delivered, and why; and, when
 * producers overwrote records, the knob that gives the rings more room. */
static void say_at_end(int streamed)
{
	char why[512] = "";
	uint64_t undelivered = 0;
	/* Tracing stopped for a reason said then (refused, the file failed):
	 * nothing more to say. */
	if (A.transport &&
	    !orbit__transport_why_not(why, sizeof why, A.cfg.flush_timeout_ms, &undelivered))
		return;
	/* What the rings still hold, and what streams took that no collector
	 * acknowledged and no later stream accounted for. */
	uint64_t left = (streamed ? 0 : unread()) + undelivered;
	if (left > 0) {
		fprintf(stderr, "orbit: %llu event(s) were not delivered: %s\n",
		        (unsigned long long)left, why);
	}
	uint64_t lapped = 0, claimed = 0;
	for (uint32_t i = 0; i < A.seg->layout.ring_count; i++) {
		lapped += A.drain.ring[i].lost_lapped;
		claimed += orbit__ring_claimed(A.seg, i);
	}
	lapped -= A.lapped_at_start;
	if (lapped > 0) {
		uint64_t budget =
		    (uint64_t)A.seg->layout.ring_count * A.seg->layout.slots_per_ring * 64;
		int mib = budget % (1u << 20) == 0;
		fprintf(stderr,
		        "orbit: %llu of %llu event(s) (%.2f%%) were overwritten before the agent "
		        "read them; ORBIT_RING_BUDGET (now %llu%c) gives the rings more room\n",
		        (unsigned long long)lapped, (unsigned long long)claimed,
		        claimed ? 100.0 * (double)lapped / (double)claimed : 0.0,
		        (unsigned long long)(mib ? budget >> 20 : budget >> 10), mib ? 'M' : 'K');
	}
}

static void on_give_up(uv_timer_t *t);

/* The stop, once a stream is open or will not be: the final pass, the
 * stream's end, then the handles once every frame is written. */
static void finish_stop(void)
{
	A.stop_waiting = 0;
	uv_timer_stop(&A.stop_timer);
	int streamed = !A.transport || orbit__transport_ready(1);
	if (A.sched != NULL) /* nothing more is recorded; the final pass reads the rest */
		orbit__sched_stop(A.sched);
	if (streamed)
		drain_pass(1, 1);
	A.stop_streamed = streamed;
	if (!A.transport) {
		say_at_end(streamed);
		flush_complete();
		close_handles();
		return;
	}
	orbit__transport_end();
	/* Done once every frame is settled (acknowledged), or at the deadline:
	 * the host waits twice ORBIT_FLUSH_TIMEOUT_MS from the stop's start, and
	 * the agent gives up a little before, to count and say what is lost. */
	uint64_t budget = 2ull * A.cfg.flush_timeout_ms;
	uint64_t margin = A.cfg.flush_timeout_ms / 4 < 250 ? A.cfg.flush_timeout_ms / 4 : 250;
	uint64_t spent = uv_now(&A.loop) - A.stop_at_ms;
	uint64_t left = budget - margin > spent ? budget - margin - spent : 0;
	uv_timer_start(&A.stop_timer, on_give_up, left, 0);
	orbit__transport_on_idle(stop_complete);
}

static void on_give_up(uv_timer_t *t)
{
	(void)t;
	orbit__transport_give_up(); /* idle, and so stop_complete, follow */
	stop_complete();            /* at the latest now */
}

static void on_stop_timeout(uv_timer_t *t)
{
	(void)t;
	if (!A.stop_waiting)
		return;
	/* No stream came: the local copy, if there is one, takes it all. */
	orbit__transport_fallback();
	finish_stop();
}

static void on_wake(uv_async_t *w)
{
	(void)w;
	pthread_mutex_lock(&A.mu);
	uint64_t req = A.flush_req;
	int stop = A.stop_req;
	pthread_mutex_unlock(&A.mu);
	if (A.stopping || (req == flushing && !stop))
		return; /* already served, or the stop is under way */
	flushing = req;
	if (!stop) {
		drain_pass(0, 1);
		if (!A.transport)
			flush_complete();
		else /* done once every frame so far is written */
			orbit__transport_on_idle(flush_complete);
		return;
	}
	A.stopping = 1;
	uv_update_time(&A.loop);
	A.stop_at_ms = uv_now(&A.loop);
	if (A.tfd >= 0) {
		struct itimerspec off = {0};
		timerfd_settime(A.tfd, 0, &off, NULL);
	}
	uv_timer_stop(&A.timer);
	/* A stream still on its way (connecting, or between retries) is
	 * waited for, at most ORBIT_FLUSH_TIMEOUT_MS: a short program keeps
	 * its trace. */
	if (A.transport && !orbit__transport_ready(1) && orbit__transport_coming() &&
	    A.cfg.flush_timeout_ms > 0) {
		A.stop_waiting = 1;
		orbit__transport_hurry();
		uv_timer_start(&A.stop_timer, on_stop_timeout, A.cfg.flush_timeout_ms, 0);
		return;
	}
	if (A.transport && !orbit__transport_ready(1))
		orbit__transport_fallback();
	finish_stop();
}

/* ---- a guest in the host's process ---- */

/*
 * Whether want more file descriptors can be opened now. libuv's loop setup
 * calls abort() when it cannot make its process-wide signal pipe, so the
 * agent checks first (another thread of the host may take descriptors
 * between the check and the setup; then a setup failure is said, or, for
 * that one pipe, libuv aborts as it would for the host itself).
 */
static int fds_available(int want, int *got)
{
	int fd[AGENT_FDS];
	int n = 0;
	while (n < want && n < AGENT_FDS && (fd[n] = eventfd(0, EFD_CLOEXEC)) >= 0)
		n++;
	int err = n < want ? errno : 0;
	for (int i = 0; i < n; i++)
		close(fd[i]);
	*got = n;
	return err == 0 || (err != EMFILE && err != ENFILE);
}

static int check_fds(void)
{
	int got;
	if (fds_available(AGENT_FDS, &got))
		return 0;
	struct rlimit rl;
	char lim[32] = "?";
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof lim, "%llu", (unsigned long long)rl.rlim_cur);
	fprintf(stderr,
	        "orbit: only %d file descriptor(s) free (RLIMIT_NOFILE %s), the agent needs %d; "
	        "tracing is off\n",
	        got, lim, AGENT_FDS);
	return -EMFILE;
}

/*
 * The mask the agent thread starts with: every signal blocked but the faults
 * a thread causes itself. So a process-directed signal (kill(pid), a
 * terminal's SIGINT, SIGCHLD, the host's timers) is always delivered to one
 * of the host's threads and its handler never runs on the agent; SIGPIPE on
 * a connection the collector reset and SIGXFSZ past RLIMIT_FSIZE, which the
 * kernel sends to the writing thread, stay pending there and the write
 * fails with EPIPE or EFBIG instead. SIGSEGV, SIGBUS, SIGFPE, SIGILL,
 * SIGTRAP and SIGSYS stay open: blocking them would not stop a fault, only
 * skip the host's handler for it. glibc keeps its own two signals open.
 */
static void agent_sigmask(sigset_t *set)
{
	static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS};
	sigfillset(set);
	for (size_t i = 0; i < sizeof faults / sizeof faults[0]; i++)
		sigdelset(set, faults[i]);
}

static void *agent_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "orbit-agent"); /* for top and perf */
	/* This thread's timers wake it within 10 µs, not the default 50. */
	prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
	sched_start(); /* before the loop: the first Handshake waits for it */
	uv_run(&A.loop, UV_RUN_DEFAULT);
	uv_loop_close(&A.loop);
	pthread_mutex_lock(&A.mu);
	A.stopped = 1;
	pthread_cond_broadcast(&A.cv);
	pthread_mutex_unlock(&A.mu);
	return NULL;
}

int orbit__agent_start(struct orbit__segment *seg, uint32_t clock_source)
{
	pthread_once(&cv_once, init_cv);
	pthread_mutex_lock(&A.mu);
	int running = A.running, wedged = A.wedged;
	pthread_mutex_unlock(&A.mu);
	if (running)
		return 0;
	if (wedged) /* said when it happened */
		return -EBUSY;
	if (A.seg != seg) {
		orbit__drain_init(&A.drain, seg, 1);
		orbit__clock_init(&A.clock, clock_source);
		orbit__clock_calibrate(&A.clock);
		orbit__segment_state_clock(orbit__segment_state(seg), &A.clock);
		orbit__segment_state_forget();
		A.seg = seg;
		memset(A.last_end, 0, sizeof A.last_end);
	}
	memset(A.rate, 0, sizeof A.rate);
	A.last_gap_ns = FIRST_GAP_NS / 2;
	A.lapped_at_start = 0;
	for (uint32_t i = 0; i < seg->layout.ring_count; i++)
		A.lapped_at_start += A.drain.ring[i].lost_lapped;
	orbit__config_read(&A.cfg);
	A.period_ns = (uint64_t)A.cfg.drain_ms * 1000000ull;
	A.stop_waiting = A.stopping = A.stop_done = 0;
	int err = check_fds();
	if (err)
		return err;
	err = uv_loop_init(&A.loop);
	if (err) {
		fprintf(stderr, "orbit: cannot start the agent's event loop: %s; tracing is off\n",
		        uv_strerror(err));
		return err;
	}
	uv_timer_init(&A.loop, &A.timer);
	uv_timer_init(&A.loop, &A.stop_timer);
	err = uv_async_init(&A.loop, &A.wake, on_wake);
	if (err) {
		fprintf(stderr, "orbit: cannot start the agent's event loop: %s; tracing is off\n",
		        uv_strerror(err));
		uv_close((uv_handle_t *)&A.timer, on_close);
		uv_close((uv_handle_t *)&A.stop_timer, on_close);
		uv_run(&A.loop, UV_RUN_DEFAULT);
		uv_loop_close(&A.loop);
		return err;
	}
	A.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (A.tfd >= 0 && uv_poll_init(&A.loop, &A.tpoll, A.tfd) != 0) {
		close(A.tfd);
		A.tfd = -1;
	}
	if (A.tfd >= 0)
		uv_poll_start(&A.tpoll, UV_READABLE, on_tfd);
	A.last_pass_ns = orbit__monotonic_ns();
	A.transport = orbit__transport_wanted(&A.cfg);
	if (A.transport) {
		calibrate(); /* the handshake states the clock's rate */
		err =
		    orbit__transport_start(&A.loop, &A.cfg, &A.drain, &A.clock, &transport_events);
		if (err) {
			close_handles();
			uv_run(&A.loop, UV_RUN_DEFAULT);
			uv_loop_close(&A.loop);
			return err;
		}
	}
	if (!A.planned) /* with a stream already open, it is planned */
		arm(A.period_ns);
	A.stop_req = 0;
	A.stopped = 0;
	/* The thread inherits the mask: set it for the creation, then give
	 * the caller its own back. */
	sigset_t mask, old;
	agent_sigmask(&mask);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	err = -pthread_create(&A.thread, NULL, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "orbit: cannot start the agent thread: %s; tracing is off\n",
		        strerror(-err));
		close_handles();
		uv_run(&A.loop, UV_RUN_DEFAULT);
		uv_loop_close(&A.loop);
		return err;
	}
	pthread_mutex_lock(&A.mu);
	A.running = 1;
	pthread_mutex_unlock(&A.mu);
	return 0;
}

static int wait_until(int (*done)(void), uint64_t timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += (time_t)(timeout_ms / 1000);
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	int err = 0;
	while (!done() && err == 0)
		err = pthread_cond_timedwait(&A.cv, &A.mu, &dl);
	return done() ? 0 : -ETIMEDOUT;
}

static uint64_t flush_target;
static int flush_reached(void)
{
	return A.flush_done >= flush_target || A.stopped;
}

static int is_stopped(void)
{
	return A.stopped;
}

int orbit__agent_flush(uint32_t timeout_ms)
{
	pthread_mutex_lock(&A.mu);
	if (!A.running) {
		pthread_mutex_unlock(&A.mu);
		return ORBIT_EDISABLED;
	}
	flush_target = ++A.flush_req;
	uv_async_send(&A.wake);
	int err = wait_until(flush_reached, timeout_ms);
	pthread_mutex_unlock(&A.mu);
	return err;
}

void orbit__agent_stop(uint32_t timeout_ms)
{
	pthread_mutex_lock(&A.mu);
	if (!A.running) {
		pthread_mutex_unlock(&A.mu);
		return;
	}
	A.stop_req = 1;
	flush_target = ++A.flush_req;
	uv_async_send(&A.wake);
	/* At most timeout_ms for a stream to begin, then as long again to
	 * send what the rings hold. */
	int err = wait_until(is_stopped, 2ull * timeout_ms);
	A.running = 0;
	A.wedged = err != 0;
	pthread_mutex_unlock(&A.mu);
	if (err == 0) {
		pthread_join(A.thread, NULL);
		return;
	}
	/* Never block the host: the thread finishes on its own, and its loop
	 * is never reused. */
	pthread_detach(A.thread);
	fprintf(stderr,
	        "orbit: the agent did not finish within %llu ms; what it had not sent "
	        "is lost\n",
	        2ull * timeout_ms);
}

void orbit__agent_set_sink(const struct orbit__sink *sink)
{
	pthread_mutex_lock(&A.mu);
	A.sink = sink ? *sink : (struct orbit__sink){0};
	pthread_mutex_unlock(&A.mu);
}

void orbit__agent_stats(struct orbit__agent_stats *out)
{
	pthread_mutex_lock(&A.mu);
	*out = A.stats;
	pthread_mutex_unlock(&A.mu);
}

uint64_t orbit__agent_to_ns(uint64_t ticks)
{
	return orbit__clock_to_ns(&A.clock, ticks);
}

void orbit__agent_forget(void)
{
	if (A.transport)
		orbit__transport_forget();
	A.transport = 0;
	if (A.tfd >= 0)
		close(A.tfd); /* the parent's loop keeps its own */
	A.tfd = -1;
	A.stage = NULL; /* the parent's memory, copied: not ours to reuse */
	/* The recorder's descriptors are copies: closed, or the parent could
	 * never remove its instance (EBUSY) while this process lives. */
	orbit__sched_forget(A.sched);
	A.sched = NULL;
	A.sched_seen = NULL;
	A.sched_rate = NULL;
	pthread_mutex_init(&A.mu, NULL);
	init_cv();
	A.wedged = 0;
	A.running = 0;
	A.seg = NULL;
	A.sink = (struct orbit__sink){0};
}
