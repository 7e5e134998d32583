/*
 * conn.c — one agent connection: read, check, write, close. The algorithm
 * is described in collector.h; the guarantees it keeps:
 *
 *  1. Nothing reaches a file that was not checked: whole frame, checksum,
 *     every packet decoded and validated; the handshake first.
 *  2. A file only ever holds complete frames, in the order received, byte
 *     for byte: a failed write is cut back to the last complete one. The
 *     one frame a collector adds is its own Ack ending a capture cut at a
 *     size cap (caps.c), itself a complete frame.
 *  3. A connection holds at most ORBIT_HANDSHAKE_FRAME_MAX bytes of input
 *     until its handshake is accepted, ORBIT_COLLECTOR_BUF_MAX after, and is
 *     not read while its checked frames are being written.
 *  4. Every connection ends with exactly one log line: the peer, the file
 *     and its frames, and why it ended when that was not the peer's orderly
 *     close.
 */
#include "collector.h"
#include "live.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "capture.h"

#define IDLE_BUF_MS 1000 /* an empty input buffer unused this long is freed */

/* Why the stream ends, for its last Ack: the first reason given stands. */
static void conn_end(struct orbit_conn *k, uint32_t end)
{
	if (k->end == ORBIT_ACK_GOES_ON)
		k->end = end;
}

/* ---- the input buffer ---- */

/* No larger buffer for a peer that has not shown a good handshake. */
static size_t buf_limit(const struct orbit_conn *k)
{
	return k->handshaken ? ORBIT_COLLECTOR_BUF_MAX : ORBIT_HANDSHAKE_FRAME_MAX;
}

static int buf_reserve(struct orbit_conn *k, size_t need)
{
	size_t max = buf_limit(k);

	if (need <= k->cap)
		return 0;
	if (need > max)
		return -E2BIG;
	size_t cap = k->cap ? k->cap * 2 : ORBIT_COLLECTOR_READ_CHUNK;
	while (cap < need)
		cap *= 2;
	if (cap > max)
		cap = max;
	uint8_t *b = realloc(k->buf, cap);
	if (b == NULL)
		return -ENOMEM;
	k->buf = b;
	k->cap = cap;
	return 0;
}

/* Drops the first n bytes (written). The buffer is kept while the peer is
 * sending (no realloc per frame) and freed by orbit__conn_tick once the
 * connection is idle. */
static void buf_consume(struct orbit_conn *k, size_t n)
{
	memmove(k->buf, k->buf + n, k->len - n);
	k->len -= n;
	k->stream_off += n;
}

/* ---- checking ---- */

static int handshake_accept(struct orbit_conn *k, const Orbit__Handshake *h, char *why, size_t n)
{
	struct orbit_collector *c = k->c;
	int err = orbit__pool_take_stream(k, why, n);

	if (err == 0)
		err = orbit__caps_admit(k, k->frame_len, why, n);
	if (err)
		return err;
	err =
	    orbit__capfile_create(c->dirfd, h->process_name, h->pid, (int64_t)time(NULL), &k->file);
	if (err) {
		snprintf(k->file_error, sizeof k->file_error, "cannot create: %s", strerror(-err));
		snprintf(why, n, "no capture file");
		return err;
	}
	k->handshaken = 1;
	k->handshake_ms = uv_now(&c->loop);
	k->pid = h->pid;
	k->acks = h->acknowledgements == 1;
	uv_tcp_keepalive(&k->tcp, 1, 60); /* a stream may be quiet for long */
	orbit__log(c, 0, "%s: pid %" PRIu32 " -> %s/%s", k->peer, h->pid, c->dir, k->file.name);
	if (c->live != NULL) {
		char cmd[1024];
		size_t at = 0;
		cmd[0] = '\0';
		for (size_t i = 0; i < h->n_command_line && at + 1 < sizeof cmd; i++)
			at += (size_t)snprintf(cmd + at, sizeof cmd - at, "%s%s", i ? " " : "",
			                       h->command_line[i]);
		struct orbit_live_stream_info info = {.peer = k->peer,
		                                      .host = h->host_name,
		                                      .process = h->process_name,
		                                      .command = cmd,
		                                      .file = k->file.name,
		                                      .pid = h->pid};
		k->live_id = orbit__live_stream_add(c->live, &info);
	}
	return 0;
}

