/*
 * tcp_proxy.c — a test tool: a TCP proxy on loopback that can be a bad link.
 *
 *   tcp_proxy --to HOST:PORT [--listen HOST:PORT] [--rate BYTES_PER_SECOND]
 *             [--drop-after BYTES] [--blackhole-after BYTES]
 *
 * Every connection accepted on --listen (default 127.0.0.1:0) is forwarded
 * to --to, both ways. The first stdout line is "listening on HOST:PORT",
 * flushed (port 0 picks a free one). Faults, applied to each connection:
 *
 *   --rate N             at most N bytes a second in each direction (a token
 *                        bucket holding at most 1/20 s of bytes); buffers
 *                        are small (16 KiB a direction), so the sender is
 *                        held back by TCP flow control.
 *   --drop-after N       after forwarding exactly N bytes client to server,
 *                        reset both connections (SO_LINGER 0): a dead link.
 *   --blackhole-after N  after forwarding exactly N bytes client to server,
 *                        read and forward nothing more in either direction
 *                        and keep both connections open: a peer that
 *                        accepts and never reads (N = 0: from the start).
 *
 * Half-closes are forwarded (shutdown of the write side). One line per
 * connection on stderr when it ends: bytes each way and how it ended. Runs
 * until killed. One thread, poll(2).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"

#define MAX_PAIRS 256
#define BUF 16384

struct dir {
	uint8_t buf[BUF];
	size_t len;
	int eof;       /* the source closed its side */
	int shut;      /* the destination's write side is shut */
	double tokens; /* bytes allowed now (--rate) */
	uint64_t done; /* bytes forwarded */
};

struct pair {
	int fd[2];       /* 0 client, 1 server; -1 when free */
	struct dir d[2]; /* d[0]: client to server, d[1]: server to client */
	int id, holed;
};

static struct {
	double rate;
	int64_t drop_after, hole_after; /* -1: never */
	struct pair p[MAX_PAIRS];
	int next_id;
} P;

static double now_s(void)
{
	return (double)test_now_ns(CLOCK_MONOTONIC) / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: tcp_proxy --to HOST:PORT [--listen HOST:PORT] [--rate N] "
	                "[--drop-after N] [--blackhole-after N]\n");
	exit(2);
}

static int resolve(const char *hostport, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[256];
	const char *colon = strrchr(hostport, ':');
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;

	if (colon == NULL || (size_t)(colon - hostport) >= sizeof host)
		return -1;
	const char *h = hostport;
	size_t hl = (size_t)(colon - hostport);
	if (h[0] == '[' && hl >= 2 && h[hl - 1] == ']') {
		h++;
		hl -= 2;
	}
	memcpy(host, h, hl);
	host[hl] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &res) != 0)
		return -1;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static void nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

static void pair_end(struct pair *p, const char *how)
{
	for (int i = 0; i < 2; i++) {
		if (p->fd[i] < 0)
			continue;
		if (strcmp(how, "dropped") == 0) {
			struct linger l = {1, 0}; /* close sends a reset */
			setsockopt(p->fd[i], SOL_SOCKET, SO_LINGER, &l, sizeof l);
		}
		close(p->fd[i]);
		p->fd[i] = -1;
	}
	fprintf(stderr,
	        "tcp_proxy: connection %d: %" PRIu64 " bytes up, %" PRIu64 " bytes down, %s\n",
	        p->id, p->d[0].done, p->d[1].done, how);
}

static void pair_open(int lfd, const struct sockaddr_storage *to, socklen_t tolen)
{
	int c = accept(lfd, NULL, NULL);
	if (c < 0)
		return;
	struct pair *p = NULL;
	for (int i = 0; i < MAX_PAIRS && p == NULL; i++)
		if (P.p[i].fd[0] < 0)
			p = &P.p[i];
	int s = socket(to->ss_family, SOCK_STREAM, 0);
	if (p == NULL || s < 0 || connect(s, (const struct sockaddr *)to, tolen) != 0) {
		fprintf(stderr, "tcp_proxy: cannot forward a connection: %s\n",
		        p == NULL ? "too many" : strerror(errno));
		close(c);
		if (s >= 0)
			close(s);
		return;
	}
	memset(p, 0, sizeof *p);
	p->fd[0] = c;
	p->fd[1] = s;
	p->id = P.next_id++;
	p->d[0].tokens = p->d[1].tokens = 0;
	int one = 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	nonblock(c);
	nonblock(s);
	if (P.hole_after == 0)
		p->holed = 1;
}

/* How many bytes direction i of p may forward now. */
static size_t allowance(struct pair *p, int i)
{
	size_t n = p->d[i].len;
	if (P.rate > 0 && (double)n > p->d[i].tokens)
		n = (size_t)p->d[i].tokens;
	if (i == 0) {
		int64_t limit = P.drop_after >= 0 ? P.drop_after : P.hole_after;
		if (limit >= 0 && (uint64_t)limit - p->d[0].done < n)
			n = (size_t)((uint64_t)limit - p->d[0].done);
	}
	return n;
}

