/*
 * agent.h — the agent thread: its own libuv loop (never the default loop)
 * drains the scope rings (next pass when the busiest ring should be a
 * quarter full, between 1 ms and ORBIT_DRAIN_MS, default 10), converts the
 * records' times to CLOCK_MONOTONIC ns, reads the log page rings, and hands
 * both to the transport (transport.h) and to a test sink.
 */
#ifndef ORBIT_AGENT_AGENT_H
#define ORBIT_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "scope_ring.h"

/* Where drained records go. Called on the agent thread; records' time fields
 * are CLOCK_MONOTONIC ns. */
struct orbit__sink {
	void (*records)(void *ctx, uint32_t ring, uint64_t first_claim, const uint8_t *records,
	                uint32_t n);
	/* A log page (ftrace layout, times in ns), or NULL. */
	void (*page)(void *ctx, uint32_t ring, const uint8_t *page, size_t len);
	void *ctx;
};

struct orbit__agent_stats {
	uint32_t ring_count;
	uint64_t claimed; /* sum of the rings' cursors */
	uint64_t drained;
	uint64_t lost_lapped;
	uint64_t lost_dead;
	uint64_t lost_backstop;
	uint32_t stalled_rings;
};

/* Starts the agent thread on a created segment. */
int orbit__agent_start(struct orbit__segment *seg, uint32_t clock_source);
/* Asks for a full drain and waits for it, at most timeout_ms. */
int orbit__agent_flush(uint32_t timeout_ms);
/* Stops and joins the agent thread after a last drain. */
void orbit__agent_stop(uint32_t timeout_ms);
/* Replaces the sink (NULL: records are counted and dropped). Takes effect
 * at the next drain. */
void orbit__agent_set_sink(const struct orbit__sink *sink);
void orbit__agent_stats(struct orbit__agent_stats *out);
/* Ticks to ns with the agent's calibration (for tests). */
uint64_t orbit__agent_to_ns(uint64_t ticks);
/* Forgets the agent state without touching the thread (child after fork). */
void orbit__agent_forget(void);

#endif
