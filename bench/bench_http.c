/*
 * bench_http.c — orbit-bench-http: what sending a batch over HTTP costs the
 * loader (orbit-replay --clickhouse), with its own libcurl client
 * (replay_export_clickhouse_http.c), beside the floor any HTTP library
 * could reach: the same request written with write(2) on a plain socket.
 * Prints a table; never passes or fails.
 *
 *   orbit-bench-http [--mib N] [--batches N] [--runs N]
 *
 * A sink thread on loopback reads each request (headers, then
 * Content-Length bytes) and answers 200 with an empty body, as ClickHouse
 * answers an INSERT. The client sends --batches bodies of --mib MiB (default
 * 16 batches of 8 MiB, the size of 262144 scope rows) and reports, per MiB,
 * its own thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and the wall time;
 * medians of --runs runs (default 9), both clients measured in each run.
 * docs/performance.md ("ClickHouse") sets these beside the cost of making
 * the rows and of ClickHouse taking them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "replay_export_clickhouse.h"

static int listen_fd;
static uint16_t port;

static double now(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the sink ---- */

static char sink_buf[1 << 20];

/* Serves one connection: request after request until it closes. */
static void serve(int fd)
{
	size_t have = 0;
	for (;;) {
		char *end;
		while ((end = memmem(sink_buf, have, "\r\n\r\n", 4)) == NULL) {
			ssize_t n = read(fd, sink_buf + have, sizeof sink_buf - have);
			if (n <= 0)
				return;
			have += (size_t)n;
		}
		size_t head = (size_t)(end - sink_buf) + 4;
		unsigned long long body = 0;
		char *cl = memmem(sink_buf, head, "Content-Length:", 15);
		if (cl == NULL)
			cl = memmem(sink_buf, head, "content-length:", 15);
		if (cl)
			body = strtoull(cl + 15, NULL, 10);
		size_t in_buf = have - head < body ? have - head : (size_t)body;
		unsigned long long left = body - in_buf;
		size_t rest = have - head - in_buf; /* the next request's bytes */
		memmove(sink_buf, sink_buf + head + in_buf, rest);
		have = rest;
		while (left > 0) {
			static char drain[1 << 20];
			ssize_t n = read(fd, drain, left < sizeof drain ? left : sizeof drain);
			if (n <= 0)
				return;
			left -= (unsigned long long)n;
		}
		static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
		if (write(fd, ok, sizeof ok - 1) != (ssize_t)sizeof ok - 1)
			return;
	}
}

static void *sink(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listen_fd, NULL, NULL);
		if (fd < 0)
			return NULL;
		serve(fd);
		close(fd);
	}
}

/* ---- the clients ---- */

/* The loader's own client (replay_export_clickhouse_http.c), a block cut
 * into 19 pieces as a batch of scope rows is (one per column). */
static int with_loader(const char *body, size_t len, int batches)
{
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%u/?database=orbit", port);
	struct orbit_rp_ch_error e = {0};
	struct orbit_rp_ch_http *h = orbit__rp_ch_http_new(url, ORBIT_RP_CH_TIMEOUT_S, &e);
	char *sql = orbit__rp_ch_insert_sql(ORBIT_RP_CH_SCOPES);
	if (h == NULL || sql == NULL)
		return -1;
	enum { PIECES = 19 };
	struct iovec iov[PIECES];
	for (int i = 0; i < PIECES; i++) {
		size_t from = len * (size_t)i / PIECES, to = len * (size_t)(i + 1) / PIECES;
		iov[i] = (struct iovec){(void *)(body + from), to - from};
	}
	for (int i = 0; i < batches; i++)
		if (orbit__rp_ch_http_run(h, sql, iov, PIECES, 0, NULL, &e) != 0) {
			fprintf(stderr, "orbit-bench-http: %s\n", e.text);
			return -1;
		}
	free(sql);
	orbit__rp_ch_http_free(h);
	return 0;
}

static int with_write(const char *body, size_t len, int batches)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		perror("connect");
		return -1;
	}
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	char head[256], reply[256];
	int n = snprintf(head, sizeof head,
	                 "POST /?database=orbit&query=INSERT%%20INTO%%20scopes HTTP/1.1\r\n"
	                 "Host: 127.0.0.1\r\nContent-Length: %zu\r\n\r\n",
	                 len);
	for (int i = 0; i < batches; i++) {
		if (write(fd, head, (size_t)n) != n)
			return -1;
		for (size_t off = 0; off < len;) {
			ssize_t w = write(fd, body + off, len - off);
			if (w <= 0)
				return -1;
			off += (size_t)w;
		}
		size_t got = 0;
		while (memmem(reply, got, "\r\n\r\n", 4) == NULL) {
			ssize_t r = read(fd, reply + got, sizeof reply - got);
			if (r <= 0)
				return -1;
			got += (size_t)r;
		}
	}
	close(fd);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int mib = 8, batches = 16, runs = 9;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
			mib = atoi(argv[++i]);
		else if (strcmp(argv[i], "--batches") == 0 && i + 1 < argc)
			batches = atoi(argv[++i]);
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else {
			fprintf(stderr,
			        "usage: orbit-bench-http [--mib N] [--batches N] [--runs N]\n");
			return 1;
		}
	}
	if (mib < 1 || batches < 1 || runs < 1 || runs > 99)
		return 1;
	listen_fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	socklen_t al = sizeof a;
	if (bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 8) != 0 ||
	    getsockname(listen_fd, (struct sockaddr *)&a, &al) != 0) {
		perror("orbit-bench-http: listen");
		return 1;
	}
	port = ntohs(a.sin_port);
	pthread_t t;
	pthread_create(&t, NULL, sink, NULL);
	size_t len = (size_t)mib << 20;
	char *body = malloc(len);
	for (size_t i = 0; i < len; i++)
		body[i] = (char)(i * 2654435761u >> 13);
	double cpu[2][100], wall[2][100];
	for (int r = 0; r < runs; r++)
		for (int k = 0; k < 2; k++) {
			double c0 = now(CLOCK_THREAD_CPUTIME_ID), w0 = now(CLOCK_MONOTONIC);
			if ((k ? with_write : with_loader)(body, len, batches) != 0)
				return 1;
			cpu[k][r] = now(CLOCK_THREAD_CPUTIME_ID) - c0;
			wall[k][r] = now(CLOCK_MONOTONIC) - w0;
		}
	double total = (double)mib * batches;
	printf("%d batches of %d MiB to a loopback sink, medians of %d runs\n\n", batches, mib,
	       runs);
	printf("%-24s %14s %14s %12s\n", "client", "cpu ms/MiB", "wall ms/MiB", "MiB/s");
	const char *names[] = {"the loader's (libcurl)", "write(2), the floor"};
	for (int k = 0; k < 2; k++) {
		qsort(cpu[k], (size_t)runs, sizeof(double), cmp);
		qsort(wall[k], (size_t)runs, sizeof(double), cmp);
		double c = cpu[k][runs / 2], w = wall[k][runs / 2];
		printf("%-24s %14.3f %14.3f %12.0f\n", names[k], c * 1e3 / total, w * 1e3 / total,
		       total / w);
	}
	free(body);
	return 0;
}
