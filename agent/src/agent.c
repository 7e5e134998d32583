/*
 * agent.c — the agent thread; see agent.h.
 *
 * The thread, named orbit-agent, with its timer slack at 10 µs, first
 * leaves the process's descriptor table for one of its own
 * (guest_files.h), then makes its own uv_loop_t (uv_loop_init, never the
 * default loop) and its outputs there, and says to the starting thread
 * whether it could; the start returns then. The loop has:
 *
 *  - the pass timer: a timerfd (CLOCK_MONOTONIC, armed to the nanosecond)
 *    watched by a uv_poll, because a libuv timer counts in milliseconds and
 *    the passes are planned in microseconds (pass_plan.h); a uv_timer
 *    stands in if the timerfd cannot be made;
 *  - the wake pipe (guest_files.h) through which host threads wake it for
 *    a flush or a stop; each pass also looks for a request, so one whose
 *    wake-up could not be written waits at most a pass;
 *  - the stop's timer (agent_stop.h), and the outputs' handles.
 *
 * A pass that filled its staging area is followed by the next one at once.
 * With an output, the first pass comes as soon as a stream is answered (its
 * can_drain), and so does the next after the send queue held the drain
 * back; without one (a test sink, or nothing), after ORBIT_DRAIN_MS, so
 * that tests that drain the rings themselves can park the agent.
 *
 * A flush bumps a request counter and wakes the loop; the loop notes the
 * counter before its pass, so a flush returns only after a pass that began
 * after it was asked for, and, with an output, once every frame queued so
 * far is written. A stop that does not finish within
 * ORBIT_FLUSH_TIMEOUT_MS leaves the thread detached and the agent wedged:
 * its loop may still run, so it is never reused.
 *
 * The agent's thread never keeps the process alive: when main has ended
 * with pthread_exit and every other thread of the host has ended too
 * (orbit__guest_alone, asked at most every SLOW_CHECK_NS as passes come),
 * it stops as orbit_shutdown would stop it and then calls exit(0), which
 * is how the process would have ended untraced; the exit handlers run
 * (orbit's finds the agent stopped). As often, its stderr is made the
 * host's again (guest_files.h, 3.).
 */
#include "agent.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "guest_checks.h"
#include "segment_create.h"

#define TIMER_SLACK_NS 10000ul     /* the agent thread's wake-up slack */
#define SLOW_CHECK_NS 100000000ull /* now_and_then's: stderr, loss, the host's threads */

static void on_close(uv_handle_t *h)
{
	(void)h;
}

/* The condition variable waits on CLOCK_MONOTONIC: a clock step must not
 * stretch or cut a flush. Under mu. */
static void init_cv(struct orbit__agent *a)
{
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cv, &attr);
	pthread_condattr_destroy(&attr);
	a->cv_ready = 1;
}

/* ---- a pass, and the next one ---- */

static void publish_stats(struct orbit__agent *a, const struct orbit__drain_result *res)
{
	struct orbit__agent_stats st = {.ring_count = a->seg->layout.ring_count,
	                                .stalled_rings = res->stalled_rings};
	for (uint32_t i = 0; i < st.ring_count; i++) {
		const struct orbit__ring_state *s = &a->drain.ring[i];
		st.claimed += orbit__ring_claimed(a->seg, i);
		st.drained += s->drained;
		st.lost_lapped += s->lost_lapped;
		st.lost_dead += s->lost_dead;
		st.lost_backstop += s->lost_backstop;
	}
	pthread_mutex_lock(&a->mu);
	a->stats = st;
	pthread_mutex_unlock(&a->mu);
}

/* A pass with the sink as it is now; the totals published after it. */
static int pass(struct orbit__agent *a, int final, int flush)
{
	pthread_mutex_lock(&a->mu);
	struct orbit__sink sink = a->sink;
	pthread_mutex_unlock(&a->mu);
	struct orbit__drain_result res = {0};
	int more = orbit__pass_run(&a->pass, &sink, final, flush, &res);
	publish_stats(a, &res);
	return more;
}

static void on_tick(struct orbit__agent *a);

static void on_tfd(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	struct orbit__agent *a = p->data;
	uint64_t expirations;
	if (read(a->tfd, &expirations, sizeof expirations) != sizeof expirations)
		return; /* not due yet (re-armed meanwhile) */
	on_tick(a);
}