/* What the collector keeps of a stream's packets: its loss (format/loss.h,
 * the sum every reader makes) and whether it ended. */
static void packet_account(struct orbit_conn *k, const Orbit__Packet *p)
{
	if (p->body_case == ORBIT__PACKET__BODY_END)
		k->ended = 1;
	else if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH)
		k->records += p->ring_batch->count;
	else
		orbit__loss_account_packet(&k->loss, p); /* no memory: that packet is not counted */
}

/* A packet of a frame that met the rules (frame_rules.c): the Handshake is
 * the token's check and the stream's file; the rest is accounted. */
static int packet_take(void *ctx, const Orbit__Packet *p, char *why, size_t n)
{
	struct orbit_conn *k = ctx;
	if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
		const Orbit__Handshake *h = p->handshake;
		if (k->c->token_len > 0 && !orbit__secret_equal(h->token.data, h->token.len,
		                                                k->c->token, k->c->token_len)) {
			snprintf(why, n,
			         h->token.len ? "wrong token" : "no token (--token-file is set)");
			return -EACCES;
		}
		return handshake_accept(k, h, why, n);
	}
	packet_account(k, p);
	if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH ||
	    p->body_case == ORBIT__PACKET__BODY_FTRACE_PAGE ||
	    p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE)
		k->data_ms = uv_now(&k->c->loop);
	return 0;
}

static int frame_check(struct orbit_conn *k, const uint8_t *frame, size_t len, char *why, size_t n)
{
	return orbit__frame_rules(&k->c->scratch, frame, len, !k->handshaken, packet_take, k, why,
	                          n);
}

/* ---- writing ---- */

static void on_written(uv_fs_t *req);

/* The write failed: keep the frames that were written whole (the batch was
 * checked, so orbit__frame_size walks it) and cut the file back to the end
 * of the last one. */
static void write_failed(struct orbit_conn *k, int err)
{
	char extra[96] = "";
	size_t keep = 0, flen;
	uint32_t frames = 0;
	uint64_t at = k->file.size + k->wdone;

	while (keep < k->wdone && orbit__frame_size(k->buf + keep, k->wlen - keep, &flen) == 0 &&
	       keep + flen <= k->wdone) {
		keep += flen;
		frames++;
	}
	if (k->wmarker) /* the cut frame goes whole or not at all */
		keep = frames = 0;
	orbit__caps_count(k->c, -(int64_t)(k->wlen - keep));
	k->file.size += keep;
	k->file.frames += frames;
	k->c->bytes += keep;
	k->c->frames += frames;
	if (ftruncate(k->file.fd, (off_t)k->file.size) != 0)
		snprintf(extra, sizeof extra, " (and cutting it back failed: %s)", strerror(errno));
	snprintf(k->file_error, sizeof k->file_error, "write failed at byte %" PRIu64 ": %s%s", at,
	         uv_strerror(err), extra);
	k->writing = 0;
	k->wmarker = 0;
	conn_end(k, ORBIT_ACK_FILE_ERROR);
	orbit__conn_close(k, 1, "capture file error");
}

static void write_submit(struct orbit_conn *k)
{
	uv_buf_t b = uv_buf_init((char *)k->buf + k->wdone, (unsigned)(k->wlen - k->wdone));
	int err = uv_fs_write(&k->c->loop, &k->req, k->file.fd, &b, 1,
	                      (int64_t)(k->file.size + k->wdone), on_written);

	if (err < 0)
		write_failed(k, err);
}

static void write_start(struct orbit_conn *k, size_t len, uint32_t frames)
{
	k->wlen = len;
	k->wdone = 0;
	k->wframes = frames;
	k->writing = 1;
	orbit__caps_count(k->c, (int64_t)len);
	uv_read_stop((uv_stream_t *)&k->tcp);
	write_submit(k);
}

/* The stream reached a size cap: its file ends with the collector's own
 * frame, an Ack saying so (docs/format.md section 7), and the rest of the
 * input is dropped. */
static void cut_write(struct orbit_conn *k)
{
	uint8_t m[ORBIT_ACK_FRAME_MAX];
	size_t n = orbit__caps_marker(k, m);

	conn_end(k, k->cut);
	k->len = 0;
	if (n == 0 || buf_reserve(k, n) != 0) {
		orbit__conn_close(k, 1, "%s", k->reason);
		return;
	}
	memcpy(k->buf, m, n);
	k->len = n;
	k->wmarker = 1;
	write_start(k, n, 0);
}

