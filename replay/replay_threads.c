/*
 * replay_threads.c — one entry per (pid, tid) seen on the timeline: its
 * name, its statistics, the state self time and tie ordering need.
 *
 * A capture may name threads twice: the program's ORBIT_THREAD_NAME
 * records, and the agent's ThreadName packets (the kernel's comm, sent at
 * the end of the stream). The program's name wins. Past
 * ORBIT_RP_MAX_THREADS entries (only a hostile capture gets there) every
 * new thread shares one overflow entry.
 */
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

static uint64_t thread_key(uint32_t pid, uint32_t tid)
{
	return (uint64_t)pid << 32 | tid;
}

static size_t thread_hash(uint64_t key, size_t mask)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

static int threads_grow(struct orbit_rp_threads *t)
{
	size_t cap = t->mask ? (t->mask + 1) * 2 : 256;
	struct orbit_rp_thread **s = calloc(cap, sizeof *s);
	if (s == NULL)
		return -1;
	for (uint32_t i = 0; i < t->n; i++) {
		struct orbit_rp_thread *th = t->all[i];
		size_t j = thread_hash(thread_key(th->pid, th->tid), cap - 1);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = th;
	}
	free(t->slots);
	t->slots = s;
	t->mask = cap - 1;
	return 0;
}

static struct orbit_rp_thread *thread_new(uint32_t pid, uint32_t tid)
{
	struct orbit_rp_thread *th = calloc(1, sizeof *th);
	if (th == NULL)
		return NULL;
	th->pid = pid;
	th->tid = tid;
	return th;
}

static struct orbit_rp_thread *thread_overflow(struct orbit_rp_threads *t)
{
	if (t->overflow == NULL) {
		t->overflow = thread_new(0, UINT32_MAX);
		if (t->overflow)
			orbit__rp_thread_name(t->overflow, "[other threads]", 15,
			                      ORBIT_RP_NAMED_RECORD);
	}
	return t->overflow;
}

static struct orbit_rp_thread *thread_add(struct orbit_rp_threads *t, size_t slot, uint32_t pid,
                                          uint32_t tid)
{
	if (t->n >= ORBIT_RP_MAX_THREADS)
		return thread_overflow(t);
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		struct orbit_rp_thread **a = realloc(t->all, cap * sizeof *a);
		if (a == NULL)
			return thread_overflow(t);
		t->all = a;
		t->cap = cap;
	}
	struct orbit_rp_thread *th = thread_new(pid, tid);
	if (th == NULL)
		return thread_overflow(t);
	t->all[t->n++] = th;
	t->slots[slot] = th;
	return th;
}

struct orbit_rp_thread *orbit__rp_thread(struct orbit_rp_threads *t, uint32_t pid, uint32_t tid)
{
	if (t->last && t->last->pid == pid && t->last->tid == tid)
		return t->last;
	if ((size_t)(t->n + 1) * 2 > t->mask + 1 && threads_grow(t) != 0)
		return thread_overflow(t);
	size_t j = thread_hash(thread_key(pid, tid), t->mask);
	for (;; j = (j + 1) & t->mask) {
		struct orbit_rp_thread *th = t->slots[j];
		if (th == NULL) {
			th = thread_add(t, j, pid, tid);
			if (th != t->overflow)
				t->last = th;
			return th;
		}
		if (th->pid == pid && th->tid == tid)
			return t->last = th;
	}
}

void orbit__rp_thread_name(struct orbit_rp_thread *t, const char *name, size_t len, int source)
{
	if (source < t->name_source)
		return;
	if (t->name != NULL && t->name_len == len && memcmp(t->name, name, len) == 0) {
		t->name_source = (uint8_t)source;
		return;
	}
	char *copy = malloc(len + 1);
	if (copy == NULL)
		return;
	memcpy(copy, name, len);
	copy[len] = '\0';
	free(t->name);
	t->name = copy;
	t->name_len = (uint32_t)len;
	t->name_source = (uint8_t)source;
	t->name_version++;
}

static void thread_free(struct orbit_rp_thread *th)
{
	if (th == NULL)
		return;
	free(th->name);
	free(th->child);
	orbit__rp_order_free(&th->order);
	free(th);
}

void orbit__rp_threads_free(struct orbit_rp_threads *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		thread_free(t->all[i]);
	thread_free(t->overflow);
	free(t->all);
	free(t->slots);
	memset(t, 0, sizeof *t);
}