static void on_uv_timer(uv_timer_t *t)
{
	on_tick(t->data);
}

/* The next pass, delay_ns from now. */
static void arm(struct orbit__agent *a, uint64_t delay_ns)
{
	a->planned = 1;
	if (a->tfd >= 0) {
		uint64_t at = orbit__monotonic_ns() + (delay_ns ? delay_ns : 1);
		struct itimerspec its = {
		    .it_value = {(time_t)(at / 1000000000ull), (long)(at % 1000000000ull)}};
		if (timerfd_settime(a->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
			return;
	}
	uv_timer_start(&a->timer, on_uv_timer, (delay_ns + 999999) / 1000000, 0);
}

static void timer_off(struct orbit__agent *a)
{
	if (a->tfd >= 0) {
		struct itimerspec off = {0};
		timerfd_settime(a->tfd, 0, &off, NULL);
	}
	uv_timer_stop(&a->timer);
}

/* Now and then (at most every SLOW_CHECK_NS, as passes come): stderr made
 * the host's again, loss said as it happens, and whether the process's
 * last thread is this one: then the stop begins, as a host's
 * orbit_shutdown would begin it, and agent_main exits once the loop is
 * done. 1 if the stop began. */
static int now_and_then(struct orbit__agent *a)
{
	uint64_t now = orbit__monotonic_ns();
	if (now - a->slow_checked_ns < SLOW_CHECK_NS)
		return 0;
	a->slow_checked_ns = now;
	orbit__guest_files_follow(&a->files);
	orbit__agent_loss_line(&a->stop, now);
	if (!orbit__guest_alone())
		return 0;
	a->alone = 1;
	pthread_mutex_lock(&a->mu);
	a->stop_req = 1;
	pthread_mutex_unlock(&a->mu);
	orbit__agent_stop_begin(&a->stop);
	return 1;
}

static int serve(struct orbit__agent *a);

static void on_tick(struct orbit__agent *a)
{
	a->planned = 0;
	if (a->stop.stopping || now_and_then(a) || serve(a))
		return;
	int more = pass(a, 0, 0);
	uint64_t delay =
	    orbit__pass_plan_next(&a->plan, &a->drain, &a->sched, orbit__monotonic_ns());
	if (a->stream != NULL && !orbit__stream_ready(a->stream, 0))
		delay = a->plan.period_ns; /* can_drain brings the next pass forward */
	arm(a, more ? 0 : delay);
}

/* The stream can take records again (a stream was answered, the queue has
 * room): a pass now. */
static void can_drain(void *ctx)
{
	struct orbit__agent *a = ctx;
	if (a->stop.waiting)
		orbit__agent_stop_stream_came(&a->stop);
	else if (!a->stop.stopping)
		arm(a, 0);
}

/* No stream comes before exit: a stop waiting for one goes on now. */
static void stream_gone(void *ctx)
{
	struct orbit__agent *a = ctx;
	if (a->stop.waiting)
		orbit__agent_stop_stream_came(&a->stop);
}

/* ---- flush and stop ---- */

static void flush_complete(void *ctx)
{
	struct orbit__agent *a = ctx;
	pthread_mutex_lock(&a->mu);
	a->flush_done = a->flushing;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

static void close_handles(struct orbit__agent *a)
{
	orbit__stream_free(a->stream);
	if (a->out != NULL)
		a->out->ops->close(a->out); /* its handles close as the loop runs */
	a->stream = a->pass.stream = a->stop.stream = NULL;
	a->out = a->stop.out = NULL;
	if (a->tfd >= 0) {
		uv_close((uv_handle_t *)&a->tpoll, on_close);
		close(a->tfd);
		a->tfd = -1;
	}
	uv_timer_stop(&a->timer);
	uv_close((uv_handle_t *)&a->timer, on_close);
	orbit__agent_stop_close(&a->stop);
	if (a->files.wake_r >= 0)
		uv_close((uv_handle_t *)&a->wpoll, on_close);
	orbit__pass_free(&a->pass);
	orbit__sched_reader_close(&a->sched);
}

static void final_pass(void *ctx)
{
	pass(ctx, 1, 1);
}

static void stop_done(void *ctx)
{
	flush_complete(ctx);
	close_handles(ctx);
}

/* What host threads asked for and the loop has not begun: a flush (a pass
 * now), or the stop. 1 if the stop began. */
static int serve(struct orbit__agent *a)
{
	pthread_mutex_lock(&a->mu);
	uint64_t req = a->flush_req;
	int stop = a->stop_req;
	pthread_mutex_unlock(&a->mu);
	if (a->stop.stopping || (req == a->flushing && !stop))
		return 0; /* already served, or the stop is under way */
	a->flushing = req;
	if (!stop) {
		pass(a, 0, 1);
		if (a->stream == NULL)
			flush_complete(a);
		else /* done once every frame so far is written */
			orbit__stream_on_idle(a->stream, flush_complete, a);
		return 0;
	}
	timer_off(a);
	orbit__agent_stop_begin(&a->stop);
	return 1;
}

static void on_wake(uv_poll_t *p, int status, int events)
{
	(void)status;
	(void)events;
	struct orbit__agent *a = p->data;
	orbit__guest_files_woken(&a->files);
	serve(a);
}

/* ---- the thread ---- */

/* A setup that failed after the loop was made: its handles closed and the
 * loop run until they are. */
static int setup_failed(struct orbit__agent *a, int err)
{
	close_handles(a);
	uv_run(&a->loop, UV_RUN_DEFAULT);
	uv_loop_close(&a->loop);
	return err;
}

static int loop_failed(int err)
{
	fprintf(stderr, "orbit: cannot start the agent's event loop: %s; tracing is off\n",
	        uv_strerror(err));
	return err;
}

/* On the agent thread, in its own descriptor table: the loop, its timers,
 * the wake pipe's watcher, the outputs and the stream. 0, or a negative
 * errno after one stderr line. */
static int setup(struct orbit__agent *a)
{
	int err = orbit__guest_files_own(&a->files, a->seg->fd);
	if (err)
		return loop_failed(err);
	err = uv_loop_init(&a->loop);
	if (err)
		return loop_failed(err);
	uv_timer_init(&a->loop, &a->timer);
	a->timer.data = a;
	a->stop = (struct orbit__agent_stop){.cfg = &a->cfg,
	                                     .sched = &a->sched,
	                                     .drain = &a->drain,
	                                     .lapped_at_start = orbit__drain_lapped(&a->drain),
	                                     .ev = &a->stop_ev};
	a->stop_ev =
	    (struct orbit__stop_events){.ctx = a, .final_pass = final_pass, .done = stop_done};
	orbit__agent_stop_init(&a->stop, &a->loop);
	err = uv_poll_init(&a->loop, &a->wpoll, a->files.wake_r);
	if (err) {
		orbit__guest_files_close(&a->files); /* no watcher to close */
		return setup_failed(a, loop_failed(err));
	}
	a->wpoll.data = a;
	uv_poll_start(&a->wpoll, UV_READABLE, on_wake);
	a->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (a->tfd >= 0 && uv_poll_init(&a->loop, &a->tpoll, a->tfd) != 0) {
		close(a->tfd);
		a->tfd = -1;
	}
	if (a->tfd >= 0) {
		a->tpoll.data = a;
		uv_poll_start(&a->tpoll, UV_READABLE, on_tfd);
	}
	orbit__pass_plan_start(&a->plan, (uint64_t)a->cfg.drain_ms * 1000000ull, a->new_segment,
	                       orbit__monotonic_ns());
	a->planned = 0;
	if (orbit__config_has_output(&a->cfg)) {
		orbit__pass_calibrate(&a->pass); /* the handshake states the clock's rate */
		a->stream_ev = (struct orbit__stream_events){
		    .ctx = a, .can_drain = can_drain, .gone = stream_gone};
		err = orbit__output_composite(&a->out, &a->loop, &a->cfg, a->seg);
		if (err == 0)
			err = orbit__stream_new(&a->stream, &a->cfg, &a->drain, &a->clock,
			                        a->pass.logs, a->out, &a->stream_ev);
		if (err)
			return setup_failed(a, err);
		a->pass.stream = a->stop.stream = a->stream;
		a->stop.out = a->out;
	}
	if (!a->planned) /* with a stream already open, it is planned */
		arm(a, a->plan.period_ns);
	return 0;
}

static void *agent_main(void *arg)
{
	struct orbit__agent *a = arg;
	pthread_setname_np(pthread_self(), "orbit-agent"); /* for top and perf */
	/* This thread's timers wake it within 10 µs, not the default 50. */
	prctl(PR_SET_TIMERSLACK, TIMER_SLACK_NS, 0, 0, 0);
	int err = setup(a);
	pthread_mutex_lock(&a->mu);
	a->set_up = 1;
	a->set_up_err = err;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (err) {
		orbit__guest_files_close(&a->files);
		return NULL; /* the start joins it */
	}
	/* Before the loop: the first Handshake waits for it. */
	orbit__sched_reader_open(&a->sched, &a->cfg, a->stream);
	uv_run(&a->loop, UV_RUN_DEFAULT);
	uv_loop_close(&a->loop);
	orbit__guest_files_close(&a->files);
	pthread_mutex_lock(&a->mu);
	a->stopped = 1;
	if (a->alone)
		a->running = 0; /* the exit handler's stop finds nothing to stop */
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	if (a->alone)
		exit(0); /* as the process's last thread ending would have */
	return NULL;
}

/*
 * libuv's process-wide state (the signal lock pipe every loop's setup makes
 * once) made in the process's table, by a loop made and closed on this
 * host thread: made first on the agent's thread, it would be in the agent's
 * own table, out of reach of a host that uses libuv itself.
 */
static int libuv_shared_state(void)
{
	uv_loop_t l;
	int err = uv_loop_init(&l);
	if (err)
		return loop_failed(err);
	uv_loop_close(&l);
	return 0;
}

int orbit__agent_start(struct orbit__agent *a, struct orbit__segment *seg, uint32_t clock_source,
                       const struct orbit__config *cfg, struct orbit__logs *logs)
{
	pthread_mutex_lock(&a->mu);
	if (!a->cv_ready)
		init_cv(a);
	int running = a->running, wedged = a->wedged;
	pthread_mutex_unlock(&a->mu);
	if (running)
		return 0;
	if (wedged) /* said when it happened */
		return -EBUSY;
	a->new_segment = a->seg != seg;
	if (a->new_segment) {
		orbit__drain_init(&a->drain, seg, 1);
		orbit__clock_init(&a->clock, clock_source);
		orbit__clock_calibrate(&a->clock);
		orbit__segment_state_init(&a->state, orbit__segment_state(seg));
		orbit__segment_state_clock(&a->state, &a->clock);
		a->seg = seg;
	}
	a->cfg = *cfg;
	/* Field by field: the pass is too big for a compound literal on the
	 * host's stack. */
	a->pass.seg = seg;
	a->pass.drain = &a->drain;
	a->pass.clock = &a->clock;
	a->pass.state = &a->state;
	a->pass.logs = logs;
	a->pass.stream = NULL;
	a->pass.sched = &a->sched;
	a->pass.stage = NULL;
	a->pass.nruns = 0;
	if (a->new_segment)
		a->pass.old_any = 0; /* no reset seen on this segment's clock yet */
	int err = orbit__guest_check_fds();
	if (err == 0)
		err = libuv_shared_state();
	if (err)
		return err;
	a->files = (struct orbit__guest_files)ORBIT__GUEST_FILES_INIT;
	a->stop_req = 0;
	a->stopped = 0;
	a->set_up = 0;
	a->alone = 0;
	a->slow_checked_ns = 0;
	/* The thread inherits the mask: set it for the creation, then give
	 * the caller its own back. */
	sigset_t mask, old;
	orbit__guest_sigmask(&mask);
	pthread_sigmask(SIG_SETMASK, &mask, &old);
	err = -pthread_create(&a->thread, NULL, agent_main, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		fprintf(stderr, "orbit: cannot start the agent thread: %s; tracing is off\n",
		        strerror(-err));
		return err;
	}
	/* Its setup opens files and starts connecting, and waits for nothing. */
	pthread_mutex_lock(&a->mu);
	while (!a->set_up)
		pthread_cond_wait(&a->cv, &a->mu);
	err = a->set_up_err;
	a->running = err == 0;
	pthread_mutex_unlock(&a->mu);
	if (err) /* the thread said why, in one line */
		pthread_join(a->thread, NULL);
	return err;
}

/* Waits, under mu, until done(a) or timeout_ms passed. */
static int wait_until(struct orbit__agent *a, int (*done)(const struct orbit__agent *),
                      uint64_t timeout_ms)
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
	while (!done(a) && err == 0)
		err = pthread_cond_timedwait(&a->cv, &a->mu, &dl);
	return done(a) ? 0 : -ETIMEDOUT;
}

static int flush_reached(const struct orbit__agent *a)
{
	return a->flush_done >= a->flush_target || a->stopped;
}

static int is_stopped(const struct orbit__agent *a)
{
	return a->stopped;
}

int orbit__agent_flush(struct orbit__agent *a, uint32_t timeout_ms)
{
	pthread_mutex_lock(&a->mu);
	if (!a->running) {
		pthread_mutex_unlock(&a->mu);
		return ORBIT_EDISABLED;
	}
	a->flush_target = ++a->flush_req;
	orbit__guest_files_wake(&a->files);
	int err = wait_until(a, flush_reached, timeout_ms);
	pthread_mutex_unlock(&a->mu);
	return err;
}

void orbit__agent_stop(struct orbit__agent *a, uint32_t timeout_ms)
{
	pthread_mutex_lock(&a->mu);
	if (!a->running) {
		pthread_mutex_unlock(&a->mu);
		return;
	}
	a->stop_req = 1;
	a->flush_target = ++a->flush_req;
	orbit__guest_files_wake(&a->files);
	/* At most timeout_ms, for a stream to begin and to send what the
	 * rings hold (agent_stop.h). */
	int err = wait_until(a, is_stopped, timeout_ms);
	a->running = 0;
	a->wedged = err != 0;
	pthread_mutex_unlock(&a->mu);
	if (err == 0) {
		pthread_join(a->thread, NULL);
		return;
	}
	/* Never block the host: the thread finishes on its own, and its loop
	 * is never reused. */
	pthread_detach(a->thread);
	fprintf(stderr,
	        "orbit: the agent did not finish within %llu ms; what it had not sent "
	        "is lost\n",
	        (unsigned long long)timeout_ms);
}

void orbit__agent_set_sink(struct orbit__agent *a, const struct orbit__sink *sink)
{
	pthread_mutex_lock(&a->mu);
	a->sink = sink ? *sink : (struct orbit__sink){0};
	pthread_mutex_unlock(&a->mu);
}

void orbit__agent_stats(struct orbit__agent *a, struct orbit__agent_stats *out)
{
	pthread_mutex_lock(&a->mu);
	*out = a->stats;
	pthread_mutex_unlock(&a->mu);
}

void orbit__agent_forget(struct orbit__agent *a)
{
	/* The parent's outputs, its loop left alone. The descriptors the
	 * agent had are in the child only if it shared the process's table
	 * (guest_files.h): then the copies are closed; otherwise the numbers
	 * are the host's own. The stream's buffers stay allocated in the
	 * child: its zstd context may be mid-use in no thread of ours. */
	int copies = !a->files.own;
	if (a->out != NULL)
		a->out->ops->forget(a->out, copies);
	a->out = NULL;
	a->stream = NULL;
	if (copies && a->tfd >= 0)
		close(a->tfd); /* the parent's loop keeps its own */
	if (copies && a->files.wake_r >= 0) {
		close(a->files.wake_r);
		close(a->files.wake_w);
	}
	a->files = (struct orbit__guest_files)ORBIT__GUEST_FILES_INIT;
	a->tfd = -1;
	a->pass.stage = NULL; /* the parent's memory, copied: not ours to reuse */
	/* The recorder's descriptors, if the child has copies: closed, or the
	 * parent could never remove its instance (EBUSY) while this process
	 * lives. */
	orbit__sched_reader_forget(&a->sched);
	pthread_mutex_init(&a->mu, NULL);
	init_cv(a);
	a->wedged = 0;
	a->running = 0;
	a->seg = NULL;
	a->sink = (struct orbit__sink){0};
}
