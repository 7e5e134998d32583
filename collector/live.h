/*
 * live.h — the collector's live view (--ui ADDR): a web page that shows
 * every stream while it is being received (docs/collector.md, "The live
 * view").
 *
 * It runs on a thread of its own, with its own libuv loop and h2o's HTTP
 * server (live_http.c), so that nothing a viewer or a stranger on the UI
 * port does runs on the loop that reads, checks and writes the agents'
 * streams. What the two threads share is this module's list of streams,
 * under one mutex, which the collector's loop updates at most once per
 * tick of its timer (live.c); no byte of a stream passes through it.
 *
 * What a page shows of a stream comes from its capture file: a feed
 * (live_feed.c) reads the file as it grows with orbit-replay's reader
 * (--follow) and its --html exporter, which hands it about twice a second
 * the page's data block of the stream's newest history (--ui-history);
 * every viewer of the stream gets the newest block when it has taken the
 * one before, so a slow viewer gets fewer blocks (counted, and shown on
 * its page), never more memory: a feed holds one block, a viewer at most
 * one in flight.
 */
#ifndef ORBIT_COLLECTOR_LIVE_H
#define ORBIT_COLLECTOR_LIVE_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT_LIVE_DEFAULT "127.0.0.1:7412"
#define ORBIT_LIVE_HISTORY_NS (60ull * 1000000000ull) /* --ui-history's default */
#define ORBIT_LIVE_SPANS 20000u                       /* spans a block keeps at most: the longest */
#define ORBIT_LIVE_EVERY_NS 250000000ull              /* a block this often while data comes */
#define ORBIT_LIVE_ENDED_KEPT 64u                     /* ended streams listed, the newest */
#define ORBIT_LIVE_FEEDS 16u                          /* streams watched at once */
#define ORBIT_LIVE_CONNS 512u     /* UI connections at once; one past it is closed */
#define ORBIT_LIVE_IDLE_MS 30000u /* a feed without viewers stops after this */
/* A feed's budget: the CPU time its thread spends reading (blocks pace
 * themselves: replay.h, html_live) is at most this many thousandths of the
 * time that passes (bursts of up to ORBIT_LIVE_BURST_NS); frames past it
 * are passed over, not decompressed (their records are unshown, and the
 * page says how many). A feed starts at the file's last ORBIT_LIVE_TAIL
 * bytes. */
#define ORBIT_LIVE_CPU_PERMILLE 5u
#define ORBIT_LIVE_BURST_NS 20000000ll
#define ORBIT_LIVE_TAIL (16ull << 20)

struct orbit_live;

struct orbit_live_options {
	const char *addr;     /* HOST:PORT */
	const char *dir;      /* the captures' directory */
	const uint8_t *token; /* the collector's token; NULL: none */
	size_t token_len;
	uint64_t history_ns; /* --ui-history */
};

/* Binds addr and starts the view's thread. Off loopback the collector
 * must have a token. 0 and *out, or -1 with why. *url is the page's
 * address ("http://127.0.0.1:7412/"). */
int orbit__live_start(const struct orbit_live_options *o, struct orbit_live **out, char *url,
                      size_t url_len, char *why, size_t n);
/* Stops the feeds and the view's thread; what the UI's connections hold
 * stays allocated, reachable from l, until the process ends. */
void orbit__live_stop(struct orbit_live *l);

/* What the page lists of a stream (copied). */
struct orbit_live_stream_info {
	const char *peer, *host, *process, *command, *file; /* file: in the directory */
	uint32_t pid;
};

/* A stream was accepted: its number in the list (never 0), or 0 when the
 * list has no room (the stream is then not shown). */
uint32_t orbit__live_stream_add(struct orbit_live *l, const struct orbit_live_stream_info *s);
/* Its events, loss and bytes written so far. */
void orbit__live_stream_update(struct orbit_live *l, uint32_t id, uint64_t records, uint64_t lost,
                               uint64_t bytes);
/* It ended; why is NULL for an orderly end. */
void orbit__live_stream_end(struct orbit_live *l, uint32_t id, const char *why);

#endif
