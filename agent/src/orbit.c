/* orbit.c — the public entry points: init, flush, shutdown, the slow paths
 * of the write path, and the process-wide state the inline path reads. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "config.h"
#include "logs.h"
#include "orbit.h"
#include "segment_create.h"

/* Read by every macro (relaxed); written by orbit_init/orbit_shutdown and
 * by the agent mirroring the segment's control page. */
ORBIT_EXPORT _Atomic uint32_t orbit__capture_flag;
/* Written once, before the release store of g_segment; producers read it
 * after attaching (acquire load of g_segment). */
ORBIT_EXPORT uint32_t orbit__clock_kind;
ORBIT_EXPORT __thread struct orbit__thread orbit__thread_self;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static struct orbit__segment g_seg;
/* Release store in orbit_init pairs with the acquire load in
 * orbit__thread_attach: a thread that sees the pointer sees the mapping. */
static _Atomic(struct orbit__segment *) g_segment;
static int g_atexit;

static _Atomic uint32_t g_flush_timeout_ms; /* set once, by the first orbit_init */
static struct orbit__config g_config;       /* read by orbit_init, under g_lock */

ORBIT_EXPORT const char *orbit_strerror(int err)
{
	switch (err) {
#define ORBIT__ERR_CASE(name, value, text)                                                         \
	case value:                                                                                \
		return text;
		ORBIT_ERRORS(ORBIT__ERR_CASE)
#undef ORBIT__ERR_CASE
	case 0:
		return "success";
	default:
		if (err >= 0)
			return "unknown error";
		/* strerror's buffer is shared between threads: a copy each. */
		static __thread char buf[128];
		return strerror_r(-err, buf, sizeof buf);
	}
}

/*
 * A thread's end (docs/format.md, thread end): when a thread that wrote
 * exits, its key's destructor writes one thread-end record, so readers know
 * that a later thread with the same id is another one. It runs for threads
 * that return or call pthread_exit, not for the thread that calls exit(),
 * nor when the process is killed; readers have a rule for those.
 */
static pthread_key_t g_thread_key;
static pthread_once_t g_thread_key_once = PTHREAD_ONCE_INIT;
static int g_thread_key_ok; /* written in pthread_once, read after it returns */

/* The record goes through the write path's claim, fill and publish: its
 * stamp's release store pairs with the drain's acquire load, as every
 * record's. */
static void thread_end(void *arg)
{
	struct orbit__thread *t = arg;
	if (t->ring == NULL || !orbit__on())
		return;
	uint64_t time = orbit__ticks();
	uint64_t claim;
	struct orbit__slot *s = orbit__claim(t, &claim);
	orbit__publish(s, claim, orbit__fill(s, time, ORBIT__THREAD_END, 0, t->tid, "", 0));
}

static void make_thread_key(void)
{
	g_thread_key_ok = pthread_key_create(&g_thread_key, thread_end) == 0;
}

struct orbit__thread *orbit__thread_attach(void)
{
	struct orbit__segment *seg = atomic_load_explicit(&g_segment, memory_order_acquire);
	if (seg == NULL)
		return NULL;
	struct orbit__thread *t = &orbit__thread_self;
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->mask = seg->layout.slots_per_ring - 1;
	t->ring = orbit__segment_ring(seg, orbit__ring_of_tid(t->tid, seg->layout.ring_count));
	pthread_once(&g_thread_key_once, make_thread_key);
	if (g_thread_key_ok) /* without a key, readers fall back on scope ids */
		pthread_setspecific(g_thread_key, t);
	return t;
}

/* A head record and as many continuations as the name needs. The head's
 * name area holds, in this order, the site's address (with a site), color
 * and group (attrs), and the name's first bytes (docs/format.md 2). */
void orbit__emit_named(uint8_t kind, uint64_t id, const struct orbit__site *site, const char *name,
                       size_t len, uint32_t color, uint64_t group, int attrs)
{
	struct orbit__thread *t = orbit__self();
	if (t == NULL)
		return;
	if (name == NULL)
		len = 0;
	if (len > ORBIT_NAME_MAX)
		len = ORBIT_NAME_MAX;
	uint64_t time = orbit__ticks();
	size_t skip = (site ? ORBIT__SITE_BYTES : 0) + (attrs ? ORBIT__ATTR_BYTES : 0);
	size_t take = len < ORBIT__INLINE_NAME - skip ? len : ORBIT__INLINE_NAME - skip;
	uint64_t claim, w[ORBIT__INLINE_NAME / 8] = {0, 0, 0, 0};
	char *bytes = (char *)w;
	size_t at = 0;
	if (site) {
		uint64_t a = (uint64_t)(uintptr_t)site;
		memcpy(bytes, &a, 8); /* little-endian, as the format says */
		at = ORBIT__SITE_BYTES;
	}
	if (attrs) {
		memcpy(bytes + at, &color, 4);
		memcpy(bytes + at + 4, &group, 8);
	}
	memcpy(bytes + skip, name, take);
	uint8_t flags = (uint8_t)((attrs ? ORBIT__FLAG_ATTRS : 0) | (site ? ORBIT__FLAG_SITE : 0));
	struct orbit__slot *s = orbit__claim(t, &claim);
	orbit__publish(
	    s, claim,
	    orbit__store(s, time, id, orbit__meta(t->tid, kind, flags, (uint16_t)len), w));
	uint16_t part = 1;
	for (size_t off = take; off < len; off += ORBIT__INLINE_NAME, part++) {
		size_t n = len - off < ORBIT__INLINE_NAME ? len - off : ORBIT__INLINE_NAME;
		memset(w, 0, sizeof w);
		memcpy(w, name + off, n);
		s = orbit__claim(t, &claim);
		orbit__publish(
		    s, claim,
		    orbit__store(s, time, id, orbit__meta(t->tid, ORBIT__NAME_CONT, 0, part), w));
	}
}

