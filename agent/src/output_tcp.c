/*
 * output_tcp.c — orbit-collector over TCP (ORBIT_COLLECTOR=host:port): one
 * stream per connection, its frames settled by the collector's
 * acknowledgements (docs/format.md section 7).
 *
 * Connecting. A numeric host is connected to at once. A name is resolved
 * at every attempt (a changed DNS record is followed) on a thread of its
 * own that does nothing else and exits (resolve_main): not on libuv's
 * thread pool, whose threads would stay in the host for good. The first
 * address returned is connected to.
 *
 * Answered. A connection is ready for a stream at once, and the stream's
 * Handshake goes out asking for acknowledgements. The collector's first Ack
 * (frames = 1: the Handshake is in its file) is its answer: only then does
 * the agent drain records into the stream (stream.c), and only then
 * does the retry delay go back to BACKOFF_MIN_MS. A peer that closes,
 * resets, sends what is not a reply, or does not answer within
 * ORBIT_ACK_TIMEOUT_MS is no collector for this stream: it cost a Handshake,
 * and retries go on backing off, 100 ms doubling to 5 s.
 *
 * Settling. Each frame's bytes are taken from the stream (output.h,
 * orbit__frame_take: the buffer the stream writer compressed them into, so
 * no copy) into a write (uv_write; freed once the kernel took them), and
 * the frame is remembered until acknowledged: an Ack with frames = N
 * settles the N-th frame written on this connection and every earlier one,
 * once its bytes agree with what was written. pending() is the bytes not
 * yet acknowledged, which the stream holds under ORBIT_SEND_BUFFER by not
 * draining: the kernel's socket buffers are inside the account, not beside it.
 *
 * Memory. A taken frame that waits in the write queue holds its bytes and
 * no more (its buffer shrunk to the frame), as a copy of it would: what
 * this output holds is the bytes not yet acknowledged, under
 * ORBIT_SEND_BUFFER plus the frames of one pass, and the writer compresses
 * the next frame into a new buffer of its own. A frame written at once
 * keeps the compression's buffer until its write callback, so the agent
 * does not map and unmap a buffer for every frame. Nothing is copied on
 * the way. With a spool (keep), a frame keeps its bytes until it is
 * acknowledged, not only until the kernel took them, and a stream that
 * breaks hands the ones never acknowledged to its owner (fate.kept): the
 * same bound, ORBIT_SEND_BUFFER, as what pending() counts.
 *
 * Progress. While frames are unacknowledged, a connection on which for
 * ORBIT_ACK_TIMEOUT_MS no Ack came and no byte left the write queue is
 * dropped (a peer that stopped reading, a link that stopped passing data),
 * reset, and the agent reconnects. The frames it had not acknowledged are
 * the broken stream's fate (ledger.h): maybe in its capture, maybe not.
 *
 * Ending. After the stream's last frame the sending side is shut down once
 * the writes are out, and the connection is read until the collector's last
 * Ack and its end of file; at the stop's deadline give_up resets it instead,
 * and what was not acknowledged is the fate the end-of-run line counts.
 *
 * Lines (stderr). One per distinct problem until a stream is answered
 * (problem(t): the address and what it did or said, "127.0.0.1:7420 is not an
 * Orbit collector (it sent HTTP)"); one per lost answered connection, but
 * none within LOST_QUIET_MS of the last one (a flapping link). A
 * refusal line ("orbit-collector: rejected: REASON") is said once and the
 * output is dead for good.
 */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "output.h"
#include "reply.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define LOST_QUIET_MS 60000u /* a lost line is not followed by another this soon */
#define SAID_MAX 8           /* distinct problem lines remembered until answered */

enum state { IDLE, RESOLVING, CONNECTING, STREAMING, CLOSING, DEAD };

/* A frame on its way out: its bytes taken from the stream (no copy), freed
 * with it in its write callback. */
struct wframe {
	uv_write_t req;
	struct tcp_output *t;
	uint64_t conn; /* which connection it was written on */
	uint8_t *bytes;
};

/* A frame written and not acknowledged yet, oldest first; with a spool,
 * its bytes too (keep). */
struct sent {
	struct sent *next;
	uint64_t seq;       /* its number in the stream */
	uint64_t end_bytes; /* the stream's bytes up to its end */
	uint8_t *bytes;     /* NULL unless kept */
	size_t len;
};

