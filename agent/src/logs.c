/* logs.c — ORBIT_LOG / orbit_marker on per-CPU page rings; see logs.h.
 *
 * How it works
 * ======================================
 *
 * orbit__logs_create makes one page ring (page_ring.c) per configured CPU;
 * the root publishes the instance for the writers with one release store
 * (producers.h). An instance then lives as long as the process (stop frees
 * only the pages), so a writer that loaded the pointer can always enter a
 * ring, and finds it disabled (-ESHUTDOWN) rather than freed.
 *
 * Write. orbit_log / orbit_marker check the capture flag (relaxed, as every
 * macro does), acquire-load the published instance, pick the ring of the CPU they run on
 * (sched_getcpu: rseq or vDSO, no syscall), and reserve, fill and commit one
 * record. The CPU may change between sched_getcpu and the reserve; that
 * costs only a shared cache line, since every ring takes any number of
 * writers. orbit_log formats into a stack buffer first, so nothing runs
 * between reserve and commit but a memcpy (page_ring.h: commit promptly).
 *
 * Clock. The rings read raw TSC ticks when the producers' clock is the TSC,
 * else CLOCK_MONOTONIC ns: the same reading the scope rings store, one
 * rdtsc. A delta's 27 bits then cover 2^27 ticks; since the TSC runs at 1
 * GHz or more, the delta in ns is never larger, so retiming (below) always
 * finds room for it where the ring put the delta in ticks.
 *
 * Read. The agent thread (one reader at a time, the read mutex) reads each ring's
 * finished pages, first closing the page being written when its first
 * record is older than the age asked for (orbit__page_flush, which counts
 * age in the ring's clock, so the age is converted to ticks with a rate
 * measured since the rings were created). Each page is retimed in place
 * (orbit__ftrace_retime, ftrace_page.h) with the agent's conversion and
 * handed over; nothing that leaves here is in ticks.
 *
 * What it keeps
 * =============
 *  1. Writers never block or wait for another thread (page_ring.c guarantee
 *     13), and make no syscall after their thread's first record (the tid is
 *     cached in orbit__thread_self, producers.h); orbit_marker allocates nothing, orbit_log only
 *what vsnprintf may.
 *  2. Every reserve that reaches an enabled ring is counted in `reserved`
 *     (before its commit, for a successful one), and every one of them ends
 *     delivered or in lost_records (page_ring.c guarantee 6, with the losses
 *     of each stop added to the totals): with no writer inside,
 *	reserved == delivered + lost_records, per ring, exactly.
 *  3. Pages leave only in CLOCK_MONOTONIC ns, the page timestamp being the
 *     first record's time (page_ring.c guarantee 8 survives the retiming).
 *  4. Records of one thread on one ring are delivered in the order it wrote
 *     them (page_ring.c guarantees 5 and 7).
 *  5. A failure to start prints one line and leaves logs off; scopes, the
 *     agent and the host are unaffected.
 */
#include "logs.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftrace_page.h"
#include "orbit.h"
#include "page_ring.h"
#include "producers.h"

#define CACHE_LINE 64
#define RATE_MIN_NS 1000000ull /* measure the tick rate over 1 ms at least */

_Static_assert(ORBIT__LOGS_HEADER == 8, "payload header: u16 + u8 + u8 + s32");
_Static_assert(ORBIT__LOGS_LINE_STACK >= 2, "room for one byte and the NUL");

struct logs_ring {
	/* Reserve calls that reached the enabled ring. Relaxed fetch_add by
	 * writers; relaxed loads by totals. Never reset. The only word here
	 * that writers write; one line per ring keeps CPUs apart. */
	alignas(CACHE_LINE) _Atomic uint64_t reserved;
	/* Constant after create. */
	struct orbit__page_ring *ring;
	/* Losses of finished enable periods; under ctl. */
	uint64_t lost_records;
	uint64_t lost_pages;
};

