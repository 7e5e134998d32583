/*
 * output_tcp.c — orbit-collector over TCP (ORBIT_COLLECTOR=host:port): one
 * stream per connection.
 *
 * Connecting: resolve (any family, at every attempt, so a changed DNS record
 * is followed), connect to the first address; a failure is said once and
 * retried after 100 ms, doubling up to 5 s, quietly until a connection
 * succeeds. A connection is ready for a new stream at once.
 *
 * Sending: each frame is copied into a queue entry and written with
 * uv_write; writes complete in order, and each completion settles its frame
 * (the kernel took it). pending() is the bytes queued, which the transport
 * holds under ORBIT_SEND_BUFFER by not draining.
 *
 * A lost connection (end of file, a read or write error) is said once, the
 * stream is broken (its queued frames never settle) and the retry begins.
 * The collector speaks only to refuse: a line "orbit-collector: rejected:
 * REASON", said once, after which this output is dead for good.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"

#define BACKOFF_MIN_MS 100u
#define BACKOFF_MAX_MS 5000u
#define REPLY_MAX 256u
#define REJECTED "orbit-collector: rejected"

enum state { IDLE, RESOLVING, CONNECTING, STREAMING, CLOSING, DEAD };

/* A frame on its way out: written in order, freed in its write callback. */
struct qframe {
	struct qframe *next;
	uv_write_t req;
	uint64_t seq;
	uint64_t stream; /* which connection's stream it belongs to */
	size_t len;
	uint8_t bytes[];
};

/* One per process: the loop's handles point into it, so it is never freed
 * while they may call back. */
static struct tcp_output {
	struct orbit__output o;
	enum state state;
	char coll[300]; /* as given, for messages */
	char host[256], port[16];
	uv_getaddrinfo_t gai;
	uv_connect_t conn;
	uv_tcp_t tcp;
	int tcp_open;
	uv_timer_t retry;
	int retry_open;
	uint64_t backoff_ms;
	int told; /* a problem was said; quiet until a connection succeeds */
	char reply[REPLY_MAX];
	size_t reply_len;
	struct qframe *head, *tail;
	size_t queued;                /* bytes of this stream's frames not yet written */
	uint64_t stream;              /* connections made: the current stream's number */
	struct sockaddr_storage addr; /* the address last resolved */
	int have_addr;
	int hurried; /* exit is near: connect to addr, resolve no more */
} T;

static void check_idle(void)
{
	if (T.queued == 0 && T.o.ev != NULL)
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

static void close_tcp(void)
{
	if (T.tcp_open && !uv_is_closing((uv_handle_t *)&T.tcp))
		uv_close((uv_handle_t *)&T.tcp, on_tcp_closed);
}

/* The stream is broken: its queued frames will complete with errors and
 * settle nothing. */
static void disconnect(const char *why)
{
	if (T.state != STREAMING)
		return;
	T.state = CLOSING;
	T.o.streaming = 0;
	T.queued = 0;
	if (!T.told) {
		fprintf(stderr, "orbit: connection to collector %s lost (%s); reconnecting\n",
		        T.coll, why);
		T.told = 1;
	}
	close_tcp();
	T.o.ev->broken(T.o.ev->ctx, &T.o, 0);
	check_idle();
}

static void on_write(uv_write_t *req, int status)
{
	struct qframe *f = req->data;
	/* Writes complete in the order they were queued. */
	T.head = f->next;
	if (T.head == NULL)
		T.tail = NULL;
	if (f->stream == T.stream && T.state == STREAMING) {
		T.queued -= f->len;
		if (status < 0) {
			disconnect(uv_strerror(status));
		} else {
			T.o.ev->settled(T.o.ev->ctx, &T.o, f->seq, 1);
			check_idle();
		}
	}
	free(f);
}

static int tcp_send(struct orbit__output *o, const struct orbit__frame *fr)
{
	(void)o;
	if (T.state != STREAMING)
		return -ENOTCONN;
	struct qframe *f = malloc(sizeof *f + fr->len);
	if (f == NULL)
		return -ENOMEM; /* this frame is lost; the stream goes on */
	memcpy(f->bytes, fr->bytes, fr->len);
	f->next = NULL;
	f->seq = fr->seq;
	f->stream = T.stream;
	f->len = fr->len;
	f->req.data = f;
	uv_buf_t buf = uv_buf_init((char *)f->bytes, (unsigned)f->len);
	int err = uv_write(&f->req, (uv_stream_t *)&T.tcp, &buf, 1, on_write);
	if (err) { /* no callback will come: the frame never joined the queue */
		free(f);
		disconnect(uv_strerror(err));
		return err;
	}
	if (T.tail)
		T.tail->next = f;
	else
		T.head = f;
	T.tail = f;
	T.queued += f->len;
	return 0;
}

static size_t tcp_pending(const struct orbit__output *o)
{
	(void)o;
	return T.queued;
}

static void reject(void)
{
	T.reply[T.reply_len < REPLY_MAX ? T.reply_len : REPLY_MAX - 1] = '\0';
	T.reply[strcspn(T.reply, "\n")] = '\0';
	fprintf(stderr, "orbit: collector %s refused this process (%s); tracing is off\n", T.coll,
	        T.reply + strlen(REJECTED) + (T.reply[strlen(REJECTED)] == ':' ? 2 : 0));
	T.state = DEAD;
	T.o.streaming = 0;
	T.queued = 0;
	close_tcp();
	T.o.ev->broken(T.o.ev->ctx, &T.o, 1);
	check_idle();
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	static char scratch[REPLY_MAX];
	*buf = uv_buf_init(scratch, sizeof scratch);
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *buf)
{
	(void)s;
	if (n > 0) { /* the collector only ever speaks to refuse */
		size_t take = (size_t)n < REPLY_MAX - 1 - T.reply_len ? (size_t)n
		                                                      : REPLY_MAX - 1 - T.reply_len;
		memcpy(T.reply + T.reply_len, buf->base, take);
		T.reply_len += take;
		if (memchr(T.reply, '\n', T.reply_len) != NULL &&
		    strncmp(T.reply, REJECTED, strlen(REJECTED)) == 0)
			reject();
		return;
	}
	if (n < 0) {
		if (T.reply_len > 0 && strncmp(T.reply, REJECTED, strlen(REJECTED)) == 0)
			reject();
		else
			disconnect(n == UV_EOF ? "closed by the collector" : uv_strerror((int)n));
	}
}

static void connect_failed(const char *why)
{
	if (!T.told) {
		fprintf(stderr,
		        "orbit: cannot reach collector %s (%s); retrying in the "
		        "background\n",
		        T.coll, why);
		T.told = 1;
	}
	T.state = CLOSING;
	if (T.tcp_open)
		close_tcp();
	else
		on_tcp_closed(NULL);
}

static void on_connect(uv_connect_t *req, int status)
{
	(void)req;
	if (T.state == DEAD)
		return;
	if (status < 0) {
		connect_failed(uv_strerror(status));
		return;
	}
	T.backoff_ms = BACKOFF_MIN_MS;
	T.told = 0;
	T.reply_len = 0;
	uv_tcp_nodelay(&T.tcp, 1);
	uv_read_start((uv_stream_t *)&T.tcp, on_alloc, on_read);
	T.state = STREAMING;
	T.o.streaming = 1;
	T.stream++;
	T.queued = 0;
	T.o.ev->ready(T.o.ev->ctx, &T.o);
}

static void connect_addr(void);

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
	(void)req;
	if (T.state == DEAD) {
		uv_freeaddrinfo(res);
		return;
	}
	if (status < 0) {
		connect_failed(uv_strerror(status));
		return;
	}
	if (res->ai_addrlen <= sizeof T.addr) {
		memcpy(&T.addr, res->ai_addr, res->ai_addrlen);
		T.have_addr = 1;
	}
	uv_freeaddrinfo(res);
	connect_addr();
}

