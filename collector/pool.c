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
 * pending connections: a flood from one address only ever evicts itself.
 * Connections that have said something are evicted only when no silent
 * one is left, by the same rule; so however many addresses a flood comes
 * from, connections that send nothing never push out one whose Handshake
 * is arriving. (Peers that share an address, loopback for instance, evict
 * one another oldest first.)
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

static size_t addr_len(const char *peer)
{
	const char *colon = strrchr(peer, ':'); /* the port's, also after "[v6]" */

	return colon != NULL ? (size_t)(colon - peer) : strlen(peer);
}

static uint64_t addr_hash(const struct orbit_conn *k)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < k->addr_len; i++)
		h = (h ^ (uint8_t)k->peer[i]) * 0x100000001b3ull;
	return h;
}

static int same_addr(const struct orbit_conn *a, const struct orbit_conn *b)
{
	return a->addr_len == b->addr_len && memcmp(a->peer, b->peer, a->addr_len) == 0;
}

struct addr_count {
	const struct orbit_conn *k; /* one connection of the address; NULL: free */
	unsigned count;
};

static struct addr_count *addr_slot(struct addr_count *t, size_t size, const struct orbit_conn *k)
{
	for (size_t i = (size_t)addr_hash(k) & (size - 1);; i = (i + 1) & (size - 1))
		if (t[i].k == NULL || same_addr(t[i].k, k))
			return &t[i];
}

/* Whether a pending connection has said something: bytes read, or bytes
 * waiting in its socket. Once it has, it stays so (k->talked), and its
 * socket is not asked again. A peer that closed has said nothing. */
static int talked(struct orbit_conn *k)
{
	uv_os_fd_t fd;
	char b;
	if (!k->talked && (k->len > 0 || (uv_fileno((uv_handle_t *)&k->tcp, &fd) == 0 &&
	                                  recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0)))
		k->talked = 1;
	return k->talked;
}

/* The oldest pending connection, of those that talked or not as asked, of
 * the address with the most pending connections. */
static struct orbit_conn *oldest_of_busiest(struct orbit_collector *c, struct addr_count *t,
                                            size_t size, int talkers)
{
	struct orbit_conn *best = NULL;
	unsigned most = 0;
	/* The list is newest first: the last one kept is the oldest. */
	for (struct orbit_conn *k = c->conns; k != NULL; k = k->next) {
		if (!k->pending || k->talked != talkers)
			continue;
		unsigned n = t != NULL ? addr_slot(t, size, k)->count : 1;
		if (n >= most) {
			most = n;
			best = k;
		}
	}
	return best;
}

/* The connection to evict (see above): a silent one if there is one. Each
 * round asks one socket, and the ones found talking drop out, so at most
 * a few sockets are asked per eviction in a flood of silent ones. */
static struct orbit_conn *victim(struct orbit_collector *c)
{
	size_t size = 16;
	while (size < 2 * (size_t)c->npending)
		size *= 2;
	struct addr_count *t = calloc(size, sizeof *t);
	for (struct orbit_conn *k = c->conns; t != NULL && k != NULL; k = k->next) {
		if (!k->pending)
			continue;
		struct addr_count *s = addr_slot(t, size, k);
		s->k = k;
		s->count++;
	}
	struct orbit_conn *best;
	while ((best = oldest_of_busiest(c, t, size, 0)) != NULL && talked(best))
		;
	if (best == NULL)
		best = oldest_of_busiest(c, t, size, 1);
	free(t);
	return best;
}

void orbit__pool_add_pending(struct orbit_conn *k)
{
	struct orbit_collector *c = k->c;

	k->addr_len = addr_len(k->peer);
	if (c->npending >= c->opt.max_pending) {
		struct orbit_conn *v = victim(c);
		if (v != NULL)
			orbit__conn_close(v, 1,
			                  "%u connections without a handshake (--max-pending): "
			                  "made room for %s",
			                  c->npending, k->peer);
	}
	k->pending = 1;
	c->npending++;
}

void orbit__pool_leave_pending(struct orbit_conn *k)
{
	if (k->pending) {
		k->pending = 0;
		k->c->npending--;
	}
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
