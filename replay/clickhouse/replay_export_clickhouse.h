/*
 * replay_export_clickhouse.h — orbit-replay --clickhouse URL: captures
 * loaded into ClickHouse over HTTP (docs/operations.md, "A fleet").
 *
 * Five files do the work:
 *   replay_export_clickhouse_load.c    the loader: --clickhouse-create, the
 *                                      schema check, one replay run per
 *                                      capture file, retries with backoff,
 *                                      what was loaded and what was skipped
 *   replay_export_clickhouse.c         the exporter (replay_export.h): rows
 *                                      in Native batches of bounded size, a
 *                                      captures row per stream last
 *   replay_export_clickhouse_schema.c  the tables, their columns and the
 *                                      statements that create them (the one
 *                                      place that states the schema)
 *   replay_export_clickhouse_send.c    the sender thread: one INSERT in
 *                                      flight while the next batch fills
 *   replay_export_clickhouse_http.c    HTTP through libcurl, and the errors
 *                                      a user can act on
 *
 * Idempotency (docs/operations.md, "Loading twice, and loads that fail"):
 * every stream of a capture is a capture id (a hash of its handshake) and,
 * for each attempt to load it, a fresh load id. Rows carry both. The
 * captures row is written last, after every row of the stream was
 * acknowledged, and is the commit: a row counts only when its load id is
 * in captures. A capture id already in captures is not loaded again. A
 * load that fails leaves rows whose load id no captures row names: never
 * counted, removed later by a cleanup query.
 */
#ifndef ORBIT_REPLAY_EXPORT_CLICKHOUSE_H
#define ORBIT_REPLAY_EXPORT_CLICKHOUSE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "replay.h"

#define ORBIT_RP_CH_BATCH_DEFAULT 262144u   /* rows per INSERT */
#define ORBIT_RP_CH_BATCH_MAX 1048576u      /* ClickHouse's max_insert_block_size: one block */
#define ORBIT_RP_CH_BATCH_BYTES (64u << 20) /* a batch is sent at this size too */
#define ORBIT_RP_CH_RETRIES_DEFAULT 4u
#define ORBIT_RP_CH_BACKOFF_MS 500u /* first wait; doubles */
#define ORBIT_RP_CH_TIMEOUT_S 300u  /* a request's whole time, at most */
#define ORBIT_RP_CH_BACKOFF_MAX_MS 30000u

struct orbit_rp_ch_load;

/* The options of --clickhouse (replay_main.c). */
struct orbit_rp_ch_options {
	const char *url;     /* http://host:8123/?database=orbit */
	int create;          /* --clickhouse-create: write the schema first */
	const char *cluster; /* --clickhouse-cluster: local tables + Distributed */
	uint32_t batch_rows; /* rows per INSERT, 1 .. ORBIT_RP_CH_BATCH_MAX */
	uint32_t retries;    /* attempts after the first, per capture file */
	uint32_t backoff_ms; /* first wait between attempts */
	uint32_t timeout_s;  /* --clickhouse-timeout: one request, whole, at most */
	/* Set by the loader for each replay run, for the exporter. */
	struct orbit_rp_ch_load *load;
};

void orbit__rp_ch_defaults(struct orbit_rp_ch_options *c);

/* orbit-replay --clickhouse: creates the schema if asked, then loads every
 * capture of o (o->clickhouse set). Returns an enum orbit_replay_status:
 * 3 when a capture could not be loaded. */
int orbit__replay_clickhouse(const struct orbit_replay_options *o);

/* ---- HTTP (replay_export_clickhouse_http.c) ---- */

struct orbit_rp_ch_http;

/* What went wrong, as one line a user can act on. */
struct orbit_rp_ch_error {
	int transient; /* worth retrying: the server or a shard may come back */
	int code;      /* ClickHouse's error code, 0: none (not reached) */
	char text[640];
};

/* A reply body: the result of a SELECT, or the error text. */
struct orbit_rp_ch_reply {
	char *data;
	size_t len, cap;
};

/* Checks the URL (http:// or https://); NULL with e filled when it is bad
 * or memory is short. */
struct orbit_rp_ch_http *orbit__rp_ch_http_new(const char *url, uint32_t timeout_s,
                                               struct orbit_rp_ch_error *e);
void orbit__rp_ch_http_free(struct orbit_rp_ch_http *h);
/* host:port of the server, for messages (never the credentials). */
const char *orbit__rp_ch_http_server(const struct orbit_rp_ch_http *h);
/* The database the URL names (its database= parameter), "" for none. */
const char *orbit__rp_ch_http_database(const struct orbit_rp_ch_http *h);
/* Runs sql. With data, sql is an INSERT ... FORMAT Native and the ndata
 * pieces of data, in turn, its block; without, sql is sent as the body.
 * nodb: without the URL's database= (to create it). The reply body goes to
 * *reply (NUL-terminated) when reply is not NULL. 0, or -1 with e filled. */
