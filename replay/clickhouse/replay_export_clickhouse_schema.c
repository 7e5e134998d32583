/*
 * replay_export_clickhouse_schema.c — the ClickHouse tables orbit-replay
 * --clickhouse writes, stated once: their columns in the order the
 * exporter writes them (replay_export_clickhouse.c), their sort keys, and
 * the statements --clickhouse-create sends. docs/operations.md describes
 * every column; change both together.
 *
 * For ClickHouse 18.16 (Debian 12), which has no per-column codecs, TTL,
 * DateTime64 or skipping indices: times are UInt64 nanoseconds, every table
 * is partitioned by day (the UTC day of the stream's handshake, so a
 * capture lives in one partition and expires with DROP PARTITION), and the
 * row tables are sorted by name, then capture, then time: a query for one
 * name reads one range, and within it one capture's window.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export_clickhouse.h"

#define COMMON                                                                                     \
	{"day", "Date"}, {"capture_id", "UInt64"},                                                 \
	{                                                                                          \
		"load_id", "UInt64"                                                                \
	}
#define SOURCE                                                                                     \
	{"src_file", "String"}, {"src_function", "String"},                                        \
	{                                                                                          \
		"src_line", "UInt32"                                                               \
	}
#define ATTRS                                                                                      \
	{"flags", "UInt32"}, {"color", "UInt32"},                                                  \
	{                                                                                          \
		"group_id", "UInt64"                                                               \
	}
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct orbit_rp_ch_column scopes[] = {
    COMMON,
    {"name", "String"},
    {"start_ns", "UInt64"},
    {"duration_ns", "UInt64"},
    {"self_ns", "UInt64"},
    {"tid", "UInt32"},
    {"depth", "UInt32"},
    {"unfinished", "UInt8"},
    ATTRS,
    SOURCE,
    {"oncpu_ns", "UInt64"},
    {"runnable_ns", "UInt64"},
    {"blocked_ns", "UInt64"},
};

static const struct orbit_rp_ch_column async_spans[] = {
    COMMON,
    {"name", "String"},
    {"id", "UInt64"},
    {"start_ns", "UInt64"},
    {"duration_ns", "UInt64"},
    {"tid", "UInt32"},
    {"end_tid", "UInt32"},
    {"unfinished", "UInt8"},
    ATTRS,
    SOURCE,
};

#define VALUE_KINDS                                                                                \
	"Enum8('int' = 5, 'int64' = 6, 'uint' = 7, 'uint64' = 8, 'float' = 9, 'double' = 10)"

static const struct orbit_rp_ch_column value_samples[] = {
    COMMON,
    {"name", "String"},
    {"time_ns", "UInt64"},
    {"tid", "UInt32"},
    {"kind", VALUE_KINDS},
    {"value", "Float64"},
    {"bits", "UInt64"},
    ATTRS,
    SOURCE,
};

static const struct orbit_rp_ch_column log_lines[] = {
    COMMON,
    {"time_ns", "UInt64"},
    {"tid", "UInt32"},
    {"marker", "UInt8"},
    {"text", "String"},
    {"flags", "UInt32"},
    SOURCE,
};

static const struct orbit_rp_ch_column threads[] = {
    COMMON,
    {"pid", "UInt32"},
    {"tid", "UInt32"},
    {"name", "String"},
};

#define EQUATION "Enum8('fails' = 0, 'holds' = 1, 'unknown' = 2)"

static const struct orbit_rp_ch_column captures[] = {
    COMMON,
    {"loaded_at", "DateTime"},
    {"host", "String"},
    {"process", "String"},
    {"pid", "UInt32"},
    {"command", "Array(String)"},
    {"agent_version", "String"},
    {"capture_file", "String"},
    {"stream", "UInt32"},
    {"start_wall_ns", "UInt64"},
    {"start_ns", "UInt64"},
    {"end_ns", "UInt64"},
    {"duration_ns", "UInt64"},
    {"handshake_realtime_ns", "UInt64"},
    {"handshake_monotonic_ns", "UInt64"},
    {"clock_offset_ns", "Int64"},
    {"records", "UInt64"},
    {"scopes", "UInt64"},
    {"async_spans", "UInt64"},
    {"values", "UInt64"},
    {"thread_names", "UInt64"},
    {"log_lines", "UInt64"},
    {"markers", "UInt64"},
    {"threads", "UInt32"},
    {"claimed", "UInt64"},
    {"delivered", "UInt64"},
    {"lost", "UInt64"},
    {"lost_lapped", "UInt64"},
    {"lost_writer_gone", "UInt64"},
    {"lost_backstop", "UInt64"},
    {"lost_at_end", "UInt64"},
    {"unsent", "UInt64"},
    {"log_records_lost", "UInt64"},
    {"log_pages_lost", "UInt64"},
    {"equation", EQUATION},
    {"log_equation", EQUATION},
    {"complete", "UInt8"},
    {"unfinished", "UInt64"},
    {"unmatched_stops", "UInt64"},
    {"incomplete_names", "UInt64"},
    {"orphan_continuations", "UInt64"},
    {"gaps", "UInt64"},
    {"bad_records", "UInt64"},
    {"bad_log_records", "UInt64"},
    {"time_untrusted", "UInt64"},
    {"thread_ends", "UInt64"},
    {"reused_tids", "UInt64"},
    {"agent_untrusted_times", "UInt64"},
    {"agent_clock_resets", "UInt64"},
    {"damaged_frames", "UInt64"},
    {"rejected_packets", "UInt64"},
    {"sched", "UInt8"},
    {"continues", "UInt64"},
};

#define FITS(a) _Static_assert(N(a) <= ORBIT_RP_CH_MAX_COLS, #a ": too many columns")
FITS(scopes);
FITS(async_spans);
FITS(value_samples);
FITS(log_lines);
FITS(threads);
FITS(captures);

const struct orbit_rp_ch_table_def orbit__rp_ch_tables[ORBIT_RP_CH_TABLES] = {
    [ORBIT_RP_CH_SCOPES] = {"scopes", scopes, N(scopes), "name, capture_id, start_ns"},
    [ORBIT_RP_CH_ASYNC] = {"async_spans", async_spans, N(async_spans),
                           "name, capture_id, start_ns"},
    [ORBIT_RP_CH_VALUES] = {"value_samples", value_samples, N(value_samples),
                            "name, capture_id, time_ns"},
    [ORBIT_RP_CH_LOGS] = {"log_lines", log_lines, N(log_lines), "capture_id, time_ns"},
    [ORBIT_RP_CH_THREADS] = {"threads", threads, N(threads), "capture_id, pid, tid"},
    [ORBIT_RP_CH_CAPTURES] = {"captures", captures, N(captures), "host, capture_id"},
};

/* ---- statements ---- */

