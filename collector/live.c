/*
 * live.c — the live view's list of streams and its thread: what the
 * collector's loop tells it (a stream accepted, its counts, its end), the
 * view thread's loop with its timer (events per second, feeds without
 * viewers or whose stream ended stopped, ended streams past
 * ORBIT_LIVE_ENDED_KEPT dropped), and the wake-ups that hand feeds' blocks
 * to the HTTP side.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock_ns.h"
#include "live_internal.h"
#include "replay_out.h"

#define TICK_MS 500u
#define ENDED_STOP_MS 3000u /* a feed of an ended stream that has not ended by then */

static uint64_t realtime_ms(void)
{
	return orbit__clock_ns(CLOCK_REALTIME) / 1000000u;
}

static void copy(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

/* ---- the list (under l->mu) ---- */

static struct live_stream *find(struct orbit_live *l, uint32_t id)
{
	for (size_t i = 0; i < l->nstreams; i++)
		if (l->streams[i].id == id)
			return &l->streams[i];
	return NULL;
}

/* The oldest ended stream without a feed goes when more than the kept
 * number have ended. */
static void drop_ended(struct orbit_live *l)
{
	size_t ended = 0;
	for (size_t i = 0; i < l->nstreams; i++)
		ended += l->streams[i].ended;
	for (size_t i = 0; i < l->nstreams && ended > ORBIT_LIVE_ENDED_KEPT;) {
		struct live_stream *s = &l->streams[i];
		if (!s->ended || s->feed != NULL) {
			i++;
			continue;
		}
		memmove(s, s + 1, (l->nstreams - i - 1) * sizeof *s);
		l->nstreams--;
		ended--;
	}
}

uint32_t orbit__live_stream_add(struct orbit_live *l, const struct orbit_live_stream_info *s)
{
	if (l == NULL)
		return 0;
	uint32_t id = 0;
	pthread_mutex_lock(&l->mu);
	if (l->nstreams == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct live_stream *a = realloc(l->streams, cap * sizeof *a);
		if (a != NULL) {
			l->streams = a;
			l->cap = cap;
		}
	}
	if (l->nstreams < l->cap) {
		struct live_stream *e = &l->streams[l->nstreams++];
		memset(e, 0, sizeof *e);
		e->id = id = ++l->next_id;
		e->pid = s->pid;
		copy(e->peer, sizeof e->peer, s->peer);
		copy(e->host, sizeof e->host, s->host);
		copy(e->process, sizeof e->process, s->process);
		copy(e->command, sizeof e->command, s->command);
		copy(e->file, sizeof e->file, s->file);
		e->started_ms = realtime_ms();
	}
	pthread_mutex_unlock(&l->mu);
	return id;
}

void orbit__live_stream_update(struct orbit_live *l, uint32_t id, uint64_t records, uint64_t lost,
                               uint64_t bytes)
{
	if (l == NULL || id == 0)
		return;
	pthread_mutex_lock(&l->mu);
	struct live_stream *e = find(l, id);
	if (e != NULL) {
		e->records = records;
		e->lost = lost;
		e->bytes = bytes;
	}
	pthread_mutex_unlock(&l->mu);
}

void orbit__live_stream_end(struct orbit_live *l, uint32_t id, const char *why)
{
	if (l == NULL || id == 0)
		return;
	pthread_mutex_lock(&l->mu);
	struct live_stream *e = find(l, id);
	if (e != NULL && !e->ended) {
		e->ended = 1;
		e->ended_ms = realtime_ms();
		copy(e->why, sizeof e->why, why);
	}
	drop_ended(l);
	pthread_mutex_unlock(&l->mu);
}

/* ---- for the HTTP side (view thread) ---- */

struct live_feed *orbit__live_feed_of(struct orbit_live *l, uint32_t id, const char **why)
{
	pthread_mutex_lock(&l->mu);
	struct live_stream *e = find(l, id);
	struct live_feed *f = e ? e->feed : NULL;
	char path[4400];
	if (e != NULL && f == NULL)
		snprintf(path, sizeof path, "%s/%s", l->dir, e->file);
	pthread_mutex_unlock(&l->mu);
	if (e == NULL) {
		*why = "no such stream";
		return NULL;
	}
	if (f != NULL)
		return f;
	unsigned slot = 0;
	while (slot < ORBIT_LIVE_FEEDS && l->feeds[slot] != NULL)
		slot++;
	if (slot == ORBIT_LIVE_FEEDS) {
		*why = "too many streams watched at once";
		return NULL;
	}
	f = malloc(sizeof *f);
	if (f == NULL || orbit__live_feed_start(f, l, id, path) != 0) {
		free(f);
		*why = "cannot start reading the stream";
		return NULL;
	}
	f->idle_since_ms = uv_now(&l->loop);
	l->feeds[slot] = f;
	pthread_mutex_lock(&l->mu);
	e = find(l, id); /* the list may have moved: only this thread drops fed entries */
	if (e != NULL)
		e->feed = f;
	pthread_mutex_unlock(&l->mu);
	return f;
}

char *orbit__live_streams_json(struct orbit_live *l, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	if (f == NULL)
		return NULL;
	struct orbit_rp_out o;
	orbit__rp_out_stream(&o, f, "the list of streams");
	orbit__rp_out_s(&o, "{\"streams\":[");
	pthread_mutex_lock(&l->mu);
	for (size_t i = l->nstreams; i-- > 0;) { /* newest first */
		const struct live_stream *e = &l->streams[i];
		/* Texts the peer chose, escaped as every JSON of Orbit's is. */
		const struct {
			const char *key, *text;
		} texts[] = {{"peer", e->peer},       {"host", e->host}, {"process", e->process},
		             {"command", e->command}, {"file", e->file}, {"why", e->why}};
		orbit__rp_out_printf(
		    &o, "%s{\"id\":%" PRIu32 ",\"pid\":%" PRIu32 ",\"state\":\"%s\"",
		    i + 1 == l->nstreams ? "" : ",", e->id, e->pid, e->ended ? "ended" : "live");
		for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
			orbit__rp_out_printf(&o, ",\"%s\":", texts[t].key);
			orbit__rp_out_json(&o, texts[t].text, strlen(texts[t].text));
		}
		orbit__rp_out_printf(&o,
		                     ",\"events\":%" PRIu64 ",\"lost\":%" PRIu64
		                     ",\"bytes\":%" PRIu64 ",\"rate\":%.0f,\"started_ms\":%" PRIu64
		                     ",\"ended_ms\":%" PRIu64 ",\"viewers\":%u}",
		                     e->records, e->lost, e->bytes, e->rate, e->started_ms,
		                     e->ended_ms, e->feed ? e->feed->nviewers : 0u);
	}
	pthread_mutex_unlock(&l->mu);
	orbit__rp_out_s(&o, "]}\n");
	int bad = orbit__rp_out_close(&o) != 0; /* f stays open */
	if (fclose(f) != 0 || bad) {
		free(buf);
		return NULL;
	}
	return buf;
}