/* The child of a fork must never write into the parent's rings: it starts
 * with tracing off and no segment; orbit_init() may start its own. */
static void after_fork_child(void)
{
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
	atomic_store_explicit(&g_segment, NULL, memory_order_relaxed);
	memset(&orbit__thread_self, 0, sizeof orbit__thread_self);
	orbit__segment_forget(&g_seg); /* the parent's lock says nothing of us */
	memset(&g_seg, 0, sizeof g_seg);
	g_seg.fd = -1;
	pthread_mutex_init(&g_lock, NULL);
	orbit__config_after_fork();
	orbit__agent_forget();
}

static void at_exit(void)
{
	orbit_shutdown();
	pthread_mutex_lock(&g_lock);
	if (g_seg.base != NULL)
		orbit__segment_unlink(&g_seg); /* the mapping stays valid */
	pthread_mutex_unlock(&g_lock);
}

ORBIT_EXPORT int orbit_init(void)
{
	int err = 0;
	pthread_mutex_lock(&g_lock);
	if (atomic_load_explicit(&g_segment, memory_order_relaxed) == NULL) {
		orbit__config_read(&g_config);
		struct orbit__seg_params p = {.ring_count = g_config.rings,
		                              .slots_per_ring = g_config.slots_per_ring,
		                              .flight_size = g_config.flight};
		uint32_t page_size;
		orbit__logs_geometry(&g_config, &p.page_ring_count, &p.page_ring_pages, &page_size);
		if (page_size != (uint32_t)sysconf(_SC_PAGESIZE))
			p.page_ring_count = 0; /* the segment holds pages of its own size */
		p.clock_source = orbit__clock_choose();
		orbit__clock_kind = p.clock_source;
		g_flush_timeout_ms = g_config.flush_timeout_ms;
		err = orbit__segment_create(&p, &g_seg);
		if (err) {
			fprintf(stderr,
			        "orbit: cannot create the shared-memory segment: %s; "
			        "tracing is off\n",
			        orbit_strerror(err));
			goto out;
		}
		if (g_seg.layout.page_ring_count > 0)
			orbit__logs_use_memory(
			    g_seg.base + g_seg.layout.pages_offset, g_seg.layout.page_ring_stride,
			    g_seg.layout.page_ring_count, g_seg.layout.page_ring_pages,
			    g_seg.layout.page_ring_page_size);
		atomic_store_explicit(&g_segment, &g_seg, memory_order_release);
		if (!g_atexit) {
			pthread_atfork(NULL, NULL, after_fork_child);
			atexit(at_exit);
			g_atexit = 1;
		}
	}
	orbit__logs_start(); /* logs off on failure (said); scopes go on */
	err = orbit__agent_start(&g_seg, orbit__clock_kind);
	if (err) /* the agent said why, in one line */
		goto out;
	/* Relaxed: the flag gates writing; what writers need was published by
	 * the release store of g_segment above, which they acquire. */
	atomic_store_explicit(&g_seg.control->capture, 1, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);
out:
	pthread_mutex_unlock(&g_lock);
	return err;
}

ORBIT_EXPORT int orbit_flush(void)
{
	return orbit__agent_flush(g_flush_timeout_ms);
}

ORBIT_EXPORT void orbit_shutdown(void)
{
	pthread_mutex_lock(&g_lock);
	if (g_seg.base != NULL) {
		atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
		atomic_store_explicit(&g_seg.control->capture, 0, memory_order_relaxed);
		orbit__agent_stop(g_flush_timeout_ms);
		orbit__logs_stop();
	}
	pthread_mutex_unlock(&g_lock);
}

__attribute__((constructor)) static void orbit_autostart(void)
{
	if (orbit__config_wants_output())
		orbit_init();
}

/* Test and reader access to the process's own segment. */
const struct orbit__segment *orbit__own_segment(void)
{
	return atomic_load_explicit(&g_segment, memory_order_acquire);
}