struct sql {
	char *p;
	size_t len, cap;
	int oom;
};

static void put(struct sql *s, const char *t)
{
	size_t n = strlen(t);
	if (s->oom)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->len + n + 1)
			cap *= 2;
		char *p = realloc(s->p, cap);
		if (p == NULL) {
			s->oom = 1;
			return;
		}
		s->p = p;
		s->cap = cap;
	}
	memcpy(s->p + s->len, t, n + 1);
	s->len += n;
}

/* A name as a backquoted identifier, or a quoted string literal. */
static void put_quoted(struct sql *s, const char *name, char q)
{
	char c[3] = {q, 0, 0};
	put(s, c);
	for (const char *p = name; *p; p++) {
		c[0] = *p;
		c[1] = 0;
		if (*p == q || *p == '\\') {
			c[0] = '\\';
			c[1] = *p;
		}
		put(s, c);
	}
	c[0] = q;
	c[1] = 0;
	put(s, c);
}

static char *done(struct sql *s)
{
	if (s->oom) {
		free(s->p);
		return NULL;
	}
	return s->p;
}

char *orbit__rp_ch_insert_sql(enum orbit_rp_ch_table t)
{
	const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
	struct sql s = {0};
	put(&s, "INSERT INTO ");
	put(&s, d->name);
	put(&s, " (");
	for (size_t i = 0; i < d->ncols; i++) {
		if (i)
			put(&s, ", ");
		put_quoted(&s, d->cols[i].name, '`');
	}
	put(&s, ") FORMAT Native");
	return done(&s);
}

/* CREATE TABLE IF NOT EXISTS name (columns) ENGINE = MergeTree ... */
static char *create_merge_tree(const struct orbit_rp_ch_table_def *d, const char *suffix)
{
	struct sql s = {0};
	put(&s, "CREATE TABLE IF NOT EXISTS ");
	put(&s, d->name);
	put(&s, suffix);
	put(&s, " (");
	for (size_t i = 0; i < d->ncols; i++) {
		put(&s, i ? ", " : "");
		put_quoted(&s, d->cols[i].name, '`');
		put(&s, " ");
		put(&s, d->cols[i].type);
	}
	put(&s, ") ENGINE = MergeTree() PARTITION BY day ORDER BY (");
	put(&s, d->order_by);
	put(&s, ")");
	return done(&s);
}

