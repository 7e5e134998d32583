/* config.c — reading the ORBIT_* variables; see config.h. */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "page_ring.h"
#include "parse.h"
#include "segment_create.h"

/* The variables, for the one warn-once rule: bit i set once variable i's
 * bad value has been said in this process. */
enum var {
	V_COLLECTOR,
	V_FLIGHT,
	V_SEND_BUFFER,
	V_ZSTD_LEVEL,
	V_DRAIN_MS,
	V_FLUSH_TIMEOUT_MS,
	V_RINGS,
	V_RING_BUDGET,
	V_CLOCK,
	V_PAGE_RING_PAGES,
	V_PAGE_RING_OVERWRITE,
	V_ACK_TIMEOUT_MS,
	V_SCHED,
	V_CAPTURE,
	V_SPOOL,
	V_SPOOL_MAX,
};

__attribute__((format(printf, 3, 4))) static void bad(struct orbit__config_said *said, enum var v,
                                                      const char *fmt, ...)
{
	uint32_t bit = 1u << v;
	/* Relaxed: only which lines were printed; a race prints a line twice
	 * at worst, never a wrong value. */
	if (said != NULL && atomic_fetch_or_explicit(&said->bits, bit, memory_order_relaxed) & bit)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

/* HOST:PORT or [V6]:PORT, by the one rule (format/parse.h). */
static int read_collector(const char *s, struct orbit__config *c, struct orbit__config_said *said)
{
	const char *why;
	uint16_t port;
	if (orbit__parse_host_port(s, 0, c->host, sizeof c->host, &port, &why) == 0) {
		snprintf(c->port, sizeof c->port, "%u", (unsigned)port);
		return 1;
	}
	if (why == ORBIT_PARSE_URL) {
		char hint[300];
		orbit__parse_url_authority(s, hint, sizeof hint);
		bad(said, V_COLLECTOR,
		    "orbit: ORBIT_COLLECTOR=%s is a URL; ORBIT_COLLECTOR is HOST:PORT%s%s%s; "
		    "tracing "
		    "is off\n",
		    s, hint[0] ? " (" : "", hint, hint[0] ? ")" : "");
	} else {
		bad(said, V_COLLECTOR,
		    "orbit: ORBIT_COLLECTOR=%s is not HOST:PORT (%s); tracing is off\n", s, why);
	}
	return 0;
}

/*
 * ORBIT_SPOOL: off (a boolean's no) or a directory; unset or a boolean's
 * yes: $XDG_STATE_HOME/orbit/spool, else $HOME/.local/state/orbit/spool,
 * else /tmp/orbit-spool-UID (a per-user place on disk that outlives the
 * process and a reboot, unlike $XDG_RUNTIME_DIR's small tmpfs). Only with
 * ORBIT_COLLECTOR.
 */
static void read_spool(struct orbit__config *c, struct orbit__config_said *said)
{
	c->spool = 0;
	c->spool_max = ORBIT__CONFIG_SPOOL_MAX;
	if (!c->collector_set)
		return;
	const char *s = getenv("ORBIT_SPOOL");
	int on = 1;
	if (s != NULL && s[0] != '\0' && orbit__parse_bool(s, &on) == 0 && !on)
		return;
	int n;
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	if (s != NULL && s[0] != '\0' && orbit__parse_bool(s, &on) != 0)
		n = snprintf(c->spool_dir, sizeof c->spool_dir, "%s", s);
	else if (state != NULL && state[0] == '/')
		n = snprintf(c->spool_dir, sizeof c->spool_dir, "%s/orbit/spool", state);
	else if (home != NULL && home[0] == '/')
		n = snprintf(c->spool_dir, sizeof c->spool_dir, "%s/.local/state/orbit/spool",
		             home);
	else
		n = snprintf(c->spool_dir, sizeof c->spool_dir, "/tmp/orbit-spool-%u",
		             (unsigned)getuid());
	if (n < 0 || (size_t)n >= sizeof c->spool_dir - 64) { /* room for a file name */
		bad(said, V_SPOOL, "orbit: the spool directory %s is too long a path; no spool\n",
		    s != NULL ? s : c->spool_dir);
		c->spool_dir[0] = '\0';
		return;
	}
	c->spool = 1;
	uint64_t v;
	s = getenv("ORBIT_SPOOL_MAX");
	if (s != NULL && (orbit__parse_size(s, &v) != 0 || v < (1ull << 20)))
		bad(said, V_SPOOL_MAX,
		    "orbit: ORBIT_SPOOL_MAX=%s is not a size of 1M or more; using 512M\n", s);
	else if (s != NULL)
		c->spool_max = v;
}

static void read_outputs(struct orbit__config *c, struct orbit__config_said *said)
{
	const char *s = getenv("ORBIT_COLLECTOR");
	c->collector_set = s != NULL;
	if (s != NULL) {
		snprintf(c->collector, sizeof c->collector, "%s", s);
		c->collector_ok = read_collector(s, c, said);
	}
	s = getenv("ORBIT_CAPTURE");
	c->capture_set = s != NULL;
	c->capture_ok = 0;
	c->capture[0] = '\0';
	if (s != NULL && strlen(s) < sizeof c->capture) {
		memcpy(c->capture, s, strlen(s) + 1);
		c->capture_ok = 1;
	} else if (s != NULL) { /* a path cut short would name another file */
		bad(said, V_CAPTURE,
		    "orbit: ORBIT_CAPTURE is %zu bytes long, longer than a path can be (%d); "
		    "tracing is off\n",
		    strlen(s), PATH_MAX - 1);
	}
	/* ORBIT_FLIGHT: whole MiB from 1M to 4G (docs/operations.md). */
	s = getenv("ORBIT_FLIGHT");
	if (s != NULL) {
		uint64_t v;
		if (orbit__parse_size(s, &v) != 0 || v < ORBIT__SEG_MIN_FLIGHT ||
		    v > ORBIT__SEG_MAX_FLIGHT)
			bad(said, V_FLIGHT,
			    "orbit: ORBIT_FLIGHT=%s is not a size from 1M to 4G; no flight ring\n",
			    s);
		else
			c->flight = v / ORBIT__SEG_MIN_FLIGHT * ORBIT__SEG_MIN_FLIGHT;
	}
	s = getenv("ORBIT_TOKEN");
	if (s != NULL) {
		size_t n = strlen(s);
		c->token_len = n < sizeof c->token ? n : sizeof c->token;
		memcpy(c->token, s, c->token_len);
	}

	uint64_t v;
	c->send_buffer = ORBIT__CONFIG_SEND_BUFFER;
	s = getenv("ORBIT_SEND_BUFFER");
	if (s != NULL && (orbit__parse_size(s, &v) != 0 || v < (1ull << 20) || v > (1ull << 32)))
		bad(said, V_SEND_BUFFER,
		    "orbit: ORBIT_SEND_BUFFER=%s is not a size from 1M to 4G; using 64M\n", s);
	else if (s != NULL)
		c->send_buffer = v;

	c->ack_timeout_ms = ORBIT__CONFIG_ACK_TIMEOUT_MS;
	s = getenv("ORBIT_ACK_TIMEOUT_MS");
	if (s != NULL) {
		char *end;
		errno = 0;
		unsigned long long ms = strtoull(s, &end, 10);
		if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || ms < 100 || ms > 600000)
			bad(said, V_ACK_TIMEOUT_MS,
			    "orbit: ORBIT_ACK_TIMEOUT_MS=%s is not a number of ms from 100 to "
			    "600000; "
			    "using %u\n",
			    s, ORBIT__CONFIG_ACK_TIMEOUT_MS);
		else
			c->ack_timeout_ms = (uint32_t)ms;
	}

	c->zstd_level = ORBIT__CONFIG_ZSTD_LEVEL;
	s = getenv("ORBIT_ZSTD_LEVEL");
	if (s != NULL) {
		char *end;
		long l = strtol(s, &end, 10);
		if (*s == '\0' || *end != '\0' || l < -7 || l > 19)
			bad(said, V_ZSTD_LEVEL,
			    "orbit: ORBIT_ZSTD_LEVEL=%s is not a level from -7 to 19; using %d\n",
			    s, ORBIT__CONFIG_ZSTD_LEVEL);
		else
			c->zstd_level = (int)l;
	}
}