static void on_written(uv_fs_t *req)
{
	struct orbit_conn *k = req->data;
	struct orbit_collector *c = k->c;
	ssize_t r = req->result;

	uv_fs_req_cleanup(req);
	if (r == 0)
		r = UV_EIO; /* no progress: do not spin */
	if (r < 0) {
		write_failed(k, (int)r);
		return;
	}
	k->wdone += (size_t)r;
	if (k->wdone < k->wlen) {
		write_submit(k);
		return;
	}
	k->file.size += k->wlen;
	k->file.frames += k->wframes;
	c->bytes += k->wlen;
	c->frames += k->wframes;
	k->marker_done |= k->wmarker;
	k->wmarker = 0;
	buf_consume(k, k->wlen);
	k->writing = 0;
	if (k->ended && !k->end_synced) { /* the agent may be waiting for this */
		k->end_synced = 1;
		k->sync_now = 1;
	}
	orbit__ack_maybe(k, k->ended);
	orbit__ack_sync_maybe(k);
	if (k->len > 0)
		k->partial_since_ms = uv_now(&c->loop);
	if (k->closing) {
		orbit__conn_close(k, 0, NULL); /* finishes it */
	} else if (k->cut && !k->marker_done) {
		cut_write(k);
	} else if (k->failed || c->stopping) {
		conn_end(k, k->failed ? ORBIT_ACK_BAD_FRAME : ORBIT_ACK_STOPPING);
		orbit__conn_close(k, k->failed, "%s", k->failed ? k->reason : "collector stopping");
	} else if (k->cut) {
		conn_end(k, k->cut);
		orbit__conn_close(k, 1, "%s", k->reason);
	} else {
		orbit__conn_read_start(k);
	}
}

/* ---- refusing an agent ---- */

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)status;
	free(req);
}

/*
 * The handshake was refused: the agent is told in one line
 * ("orbit-collector: rejected: WHY"), the only bytes a collector sends
 * before a handshake is accepted, so that it stops tracing instead of
 * reconnecting. The connection then reads and drops whatever comes until
 * the agent hangs up (closing with unread bytes would reset the connection,
 * and the line with it), at most ORBIT_COLLECTOR_LINGER_MS.
 */
static void refuse(struct orbit_conn *k, const char *why)
{
	char line[256];
	int n = snprintf(line, sizeof line, "orbit-collector: rejected: %s\n", why);
	if (n < 0 || (size_t)n >= sizeof line)
		n = (int)sizeof line - 1, line[n - 1] = '\n';
	uv_buf_t b = uv_buf_init(line, (unsigned)n);
	uv_try_write((uv_stream_t *)&k->tcp, &b, 1);
	uv_shutdown_t *req = malloc(sizeof *req);
	if (req == NULL || uv_shutdown(req, (uv_stream_t *)&k->tcp, on_shutdown) != 0)
		free(req);
	k->refusing = 1;
	k->refused_ms = uv_now(&k->c->loop);
	k->len = 0;
}

/* ---- processing what was read ---- */

/*
 * The first frame must be a small Handshake: a peer that has not shown its
 * token gets no buffer and no decompression larger than
 * ORBIT_HANDSHAKE_FRAME_MAX. r and flen are orbit__frame_size's answer.
 */
static int first_frame_small(const uint8_t *buf, size_t len, int r, size_t flen)
{
	unsigned long long content = ZSTD_getFrameContentSize(buf, len);

	if (content != ZSTD_CONTENTSIZE_ERROR && content != ZSTD_CONTENTSIZE_UNKNOWN &&
	    content > ORBIT_HANDSHAKE_FRAME_MAX)
		return -E2BIG;
	if ((r == 0 && flen > ORBIT_HANDSHAKE_FRAME_MAX) ||
	    (r == 1 && len >= ORBIT_HANDSHAKE_FRAME_MAX))
		return -E2BIG;
	return r;
}