struct orbit__logs {
	/* Constant after create; writers see them through the release store
	 * that publishes the instance (producers.h). */
	uint32_t count;
	uint32_t pages;
	uint32_t page_size;
	uint32_t max_line; /* text bytes orbit_log keeps */
	uint32_t max_data; /* marker bytes that fit a record */
	int overwrite;
	uint32_t clock_kind;  /* ORBIT__CLOCK_TSC or ORBIT__CLOCK_MONOTONIC */
	uint64_t ticks0, ns0; /* a (ticks, ns) pair taken at create */
	/* start / stop / totals */
	pthread_mutex_t ctl;
	int enabled; /* under ctl */
	/* orbit__logs_read, and the page copy it reads into */
	pthread_mutex_t read;
	uint8_t *buf;
	/* Relaxed: a statistic. */
	_Atomic uint64_t clamped;
	struct logs_ring ring[];
};

_Static_assert(sizeof(struct logs_ring) == CACHE_LINE, "one line per ring");

/* ---- clocks ---- */

static uint64_t clock_mono(void *arg)
{
	(void)arg;
	return orbit__monotonic_ns();
}

#if defined(__x86_64__)
static uint64_t clock_tsc(void *arg)
{
	(void)arg;
	/* Not serialising, like the scope rings' read: a read that runs a
	 * little early is stamped with the previous record's time (page_ring.c,
	 * Stamping), never behind it. */
	return __builtin_ia32_rdtsc();
}
#endif

static uint64_t ring_now(const struct orbit__logs *l)
{
#if defined(__x86_64__)
	if (l->clock_kind == ORBIT__CLOCK_TSC)
		return __builtin_ia32_rdtsc();
#endif
	(void)l;
	return orbit__monotonic_ns();
}

/* flush age in the rings' clock: ns, or ticks at the rate seen since the
 * rings were created. Before that rate is known, ns as ticks: with ticks at
 * 1 GHz or more that flushes early, never late. */
static uint64_t age_in_ring_clock(const struct orbit__logs *l, uint64_t age_ns)
{
	uint64_t ticks, ns;

	if (l->clock_kind != ORBIT__CLOCK_TSC || age_ns == 0)
		return age_ns;
	ticks = ring_now(l) - l->ticks0;
	ns = orbit__monotonic_ns() - l->ns0;
	if (ns < RATE_MIN_NS || ticks <= ns)
		return age_ns;
	return (uint64_t)((unsigned __int128)age_ns * ticks / ns);
}

/* ---- configuration ---- */

/* The system page size, if the page ring can use it; else the nearest
 * size it can. */
static uint32_t ring_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	if (ps <= 0 || (ps & (ps - 1)) != 0)
		return 4096;
	if (ps < (long)ORBIT__PAGE_MIN_SIZE)
		return ORBIT__PAGE_MIN_SIZE;
	if (ps > (long)ORBIT__PAGE_MAX_SIZE)
		return ORBIT__PAGE_MAX_SIZE;
	return (uint32_t)ps;
}

void orbit__logs_geometry(const struct orbit__config *c, uint32_t *count, uint32_t *pages,
                          uint32_t *page_size)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	/* At most the format's limit of rings (wire_limits.h); CPUs beyond
	 * share them (cpu % count). */
	if (ncpu > (long)ORBIT_MAX_PAGE_RINGS)
		ncpu = ORBIT_MAX_PAGE_RINGS;
	*count = ncpu < 1 ? 1 : (uint32_t)ncpu;
	*pages = c->page_ring_pages;
	*page_size = ring_page_size();
}

/* ---- controller ---- */

static void destroy(struct orbit__logs *l)
{
	for (uint32_t i = 0; i < l->count; i++)
		orbit__page_destroy(l->ring[i].ring);
	pthread_mutex_destroy(&l->ctl);
	pthread_mutex_destroy(&l->read);
	free(l->buf);
	free(l);
}

