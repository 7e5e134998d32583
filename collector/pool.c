/*
 * pool.c — who gets a slot. Two pools, so that strangers cannot keep agents
 * out:
 *
 *  1. Pending: connections without an accepted handshake, at most
 *     --max-pending at once. Each holds at most ORBIT_HANDSHAKE_FRAME_MAX
 *     bytes of input and lives at most --handshake-timeout-ms.
 *  2. Streams: connections whose handshake was accepted (right token, if one
 *     is asked), at most --max-connections. Only these have a file.
 *
 * A new connection always gets a pending slot. When the pool is full, the
 * connection it replaces is one that has said nothing: no byte read, and
 * none waiting in its socket (an agent whose Handshake arrived in the same
 * accept burst as a flood has bytes waiting that the loop has not read
 * yet). Of those, the oldest of the peer address that holds the most
 * pending connections (of addresses holding as many, the one that reached
 * that number first): a flood from one address only ever evicts itself.
 * Connections that have said something are evicted only when no silent
 * one is left, by the same rule; so however many addresses a flood comes
 * from, connections that send nothing never push out one whose Handshake
 * is arriving. (Peers that share an address, loopback for instance, evict
 * one another oldest first.)
 *
 * The pool's index makes that choice without looking at the other pending
 * connections: each address with pending connections has an entry (found
 * by a hash of its text) holding its silent and its talking connections,
 * each oldest first, and an address with silent (talking) connections is
 * in the silent (talking) bucket of its count of pending connections, in
 * the order it came there. The victim is the head of the first address in
 * the highest nonempty silent bucket; one found talking when its socket is
 * asked moves to its address's talking list and the next is tried, so a
 * socket is asked at most once in its life. Entries, chains and buckets
 * are arrays that grow to the most addresses and the highest count seen,
 * never beyond --max-pending + 1: admitting and evicting allocate nothing
 * once the pool has been full.
 *
 * A handshake that passes its checks while every stream slot is taken
 * takes the place of a stream that delivers nothing: the one whose
 * Handshake came longest ago of those that sent no data packet (records, a
 * log page, a kernel page) in the ORBIT_COLLECTOR_NEVER_MS since, else the
 * one quiet longest of those with none for ORBIT_COLLECTOR_QUIET_MS. So a
 * local peer that opens every slot and sends empty frames cannot keep
 * agents out for long (one that sends junk records can: a collector
 * without a token trusts every local user, docs/collector.md). With no such
 * stream it is closed without a refusal line, so that the agent tries
 * again later.
 */
#include "collector.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Index links are entry number + 1; 0 is none. */
#define NONE 0u

static size_t addr_len(const char *peer)
{
	const char *colon = strrchr(peer, ':'); /* the port's, also after "[v6]" */

	return colon != NULL ? (size_t)(colon - peer) : strlen(peer);
}

static uint32_t addr_hash(const char *s, size_t n)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 16777619u;
	return h;
}

static struct orbit__pool_addr *entry(struct orbit__pool *p, uint32_t i)
{
	return i == NONE ? NULL : &p->addr[i - 1];
}

/* ---- buckets: set 0 silent, 1 talking ---- */

static void bucket_remove(struct orbit__pool *p, int s, uint32_t i, unsigned count)
{
	struct orbit__pool_addr *a = entry(p, i);
	struct orbit__pool_bucket *b = &p->bucket[s][count];

	if (a->bprev[s] != NONE)
		entry(p, a->bprev[s])->bnext[s] = a->bnext[s];
	else
		b->head = a->bnext[s];
	if (a->bnext[s] != NONE)
		entry(p, a->bnext[s])->bprev[s] = a->bprev[s];
	else
		b->tail = a->bprev[s];
	a->bprev[s] = a->bnext[s] = NONE;
}

static void bucket_append(struct orbit__pool *p, int s, uint32_t i)
{
	struct orbit__pool_addr *a = entry(p, i);
	struct orbit__pool_bucket *b = &p->bucket[s][a->count];

	a->bprev[s] = b->tail;
	a->bnext[s] = NONE;
	if (b->tail != NONE)
		entry(p, b->tail)->bnext[s] = i;
	else
		b->head = i;
	b->tail = i;
	if (a->count > p->max[s])
		p->max[s] = a->count;
}

/* Entry i's count or lists changed (from old_count and its bucket
 * memberships in was[]): it moves to the buckets it belongs in now. */
static void rebucket(struct orbit__pool *p, uint32_t i, unsigned old_count, const int was[2])
{
	struct orbit__pool_addr *a = entry(p, i);

	for (int s = 0; s < 2; s++) {
		int now = a->list[s].head != NULL;
		if (was[s] && (!now || old_count != a->count))
			bucket_remove(p, s, i, old_count);
		if (now && (!was[s] || old_count != a->count))
			bucket_append(p, s, i);
	}
}

