/*
 * replay_export_clickhouse_send.c — the loader's sender thread: one INSERT
 * in flight while the exporter fills the next batch, so the replay and
 * ClickHouse work at the same time instead of in turn (docs/performance.md,
 * "ClickHouse": the server's work per row is about three times the
 * loader's).
 *
 * The handover is one slot under a mutex:
 *
 *   exporter: wait   until the slot is empty (the INSERT before is done),
 *                    and take its outcome;
 *             send   fill the slot (the SQL and the pieces of the block),
 *                    wake the sender; the memory the pieces point to is the
 *                    sender's until the next wait returns.
 *   sender:          take the slot, run the INSERT, store the outcome,
 *                    empty the slot, wake the exporter.
 *
 * Every field of struct orbit_rp_ch_sender below `mu` is read and written
 * with mu held; the HTTP client and the block's memory change hands with
 * the slot (the mutex orders the exporter's writes before the sender's
 * reads, and the sender's use before the exporter's next one). The
 * exporter never uses the HTTP client while the slot is full: it waits
 * first.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export_clickhouse.h"

struct orbit_rp_ch_sender {
	struct orbit_rp_ch_http *http; /* the sender's while full */
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv; /* the slot filled, emptied, or quit */
	int full;          /* an INSERT is handed over */
	int quit;
	const char *sql;
	const struct iovec *iov;
	int n;
	int failed; /* the last INSERT failed: e says why */
	struct orbit_rp_ch_error e;
};

static void *sender_main(void *arg)
{
	struct orbit_rp_ch_sender *s = arg;
	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (!s->full && !s->quit)
			pthread_cond_wait(&s->cv, &s->mu);
		if (!s->full)
			break; /* quit with nothing handed over */
		const char *sql = s->sql;
		const struct iovec *iov = s->iov;
		int n = s->n;
		pthread_mutex_unlock(&s->mu);
		struct orbit_rp_ch_error e = {0};
		int r = orbit__rp_ch_http_run(s->http, sql, iov, n, 0, NULL, &e);
		pthread_mutex_lock(&s->mu);
		if (r != 0) {
			s->failed = 1;
			s->e = e;
		}
		s->full = 0;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

struct orbit_rp_ch_sender *orbit__rp_ch_sender_start(struct orbit_rp_ch_http *http)
{
	struct orbit_rp_ch_sender *s = calloc(1, sizeof *s);
	if (s == NULL)
		return NULL;
	s->http = http;
	if (pthread_mutex_init(&s->mu, NULL) != 0) {
		free(s);
		return NULL;
	}
	if (pthread_cond_init(&s->cv, NULL) != 0 ||
	    pthread_create(&s->thread, NULL, sender_main, s) != 0) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		free(s);
		return NULL;
	}
	return s;
}

int orbit__rp_ch_sender_wait(struct orbit_rp_ch_sender *s, struct orbit_rp_ch_error *e)
{
	pthread_mutex_lock(&s->mu);
	while (s->full)
		pthread_cond_wait(&s->cv, &s->mu);
	int failed = s->failed;
	if (failed)
		*e = s->e;
	s->failed = 0;
	pthread_mutex_unlock(&s->mu);
	return failed ? -1 : 0;
}

void orbit__rp_ch_sender_send(struct orbit_rp_ch_sender *s, const char *sql,
                              const struct iovec *iov, int n)
{
	pthread_mutex_lock(&s->mu);
	s->sql = sql;
	s->iov = iov;
	s->n = n;
	s->full = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

void orbit__rp_ch_sender_stop(struct orbit_rp_ch_sender *s)
{
	if (s == NULL)
		return;
	pthread_mutex_lock(&s->mu);
	s->quit = 1; /* an INSERT still handed over is finished first */
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->thread, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