static void conn_process(struct orbit_conn *k)
{
	size_t off = 0;
	uint32_t frames = 0;
	int err = 0;
	char why[200];

	while (off < k->len) {
		size_t flen = 0;
		int r = orbit__frame_size(k->buf + off, k->len - off, &flen);

		if (r >= 0 && !k->handshaken)
			r = first_frame_small(k->buf, k->len, r, flen);
		if (r == 0 && k->handshaken &&
		    (k->cut = orbit__caps_check(k, off, flen, k->reason, sizeof k->reason)) != 0)
			break;
		if (r == 1)
			break;
		if (r == -E2BIG) {
			snprintf(why, sizeof why, "the first frame is over %u bytes",
			         ORBIT_HANDSHAKE_FRAME_MAX);
			err = r;
		} else if (r < 0) {
			snprintf(why, sizeof why, "%s", orbit__frame_strerror(r));
			err = r;
		} else {
			k->frame_len = flen;
			err = frame_check(k, k->buf + off, flen, why, sizeof why);
		}
		if (err) {
			k->failed = 1;
			k->error = 1;
			if (k->handshaken)
				snprintf(k->reason, sizeof k->reason,
				         "frame at stream byte %" PRIu64 ": %s",
				         k->stream_off + off, why);
			else
				snprintf(k->reason, sizeof k->reason, "%s", why);
			break;
		}
		off += flen;
		frames++;
	}
	if (k->cut)
		k->len = off; /* the frame that does not fit, and all after it, go */
	if (off > 0) {
		write_start(k, off, frames);
		return;
	}
	if (k->cut) {
		cut_write(k);
		return;
	}
	/* Refused for what the agent sent, or because the directory is full
	 * (not for other file trouble, which a later connection may not have,
	 * nor for want of a free slot): tell it why. */
	if (err && !k->handshaken && k->file_error[0] == '\0' &&
	    (err == -EPROTO || err == -EACCES || err == -EINVAL || err == -EDQUOT)) {
		refuse(k, k->reason);
		return;
	}
	if (err && k->handshaken)
		conn_end(k, ORBIT_ACK_BAD_FRAME);
	if (err)
		orbit__conn_close(k, 1, "%s", k->reason);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
	struct orbit_conn *k = h->data;
	size_t want = k->len + ORBIT_COLLECTOR_READ_CHUNK;

	(void)suggested;
	if (want > buf_limit(k))
		want = buf_limit(k);
	if (want <= k->len || buf_reserve(k, want) != 0) {
		*b = uv_buf_init(NULL, 0); /* the read callback gets UV_ENOBUFS */
		return;
	}
	*b = uv_buf_init((char *)k->buf + k->len, (unsigned)(want - k->len));
}

static void on_eof(struct orbit_conn *k, ssize_t status)
{
	size_t partial = k->len - (k->writing ? k->wlen : 0);
	const char *how = status == UV_EOF ? "closed by the peer" : uv_strerror((int)status);

	if (status == UV_EOF) {
		k->eof = 1;
		conn_end(k, ORBIT_ACK_PEER_ENDED);
	} else {
		k->read_error = 1; /* no last Ack: the connection is gone */
	}
	if (status == UV_ENOBUFS)
		orbit__conn_close(k, 1, "out of memory for its input");
	else if (partial > 0)
		orbit__conn_close(
		    k, 1, "%s inside a frame at stream byte %" PRIu64 " (%zu bytes of it dropped)",
		    how, k->stream_off + (k->len - partial), partial);
	else if (!k->handshaken)
		orbit__conn_close(k, 0, "%s before a handshake", how);
	else if (status == UV_EOF)
		orbit__conn_close(k, 0, NULL);
	else
		orbit__conn_close(k, 0, "%s", how);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
	struct orbit_conn *k = s->data;

	(void)b;
	if (n == 0)
		return;
	if (k->refusing || k->lingering) { /* its bytes go nowhere; its hang-up ends it */
		if (n >= 0)
			k->len = 0;
		else if (k->refusing)
			orbit__conn_close(k, 1, "%s", k->reason);
		else
			orbit__conn_tcp_close(k);
		return;
	}
	if (n < 0) {
		on_eof(k, n);
		return;
	}
	if (k->len == 0)
		k->partial_since_ms = uv_now(&k->c->loop);
	if (k->pending)
		orbit__pool_talked(k);
	k->len += (size_t)n;
	k->last_byte_ms = uv_now(&k->c->loop);
	conn_process(k);
}

void orbit__conn_read_start(struct orbit_conn *k)
{
	int err = uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read);

	if (err && k->lingering) {
		orbit__conn_tcp_close(k);
	} else if (err) {
		k->read_error = 1;
		orbit__conn_close(k, 1, "cannot read: %s", uv_strerror(err));
	}
}

