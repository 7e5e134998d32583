/*
 * config.h — every ORBIT_* environment variable the agent reads, in one
 * place (docs/operations.md lists them, with when each one is used).
 *
 * orbit__config_read() reads all of them at once into a struct; each caller
 * takes the fields it needs at its own moment (the segment's geometry when
 * orbit_init creates the segment, the outputs at every agent start, ...).
 *
 * One rule for bad values: a value that does not parse costs one stderr line
 * naming the variable, the value as given and the default used instead, the
 * first time it is read in the process; later reads of the same bad value
 * are silent. A bad ORBIT_COLLECTOR turns tracing off instead of falling
 * back to a default.
 *
 * Values are copied: a later setenv() cannot change a struct already read.
 */
#ifndef ORBIT_AGENT_CONFIG_H
#define ORBIT_AGENT_CONFIG_H

#include <limits.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "wire_limits.h" /* ORBIT_TOKEN_MAX */

#define ORBIT__CONFIG_RINGS 8u
/* 8 rings of 65536 slots: one thread's burst of 64k records fits its ring
 * whatever the drain does, and so do three threads' 20k each on one ring
 * (docs/design.md, default capacity). */
#define ORBIT__CONFIG_BUDGET (32ull << 20)
#define ORBIT__CONFIG_MAX_BUDGET (4ull << 30)
#define ORBIT__CONFIG_SEND_BUFFER (64ull << 20)
#define ORBIT__CONFIG_ZSTD_LEVEL (-1)
#define ORBIT__CONFIG_DRAIN_MS 10u
#define ORBIT__CONFIG_FLUSH_TIMEOUT_MS 3000u
#define ORBIT__CONFIG_ACK_TIMEOUT_MS 10000u
#define ORBIT__CONFIG_PAGE_RING_PAGES 64u      /* log page ring pages */
#define ORBIT__CONFIG_SPOOL_MAX (512ull << 20) /* a process's spool files, together */

enum orbit__config_clock {
	ORBIT__CONFIG_CLOCK_AUTO = 0,
	ORBIT__CONFIG_CLOCK_MONOTONIC,
	ORBIT__CONFIG_CLOCK_TSC,
};

struct orbit__config {
	/* Where the trace goes. */
	int collector_set; /* ORBIT_COLLECTOR is present */
	int collector_ok;  /* ... and is HOST:PORT or [V6]:PORT */
	char collector[300];
	char host[256], port[16];
	int capture_set; /* ORBIT_CAPTURE is present */
	int capture_ok;  /* ... and names a path shorter than PATH_MAX (never cut) */
	char capture[PATH_MAX];
	uint64_t flight;                /* ORBIT_FLIGHT, bytes (whole MiB); 0: no flight ring */
	uint8_t token[ORBIT_TOKEN_MAX]; /* ORBIT_TOKEN, without its NUL */
	size_t token_len;
	uint64_t send_buffer;    /* ORBIT_SEND_BUFFER, bytes */
	int zstd_level;          /* ORBIT_ZSTD_LEVEL */
	uint32_t ack_timeout_ms; /* ORBIT_ACK_TIMEOUT_MS: a collector's answer, its progress */
	/* The spool beside a collector (ORBIT_SPOOL): where what it does not
	 * acknowledge is kept (output_composite.c). */
	int spool;                /* 1 with ORBIT_COLLECTOR, unless ORBIT_SPOOL is off */
	char spool_dir[PATH_MAX]; /* ORBIT_SPOOL, or the default (docs/operations.md) */
	uint64_t spool_max;       /* ORBIT_SPOOL_MAX, bytes */

	/* The agent thread. */
	uint32_t drain_ms;         /* ORBIT_DRAIN_MS: the longest gap between passes */
	uint32_t flush_timeout_ms; /* ORBIT_FLUSH_TIMEOUT_MS */

	/* The segment, when orbit_init creates it. */
	uint32_t rings;                 /* ORBIT_RINGS */
	uint32_t slots_per_ring;        /* from ORBIT_RING_BUDGET */
	uint64_t budget;                /* ORBIT_RING_BUDGET as used, bytes */
	enum orbit__config_clock clock; /* ORBIT_CLOCK */

	/* The log page rings, when the first orbit_init creates them. */
	uint32_t page_ring_pages; /* ORBIT_PAGE_RING_PAGES */
	int page_ring_overwrite;  /* ORBIT_PAGE_RING_OVERWRITE */

	/* Kernel scheduling, at every agent start (sched_tracefs.h). */
	int sched; /* ORBIT_SCHED=1 */

	/* The process's earlier image, when this one follows an exec: found by
	 * orbit_init (exec_chain.h), not read from the environment. */
	uint32_t exec_generation;    /* images before this one; 0: none */
	uint64_t exec_monotonic_ns;  /* its stream's Handshake.monotonic_ns; 0: unknown */
	char exec_capture[PATH_MAX]; /* its capture, completed; "": none */
	char exec_comm[16];          /* its command name */
};

/* Which variables' bad values were said (bit per variable): the one
 * warn-once memory, kept by the root for the process. */
struct orbit__config_said {
	_Atomic uint32_t bits;
};

/* Reads every variable now; a bad value is said unless said remembers it
 * (NULL: said every time). */
void orbit__config_read(struct orbit__config *c, struct orbit__config_said *said);

/* The capture file ORBIT_CAPTURE names for this process: its first "%p"
 * replaced by the pid. 0, or -ENAMETOOLONG when it does not fit out. */
int orbit__config_capture_path(const char *capture, char *out, size_t len);

/* 1 if ORBIT_COLLECTOR, ORBIT_CAPTURE or ORBIT_FLIGHT is present: the
 * library starts tracing by itself when it loads. */
int orbit__config_wants_output(void);

/* 1 if c names an output: a collector, a capture file or a flight ring. */
static inline int orbit__config_has_output(const struct orbit__config *c)
{
	return c->collector_set || c->capture_set || c->flight;
}

/* In a forked child: its bad values are said again, once. */
void orbit__config_said_forget(struct orbit__config_said *said);

/* The stop's deadline, ms from its start: ORBIT_FLUSH_TIMEOUT_MS, the
 * host's whole wait, less a quarter of it or 250 ms (whichever is less),
 * in which the agent counts and says what it gives up. The wait for a
 * stream ends there too, and the frames still unsettled are given up. */
static inline uint32_t orbit__config_stop_deadline_ms(const struct orbit__config *c)
{
	uint32_t t = c->flush_timeout_ms, margin = t / 4 < 250 ? t / 4 : 250;
	return t - margin;
}

#endif