/*
 * One resolution of the name, shared by the loop and the thread that
 * resolves it, freed by whichever lets go of it last (refs, under mu). The
 * thread answers through wake, under mu; the loop clears wake under mu
 * before it closes that handle or stops waiting, so a late thread never
 * touches it.
 */
struct resolve_job {
	pthread_mutex_t mu;
	int refs;         /* the loop's and the thread's */
	uv_async_t *wake; /* NULL once the loop stopped waiting */
	int done;
	int err;       /* getaddrinfo's */
	int sys_errno; /* with EAI_SYSTEM */
	struct sockaddr_storage addr;
	char host[256], port[16];
};

/* The loop's handles point into it: freed once they are all closed. */
struct tcp_output {
	struct orbit__output o;
	enum state state;
	char coll[300]; /* as given, for messages */
	char host[256], port[16];
	uint32_t ack_timeout_ms;
	int keep; /* frames keep their bytes until acknowledged (a spool takes them) */
	uv_connect_t conn;
	uv_tcp_t tcp;
	int tcp_open;
	uv_shutdown_t shut_req;
	uv_timer_t retry, tick;
	int timers_open;
	uv_async_t resolved;
	struct resolve_job *job; /* the resolution the loop waits for */
	int handles;             /* initialised and not yet closed */
	int closed;              /* close was called: freed with the last handle */
	uint64_t backoff_ms;
	int hurried;                  /* exit is near: connect to addr, do not back off */
	struct sockaddr_storage addr; /* the address last resolved */
	int have_addr;

	/* what was said */
	uint64_t said[SAID_MAX]; /* hashes of problem lines, until answered */
	int nsaid;
	char lost_said[256];
	uint64_t lost_said_ms;
	char trouble[160]; /* the last problem, in a few words */

	/* the stream on the current connection */
	uint64_t conn_id; /* connections made */
	int answered;     /* its Handshake was acknowledged */
	int ending;       /* its last frame was sent */
	int complete;     /* ... and acknowledged with the last Ack */
	int got_last;     /* a last Ack came (end != 0) */
	uint32_t last_end;
	struct sent *head, *tail;
	uint64_t frames_sent, bytes_sent, frames_acked, bytes_acked;
	uint64_t synced_acked; /* the last Ack's synced_frames */
	uint64_t progress_ms;  /* the last Ack, or bytes leaving the write queue */
	uint64_t last_taken;   /* bytes the kernel had taken at the last tick */
	uint8_t reply[ORBIT_REPLY_MAX];
	size_t reply_len;
	uint64_t reply_total; /* bytes the peer sent on this connection */
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* One line per distinct problem until a stream is answered. */
__attribute__((format(printf, 2, 3))) static void problem(struct tcp_output *t, const char *fmt,
                                                          ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	uint64_t h = hash(line);
	for (int i = 0; i < t->nsaid; i++)
		if (t->said[i] == h)
			return;
	if (t->nsaid < SAID_MAX)
		t->said[t->nsaid++] = h;
	fputs(line, stderr);
}

__attribute__((format(printf, 2, 3))) static void set_trouble(struct tcp_output *t, const char *fmt,
                                                              ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->trouble, sizeof t->trouble, fmt, ap);
	va_end(ap);
}

static void check_idle(struct tcp_output *t)
{
	if (t->bytes_sent == t->bytes_acked && t->o.ev != NULL)
		t->o.ev->idle(t->o.ev->ctx, &t->o);
}

static void schedule_retry(struct tcp_output *t);

/* A handle of t's closed: t is freed with the last one, once closed. */
static void handle_closed(struct tcp_output *t)
{
	if (--t->handles == 0 && t->closed)
		free(t);
}

static void on_closed(uv_handle_t *h)
{
	handle_closed(h->data);
}

/* The connection is gone (or was never made): the retry comes. */
static void tcp_gone(struct tcp_output *t)
{
	t->tcp_open = 0;
	if (t->state == CLOSING) {
		t->state = IDLE;
		schedule_retry(t);
	}
}

static void on_tcp_closed(uv_handle_t *h)
{
	struct tcp_output *t = h->data;
	tcp_gone(t);
	handle_closed(t);
}

/* reset: with SO_LINGER 0, so that what the kernel still holds for a peer
 * that stopped reading is dropped, not sent later. */
