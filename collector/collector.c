/*
 * collector.c — orbit-collector's main: options, the listening socket,
 * accepting, the periodic timer (timeouts and the status line), signals and
 * the orderly stop. Connections themselves are conn.c's.
 */
#include "collector.h"
#include "live.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATUS_INTERVAL_MS 1000u
#define SCRATCH_KEEP (8u << 20)
#define LISTEN_BACKLOG 4096 /* the kernel caps it at net.core.somaxconn */

/* ---- log lines ---- */

static void status_clear(struct orbit_collector *c)
{
	if (c->status_shown) {
		fputs("\r\033[K", stderr);
		c->status_shown = 0;
	}
}

void orbit__log(struct orbit_collector *c, int error, const char *fmt, ...)
{
	char line[8192];
	size_t n = sizeof "orbit-collector: " - 1;
	va_list ap;

	if (!error && c->opt.quiet)
		return;
	status_clear(c);
	memcpy(line, "orbit-collector: ", n);
	va_start(ap, fmt);
	int m = vsnprintf(line + n, sizeof line - n - 1, fmt, ap);
	va_end(ap);
	n = m < 0 ? n : n + (size_t)m < sizeof line - 1 ? n + (size_t)m : sizeof line - 2;
	line[n++] = '\n';
	fwrite(line, 1, n, stderr); /* one write: lines from several processes do not mix */
}

static uint64_t conns_lost(const struct orbit_collector *c)
{
	uint64_t lost = c->lost_closed;

	for (const struct orbit_conn *k = c->conns; k != NULL; k = k->next)
		lost += orbit__loss_total(&k->loss.total);
	return lost;
}

static void status_show(struct orbit_collector *c, uint64_t now)
{
	uint64_t ms = now - c->status_ms;
	double mbs = ms ? (double)(c->bytes - c->status_bytes) / 1e6 * 1000.0 / (double)ms : 0;

	c->status_ms = now;
	c->status_bytes = c->bytes;
	if (!c->tty || c->opt.quiet)
		return;
	fprintf(stderr,
	        "\r%u connection%s, %.1f MB/s, %" PRIu64 " frames, %" PRIu64 " events lost\033[K",
	        c->nconns, c->nconns == 1 ? "" : "s", mbs, c->frames, conns_lost(c));
	c->status_shown = 1;
}

/* ---- connections ---- */

/* Once stopping and the last connection is gone, the loop runs out. */
static void stop_if_done(struct orbit_collector *c)
{
	if (!c->stopping || c->conns != NULL || uv_is_closing((uv_handle_t *)&c->tick))
		return;
	uv_close((uv_handle_t *)&c->tick, NULL);
	uv_close((uv_handle_t *)&c->turn, NULL);
	uv_close((uv_handle_t *)&c->sigint, NULL);
	uv_close((uv_handle_t *)&c->sigterm, NULL);
}

void orbit__collector_conn_gone(struct orbit_collector *c, struct orbit_conn *k)
{
	if (k->prev)
		k->prev->next = k->next;
	else
		c->conns = k->next;
	if (k->next)
		k->next->prev = k->prev;
	c->nconns--;
	if (k->live_id != 0) {
		orbit__live_stream_update(c->live, k->live_id, k->records,
		                          orbit__loss_total(&k->loss.total), k->file.size);
		orbit__live_stream_end(c->live, k->live_id, k->error ? k->reason : NULL);
	}
	orbit__pool_release(k);
	orbit__caps_release(k);
	c->lost_closed += orbit__loss_total(&k->loss.total);
	stop_if_done(c);
}

static void sockaddr_text(const struct sockaddr_storage *ss, char *out, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
		uv_ip6_name(a, ip, sizeof ip);
		snprintf(out, n, "[%s]:%u", ip, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
		uv_ip4_name(a, ip, sizeof ip);
		snprintf(out, n, "%s:%u", ip, ntohs(a->sin_port));
	}
}

static void on_refused_closed(uv_handle_t *h)
{
	free(h->data); /* the orbit_conn it was accepted into */
}