void orbit__conn_start(struct orbit_conn *k)
{
	k->tcp.data = k;
	k->req.data = k;
	k->sync_req.data = k;
	k->ack_req.data = k;
	k->last_req.data = k;
	k->file.fd = -1;
	k->accepted_ms = k->last_byte_ms = uv_now(&k->c->loop);
	orbit__conn_read_start(k);
}

/* ---- closing ---- */

static void conn_report(struct orbit_conn *k)
{
	struct orbit_collector *c = k->c;
	char file[sizeof k->c->dir + 700] = "";

	const struct orbit__loss_totals *t = &k->loss.total;
	char lost[160] = "";
	if (orbit__loss_total(t) != 0)
		snprintf(lost, sizeof lost,
		         " (%" PRIu64 " records of the scope rings, %" PRIu64
		         " log records, %" PRIu64 " kernel events)",
		         t->records, t->log_records, t->kernel_events);
	if (k->handshaken)
		snprintf(
		    file, sizeof file,
		    "%s/%s: %" PRIu64 " frames, %" PRIu64 " bytes, %" PRIu64 " events lost%s%s",
		    c->dir, k->file.name, k->file.frames, k->file.size, orbit__loss_total(t), lost,
		    k->ended         ? ", end of stream"
		    : k->marker_done ? ", cut (the file ends with the collector's Ack)"
		                     : "");
	if (!k->handshaken && k->file_error[0] != '\0')
		orbit__log(c, 1, "%s/%s: %s; refused %s", c->dir, k->file.name, k->file_error,
		           k->peer);
	else if (!k->handshaken && orbit__strangers_report(k))
		orbit__log(c, k->error, "%s: %s%s", k->peer, k->error ? "refused: " : "",
		           k->reason[0] ? k->reason : "closed before a handshake");
	else if (!k->handshaken)
		return; /* counted in the strangers' summary line */
	else if (k->file_error[0] != '\0' && k->file_removed)
		orbit__log(c, 1, "%s/%s: %s; closed %s unanswered, the empty file removed", c->dir,
		           k->file.name, k->file_error, k->peer);
	else if (k->file_error[0] != '\0')
		orbit__log(
		    c, 1,
		    "%s/%s: %s; closed %s, %" PRIu64 " complete frames (%" PRIu64 " bytes) kept",
		    c->dir, k->file.name, k->file_error, k->peer, k->file.frames, k->file.size);
	else if (k->reason[0] != '\0')
		orbit__log(c, k->error, "%s: closed (%s); %s", k->peer, k->reason, file);
	else
		orbit__log(c, 0, "%s: disconnected; %s", k->peer, file);
}

static void conn_maybe_free(struct orbit_conn *k)
{
	if (!k->tcp_closed || !k->finished)
		return;
	conn_report(k);
	orbit__collector_conn_gone(k->c, k);
	free(k->buf);
	orbit__loss_account_free(&k->loss);
	free(k);
}

/* The file is closed: the last Ack, if the agent asked for them. A file
 * that holds no frame (its Handshake could not be written: a full disk)
 * is removed, and no Ack goes (one says frames >= 1, docs/format.md 7.2):
 * the connection closes unanswered, which an agent takes as "retry later",
 * not as a capture. */
static void conn_done(struct orbit_conn *k)
{
	k->finished = 1;
	if (k->handshaken && k->file.frames == 0) {
		if (unlinkat(k->c->dirfd, k->file.name, 0) == 0)
			k->file_removed = 1;
		orbit__conn_tcp_close(k);
	} else if (k->handshaken && k->acks && !k->tcp_closing)
		orbit__ack_last(k);
	conn_maybe_free(k);
}

static void on_fsynced(uv_fs_t *req)
{
	struct orbit_conn *k = req->data;
	ssize_t r = req->result;

	uv_fs_req_cleanup(req);
	if (r < 0 && k->file_error[0] == '\0')
		snprintf(k->file_error, sizeof k->file_error, "fsync failed: %s",
		         uv_strerror((int)r));
	if (r == 0)
		k->synced_frames = k->file.frames;
	if (close(k->file.fd) != 0 && k->file_error[0] == '\0')
		snprintf(k->file_error, sizeof k->file_error, "close failed: %s", strerror(errno));
	k->file.fd = -1;
	conn_done(k);
}

