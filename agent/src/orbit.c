/* orbit.c — what producer threads reach without a handle (producers.h):
 * the words orbit.h's inline path reads, the segment and log page rings the
 * root publishes, and the write path's slow paths (a thread's first record,
 * names too long for one record, a thread's end); orbit_strerror. The
 * lifecycle (orbit_init, orbit_shutdown, fork, exit) is lifecycle.c's. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "orbit.h"
#include "producers.h"
#include "record.h"
#include "segment_create.h"

/* The kinds and flags the write path (orbit/internal.h) stores are the
 * record's (format/record.h, docs/format.md): one set of numbers, named
 * twice only because orbit.h cannot include the format's headers. */
_Static_assert((int)ORBIT__SCOPE_START == (int)ORBIT_REC_SCOPE_START, "kind 1");
_Static_assert((int)ORBIT__SCOPE_STOP == (int)ORBIT_REC_SCOPE_STOP, "kind 2");
_Static_assert((int)ORBIT__ASYNC_START == (int)ORBIT_REC_ASYNC_START, "kind 3");
_Static_assert((int)ORBIT__ASYNC_STOP == (int)ORBIT_REC_ASYNC_STOP, "kind 4");
_Static_assert((int)ORBIT__VALUE_INT == (int)ORBIT_REC_INT, "kind 5");
_Static_assert((int)ORBIT__VALUE_INT64 == (int)ORBIT_REC_INT64, "kind 6");
_Static_assert((int)ORBIT__VALUE_UINT == (int)ORBIT_REC_UINT, "kind 7");
_Static_assert((int)ORBIT__VALUE_UINT64 == (int)ORBIT_REC_UINT64, "kind 8");
_Static_assert((int)ORBIT__VALUE_FLOAT == (int)ORBIT_REC_FLOAT, "kind 9");
_Static_assert((int)ORBIT__VALUE_DOUBLE == (int)ORBIT_REC_DOUBLE, "kind 10");
_Static_assert((int)ORBIT__THREAD_NAME == (int)ORBIT_REC_THREAD_NAME, "kind 11");
_Static_assert((int)ORBIT__NAME_CONT == (int)ORBIT_REC_NAME_CONT, "kind 12");
_Static_assert((int)ORBIT__THREAD_END == (int)ORBIT_REC_THREAD_END, "kind 13");
_Static_assert((int)ORBIT__THREAD_END == (int)ORBIT_REC_KIND_MAX,
               "no kind the format does not know");
_Static_assert(ORBIT__FLAG_ATTRS == ORBIT_REC_FLAG_ATTRS, "flag attrs");
_Static_assert(ORBIT__FLAG_TIME_UNTRUSTED == ORBIT_REC_FLAG_TIME_UNTRUSTED, "flag untrusted");
_Static_assert(ORBIT__FLAG_SITE == ORBIT_REC_FLAG_SITE, "flag site");

/* Read by every macro (relaxed); written by orbit_init/orbit_shutdown and
 * by the agent mirroring the segment's control page. */
ORBIT_EXPORT _Atomic uint32_t orbit__capture_flag;
/* Written once, before the segment is published; producers read it after
 * attaching (the acquire load of the segment). */
ORBIT_EXPORT uint32_t orbit__clock_kind;
ORBIT_EXPORT __thread struct orbit__thread orbit__thread_self;

/* What the root publishes for producers (producers.h). Written by the root
 * under its lock, read by any thread. */
static struct {
	/* Release stores by the root pair with the acquire loads in
	 * orbit__thread_attach and orbit__own_segment: a thread that sees the
	 * pointer sees the mapping. */
	_Atomic(struct orbit__segment *) segment;
	/* Release store by the root pairs with the acquire load in
	 * orbit__producers_logs_now: a writer that sees the rings sees them
	 * made. */
	_Atomic(struct orbit__logs *) logs;
	/* The key whose destructor writes a thread's end record. */
	pthread_key_t thread_key;
	pthread_once_t thread_key_once;
	int thread_key_ok; /* written in pthread_once, read after it returns */
} P = {.thread_key_once = PTHREAD_ONCE_INIT};

void orbit__producers_segment(struct orbit__segment *seg)
{
	atomic_store_explicit(&P.segment, seg, memory_order_release);
}

void orbit__producers_logs(struct orbit__logs *logs)
{
	atomic_store_explicit(&P.logs, logs, memory_order_release);
}

struct orbit__logs *orbit__producers_logs_now(void)
{
	return atomic_load_explicit(&P.logs, memory_order_acquire);
}

uint32_t orbit__producers_tid(void)
{
	struct orbit__thread *t = &orbit__thread_self;
	if (__builtin_expect(t->tid == 0, 0))
		t->tid = (uint32_t)syscall(SYS_gettid);
	return t->tid;
}

/* The child of a fork must never write into the parent's rings: it starts
 * with tracing off and nothing published; orbit_init() may start its own. */
void orbit__producers_forget(void)
{
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
	atomic_store_explicit(&P.segment, NULL, memory_order_relaxed);
	atomic_store_explicit(&P.logs, NULL, memory_order_relaxed);
	memset(&orbit__thread_self, 0, sizeof orbit__thread_self);
}

/* The write path's clock read when the producers' clock is CLOCK_MONOTONIC
 * (orbit.h, orbit__ticks), and every reader's in the agent. */
uint64_t orbit__monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
 *
 * The record goes through the write path's claim, fill and publish: its
 * stamp's release store pairs with the drain's acquire load, as every
 * record's.
 */
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
	P.thread_key_ok = pthread_key_create(&P.thread_key, thread_end) == 0;
}

/* A ring without memory: tracing goes off for every thread (the agent
 * mirrors the control word into the flag), said once. A reader that turns
 * capture on again makes threads try again. */
static void no_room(struct orbit__segment *seg, uint32_t ring, int err)
{
	atomic_store_explicit(&seg->control->capture, 0, memory_order_relaxed);
	atomic_store_explicit(&orbit__capture_flag, 0, memory_order_relaxed);
	if (atomic_exchange_explicit(&seg->no_room_said, 1, memory_order_relaxed) == 0)
		fprintf(stderr,
		        "orbit: cannot reserve the memory of ring %u (%llu bytes) in %s: %s; "
		        "tracing is off\n",
		        ring, (unsigned long long)seg->layout.ring_stride, ORBIT__SEG_DIR,
		        strerror(-err));
}

struct orbit__thread *orbit__thread_attach(void)
{
	struct orbit__segment *seg = atomic_load_explicit(&P.segment, memory_order_acquire);
	if (seg == NULL)
		return NULL;
	struct orbit__thread *t = &orbit__thread_self;
	t->tid = orbit__producers_tid();
	t->mask = seg->layout.slots_per_ring - 1;
	uint32_t ring = orbit__ring_of_tid(t->tid, seg->layout.ring_count);
	int err = orbit__segment_ring_reserve(seg, ring);
	if (err != 0) {
		no_room(seg, ring, err);
		return NULL;
	}
	t->ring = orbit__segment_ring(seg, ring);
	pthread_once(&P.thread_key_once, make_thread_key);
	if (P.thread_key_ok) /* without a key, readers fall back on scope ids */
		pthread_setspecific(P.thread_key, t);
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

/* Test and reader access to the process's own segment. */
const struct orbit__segment *orbit__own_segment(void)
{
	return atomic_load_explicit(&P.segment, memory_order_acquire);
}