/*
 * Where the pages live: in the segment's page-ring area when the root gave
 * one that fits (so that orbit-dump finds what was never read, docs/format.md
 * 1.9), each ring its own slice for its whole life; else on the heap, at
 * each enable.
 */
int orbit__logs_create(struct orbit__logs **out, const struct orbit__config *c, uint32_t clock_kind,
                       const struct orbit__logs_memory *mem)
{
	uint32_t count, pages, page_size;
	struct orbit__page_config cfg = {0};
	int err = 0;

	*out = NULL;
	orbit__logs_geometry(c, &count, &pages, &page_size);
	size_t size = sizeof(struct orbit__logs) + count * sizeof(struct logs_ring);
	size = (size + CACHE_LINE - 1) & ~(size_t)(CACHE_LINE - 1);
	struct orbit__logs *l = aligned_alloc(CACHE_LINE, size);
	if (l == NULL) {
		err = -ENOMEM;
		goto said;
	}
	memset(l, 0, size);
	pthread_mutex_init(&l->ctl, NULL);
	pthread_mutex_init(&l->read, NULL);
	l->pages = pages;
	l->overwrite = c->page_ring_overwrite;
	l->page_size = page_size;
	l->clock_kind = ORBIT__CLOCK_MONOTONIC;
	cfg.clock = clock_mono;
#if defined(__x86_64__)
	if (clock_kind == ORBIT__CLOCK_TSC) {
		l->clock_kind = ORBIT__CLOCK_TSC;
		cfg.clock = clock_tsc;
	}
#else
	(void)clock_kind;
#endif
	cfg.pages = l->pages;
	cfg.page_size = l->page_size;
	cfg.overwrite = l->overwrite;
	int in_segment = mem != NULL && mem->base != NULL && mem->count == count &&
	                 mem->pages == l->pages && mem->page_size == l->page_size;
	l->buf = aligned_alloc(l->page_size, l->page_size);
	if (l->buf == NULL) {
		err = -ENOMEM;
		goto fail;
	}
	for (; l->count < count; l->count++) {
		struct logs_ring *lr = &l->ring[l->count];

		atomic_init(&lr->reserved, 0);
		cfg.memory = in_segment ? mem->base + (uint64_t)l->count * mem->stride : NULL;
		err = orbit__page_create(&lr->ring, &cfg);
		if (err < 0)
			goto fail;
	}
	l->max_data = orbit__page_max_payload(l->ring[0].ring) - ORBIT__LOGS_HEADER;
	l->max_line =
	    l->max_data < ORBIT__LOGS_LINE_STACK - 1 ? l->max_data : ORBIT__LOGS_LINE_STACK - 1;
	l->ticks0 = ring_now(l);
	l->ns0 = orbit__monotonic_ns();
	*out = l;
	return 0;
fail:
	destroy(l);
said:
	fprintf(stderr, "orbit: cannot create the log page rings: %s; logs are off\n",
	        orbit_strerror(err));
	return err;
}

int orbit__logs_start(struct orbit__logs *l)
{
	uint32_t i;
	int err = 0;

	pthread_mutex_lock(&l->ctl);
	if (l->enabled)
		goto out;
	for (i = 0; i < l->count; i++) {
		err = orbit__page_enable(l->ring[i].ring);
		if (err < 0)
			break;
	}
	if (err < 0) {
		while (i-- > 0) {
			struct orbit__page_loss loss;

			orbit__page_disable(l->ring[i].ring, &loss);
			l->ring[i].lost_records += loss.records;
			l->ring[i].lost_pages += loss.pages;
		}
		fprintf(stderr,
		        "orbit: cannot allocate %u log page rings of %u pages of %u "
		        "bytes: %s; logs are off\n",
		        l->count, l->pages, l->page_size, orbit_strerror(err));
		goto out;
	}
	l->enabled = 1;
out:
	pthread_mutex_unlock(&l->ctl);
	return err;
}