/* The first address of the highest nonempty bucket of set s, or NONE. */
static uint32_t busiest(struct orbit__pool *p, int s)
{
	while (p->max[s] > 0 && p->bucket[s][p->max[s]].head == NONE)
		p->max[s]--;
	return p->max[s] > 0 ? p->bucket[s][p->max[s]].head : NONE;
}

/* ---- entries ---- */

static int grow(struct orbit__pool *p)
{
	uint32_t cap = p->cap ? p->cap * 2 : 16, size = 2 * cap;
	struct orbit__pool_addr *addr = realloc(p->addr, cap * sizeof *addr);
	if (addr == NULL)
		return -ENOMEM;
	p->addr = addr;
	uint32_t *hash = calloc(size, sizeof *hash);
	if (hash == NULL)
		return -ENOMEM;
	for (uint32_t i = p->cap; i < cap; i++) { /* new entries join the free list */
		memset(&addr[i], 0, sizeof addr[i]);
		addr[i].next = p->free;
		p->free = i + 1;
	}
	for (uint32_t i = 0; i < p->cap; i++) { /* rechain the entries in use */
		if (addr[i].count == 0)
			continue;
		uint32_t *head = &hash[addr_hash(addr[i].key, addr[i].key_len) & (size - 1)];
		addr[i].next = *head;
		*head = i + 1;
	}
	free(p->hash);
	p->hash = hash;
	p->hash_size = size;
	p->cap = cap;
	return 0;
}

static int buckets_fit(struct orbit__pool *p, unsigned count)
{
	if (count < p->nbuckets)
		return 0;
	unsigned n = p->nbuckets ? p->nbuckets : 16;
	while (n <= count)
		n *= 2;
	for (int s = 0; s < 2; s++) {
		struct orbit__pool_bucket *b = realloc(p->bucket[s], n * sizeof *b);
		if (b == NULL)
			return -ENOMEM;
		memset(b + p->nbuckets, 0, (n - p->nbuckets) * sizeof *b);
		p->bucket[s] = b;
	}
	p->nbuckets = n;
	return 0;
}

/* The entry of k's address, made if there is none; NONE without memory. */
static uint32_t addr_entry(struct orbit__pool *p, const struct orbit_conn *k)
{
	size_t n = k->addr_len < ORBIT_POOL_KEY_MAX ? k->addr_len : ORBIT_POOL_KEY_MAX;
	uint32_t h = addr_hash(k->peer, n);

	for (uint32_t i = p->hash_size ? p->hash[h & (p->hash_size - 1)] : NONE; i != NONE;
	     i = entry(p, i)->next)
		if (entry(p, i)->key_len == n && memcmp(entry(p, i)->key, k->peer, n) == 0)
			return i;
	if (p->free == NONE && grow(p) != 0)
		return NONE;
	uint32_t i = p->free;
	struct orbit__pool_addr *a = entry(p, i);
	p->free = a->next;
	memset(a, 0, sizeof *a);
	memcpy(a->key, k->peer, n);
	a->key_len = (uint8_t)n;
	uint32_t *head = &p->hash[h & (p->hash_size - 1)];
	a->next = *head;
	*head = i;
	return i;
}

static void addr_free(struct orbit__pool *p, uint32_t i)
{
	struct orbit__pool_addr *a = entry(p, i);
	uint32_t *at = &p->hash[addr_hash(a->key, a->key_len) & (p->hash_size - 1)];

	while (*at != i)
		at = &entry(p, *at)->next;
	*at = a->next;
	a->next = p->free;
	p->free = i;
}

static void list_append(struct orbit__pool_list *l, struct orbit_conn *k)
{
	k->pool_prev = l->tail;
	k->pool_next = NULL;
	if (l->tail)
		l->tail->pool_next = k;
	else
		l->head = k;
	l->tail = k;
}

static void list_remove(struct orbit__pool_list *l, struct orbit_conn *k)
{
	if (k->pool_prev)
		k->pool_prev->pool_next = k->pool_next;
	else
		l->head = k->pool_next;
	if (k->pool_next)
		k->pool_next->pool_prev = k->pool_prev;
	else
		l->tail = k->pool_prev;
	k->pool_prev = k->pool_next = NULL;
}

/* ---- the pending pool ---- */

void orbit__pool_talked(struct orbit_conn *k)
{
	struct orbit__pool *p = &k->c->pool;
	struct orbit__pool_addr *a = entry(p, k->pool_addr);

	if (k->talked)
		return;
	k->talked = 1;
	if (a == NULL)
		return;
	int was[2] = {a->list[0].head != NULL, a->list[1].head != NULL};
	list_remove(&a->list[0], k);
	list_append(&a->list[1], k);
	rebucket(p, k->pool_addr, a->count, was);
}

/* Whether a pending connection has bytes waiting in its socket: it has
 * said something although the loop has not read it yet. A peer that
 * closed has said nothing. */
