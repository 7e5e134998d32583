/*
 * live_internal.h — the live view's parts below live.h: the list of
 * streams (live.c), the feeds that read their captures (live_feed.c) and
 * the HTTP server (live_http.c). Calls go down this list, never up, except
 * through the two hooks live.c gives the others (a block is ready, a
 * feed's viewers changed).
 *
 * Threads: the collector's loop calls live.h's stream functions; the
 * view's thread runs its uv loop (timer, HTTP, wake-ups); each feed runs a
 * thread of its own. l->mu guards the list of streams and each feed's
 * newest block; everything else is the view thread's.
 */
#ifndef ORBIT_COLLECTOR_LIVE_INTERNAL_H
#define ORBIT_COLLECTOR_LIVE_INTERNAL_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/types.h>
#include <uv.h>

#include "live.h"

#define ORBIT_LIVE_SESSION_LEN 64u /* hex characters of the session cookie */

/* One data block as a Server-Sent Event ("event: block", a "data:" line
 * per base64 line), shared by the viewers sending it. */
struct live_block {
	atomic_uint refs;
	uint64_t seq; /* 1, 2, ... per feed */
	size_t len;
	char data[];
};

void orbit__live_block_unref(struct live_block *b);

struct live_viewer; /* live_http.c */

/* A stream's capture being read (live_feed.c). */
struct live_feed {
	struct orbit_live *l;
	uint32_t stream; /* its id in the list */
	char *path;
	pthread_t thread;
	atomic_int stop; /* set by the view thread: the read ends */
	atomic_int done; /* set by the feed thread as it ends */
	int joined;
	struct live_block *latest; /* under l->mu */
	uint64_t seq;              /* of latest, under l->mu */
	/* the budget (the feed thread's: live_feed.c) */
	uint64_t skip_before; /* frames before this offset are passed over */
	int64_t allow_ns;
	uint64_t cpu_then, wall_then;
	struct live_viewer *viewers;
	unsigned nviewers;
	uint64_t idle_since_ms; /* no viewer since then */
};

/* Starts a feed of the capture at path: 0, or -errno. */
int orbit__live_feed_start(struct live_feed *f, struct orbit_live *l, uint32_t stream,
                           const char *path);
/* Ends it (the read stops within about 50 ms) and frees it; once done,
 * at once. */
void orbit__live_feed_free(struct live_feed *f);

/* One entry of the list of streams. */
struct live_stream {
	uint32_t id;
	int ended;
	uint32_t pid;
	char peer[64], host[256], process[256], command[1024], file[160], why[224];
	uint64_t records, lost, bytes;
	uint64_t started_ms, ended_ms; /* CLOCK_REALTIME ms */
	/* the view thread's */
	uint64_t rate_records, rate_at_ms;
	double rate; /* events per second over the last tick or so */
	struct live_feed *feed;
};

struct live_http; /* live_http.c */

struct orbit_live {
	struct orbit_live_options opt;
	char *dir;
	uint8_t *token;
	char session[ORBIT_LIVE_SESSION_LEN + 1]; /* a login's cookie: hex of 32 random bytes */
	pthread_t thread;
	uv_loop_t loop;
	uv_async_t wake; /* a block is ready, a feed is done, or stop */
	uv_timer_t tick;
	atomic_int stopping;
	struct live_http *http;

	pthread_mutex_t mu;
	struct live_stream *streams; /* oldest first */
	size_t nstreams, cap;
	uint32_t next_id;
	struct live_feed *feeds[ORBIT_LIVE_FEEDS];
};

/* ---- live.c, for the others ---- */

/* The feed of stream id, started if need be (view thread): NULL when the
 * stream is not listed or no feed can be had (with why). */
struct live_feed *orbit__live_feed_of(struct orbit_live *l, uint32_t id, const char **why);
/* The list as JSON, malloc'ed (view thread). */
char *orbit__live_streams_json(struct orbit_live *l, size_t *len);
/* The capture file's path and size so far (complete frames), for a
 * download: 0, or -1 when not listed. */
int orbit__live_capture_of(struct orbit_live *l, uint32_t id, char *path, size_t n, uint64_t *bytes,
                           char *name, size_t name_len);
/* A feed's block is ready (feed thread). */
void orbit__live_wake(struct orbit_live *l);

/* ---- live_request.c: what a browser sends, read ---- */

/* The value of key in the query q (without its '?'), percent-decoded and
 * '+' a space, into out (n bytes): its length, or -1 when absent or
 * longer than n. */
ssize_t orbit__live_query_value(const char *q, size_t len, const char *key, char *out, size_t n);
/* Whether the Cookie header value v holds orbit_ui=SESSION. */
int orbit__live_cookie_session(const char *v, size_t len, const char *session);
/* A stream's number: decimal digits, 1 to UINT32_MAX; 0 or -1. */
int orbit__live_stream_number(const char *s, size_t len, uint32_t *id);

/* ---- live_http.c ---- */

/* Binds addr on l's loop: 0, or -1 with why; url is the page's address. */
int orbit__live_http_start(struct orbit_live *l, char *url, size_t url_len, char *why, size_t n);
/* Hands f's newest block to each viewer that has taken the one before. */
void orbit__live_http_deliver(struct live_feed *f);
/* Closes the listener and every connection (the loop then runs out). */
void orbit__live_http_stop(struct orbit_live *l);
void orbit__live_http_free(struct orbit_live *l);

#endif
