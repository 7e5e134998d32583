/*
 * live_http.c — the live view's HTTP server: h2o (its libuv flavour) on
 * the view thread's loop. Every request is a GET of one of
 *
 *   /                 the page: orbit-replay's --html page in live mode
 *   /streams          the list of streams as JSON (the page asks once a second)
 *   /events?stream=N  stream N's data blocks, pushed as Server-Sent Events
 *   /capture/N        stream N's capture file as written so far
 *   /login?token=T    with the collector's token: a session cookie, then /
 *
 * With a token every request but /login must carry the session cookie or
 * "Authorization: Bearer TOKEN"; others get 403. Strangers are bounded by
 * h2o's own limits (request headers of at most H2O_MAX_REQLEN bytes, a
 * request within HEADER_TIMEOUT_MS) and by ORBIT_LIVE_CONNS connections at
 * once: a connection past it is closed at once. None of this runs on the
 * loop that receives the agents' streams.
 *
 * A viewer (an /events response) is sent the feed's newest block whenever
 * it has taken the one before: h2o calls proceed once a block is written
 * to the socket, and until then newer blocks replace each other in the
 * feed. Each block is preceded by an "event: meta" line with the blocks
 * the viewer was sent and skipped. A viewer thus holds at most one block.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <h2o.h>
#include <h2o/socket/uv-binding.h>

#include "collector.h"
#include "html/replay_html.h"
#include "live_internal.h"

#define HEADER_TIMEOUT_MS 5000u
#define DOWNLOAD_CHUNK (256u << 10)
#define LISTEN_BACKLOG 512

struct live_http {
	h2o_globalconf_t conf;
	h2o_context_t ctx;
	h2o_accept_ctx_t accept;
	uv_tcp_t server;
	int listening;
	int served; /* h2o's context is up: what it holds stays */
	unsigned nconns;
};

struct ui_conn {
	uv_tcp_t tcp;
	struct orbit_live *l;
};

struct live_viewer {
	h2o_generator_t super;
	h2o_req_t *req;
	struct live_feed *feed;
	struct live_viewer *prev, *next;
	struct live_block *sending;
	uint64_t sent_seq, sent, skipped;
	int busy;
	char meta[160];
};

/* ---- small helpers ---- */

/* The value of key in the request's query; as orbit__live_query_value. */
static ssize_t query_get(h2o_req_t *req, const char *key, char *out, size_t n)
{
	if (req->query_at == SIZE_MAX || req->query_at >= req->path.len)
		return -1;
	return orbit__live_query_value(req->path.base + req->query_at + 1,
	                               req->path.len - req->query_at - 1, key, out, n);
}

static void header(h2o_req_t *req, const h2o_token_t *t, const char *v)
{
	h2o_add_header(&req->pool, &req->res.headers, t, NULL, v, strlen(v));
}

static void reply(h2o_req_t *req, int status, const char *reason, const char *type,
                  const char *body, size_t len)
{
	req->res.status = status;
	req->res.reason = reason;
	header(req, H2O_TOKEN_CONTENT_TYPE, type);
	header(req, H2O_TOKEN_CACHE_CONTROL, "no-store");
	h2o_add_header_by_str(&req->pool, &req->res.headers, H2O_STRLIT("x-content-type-options"),
	                      0, NULL, H2O_STRLIT("nosniff"));
	h2o_send_inline(req, body, len);
}

static void reply_text(h2o_req_t *req, int status, const char *reason, const char *text)
{
	reply(req, status, reason, "text/plain; charset=utf-8", text, strlen(text));
}

/* ---- who may ask ---- */

static int authorized(struct orbit_live *l, h2o_req_t *req)
{
	if (l->opt.token_len == 0)
		return 1;
	for (ssize_t i = -1; (i = h2o_find_header(&req->headers, H2O_TOKEN_COOKIE, i)) != -1;) {
		const h2o_iovec_t *v = &req->headers.entries[i].value;
		if (orbit__live_cookie_session(v->base, v->len, l->session))
			return 1;
	}
	ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
	if (i != -1) {
		const h2o_iovec_t *v = &req->headers.entries[i].value;
		if (v->len > 7 && memcmp(v->base, "Bearer ", 7) == 0 &&
		    orbit__secret_equal(v->base + 7, v->len - 7, l->token, l->opt.token_len))
			return 1;
	}
	return 0;
}

