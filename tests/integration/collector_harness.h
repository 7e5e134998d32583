/*
 * collector_harness.h — what the orbit-collector tests share: a collector
 * started on port 0 in a fresh directory (its stderr in a log file), clients
 * that stream frames made with the format's stream writer
 * (format/stream_writer.h), and checks on the capture files they leave.
 */
#ifndef ORBIT_TEST_COLLECTOR_HARNESS_H
#define ORBIT_TEST_COLLECTOR_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "frame.h"
#include "stream_writer.h"

#if defined(__SANITIZE_ADDRESS__)
#define HARNESS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HARNESS_ASAN 1
#endif
#endif
#ifndef HARNESS_ASAN
#define HARNESS_ASAN 0
#endif

/* Wait bound for anything the collector should do promptly. */
#define HARNESS_WAIT_MS (HARNESS_ASAN ? 30000 : 10000)

struct coll {
	pid_t pid;
	int port;
	char listen[256]; /* the address it printed */
	char root[128];   /* temporary directory of this test */
	char dir[192];    /* captures */
	char log[192];    /* the collector's stderr */
	long fsize_limit; /* > 0: RLIMIT_FSIZE of the collector */
	int stderr_fd;    /* >= 0: the collector's stderr (instead of the log) */
};

/* A client's stream and the record of what it sent. */
struct stream {
	int fd;
	int acks; /* stream_handshake asks for acknowledgements */
	char name[96];
	uint32_t pid;
	int local_port;
	struct orbit__sw *w; /* frames end only at stream_flush */
	uint8_t *bytes;      /* the good frames sent, back to back */
	size_t len, cap;
	size_t *frame_end;     /* end offset of each good frame in bytes */
	size_t *frame_packets; /* packets sent up to and including that frame */
	size_t frames;
	uint8_t **packet; /* each packet packed, in order */
	size_t *packet_len;
	size_t packets, pending; /* pending: in the frame being built */
};

void harness_root(struct coll *h);
/* Starts orbit-collector with --listen listen (NULL: 127.0.0.1:0) and --dir,
 * plus args (NULL-terminated); returns when it printed its address. */
void coll_start(struct coll *h, const char *exe, const char *listen, const char *const *args);
/* Signals it and waits; returns the exit status (or -1: killed by a signal). */
int coll_stop(struct coll *h, int sig);
/* Waits for it to exit after signal sig was sent; the same status. */
int coll_wait(struct coll *h, int sig);
int coll_alive(const struct coll *h);
/* VmRSS / VmHWM in KiB. */
long coll_rss_kib(const struct coll *h, const char *field);
void coll_check_rss(const struct coll *h, const char *when);
/* Waits until the log holds needle; returns 1, or 0 after timeout_ms. */
int coll_wait_log(const struct coll *h, const char *needle, int timeout_ms);
void coll_expect_log(const struct coll *h, const char *needle);
int coll_log_count(const struct coll *h, const char *needle);
void coll_dump_log(const struct coll *h);
void coll_cleanup(struct coll *h);

/* A connected TCP socket to the collector (blocking). */
int client_connect(const struct coll *h);
/* The same from a local address (NULL: any); -1 if it cannot be bound. */
int client_connect_from(const struct coll *h, const char *local);
/* 1 if 127.0.0.2 can be bound (Linux loopback), for a second peer address. */
int harness_second_address(void);
/* Raises RLIMIT_NOFILE for want descriptors; the number available. */
int harness_files(int want);
int client_local_port(int fd);
int send_all(int fd, const void *p, size_t n);
/* Waits for the collector to close fd: 2 closed after its one refusal line,
 * 1 closed with nothing said, 0 timed out. */
int wait_closed(int fd, int timeout_ms);

void stream_open(struct stream *s, const struct coll *h, const char *name, uint32_t pid);
void stream_init(struct stream *s, const char *name, uint32_t pid); /* not connected */
void stream_add(struct stream *s, const Orbit__Packet *p);
/* Finishes the frame; sends it when connected; records it as good. */
void stream_flush(struct stream *s);
void stream_handshake(struct stream *s, uint32_t version, const char *token);
void stream_add_batch(struct stream *s, uint32_t ring, uint64_t first, uint32_t n);
void stream_add_thread(struct stream *s, uint32_t tid, const char *name);
void stream_add_loss(struct stream *s, uint32_t ring, uint64_t lapped);
void stream_add_end(struct stream *s);
void stream_add_page(struct stream *s, size_t len, int random);
/* A handshake and frames mixing every packet kind. */
void stream_good_frames(struct stream *s, int frames);
/* Closes the socket, waits for the collector's "disconnected" line. */
void stream_close_wait(struct stream *s, const struct coll *h);
void stream_free(struct stream *s);

/* The one capture file of name-pid in h->dir ("" when none). */
int capture_find(const struct coll *h, const char *name, uint32_t pid, char *path, size_t n);
int capture_count(const struct coll *h);
/* The file holds exactly the first frames good frames of s: bytes, zstd -t,
 * packets read back with orbit__capture_next. */
void capture_verify(const char *path, const struct stream *s, size_t frames);
void capture_verify_stream(const struct coll *h, const struct stream *s);
/* zstd -t on path: 0 pass, 1 fail, 77 zstd not installed. */
int zstd_test(const char *path);

/* Acknowledgements read back from the collector (docs/format.md 7). */
struct ack_reader {
	uint8_t buf[4096];
	size_t len;
	struct orbit_frame_scratch scratch;
	uint64_t frames, bytes, synced; /* the last Ack */
	uint32_t end;
	unsigned count; /* Acks read */
	int closed;     /* the collector closed the connection */
};
/* Reads the next Ack from fd within timeout_ms: 1 read (a's fields are its
 * values, checked against the previous: never less, always more, unless
 * it is the last), 0 timed out, -1 the connection ended. Any byte that is
 * not a whole Ack frame fails the test. */
int ack_next(int fd, struct ack_reader *a, int timeout_ms);
/* Reads Acks until one says at least frames frames (or ends); 1 or 0. */
int ack_wait_frames(int fd, struct ack_reader *a, uint64_t frames, int timeout_ms);
/* Reads Acks until the last one (end != 0); returns 1, 0 on timeout. */
int ack_wait_last(int fd, struct ack_reader *a, int timeout_ms);
void ack_reader_free(struct ack_reader *a);

/* tests/tools/tcp_proxy in front of a collector. */
struct proxy {
	pid_t pid;
	struct coll via; /* connect here to go through it */
};
void proxy_start(struct proxy *p, const char *exe, const struct coll *h, const char *const *args);
void proxy_stop(struct proxy *p);

uint64_t harness_now_ms(void);
void harness_random(uint8_t *p, size_t n, uint64_t *seed);

#endif
