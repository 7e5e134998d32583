/*
 * live_feed.c — one stream's capture read while it is written, on a thread
 * of its own: orbit-replay's reader following the file (replay.h, follow)
 * with its --html exporter in live mode, which hands over the page's data
 * block of the stream's history about every ORBIT_LIVE_EVERY_NS. Each
 * block becomes one Server-Sent Event, the feed's newest, replacing the
 * one before (which lives on while a viewer still sends it).
 *
 * The read ends when the stream does (its EndOfStream, or the file's end
 * once the collector closed it) or when the view thread sets stop: the
 * reader looks at it every 50 ms while it waits for more.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "clock_ns.h"
#include "export/replay_export.h"
#include "live_internal.h"
#include "replay.h"

void orbit__live_block_unref(struct live_block *b)
{
	if (b != NULL && atomic_fetch_sub_explicit(&b->refs, 1, memory_order_acq_rel) == 1)
		free(b);
}

/* The block as an event: "event: block\n", "data: LINE\n" per line, "\n". */
static struct live_block *block_event(const char *text, size_t len)
{
	static const char head[] = "event: block\n";
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += text[i] == '\n';
	struct live_block *b = malloc(sizeof *b + sizeof head + len + lines * 7 + 2);
	if (b == NULL)
		return NULL;
	char *w = b->data;
	memcpy(w, head, sizeof head - 1);
	w += sizeof head - 1;
	for (size_t i = 0; i < len;) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;
		if (n > 0) {
			memcpy(w, "data: ", 6);
			memcpy(w + 6, text + i, n);
			w[6 + n] = '\n';
			w += 7 + n;
		}
		i += n + (nl != NULL);
	}
	*w++ = '\n';
	b->len = (size_t)(w - b->data);
	atomic_init(&b->refs, 1);
	return b;
}

static void on_block(void *ctx, const char *text, size_t len, uint64_t cost_ns)
{
	struct live_feed *f = ctx;
	f->allow_ns += (int64_t)cost_ns; /* the budget is the reading's: blocks pace themselves */
	struct live_block *b = block_event(text, len);
	if (b == NULL)
		return; /* out of memory: viewers keep the block before */
	pthread_mutex_lock(&f->l->mu);
	struct live_block *old = f->latest;
	b->seq = ++f->seq;
	f->latest = b;
	pthread_mutex_unlock(&f->l->mu);
	orbit__live_block_unref(old);
	orbit__live_wake(f->l);
}

/* The reader's question before each frame (format/frame.h): passed over
 * before the tail the feed starts at, and while the thread has used its
 * share of the time (ORBIT_LIVE_CPU_PERMILLE) and its burst. */
static int skip_frame(void *ctx, uint64_t offset, size_t len)
{
	struct live_feed *f = ctx;
	(void)len;
	if (offset < f->skip_before)
		return 1;
	uint64_t cpu = orbit__clock_ns(CLOCK_THREAD_CPUTIME_ID),
	         wall = orbit__clock_ns(CLOCK_MONOTONIC);
	if (f->wall_then == 0) {
		f->allow_ns = ORBIT_LIVE_BURST_NS;
	} else {
		f->allow_ns += (int64_t)((wall - f->wall_then) * ORBIT_LIVE_CPU_PERMILLE / 1000u) -
		               (int64_t)(cpu - f->cpu_then);
		if (f->allow_ns > ORBIT_LIVE_BURST_NS)
			f->allow_ns = ORBIT_LIVE_BURST_NS;
	}
	f->wall_then = wall;
	f->cpu_then = cpu;
	return f->allow_ns <= 0;
}

static void *feed_main(void *arg)
{
	struct live_feed *f = arg;
	static const struct orbit_rp_exporter *const exporters[] = {&orbit__rp_export_html, NULL};
	const char *inputs[1] = {f->path};
	FILE *quiet = fopen("/dev/null", "w");
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	o.inputs = inputs;
	o.ninputs = 1;
	o.quiet = 1;
	o.progress = 0;
	o.follow = 1;
	o.stop = &f->stop;
	o.exporters = exporters;
	o.html_max_scopes = ORBIT_LIVE_SPANS;
	o.html_live = on_block;
	o.html_live_ctx = f;
	o.html_live_history_ns = f->l->opt.history_ns;
	o.html_live_every_ns = ORBIT_LIVE_EVERY_NS;
	o.frame_skip = skip_frame;
	o.frame_skip_ctx = f;
	struct stat st;
	if (stat(f->path, &st) == 0 && (uint64_t)st.st_size > ORBIT_LIVE_TAIL)
		f->skip_before = (uint64_t)st.st_size - ORBIT_LIVE_TAIL;
	if (quiet != NULL)
		o.out = o.err = quiet;
	orbit__replay_run(&o);
	if (quiet != NULL)
		fclose(quiet);
	atomic_store_explicit(&f->done, 1, memory_order_release);
	orbit__live_wake(f->l);
	return NULL;
}

int orbit__live_feed_start(struct live_feed *f, struct orbit_live *l, uint32_t stream,
                           const char *path)
{
	memset(f, 0, sizeof *f);
	f->l = l;
	f->stream = stream;
	f->path = strdup(path);
	if (f->path == NULL)
		return -ENOMEM;
	atomic_init(&f->done, 0);
	atomic_init(&f->stop, 0);
	int err = pthread_create(&f->thread, NULL, feed_main, f);
	if (err != 0) {
		free(f->path);
		return -err;
	}
	return 0;
}

void orbit__live_feed_free(struct live_feed *f)
{
	atomic_store_explicit(&f->stop, 1, memory_order_relaxed); /* the reader looks every 50 ms */
	if (!f->joined)
		pthread_join(f->thread, NULL);
	f->joined = 1;
	orbit__live_block_unref(f->latest);
	free(f->path);
	free(f);
}