static void login(struct orbit_live *l, h2o_req_t *req)
{
	char t[ORBIT_COLLECTOR_TOKEN_MAX];
	ssize_t n = query_get(req, "token", t, sizeof t);
	if (l->opt.token_len == 0 ||
	    (n >= 0 && orbit__secret_equal(t, (size_t)n, l->token, l->opt.token_len))) {
		char cookie[128];
		snprintf(cookie, sizeof cookie, "orbit_ui=%s; Path=/; HttpOnly; SameSite=Strict",
		         l->session);
		req->res.status = 303;
		req->res.reason = "See Other";
		header(req, H2O_TOKEN_SET_COOKIE, cookie);
		header(req, H2O_TOKEN_LOCATION, "/");
		reply_text(req, 303, "See Other", "logged in\n");
		return;
	}
	reply_text(req, 403, "Forbidden", "wrong token\n");
}

/* ---- the page and the list ---- */

static void page(h2o_req_t *req)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) {
		reply_text(req, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	struct orbit_rp_out o;
	orbit__rp_out_stream(&o, f, "live page");
	orbit__rp_html_page(&o, NULL, NULL);
	int bad = orbit__rp_out_close(&o) != 0 || ferror(f); /* f stays open */
	fclose(f);
	if (bad)
		reply_text(req, 500, "Internal Server Error", "out of memory\n");
	else
		reply(req, 200, "OK", "text/html; charset=utf-8", buf, len);
	free(buf);
}

static void streams(struct orbit_live *l, h2o_req_t *req)
{
	size_t len = 0;
	char *j = orbit__live_streams_json(l, &len);
	if (j == NULL) {
		reply_text(req, 500, "Internal Server Error", "out of memory\n");
		return;
	}
	reply(req, 200, "OK", "application/json", j, len);
	free(j);
}

/* ---- viewers ---- */

static void viewer_send(struct live_viewer *v, struct live_block *b)
{
	v->busy = 1;
	v->sending = b;
	if (v->sent_seq != 0 && b->seq > v->sent_seq + 1)
		v->skipped += b->seq - v->sent_seq - 1;
	v->sent_seq = b->seq;
	v->sent++;
	int n = snprintf(v->meta, sizeof v->meta,
	                 "event: meta\ndata: {\"seq\":%" PRIu64 ",\"sent\":%" PRIu64
	                 ",\"skipped\":%" PRIu64 "}\n\n",
	                 b->seq, v->sent, v->skipped);
	h2o_iovec_t bufs[2] = {h2o_iovec_init(v->meta, (size_t)n), h2o_iovec_init(b->data, b->len)};
	h2o_send(v->req, bufs, 2, H2O_SEND_STATE_IN_PROGRESS);
}

/* The feed's newest block to v when v is free for it; b: that block, a
 * reference the caller holds (taken here when sent). */
static void viewer_offer(struct live_viewer *v, struct live_block *b)
{
	if (v->busy || b == NULL || b->seq <= v->sent_seq)
		return;
	atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	viewer_send(v, b);
}

static struct live_block *newest(struct live_feed *f)
{
	pthread_mutex_lock(&f->l->mu);
	struct live_block *b = f->latest;
	if (b != NULL)
		atomic_fetch_add_explicit(&b->refs, 1, memory_order_relaxed);
	pthread_mutex_unlock(&f->l->mu);
	return b;
}

void orbit__live_http_deliver(struct live_feed *f)
{
	struct live_block *b = newest(f);
	if (b == NULL)
		return;
	for (struct live_viewer *v = f->viewers; v != NULL;) {
		struct live_viewer *next = v->next; /* h2o_send may not free v: dispose is later */
		viewer_offer(v, b);
		v = next;
	}
	orbit__live_block_unref(b);
}

static void viewer_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct live_viewer *v = (struct live_viewer *)g;
	orbit__live_block_unref(v->sending);
	v->sending = NULL;
	v->busy = 0;
	if (v->feed == NULL)
		return;
	struct live_block *b = newest(v->feed);
	viewer_offer(v, b);
	orbit__live_block_unref(b);
}