void orbit__logs_stop(struct orbit__logs *l)
{
	pthread_mutex_lock(&l->ctl);
	if (l->enabled) {
		for (uint32_t i = 0; i < l->count; i++) {
			struct orbit__page_loss loss;

			orbit__page_disable(l->ring[i].ring, &loss);
			l->ring[i].lost_records += loss.records;
			l->ring[i].lost_pages += loss.pages;
		}
		l->enabled = 0;
	}
	pthread_mutex_unlock(&l->ctl);
}

uint32_t orbit__logs_ring_count(const struct orbit__logs *l)
{
	return l->count;
}

void orbit__logs_totals(struct orbit__logs *l, uint32_t ring, uint64_t *reserved,
                        uint64_t *lost_records, uint64_t *lost_pages)
{
	uint64_t res = 0, rec = 0, pages = 0;

	pthread_mutex_lock(&l->ctl);
	if (ring < l->count) {
		struct logs_ring *lr = &l->ring[ring];

		res = atomic_load_explicit(&lr->reserved, memory_order_relaxed);
		rec = lr->lost_records;
		pages = lr->lost_pages;
		if (l->enabled) { /* the current period, not yet in the sums */
			struct orbit__page_stats st;

			orbit__page_stats(lr->ring, &st);
			rec += st.full + st.dropped + st.overwritten_records;
			pages += st.overwritten_pages;
		}
	}
	pthread_mutex_unlock(&l->ctl);
	if (reserved != NULL)
		*reserved = res;
	if (lost_records != NULL)
		*lost_records = rec;
	if (lost_pages != NULL)
		*lost_pages = pages;
}

uint64_t orbit__logs_clamped(const struct orbit__logs *l)
{
	return atomic_load_explicit(&l->clamped, memory_order_relaxed);
}

void orbit__logs_config(const struct orbit__logs *l, uint32_t *pages, uint32_t *page_size,
                        int *overwrite)
{
	*pages = l->pages;
	*page_size = l->page_size;
	*overwrite = l->overwrite;
}

/* ---- reader ---- */

static void deliver(struct orbit__logs *l, uint32_t i, orbit__logs_to_ns_fn to_ns, void *ctx,
                    orbit__logs_page_fn page, void *arg)
{
	if (l->clock_kind == ORBIT__CLOCK_TSC) {
		int r = orbit__ftrace_retime(l->buf, l->page_size, to_ns, ctx);

		/* A page of our ring always decodes (guarantees 1 and 3 of
		 * page_ring.c); one that did not would be in ticks: keep it
		 * out rather than put a second clock in the capture. */
		if (r < 0)
			return;
		if (r > 0)
			atomic_fetch_add_explicit(&l->clamped, (uint64_t)r, memory_order_relaxed);
	}
	page(arg, i, l->buf, l->page_size);
}

int orbit__logs_read(struct orbit__logs *l, orbit__logs_to_ns_fn to_ns, void *ctx,
                     orbit__logs_page_fn page, void *arg, uint64_t flush_age_ns)
{
	uint64_t age;
	int n = 0;

	if (to_ns == NULL || page == NULL)
		return -EINVAL;
	pthread_mutex_lock(&l->read);
	age = age_in_ring_clock(l, flush_age_ns);
	for (uint32_t i = 0; i < l->count; i++) {
		struct orbit__page_ring *ring = l->ring[i].ring;
		uint64_t budget = 2ull * l->pages;
		int r;

		/* page_ring.h: read what is ready, close the tail page if it
		 * is old enough, and go round while that moved anything. */
		for (;;) {
			while (budget > 0 &&
			       (r = orbit__page_read(ring, l->buf, l->page_size)) > 0) {
				deliver(l, i, to_ns, ctx, page, arg);
				budget--;
				n++;
			}
			if (budget == 0 || r != -EAGAIN)
				break; /* read enough, or disabled */
			if (orbit__page_flush(ring, age) != 1)
				break;
		}
	}
	pthread_mutex_unlock(&l->read);
	return n;
}

