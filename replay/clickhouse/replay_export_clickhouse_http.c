/*
 * replay_export_clickhouse_http.c — the loader's HTTP client: ClickHouse's
 * HTTP interface through libcurl (one easy handle, so one kept-alive
 * connection), and the one place that turns what went wrong into a line a
 * user can act on:
 *
 *   - the server cannot be reached (connection refused, name unknown,
 *     timeout, connection cut): "cannot reach ClickHouse at HOST:PORT: ...",
 *     transient; every request has a deadline for the whole of it
 *     (--clickhouse-timeout), so a server that trickles its reply or never
 *     answers fails the request instead of holding the load forever;
 *   - ClickHouse answered with an error: its own text on one line, with the
 *     HTTP status, transient only for the codes that say a server may come
 *     back (a shard down, a timeout, too many parts or queries);
 *   - the URL is not an http:// or https:// URL.
 *
 * Messages name the server as host:port and never show the URL, which may
 * hold a password. Every INSERT goes with insert_distributed_sync=1: through
 * a Distributed table it returns only when every shard has its rows, so a
 * shard that is down fails the INSERT instead of queueing rows that would
 * arrive after the captures row (docs/operations.md). SELECTs go with
 * wait_end_of_query=1, so an error is an HTTP error, not text after rows.
 *
 * Why libcurl and not libuv with an HTTP parser: the replay runs on one
 * thread and hands over a batch at a time, so a blocking request is the
 * whole need; libcurl costs a few percent of making the rows
 * (docs/performance.md, "ClickHouse"), and brings keep-alive, timeouts,
 * HTTPS, proxies and credentials in the URL for nothing.
 */
#include <curl/curl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "replay_export_clickhouse.h"

#ifndef ORBIT_VERSION
#define ORBIT_VERSION "unknown"
#endif

#define REPLY_MAX (64u << 20) /* of a SELECT's result */
#define CONNECT_TIMEOUT_MS 10000L
#define STALL_SECONDS 120L         /* no byte either way for this long: failed */
#define TEXT_MAX 480u              /* of ClickHouse's error text, in a message */
#define UPLOAD_BUFFER (512L << 10) /* libcurl's, for a body: fewer, larger writes */

struct orbit_rp_ch_http {
	CURL *curl;
	CURLU *url;      /* as given */
	CURLU *url_nodb; /* without database= */
	struct curl_slist *headers;
	char server[256];
	char *database;
	char errbuf[CURL_ERROR_SIZE];
	long timeout_ms; /* a request's whole time */
};

static int global_ready;

static void say(struct orbit_rp_ch_error *e, int transient, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(struct orbit_rp_ch_error *e, int transient, const char *fmt, ...)
{
	va_list ap;
	e->transient = transient;
	e->code = 0;
	va_start(ap, fmt);
	vsnprintf(e->text, sizeof e->text, fmt, ap);
	va_end(ap);
}

/* The URL's query without its database= parameter; *db gets its value. */
static int split_database(CURLU *u, CURLU *nodb, char **db)
{
	char *q = NULL;
	*db = NULL;
	if (curl_url_get(u, CURLUPART_QUERY, &q, 0) != CURLUE_OK || q == NULL)
		return 0; /* no query */
	size_t n = strlen(q);
	char *rest = calloc(1, n + 1);
	if (rest == NULL) {
		curl_free(q);
		return -1;
	}
	for (char *p = q, *amp; p && *p; p = amp ? amp + 1 : NULL) {
		amp = strchr(p, '&');
		size_t len = amp ? (size_t)(amp - p) : strlen(p);
		if (len >= 9 && memcmp(p, "database=", 9) == 0) {
			int out;
			char *v = curl_easy_unescape(NULL, p + 9, (int)(len - 9), &out);
			free(*db);
			*db = v ? strndup(v, (size_t)out) : NULL;
			curl_free(v);
			continue;
		}
		if (*rest)
			strcat(rest, "&");
		strncat(rest, p, len);
	}
	curl_free(q);
	CURLUcode rc = curl_url_set(nodb, CURLUPART_QUERY, *rest ? rest : NULL, 0);
	free(rest);
	return rc == CURLUE_OK ? 0 : -1;
}

struct orbit_rp_ch_http *orbit__rp_ch_http_new(const char *url, uint32_t timeout_s,
                                               struct orbit_rp_ch_error *e)
{
	if (!global_ready) {
		if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
			say(e, 0, "cannot start libcurl");
			return NULL;
		}
		global_ready = 1;
	}
	struct orbit_rp_ch_http *h = calloc(1, sizeof *h);
	if (h == NULL) {
		say(e, 0, "out of memory");
		return NULL;
	}
	h->timeout_ms = (long)(timeout_s ? timeout_s : ORBIT_RP_CH_TIMEOUT_S) * 1000L;
	h->url = curl_url();
	char *scheme = NULL, *host = NULL, *port = NULL;
	if (h->url == NULL || curl_url_set(h->url, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h->url, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0) ||
	    curl_url_get(h->url, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h->url, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK) {
		say(e, 0,
		    "--clickhouse takes an http:// or https:// URL, as in "
		    "http://host:8123/?database=orbit");
		curl_free(scheme);
		curl_free(host);
		orbit__rp_ch_http_free(h);
		return NULL;
	}
	snprintf(h->server, sizeof h->server, "%s:%s", host, port);
	curl_free(scheme);
	curl_free(host);
	curl_free(port);
	h->url_nodb = curl_url_dup(h->url);
	h->curl = curl_easy_init();
	/* No "Expect: 100-continue" wait before a large body. */
	h->headers = curl_slist_append(NULL, "Expect:");
	if (h->url_nodb == NULL || h->curl == NULL || h->headers == NULL ||
	    split_database(h->url, h->url_nodb, &h->database) != 0) {
		say(e, 0, "out of memory");
		orbit__rp_ch_http_free(h);
		return NULL;
	}
	return h;
}

void orbit__rp_ch_http_free(struct orbit_rp_ch_http *h)
{
	if (h == NULL)
		return;
	if (h->curl)
		curl_easy_cleanup(h->curl);
	curl_url_cleanup(h->url);
	curl_url_cleanup(h->url_nodb);
	curl_slist_free_all(h->headers);
	free(h->database);
	free(h);
}

const char *orbit__rp_ch_http_server(const struct orbit_rp_ch_http *h)
{
	return h->server;
}

const char *orbit__rp_ch_http_database(const struct orbit_rp_ch_http *h)
{
	return h->database ? h->database : "";
}

void orbit__rp_ch_reply_free(struct orbit_rp_ch_reply *r)
{
	free(r->data);
	memset(r, 0, sizeof *r);
}

static size_t on_body(char *p, size_t size, size_t n, void *ctx)
{
	struct orbit_rp_ch_reply *r = ctx;
	size_t len = size * n;
	if (r->len + len + 1 > r->cap) {
		if (r->len + len + 1 > REPLY_MAX)
			return 0; /* fails the transfer: CURLE_WRITE_ERROR */
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + len + 1)
			cap *= 2;
		char *d = realloc(r->data, cap);
		if (d == NULL)
			return 0;
		r->data = d;
		r->cap = cap;
	}
	memcpy(r->data + r->len, p, len);
	r->len += len;
	r->data[r->len] = '\0';
	return len;
}