static void close_tcp(struct tcp_output *t, int reset)
{
	if (!t->tcp_open || uv_is_closing((uv_handle_t *)&t->tcp))
		return;
	uv_os_fd_t fd;
	if (reset && uv_fileno((uv_handle_t *)&t->tcp, &fd) == 0) {
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	uv_close((uv_handle_t *)&t->tcp, on_tcp_closed);
}

static void forget_sent(struct tcp_output *t)
{
	while (t->head != NULL) {
		struct sent *s = t->head;
		t->head = s->next;
		free(s->bytes);
		free(s);
	}
	t->tail = NULL;
}

/* The connection's stream is over before it completed: what became of its
 * frames goes to the owner, and the retry begins. */
static void drop(struct tcp_output *t, int reset)
{
	if (t->state != STREAMING)
		return;
	t->state = CLOSING;
	t->o.streaming = 0;
	uv_timer_stop(&t->tick);
	struct orbit__fate fate = {.frames_sent = t->frames_sent,
	                           .frames_acked = t->frames_acked,
	                           .end = t->last_end,
	                           .certain = t->got_last};
	/* The frames not acknowledged, for the spool: libuv writes nothing
	 * more once the handle is closing, so their bytes are ours. */
	close_tcp(t, reset);
	size_t n = 0;
	for (const struct sent *s = t->head; s != NULL; s = s->next)
		n += s->bytes != NULL;
	struct orbit__kept *kept = n > 0 && t->keep ? calloc(n, sizeof *kept) : NULL;
	if (kept != NULL) {
		n = 0;
		for (const struct sent *s = t->head; s != NULL; s = s->next)
			if (s->bytes != NULL)
				kept[n++] = (struct orbit__kept){s->bytes, s->len, s->seq};
		fate.kept = kept;
		fate.n_kept = n;
	}
	t->bytes_sent = t->bytes_acked = 0;
	if (!t->complete)
		t->o.ev->broken(t->o.ev->ctx, &t->o, 0, &fate);
	free(kept);
	forget_sent(t);
	check_idle(t);
}

/* Before the collector answered: not a collector, for this stream. */
static void not_answered(struct tcp_output *t, const char *what, const char *brief)
{
	if (!t->keep) /* with a spool, the spool's line says it */
		problem(t, "orbit: %s %s; retrying in the background\n", t->coll, what);
	set_trouble(t, "%s", brief);
	drop(t, 1);
	if (!t->closed && t->o.ev != NULL && t->o.ev->unreachable != NULL) /* last */
		t->o.ev->unreachable(t->o.ev->ctx, &t->o);
}

/* After it answered: the connection is lost. */
__attribute__((format(printf, 3, 4))) static void lost(struct tcp_output *t, int reset,
                                                       const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	uint64_t now = uv_now(t->o.loop);
	if (t->lost_said[0] == '\0' || now - t->lost_said_ms >= LOST_QUIET_MS) {
		fprintf(stderr, "orbit: connection to collector %s lost (%s); reconnecting\n",
		        t->coll, why);
		snprintf(t->lost_said, sizeof t->lost_said, "%s", why);
		t->lost_said_ms = now;
	}
	set_trouble(t, "connection lost: %s", why);
	drop(t, reset);
}

static void on_write(uv_write_t *req, int status)
{
	struct wframe *w = (struct wframe *)req;
	struct tcp_output *t = w->t; /* alive: writes end before the handle closes */
	uint64_t conn = w->conn;
	free(w->bytes);
	free(w);
	if (conn != t->conn_id || t->state != STREAMING)
		return;
	if (status < 0) {
		if (t->answered)
			lost(t, 0, "%s", uv_strerror(status));
		else
			not_answered(t, "closed the connection without answering the handshake",
			             uv_strerror(status));
		return;
	}
	t->progress_ms = uv_now(t->o.loop);
}

static int tcp_send(struct orbit__output *o, struct orbit__frame *fr)
{
	struct tcp_output *t = (struct tcp_output *)o;
	if (t->state != STREAMING)
		return -ENOTCONN;
	struct wframe *w = malloc(sizeof *w);
	struct sent *s = malloc(sizeof *s);
	uint8_t *bytes = w != NULL && s != NULL ? orbit__frame_take(fr) : NULL;
	if (bytes == NULL) {
		free(w);
		free(s);
		return -ENOMEM; /* this frame is lost; the stream goes on */
	}
	/* A frame that waits behind others holds its bytes and no more: the
	 * buffer is shrunk to them. One written at once keeps the compression's
	 * buffer, freed in a moment, so its size comes back each frame and
	 * malloc reuses it instead of mapping one anew. */
	if (uv_stream_get_write_queue_size((uv_stream_t *)&t->tcp) > 0) {
		uint8_t *q = realloc(bytes, fr->len);
		if (q != NULL)
			fr->bytes = bytes = q;
	}
	w->t = t;
	w->conn = t->conn_id;
	w->bytes = t->keep ? NULL : bytes; /* kept: freed when acknowledged, or dropped */
	uv_buf_t buf = uv_buf_init((char *)bytes, (unsigned)fr->len);
	int err = uv_write(&w->req, (uv_stream_t *)&t->tcp, &buf, 1, on_write);
	if (err) { /* no callback will come: the frame never joined the queue */
		free(bytes);
		free(w);
		free(s);
		if (t->answered)
			lost(t, 0, "%s", uv_strerror(err));
		else
			not_answered(t, "closed the connection without answering the handshake",
			             uv_strerror(err));
		return err;
	}
	s->next = NULL;
	s->seq = fr->seq;
	s->bytes = t->keep ? bytes : NULL;
	s->len = fr->len;
	t->bytes_sent += fr->len;
	s->end_bytes = t->bytes_sent;
	t->frames_sent++;
	if (t->tail)
		t->tail->next = s;
	else
		t->head = s;
	t->tail = s;
	return 0;
}

static size_t tcp_pending(const struct orbit__output *o)
{
	const struct tcp_output *t = (const struct tcp_output *)o;
	return (size_t)(t->bytes_sent - t->bytes_acked);
}

/* Refused for good. A refusal of the stream's protocol version is an older
 * collector's (docs/format.md 4.0, 7.1): its one line is the owner's, who
 * may keep the trace elsewhere (the spool, the local copy). */
static void reject(struct tcp_output *t, const char *reason)
{
	int older = strncmp(reason, "protocol version ", 17) == 0;
	if (!older)
		fprintf(stderr, "orbit: collector %s refused this process (%s); tracing is off\n",
		        t->coll, reason);
	set_trouble(t, "%s", reason);
	t->state = DEAD;
	t->o.streaming = 0;
	uv_timer_stop(&t->tick);
	struct orbit__fate fate = {.frames_sent = t->frames_sent,
	                           .frames_acked = t->frames_acked,
	                           .certain = 1,
	                           .older = older};
	forget_sent(t);
	t->bytes_sent = t->bytes_acked = 0;
	close_tcp(t, 0);
	t->o.ev->broken(t->o.ev->ctx, &t->o, 1, &fate);
	check_idle(t);
}

static const char *end_text(uint32_t end)
{
	switch (end) {
	case ORBIT_ACK_PEER_ENDED:
		return "it saw this stream end";
	case ORBIT_ACK_CAPTURE_CAP:
		return "the capture reached its --max-capture-size";
	case ORBIT_ACK_DIR_CAP:
		return "its directory reached --max-dir-size";
	case ORBIT_ACK_STOPPING:
		return "it is stopping";
	case ORBIT_ACK_BAD_FRAME:
		return "it found a bad frame";
	case ORBIT_ACK_FILE_ERROR:
		return "it could not write the capture file";
	case ORBIT_ACK_TIMEOUT:
		return "it timed the stream out";
	default:
		return "for a reason this agent does not know";
	}
}

static void answered(struct tcp_output *t)
{
	t->answered = 1;
	t->backoff_ms = BACKOFF_MIN_MS;
	t->nsaid = 0; /* problems are said again if they come back */
	t->trouble[0] = '\0';
}

/* 0, or -1 when the Ack ended the connection's stream. */
static int on_ack(struct tcp_output *t, const struct orbit_ack *a)
{
	if (a->frames < t->frames_acked || a->frames > t->frames_sent) {
		lost(t, 1, "it acknowledged %llu frames of %llu sent",
		     (unsigned long long)a->frames, (unsigned long long)t->frames_sent);
		return -1;
	}
	/* docs/format.md 7.2, guarantee 2: synced_frames never decreases, and
	 * two Acks in a row that go on never say the same.
	 * A peer that repeats itself (at any rate: each costs a parse) is not
	 * keeping the protocol; the connection goes, and backs off. */
	if (a->synced_frames < t->synced_acked) { /* reply.c checks it is <= frames */
		lost(t, 1, "it acknowledged %llu frames synced, after %llu",
		     (unsigned long long)a->synced_frames, (unsigned long long)t->synced_acked);
		return -1;
	}
	if (t->answered && a->end == ORBIT_ACK_GOES_ON && a->frames == t->frames_acked &&
	    a->synced_frames == t->synced_acked) {
		lost(t, 1, "it repeated an acknowledgement (frames %llu, %llu synced)",
		     (unsigned long long)a->frames, (unsigned long long)a->synced_frames);
		return -1;
	}
	uint64_t seq = 0, end_bytes = t->bytes_acked;
	int settles = a->frames > t->frames_acked;
	for (uint64_t n = a->frames - t->frames_acked; n > 0; n--) {
		struct sent *s = t->head;
		t->head = s->next;
		if (t->head == NULL)
			t->tail = NULL;
		seq = s->seq;
		end_bytes = s->end_bytes;
		free(s->bytes); /* the collector has them: libuv wrote them */
		free(s);
	}
	if (a->bytes != end_bytes) {
		lost(t, 1, "its acknowledgement counts %llu bytes, %llu were sent",
		     (unsigned long long)a->bytes, (unsigned long long)end_bytes);
		return -1;
	}
	t->frames_acked = a->frames;
	t->bytes_acked = a->bytes;
	t->synced_acked = a->synced_frames;
	t->progress_ms = uv_now(t->o.loop);
	if (!t->answered)
		answered(t);
	if (a->end != ORBIT_ACK_GOES_ON) {
		t->got_last = 1;
		t->last_end = a->end;
		t->complete = t->ending && t->head == NULL;
	}
	if (settles)
		t->o.ev->settled(t->o.ev->ctx, &t->o, seq, 1);
	if (t->state != STREAMING)
		return -1;
	if (t->got_last && !t->complete) {
		lost(t, 0, "the collector ended the stream: %s", end_text(a->end));
		return -1;
	}
	check_idle(t); /* may end the stop, and close this output */
	return t->state == STREAMING ? 0 : -1;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	struct tcp_output *t = h->data;
	(void)suggested;
	*buf = uv_buf_init((char *)t->reply + t->reply_len,
	                   (unsigned)(sizeof t->reply - t->reply_len));
}

/* What the peer said is not a reply. */
static void not_a_reply(struct tcp_output *t)
{
	char what[80];
	orbit__reply_describe(t->reply, t->reply_len, what, sizeof what);
	if (!t->answered) {
		char line[160];
		snprintf(line, sizeof line, "is not an Orbit collector (it sent %s)", what);
		char brief[100];
		snprintf(brief, sizeof brief, "it sent %s", what);
		not_answered(t, line, brief);
	} else {
		lost(t, 1, "it sent %s", what);
	}
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	struct tcp_output *t = st->data;
	(void)buf;
	if (t->state != STREAMING)
		return;
	if (n > 0) {
		t->reply_len += (size_t)n;
		t->reply_total += (uint64_t)n;
		for (;;) {
			struct orbit_ack a;
			char reason[ORBIT_REPLY_MAX];
			size_t used;
			int r = orbit__reply_next(t->reply, t->reply_len, &used, &a, reason,
			                          sizeof reason);
			if (r == ORBIT_REPLY_MORE)
				return;
			if (r < 0) {
				not_a_reply(t);
				return;
			}
			if (r == ORBIT_REPLY_REFUSAL) {
				reject(t, reason);
				return;
			}
			memmove(t->reply, t->reply + used, t->reply_len - used);
			t->reply_len -= used;
			if (on_ack(t, &a) != 0)
				return;
		}
	}
	if (n == 0)
		return;
	if (t->reply_len > 0) { /* it ended inside a reply */
		not_a_reply(t);
		return;
	}
	const char *how = n == UV_EOF ? "closed" : uv_strerror((int)n);
	if (t->complete) { /* the last Ack, then its end of file: done */
		t->state = CLOSING;
		t->o.streaming = 0;
		uv_timer_stop(&t->tick);
		close_tcp(t, 0);
		check_idle(t);
	} else if (!t->answered) { /* closed or reset: one problem, one line */
		not_answered(t, "closed the connection without answering the handshake",
		             n == UV_EOF ? "it closed the connection without answering" : how);
	} else {
		lost(t, 0, "%s", n == UV_EOF ? "closed by the collector" : how);
	}
}

/* While frames are owed: a peer that neither acknowledges nor takes bytes
 * for ack_timeout_ms is dropped. */
static void on_tick(uv_timer_t *timer)
{
	struct tcp_output *t = timer->data;
	if (t->state != STREAMING)
		return;
	uint64_t now = uv_now(t->o.loop);
	uint64_t taken = t->bytes_sent - uv_stream_get_write_queue_size((uv_stream_t *)&t->tcp);
	if (taken != t->last_taken || t->head == NULL) {
		t->last_taken = taken;
		t->progress_ms = now;
		return;
	}
	if (now - t->progress_ms < t->ack_timeout_ms)
		return;
	if (!t->answered) {
		char what[160];
		snprintf(what, sizeof what, "did not answer the handshake within %u ms",
		         t->ack_timeout_ms);
		char brief[80];
		snprintf(brief, sizeof brief, "no answer within %u ms", t->ack_timeout_ms);
		not_answered(t, what, brief);
	} else {
		lost(t, 1, "nothing acknowledged or taken for %u ms", t->ack_timeout_ms);
	}
}

static void connect_failed(struct tcp_output *t, const char *why)
{
	if (!t->keep) /* with a spool, the spool's line says it */
		problem(t, "orbit: cannot reach collector %s (%s); retrying in the background\n",
		        t->coll, why);
	set_trouble(t, "%s", why);
	t->state = CLOSING;
	if (t->tcp_open)
		close_tcp(t, 0);
	else
		tcp_gone(t);
	if (!t->closed && t->o.ev != NULL && t->o.ev->unreachable != NULL) /* last */
		t->o.ev->unreachable(t->o.ev->ctx, &t->o);
}

static void on_connect(uv_connect_t *req, int status)
{
	struct tcp_output *t = req->data;
	if (t->state != CONNECTING)
		return;
	if (status < 0) {
		connect_failed(t, uv_strerror(status));
		return;
	}
	int err = uv_read_start((uv_stream_t *)&t->tcp, on_alloc, on_read);
	if (err) {
		connect_failed(t, uv_strerror(err));
		return;
	}
	uv_tcp_nodelay(&t->tcp, 1);
	t->state = STREAMING;
	t->o.streaming = 1;
	t->conn_id++;
	t->answered = t->ending = t->complete = t->got_last = 0;
	t->last_end = 0;
	t->frames_sent = t->bytes_sent = t->frames_acked = t->bytes_acked = 0;
	t->synced_acked = 0;
	t->reply_len = 0;
	t->reply_total = 0;
	t->progress_ms = uv_now(t->o.loop);
	t->last_taken = 0;
	uint64_t every = t->ack_timeout_ms / 4 < 1000 ? t->ack_timeout_ms / 4 : 1000;
	uv_timer_start(&t->tick, on_tick, every, every);
	t->o.ev->ready(t->o.ev->ctx, &t->o);
}

/* Connects to the address resolved last. */
static void connect_addr(struct tcp_output *t)
{
	int err = uv_tcp_init(t->o.loop, &t->tcp);
	if (err) {
		connect_failed(t, uv_strerror(err));
		return;
	}
	t->tcp.data = t;
	t->conn.data = t;
	t->handles++;
	t->tcp_open = 1;
	t->state = CONNECTING;
	err = uv_tcp_connect(&t->conn, &t->tcp, (const struct sockaddr *)&t->addr, on_connect);
	if (err)
		connect_failed(t, uv_strerror(err));
}

/* ---- resolving a name, on a thread that exits when it is done ---- */

/* The loop or the thread lets go of j; the last one frees it. */
static void job_release(struct resolve_job *j, int loop)
{
	pthread_mutex_lock(&j->mu);
	if (loop)
		j->wake = NULL; /* see struct resolve_job */
	int refs = --j->refs;
	pthread_mutex_unlock(&j->mu);
	if (refs == 0) {
		pthread_mutex_destroy(&j->mu);
		free(j);
	}
}

static void *resolve_main(void *arg)
{
	struct resolve_job *j = arg;
	pthread_setname_np(pthread_self(), "orbit-resolve");
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int err = getaddrinfo(j->host, j->port, &hints, &res);
	int sys = errno;
	pthread_mutex_lock(&j->mu);
	if (j->wake != NULL) {
		j->done = 1;
		j->err = err;
		j->sys_errno = sys;
		if (err == 0 && res->ai_addrlen <= sizeof j->addr)
			memcpy(&j->addr, res->ai_addr, res->ai_addrlen);
		else if (err == 0)
			j->err = EAI_FAMILY;
		uv_async_send(j->wake); /* under mu: see struct resolve_job */
	}
	pthread_mutex_unlock(&j->mu);
	if (res != NULL)
		freeaddrinfo(res);
	job_release(j, 0);
	return NULL;
}

static void on_resolved(uv_async_t *a)
{
	struct tcp_output *t = a->data;
	struct resolve_job *j = t->job;
	if (j == NULL)
		return;
	pthread_mutex_lock(&j->mu);
	int done = j->done;
	int err = j->err, sys = j->sys_errno;
	if (done)
		memcpy(&t->addr, &j->addr, sizeof t->addr);
	pthread_mutex_unlock(&j->mu);
	if (!done)
		return;
	t->job = NULL;
	job_release(j, 1);
	if (t->state != RESOLVING)
		return;
	if (err != 0) {
		char why[400];
		snprintf(why, sizeof why, "cannot resolve %s: %s", t->host,
		         err == EAI_SYSTEM ? strerror(sys) : gai_strerror(err));
		connect_failed(t, why);
		return;
	}
	t->have_addr = 1;
	connect_addr(t);
}

static int resolve_start(struct tcp_output *t)
{
	struct resolve_job *j = calloc(1, sizeof *j);
	if (j == NULL)
		return -ENOMEM;
	pthread_mutex_init(&j->mu, NULL);
	snprintf(j->host, sizeof j->host, "%s", t->host);
	snprintf(j->port, sizeof j->port, "%s", t->port);
	j->refs = 2;
	j->wake = &t->resolved;
	/* Its mask is the agent thread's (guest_checks.h): it takes no
	 * signal. */
	pthread_attr_t attr;
	pthread_t th;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int err = -pthread_create(&th, &attr, resolve_main, j);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_mutex_destroy(&j->mu);
		free(j);
		return err;
	}
	t->job = j;
	return 0;
}