/* CREATE TABLE IF NOT EXISTS name AS name_local ENGINE = Distributed(...).
 * The database is named, not currentDatabase(): 18.16 evaluates the
 * engine's arguments again when it attaches the table at its next start,
 * with no current database. */
static char *create_distributed(const struct orbit_rp_ch_table_def *d, const char *cluster,
                                const char *db)
{
	struct sql s = {0};
	put(&s, "CREATE TABLE IF NOT EXISTS ");
	put(&s, d->name);
	put(&s, " AS ");
	put(&s, d->name);
	put(&s, "_local ENGINE = Distributed(");
	put_quoted(&s, cluster, '\'');
	put(&s, ", ");
	put_quoted(&s, db, '\'');
	put(&s, ", '");
	put(&s, d->name);
	put(&s, "_local', capture_id)");
	return done(&s);
}

static int run(struct orbit_rp_ch_http *h, char *sql, int nodb, struct orbit_rp_ch_error *e)
{
	if (sql == NULL) {
		snprintf(e->text, sizeof e->text, "out of memory");
		return -1;
	}
	int r = orbit__rp_ch_http_run(h, sql, NULL, 0, nodb, NULL, e);
	free(sql);
	return r;
}

static const char *type_in(const char *tsv, const char *table, const char *col, size_t *len);

/* ALTER TABLE name ADD COLUMN `col` type */
static char *add_column(const char *table, const char *suffix, const struct orbit_rp_ch_column *c)
{
	struct sql s = {0};
	put(&s, "ALTER TABLE ");
	put(&s, table);
	put(&s, suffix);
	put(&s, " ADD COLUMN ");
	put_quoted(&s, c->name, '`');
	put(&s, " ");
	put(&s, c->type);
	return done(&s);
}

/* Every column of the database's tables, as TSVRaw lines (table, name,
 * type) in *r; 0, or -1 (r freed). */
static int columns_of(struct orbit_rp_ch_http *h, struct orbit_rp_ch_reply *r,
                      struct orbit_rp_ch_error *e)
{
	if (orbit__rp_ch_http_run(h,
	                          "SELECT table, name, type FROM system.columns WHERE database = "
	                          "currentDatabase() FORMAT TSVRaw",
	                          NULL, 0, 0, r, e) == 0)
		return 0;
	orbit__rp_ch_reply_free(r);
	return -1;
}

/* The columns a table made by an earlier orbit-replay lacks, added (at the
 * end, as they are in the definitions: inserts name their columns). On a
 * cluster, to the local table and the Distributed one of this server;
 * the other servers' with their own --clickhouse-create. */
static int add_missing(struct orbit_rp_ch_http *h, const char *cluster, struct orbit_rp_ch_error *e)
{
	struct orbit_rp_ch_reply r = {0};
	if (columns_of(h, &r, e) != 0)
		return -1;
	const char *tsv = r.data ? r.data : "";
	int ret = 0;
	for (int t = 0; t < ORBIT_RP_CH_TABLES && ret == 0; t++) {
		const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
		char local[64];
		snprintf(local, sizeof local, "%s%s", d->name, cluster ? "_local" : "");
		for (size_t i = 1; i < d->ncols && ret == 0; i++) {
			size_t len;
			if (type_in(tsv, local, d->cols[i].name, &len) == NULL)
				ret = run(h,
				          add_column(d->name, cluster ? "_local" : "", &d->cols[i]),
				          0, e);
			if (ret == 0 && cluster &&
			    type_in(tsv, d->name, d->cols[i].name, &len) == NULL)
				ret = run(h, add_column(d->name, "", &d->cols[i]), 0, e);
		}
	}
	orbit__rp_ch_reply_free(&r);
	return ret;
}

