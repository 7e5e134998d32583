/*
 * collector.h — orbit-collector: one libuv loop, one listening socket, one
 * capture file per agent connection.
 *
 * How a connection is served:
 *
 *  1. A new connection joins the pending pool (--max-pending). While it has
 *     no accepted handshake its input buffer never exceeds
 *     ORBIT_HANDSHAKE_FRAME_MAX, and the first frame must be a Handshake of
 *     at most that size, compressed and decompressed, within
 *     --handshake-timeout-ms. When the pool is full, a newcomer takes the
 *     place of the oldest pending connection of the peer address holding the
 *     most pending connections (pool.c): strangers evict one another, not
 *     agents connecting from elsewhere.
 *  2. Bytes read go into the connection's input buffer (grown in
 *     ORBIT_COLLECTOR_READ_CHUNK steps up to ORBIT_FRAME_MAX_COMPRESSED plus
 *     one read once the handshake is accepted; freed once empty and idle for
 *     a second, so idle peers hold no buffer).
 *  3. After each read, every whole frame at the front of the buffer is
 *     found with orbit__frame_size and checked: decompressed with its
 *     checksum verified, every packet decoded and passed through
 *     orbit__packet_validate. The stream's first frame must be exactly one
 *     Handshake of a version it speaks (ORBIT_PROTOCOL_VERSION_MIN to
 *     ORBIT_PROTOCOL_VERSION_MAX) with the right token; only then,
 *     and if a stream slot (--max-connections) and room in the directory
 *     (--max-dir-size) are free, is the capture file created (O_EXCL, never
 *     overwriting).
 *  4. The checked frames are written, as received, to the file by one
 *     uv_fs_write on the thread pool. While it runs the connection is not
 *     read (uv_read_stop), so a fast agent is held back by TCP flow control
 *     rather than by buffering. A short write is continued; a failed one is
 *     cut back (ftruncate) to the last complete frame. A frame that would
 *     take the file past --max-capture-size or the directory past
 *     --max-dir-size is not written: the collector appends its own Ack
 *     frame saying so and ends the stream (caps.c).
 *  5. A bad frame closes the connection with one log line naming the peer,
 *     the reason and the stream offset, after the good frames before it are
 *     on disk. The file therefore only ever holds complete, checked frames.
 *  6. An agent whose Handshake asked for acknowledgements gets Ack frames
 *     back (ack.c, docs/format.md section 7): how many of its frames are in
 *     the file and how many of those are fdatasync'ed, at a low rate, and a
 *     last one, saying why, when the stream ends.
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
#include "loss.h"
#include "wire_limits.h"

#define ORBIT_COLLECTOR_READ_CHUNK (64u << 10)
#define ORBIT_COLLECTOR_BUF_MAX (ORBIT_FRAME_MAX_COMPRESSED + ORBIT_COLLECTOR_READ_CHUNK)
#define ORBIT_COLLECTOR_TOKEN_MAX 4096u
#define ORBIT_COLLECTOR_NAME_MAX 64u             /* bytes of a process name in a file name */
#define ORBIT_COLLECTOR_CAPTURE_MIN (128u << 10) /* smallest --max-capture-size */

/* Acknowledgements: at most one Ack per ACK_INTERVAL_MS unless ACK_BYTES
 * more were written; files are fdatasync'ed at most every SYNC_INTERVAL_MS
 * (and at once after an EndOfStream). The timer ticks at least every
 * ORBIT_COLLECTOR_TICK_MAX_MS, so an Ack follows a write within a second. */
#define ORBIT_COLLECTOR_ACK_INTERVAL_MS 250u
#define ORBIT_COLLECTOR_ACK_BYTES (4u << 20)
#define ORBIT_COLLECTOR_SYNC_INTERVAL_MS 1000u
#define ORBIT_COLLECTOR_TICK_MAX_MS 250u
#define ORBIT_COLLECTOR_LINGER_MS 2000u /* after a refusal or the last Ack */
/* A full stream pool gives a waiting Handshake the place of a stream that
 * delivered nothing (no record, log page or kernel page) since its
 * Handshake this long ago, or none for the second bound (pool.c). */
