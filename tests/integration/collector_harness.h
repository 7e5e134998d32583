/*
 * collector_harness.h — what the orbit-collector tests share: a collector
 * started on port 0 in a fresh directory (its stderr in a log file), clients
 * that stream frames made with orbit__frame_writer_*, and checks on the
 * capture files they leave.
 */
#ifndef ORBIT_TEST_COLLECTOR_HARNESS_H
#define ORBIT_TEST_COLLECTOR_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "capture.h"
#include "frame.h"

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
	char name[96];
	uint32_t pid;
	int local_port;
	struct orbit_frame_writer w;
	uint8_t *bytes; /* the good frames sent, back to back */
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

uint64_t harness_now_ms(void);
void harness_random(uint8_t *p, size_t n, uint64_t *seed);

#endif