/* Takes the connection libuv accepted (server.accepted_fd). */
static void accept_one(struct orbit_collector *c)
{
	struct sockaddr_storage ss;
	int len = sizeof ss;

	c->accepted_turn++;
	struct orbit_conn *k = calloc(1, sizeof *k);
	if (k == NULL) {
		orbit__log(c, 1, "out of memory for a new connection");
		return;
	}
	k->c = c;
	uv_tcp_init(&c->loop, &k->tcp);
	k->tcp.data = k;
	if (uv_accept((uv_stream_t *)&c->server, (uv_stream_t *)&k->tcp) != 0) {
		uv_close((uv_handle_t *)&k->tcp, on_refused_closed);
		return;
	}
	snprintf(k->peer, sizeof k->peer, "unknown peer");
	if (uv_tcp_getpeername(&k->tcp, (struct sockaddr *)&ss, &len) == 0)
		sockaddr_text(&ss, k->peer, sizeof k->peer);
	if (orbit__pool_add_pending(k) != 0) {
		orbit__log(c, 1, "out of memory for a new connection");
		uv_close((uv_handle_t *)&k->tcp, on_refused_closed);
		return;
	}
	k->next = c->conns;
	if (c->conns)
		c->conns->prev = k;
	c->conns = k;
	c->nconns++;
	orbit__conn_start(k);
}

/*
 * libuv accepts until the kernel's queue is empty, calling this for each
 * connection. At most ORBIT_COLLECTOR_ACCEPT_TURN are taken per turn of the
 * loop: the next one is left with libuv, which stops watching the listening
 * socket until it is taken at the start of the next turn (on_turn), after
 * the loop has read the other sockets and freed the closed connections. So
 * a flood the collector cannot keep up with still never stops it reading
 * the agents it has accepted, nor freeing what it closed.
 */
static void on_connection(uv_stream_t *server, int status)
{
	struct orbit_collector *c = server->data;

	if (status < 0) {
		orbit__log(c, 1, "accepting a connection failed: %s", uv_strerror(status));
		return;
	}
	if (c->accepted_turn >= ORBIT_COLLECTOR_ACCEPT_TURN) {
		c->accept_held = 1;
		return;
	}
	accept_one(c);
}

static void on_turn(uv_prepare_t *p)
{
	struct orbit_collector *c = p->data;

	c->accepted_turn = 0;
	if (c->accept_held && c->listening) {
		c->accept_held = 0;
		accept_one(c); /* libuv watches the listening socket again */
	}
}

/* ---- timer and signals ---- */

static void on_tick(uv_timer_t *t)
{
	struct orbit_collector *c = t->data;
	uint64_t now = uv_now(&c->loop);

	for (struct orbit_conn *k = c->conns, *next; k != NULL; k = next) {
		next = k->next; /* closing never frees synchronously; still careful */
		orbit__conn_tick(k, now);
	}
	for (struct orbit_conn *k = c->conns; k != NULL; k = k->next)
		if (k->live_id != 0)
			orbit__live_stream_update(c->live, k->live_id, k->records,
			                          orbit__loss_total(&k->loss.total), k->file.size);
	orbit__strangers_tick(c, now, 0);
	if (now - c->status_ms >= STATUS_INTERVAL_MS) {
		status_show(c, now);
		/* A hostile 64 MiB frame does not pin 64 MiB for long. */
		if (c->scratch.cap > SCRATCH_KEEP) {
			free(c->scratch.buf);
			c->scratch.buf = NULL;
			c->scratch.cap = 0;
			c->scratch.len = 0;
		}
	}
}

static void on_signal(uv_signal_t *s, int signum)
{
	struct orbit_collector *c = s->data;

	if (c->stopping) {
		orbit__log(c, 1, "second %s: exiting without finishing", strsignal(signum));
		exit(1);
	}
	c->stopping = 1;
	orbit__log(c, 0, "%s: stopping; finishing %u connection%s", strsignal(signum), c->nconns,
	           c->nconns == 1 ? "" : "s");
	if (c->listening) {
		uv_close((uv_handle_t *)&c->server, NULL);
		c->listening = 0;
	}
	for (struct orbit_conn *k = c->conns; k != NULL; k = k->next)
		orbit__conn_stop(k);
	stop_if_done(c);
}

/* ---- setting up ---- */

