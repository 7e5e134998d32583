/*
 * scope_stall.c — stalls decided by liveness, with real processes
 * (scope_ring.c guarantees 5 and 6). A child process traces with two rings;
 * thread S claims a slot and stops the whole process before publishing it,
 * after thread T (same ring as S) and thread Y (the other ring) published
 * events. The parent opens the child's segment as an outside reader:
 *   sigstop   the child is stopped: ring S waits at the claim (T's later
 *             events held back, nothing written off) while ring Y drains;
 *             SIGCONT: the claim is published and everything arrives, no loss.
 *   sigkill   the child is killed: the claim is written off at once, T's
 *             events arrive, claimed == drained + lost.
 *   backstop  the child stays stopped past a shortened backstop: exactly one
 *             event is dropped and reported.
 *   dying     the child publishes the claim and dies between the drain's
 *             read of the stamp and its liveness answer (the test's own
 *             open() lets it go when the drain opens /proc/PID/stat): the
 *             record is delivered, nothing written off (guarantee 6).
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"
#include "record.h"
#include "scope_ring.h"
#include "segment_create.h"

#define EVENTS 10u

/* ---- the child ---- */

struct child_thread {
	pthread_t thread;
	uint32_t ring;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int command; /* 0 wait, 1 emit EVENTS, 2 exit */
	int done;
};

static uint32_t ring_count;

static void *worker(void *arg)
{
	struct child_thread *w = arg;
	struct orbit__thread *t = orbit__self();
	pthread_mutex_lock(&w->mu);
	w->ring = orbit__ring_of_tid(t->tid, ring_count);
	w->done = 1;
	pthread_cond_broadcast(&w->cv);
	for (;;) {
		while (w->command == 0)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->command == 2)
			break;
		for (uint32_t i = 0; i < EVENTS; i++)
			ORBIT_UINT("after", i);
		w->command = 0;
		w->done = 2;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static void start_worker(struct child_thread *w)
{
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, NULL);
	w->command = 0;
	w->done = 0;
	pthread_create(&w->thread, NULL, worker, w);
	pthread_mutex_lock(&w->mu);
	while (w->done != 1)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

static void run_worker(struct child_thread *w)
{
	pthread_mutex_lock(&w->mu);
	w->command = 1;
	pthread_cond_broadcast(&w->cv);
	while (w->done != 2)
		pthread_cond_wait(&w->cv, &w->mu);
	pthread_mutex_unlock(&w->mu);
}

static _Noreturn void child(int ready_fd)
{
	setenv("ORBIT_RINGS", "2", 1);
	setenv("ORBIT_DRAIN_MS", "60000", 1);
	if (orbit_init() != 0)
		_exit(3);
	ring_count = 2;
	/* S is this thread; find a T on S's ring and a Y on the other. */
	struct orbit__thread *s = orbit__self();
	uint32_t ring_s = orbit__ring_of_tid(s->tid, ring_count);
	struct child_thread pool[64];
	struct child_thread *t = NULL, *y = NULL;
	for (int i = 0; i < 64 && (t == NULL || y == NULL); i++) {
		start_worker(&pool[i]);
		if (pool[i].ring == ring_s && t == NULL)
			t = &pool[i];
		else if (pool[i].ring != ring_s && y == NULL)
			y = &pool[i];
	}
	if (t == NULL || y == NULL)
		_exit(4);
	for (uint32_t i = 0; i < EVENTS; i++)
		ORBIT_UINT("before", i); /* S's own, published */
	uint64_t claim;
	struct orbit__slot *slot = orbit__claim(s, &claim);
#ifdef ORBIT__STAMP_CHECKED
	uint64_t check =
	    orbit__fill(slot, orbit__ticks(), ORBIT__VALUE_UINT, 4242, s->tid, "stuck", 5);
#else /* the protocol before the check (the same test builds against it) */
	orbit__fill(slot, orbit__ticks(), ORBIT__VALUE_UINT, 4242, s->tid, "stuck", 5);
#endif
	run_worker(t); /* claimed after S's claim, published */
	run_worker(y);
	uint32_t msg[2] = {ring_s, (uint32_t)claim};
	if (write(ready_fd, msg, sizeof msg) != sizeof msg)
		_exit(5);
	raise(SIGSTOP); /* the whole process stops with the claim unpublished */
#ifdef ORBIT__STAMP_CHECKED
	orbit__publish(slot, claim, check);
#else
	orbit__publish(slot, claim);
#endif
	_exit(0); /* no atexit: the parent owns the segment's name now */
}

/* ---- the parent ---- */

/*
 * Mode dying: the drain's liveness check opens /proc/PID/stat; this open()
 * (the executable's, ahead of libc's) first lets the stopped child go and
 * waits until it has published its claim and exited, so the process dies
 * after the drain read the claim's stamp and before it learns the answer.
 */
static pid_t dying_pid;

static int open_file(const char *path, int flags, va_list ap)
{
	mode_t m = 0;
	if (flags & (O_CREAT | O_TMPFILE))
		m = (mode_t)va_arg(ap, int);
	if (dying_pid > 0) {
		char want[64];
		snprintf(want, sizeof want, "/proc/%d/stat", (int)dying_pid);
		if (strcmp(path, want) == 0) {
			pid_t pid = dying_pid;
			int status;
			dying_pid = 0;
			kill(pid, SIGCONT);
			waitpid(pid, &status, 0);
		}
	}
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, m);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int fd = open_file(path, flags, ap);
	va_end(ap);
	return fd;
}