/* Moves bytes of direction i: returns 0, or -1 when the pair ended. */
static int pump(struct pair *p, int i, short in, short out)
{
	struct dir *d = &p->d[i];
	int src = p->fd[i], dst = p->fd[1 - i];

	if ((in & (POLLIN | POLLHUP | POLLERR)) && !d->eof && d->len < BUF) {
		ssize_t r = read(src, d->buf + d->len, BUF - d->len);
		if (r == 0)
			d->eof = 1;
		else if (r < 0 && errno != EAGAIN && errno != EINTR) {
			pair_end(p, "reset");
			return -1;
		} else if (r > 0)
			d->len += (size_t)r;
	}
	(void)out;
	size_t n = allowance(p, i);
	if (n > 0) {
		ssize_t w = send(dst, d->buf, n, MSG_NOSIGNAL);
		if (w < 0 && errno != EAGAIN && errno != EINTR) {
			pair_end(p, "reset");
			return -1;
		}
		if (w > 0) {
			memmove(d->buf, d->buf + w, d->len - (size_t)w);
			d->len -= (size_t)w;
			d->done += (uint64_t)w;
			d->tokens -= (double)w;
		}
	}
	if (i == 0 && P.drop_after >= 0 && d->done == (uint64_t)P.drop_after) {
		pair_end(p, "dropped");
		return -1;
	}
	if (i == 0 && P.hole_after >= 0 && d->done == (uint64_t)P.hole_after)
		p->holed = 1;
	if (d->eof && d->len == 0 && !d->shut) {
		shutdown(dst, SHUT_WR);
		d->shut = 1;
	}
	if (p->d[0].shut && p->d[1].shut) {
		pair_end(p, "closed");
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *listen_at = "127.0.0.1:0", *to = NULL;
	P.drop_after = P.hole_after = -1;
	for (int i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (strcmp(argv[i], "--to") == 0)
			to = argv[++i];
		else if (strcmp(argv[i], "--listen") == 0)
			listen_at = argv[++i];
		else if (strcmp(argv[i], "--rate") == 0)
			P.rate = atof(argv[++i]);
		else if (strcmp(argv[i], "--drop-after") == 0)
			P.drop_after = atoll(argv[++i]);
		else if (strcmp(argv[i], "--blackhole-after") == 0)
			P.hole_after = atoll(argv[++i]);
		else
			usage();
	}
	if (to == NULL)
		usage();
	signal(SIGPIPE, SIG_IGN);
	struct sockaddr_storage la, ta;
	socklen_t llen, tlen;
	if (resolve(listen_at, &la, &llen) != 0 || resolve(to, &ta, &tlen) != 0) {
		fprintf(stderr, "tcp_proxy: cannot resolve %s or %s\n", listen_at, to);
		return 1;
	}
	int lfd = socket(la.ss_family, SOCK_STREAM, 0), one = 1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&la, llen) != 0 || listen(lfd, 64) != 0) {
		fprintf(stderr, "tcp_proxy: cannot listen on %s: %s\n", listen_at, strerror(errno));
		return 1;
	}
	char host[INET6_ADDRSTRLEN];
	llen = sizeof la;
	getsockname(lfd, (struct sockaddr *)&la, &llen);
	if (la.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&la;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
		printf("listening on [%s]:%u\n", host, ntohs(a->sin6_port));
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&la;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
		printf("listening on %s:%u\n", host, ntohs(a->sin_port));
	}
	fflush(stdout);
	for (int i = 0; i < MAX_PAIRS; i++)
		P.p[i].fd[0] = P.p[i].fd[1] = -1;

	double last = now_s();
	for (;;) {
		struct pollfd fds[1 + 2 * MAX_PAIRS];
		int map[1 + 2 * MAX_PAIRS], n = 0, waiting = 0;
		fds[n] = (struct pollfd){lfd, POLLIN, 0};
		map[n++] = -1;
		for (int i = 0; i < MAX_PAIRS; i++) {
			struct pair *p = &P.p[i];
			if (p->fd[0] < 0 || p->holed)
				continue;
			for (int s = 0; s < 2; s++) {
				/* side s reads into d[s] and writes d[1 - s] */
				short ev = 0;
				if (!p->d[s].eof && p->d[s].len < BUF)
					ev |= POLLIN;
				if (p->d[1 - s].len > 0) {
					if (allowance(p, 1 - s) > 0)
						ev |= POLLOUT;
					else
						waiting = 1; /* on the rate */
				}
				fds[n] = (struct pollfd){p->fd[s], ev, 0};
				map[n++] = i * 2 + s;
			}
		}
		poll(fds, (nfds_t)n, waiting ? 5 : 200);
		double t = now_s(), dt = t - last;
		last = t;
		if (fds[0].revents & POLLIN)
			pair_open(lfd, &ta, tlen);
		short rev[MAX_PAIRS][2] = {{0}};
		for (int j = 1; j < n; j++)
			rev[map[j] / 2][map[j] % 2] = fds[j].revents;
		for (int i = 0; i < MAX_PAIRS; i++) {
			struct pair *p = &P.p[i];
			if (p->fd[0] < 0 || p->holed)
				continue;
			for (int s = 0; s < 2; s++) {
				double cap = P.rate / 20 > 1024 ? P.rate / 20 : 1024;
				p->d[s].tokens += P.rate * dt;
				if (p->d[s].tokens > cap)
					p->d[s].tokens = cap;
			}
			if (pump(p, 0, rev[i][0], rev[i][1]) == 0)
				pump(p, 1, rev[i][1], rev[i][0]);
		}
	}
}