/* ---- writers ---- */

static int write_record(struct orbit__logs *l, uint16_t type, const void *data, size_t len)
{
	struct orbit__page_reservation res;
	struct logs_ring *lr;
	uint8_t *p;
	int32_t tid = (int32_t)orbit__producers_tid();
	int cpu = sched_getcpu(), err;

	lr = &l->ring[cpu < 0 ? 0 : (uint32_t)cpu % l->count];
	err = orbit__page_reserve(lr->ring, (uint32_t)(ORBIT__LOGS_HEADER + len), &res);
	if (err == 0 || err == -ENOSPC || err == -ENOBUFS)
		atomic_fetch_add_explicit(&lr->reserved, 1, memory_order_relaxed);
	if (err < 0)
		return err == -ESHUTDOWN ? ORBIT_EDISABLED : err;
	p = res.data;
	memcpy(p, &type, 2);
	p[2] = 0; /* flags */
	p[3] = 0; /* preempt count */
	memcpy(p + 4, &tid, 4);
	if (len != 0)
		memcpy(p + ORBIT__LOGS_HEADER, data, len);
	orbit__page_commit(lr->ring, &res);
	return 0;
}

static struct orbit__logs *writable(void)
{
	if (atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed) == 0)
		return NULL;
	return orbit__producers_logs_now(); /* acquire: see producers.h */
}

/* Formats into buf + off (text at most max bytes) and writes the record of
 * type, the first off bytes of buf before the text. */
static int write_line(struct orbit__logs *l, uint16_t type, char *buf, size_t off, uint32_t max,
                      const char *fmt, va_list ap)
{
	int n = vsnprintf(buf + off, (size_t)max + 1, fmt, ap);
	if (n < 0)
		return -EINVAL; /* a conversion the C library refused */
	return write_record(l, type, buf, off + ((uint32_t)n < max ? (size_t)n : max));
}

ORBIT_EXPORT int orbit_log(const char *fmt, ...)
{
	char buf[ORBIT__LOGS_LINE_STACK];
	struct orbit__logs *l = writable();
	va_list ap;

	if (l == NULL)
		return ORBIT_EDISABLED;
	va_start(ap, fmt);
	int err = write_line(l, ORBIT__LOGS_LINE, buf, 0, l->max_line, fmt, ap);
	va_end(ap);
	return err;
}

/* ORBIT_LOG: the site's address goes before the text (8 bytes more in the
 * record; the page ring's records are not sized to 56 bytes as a slot is).
 * A record holds up to max_data bytes, so the text keeps max_line unless
 * that would not leave room for the address. */
ORBIT_EXPORT int orbit__log_at(const struct orbit__site *site, const char *fmt, ...)
{
	char buf[ORBIT__SITE_BYTES + ORBIT__LOGS_LINE_STACK];
	struct orbit__logs *l = writable();
	va_list ap;

	if (l == NULL)
		return ORBIT_EDISABLED;
	uint64_t a = (uint64_t)(uintptr_t)site;
	memcpy(buf, &a, 8);
	uint32_t max = l->max_line; /* the text's limit with the address in the record */
	if (max + ORBIT__SITE_BYTES > l->max_data)
		max = l->max_data - ORBIT__SITE_BYTES;
	va_start(ap, fmt);
	int err = write_line(l, ORBIT__LOGS_LINE_AT, buf, ORBIT__SITE_BYTES, max, fmt, ap);
	va_end(ap);
	return err;
}

ORBIT_EXPORT int orbit_marker(const void *data, size_t len)
{
	struct orbit__logs *l = writable();

	if (l == NULL)
		return ORBIT_EDISABLED;
	if (len > l->max_data)
		return -EMSGSIZE;
	if (data == NULL && len != 0)
		return -EINVAL;
	return write_record(l, ORBIT__LOGS_MARKER, data, len);
}
