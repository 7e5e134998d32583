/*
 * collector.h — orbit-collector: one libuv loop, one listening socket, one
 * capture file per agent connection.
 *
 * How a connection is served:
 *
 *  1. Bytes read go into the connection's input buffer (grown in
 *     ORBIT_COLLECTOR_READ_CHUNK steps up to ORBIT_FRAME_MAX_COMPRESSED plus
 *     one read; freed once empty and idle for a second, so idle peers hold
 *     no buffer).
 *  2. After each read, every whole frame at the front of the buffer is
 *     found with orbit__frame_size and checked: decompressed with its
 *     checksum verified, every packet decoded and passed through
 *     orbit__packet_validate. The stream's first frame must be exactly one
 *     Handshake of ORBIT_PROTOCOL_VERSION with the right token; only then is
 *     the capture file created (O_EXCL, never overwriting).
 *  3. The checked frames are written, as received, to the file by one
 *     uv_fs_write on the thread pool. While it runs the connection is not
 *     read (uv_read_stop), so a fast agent is held back by TCP flow control
 *     rather than by buffering. A short write is continued; a failed one is
 *     cut back (ftruncate) to the last complete frame.
 *  4. A bad frame closes the connection with one log line naming the peer,
 *     the reason and the stream offset, after the good frames before it are
 *     on disk. The file therefore only ever holds complete, checked frames.
 *
 * The loop is single-threaded: one orbit_frame_scratch serves every
 * connection. Timeouts are checked by one periodic timer.
 */
#ifndef ORBIT_COLLECTOR_H
#define ORBIT_COLLECTOR_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "frame.h"

#define ORBIT_COLLECTOR_READ_CHUNK (64u << 10)
#define ORBIT_COLLECTOR_BUF_MAX (ORBIT_FRAME_MAX_COMPRESSED + ORBIT_COLLECTOR_READ_CHUNK)
#define ORBIT_COLLECTOR_TOKEN_MAX 4096u
#define ORBIT_COLLECTOR_NAME_MAX 64u     /* bytes of a process name in a file name */
#define ORBIT_COLLECTOR_PAGE_RINGS 4096u /* page rings whose loss is tracked */

struct orbit_collector_options {
	const char *listen; /* HOST:PORT */
	const char *dir;
	const char *token_file;
	unsigned max_connections;
	uint64_t handshake_timeout_ms; /* 0: none */
	uint64_t frame_timeout_ms;
	uint64_t idle_timeout_ms;
	int quiet;
};

/* Parses argv into *o. Returns 0, 1 when --help or --version was answered
 * (exit 0), or -1 after printing one line naming the bad argument. */
int orbit__collector_parse_args(int argc, char **argv, struct orbit_collector_options *o);
/* Splits HOST:PORT / [V6]:PORT; 0 or -EINVAL (with *why). */
int orbit__collector_split_listen(const char *s, char *host, size_t hostlen, char *port,
                                  size_t portlen, const char **why);

/* One capture file. */
struct orbit_capture_file {
	int fd;         /* -1 when none is open */
	char name[160]; /* inside the directory */
	uint64_t size;  /* bytes of complete frames written */
	uint64_t frames;
};

/* Makes a process name from a peer safe as part of a file name. */
void orbit__capfile_sanitize(const char *in, char *out, size_t outlen);
/* Creates DIR/<name>-<pid>-<UTC time>[-N].orbit.zst with O_EXCL; 0 or -errno. */
int orbit__capfile_create(int dirfd, const char *process_name, uint32_t pid, int64_t when,
                          struct orbit_capture_file *f);

struct orbit_collector;

struct orbit_conn {
	uv_tcp_t tcp; /* tcp.data points back here */
	uv_fs_t req;  /* the one file request in flight (write or fsync) */
	struct orbit_collector *c;
	struct orbit_conn *prev, *next;
	char peer[64]; /* "1.2.3.4:5" or "[::1]:5" */

	uint8_t *buf; /* bytes received, not yet written: [0, len) */
	size_t len, cap;
	uint64_t stream_off; /* stream offset of buf[0] */

	size_t wlen, wdone; /* the write in flight: buf[0, wlen), wdone written */
	uint32_t wframes;
	int writing;
	int handshaken; /* the handshake frame was accepted: file open */
	int closing;    /* conn_close ran: no more reads */
	int tcp_closed, finishing, finished;
	int failed;   /* a bad frame was seen: close once the write is done */
	int error;    /* the closing line is an error, not info */
	int ended;    /* an EndOfStream packet arrived */
	int refusing; /* told the agent why; draining its bytes until it hangs up */
	uint64_t refused_ms;
	char reason[224]; /* why the connection is closed */
	char file_error[224];

	uint64_t accepted_ms, last_byte_ms, partial_since_ms;
	uint32_t pid;
	struct orbit_capture_file file;
	uint64_t *ring_loss; /* ORBIT_MAX_RINGS latest Loss sums, lazily */
	uint64_t *page_loss; /* ORBIT_COLLECTOR_PAGE_RINGS latest PageLoss */
	uint64_t lost;       /* sum of both */
};

/* The program's one state. */
struct orbit_collector {
	uv_loop_t loop;
	uv_tcp_t server;
	uv_signal_t sigint, sigterm;
	uv_timer_t tick;
	struct orbit_collector_options opt;
	char dir[4096]; /* for messages, without trailing '/' */
	int dirfd;
	uint8_t token[ORBIT_COLLECTOR_TOKEN_MAX];
	size_t token_len; /* 0: no token asked */
	struct orbit_frame_scratch scratch;

	struct orbit_conn *conns;
	unsigned nconns;
	int listening, stopping, tty, status_shown;

	uint64_t bytes, frames; /* written to files, all connections */
	uint64_t lost_closed;   /* loss reported by closed connections */
	uint64_t status_ms, status_bytes;
};

/* Log lines on stderr: info (silenced by --quiet) and errors. */
void orbit__log(struct orbit_collector *c, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A connection was accepted into k (linked, reading not started). */
void orbit__conn_start(struct orbit_conn *k);
/* Closes k: after the write in flight, fsync and close its file. reason is
 * NULL for an orderly end. */
void orbit__conn_close(struct orbit_conn *k, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Timeouts; called by the periodic timer. */
void orbit__conn_tick(struct orbit_conn *k, uint64_t now);
/* The collector is stopping: finish what is whole, then close. */
void orbit__conn_stop(struct orbit_conn *k);
/* Called once a connection is gone (unlinked and freed by the caller). */
void orbit__collector_conn_gone(struct orbit_collector *c, struct orbit_conn *k);

#endif
