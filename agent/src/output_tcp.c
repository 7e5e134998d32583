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
 * the transport drain records into the stream (transport.c), and only then
 * does the retry delay go back to BACKOFF_MIN_MS. A peer that closes,
 * resets, sends what is not a reply, or does not answer within
 * ORBIT_ACK_TIMEOUT_MS is no collector for this stream: it cost a Handshake,
 * and retries go on backing off, 100 ms doubling to 5 s.
 *
 * Settling. Each frame is copied into a write (uv_write; freed once the
 * kernel took it) and remembered until acknowledged: an Ack with frames = N
 * settles the N-th frame written on this connection and every earlier one,
 * once its bytes agree with what was written. pending() is the bytes not
 * yet acknowledged, which the transport holds under ORBIT_SEND_BUFFER by not
 * draining: the kernel's socket buffers are inside the account, not beside it.
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
 * (problem(): the address and what it did or said, "127.0.0.1:7420 is not an
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

/* A frame on its way out: freed in its write callback. */
struct wframe {
	uv_write_t req;
	uint64_t conn; /* which connection it was written on */
	size_t len;
	uint8_t bytes[];
};

/* A frame written and not acknowledged yet, oldest first. */
struct sent {
	struct sent *next;
	uint64_t seq;       /* its number in the stream */
	uint64_t end_bytes; /* the stream's bytes up to its end */
};

/*
 * The name resolver's rendezvous. One resolution at a time: the loop bumps
 * gen to ask (and to cancel), the thread answers only the gen it was given,
 * under mu, and wakes the loop through wake; the loop clears wake under mu
 * before it closes that handle, so a late thread never touches it.
 */
static struct {
	pthread_mutex_t mu;
	uint64_t gen;
	int done;
	int err;       /* getaddrinfo's */
	int sys_errno; /* with EAI_SYSTEM */
	struct sockaddr_storage addr;
	uv_async_t *wake;
} R = {.mu = PTHREAD_MUTEX_INITIALIZER};

struct resolve_job {
	uint64_t gen;
	char host[256], port[16];
};

/* One per process: the loop's handles point into it, so it is never freed
 * while they may call back. */
static struct tcp_output {
	struct orbit__output o;
	enum state state;
	char coll[300]; /* as given, for messages */
	char host[256], port[16];
	uint32_t ack_timeout_ms;
	uv_connect_t conn;
	uv_tcp_t tcp;
	int tcp_open;
	uv_shutdown_t shut_req;
	uv_timer_t retry, tick;
	int timers_open;
	uv_async_t resolved;
	uint64_t resolve_gen; /* the resolution the loop waits for */
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
	uint64_t progress_ms; /* the last Ack, or bytes leaving the write queue */
	uint64_t last_taken;  /* bytes the kernel had taken at the last tick */
	uint8_t reply[ORBIT_REPLY_MAX];
	size_t reply_len;
	uint64_t reply_total; /* bytes the peer sent on this connection */
} T;

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

/* One line per distinct problem until a stream is answered. */
__attribute__((format(printf, 1, 2))) static void problem(const char *fmt, ...)
{
	char line[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	uint64_t h = hash(line);
	for (int i = 0; i < T.nsaid; i++)
		if (T.said[i] == h)
			return;
	if (T.nsaid < SAID_MAX)
		T.said[T.nsaid++] = h;
	fputs(line, stderr);
}

__attribute__((format(printf, 1, 2))) static void set_trouble(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(T.trouble, sizeof T.trouble, fmt, ap);
	va_end(ap);
}

static void check_idle(void)
{
	if (T.bytes_sent == T.bytes_acked && T.o.ev != NULL)
		T.o.ev->idle(T.o.ev->ctx, &T.o);
}

static void schedule_retry(void);

static void on_tcp_closed(uv_handle_t *h)
{
	(void)h;
	T.tcp_open = 0;
	if (T.state == CLOSING) {
		T.state = IDLE;
		schedule_retry();
	}
}

/* reset: with SO_LINGER 0, so that what the kernel still holds for a peer
 * that stopped reading is dropped, not sent later. */
static void close_tcp(int reset)
{
	if (!T.tcp_open || uv_is_closing((uv_handle_t *)&T.tcp))
		return;
	uv_os_fd_t fd;
	if (reset && uv_fileno((uv_handle_t *)&T.tcp, &fd) == 0) {
		struct linger l = {1, 0};
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
	}
	uv_close((uv_handle_t *)&T.tcp, on_tcp_closed);
}

static void forget_sent(void)
{
	while (T.head != NULL) {
		struct sent *s = T.head;
		T.head = s->next;
		free(s);
	}
	T.tail = NULL;
}

/* The connection's stream is over before it completed: what became of its
 * frames goes to the owner, and the retry begins. */
static void drop(int reset)
{
	if (T.state != STREAMING)
		return;
	T.state = CLOSING;
	T.o.streaming = 0;
	uv_timer_stop(&T.tick);
	struct orbit__fate fate = {.frames_sent = T.frames_sent,
	                           .frames_acked = T.frames_acked,
	                           .end = T.last_end,
	                           .certain = T.got_last};
	forget_sent();
	T.bytes_sent = T.bytes_acked = 0;
	close_tcp(reset);
	if (!T.complete)
		T.o.ev->broken(T.o.ev->ctx, &T.o, 0, &fate);
	check_idle();
}

/* Before the collector answered: not a collector, for this stream. */
static void not_answered(const char *what, const char *brief)
{
	problem("orbit: %s %s; retrying in the background\n", T.coll, what);
	set_trouble("%s", brief);
	drop(1);
}

/* After it answered: the connection is lost. */
__attribute__((format(printf, 2, 3))) static void lost(int reset, const char *fmt, ...)
{
	char why[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, sizeof why, fmt, ap);
	va_end(ap);
	uint64_t now = uv_now(T.o.loop);
	if (T.lost_said[0] == '\0' || now - T.lost_said_ms >= LOST_QUIET_MS) {
		fprintf(stderr, "orbit: connection to collector %s lost (%s); reconnecting\n",
		        T.coll, why);
		snprintf(T.lost_said, sizeof T.lost_said, "%s", why);
		T.lost_said_ms = now;
	}
	set_trouble("connection lost: %s", why);
	drop(reset);
}

static void on_write(uv_write_t *req, int status)
{
	struct wframe *w = (struct wframe *)req;
	uint64_t conn = w->conn;
	free(w);
	if (conn != T.conn_id || T.state != STREAMING)
		return;
	if (status < 0) {
		if (T.answered)
			lost(0, "%s", uv_strerror(status));
		else
			not_answered("closed the connection without answering the handshake",
			             uv_strerror(status));
		return;
	}
	T.progress_ms = uv_now(T.o.loop);
}

static int tcp_send(struct orbit__output *o, const struct orbit__frame *fr)
{
	(void)o;
	if (T.state != STREAMING)
		return -ENOTCONN;
	struct wframe *w = malloc(sizeof *w + fr->len);
	struct sent *s = malloc(sizeof *s);
	if (w == NULL || s == NULL) {
		free(w);
		free(s);
		return -ENOMEM; /* this frame is lost; the stream goes on */
	}
	memcpy(w->bytes, fr->bytes, fr->len);
	w->conn = T.conn_id;
	w->len = fr->len;
	uv_buf_t buf = uv_buf_init((char *)w->bytes, (unsigned)w->len);
	int err = uv_write(&w->req, (uv_stream_t *)&T.tcp, &buf, 1, on_write);
	if (err) { /* no callback will come: the frame never joined the queue */
		free(w);
		free(s);
		if (T.answered)
			lost(0, "%s", uv_strerror(err));
		else
			not_answered("closed the connection without answering the handshake",
			             uv_strerror(err));
		return err;
	}
	s->next = NULL;
	s->seq = fr->seq;
	T.bytes_sent += fr->len;
	s->end_bytes = T.bytes_sent;
	T.frames_sent++;
	if (T.tail)
		T.tail->next = s;
	else
		T.head = s;
	T.tail = s;
	return 0;
}

static size_t tcp_pending(const struct orbit__output *o)
{
	(void)o;
	return (size_t)(T.bytes_sent - T.bytes_acked);
}

static void reject(const char *reason)
{
	fprintf(stderr, "orbit: collector %s refused this process (%s); tracing is off\n", T.coll,
	        reason);
	T.state = DEAD;
	T.o.streaming = 0;
	uv_timer_stop(&T.tick);
	struct orbit__fate fate = {T.frames_sent, T.frames_acked, 0, 1};
	forget_sent();
	T.bytes_sent = T.bytes_acked = 0;
	close_tcp(0);
	T.o.ev->broken(T.o.ev->ctx, &T.o, 1, &fate);
	check_idle();
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

static void answered(void)
{
	T.answered = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	T.nsaid = 0; /* problems are said again if they come back */
	T.trouble[0] = '\0';
}

/* 0, or -1 when the Ack ended the connection's stream. */
static int on_ack(const struct orbit_ack *a)
{
	if (a->frames < T.frames_acked || a->frames > T.frames_sent) {
		lost(1, "it acknowledged %llu frames of %llu sent", (unsigned long long)a->frames,
		     (unsigned long long)T.frames_sent);
		return -1;
	}
	uint64_t seq = 0, end_bytes = T.bytes_acked;
	int settles = a->frames > T.frames_acked;
	for (uint64_t n = a->frames - T.frames_acked; n > 0; n--) {
		struct sent *s = T.head;
		T.head = s->next;
		if (T.head == NULL)
			T.tail = NULL;
		seq = s->seq;
		end_bytes = s->end_bytes;
		free(s);
	}
	if (a->bytes != end_bytes) {
		lost(1, "its acknowledgement counts %llu bytes, %llu were sent",
		     (unsigned long long)a->bytes, (unsigned long long)end_bytes);
		return -1;
	}
	T.frames_acked = a->frames;
	T.bytes_acked = a->bytes;
	T.progress_ms = uv_now(T.o.loop);
	if (!T.answered)
		answered();
	if (a->end != ORBIT_ACK_GOES_ON) {
		T.got_last = 1;
		T.last_end = a->end;
		T.complete = T.ending && T.head == NULL;
	}
	if (settles)
		T.o.ev->settled(T.o.ev->ctx, &T.o, seq, 1);
	if (T.state != STREAMING)
		return -1;
	if (T.got_last && !T.complete) {
		lost(0, "the collector ended the stream: %s", end_text(a->end));
		return -1;
	}
	check_idle(); /* may end the stop, and close this output */
	return T.state == STREAMING ? 0 : -1;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)T.reply + T.reply_len, (unsigned)(sizeof T.reply - T.reply_len));
}

/* What the peer said is not a reply. */
static void not_a_reply(void)
{
	char what[80];
	orbit__reply_describe(T.reply, T.reply_len, what, sizeof what);
	if (!T.answered) {
		char line[160];
		snprintf(line, sizeof line, "is not an Orbit collector (it sent %s)", what);
		char brief[100];
		snprintf(brief, sizeof brief, "it sent %s", what);
		not_answered(line, brief);
	} else {
		lost(1, "it sent %s", what);
	}
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *buf)
{
	(void)st;
	(void)buf;
	if (T.state != STREAMING)
		return;
	if (n > 0) {
		T.reply_len += (size_t)n;
		T.reply_total += (uint64_t)n;
		for (;;) {
			struct orbit_ack a;
			char reason[ORBIT_REPLY_MAX];
			size_t used;
			int r = orbit__reply_next(T.reply, T.reply_len, &used, &a, reason,
			                          sizeof reason);
			if (r == ORBIT_REPLY_MORE)
				return;
			if (r < 0) {
				not_a_reply();
				return;
			}
			if (r == ORBIT_REPLY_REFUSAL) {
				reject(reason);
				return;
			}
			memmove(T.reply, T.reply + used, T.reply_len - used);
			T.reply_len -= used;
			if (on_ack(&a) != 0)
				return;
		}
	}
	if (n == 0)
		return;
	if (T.reply_len > 0) { /* it ended inside a reply */
		not_a_reply();
		return;
	}
	const char *how = n == UV_EOF ? "closed" : uv_strerror((int)n);
	if (T.complete) { /* the last Ack, then its end of file: done */
		T.state = CLOSING;
		T.o.streaming = 0;
		uv_timer_stop(&T.tick);
		close_tcp(0);
		check_idle();
	} else if (!T.answered) { /* closed or reset: one problem, one line */
		not_answered("closed the connection without answering the handshake",
		             n == UV_EOF ? "it closed the connection without answering" : how);
	} else {
		lost(0, "%s", n == UV_EOF ? "closed by the collector" : how);
	}
}

/* While frames are owed: a peer that neither acknowledges nor takes bytes
 * for ack_timeout_ms is dropped. */
static void on_tick(uv_timer_t *t)
{
	(void)t;
	if (T.state != STREAMING)
		return;
	uint64_t now = uv_now(T.o.loop);
	uint64_t taken = T.bytes_sent - uv_stream_get_write_queue_size((uv_stream_t *)&T.tcp);
	if (taken != T.last_taken || T.head == NULL) {
		T.last_taken = taken;
		T.progress_ms = now;
		return;
	}
	if (now - T.progress_ms < T.ack_timeout_ms)
		return;
	if (!T.answered) {
		char what[160];
		snprintf(what, sizeof what, "did not answer the handshake within %u ms",
		         T.ack_timeout_ms);
		char brief[80];
		snprintf(brief, sizeof brief, "no answer within %u ms", T.ack_timeout_ms);
		not_answered(what, brief);
	} else {
		lost(1, "nothing acknowledged or taken for %u ms", T.ack_timeout_ms);
	}
}

static void connect_failed(const char *why)
{
	problem("orbit: cannot reach collector %s (%s); retrying in the background\n", T.coll, why);
	set_trouble("%s", why);
	T.state = CLOSING;
	if (T.tcp_open)
		close_tcp(0);
	else
		on_tcp_closed(NULL);
}

static void on_connect(uv_connect_t *req, int status)
{
	(void)req;
	if (T.state != CONNECTING)
		return;
	if (status < 0) {
		connect_failed(uv_strerror(status));
		return;
	}
	int err = uv_read_start((uv_stream_t *)&T.tcp, on_alloc, on_read);
	if (err) {
		connect_failed(uv_strerror(err));
		return;
	}
	uv_tcp_nodelay(&T.tcp, 1);
	T.state = STREAMING;
	T.o.streaming = 1;
	T.conn_id++;
	T.answered = T.ending = T.complete = T.got_last = 0;
	T.last_end = 0;
	T.frames_sent = T.bytes_sent = T.frames_acked = T.bytes_acked = 0;
	T.reply_len = 0;
	T.reply_total = 0;
	T.progress_ms = uv_now(T.o.loop);
	T.last_taken = 0;
	uint64_t every = T.ack_timeout_ms / 4 < 1000 ? T.ack_timeout_ms / 4 : 1000;
	uv_timer_start(&T.tick, on_tick, every, every);
	T.o.ev->ready(T.o.ev->ctx, &T.o);
}

/* Connects to the address resolved last. */
static void connect_addr(void)
{
	int err = uv_tcp_init(T.o.loop, &T.tcp);
	if (err) {
		connect_failed(uv_strerror(err));
		return;
	}
	T.tcp_open = 1;
	T.state = CONNECTING;
	err = uv_tcp_connect(&T.conn, &T.tcp, (const struct sockaddr *)&T.addr, on_connect);
	if (err)
		connect_failed(uv_strerror(err));
}

/* ---- resolving a name, on a thread that exits when it is done ---- */

static void *resolve_main(void *arg)
{
	struct resolve_job *j = arg;
	pthread_setname_np(pthread_self(), "orbit-resolve");
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	struct addrinfo *res = NULL;
	int err = getaddrinfo(j->host, j->port, &hints, &res);
	int sys = errno;
	pthread_mutex_lock(&R.mu);
	if (R.gen == j->gen && R.wake != NULL) {
		R.done = 1;
		R.err = err;
		R.sys_errno = sys;
		if (err == 0 && res->ai_addrlen <= sizeof R.addr)
			memcpy(&R.addr, res->ai_addr, res->ai_addrlen);
		else if (err == 0)
			R.err = EAI_FAMILY;
		uv_async_send(R.wake); /* under mu: see R */
	}
	pthread_mutex_unlock(&R.mu);
	if (res != NULL)
		freeaddrinfo(res);
	free(j);
	return NULL;
}

static void on_resolved(uv_async_t *a)
{
	(void)a;
	pthread_mutex_lock(&R.mu);
	int done = R.done && R.gen == T.resolve_gen;
	int err = R.err, sys = R.sys_errno;
	if (done) {
		memcpy(&T.addr, &R.addr, sizeof T.addr);
		R.done = 0;
	}
	pthread_mutex_unlock(&R.mu);
	if (!done || T.state != RESOLVING)
		return;
	if (err != 0) {
		char why[400];
		snprintf(why, sizeof why, "cannot resolve %s: %s", T.host,
		         err == EAI_SYSTEM ? strerror(sys) : gai_strerror(err));
		connect_failed(why);
		return;
	}
	T.have_addr = 1;
	connect_addr();
}

static int resolve_start(void)
{
	struct resolve_job *j = malloc(sizeof *j);
	if (j == NULL)
		return -ENOMEM;
	snprintf(j->host, sizeof j->host, "%s", T.host);
	snprintf(j->port, sizeof j->port, "%s", T.port);
	pthread_mutex_lock(&R.mu);
	j->gen = T.resolve_gen = ++R.gen;
	R.done = 0;
	R.wake = &T.resolved;
	pthread_mutex_unlock(&R.mu);
	/* Its mask is the agent thread's (agent.c): it takes no signal. */
	pthread_attr_t attr;
	pthread_t t;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	int err = -pthread_create(&t, &attr, resolve_main, j);
	pthread_attr_destroy(&attr);
	if (err)
		free(j);
	return err;
}

/* A numeric address needs no resolution: the first connection of a
 * program that writes at once comes sooner. */
static int numeric_address(void)
{
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
	int port = atoi(T.port);
	if (uv_ip4_addr(T.host, port, &v4) == 0)
		memcpy(&T.addr, &v4, sizeof v4);
	else if (strchr(T.host, ':') != NULL && uv_ip6_addr(T.host, port, &v6) == 0)
		memcpy(&T.addr, &v6, sizeof v6);
	else
		return 0;
	T.have_addr = 1;
	return 1;
}

static void start_connect(void)
{
	/* Near exit, the address of a collector reached a moment ago has not
	 * changed: no new resolution. */
	if ((T.hurried && T.have_addr) || numeric_address()) {
		connect_addr();
		return;
	}
	T.state = RESOLVING;
	int err = resolve_start();
	if (err) {
		char why[400];
		snprintf(why, sizeof why, "cannot start a thread to resolve %s: %s", T.host,
		         strerror(-err));
		connect_failed(why);
	}
}

static void on_retry(uv_timer_t *t)
{
	(void)t;
	if (T.state == IDLE)
		start_connect();
}

static void schedule_retry(void)
{
	if (T.state != IDLE || !T.timers_open)
		return;
	uv_timer_start(&T.retry, on_retry, T.backoff_ms, 0);
	/* While exit waits for a stream, retries do not back off. */
	if (!T.hurried)
		T.backoff_ms =
		    T.backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : T.backoff_ms * 2;
}

static int tcp_start(struct orbit__output *o)
{
	uv_timer_init(o->loop, &T.retry);
	uv_timer_init(o->loop, &T.tick);
	int err = uv_async_init(o->loop, &T.resolved, on_resolved);
	if (err) {
		fprintf(stderr, "orbit: cannot connect to collector %s: %s; tracing is off\n",
		        T.coll, uv_strerror(err));
		uv_close((uv_handle_t *)&T.retry, NULL);
		uv_close((uv_handle_t *)&T.tick, NULL);
		return err;
	}
	T.timers_open = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	start_connect();
	return 1; /* ready when connected */
}

static int tcp_coming(const struct orbit__output *o)
{
	(void)o;
	return T.state == IDLE || T.state == RESOLVING || T.state == CONNECTING ||
	       T.state == CLOSING || (T.state == STREAMING && !T.answered);
}

static void tcp_hurry(struct orbit__output *o)
{
	(void)o;
	T.hurried = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	if (T.state == IDLE && T.timers_open) {
		uv_timer_stop(&T.retry);
		start_connect();
	}
}

static void on_shutdown(uv_shutdown_t *req, int status)
{
	(void)req;
	(void)status; /* a failure shows on the read side */
}

static void tcp_end(struct orbit__output *o)
{
	(void)o;
	if (T.state != STREAMING || T.ending)
		return;
	T.ending = 1;
	/* After the writes queued before it: the collector then sees its end
	 * of file, syncs, sends its last Ack and closes. */
	if (uv_shutdown(&T.shut_req, (uv_stream_t *)&T.tcp, on_shutdown) != 0)
		lost(0, "cannot end the stream");
}

static void tcp_give_up(struct orbit__output *o)
{
	(void)o;
	if (T.state == STREAMING)
		drop(1); /* no line: the end-of-run line counts it */
}

static const char *tcp_trouble(const struct orbit__output *o)
{
	(void)o;
	return T.trouble;
}

static void tcp_close(struct orbit__output *o)
{
	(void)o;
	pthread_mutex_lock(&R.mu);
	R.gen++; /* a resolution under way is answered to nobody */
	R.wake = NULL;
	pthread_mutex_unlock(&R.mu);
	T.state = DEAD;
	T.o.streaming = 0;
	forget_sent();
	T.bytes_sent = T.bytes_acked = 0;
	if (T.timers_open) {
		uv_close((uv_handle_t *)&T.retry, NULL);
		uv_close((uv_handle_t *)&T.tick, NULL);
		uv_close((uv_handle_t *)&T.resolved, NULL);
		T.timers_open = 0;
	}
	close_tcp(0);
	T.o.ev = NULL;
}

static void tcp_forget(struct orbit__output *o)
{
	(void)o;
	/* In a forked child: the parent's socket is not ours; close our copy.
	 * A resolver thread of the parent's is not in this process, and may
	 * have held the mutex at the fork. */
	if (T.tcp_open) {
		uv_os_fd_t fd;
		if (uv_fileno((uv_handle_t *)&T.tcp, &fd) == 0)
			close(fd);
	}
	pthread_mutex_init(&R.mu, NULL);
	R.gen++;
	R.wake = NULL;
	R.done = 0;
	memset(&T, 0, sizeof T);
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

struct orbit__output *orbit__output_tcp(uv_loop_t *loop, const struct orbit__config *cfg,
                                        const struct orbit__output_events *ev)
{
	memset(&T, 0, sizeof T);
	T.o = (struct orbit__output){.ops = &tcp_ops, .ev = ev, .loop = loop};
	snprintf(T.coll, sizeof T.coll, "%s", cfg->collector);
	snprintf(T.host, sizeof T.host, "%s", cfg->host);
	snprintf(T.port, sizeof T.port, "%s", cfg->port);
	T.ack_timeout_ms = cfg->ack_timeout_ms;
	return &T.o;
}