int orbit__rp_ch_http_run(struct orbit_rp_ch_http *h, const char *sql, const struct iovec *data,
                          int ndata, int nodb, struct orbit_rp_ch_reply *reply,
                          struct orbit_rp_ch_error *e);
void orbit__rp_ch_reply_free(struct orbit_rp_ch_reply *r);
/* What an error reply of ClickHouse (status, len bytes of body) says, as
 * one line of e, and whether it may pass (tests/fuzz: any bytes). */
void orbit__rp_ch_error_of(const char *server, long status, const char *body, size_t len,
                           struct orbit_rp_ch_error *e);

/* ---- the sender thread (replay_export_clickhouse_send.c) ---- */

struct orbit_rp_ch_sender;

/* A thread that runs the INSERTs handed to it on http; NULL on failure. */
struct orbit_rp_ch_sender *orbit__rp_ch_sender_start(struct orbit_rp_ch_http *http);
/* Waits until the INSERT handed over last is done: 0, or -1 with e filled
 * (once per failure). Only then may the caller use http or the memory it
 * handed over. */
int orbit__rp_ch_sender_wait(struct orbit_rp_ch_sender *s, struct orbit_rp_ch_error *e);
/* Hands over one INSERT: sql and the n pieces of its block, which must
 * stay as they are until the next wait. Call after a wait. */
void orbit__rp_ch_sender_send(struct orbit_rp_ch_sender *s, const char *sql,
                              const struct iovec *iov, int n);
/* Finishes the INSERT in flight and ends the thread; NULL does nothing. */
void orbit__rp_ch_sender_stop(struct orbit_rp_ch_sender *s);

/* ---- the schema (replay_export_clickhouse_schema.c) ---- */

enum orbit_rp_ch_table {
	ORBIT_RP_CH_SCOPES,
	ORBIT_RP_CH_ASYNC,
	ORBIT_RP_CH_VALUES,
	ORBIT_RP_CH_LOGS,
	ORBIT_RP_CH_THREADS,
	ORBIT_RP_CH_CAPTURES, /* last: the commit */
	ORBIT_RP_CH_TABLES,
};

struct orbit_rp_ch_column {
	const char *name, *type;
};

#define ORBIT_RP_CH_MAX_COLS 64u /* columns of a table, at most */

struct orbit_rp_ch_table_def {
	const char *name;
	const struct orbit_rp_ch_column *cols; /* in the order rows are written */
	size_t ncols;
	const char *order_by;
};

extern const struct orbit_rp_ch_table_def orbit__rp_ch_tables[ORBIT_RP_CH_TABLES];

/* "INSERT INTO name (c1, c2, ...) FORMAT Native"; NULL when out of memory. */
char *orbit__rp_ch_insert_sql(enum orbit_rp_ch_table t);
/* Creates the database the URL names and every table (IF NOT EXISTS); with
 * cluster, NAME_local MergeTree tables and Distributed tables NAME over
 * them, sharded by capture id. 0, or -1 with e filled. */
int orbit__rp_ch_create(struct orbit_rp_ch_http *h, const char *cluster,
                        struct orbit_rp_ch_error *e);
/* Whether every table has every column this orbit-replay writes, with its
 * type. 0, or -1 with e filled (naming the table and column). */
int orbit__rp_ch_check(struct orbit_rp_ch_http *h, struct orbit_rp_ch_error *e);
/* The same for a reply of system.columns (TSVRaw lines: table, name, type;
 * NUL-terminated; tests/fuzz: any bytes), of server and database db. */
int orbit__rp_ch_check_columns(const char *tsv, const char *server, const char *db,
                               struct orbit_rp_ch_error *e);

/* ---- what a run of the exporter did, for the loader ---- */

struct orbit_rp_ch_load {
	const struct orbit_rp_ch_options *opt;
	struct orbit_rp_ch_http *http;
	const char *file; /* the capture file of this run */
	int failed;       /* e says why */
	struct orbit_rp_ch_error e;
	uint64_t streams_loaded, streams_present; /* present: already loaded */
	uint64_t streams_incomplete;              /* loaded without an end of stream */
	uint64_t rows[ORBIT_RP_CH_TABLES];        /* of the committed streams */
	uint64_t batches;
	uint64_t first_id; /* capture id of the first stream, for messages */
};

/* Stable identity of a stream: a hash of its handshake (docs/operations.md). */
struct orbit_rp_stream;
uint64_t orbit__rp_ch_capture_id(const struct orbit_rp_stream *s, size_t index);
/* For a capture orbit-dump made with the agent's Handshake (Handshake.dumped
 * 1): the id of the agent's stream it continues; else 0. */
uint64_t orbit__rp_ch_continues(const struct orbit_rp_stream *s, size_t index);

#endif
