/*
 * fake_peer.c — a test tool: a listener on loopback that is not an Orbit
 * collector, for the agent's tests of what it says about one.
 *
 *   fake_peer --close    accepts and closes each connection at once
 *   fake_peer --http     reads what comes for a moment, answers
 *                        "HTTP/1.0 400 Bad Request" and closes, as a web
 *                        server does with bytes that are not a request
 *   fake_peer --silent   accepts and never reads, writes nor closes
 *   fake_peer --repeat   reads the agent's Handshake frame, acknowledges it
 *                        (frames 1, its bytes), then sends that same Ack
 *                        again as fast as the connection takes it: a peer
 *                        breaking docs/format.md 7.2's "never the same twice"
 *   fake_peer --older    reads the agent's Handshake frame and refuses it as
 *                        the previous release's collector refused a protocol
 *                        it did not speak, byte for byte ("orbit-collector:
 *                        rejected: protocol version 3, this collector speaks
 *                        2"), shuts its side, drains what comes, closes
 *
 * The first stdout line is "listening on 127.0.0.1:PORT", flushed. On
 * SIGTERM it prints "connections N" (accepted so far) on stdout and exits 0.
 * One thread, poll(2).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zstd.h>

#include "frame.h"
#include "reply.h"

#define MAX_CONNS 1024

/* --repeat: what a connection has read, and the Ack it repeats. */
struct repeater {
	uint8_t in[1 << 16];
	size_t in_len;
	uint8_t ack[ORBIT_ACK_FRAME_MAX];
	size_t ack_len; /* 0 until the Handshake frame is in */
	size_t off;     /* of the Ack being sent, already sent */
};

static struct repeater rep[MAX_CONNS];

/* Reads what came; once the first frame is whole, makes the Ack. */
static void repeat_read(int fd, struct repeater *r)
{
	ssize_t n;
	while (r->in_len < sizeof r->in &&
	       (n = recv(fd, r->in + r->in_len, sizeof r->in - r->in_len, MSG_DONTWAIT)) > 0)
		r->in_len += (size_t)n;
	if (r->in_len == sizeof r->in) /* the rest is not needed */
		r->in_len = 0;
	if (r->ack_len != 0)
		return;
	size_t first = ZSTD_findFrameCompressedSize(r->in, r->in_len);
	if (ZSTD_isError(first))
		return;
	struct orbit_frame_writer w;
	struct orbit_ack a = {.frames = 1, .bytes = first};
	if (orbit__frame_writer_init(&w, 1) == 0) {
		r->ack_len = orbit__reply_ack_encode(&w, &a, r->ack);
		orbit__frame_writer_free(&w);
	}
}

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int close_now = strcmp(mode, "--close") == 0, http = strcmp(mode, "--http") == 0;
	int repeat = strcmp(mode, "--repeat") == 0, older = strcmp(mode, "--older") == 0;
	if (!close_now && !http && !repeat && !older && strcmp(mode, "--silent") != 0) {
		fprintf(stderr,
		        "usage: fake_peer --close | --http | --silent | --repeat | --older\n");
		return 2;
	}
	struct sigaction sa = {.sa_handler = on_term};
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int lfd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	socklen_t len = sizeof a;
	if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 64) != 0 ||
	    getsockname(lfd, (struct sockaddr *)&a, &len) != 0) {
		perror("fake_peer");
		return 1;
	}
	printf("listening on 127.0.0.1:%u\n", ntohs(a.sin_port));
	fflush(stdout);
	int conns[MAX_CONNS], n = 0;
	long accepted = 0;
	while (!stop) {
		struct pollfd p[1 + MAX_CONNS];
		p[0] = (struct pollfd){lfd, POLLIN, 0};
		for (int i = 0; i < n; i++)
			p[1 + i] = (struct pollfd){conns[i],
			                           (short)(http || repeat || older ? POLLIN : 0) |
			                               (repeat && rep[i].ack_len ? POLLOUT : 0),
			                           0};
		if (poll(p, (nfds_t)(1 + n), 100) < 0)
			continue;
		if (p[0].revents & POLLIN) {
			int c = accept(lfd, NULL, NULL);
			if (c >= 0) {
				accepted++;
				if (close_now)
					close(c);
				else if (n < MAX_CONNS) {
					memset(&rep[n], 0, sizeof rep[n]);
					conns[n++] = c;
				} else
					close(c);
			}
			/* The new connection has no entry in p yet: every event is
			 * polled again next time round (poll is level-triggered). */
			continue;
		}
		for (int i = 0; repeat && i < n; i++) {
			if (p[1 + i].revents & (POLLHUP | POLLERR)) {
				close(conns[i]);
				rep[i] = rep[n - 1];
				conns[i--] = conns[--n];
				continue;
			}
			if (p[1 + i].revents & POLLIN)
				repeat_read(conns[i], &rep[i]);
			/* The same Ack, whole, as long as the socket takes it. */
			struct repeater *r = &rep[i];
			ssize_t k;
			while (r->ack_len != 0 && (k = send(conns[i], r->ack + r->off,
			                                    r->ack_len - r->off, MSG_DONTWAIT)) > 0)
				r->off = (r->off + (size_t)k) % r->ack_len;
		}
		for (int i = 0; older && i < n; i++) {
			struct repeater *r = &rep[i];
			if (!(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			ssize_t k = 1;
			if (r->ack_len == 0) { /* the Handshake frame, then the line */
				repeat_read(conns[i], r);
				if (r->ack_len != 0) {
					static const char line[] =
					    "orbit-collector: rejected: protocol "
					    "version 3, this collector speaks 2\n";
					(void)write(conns[i], line, sizeof line - 1);
					shutdown(conns[i], SHUT_WR);
				}
			} else {
				while ((k = recv(conns[i], buf, sizeof buf, MSG_DONTWAIT)) > 0)
					;
			}
			if (k == 0 || (p[1 + i].revents & (POLLHUP | POLLERR))) {
				close(conns[i]);
				rep[i] = rep[n - 1];
				conns[i--] = conns[--n];
			}
		}
		for (int i = 0; http && i < n; i++) {
			if (!(p[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			char buf[4096];
			while (recv(conns[i], buf, sizeof buf, MSG_DONTWAIT) > 0)
				;
			static const char reply[] = "HTTP/1.0 400 Bad Request\r\n"
			                            "Content-Type: text/html\r\n"
			                            "Connection: close\r\n\r\n"
			                            "<html><body>Bad request</body></html>\r\n";
			(void)write(conns[i], reply, sizeof reply - 1);
			shutdown(conns[i], SHUT_WR);
			close(conns[i]);
			conns[i--] = conns[--n];
		}
	}
	printf("connections %ld\n", accepted);
	return 0;
}
