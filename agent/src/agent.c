/* agent.c — the agent thread; see agent.h. */
#include "agent.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "capture.h"
#include "clock.h"
#include "logs.h"
#include "transport.h"

#define MIN_CALIBRATION_NS 2000000ull /* first two pairs at least 2 ms apart */

struct run {
	uint32_t ring;
	uint32_t n;
	uint64_t first;
	size_t off;
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
	uv_timer_t timer;
	uv_async_t wake;
	uint64_t period_ms;
	struct orbit__segment *seg;
	struct orbit__drain drain;
	struct orbit__clock_conv clock;
	uint8_t *buf;
	size_t len, cap;
	struct run *runs;
	size_t nruns, capruns;
	int wedged; /* a stop timed out: the thread may still run the loop */
	uint64_t last_end[ORBIT__SEG_MAX_RINGS]; /* cursors at the last pass */
	uint64_t last_pass_ns;
} A = {.mu = PTHREAD_MUTEX_INITIALIZER};

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

static void collect(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx;
	size_t bytes = (size_t)n * ORBIT__RECORD_SIZE;
	if (A.len + bytes > A.cap || A.nruns == A.capruns) {
		size_t cap = A.cap ? A.cap : 1 << 16;
		while (cap < A.len + bytes)
			cap *= 2;
		size_t capruns = A.capruns ? A.capruns * 2 : 64;
		uint8_t *b = realloc(A.buf, cap);
		if (b != NULL)
			A.buf = b, A.cap = cap;
		struct run *r = realloc(A.runs, capruns * sizeof *r);
		if (r != NULL)
			A.runs = r, A.capruns = capruns;
		if (b == NULL || r == NULL || A.len + bytes > A.cap || A.nruns == A.capruns) {
			/* Out of memory: the records were drained and are lost. */
			A.drain.ring[ring].drained -= n;
			A.drain.ring[ring].lost_lapped += n;
			return;
		}
	}
	memcpy(A.buf + A.len, recs, bytes);
	struct run *last = A.nruns ? &A.runs[A.nruns - 1] : NULL;
	if (last != NULL && last->ring == ring && last->first + last->n == first &&
	    last->n + n <= ORBIT_BATCH_MAX) /* one batch on the wire: better columns */
		last->n += n;
	else
		A.runs[A.nruns++] =
		    (struct run){.ring = ring, .n = n, .first = first, .off = A.len};
	A.len += bytes;
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

static void on_timer(uv_timer_t *t);

/*
 * The next pass comes when the busiest ring is expected to be a quarter
 * full, from its claim rate since the last pass: between 1 ms and
 * ORBIT_DRAIN_MS. A ring written at 1 M events/s has 8 ms before 8192 slots
 * lap; a fixed 10 ms period would lose a fifth of it.
 */
static void schedule_next_pass(void)
{
	uint64_t now = orbit__monotonic_ns(), busiest = 0;
	for (uint32_t i = 0; i < A.seg->layout.ring_count; i++) {
		uint64_t end = A.drain.ring[i].end;
		if (end - A.last_end[i] > busiest)
			busiest = end - A.last_end[i];
		A.last_end[i] = end;
	}
	uint64_t elapsed = now - A.last_pass_ns, delay_ms = A.period_ms;
	A.last_pass_ns = now;
	if (busiest > 0 && elapsed > 0) {
		uint64_t quarter = A.seg->layout.slots_per_ring / 4;
		uint64_t ns = (uint64_t)((double)elapsed * (double)quarter / (double)busiest);
		delay_ms = ns / 1000000;
		if (delay_ms < 1)
			delay_ms = 1;
		if (delay_ms > A.period_ms)
			delay_ms = A.period_ms;
	}
	uv_timer_start(&A.timer, on_timer, delay_ms, 0);
}

/* One pass: drain, convert, hand out. final: the last pass of a stream;
 * all: log pages of any age go out (a flush). */
static void drain_pass(int final, int all)
{
	pthread_mutex_lock(&A.mu);
	struct orbit__sink sink = A.sink;
	pthread_mutex_unlock(&A.mu);

	mirror_capture_flag();
	/* With no stream, or a full queue, the rings are left alone: producers
	 * lap them and the loss is counted when draining resumes. */
	if (A.transport && !orbit__transport_ready(final))
		return;
	A.len = 0;
	A.nruns = 0;
	struct orbit__drain_result res;
	orbit__drain_all(&A.drain, collect, NULL, &res);
	/* The pair is taken after the copy: every record copied has ticks
	 * before it, so conversion interpolates (clock.h). */
	calibrate();
	struct orbit__clock_cursor cur;
	orbit__clock_cursor_init(&cur, &A.clock);
	for (size_t off = 0; off < A.len; off += ORBIT__RECORD_SIZE) {
		uint64_t t;
		memcpy(&t, A.buf + off, 8);
		t = orbit__clock_cursor_to_ns(&cur, t);
		memcpy(A.buf + off, &t, 8);
		if (orbit__clock_cursor_untrusted(&cur)) /* flags: byte 21 (format.md) */
			A.buf[off + 21] |= ORBIT__FLAG_TIME_UNTRUSTED;
	}
	for (size_t i = 0; i < A.nruns; i++) {
		const struct run *r = &A.runs[i];
		if (sink.records != NULL)
			sink.records(sink.ctx, r->ring, r->first, A.buf + r->off, r->n);
		if (A.transport)
			orbit__transport_records(r->ring, r->first, A.buf + r->off, r->n);
	}
	/* Log pages: those full, and those holding records for 100 ms; at the
	 * end of a stream everything. */
	orbit__logs_read(page_to_ns, &A.clock, on_page, &sink, all ? 0 : LOG_FLUSH_AGE_NS);
	if (A.transport)
		orbit__transport_pass_done();
	if (res.backstops)
		fprintf(stderr,
		        "orbit: %u event(s) claimed but unpublished for 30 s were dropped "
		        "(backstop)\n",
		        res.backstops);

	struct orbit__agent_stats st = {.ring_count = A.seg->layout.ring_count,
	                                .stalled_rings = res.stalled_rings};
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

static void on_timer(uv_timer_t *t)
{
	(void)t;
	drain_pass(0, 0);
	schedule_next_pass();
}

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
	uv_timer_stop(&A.timer);
	uv_close((uv_handle_t *)&A.timer, on_close);
	uv_close((uv_handle_t *)&A.wake, on_close);
}

static void stop_complete(void)
{
	flush_complete();
	close_handles();
}

static void on_wake(uv_async_t *w)
{
	(void)w;
	pthread_mutex_lock(&A.mu);
	uint64_t req = A.flush_req;
	int stop = A.stop_req;
	pthread_mutex_unlock(&A.mu);
	if (req == flushing && !stop)
		return; /* already served */
	flushing = req;
	drain_pass(stop, 1);
	if (!A.transport) {
		flush_complete();
		if (stop)
			close_handles();
		return;
	}
	if (stop)
		orbit__transport_end();
	/* Done once every frame so far is written. */
	orbit__transport_on_idle(stop ? stop_complete : flush_complete);
}

static void *agent_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "orbit-agent"); /* for top and perf */
	uv_run(&A.loop, UV_RUN_DEFAULT);
	uv_loop_close(&A.loop);
	pthread_mutex_lock(&A.mu);
	A.stopped = 1;
	pthread_cond_broadcast(&A.cv);
	pthread_mutex_unlock(&A.mu);
	return NULL;
}

