/*
 * ack.c — acknowledgements: telling an agent how much of its stream is in
 * the capture file (docs/format.md section 7 is normative).
 *
 * Only an agent whose Handshake has acknowledgements = 1 gets them. Each Ack
 * is one frame holding one Ack packet: frames (how many of the stream's
 * frames, the Handshake frame being the first, are written to the file),
 * bytes (their size), synced_frames (how many of those were fdatasync'ed)
 * and end (non-zero on the last one: why the stream ended). The guarantees:
 *
 *  1. An Ack never says more than is true: frames counts writes that have
 *     completed, synced_frames fdatasyncs that have completed (a sync covers
 *     what was written before it started).
 *  2. Values never decrease, and consecutive Acks differ (no Ack without
 *     progress, except the last, which says why the stream ended).
 *  3. Low rate: one Ack right after the Handshake frame is written, then at
 *     most one per ORBIT_COLLECTOR_ACK_INTERVAL_MS unless
 *     ORBIT_COLLECTOR_ACK_BYTES more were written, plus one after each
 *     sync. At most one Ack write is in flight per connection: a peer that
 *     does not read costs one buffer, never a queue.
 *  4. Bounded lag: the periodic timer sends what is due, so a written frame
 *     is acknowledged within about a second; a file is fdatasync'ed at most
 *     every ORBIT_COLLECTOR_SYNC_INTERVAL_MS while frames arrive, at once
 *     after the frame holding EndOfStream, and before the last Ack.
 *  5. The last Ack follows the file's final fsync; then our side is shut
 *     down and the peer's bytes are read and dropped until it hangs up, at
 *     most ORBIT_COLLECTOR_LINGER_MS, so that closing never resets the
 *     connection (and the Ack with it).
 */
#include "collector.h"
#include "reply.h" /* orbit__reply_ack_encode */

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

size_t orbit__ack_encode(struct orbit_collector *c, uint64_t frames, uint64_t bytes,
                         uint64_t synced, uint32_t end, uint8_t *out)
{
	struct orbit_ack a = {frames, bytes, synced, end};
	return orbit__reply_ack_encode(&c->ack_writer, &a, out);
}

static void on_ack_written(uv_write_t *req, int status)
{
	struct orbit_conn *k = req->data;

	(void)status; /* a peer that is gone shows on the read side */
	k->ack_writing = 0;
	if (k->ack_again) { /* one came due meanwhile */
		k->ack_again = 0;
		orbit__ack_maybe(k, 1);
	}
}

void orbit__ack_maybe(struct orbit_conn *k, int force)
{
	uint64_t now = uv_now(&k->c->loop);

	if (!k->acks || !k->handshaken || k->closing || k->end_sent || k->tcp_closing)
		return;
	if (k->file.frames == k->acked_frames && k->synced_frames == k->acked_synced)
		return;
	if (k->acked_frames == 0)
		force = 1; /* the Handshake frame: the stream is accepted */
	if (!force && now - k->ack_ms < ORBIT_COLLECTOR_ACK_INTERVAL_MS &&
	    k->file.size - k->acked_bytes < ORBIT_COLLECTOR_ACK_BYTES)
		return;
	if (k->ack_writing) {
		k->ack_again = 1;
		return;
	}
	size_t n = orbit__ack_encode(k->c, k->file.frames, k->file.size, k->synced_frames,
	                             ORBIT_ACK_GOES_ON, k->ack_out);
	uv_buf_t b = uv_buf_init((char *)k->ack_out, (unsigned)n);
	if (n == 0 || uv_write(&k->ack_req, (uv_stream_t *)&k->tcp, &b, 1, on_ack_written) != 0)
		return;
	k->ack_writing = 1;
	k->acked_frames = k->file.frames;
	k->acked_synced = k->synced_frames;
	k->acked_bytes = k->file.size;
	k->ack_ms = now;
}

static void on_synced(uv_fs_t *req)
{
	struct orbit_conn *k = req->data;
	ssize_t r = req->result;

	uv_fs_req_cleanup(req);
	k->syncing = 0;
	if (r < 0) {
		if (k->file_error[0] == '\0')
			snprintf(k->file_error, sizeof k->file_error, "fdatasync failed: %s",
			         uv_strerror((int)r));
		if (k->end == ORBIT_ACK_GOES_ON)
			k->end = ORBIT_ACK_FILE_ERROR;
		if (!k->closing)
			orbit__conn_close(k, 1, "capture file error");
	} else {
		k->synced_frames = k->sync_target;
	}
	if (k->finish_after_sync) {
		k->finish_after_sync = 0;
		orbit__conn_finish(k);
		return;
	}
	orbit__ack_maybe(k, 1);
}

void orbit__ack_sync_maybe(struct orbit_conn *k)
{
	uint64_t now = uv_now(&k->c->loop);

	if (!k->acks || !k->handshaken || k->closing || k->syncing || k->file.fd < 0 ||
	    k->synced_frames == k->file.frames)
		return;
	if (!k->sync_now && k->sync_ms != 0 && now - k->sync_ms < ORBIT_COLLECTOR_SYNC_INTERVAL_MS)
		return;
	if (uv_fs_fdatasync(&k->c->loop, &k->sync_req, k->file.fd, on_synced) != 0)
		return;
	k->syncing = 1;
	k->sync_now = 0;
	k->sync_target = k->file.frames;
	k->sync_ms = now;
}

static void on_last_written(uv_write_t *req, int status)
{
	(void)req; /* on_shut, which follows, decides */
	(void)status;
}

static void on_shut(uv_shutdown_t *req, int status)
{
	struct orbit_conn *k = req->data;

	if (k->tcp_closing)
		return;
	if (status < 0 || k->eof) {
		orbit__conn_tcp_close(k);
		return;
	}
	k->lingering = 1;
	k->len = 0; /* what is left of the stream is not read any more */
	orbit__conn_read_start(k);
}

void orbit__ack_last(struct orbit_conn *k)
{
	struct orbit_collector *c = k->c;
	uint32_t end = k->end != ORBIT_ACK_GOES_ON ? k->end
	               : c->stopping               ? ORBIT_ACK_STOPPING
	                                           : ORBIT_ACK_PEER_ENDED;
	size_t n =
	    orbit__ack_encode(c, k->file.frames, k->file.size, k->synced_frames, end, k->last_out);
	uv_buf_t b = uv_buf_init((char *)k->last_out, (unsigned)n);

	k->end_sent = 1;
	k->linger_until = uv_now(&c->loop) + ORBIT_COLLECTOR_LINGER_MS;
	k->shut_req.data = k;
	/* Queued behind an Ack write in flight, if any: libuv keeps the order. */
	if (n == 0 || uv_write(&k->last_req, (uv_stream_t *)&k->tcp, &b, 1, on_last_written) != 0 ||
	    uv_shutdown(&k->shut_req, (uv_stream_t *)&k->tcp, on_shut) != 0)
		orbit__conn_tcp_close(k);
}

void orbit__ack_tick(struct orbit_conn *k, uint64_t now)
{
	if (k->linger_until != 0 && now >= k->linger_until) {
		orbit__conn_tcp_close(k);
		return;
	}
	orbit__ack_maybe(k, 0);
	orbit__ack_sync_maybe(k);
}