static void read_agent(struct orbit__config *c, struct orbit__config_said *said)
{
	c->drain_ms = ORBIT__CONFIG_DRAIN_MS;
	const char *s = getenv("ORBIT_DRAIN_MS");
	if (s != NULL) {
		char *end;
		unsigned long long v = strtoull(s, &end, 10);
		if (*s == '\0' || *end != '\0' || v == 0 || v > 60000)
			bad(said, V_DRAIN_MS,
			    "orbit: ORBIT_DRAIN_MS=%s is not a number of ms from 1 to 60000; using "
			    "%u\n",
			    s, ORBIT__CONFIG_DRAIN_MS);
		else
			c->drain_ms = (uint32_t)v;
	}

	c->flush_timeout_ms = ORBIT__CONFIG_FLUSH_TIMEOUT_MS;
	s = getenv("ORBIT_FLUSH_TIMEOUT_MS");
	if (s != NULL) {
		char *end;
		unsigned long v = strtoul(s, &end, 10);
		if (*s == '\0' || *end != '\0' || v > 600000)
			bad(said, V_FLUSH_TIMEOUT_MS,
			    "orbit: ORBIT_FLUSH_TIMEOUT_MS=%s is not a number of ms up to 600000; "
			    "using %u\n",
			    s, ORBIT__CONFIG_FLUSH_TIMEOUT_MS);
		else
			c->flush_timeout_ms = (uint32_t)v;
	}
}

/* The largest power of two not above v, capped at the most slots a ring
 * may have. */
static uint32_t floor_pow2(uint64_t v)
{
	uint32_t p = 1;
	while ((uint64_t)p * 2 <= v && p < ORBIT__SEG_MAX_SLOTS)
		p *= 2;
	return p;
}