static int token_load(struct orbit_collector *c, const char *path)
{
	uint8_t buf[ORBIT_TOKEN_MAX + 1];
	size_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		fprintf(stderr, "orbit-collector: %s: cannot open the token file: %s\n", path,
		        strerror(errno));
		return -1;
	}
	while (n < sizeof buf) {
		ssize_t r = read(fd, buf + n, sizeof buf - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			fprintf(stderr, "orbit-collector: %s: cannot read the token file: %s\n",
			        path, strerror(errno));
			close(fd);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	if (n > ORBIT_TOKEN_MAX) {
		fprintf(stderr, "orbit-collector: %s: token file over %u bytes\n", path,
		        ORBIT_TOKEN_MAX);
		return -1;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (n == 0) {
		fprintf(stderr, "orbit-collector: %s: the token file is empty\n", path);
		return -1;
	}
	memcpy(c->token, buf, n);
	c->token_len = n;
	return 0;
}

static int dir_open(struct orbit_collector *c)
{
	size_t n = strlen(c->opt.dir);

	if (n >= sizeof c->dir) {
		fprintf(stderr, "orbit-collector: --dir: the path is too long\n");
		return -1;
	}
	memcpy(c->dir, c->opt.dir, n + 1);
	while (n > 1 && c->dir[n - 1] == '/')
		c->dir[--n] = '\0';
	if (mkdir(c->dir, 0755) != 0 && errno != EEXIST) {
		fprintf(stderr, "orbit-collector: %s: cannot create the directory: %s\n", c->dir,
		        strerror(errno));
		return -1;
	}
	c->dirfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (c->dirfd < 0 || access(c->dir, W_OK | X_OK) != 0) {
		fprintf(stderr, "orbit-collector: %s: cannot write capture files there: %s\n",
		        c->dir, strerror(errno));
		return -1;
	}
	/* One collector per directory: its caps (--max-dir-size) count what it
	 * writes, and two would each count only their own. The lock is the
	 * directory's own, held while the collector lives (the kernel drops it
	 * with the process, however it ends). */
	if (flock(c->dirfd, LOCK_EX | LOCK_NB) != 0) {
		fprintf(stderr,
		        "orbit-collector: %s: %s; one collector per directory (its "
		        "--max-dir-size counts only its own files)\n",
		        c->dir,
		        errno == EWOULDBLOCK ? "in use by another orbit-collector"
		                             : strerror(errno));
		return -1;
	}
	return 0;
}

/* Each stream takes a socket and a file, each pending connection a socket,
 * the live view its connections and its feeds' files. */
static void nofile_raise(struct orbit_collector *c)
{
	rlim_t want = (rlim_t)c->opt.max_connections * 2 + c->opt.max_pending + 64 +
	              (c->opt.ui ? ORBIT_LIVE_CONNS + ORBIT_LIVE_FEEDS * 4 : 0);
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur >= want)
		return;
	r.rlim_cur = r.rlim_max != RLIM_INFINITY && r.rlim_max < want ? r.rlim_max : want;
	if (setrlimit(RLIMIT_NOFILE, &r) != 0 || r.rlim_cur < want)
		orbit__log(c, 1,
		           "warning: open files limited to %llu; --max-connections %u and "
		           "--max-pending %u need about %llu (ulimit -n)",
		           (unsigned long long)r.rlim_cur, c->opt.max_connections,
		           c->opt.max_pending, (unsigned long long)want);
}

static int bind_first(struct orbit_collector *c, const struct addrinfo *ai)
{
	int err = UV_EADDRNOTAVAIL;

	for (; ai != NULL; ai = ai->ai_next) {
		uv_tcp_init(&c->loop, &c->server);
		err = uv_tcp_bind(&c->server, ai->ai_addr, 0);
		if (err == 0)
			err = uv_listen((uv_stream_t *)&c->server, LISTEN_BACKLOG, on_connection);
		if (err == 0)
			return 0;
		uv_close((uv_handle_t *)&c->server, NULL);
		uv_run(&c->loop, UV_RUN_NOWAIT);
	}
	return err;
}

static int listen_start(struct orbit_collector *c)
{
	char host[256], port[8], where[80];
	const char *why;
	struct addrinfo hints = {
	    .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV};
	uv_getaddrinfo_t req;
	struct sockaddr_storage ss;
	int len = sizeof ss;

	if (orbit__collector_split_listen(c->opt.listen, host, sizeof host, port, sizeof port,
	                                  &why) != 0) {
		fprintf(stderr, "orbit-collector: --listen '%s': %s\n", c->opt.listen, why);
		return -1;
	}
	int err = uv_getaddrinfo(&c->loop, &req, NULL, host, port, &hints);
	if (err) {
		fprintf(stderr, "orbit-collector: --listen '%s': cannot resolve %s: %s\n",
		        c->opt.listen, host, uv_strerror(err));
		return -1;
	}
	c->server.data = c;
	err = bind_first(c, req.addrinfo);
	uv_freeaddrinfo(req.addrinfo);
	if (err) {
		fprintf(stderr, "orbit-collector: cannot listen on %s: %s\n", c->opt.listen,
		        uv_strerror(err));
		return -1;
	}
	c->server.data = c;
	c->listening = 1;
	uv_tcp_getsockname(&c->server, (struct sockaddr *)&ss, &len);
	sockaddr_text(&ss, where, sizeof where);
	printf("listening on %s\n", where);
	fflush(stdout);
	return 0;
}

/* The live view (live.h): its line on stdout after the listening one. A
 * default address whose port is taken (another collector has it) is said
 * in one line; an address asked for must be had. */
static int live_start(struct orbit_collector *c)
{
	if (c->opt.ui == NULL)
		return 0;
	struct orbit_live_options lo = {.addr = c->opt.ui,
	                                .dir = c->dir,
	                                .token = c->token_len ? c->token : NULL,
	                                .token_len = c->token_len,
	                                .history_ns = c->opt.ui_history_ns};
	char url[128], why[256];
	if (orbit__live_start(&lo, &c->live, url, sizeof url, why, sizeof why) != 0) {
		c->live = NULL;
		if (c->opt.ui_default) {
			orbit__log(c, 0, "no live view: %s (--ui to choose another address)", why);
			return 0;
		}
		fprintf(stderr, "orbit-collector: live view: %s\n", why);
		return -1;
	}
	printf("live view: %s%s\n", url,
	       c->token_len ? " (with the token: /login?token=TOKEN)" : "");
	fflush(stdout);
	return 0;
}

static uint64_t tick_interval(const struct orbit_collector_options *o)
{
	uint64_t t = ORBIT_COLLECTOR_TICK_MAX_MS; /* acknowledgements are due this often */
	const uint64_t limits[] = {o->handshake_timeout_ms, o->frame_timeout_ms,
	                           o->idle_timeout_ms};

	for (size_t i = 0; i < 3; i++)
		if (limits[i] && limits[i] / 4 < t)
			t = limits[i] / 4;
	return t < 10 ? 10 : t;
}

static int setup(struct orbit_collector *c)
{
	if (c->opt.token_file && token_load(c, c->opt.token_file) != 0)
		return -1;
	if (dir_open(c) != 0 || orbit__caps_setup(c) != 0)
		return -1;
	if (orbit__frame_writer_init(&c->ack_writer, 1) != 0) {
		fprintf(stderr, "orbit-collector: out of memory\n");
		return -1;
	}
	nofile_raise(c);
	if (listen_start(c) != 0 || live_start(c) != 0)
		return -1;
	uv_signal_init(&c->loop, &c->sigint);
	uv_signal_init(&c->loop, &c->sigterm);
	c->sigint.data = c->sigterm.data = c;
	uv_signal_start(&c->sigint, on_signal, SIGINT);
	uv_signal_start(&c->sigterm, on_signal, SIGTERM);
	uv_prepare_init(&c->loop, &c->turn);
	c->turn.data = c;
	uv_prepare_start(&c->turn, on_turn);
	uv_unref((uv_handle_t *)&c->turn); /* the loop ends without it */
	uv_timer_init(&c->loop, &c->tick);
	c->tick.data = c;
	uint64_t t = tick_interval(&c->opt);
	uv_timer_start(&c->tick, on_tick, t, t);
	c->status_ms = uv_now(&c->loop);
	char caps[160];
	orbit__caps_text(c, caps, sizeof caps);
	orbit__log(c, 0, "writing captures to %s%s: %s", c->dir,
	           c->token_len ? " (token required)" : "", caps);
	return 0;
}

int main(int argc, char **argv)
{
	static struct orbit_collector c; /* the program's one state */

	int r = orbit__collector_parse_args(argc, argv, &c.opt);
	if (r != 0)
		return r > 0 ? 0 : 1;
	if (c.opt.ingest) {
		r = orbit__ingest(c.opt.dir, c.opt.files, c.opt.nfiles);
		free(c.opt.files);
		return r;
	}
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* over a file size limit: EFBIG, reported */
	c.tty = isatty(STDERR_FILENO);
	c.dirfd = -1;
	r = uv_loop_init(&c.loop);
	if (r) {
		fprintf(stderr, "orbit-collector: cannot start the event loop: %s\n",
		        uv_strerror(r));
		return 1;
	}
	if (setup(&c) != 0)
		return 1;
	uv_run(&c.loop, UV_RUN_DEFAULT);
	orbit__strangers_tick(&c, uv_now(&c.loop), 1);
	status_clear(&c);
	orbit__log(&c, 0, "stopped: %" PRIu64 " frames, %" PRIu64 " bytes written", c.frames,
	           c.bytes);
	orbit__live_stop(c.live); /* c.live stays: what it holds goes with the process */
	orbit__frame_scratch_free(&c.scratch);
	orbit__pool_free(&c.pool);
	orbit__frame_writer_free(&c.ack_writer);
	close(c.dirfd);
	uv_loop_close(&c.loop);
	return 0;
}