#define ORBIT_COLLECTOR_NEVER_MS 2000u
#define ORBIT_COLLECTOR_QUIET_MS 60000u
/* Connections that end without a handshake: the first this many in a
 * window of the second bound get a line each, the rest one line in all
 * (strangers.c). */
#define ORBIT_COLLECTOR_STRANGER_LINES 100u
#define ORBIT_COLLECTOR_STRANGER_WINDOW_MS 10000u
/* Connections taken per turn of the loop before it reads the others. */
#define ORBIT_COLLECTOR_ACCEPT_TURN 256u

struct orbit_collector_options {
	const char *listen; /* HOST:PORT */
	const char *dir;
	const char *token_file;
	unsigned max_connections;      /* streams (accepted handshakes) */
	unsigned max_pending;          /* connections without an accepted handshake */
	uint64_t max_capture_size;     /* bytes; 0: none */
	uint64_t max_dir_size;         /* bytes; 0: none */
	int dir_size_auto;             /* max_dir_size from the free space at start */
	uint64_t handshake_timeout_ms; /* 0: none */
	uint64_t frame_timeout_ms;
	uint64_t idle_timeout_ms;
	int quiet;
	const char *ui;         /* --ui HOST:PORT; NULL: off */
	int ui_default;         /* ui is the default: a port taken is said, not fatal */
	uint64_t ui_history_ns; /* --ui-history */
	int ingest;             /* --ingest: take the spool files named into dir, then exit */
	char **files;           /* ... those (argv's own) */
	int nfiles;
};

/* Parses argv into *o. Returns 0, 1 when --help or --version was answered
 * (exit 0), or -1 after printing one line naming the bad argument. */
int orbit__collector_parse_args(int argc, char **argv, struct orbit_collector_options *o);
/* Splits HOST:PORT / [V6]:PORT; 0 or -EINVAL (with *why). */
int orbit__collector_split_listen(const char *s, char *host, size_t hostlen, char *port,
                                  size_t portlen, const char **why);

/* Decompresses frame into s and applies the rules every frame of a stream
 * meets before a collector writes it (docs/format.md 3.1, 3.2, 4.9): the
 * first frame (first) exactly one valid Handshake of a protocol from
 * ORBIT_PROTOCOL_VERSION_MIN to _MAX, later ones no Handshake, every
 * packet within the format's limits, no Ack. each, if not NULL, sees every
 * packet that passed, in order; what it returns (nonzero: an error, with
 * why) ends the check. 0, or a negative error and why. */
int orbit__frame_rules(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len, int first,
                       int (*each)(void *ctx, const Orbit__Packet *p, char *why, size_t n),
                       void *ctx, char *why, size_t n);

/* Whether the n bytes got are the secret (frame_rules.c), in a time that
 * depends on the secret's length only. */
int orbit__secret_equal(const void *got, size_t n, const void *secret, size_t len);

/* orbit-collector --ingest (ingest.c): the spool files taken into dir; 0
 * when every one was, 1 otherwise (each failure said in one line). */
int orbit__ingest(const char *dir, char **files, int nfiles);

/* One capture file. */
struct orbit_capture_file {
	int fd;         /* -1 when none is open */
	char name[160]; /* inside the directory */
	uint64_t size;  /* bytes of complete frames written */
	uint64_t frames;
};

/* Creates DIR/<name>-<pid>-<UTC time>[-N].orbit.zst with O_EXCL; 0 or -errno. */
int orbit__capfile_create(int dirfd, const char *process_name, uint32_t pid, int64_t when,
                          struct orbit_capture_file *f);

struct orbit_collector;
struct orbit_conn;
struct orbit_live;