/* A numeric address needs no resolution: the first connection of a
 * program that writes at once comes sooner. */
static int numeric_address(struct tcp_output *t)
{
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
	int port = atoi(t->port);
	if (uv_ip4_addr(t->host, port, &v4) == 0)
		memcpy(&t->addr, &v4, sizeof v4);
	else if (strchr(t->host, ':') != NULL && uv_ip6_addr(t->host, port, &v6) == 0)
		memcpy(&t->addr, &v6, sizeof v6);
	else
		return 0;
	t->have_addr = 1;
	return 1;
}

static void start_connect(struct tcp_output *t)
{
	/* Near exit, the address of a collector reached a moment ago has not
	 * changed: no new resolution. */
	if ((t->hurried && t->have_addr) || numeric_address(t)) {
		connect_addr(t);
		return;
	}
	t->state = RESOLVING;
	int err = resolve_start(t);
	if (err) {
		char why[400];
		snprintf(why, sizeof why, "cannot start a thread to resolve %s: %s", t->host,
		         strerror(-err));
		connect_failed(t, why);
	}
}

static void on_retry(uv_timer_t *timer)
{
	struct tcp_output *t = timer->data;
	if (t->state == IDLE)
		start_connect(t);
}

static void schedule_retry(struct tcp_output *t)
{
	if (t->state != IDLE || !t->timers_open)
		return;
	uv_timer_start(&t->retry, on_retry, t->backoff_ms, 0);
	/* While exit waits for a stream, retries do not back off. */
	if (!t->hurried)
		t->backoff_ms =
		    t->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : t->backoff_ms * 2;
}

