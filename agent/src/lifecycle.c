/*
 * lifecycle.c — the process's one agent root and its life; see
 * lifecycle.h.
 *
 * orbit_init makes what the process does not have yet, in order: the
 * segment (its geometry from the configuration read then, the producers'
 * clock chosen once), the log page rings (in the segment's area when it
 * has one for them), and starts the agent thread; then it turns the
 * capture flag on. Each part that fails says why in one line and leaves
 * tracing off; a later orbit_init tries again what is missing. The
 * configuration is read at every orbit_init: the agent takes a copy.
 *
 * When main ends with pthread_exit, the leader waits in its key's
 * destructor (leader_ends) until the host's other threads have ended, then
 * calls exit(0), as the last of them would have untraced: the agent's
 * thread, which has its own descriptor table (guest_files.h), never keeps
 * the process alive nor runs its exit handlers.
 *
 * At exit (atexit) the agent is stopped, waiting at most twice
 * ORBIT_FLUSH_TIMEOUT_MS, and the segment's name removed (its mapping stays
 * valid for threads still writing). In a forked child (pthread_atfork) the
 * root forgets everything of the parent's without touching it: tracing is
 * off, nothing is published, and orbit_init may start the child's own.
 * No signal handler is ever installed.
 */
#include "lifecycle.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "config.h"
#include "exec_chain.h"
#include "guest_checks.h"
#include "logs.h"
#include "orbit.h"
#include "producers.h"
#include "sched_tracefs.h"
#include "segment_create.h"

static struct orbit__root {
	/* orbit_init, orbit_shutdown and the exit handler, one at a time; the
	 * fields below are under it. */
	pthread_mutex_t lock;
	struct orbit__config_said said;
	struct orbit__config config; /* read by the last orbit_init */
	struct orbit__segment seg;   /* base NULL until made */
	struct orbit__logs *logs;    /* NULL until made */
	int hooks;                   /* the exit and fork handlers are registered */
	int leader_key_ok;           /* leader_key was made */
	pthread_key_t leader_key;    /* set on the leader: leader_ends */
	/* Set by the orbit_init that made the segment, under the lock; read by
	 * orbit_flush without it. Relaxed: a flush before that finds no agent
	 * running whatever it reads (orbit__agent_flush: ORBIT_EDISABLED), and
	 * after it the agent's mutex orders what the flush needs. */
	_Atomic uint32_t flush_timeout_ms;
	struct orbit__exec_link exec; /* the image before an exec, found by the first orbit_init */
	struct orbit__agent agent;
} root = {.lock = PTHREAD_MUTEX_INITIALIZER, .agent = ORBIT__AGENT_INIT};

struct orbit__agent *orbit__root_agent(void)
{
	return &root.agent;
}

/* The child of a fork must never write into the parent's rings, nor touch
 * what the parent's threads may have been inside: it forgets the segment,
 * the log page rings (left as the parent's copy) and the agent. */
static void after_fork_child(void)
{
	orbit__producers_forget();
	orbit__segment_forget(&root.seg); /* the parent's lock says nothing of us */
	memset(&root.seg, 0, sizeof root.seg);
	root.seg.fd = -1;
	root.logs = NULL;
	pthread_mutex_init(&root.lock, NULL);
	orbit__config_said_forget(&root.said);
	memset(&root.exec, 0, sizeof root.exec); /* the child is a process of its own */
	orbit__agent_forget(&root.agent);
}

static void at_exit(void)
{
	orbit_shutdown();
	pthread_mutex_lock(&root.lock);
	if (root.seg.base != NULL)
		orbit__segment_unlink(&root.seg); /* the mapping stays valid */
	pthread_mutex_unlock(&root.lock);
}

/* The leader's key destructor, which runs when main calls pthread_exit
 * (never at exit()): the leader, still in the host's descriptor table and
 * with the host's signal mask, waits until no other thread of the host's
 * runs, then exits with status 0 as the last one would have. Without
 * /proc it lets the leader end; the agent then notices it is alone
 * (agent.c). */
static void leader_ends(void *arg)
{
	(void)arg;
	const struct timespec tick = {0, 10000000};
	int others;
	while ((others = orbit__guest_others()) > 0)
		nanosleep(&tick, NULL);
	if (others == 0)
		exit(0);
}