/* The pending pool's index by peer address (pool.c). Links between
 * entries are entry numbers + 1 (0: none). */
#define ORBIT_POOL_KEY_MAX 64u
struct orbit__pool_list {
	struct orbit_conn *head, *tail; /* oldest first */
};
struct orbit__pool_addr {
	char key[ORBIT_POOL_KEY_MAX]; /* the address as the peer text has it */
	uint8_t key_len;
	unsigned count;                  /* its pending connections; 0: entry free */
	struct orbit__pool_list list[2]; /* its silent [0] and talking [1] ones */
	uint32_t next;                   /* hash chain, or the free list */
	uint32_t bprev[2], bnext[2];     /* in the silent and talking buckets */
};
struct orbit__pool_bucket {
	uint32_t head, tail; /* addresses, in the order they came */
};
struct orbit__pool {
	struct orbit__pool_addr *addr;
	uint32_t cap, free;
	uint32_t *hash; /* chain heads, hash_size of them (a power of two) */
	uint32_t hash_size;
	struct orbit__pool_bucket *bucket[2]; /* by count: silent, talking */
	unsigned nbuckets, max[2];            /* highest count possibly nonempty */
};

struct orbit_conn {
	uv_tcp_t tcp; /* tcp.data points back here */
	uv_fs_t req;  /* the one file request in flight (write or the last fsync) */
	struct orbit_collector *c;
	struct orbit_conn *prev, *next;
	char peer[64];   /* "1.2.3.4:5" or "[::1]:5" */
	size_t addr_len; /* bytes of peer that name the address (no port) */

	uint8_t *buf; /* bytes received, not yet written: [0, len) */
	size_t len, cap;
	uint64_t stream_off; /* stream offset of buf[0] */
	size_t frame_len;    /* the frame being checked (admission needs it) */

	size_t wlen, wdone; /* the write in flight: buf[0, wlen), wdone written */
	uint32_t wframes;
	int writing;
	int wmarker;        /* the write in flight is the collector's own cut frame */
	int handshaken;     /* the handshake frame was accepted: file open */
	int pending;        /* counted in c->npending (no handshake yet, not closing) */
	int stream;         /* counted in c->nstreams */
	int closing;        /* conn_close ran: no more frames */
	int talked;         /* it sent something (pool.c; set by orbit__pool_talked) */
	int evicted;        /* closed to make room in the pending pool */
	uint32_t pool_addr; /* pending: its entry in the pool's index */
	struct orbit_conn *pool_prev, *pool_next; /* in that entry's list */
	int tcp_closing, tcp_closed, finishing, finished;
	int failed; /* a bad frame was seen: close once the write is done */
	int error;  /* the closing line is an error, not info */
	int ended;  /* an EndOfStream packet arrived */
	int eof;    /* the peer closed its side */
	int read_error;
	int refusing; /* told the agent why; draining its bytes until it hangs up */
	uint64_t refused_ms;
	char reason[224]; /* why the connection is closed */
	char file_error[224];

	uint64_t accepted_ms, last_byte_ms, partial_since_ms;
	uint64_t handshake_ms, data_ms; /* its Handshake accepted; its last data packet (0: none) */
	uint32_t pid;
	struct orbit_capture_file file;
	struct orbit__loss_account loss; /* the stream's, as every reader sums it */
	uint64_t records;                /* in its ring batches so far */
	uint32_t live_id;                /* its entry in the live view's list; 0: none */

	/* size caps (caps.c) */
	uint32_t cut;          /* ORBIT_ACK_CAPTURE_CAP or _DIR_CAP: no more frames */
	int marker_done;       /* the cut frame is in the file */
	int file_removed;      /* it held no frame and was removed */
	uint64_t dir_reserved; /* counted in c->dir_used for the cut frame */