/* ClickHouse error codes after which the same request may succeed. */
static int transient_code(int code)
{
	switch (code) {
	case 159: /* TIMEOUT_EXCEEDED */
	case 164: /* READONLY: a replica catching up */
	case 202: /* TOO_MANY_SIMULTANEOUS_QUERIES */
	case 209: /* SOCKET_TIMEOUT */
	case 210: /* NETWORK_ERROR: a shard or replica */
	case 241: /* MEMORY_LIMIT_EXCEEDED */
	case 252: /* TOO_MANY_PARTS: merges will catch up */
	case 279: /* ALL_CONNECTION_TRIES_FAILED: a shard is down */
	case 285: /* TOO_FEW_LIVE_REPLICAS */
	case 319: /* UNKNOWN_STATUS_OF_INSERT */
		return 1;
	}
	return 0;
}

/* ClickHouse's error text on one line: runs of white space as one space,
 * "e.displayText() = " and the ", e.what() = ..." tails left out, bytes that are not printable
 * ASCII as '?', at most TEXT_MAX bytes. */
static void one_line(const char *s, size_t n, char *out, size_t cap)
{
	static const char tail[] = ", e.what() = ", noise[] = "e.displayText() = ";
	size_t o = 0;
	int space = 0;
	for (size_t i = 0; i < n && o + 4 < cap && o < TEXT_MAX; i++) {
		if (n - i >= sizeof noise - 1 && memcmp(s + i, noise, sizeof noise - 1) == 0) {
			i += sizeof noise - 2;
			continue;
		}
		if (n - i >= sizeof tail - 1 && memcmp(s + i, tail, sizeof tail - 1) == 0) {
			i += sizeof tail - 1;
			while (i < n && s[i] != ' ' && s[i] != '\n' && s[i] != '\r')
				i++;
			i--;
			continue;
		}
		unsigned char c = (unsigned char)s[i];
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t') {
			space = o > 0;
			continue;
		}
		if (space)
			out[o++] = ' ';
		space = 0;
		out[o++] = c >= 0x20 && c < 0x7f ? (char)c : '?';
	}
	if (o >= TEXT_MAX)
		out[o++] = '.', out[o++] = '.', out[o++] = '.';
	out[o] = '\0';
}