/* This process's segment, made with the configuration read now. First the
 * tracefs instances dead processes left go, whether this one records the
 * kernel's scheduling or not (sched_tracefs.h guarantee 8). */
static int make_segment(void)
{
	orbit__sched_remove_stale(NULL, NULL);
	orbit__exec_take_over(&root.config, &root.exec);
	orbit__exec_apply(&root.exec, &root.config);
	const struct orbit__config *c = &root.config;
	struct orbit__seg_params p = {
	    .ring_count = c->rings, .slots_per_ring = c->slots_per_ring, .flight_size = c->flight};
	uint32_t page_size;
	orbit__logs_geometry(c, &p.page_ring_count, &p.page_ring_pages, &page_size);
	if (page_size != (uint32_t)sysconf(_SC_PAGESIZE))
		p.page_ring_count = 0; /* the segment holds pages of its own size */
	p.clock_source = orbit__clock_choose(c->clock);
	orbit__clock_kind = p.clock_source;
	atomic_store_explicit(&root.flush_timeout_ms, c->flush_timeout_ms, memory_order_relaxed);
	int err = orbit__segment_create(&p, &root.seg);
	if (err) {
		fprintf(stderr,
		        "orbit: cannot create the shared-memory segment: %s; "
		        "tracing is off\n",
		        orbit_strerror(err));
		return err;
	}
	orbit__producers_segment(&root.seg);
	if (!root.hooks) {
		pthread_atfork(NULL, NULL, after_fork_child);
		atexit(at_exit);
		root.leader_key_ok = pthread_key_create(&root.leader_key, leader_ends) == 0;
		root.hooks = 1;
	}
	if (root.leader_key_ok && syscall(SYS_gettid) == getpid())
		pthread_setspecific(root.leader_key, &root);
	return 0;
}

/* The log page rings, in the segment's area when it has one. A failure is
 * said (logs.c) and leaves logs off; scopes go on. */
static void make_logs(void)
{
	const struct orbit__seg_layout *y = &root.seg.layout;
	struct orbit__logs_memory mem = {0};
	if (y->page_ring_count > 0)
		mem = (struct orbit__logs_memory){.base = root.seg.base + y->pages_offset,
		                                  .stride = y->page_ring_stride,
		                                  .count = y->page_ring_count,
		                                  .pages = y->page_ring_pages,
		                                  .page_size = y->page_ring_page_size};
	if (orbit__logs_create(&root.logs, &root.config, orbit__clock_kind, &mem) == 0)
		orbit__producers_logs(root.logs);
}

ORBIT_EXPORT int orbit_init(void)
{
	int err = 0;
	pthread_mutex_lock(&root.lock);
	orbit__config_read(&root.config, &root.said);
	orbit__exec_apply(&root.exec, &root.config);
	if (root.seg.base == NULL && (err = make_segment()) != 0)
		goto out;
	if (root.logs == NULL)
		make_logs();
	if (root.logs != NULL)
		orbit__logs_start(root.logs); /* logs off on failure (said); scopes go on */
	err =
	    orbit__agent_start(&root.agent, &root.seg, orbit__clock_kind, &root.config, root.logs);
	if (err) /* the agent said why, in one line */
		goto out;
	/* Relaxed: the flag gates writing; what writers need was published by
	 * the release store of the segment, which they acquire. */
	atomic_store_explicit(&root.seg.control->capture, 1, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
out:
	pthread_mutex_unlock(&root.lock);
	return err;
}

ORBIT_EXPORT int orbit_flush(void)
{
	return orbit__agent_flush(
	    &root.agent, atomic_load_explicit(&root.flush_timeout_ms, memory_order_relaxed));
}

ORBIT_EXPORT void orbit_shutdown(void)
{
	pthread_mutex_lock(&root.lock);
	if (root.seg.base != NULL) {
		atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
		atomic_store_explicit(&root.seg.control->capture, 0, memory_order_relaxed);
		orbit__agent_stop(&root.agent, atomic_load_explicit(&root.flush_timeout_ms,
		                                                    memory_order_relaxed));
		if (root.logs != NULL)
			orbit__logs_stop(root.logs);
	}
	pthread_mutex_unlock(&root.lock);
}

__attribute__((constructor)) static void orbit_autostart(void)
{
	if (orbit__config_wants_output())
		orbit_init();
}