static int bytes_waiting(struct orbit_conn *k)
{
	uv_os_fd_t fd;
	char b;

	return uv_fileno((uv_handle_t *)&k->tcp, &fd) == 0 &&
	       recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* The connection to evict (see above): a silent one if there is one. */
static struct orbit_conn *victim(struct orbit_collector *c)
{
	struct orbit__pool *p = &c->pool;
	uint32_t i;

	while ((i = busiest(p, 0)) != NONE) {
		struct orbit_conn *k = entry(p, i)->list[0].head;
		if (!bytes_waiting(k))
			return k;
		orbit__pool_talked(k);
	}
	i = busiest(p, 1);
	return i != NONE ? entry(p, i)->list[1].head : NULL;
}

int orbit__pool_add_pending(struct orbit_conn *k)
{
	struct orbit_collector *c = k->c;
	struct orbit__pool *p = &c->pool;

	k->addr_len = addr_len(k->peer);
	if (c->npending >= c->opt.max_pending) {
		struct orbit_conn *v = victim(c);
		if (v != NULL) {
			v->evicted = 1;
			orbit__conn_close(v, 1,
			                  "%u connections without a handshake (--max-pending): "
			                  "made room for %s",
			                  c->npending, k->peer);
		}
	}
	uint32_t i = addr_entry(p, k);
	struct orbit__pool_addr *a = entry(p, i);
	if (a == NULL || buckets_fit(p, a->count + 1) != 0) {
		if (a != NULL && a->count == 0)
			addr_free(p, i);
		return -ENOMEM;
	}
	int was[2] = {a->list[0].head != NULL, a->list[1].head != NULL};
	a->count++;
	list_append(&a->list[k->talked], k);
	rebucket(p, i, a->count - 1, was);
	k->pool_addr = i;
	k->pending = 1;
	c->npending++;
	return 0;
}

void orbit__pool_leave_pending(struct orbit_conn *k)
{
	struct orbit__pool *p = &k->c->pool;
	struct orbit__pool_addr *a = entry(p, k->pool_addr);

	if (!k->pending)
		return;
	k->pending = 0;
	k->c->npending--;
	if (a == NULL)
		return;
	int was[2] = {a->list[0].head != NULL, a->list[1].head != NULL};
	list_remove(&a->list[k->talked], k);
	a->count--;
	rebucket(p, k->pool_addr, a->count + 1, was);
	if (a->count == 0)
		addr_free(p, k->pool_addr);
	k->pool_addr = NONE;
}

void orbit__pool_free(struct orbit__pool *p)
{
	free(p->addr);
	free(p->hash);
	free(p->bucket[0]);
	free(p->bucket[1]);
	memset(p, 0, sizeof *p);
}
/* The stream that gives way to a waiting Handshake, if one delivers
 * nothing (see above); its reason in why. */
static struct orbit_conn *idle_stream(struct orbit_collector *c, char *why, size_t n)
{
	const uint64_t now = uv_now(&c->loop);
	struct orbit_conn *never = NULL, *quiet = NULL;
	for (struct orbit_conn *k = c->conns; k != NULL; k = k->next) {
		if (!k->stream || k->closing)
			continue;
		if (k->data_ms == 0 && now - k->handshake_ms >= ORBIT_COLLECTOR_NEVER_MS &&
		    (never == NULL || k->handshake_ms <= never->handshake_ms))
			never = k;
		if (k->data_ms != 0 && now - k->data_ms >= ORBIT_COLLECTOR_QUIET_MS &&
		    (quiet == NULL || k->data_ms <= quiet->data_ms))
			quiet = k;
	}
	if (never != NULL)
		snprintf(why, n, "no data in the %" PRIu64 " ms since its handshake",
		         now - never->handshake_ms);
	else if (quiet != NULL)
		snprintf(why, n, "no data for %" PRIu64 " ms", now - quiet->data_ms);
	return never != NULL ? never : quiet;
}

int orbit__pool_take_stream(struct orbit_conn *k, char *why, size_t n)
{
	struct orbit_collector *c = k->c;
	char idle_why[96];
	struct orbit_conn *idle = c->nstreams >= c->opt.max_connections
	                              ? idle_stream(c, idle_why, sizeof idle_why)
	                              : NULL;
	if (idle != NULL) {
		orbit__conn_give_way(idle, idle_why, k->peer);
		orbit__pool_release(idle); /* its slot is the newcomer's now */
	}
	if (c->nstreams >= c->opt.max_connections) {
		snprintf(why, n, "%u streams already open (--max-connections)", c->nstreams);
		return -EBUSY;
	}
	orbit__pool_leave_pending(k);
	k->stream = 1;
	c->nstreams++;
	return 0;
}

void orbit__pool_release(struct orbit_conn *k)
{
	orbit__pool_leave_pending(k);
	if (k->stream) {
		k->stream = 0;
		k->c->nstreams--;
	}
}