	/* acknowledgements (ack.c) */
	int acks;              /* the handshake asked for them */
	uint32_t end;          /* why the stream ended: Ack.end of the last Ack */
	int end_sent;          /* the last Ack is queued: no more */
	uint64_t linger_until; /* after the last Ack: close by then at the latest */
	int lingering;         /* reading and dropping until the peer hangs up */
	uv_write_t ack_req, last_req;
	uv_shutdown_t shut_req;
	uint8_t ack_out[ORBIT_ACK_FRAME_MAX], last_out[ORBIT_ACK_FRAME_MAX];
	int ack_writing, ack_again;
	uint64_t acked_frames, acked_synced, acked_bytes, ack_ms;
	uv_fs_t sync_req;
	int syncing, sync_now, finish_after_sync;
	uint64_t synced_frames, sync_target, sync_ms;
	int end_synced; /* the sync after EndOfStream was asked for */
};

/* The window of stranger lines (strangers.c). */
struct orbit__strangers {
	int active; /* a window is open, since since_ms */
	uint64_t since_ms;
	unsigned lines;                        /* lines printed in it */
	uint64_t held, evicted, closed, other; /* not printed: all, and why */
	uint32_t addr[4096];                   /* hashes of their addresses; 0: free */
	unsigned naddr;
	int addr_full; /* more addresses than counted */
};

/* The program's one state. */
struct orbit_collector {
	uv_loop_t loop;
	uv_tcp_t server;
	uv_signal_t sigint, sigterm;
	uv_timer_t tick;
	uv_prepare_t turn;      /* each turn of the loop: the accept budget */
	unsigned accepted_turn; /* connections taken this turn */
	int accept_held;        /* libuv holds one not taken (collector.c) */
	struct orbit_collector_options opt;
	char dir[4096]; /* for messages, without trailing '/' */
	int dirfd;
	uint8_t token[ORBIT_COLLECTOR_TOKEN_MAX];
	size_t token_len; /* 0: no token asked */
	struct orbit_frame_scratch scratch;
	struct orbit_frame_writer ack_writer; /* Ack frames, one at a time */

	struct orbit_conn *conns; /* newest first */
	unsigned nconns, npending, nstreams;
	struct orbit__pool pool;
	struct orbit__strangers strangers;
	int listening, stopping, tty, status_shown;

	uint64_t dir_used;    /* bytes of captures in dir, as counted (caps.c) */
	uint64_t dir_scan_ms; /* when it was last measured */

	struct orbit_live *live; /* the live view (live.h); NULL: none */

	uint64_t bytes, frames; /* written to files, all connections */
	uint64_t lost_closed;   /* loss reported by closed connections */
	uint64_t status_ms, status_bytes;
};