void orbit__rp_ch_error_of(const char *server, long status, const char *body, size_t len,
                           struct orbit_rp_ch_error *e)
{
	char text[TEXT_MAX + 8], head[32];
	int code = 0;
	size_t k = len < sizeof head - 1 ? len : sizeof head - 1;
	memcpy(head, body, k);
	head[k] = '\0';
	if (sscanf(head, "Code: %d", &code) != 1 || code < 0)
		code = 0;
	one_line(body, len, text, sizeof text);
	int transient = code ? transient_code(code) : status >= 500;
	const char *hint = "";
	if (code == 209 || code == 210 || code == 279)
		hint = " [a server of the cluster, a shard, is down or unreachable]";
	else if (code == 60 || code == 81)
		hint = " [create the schema with --clickhouse-create]";
	e->transient = transient;
	e->code = code ? code : -1;
	char line[256 + sizeof text + 160];
	size_t n = (size_t)snprintf(line, sizeof line, "ClickHouse at %.255s: %s (HTTP %ld)%s",
	                            server, *text ? text : "no error text", status, hint);
	n = n < sizeof e->text ? n : sizeof e->text - 1;
	memcpy(e->text, line, n);
	e->text[n] = '\0';
}

static int curl_transient(CURLcode c)
{
	switch (c) {
	case CURLE_URL_MALFORMAT:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_OUT_OF_MEMORY:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_LOGIN_DENIED:
	case CURLE_WRITE_ERROR: /* our reply limit */
		return 0;
	default:
		return 1;
	}
}

/* The URL of one request: the given one (or without its database), and
 * the parameters. */
static char *request_url(struct orbit_rp_ch_http *h, const char *sql, int nodb)
{
	CURLU *u = curl_url_dup(nodb ? h->url_nodb : h->url);
	char *out = NULL;
	if (u == NULL)
		return NULL;
	int ok = 1;
	if (sql != NULL) {
		size_t n = strlen(sql);
		char *param = malloc(n + 7);
		if (param != NULL) {
			memcpy(param, "query=", 6);
			memcpy(param + 6, sql, n + 1);
			ok = curl_url_set(u, CURLUPART_QUERY, param,
			                  CURLU_APPENDQUERY | CURLU_URLENCODE) == CURLUE_OK;
			free(param);
		} else {
			ok = 0;
		}
		ok = ok && curl_url_set(u, CURLUPART_QUERY, "insert_distributed_sync=1",
		                        CURLU_APPENDQUERY) == CURLUE_OK;
	} else {
		ok = curl_url_set(u, CURLUPART_QUERY, "wait_end_of_query=1", CURLU_APPENDQUERY) ==
		     CURLUE_OK;
	}
	if (!ok || curl_url_get(u, CURLUPART_URL, &out, 0) != CURLUE_OK)
		out = NULL;
	curl_url_cleanup(u);
	return out;
}

/* The body of an INSERT: the pieces, read by libcurl in turn. */
struct body {
	const struct iovec *iov;
	int n, i;
	size_t off; /* into iov[i] */
};

static size_t on_read(char *p, size_t size, size_t n, void *ctx)
{
	struct body *b = ctx;
	size_t room = size * n, done = 0;
	while (done < room && b->i < b->n) {
		const struct iovec *v = &b->iov[b->i];
		size_t k = v->iov_len - b->off;
		k = k < room - done ? k : room - done;
		memcpy(p + done, (const char *)v->iov_base + b->off, k);
		done += k;
		b->off += k;
		if (b->off == v->iov_len) {
			b->i++;
			b->off = 0;
		}
	}
	return done;
}

int orbit__rp_ch_http_run(struct orbit_rp_ch_http *h, const char *sql, const struct iovec *data,
                          int ndata, int nodb, struct orbit_rp_ch_reply *reply,
                          struct orbit_rp_ch_error *e)
{
	struct orbit_rp_ch_reply own = {0};
	struct orbit_rp_ch_reply *r = reply ? reply : &own;
	r->len = 0;
	char *url = request_url(h, data ? sql : NULL, nodb);
	if (url == NULL) {
		say(e, 0, "out of memory");
		return -1;
	}
	CURL *c = h->curl;
	curl_easy_reset(c);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	struct body body = {data, ndata, 0, 0};
	if (data) {
		size_t len = 0;
		for (int i = 0; i < ndata; i++)
			len += data[i].iov_len;
		curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
		curl_easy_setopt(c, CURLOPT_READDATA, &body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
		curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, UPLOAD_BUFFER);
	} else {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, sql);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(sql));
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, r);
	curl_easy_setopt(c, CURLOPT_ERRORBUFFER, h->errbuf);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, CONNECT_TIMEOUT_MS);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, h->timeout_ms);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "orbit-replay/" ORBIT_VERSION);
	h->errbuf[0] = '\0';
	CURLcode rc = curl_easy_perform(c);
	curl_free(url);
	long status = 0;
	int ret = 0;
	if (rc != CURLE_OK) {
		say(e, curl_transient(rc), "cannot reach ClickHouse at %s: %s", h->server,
		    h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc));
		ret = -1;
	} else if (curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status), status != 200) {
		orbit__rp_ch_error_of(h->server, status, r->data ? r->data : "", r->len, e);
		ret = -1;
	}
	orbit__rp_ch_reply_free(&own);
	return ret;
}