int orbit__live_capture_of(struct orbit_live *l, uint32_t id, char *path, size_t n, uint64_t *bytes,
                           char *name, size_t name_len)
{
	pthread_mutex_lock(&l->mu);
	const struct live_stream *e = find(l, id);
	if (e != NULL) {
		snprintf(path, n, "%s/%s", l->dir, e->file);
		snprintf(name, name_len, "%s", e->file);
		*bytes = e->bytes;
	}
	pthread_mutex_unlock(&l->mu);
	return e ? 0 : -1;
}

void orbit__live_wake(struct orbit_live *l)
{
	uv_async_send(&l->wake);
}

/* ---- the view thread ---- */

static void feed_drop(struct orbit_live *l, unsigned slot)
{
	struct live_feed *f = l->feeds[slot];
	l->feeds[slot] = NULL;
	pthread_mutex_lock(&l->mu);
	struct live_stream *e = find(l, f->stream);
	if (e != NULL)
		e->feed = NULL;
	pthread_mutex_unlock(&l->mu);
	orbit__live_feed_free(f);
}

static void on_wake(uv_async_t *a)
{
	struct orbit_live *l = a->data;
	if (atomic_load_explicit(&l->stopping, memory_order_acquire)) {
		for (unsigned i = 0; i < ORBIT_LIVE_FEEDS; i++)
			if (l->feeds[i] != NULL)
				feed_drop(l, i);
		uv_timer_stop(&l->tick);
		orbit__live_http_stop(l);
		uv_close((uv_handle_t *)&l->tick, NULL);
		uv_close((uv_handle_t *)&l->wake, NULL);
		return;
	}
	for (unsigned i = 0; i < ORBIT_LIVE_FEEDS; i++) {
		struct live_feed *f = l->feeds[i];
		if (f == NULL)
			continue;
		orbit__live_http_deliver(f);
		if (atomic_load_explicit(&f->done, memory_order_acquire) && !f->joined) {
			pthread_join(f->thread, NULL); /* it has returned, or is about to */
			f->joined = 1;
		}
	}
}