/* Log lines on stderr: info (silenced by --quiet) and errors. */
void orbit__log(struct orbit_collector *c, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- conn.c ---- */

/* A connection was accepted into k (linked, reading not started). */
void orbit__conn_start(struct orbit_conn *k);
/* Closes k: after the write in flight, fsync and close its file (and, if it
 * asked for them, send the last Ack saying k->end). reason is NULL for an
 * orderly end. */
void orbit__conn_close(struct orbit_conn *k, int error, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* After the write in flight (and an fdatasync in flight): fsync and close
 * the file, then the last Ack. */
void orbit__conn_finish(struct orbit_conn *k);
/* Closes k's socket (once). */
void orbit__conn_tcp_close(struct orbit_conn *k);
/* Starts (again) reading k. */
void orbit__conn_read_start(struct orbit_conn *k);
/* Timeouts; called by the periodic timer. */
void orbit__conn_tick(struct orbit_conn *k, uint64_t now);
/* The collector is stopping: finish what is whole, then close. */
/* k, a stream, gives its place to peer (pool.c): its file ends as after
 * an idle timeout (a last Ack with ORBIT_ACK_TIMEOUT), with a line. */
void orbit__conn_give_way(struct orbit_conn *k, const char *why, const char *peer);
void orbit__conn_stop(struct orbit_conn *k);
/* Called once a connection is gone (unlinked and freed by the caller). */
void orbit__collector_conn_gone(struct orbit_collector *c, struct orbit_conn *k);

/* ---- pool.c: who gets a slot ---- */

/* k was just accepted: it joins the pending pool, after the pool made room
 * by closing another pending connection if it was full. 0, or -ENOMEM
 * (k did not join). */
int orbit__pool_add_pending(struct orbit_conn *k);
/* k, pending, sent its first bytes. */
void orbit__pool_talked(struct orbit_conn *k);
/* k leaves the pending pool (its handshake was accepted or it closes). */
void orbit__pool_leave_pending(struct orbit_conn *k);
/* k's handshake passed its checks: 0 and a stream slot, or -EBUSY (all
 * --max-connections slots taken) with *why. */
int orbit__pool_take_stream(struct orbit_conn *k, char *why, size_t n);
/* Releases k's stream slot (the connection is gone). */
void orbit__pool_release(struct orbit_conn *k);
/* Frees the pool's index (the loop has ended). */
void orbit__pool_free(struct orbit__pool *p);

/* ---- strangers.c: the lines of connections without a handshake ---- */

/* Whether k's closing line (k has no accepted handshake) is printed; if
 * not, it is counted in the window's summary. */
int orbit__strangers_report(struct orbit_conn *k);
/* Periodic: the summary once the window is over; now, with force. */
void orbit__strangers_tick(struct orbit_collector *c, uint64_t now, int force);

/* ---- caps.c: --max-capture-size and --max-dir-size ---- */

/* Measures the directory at start and sets the automatic cap; 0, or -1
 * after one line on stderr. */
int orbit__caps_setup(struct orbit_collector *c);
/* The caps in words, for the start line. */
void orbit__caps_text(const struct orbit_collector *c, char *out, size_t n);
/* A new stream of k whose first frame is flen bytes: 0, or -EDQUOT (the
 * directory is full) with *why. Reserves room for k's cut frame. */
int orbit__caps_admit(struct orbit_conn *k, size_t flen, char *why, size_t n);
/* 0 if a frame of flen bytes, after pending bytes already accepted, keeps
 * k's file and the directory within their caps, else the Ack.end code
 * (ORBIT_ACK_CAPTURE_CAP or ORBIT_ACK_DIR_CAP) and *why. */
uint32_t orbit__caps_check(struct orbit_conn *k, uint64_t pending, size_t flen, char *why,
                           size_t n);
/* Bytes about to be written to (positive) or not written after all
 * (negative) one of the directory's captures. */
void orbit__caps_count(struct orbit_collector *c, int64_t bytes);
/* k is gone: its unused reservation goes back. */
void orbit__caps_release(struct orbit_conn *k);
/* The cut frame of k (an Ack with k->cut) into out; its length. */
size_t orbit__caps_marker(struct orbit_conn *k, uint8_t *out);

/* ---- ack.c: acknowledgements and syncing ---- */

/* Encodes one Ack frame into out (at most ORBIT_ACK_FRAME_MAX bytes);
 * returns its length, 0 on failure. */
size_t orbit__ack_encode(struct orbit_collector *c, uint64_t frames, uint64_t bytes,
                         uint64_t synced, uint32_t end, uint8_t *out);
/* Frames were written (or synced): sends an Ack when one is due (now, with
 * force). */
void orbit__ack_maybe(struct orbit_conn *k, int force);
/* Starts an fdatasync of k's file when one is due. */
void orbit__ack_sync_maybe(struct orbit_conn *k);
/* k's file is finished: the last Ack (k->end), then shut down our side and
 * drop what comes until the peer hangs up, at most
 * ORBIT_COLLECTOR_LINGER_MS. */
void orbit__ack_last(struct orbit_conn *k);
/* Periodic: acks and syncs due, and the end of a linger. */
void orbit__ack_tick(struct orbit_conn *k, uint64_t now);

#endif
