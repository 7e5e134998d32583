/*
 * strangers.c — the log lines of connections that end without an accepted
 * handshake. A flood of them must cost the collector neither a write per
 * connection nor a log that drowns everything else, and still every one of
 * them is accounted for:
 *
 *  1. Of the strangers that end within ORBIT_COLLECTOR_STRANGER_WINDOW_MS
 *     of the first one's line, the first ORBIT_COLLECTOR_STRANGER_LINES
 *     get their own line, as every connection does (conn.c).
 *  2. The others are counted, by why they ended (made room in the pending
 *     pool, closed by the peer, anything else) and by how many distinct
 *     peer addresses they came from, and said in one line once the window
 *     is over (or the collector stops):
 *       strangers: N more connections without a handshake in the last
 *       10.0 s (from M addresses): E made room for newer ones
 *       (--max-pending), P closed by the peer, O refused or timed out
 *  3. Lines --quiet silences (a peer that closed before a handshake) are
 *     neither printed nor counted, as without a flood.
 */
#include "collector.h"

#include <inttypes.h>
#include <string.h>

static uint32_t addr_hash(const struct orbit_conn *k)
{
	uint32_t h = 2166136261u; /* FNV-1a; 0 marks a free slot */

	for (size_t i = 0; i < k->addr_len; i++)
		h = (h ^ (uint8_t)k->peer[i]) * 16777619u;
	return h ? h : 1;
}

/* Counts k's address once per window (up to 3/4 of the set's slots). */
static void addr_count(struct orbit__strangers *s, const struct orbit_conn *k)
{
	const size_t size = sizeof s->addr / sizeof s->addr[0];
	uint32_t h = addr_hash(k);

	for (size_t i = h & (size - 1);; i = (i + 1) & (size - 1)) {
		if (s->addr[i] == h)
			return;
		if (s->addr[i] == 0) {
			if (s->naddr >= size / 4 * 3) {
				s->addr_full = 1;
				return;
			}
			s->addr[i] = h;
			s->naddr++;
			return;
		}
	}
}

static void summary(struct orbit_collector *c, uint64_t now)
{
	struct orbit__strangers *s = &c->strangers;

	if (s->held > 0)
		orbit__log(c, s->evicted + s->other > 0,
		           "strangers: %" PRIu64 " more connections without a handshake in the "
		           "last %.1f s (from %s%u address%s): %" PRIu64
		           " made room for newer ones (--max-pending), %" PRIu64
		           " closed by the peer, %" PRIu64 " refused or timed out",
		           s->held, (double)(now - s->since_ms) / 1000.0,
		           s->addr_full ? "more than " : "", s->naddr, s->naddr == 1 ? "" : "es",
		           s->evicted, s->closed, s->other);
	memset(s, 0, sizeof *s);
}

int orbit__strangers_report(struct orbit_conn *k)
{
	struct orbit_collector *c = k->c;
	struct orbit__strangers *s = &c->strangers;
	uint64_t now = uv_now(&c->loop);

	if (!k->error && c->opt.quiet)
		return 0;
	if (s->active && now - s->since_ms >= ORBIT_COLLECTOR_STRANGER_WINDOW_MS)
		summary(c, now);
	if (!s->active) {
		s->active = 1;
		s->since_ms = now;
	}
	if (s->lines < ORBIT_COLLECTOR_STRANGER_LINES) {
		s->lines++;
		return 1;
	}
	s->held++;
	if (k->evicted)
		s->evicted++;
	else if (!k->error)
		s->closed++;
	else
		s->other++;
	addr_count(s, k);
	return 0;
}

void orbit__strangers_tick(struct orbit_collector *c, uint64_t now, int force)
{
	struct orbit__strangers *s = &c->strangers;

	if (s->active && (force || now - s->since_ms >= ORBIT_COLLECTOR_STRANGER_WINDOW_MS))
		summary(c, now);
}