/* Connects to the address resolved last. */
static void connect_addr(void)
{
	uv_tcp_init(T.o.loop, &T.tcp);
	T.tcp_open = 1;
	T.state = CONNECTING;
	int err = uv_tcp_connect(&T.conn, &T.tcp, (const struct sockaddr *)&T.addr, on_connect);
	if (err)
		connect_failed(uv_strerror(err));
}

/* A numeric address needs no resolution (and no thread pool): the first
 * connection of a program that writes at once comes sooner. */
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
	/* Near exit, no new resolution: libuv resolves on its thread pool,
	 * which its own destructor may already have stopped, and the address
	 * of a collector that refused a moment ago has not changed. */
	if ((T.hurried && T.have_addr) || numeric_address()) {
		connect_addr();
		return;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
	T.state = RESOLVING;
	int err = uv_getaddrinfo(T.o.loop, &T.gai, on_resolved, T.host, T.port, &hints);
	if (err)
		connect_failed(uv_strerror(err));
}

static void on_retry(uv_timer_t *t)
{
	(void)t;
	if (T.state == IDLE)
		start_connect();
}

static void schedule_retry(void)
{
	if (T.state != IDLE || !T.retry_open)
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
	T.retry_open = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	start_connect();
	return 1; /* ready when connected */
}

static int tcp_coming(const struct orbit__output *o)
{
	(void)o;
	return T.state == IDLE || T.state == RESOLVING || T.state == CONNECTING ||
	       T.state == CLOSING;
}

static void tcp_hurry(struct orbit__output *o)
{
	(void)o;
	T.hurried = 1;
	T.backoff_ms = BACKOFF_MIN_MS;
	if (T.state == IDLE && T.retry_open && T.have_addr) {
		uv_timer_stop(&T.retry);
		start_connect();
	}
}

static void tcp_end(struct orbit__output *o)
{
	(void)o; /* the connection closes with the output */
}

static void tcp_close(struct orbit__output *o)
{
	(void)o;
	if (T.state == RESOLVING)
		uv_cancel((uv_req_t *)&T.gai);
	T.state = DEAD;
	T.o.streaming = 0;
	T.queued = 0;
	if (T.retry_open) {
		uv_close((uv_handle_t *)&T.retry, NULL);
		T.retry_open = 0;
	}
	close_tcp();
	T.o.ev = NULL;
}

static void tcp_forget(struct orbit__output *o)
{
	(void)o;
	/* In a forked child: the parent's socket is not ours; close our copy. */
	if (T.tcp_open) {
		uv_os_fd_t fd;
		if (uv_fileno((uv_handle_t *)&T.tcp, &fd) == 0)
			close(fd);
	}
	memset(&T, 0, sizeof T);
}

static const struct orbit__output_ops tcp_ops = {
    .start = tcp_start,
    .send = tcp_send,
    .pending = tcp_pending,
    .coming = tcp_coming,
    .hurry = tcp_hurry,
    .end = tcp_end,
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
	return &T.o;
}