static void on_tick(uv_timer_t *t)
{
	struct orbit_live *l = t->data;
	uint64_t now = uv_now(&l->loop);
	pthread_mutex_lock(&l->mu);
	for (size_t i = 0; i < l->nstreams; i++) {
		struct live_stream *e = &l->streams[i];
		if (e->rate_at_ms && now > e->rate_at_ms && !e->ended)
			e->rate = (double)(e->records - e->rate_records) * 1000.0 /
			          (double)(now - e->rate_at_ms);
		else if (e->ended)
			e->rate = 0;
		e->rate_records = e->records;
		e->rate_at_ms = now;
		/* The feed of a stream the collector closed without an end:
		 * the reader would wait for more. */
		if (e->feed != NULL && e->ended && realtime_ms() - e->ended_ms > ENDED_STOP_MS)
			atomic_store_explicit(&e->feed->stop, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&l->mu);
	for (unsigned i = 0; i < ORBIT_LIVE_FEEDS; i++) {
		struct live_feed *f = l->feeds[i];
		if (f != NULL && f->nviewers == 0 && now - f->idle_since_ms > ORBIT_LIVE_IDLE_MS)
			feed_drop(l, i);
	}
	pthread_mutex_lock(&l->mu);
	drop_ended(l);
	pthread_mutex_unlock(&l->mu);
}

static void *view_main(void *arg)
{
	struct orbit_live *l = arg;
	uv_run(&l->loop, UV_RUN_DEFAULT);
	return NULL;
}

static void live_free(struct orbit_live *l)
{
	orbit__live_http_free(l);
	pthread_mutex_destroy(&l->mu);
	free(l->streams);
	free(l->dir);
	free(l->token);
	free(l);
}

int orbit__live_start(const struct orbit_live_options *o, struct orbit_live **out, char *url,
                      size_t url_len, char *why, size_t n)
{
	struct orbit_live *l = calloc(1, sizeof *l);
	if (l == NULL) {
		snprintf(why, n, "out of memory");
		return -1;
	}
	l->opt = *o;
	l->dir = strdup(o->dir);
	if (o->token_len > 0) {
		l->token = malloc(o->token_len);
		if (l->token != NULL)
			memcpy(l->token, o->token, o->token_len);
	}
	l->opt.token = l->token;
	uint8_t r[32];
	if (l->dir == NULL || (o->token_len > 0 && l->token == NULL) ||
	    getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
		snprintf(why, n, "%s",
		         l->dir == NULL ? "out of memory" : "no random bytes for a session");
		free(l->dir);
		free(l->token);
		free(l);
		return -1;
	}
	for (unsigned i = 0; i < sizeof r; i++)
		snprintf(l->session + 2 * i, 3, "%02x", r[i]);
	pthread_mutex_init(&l->mu, NULL);
	atomic_init(&l->stopping, 0);
	int err = uv_loop_init(&l->loop);
	if (err != 0) {
		snprintf(why, n, "cannot start its event loop: %s", uv_strerror(err));
		pthread_mutex_destroy(&l->mu);
		free(l->dir);
		free(l->token);
		free(l);
		return -1;
	}
	uv_async_init(&l->loop, &l->wake, on_wake);
	l->wake.data = l;
	uv_timer_init(&l->loop, &l->tick);
	l->tick.data = l;
	if (orbit__live_http_start(l, url, url_len, why, n) != 0) {
		uv_close((uv_handle_t *)&l->wake, NULL);
		uv_close((uv_handle_t *)&l->tick, NULL);
		uv_run(&l->loop, UV_RUN_DEFAULT);
		uv_loop_close(&l->loop);
		live_free(l);
		return -1;
	}
	uv_timer_start(&l->tick, on_tick, TICK_MS, TICK_MS);
	err = pthread_create(&l->thread, NULL, view_main, l);
	if (err != 0) {
		snprintf(why, n, "cannot start its thread: %s", strerror(err));
		atomic_store(&l->stopping, 1);
		on_wake(&l->wake);
		uv_run(&l->loop, UV_RUN_DEFAULT);
		uv_loop_close(&l->loop);
		live_free(l);
		return -1;
	}
	*out = l;
	return 0;
}

void orbit__live_stop(struct orbit_live *l)
{
	if (l == NULL)
		return;
	atomic_store_explicit(&l->stopping, 1, memory_order_release); /* on_wake's acquire */
	uv_async_send(&l->wake);
	pthread_join(l->thread, NULL);
	/* The feeds are stopped and freed; the connections h2o holds, with
	 * l, go with the process, which is about to end (the caller keeps l). */
}