void orbit__conn_finish(struct orbit_conn *k)
{
	if (k->finishing)
		return;
	if (k->syncing) { /* the fdatasync in flight uses the file: after it */
		k->finish_after_sync = 1;
		return;
	}
	k->finishing = 1;
	if (k->file.fd < 0) {
		conn_done(k);
		return;
	}
	int err = uv_fs_fsync(&k->c->loop, &k->req, k->file.fd, on_fsynced);
	if (err < 0) {
		snprintf(k->file_error, sizeof k->file_error, "fsync failed: %s", uv_strerror(err));
		close(k->file.fd);
		k->file.fd = -1;
		conn_done(k);
	}
}

static void on_tcp_closed(uv_handle_t *h)
{
	struct orbit_conn *k = h->data;

	k->tcp_closed = 1;
	conn_maybe_free(k);
}

void orbit__conn_tcp_close(struct orbit_conn *k)
{
	if (k->tcp_closing)
		return;
	k->tcp_closing = 1;
	uv_read_stop((uv_stream_t *)&k->tcp);
	/* A stranger that was told nothing is reset: no FIN exchange and no
	 * TIME_WAIT left behind for a connection that never was a stream. */
	if (!k->handshaken && !k->refusing && k->file_error[0] == '\0' &&
	    uv_tcp_close_reset(&k->tcp, on_tcp_closed) == 0)
		return;
	uv_close((uv_handle_t *)&k->tcp, on_tcp_closed);
}

void orbit__conn_close(struct orbit_conn *k, int error, const char *fmt, ...)
{
	if (!k->closing) {
		k->closing = 1;
		if (fmt != NULL && k->reason[0] == '\0') {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(k->reason, sizeof k->reason, fmt, ap);
			va_end(ap);
		}
		if (fmt != NULL)
			k->error = error;
		orbit__pool_leave_pending(k);
		uv_read_stop((uv_stream_t *)&k->tcp);
		/* An agent that reads Acks gets a last one once the file is
		 * finished; the socket stays open for it. */
		if (!k->handshaken || !k->acks || k->read_error)
			orbit__conn_tcp_close(k);
	}
	if (!k->writing)
		orbit__conn_finish(k);
}

void orbit__conn_give_way(struct orbit_conn *k, const char *why, const char *peer)
{
	conn_end(k, ORBIT_ACK_TIMEOUT);
	orbit__conn_close(k, 1, "%s: made room for %s (--max-connections)", why, peer);
}

void orbit__conn_stop(struct orbit_conn *k)
{
	if (!k->closing && !k->writing) {
		conn_end(k, ORBIT_ACK_STOPPING);
		orbit__conn_close(k, 0, "collector stopping");
	}
	/* else on_written closes it once the frames in flight are written */
}

void orbit__conn_tick(struct orbit_conn *k, uint64_t now)
{
	const struct orbit_collector_options *o = &k->c->opt;

	orbit__ack_tick(k, now);
	if (k->closing || k->writing)
		return;
	if (k->refusing) {
		if (now - k->refused_ms >= ORBIT_COLLECTOR_LINGER_MS)
			orbit__conn_close(k, 1, "%s", k->reason);
		return;
	}
	if (!k->handshaken && o->handshake_timeout_ms &&
	    now - k->accepted_ms >= o->handshake_timeout_ms) {
		orbit__conn_close(k, 1, "no handshake within %" PRIu64 " ms (%zu bytes received)",
		                  o->handshake_timeout_ms, k->len);
	} else if (k->len > 0 && o->frame_timeout_ms &&
	           now - k->partial_since_ms >= o->frame_timeout_ms) {
		conn_end(k, ORBIT_ACK_TIMEOUT);
		orbit__conn_close(k, 1,
		                  "frame at stream byte %" PRIu64 " incomplete after %" PRIu64
		                  " ms (%zu bytes of it received)",
		                  k->stream_off, o->frame_timeout_ms, k->len);
	} else if (o->idle_timeout_ms && now - k->last_byte_ms >= o->idle_timeout_ms) {
		conn_end(k, ORBIT_ACK_TIMEOUT);
		orbit__conn_close(k, 1, "idle for %" PRIu64 " ms", o->idle_timeout_ms);
	} else if (k->len == 0 && k->buf != NULL && now - k->last_byte_ms >= IDLE_BUF_MS) {
		free(k->buf); /* idle connections hold no buffer */
		k->buf = NULL;
		k->cap = 0;
	}
}