static uint64_t env_ms(const char *name, uint64_t def, uint64_t max)
{
	static int said; /* once per process, not at every start */
	const char *s = getenv(name);
	if (s == NULL)
		return def;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*s == '\0' || *end != '\0' || v == 0 || v > max) {
		if (said++)
			return def;
		fprintf(stderr, "orbit: %s=%s is not a number of ms from 1 to %llu; using %llu\n",
		        name, s, (unsigned long long)max, (unsigned long long)def);
		return def;
	}
	return v;
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
		A.seg = seg;
	}
	A.period_ms = env_ms("ORBIT_DRAIN_MS", 10, 60000);
	int err = uv_loop_init(&A.loop);
	if (err) {
		fprintf(stderr, "orbit: cannot start the agent's event loop: %s; tracing is off\n",
		        uv_strerror(err));
		return err;
	}
	A.transport = orbit__transport_wanted();
	if (A.transport) {
		calibrate(); /* the handshake states the clock's rate */
		err = orbit__transport_start(&A.loop, &A.drain, &A.clock);
		if (err) {
			orbit__transport_close();
			uv_run(&A.loop, UV_RUN_DEFAULT);
			uv_loop_close(&A.loop);
			return err;
		}
	}
	uv_timer_init(&A.loop, &A.timer);
	uv_async_init(&A.loop, &A.wake, on_wake);
	uv_timer_start(&A.timer, on_timer, A.period_ms, 0);
	A.last_pass_ns = orbit__monotonic_ns();
	A.stop_req = 0;
	A.stopped = 0;
	err = -pthread_create(&A.thread, NULL, agent_main, NULL);
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

static int wait_until(int (*done)(void), uint32_t timeout_ms)
{
	struct timespec dl;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
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
	int err = wait_until(is_stopped, timeout_ms);
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
	        "orbit: the agent did not finish within %u ms; what it had not sent "
	        "is lost\n",
	        timeout_ms);
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
	pthread_mutex_init(&A.mu, NULL);
	init_cv();
	A.wedged = 0;
	A.running = 0;
	A.seg = NULL;
	A.sink = (struct orbit__sink){0};
}