static void viewer_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)req;
	struct live_viewer *v = (struct live_viewer *)g;
	v->busy = 1; /* nothing more is sent; dispose frees */
}

static void viewer_dispose(void *p)
{
	struct live_viewer *v = p;
	orbit__live_block_unref(v->sending);
	struct live_feed *f = v->feed;
	if (f == NULL)
		return;
	if (v->prev)
		v->prev->next = v->next;
	else
		f->viewers = v->next;
	if (v->next)
		v->next->prev = v->prev;
	if (--f->nviewers == 0)
		f->idle_since_ms = uv_now(&f->l->loop);
}

static void events(struct orbit_live *l, h2o_req_t *req)
{
	char id[16];
	ssize_t n = query_get(req, "stream", id, sizeof id);
	uint32_t sid = 0;
	if (n <= 0 || orbit__live_stream_number(id, (size_t)n, &sid) != 0) {
		reply_text(req, 400, "Bad Request", "events?stream=N: N a stream's id\n");
		return;
	}
	const char *why = "";
	struct live_feed *f = orbit__live_feed_of(l, sid, &why);
	if (f == NULL) {
		reply_text(req, strcmp(why, "no such stream") == 0 ? 404 : 503,
		           strcmp(why, "no such stream") == 0 ? "Not Found" : "Service Unavailable",
		           why);
		return;
	}
	struct live_viewer *v = h2o_mem_alloc_shared(&req->pool, sizeof *v, viewer_dispose);
	memset(v, 0, sizeof *v);
	v->super.proceed = viewer_proceed;
	v->super.stop = viewer_stop;
	v->req = req;
	v->feed = f;
	v->next = f->viewers;
	if (f->viewers)
		f->viewers->prev = v;
	f->viewers = v;
	f->nviewers++;
	req->res.status = 200;
	req->res.reason = "OK";
	header(req, H2O_TOKEN_CONTENT_TYPE, "text/event-stream");
	header(req, H2O_TOKEN_CACHE_CONTROL, "no-store");
	h2o_start_response(req, &v->super);
	/* The first bytes say the stream is open; the newest block follows. */
	static const char hello[] = ": orbit live view\n\n";
	v->busy = 1;
	h2o_iovec_t b = h2o_iovec_init(hello, sizeof hello - 1);
	h2o_send(req, &b, 1, H2O_SEND_STATE_IN_PROGRESS);
}

/* ---- downloads ---- */

struct download {
	h2o_generator_t super;
	int fd;
	uint64_t off, end;
	char buf[DOWNLOAD_CHUNK];
};