static int tcp_start(struct orbit__output *o)
{
	struct tcp_output *t = (struct tcp_output *)o;
	uv_timer_init(o->loop, &t->retry);
	uv_timer_init(o->loop, &t->tick);
	t->retry.data = t->tick.data = t->resolved.data = t;
	t->handles += 2;
	int err = uv_async_init(o->loop, &t->resolved, on_resolved);
	if (err) {
		fprintf(stderr, "orbit: cannot connect to collector %s: %s; tracing is off\n",
		        t->coll, uv_strerror(err));
		uv_close((uv_handle_t *)&t->retry, on_closed);
		uv_close((uv_handle_t *)&t->tick, on_closed);
		return err;
	}
	t->handles++;
	t->timers_open = 1;
	t->backoff_ms = BACKOFF_MIN_MS;
	start_connect(t);
	return 1; /* ready when connected */
}

static int tcp_coming(const struct orbit__output *o)
{
	const struct tcp_output *t = (const struct tcp_output *)o;
	return t->state == IDLE || t->state == RESOLVING || t->state == CONNECTING ||
	       t->state == CLOSING || (t->state == STREAMING && !t->answered);
}

static void tcp_hurry(struct orbit__output *o)
{
	struct tcp_output *t = (struct tcp_output *)o;
	t->hurried = 1;
	t->backoff_ms = BACKOFF_MIN_MS;
	if (t->state == IDLE && t->timers_open) {
		uv_timer_stop(&t->retry);
		start_connect(t);
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status; /* a failure shows on the read side */
}

static void tcp_end(struct orbit__output *o)
{
	struct tcp_output *t = (struct tcp_output *)o;
	if (t->state != STREAMING || t->ending)
		return;
	t->ending = 1;
	/* After the writes queued before it: the collector then sees its end
	 * of file, syncs, sends its last Ack and closes. */
	if (uv_shutdown(&t->shut_req, (uv_stream_t *)&t->tcp, on_shutdown) != 0)
		lost(t, 0, "cannot end the stream");
}

static void tcp_give_up(struct orbit__output *o)
{
	struct tcp_output *t = (struct tcp_output *)o;
	if (t->state == STREAMING)
		drop(t, 1); /* no line: the end-of-run line counts it */
}

static const char *tcp_trouble(const struct orbit__output *o)
{
	const struct tcp_output *t = (const struct tcp_output *)o;
	return t->trouble;
}

static void tcp_close(struct orbit__output *o)
{
	struct tcp_output *t = (struct tcp_output *)o;
	if (t->job != NULL) /* a resolution under way is answered to nobody */
		job_release(t->job, 1);
	t->job = NULL;
	t->state = DEAD;
	t->o.streaming = 0;
	forget_sent(t);
	t->bytes_sent = t->bytes_acked = 0;
	if (t->timers_open) {
		uv_close((uv_handle_t *)&t->retry, on_closed);
		uv_close((uv_handle_t *)&t->tick, on_closed);
		uv_close((uv_handle_t *)&t->resolved, on_closed);
		t->timers_open = 0;
	}
	close_tcp(t, 0);
	t->o.ev = NULL;
	t->closed = 1;
	if (t->handles == 0)
		free(t);
}

static void tcp_forget(struct orbit__output *o, int copies)
{
	struct tcp_output *t = (struct tcp_output *)o;
	/* In a forked child: the parent's socket is not ours; close our copy.
	 * A resolver thread of the parent's is not in this process, and may
	 * have held its job's mutex at the fork: the job is left alone (a
	 * copy of the parent's memory). The handles are on the parent's loop,
	 * which this process never runs. */
	if (copies && t->tcp_open) {
		uv_os_fd_t fd;
		if (uv_fileno((uv_handle_t *)&t->tcp, &fd) == 0)
			close(fd);
	}
	forget_sent(t);
	free(t);
}

static const struct orbit__output_ops tcp_ops = {
    .start = tcp_start,
    .send = tcp_send,
    .pending = tcp_pending,
    .coming = tcp_coming,
    .hurry = tcp_hurry,
    .end = tcp_end,
    .give_up = tcp_give_up,
    .trouble = tcp_trouble,
    .close = tcp_close,
    .forget = tcp_forget,
};

struct orbit__output *orbit__output_tcp(uv_loop_t *loop, const struct orbit__config *cfg)
{
	struct tcp_output *t = calloc(1, sizeof *t);
	if (t == NULL)
		return NULL;
	t->o = (struct orbit__output){.ops = &tcp_ops, .loop = loop};
	snprintf(t->coll, sizeof t->coll, "%s", cfg->collector);
	snprintf(t->host, sizeof t->host, "%s", cfg->host);
	snprintf(t->port, sizeof t->port, "%s", cfg->port);
	t->ack_timeout_ms = cfg->ack_timeout_ms;
	t->keep = cfg->spool;
	return &t->o;
}