int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	int fd = open_file(path, flags, ap);
	va_end(ap);
	return fd;
}

struct count {
	uint64_t stuck, before, after, other;
};

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ring;
	(void)first;
	struct count *c = ctx;
	for (uint32_t i = 0; i < n; i++) {
		struct orbit_record rec;
		static const uint8_t none[ORBIT_RECORD_NAME];
		const uint8_t *nm = none;
		if (orbit__record_decode(recs + (size_t)i * ORBIT_RECORD_SIZE, &rec) == 0)
			orbit__record_head_name(&rec, &nm); /* after the call site, if any */
		const char *name = (const char *)nm;
		if (memcmp(name, "stuck", 5) == 0)
			c->stuck++;
		else if (memcmp(name, "before", 6) == 0)
			c->before++;
		else if (memcmp(name, "after", 5) == 0)
			c->after++;
		else
			c->other++;
	}
}

/* What a case works on: the stopped child, its segment, the drain. */
struct stall {
	pid_t pid;
	uint32_t ring_s;
	struct orbit__segment seg;
	struct orbit__drain d;
	struct orbit__drain_result res;
	struct count c;
};

static void drain(struct stall *t)
{
	orbit__drain_all(&t->d, on_records, &t->c, &t->res);
}

static void stall_sigstop(struct stall *t)
{
	int status;
	test_sleep_ms(200); /* a live process is waited for */
	drain(t);
	CHECK(t->d.ring[t->ring_s].stalled);
	CHECK_EQ_U64(orbit__ring_lost(&t->d.ring[t->ring_s]), 0);
	kill(t->pid, SIGCONT);
	CHECK(waitpid(t->pid, &status, 0) == t->pid && WIFEXITED(status) &&
	      WEXITSTATUS(status) == 0);
	drain(t);
	CHECK_EQ_U64(t->c.stuck, 1); /* the claim arrived */
	CHECK_EQ_U64(t->c.after, 2 * EVENTS);
	CHECK_EQ_U64(orbit__ring_lost(&t->d.ring[t->ring_s]), 0);
}

static void stall_sigkill(struct stall *t)
{
	int status;
	kill(t->pid, SIGKILL);
	CHECK(waitpid(t->pid, &status, 0) == t->pid && WIFSIGNALED(status));
	drain(t); /* at once, no backstop */
	CHECK_EQ_U64(t->d.ring[t->ring_s].lost_dead, 1);
	CHECK_EQ_U64(t->res.backstops, 0);
	CHECK_EQ_U64(t->c.stuck, 0);
	CHECK_EQ_U64(t->c.after, 2 * EVENTS);
}