static void download_proceed(h2o_generator_t *g, h2o_req_t *req)
{
	struct download *d = (struct download *)g;
	size_t want = d->end - d->off < DOWNLOAD_CHUNK ? (size_t)(d->end - d->off) : DOWNLOAD_CHUNK;
	ssize_t got = want ? pread(d->fd, d->buf, want, (off_t)d->off) : 0;
	if (got < 0 || (got == 0 && want > 0)) {
		h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
		return;
	}
	d->off += (uint64_t)got;
	h2o_iovec_t b = h2o_iovec_init(d->buf, (size_t)got);
	h2o_send(req, &b, 1, d->off == d->end ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

static void download_stop(h2o_generator_t *g, h2o_req_t *req)
{
	(void)g;
	(void)req;
}

static void download_dispose(void *p)
{
	struct download *d = p;
	if (d->fd >= 0)
		close(d->fd);
}

static void capture(struct orbit_live *l, h2o_req_t *req, const char *id, size_t len)
{
	uint32_t sid = 0;
	char path[4400], name[160];
	uint64_t bytes = 0;
	if (orbit__live_stream_number(id, len, &sid) != 0 ||
	    orbit__live_capture_of(l, sid, path, sizeof path, &bytes, name, sizeof name) != 0) {
		reply_text(req, 404, "Not Found", "no such stream\n");
		return;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		reply_text(req, 404, "Not Found", "its capture file is gone\n");
		return;
	}
	struct download *d = h2o_mem_alloc_shared(&req->pool, sizeof *d, download_dispose);
	d->super.proceed = download_proceed;
	d->super.stop = download_stop;
	d->fd = fd;
	d->off = 0;
	d->end = bytes; /* complete frames only: the file replays as an incomplete capture */
	char disp[224];
	snprintf(disp, sizeof disp, "attachment; filename=\"%s\"", name); /* a safe name */
	req->res.status = 200;
	req->res.reason = "OK";
	req->res.content_length = bytes;
	header(req, H2O_TOKEN_CONTENT_TYPE, "application/zstd");
	header(req, H2O_TOKEN_CONTENT_DISPOSITION, disp);
	h2o_start_response(req, &d->super);
	download_proceed(&d->super, req);
}

/* ---- routing ---- */

struct handler {
	h2o_handler_t super;
	struct orbit_live *l;
};

static int is(const h2o_iovec_t *p, const char *s)
{
	return p->len == strlen(s) && memcmp(p->base, s, p->len) == 0;
}

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
	struct orbit_live *l = ((struct handler *)self)->l;
	const h2o_iovec_t *p = &req->path_normalized;
	if (!h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET"))) {
		reply_text(req, 405, "Method Not Allowed", "GET only\n");
		return 0;
	}
	if (is(p, "/login")) {
		login(l, req);
		return 0;
	}
	if (!authorized(l, req)) {
		reply_text(req, 403, "Forbidden",
		           "this live view needs the collector's token: open /login?token=TOKEN\n");
		return 0;
	}
	if (is(p, "/"))
		page(req);
	else if (is(p, "/streams"))
		streams(l, req);
	else if (is(p, "/events"))
		events(l, req);
	else if (p->len > 9 && memcmp(p->base, "/capture/", 9) == 0)
		capture(l, req, p->base + 9, p->len - 9);
	else
		reply_text(req, 404, "Not Found", "not found\n");
	return 0;
}

/* ---- connections ---- */

static void conn_closed(uv_handle_t *h)
{
	struct ui_conn *k = (struct ui_conn *)h;
	k->l->http->nconns--;
	free(k);
}

static void conn_refused(uv_handle_t *h)
{
	free(h);
}

static void on_connection(uv_stream_t *server, int status)
{
	struct orbit_live *l = server->data;
	struct live_http *hs = l->http;
	if (status != 0)
		return;
	struct ui_conn *k = malloc(sizeof *k);
	if (k == NULL)
		return;
	k->l = l;
	uv_tcp_init(server->loop, &k->tcp);
	if (uv_accept(server, (uv_stream_t *)&k->tcp) != 0) {
		uv_close((uv_handle_t *)&k->tcp, conn_refused);
		return;
	}
	if (hs->nconns >= ORBIT_LIVE_CONNS) {
		uv_close((uv_handle_t *)&k->tcp, conn_refused);
		return;
	}
	hs->nconns++;
	h2o_socket_t *sock = h2o_uv_socket_create((uv_stream_t *)&k->tcp, conn_closed);
	h2o_accept(&hs->accept, sock);
}

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

int orbit__live_http_start(struct orbit_live *l, char *url, size_t url_len, char *why, size_t n)
{
	char host[256], port[8];
	const char *bad;
	if (orbit__collector_split_listen(l->opt.addr, host, sizeof host, port, sizeof port,
	                                  &bad) != 0) {
		snprintf(why, n, "--ui '%s': %s", l->opt.addr, bad);
		return -1;
	}
	struct addrinfo hints = {.ai_family = AF_UNSPEC,
	                         .ai_socktype = SOCK_STREAM,
	                         .ai_flags = AI_NUMERICSERV | AI_PASSIVE};
	struct addrinfo *ai = NULL;
	int err = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai);
	if (err != 0) {
		snprintf(why, n, "--ui '%s': cannot resolve %s: %s", l->opt.addr, host,
		         gai_strerror(err));
		return -1;
	}
	for (const struct addrinfo *a = ai; a != NULL; a = a->ai_next)
		if (!is_loopback(a->ai_addr) && l->opt.token_len == 0) {
			snprintf(why, n,
			         "--ui %s is not a loopback address: the live view is served off "
			         "loopback only with a token (--token-file)",
			         l->opt.addr);
			freeaddrinfo(ai);
			return -1;
		}
	struct live_http *hs = calloc(1, sizeof *hs);
	if (hs == NULL) {
		freeaddrinfo(ai);
		snprintf(why, n, "out of memory");
		return -1;
	}
	l->http = hs;
	err = UV_EADDRNOTAVAIL;
	for (const struct addrinfo *a = ai; a != NULL; a = a->ai_next) {
		uv_tcp_init(&l->loop, &hs->server);
		hs->server.data = l;
		err = uv_tcp_bind(&hs->server, a->ai_addr, 0);
		if (err == 0)
			err = uv_listen((uv_stream_t *)&hs->server, LISTEN_BACKLOG, on_connection);
		if (err == 0)
			break;
		uv_close((uv_handle_t *)&hs->server, NULL);
		uv_run(&l->loop, UV_RUN_NOWAIT);
	}
	freeaddrinfo(ai);
	if (err != 0) {
		snprintf(why, n, "cannot listen on %s: %s", l->opt.addr, uv_strerror(err));
		return -1;
	}
	hs->listening = 1;
	struct sockaddr_storage ss;
	int len = sizeof ss;
	uv_tcp_getsockname(&hs->server, (struct sockaddr *)&ss, &len);
	char a[INET6_ADDRSTRLEN] = "?";
	int p = 0;
	if (ss.ss_family == AF_INET6) {
		uv_ip6_name((struct sockaddr_in6 *)&ss, a, sizeof a);
		p = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		snprintf(url, url_len, "http://[%s]:%d/", a, p);
	} else {
		uv_ip4_name((struct sockaddr_in *)&ss, a, sizeof a);
		p = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		snprintf(url, url_len, "http://%s:%d/", a, p);
	}

	h2o_config_init(&hs->conf);
	hs->conf.http1.req_timeout = HEADER_TIMEOUT_MS;
	hs->conf.http1.upgrade_to_http2 = 0;
	h2o_hostconf_t *hc =
	    h2o_config_register_host(&hs->conf, h2o_iovec_init(H2O_STRLIT("default")), 65535);
	h2o_pathconf_t *pc = h2o_config_register_path(hc, "/", 0);
	struct handler *hd = (struct handler *)h2o_create_handler(pc, sizeof *hd);
	hd->super.on_req = on_req;
	hd->l = l;
	h2o_context_init(&hs->ctx, &l->loop, &hs->conf);
	hs->accept.ctx = &hs->ctx;
	hs->accept.hosts = hs->conf.hosts;
	hs->served = 1;
	return 0;
}

void orbit__live_http_stop(struct orbit_live *l)
{
	struct live_http *hs = l->http;
	if (hs != NULL && hs->listening) {
		uv_close((uv_handle_t *)&hs->server, NULL);
		hs->listening = 0;
	}
	/* Connections are h2o's: the loop is stopped with them open, and the
	 * process exits (orbit__live_stop). */
	uv_stop(&l->loop);
}

void orbit__live_http_free(struct orbit_live *l)
{
	/* A server that never started (its address could not be had) holds
	 * no connection: it goes. One that served stays with what h2o holds,
	 * until the process ends (orbit__live_stop). */
	if (l->http != NULL && !l->http->served) {
		free(l->http);
		l->http = NULL;
	}
}
