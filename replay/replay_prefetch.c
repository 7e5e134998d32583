/*
 * replay_prefetch.c — a capture read on a thread of its own
 * (replay_prefetch.h).
 *
 * Guarantees:
 *  1. Reads are taken in the order orbit__capture_next made them, each with
 *     the offsets around its call and the packet's checks: what an in-line
 *     read gives (orbit__rp_prefetch_read, the one way to make a read).
 *  2. At most ORBIT_RP_PREFETCH_DEPTH reads wait, holding at most
 *     ORBIT_RP_PREFETCH_BYTES and one read more.
 *  3. The reader belongs to the thread from start until the last read was
 *     taken (the taker joins the thread then) or the prefetch is freed
 *     (which joins it first): never used by two threads at once.
 *  4. Every field the two threads share (the waiting reads and their
 *     bytes, stop, who waits) is read and written under one mutex, whose
 *     lock and unlock order the packet's memory: a taken read's packet was
 *     written before the unlock that published it (pthread mutexes are full
 *     acquire/release, on arm64 as on x86). The thread waits on `room`
 *     from when the queue is full until it is half empty, the taker on
 *     `ready` while it is empty; each says it waits (`thread_waits`,
 *     `taker_waits`) and is signalled under the mutex after the change that
 *     ends its wait, so no wake-up is lost and none is sent in vain.
 *  5. The thread takes no signals (all blocked in it): the program's
 *     handlers run where they ran before.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "replay_prefetch.h"

struct orbit_rp_prefetch {
	struct orbit_capture_reader *r;
	pthread_t thread;
	int joined;  /* the taker's: the thread has been joined */
	uint64_t at; /* the taker's: where the reads taken so far reach */
	pthread_mutex_t m;
	pthread_cond_t room, ready;
	/* under m */
	struct orbit_rp_fetched q[ORBIT_RP_PREFETCH_DEPTH];
	unsigned head, count;
	size_t bytes; /* of the reads waiting */
	int stop;
	int thread_waits, taker_waits;
};

void orbit__rp_prefetch_read(struct orbit_capture_reader *r, struct orbit_rp_fetched *f)
{
	memset(f, 0, sizeof *f);
	f->before = orbit__capture_offset(r);
	f->rc = orbit__capture_next(r, &f->p, &f->prob);
	f->after = orbit__capture_offset(r);
	f->last = f->rc == 0 || (f->rc < 0 && f->prob.error != f->rc);
	f->bytes = 64;
	if (f->rc != 1)
		return;
	f->valid = orbit__packet_validate(f->p) == 0;
	if (f->p->body_case == ORBIT__PACKET__BODY_RING_BATCH)
		f->bytes += f->p->ring_batch->records.len;
	else if (f->p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE)
		f->bytes += f->p->kernel_page->page.len;
	else if (f->p->body_case == ORBIT__PACKET__BODY_FTRACE_PAGE)
		f->bytes += f->p->ftrace_page->page.len;
}

static int full(const struct orbit_rp_prefetch *pf)
{
	return pf->count == ORBIT_RP_PREFETCH_DEPTH || pf->bytes >= ORBIT_RP_PREFETCH_BYTES;
}

static int half_empty(const struct orbit_rp_prefetch *pf)
{
	return pf->count <= ORBIT_RP_PREFETCH_DEPTH / 2 && pf->bytes <= ORBIT_RP_PREFETCH_BYTES / 2;
}

static void *run(void *arg)
{
	struct orbit_rp_prefetch *pf = arg;
	for (;;) {
		pthread_mutex_lock(&pf->m);
		if (full(pf) && !pf->stop) {
			pf->thread_waits = 1;
			while (!half_empty(pf) && !pf->stop)
				pthread_cond_wait(&pf->room, &pf->m);
			pf->thread_waits = 0;
		}
		int stop = pf->stop;
		pthread_mutex_unlock(&pf->m);
		if (stop)
			return NULL;
		struct orbit_rp_fetched f;
		orbit__rp_prefetch_read(pf->r, &f); /* the reader is its own (3) */
		pthread_mutex_lock(&pf->m);
		/* Only this thread adds: the room seen above is still there. */
		pf->q[(pf->head + pf->count) % ORBIT_RP_PREFETCH_DEPTH] = f;
		pf->count++;
		pf->bytes += f.bytes;
		if (pf->taker_waits)
			pthread_cond_signal(&pf->ready);
		pthread_mutex_unlock(&pf->m);
		if (f.last)
			return NULL;
	}
}

struct orbit_rp_prefetch *orbit__rp_prefetch_start(struct orbit_capture_reader *r)
{
	struct orbit_rp_prefetch *pf = calloc(1, sizeof *pf);
	if (pf == NULL)
		return NULL;
	pf->r = r;
	pf->at = orbit__capture_offset(r);
	if (pthread_mutex_init(&pf->m, NULL) != 0)
		goto no_mutex;
	if (pthread_cond_init(&pf->room, NULL) != 0)
		goto no_room;
	if (pthread_cond_init(&pf->ready, NULL) != 0)
		goto no_ready;
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread inherits it (5) */
	int err = pthread_create(&pf->thread, NULL, run, pf);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err == 0)
		return pf;
	pthread_cond_destroy(&pf->ready);
no_ready:
	pthread_cond_destroy(&pf->room);
no_room:
	pthread_mutex_destroy(&pf->m);
no_mutex:
	free(pf);
	return NULL;
}

void orbit__rp_prefetch_take(struct orbit_rp_prefetch *pf, struct orbit_rp_fetched *out)
{
	pthread_mutex_lock(&pf->m);
	if (pf->count == 0) {
		pf->taker_waits = 1;
		while (pf->count == 0)
			pthread_cond_wait(&pf->ready, &pf->m);
		pf->taker_waits = 0;
	}
	*out = pf->q[pf->head];
	pf->head = (pf->head + 1) % ORBIT_RP_PREFETCH_DEPTH;
	pf->count--;
	pf->bytes -= out->bytes;
	if (pf->thread_waits && half_empty(pf))
		pthread_cond_signal(&pf->room);
	pthread_mutex_unlock(&pf->m);
	pf->at = out->after;
	if (out->last) {
		pthread_join(pf->thread, NULL); /* the reader is the caller's again (3) */
		pf->joined = 1;
	}
}

uint64_t orbit__rp_prefetch_offset(const struct orbit_rp_prefetch *pf)
{
	return pf->at;
}

void orbit__rp_prefetch_free(struct orbit_rp_prefetch *pf)
{
	if (pf == NULL)
		return;
	if (!pf->joined) {
		pthread_mutex_lock(&pf->m);
		pf->stop = 1;
		pthread_cond_signal(&pf->room);
		pthread_mutex_unlock(&pf->m);
		pthread_join(pf->thread, NULL);
	}
	for (; pf->count > 0; pf->count--) {
		struct orbit_rp_fetched *f = &pf->q[pf->head];
		if (f->p != NULL)
			orbit__packet__free_unpacked(f->p, NULL);
		pf->head = (pf->head + 1) % ORBIT_RP_PREFETCH_DEPTH;
	}
	pthread_cond_destroy(&pf->ready);
	pthread_cond_destroy(&pf->room);
	pthread_mutex_destroy(&pf->m);
	free(pf);
}