int orbit__rp_ch_create(struct orbit_rp_ch_http *h, const char *cluster,
                        struct orbit_rp_ch_error *e)
{
	const char *db = orbit__rp_ch_http_database(h);
	if (*db) {
		struct sql s = {0};
		put(&s, "CREATE DATABASE IF NOT EXISTS ");
		put_quoted(&s, db, '`');
		if (run(h, done(&s), 1, e) != 0)
			return -1;
	}
	/* Without database=, the user's own: the Distributed tables name it. */
	struct orbit_rp_ch_reply r = {0};
	if (cluster && !*db) {
		if (orbit__rp_ch_http_run(h, "SELECT currentDatabase() FORMAT TSVRaw", NULL, 0, 0,
		                          &r, e) != 0) {
			orbit__rp_ch_reply_free(&r);
			return -1;
		}
		if (r.data)
			r.data[strcspn(r.data, "\n")] = '\0';
		db = r.data ? r.data : "default";
	}
	int ret = 0;
	for (int t = 0; t < ORBIT_RP_CH_TABLES && ret == 0; t++) {
		const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
		ret = run(h, create_merge_tree(d, cluster ? "_local" : ""), 0, e);
		if (ret == 0 && cluster)
			ret = run(h, create_distributed(d, cluster, db), 0, e);
	}
	orbit__rp_ch_reply_free(&r);
	return ret == 0 ? add_missing(h, cluster, e) : ret;
}

/* ---- the check before a load ---- */

/* The type of table.column in the reply (TSVRaw lines: table, name,
 * type), or NULL. */
static const char *type_in(const char *tsv, const char *table, const char *col, size_t *len)
{
	size_t tl = strlen(table), cl = strlen(col);
	for (const char *p = tsv; *p;) {
		const char *eol = strchr(p, '\n');
		if (eol == NULL)
			eol = p + strlen(p);
		if ((size_t)(eol - p) > tl + cl + 2 && memcmp(p, table, tl) == 0 && p[tl] == '\t' &&
		    memcmp(p + tl + 1, col, cl) == 0 && p[tl + 1 + cl] == '\t') {
			const char *type = p + tl + cl + 2;
			*len = (size_t)(eol - type);
			return type;
		}
		p = *eol ? eol + 1 : eol;
	}
	return NULL;
}

static int same_type(const char *got, size_t len, const char *want)
{
	return strlen(want) == len && memcmp(got, want, len) == 0;
}

int orbit__rp_ch_check_columns(const char *tsv, const char *server, const char *db,
                               struct orbit_rp_ch_error *e)
{
	int bad = 0;
	for (int t = 0; t < ORBIT_RP_CH_TABLES && !bad; t++) {
		const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
		for (size_t i = 0; i < d->ncols && !bad; i++) {
			size_t len;
			const char *type = type_in(tsv, d->name, d->cols[i].name, &len);
			if (type == NULL && i == 0) {
				snprintf(e->text, sizeof e->text,
				         "ClickHouse at %s has no table %s in database %s: "
				         "create the schema with --clickhouse-create",
				         server, d->name, *db ? db : "default");
				bad = 1;
			} else if (type == NULL) {
				snprintf(
				    e->text, sizeof e->text,
				    "ClickHouse at %s: table %s has no column %s (%s): it was "
				    "created by an earlier orbit-replay; --clickhouse-create adds "
				    "it (docs/operations.md, the tables)",
				    server, d->name, d->cols[i].name, d->cols[i].type);
				bad = 1;
			} else if (!same_type(type, len, d->cols[i].type)) {
				char shown[64];
				size_t n = len < sizeof shown - 1 ? len : sizeof shown - 1;
				for (size_t k = 0; k < n;
				     k++) /* the server's bytes, shown safely */
					shown[k] =
					    type[k] >= 0x20 && type[k] < 0x7f ? type[k] : '?';
				shown[n] = '\0';
				snprintf(
				    e->text, sizeof e->text,
				    "ClickHouse at %s: column %s.%s is %s, orbit-replay writes %s "
				    "(docs/operations.md, the tables)",
				    server, d->name, d->cols[i].name, shown, d->cols[i].type);
				bad = 1;
			}
		}
	}
	if (bad) {
		e->transient = 0;
		e->code = 0;
	}
	return bad ? -1 : 0;
}

int orbit__rp_ch_check(struct orbit_rp_ch_http *h, struct orbit_rp_ch_error *e)
{
	struct orbit_rp_ch_reply r = {0};
	if (columns_of(h, &r, e) != 0)
		return -1;
	int ret = orbit__rp_ch_check_columns(r.data ? r.data : "", orbit__rp_ch_http_server(h),
	                                     orbit__rp_ch_http_database(h), e);
	orbit__rp_ch_reply_free(&r);
	return ret;
}