static void stall_dying(struct stall *t)
{
	dying_pid = t->pid;
	drain(t);
	CHECK_EQ_U64(dying_pid, 0);  /* the liveness check ran, the child is gone */
	CHECK_EQ_U64(t->c.stuck, 1); /* published before the end: delivered */
	CHECK_EQ_U64(t->d.ring[t->ring_s].lost_dead, 0);
	CHECK_EQ_U64(t->c.after, 2 * EVENTS);
	CHECK(!t->d.ring[t->ring_s].stalled);
}

static void stall_backstop(struct stall *t)
{
	int status;
	test_sleep_ms(100);
	drain(t);
	CHECK(t->d.ring[t->ring_s].stalled); /* alive, before the backstop */
	test_sleep_ms(300);
	drain(t);
	CHECK_EQ_U64(t->res.backstops, 1); /* reported */
	CHECK_EQ_U64(t->d.ring[t->ring_s].lost_backstop, 1);
	CHECK_EQ_U64(t->c.after, 2 * EVENTS);
	kill(t->pid, SIGKILL);
	waitpid(t->pid, &status, 0);
}

static const struct stall_case {
	const char *name;
	void (*then)(struct stall *t);
	uint64_t backstop_ns; /* 0: the drain's own */
} stall_cases[] = {
    {"sigstop", stall_sigstop, 0},
    {"sigkill", stall_sigkill, 0},
    {"dying", stall_dying, 0},
    {"backstop", stall_backstop, 300000000ull},
};

/* The child stopped with S's claim unpublished; the case; then every
 * ring's account. */
static void run_stall(const void *entry)
{
	const struct stall_case *sc = entry;
	static struct stall t;
	int fds[2];
	CHECK(pipe(fds) == 0);
	t.pid = fork();
	CHECK(t.pid >= 0);
	if (t.pid == 0) {
		close(fds[0]);
		child(fds[1]);
	}
	close(fds[1]);
	uint32_t msg[2];
	CHECK(read(fds[0], msg, sizeof msg) == sizeof msg);
	t.ring_s = msg[0];
	uint32_t ring_y = 1 - t.ring_s;
	int status;
	CHECK(waitpid(t.pid, &status, WUNTRACED) == t.pid && WIFSTOPPED(status));

	char name[64];
	CHECK(orbit__segment_find(t.pid, name, sizeof name) == 0);
	CHECK(orbit__segment_open(name, &t.seg) == 0);
	shm_unlink(name);
	CHECK(t.seg.layout.ring_count == 2 && t.seg.layout.pid == (uint32_t)t.pid);

	orbit__drain_init(&t.d, &t.seg, 0);
	if (sc->backstop_ns != 0)
		t.d.backstop_ns = sc->backstop_ns;
	drain(&t);

	/* Ring Y flowed; ring S stopped at the claim: T's events held back. */
	CHECK_EQ_U64(t.d.ring[ring_y].drained, EVENTS);
	CHECK_EQ_U64(t.c.before, EVENTS);
	CHECK_EQ_U64(t.c.after, EVENTS); /* Y's only */
	CHECK_EQ_U64(t.c.stuck, 0);
	CHECK(t.d.ring[t.ring_s].stalled);
	CHECK_EQ_U64(t.res.stalled_rings, 1);
	CHECK_EQ_U64(orbit__ring_claimed(&t.seg, t.ring_s), 2 * EVENTS + 1);

	sc->then(&t);
	for (uint32_t r = 0; r < 2; r++)
		CHECK_EQ_U64(orbit__ring_claimed(&t.seg, r),
		             t.d.ring[r].drained + orbit__ring_lost(&t.d.ring[r]));
	CHECK_EQ_U64(t.c.other, 0);
	orbit__segment_close(&t.seg);
}

TEST_MAIN_SUITE(.family = TEST_FAMILY(stall_cases, run_stall))
