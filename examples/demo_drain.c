/*
 * demo_drain.c — an instrumented program that also shows what the agent's
 * drain saw: four threads run nested scopes, values and async spans; the
 * agent drains the scope rings every 10 ms into a sink that rebuilds scopes
 * (format/reconstruct.h); at the end a table of scopes by name and the loss
 * equation are printed.
 *
 *   demo-drain [--threads N] [--iterations N]
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "lifecycle.h"
#include "orbit.h"
#include "reconstruct.h"

/* ---- the instrumented program ---- */

static int iterations = 2000;

static uint64_t work(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char name[32];
	snprintf(name, sizeof name, "worker %d", id);
	ORBIT_THREAD_NAME(name);
	uint64_t sink = 0;
	for (int i = 0; i < iterations; i++) {
		ORBIT_SCOPE("frame");
		{
			ORBIT_SCOPE_WITH_COLOR("update physics", 0x3366ccff);
			sink += work((uint64_t)i);
		}
		ORBIT_START("render");
		sink += work(sink);
		if (i % 100 == 0)
			ORBIT_START_ASYNC("upload batch", (uint64_t)id << 32 | (uint64_t)i);
		if (i % 100 == 50)
			ORBIT_STOP_ASYNC((uint64_t)id << 32 | (uint64_t)(i - 50));
		ORBIT_STOP();
		ORBIT_INT("queue depth", (int)(sink % 17));
	}
	return (void *)(uintptr_t)sink;
}

/* ---- what the drain saw ---- */

struct row {
	char name[64];
	uint64_t count, total_ns, max_ns;
	uint32_t max_depth;
	int async;
};

static struct {
	struct orbit_reconstruct *rc;
	struct row rows[32];
	int nrows;
	uint64_t values, threads_named, unfinished;
} seen;

static void on_event(void *ctx, const struct orbit_event *ev)
{
	(void)ctx;
	if (ev->type == ORBIT_EVENT_VALUE) {
		seen.values++;
		return;
	}
	if (ev->type == ORBIT_EVENT_THREAD_NAME) {
		seen.threads_named++;
		return;
	}
	if (ev->unfinished) {
		seen.unfinished++;
		return;
	}
	int i = 0;
	while (i < seen.nrows && (strlen(seen.rows[i].name) != ev->name_len ||
	                          memcmp(seen.rows[i].name, ev->name, ev->name_len) != 0))
		i++;
	if (i == seen.nrows) {
		if (seen.nrows == 32 || ev->name_len >= sizeof seen.rows[0].name)
			return;
		memcpy(seen.rows[i].name, ev->name, ev->name_len);
		seen.rows[i].async = ev->type == ORBIT_EVENT_ASYNC;
		seen.nrows++;
	}
	struct row *r = &seen.rows[i];
	uint64_t d = ev->end - ev->start;
	r->count++;
	r->total_ns += d;
	if (d > r->max_ns)
		r->max_ns = d;
	if (ev->depth > r->max_depth)
		r->max_depth = ev->depth;
}

static void on_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx;
	orbit__reconstruct_batch(seen.rc, ring, first, recs, n);
}

int main(int argc, char **argv)
{
	int threads = 4;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--iterations") == 0 && i + 1 < argc)
			iterations = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: %s [--threads N] [--iterations N]\n", argv[0]);
			return strcmp(argv[i], "--help") == 0 ? 0 : 1;
		}
	}
	if (threads < 1 || threads > 64 || iterations < 1) {
		fprintf(stderr, "%s: --threads takes 1..64, --iterations a positive number\n",
		        argv[0]);
		return 1;
	}
	seen.rc = orbit__reconstruct_new(on_event, NULL);
	struct orbit__sink sink = {.records = on_records};
	orbit__agent_set_sink(orbit__root_agent(), &sink);
	int err = orbit_init();
	if (err) {
		fprintf(stderr, "orbit_init: %s\n", orbit_strerror(err));
		return 1;
	}
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, (void *)(intptr_t)i);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	orbit_flush();
	struct orbit__agent_stats st;
	orbit__agent_stats(orbit__root_agent(), &st);
	orbit_shutdown();
	orbit__reconstruct_finish(seen.rc);

	printf("%-16s %5s %10s %12s %12s %9s\n", "scope", "depth", "count", "total ms", "mean us",
	       "max us");
	for (int i = 0; i < seen.nrows; i++) {
		const struct row *r = &seen.rows[i];
		printf("%-16s %5s %10" PRIu64 " %12.3f %12.3f %9.3f\n", r->name,
		       r->async ? "async" : (char[2]){(char)('0' + r->max_depth), 0}, r->count,
		       r->total_ns / 1e6, r->total_ns / 1e3 / (double)r->count, r->max_ns / 1e3);
	}
	printf("values %" PRIu64 ", thread names %" PRIu64 ", unfinished %" PRIu64 "\n",
	       seen.values, seen.threads_named, seen.unfinished);
	uint64_t lost = st.lost_lapped + st.lost_dead + st.lost_backstop;
	printf("events claimed %" PRIu64 " = drained %" PRIu64 " + lost %" PRIu64 ": %s\n",
	       st.claimed, st.drained, lost,
	       st.claimed == st.drained + lost ? "holds" : "DOES NOT HOLD");
	orbit__reconstruct_free(seen.rc);
	return st.claimed == st.drained + lost ? 0 : 1;
}