static void read_segment(struct orbit__config *c, struct orbit__config_said *said)
{
	uint64_t rings = ORBIT__CONFIG_RINGS, budget = ORBIT__CONFIG_BUDGET;
	const char *s = getenv("ORBIT_RINGS");
	if (s != NULL &&
	    (orbit__parse_size(s, &rings) != 0 || rings < 1 || rings > ORBIT_MAX_RINGS)) {
		bad(said, V_RINGS, "orbit: ORBIT_RINGS=%s is not a number from 1 to %u; using %u\n",
		    s, ORBIT_MAX_RINGS, ORBIT__CONFIG_RINGS);
		rings = ORBIT__CONFIG_RINGS;
	}
	s = getenv("ORBIT_RING_BUDGET");
	if (s != NULL && (orbit__parse_size(s, &budget) != 0 || budget > ORBIT__CONFIG_MAX_BUDGET ||
	                  budget / rings / ORBIT__SLOT_SIZE < ORBIT__SEG_MIN_SLOTS)) {
		bad(said, V_RING_BUDGET,
		    "orbit: ORBIT_RING_BUDGET=%s is not a size from %llu bytes to 4G for %u "
		    "rings; using %lluM\n",
		    s, (unsigned long long)rings * ORBIT__SLOT_SIZE * ORBIT__SEG_MIN_SLOTS,
		    (unsigned)rings, (unsigned long long)(ORBIT__CONFIG_BUDGET >> 20));
		budget = ORBIT__CONFIG_BUDGET;
		if (budget / rings / ORBIT__SLOT_SIZE < ORBIT__SEG_MIN_SLOTS)
			rings = ORBIT__CONFIG_RINGS;
	}
	c->rings = (uint32_t)rings;
	c->slots_per_ring = floor_pow2(budget / rings / ORBIT__SLOT_SIZE);
	c->budget = budget;
}

static enum orbit__config_clock read_clock(struct orbit__config_said *said)
{
	const char *s = getenv("ORBIT_CLOCK");
	if (s != NULL && strcmp(s, "monotonic") == 0)
		return ORBIT__CONFIG_CLOCK_MONOTONIC;
	if (s != NULL && strcmp(s, "tsc") == 0)
		return ORBIT__CONFIG_CLOCK_TSC;
	if (s != NULL && strcmp(s, "auto") != 0)
		bad(said, V_CLOCK,
		    "orbit: ORBIT_CLOCK=%s is not monotonic, tsc or auto; using auto\n", s);
	return ORBIT__CONFIG_CLOCK_AUTO;
}

/* A yes-or-no variable (format/parse.h); unset or refused: 0. */
static int read_bool(const char *name, enum var v, struct orbit__config_said *said)
{
	const char *s = getenv(name);
	int on = 0;
	if (s != NULL && orbit__parse_bool(s, &on) != 0)
		bad(said, v, "orbit: %s=%s is not " ORBIT_PARSE_BOOL_WORDS "; using 0\n", name, s);
	return on;
}

static void read_pages(struct orbit__config *c, struct orbit__config_said *said)
{
	c->page_ring_pages = ORBIT__CONFIG_PAGE_RING_PAGES;
	const char *s = getenv("ORBIT_PAGE_RING_PAGES");
	if (s != NULL) {
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		if (*s < '0' || *s > '9' || *end != '\0' || errno != 0 || v < 2 ||
		    v > ORBIT__PAGE_MAX_PAGES)
			bad(said, V_PAGE_RING_PAGES,
			    "orbit: ORBIT_PAGE_RING_PAGES=%s is not a number of pages from 2 to "
			    "%u; "
			    "using %u\n",
			    s, ORBIT__PAGE_MAX_PAGES, ORBIT__CONFIG_PAGE_RING_PAGES);
		else
			c->page_ring_pages = (uint32_t)v;
	}
	c->page_ring_overwrite =
	    read_bool("ORBIT_PAGE_RING_OVERWRITE", V_PAGE_RING_OVERWRITE, said);
}

static int read_sched(struct orbit__config_said *said)
{
	return read_bool("ORBIT_SCHED", V_SCHED, said);
}

void orbit__config_read(struct orbit__config *c, struct orbit__config_said *said)
{
	memset(c, 0, sizeof *c);
	read_outputs(c, said);
	read_spool(c, said);
	read_agent(c, said);
	read_segment(c, said);
	c->clock = read_clock(said);
	read_pages(c, said);
	c->sched = read_sched(said);
}

int orbit__config_capture_path(const char *capture, char *out, size_t len)
{
	const char *p = strstr(capture, "%p");
	int n = p != NULL ? snprintf(out, len, "%.*s%d%s", (int)(p - capture), capture,
	                             (int)getpid(), p + 2)
	                  : snprintf(out, len, "%s", capture);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int orbit__config_wants_output(void)
{
	return getenv("ORBIT_COLLECTOR") != NULL || getenv("ORBIT_CAPTURE") != NULL ||
	       getenv("ORBIT_FLIGHT") != NULL;
}

void orbit__config_said_forget(struct orbit__config_said *said)
{
	atomic_store_explicit(&said->bits, 0, memory_order_relaxed);
}
