/*
 * replay_export_clickhouse.c — the exporter behind --clickhouse: every
 * scope, async span, value and log line of a capture file as a row of its
 * table (replay_export_clickhouse_schema.c), in batches of at most
 * --clickhouse-batch rows (and ORBIT_RP_CH_BATCH_BYTES), one INSERT of one
 * Native block each; at the end of each stream its threads, then its
 * captures row.
 *
 * The loader (replay_export_clickhouse_load.c) runs it on one file at a
 * time and reads what it did from struct orbit_rp_ch_load. Per stream:
 *
 *   1. stream: the capture id (a hash of the handshake); if captures holds
 *      it, the stream is already loaded and its rows are not sent.
 *      Otherwise a fresh load id.
 *   2. rows: appended to their table's batch, sent when it is full.
 *   3. stream_end: the batches sent; captures asked again (another loader
 *      may have loaded the same capture meanwhile: then this load stays
 *      uncommitted); the captures row sent. Only then is the stream loaded:
 *      a row counts when its load id is in captures.
 *
 * The first failure stops the run's loading (nothing more is sent); the
 * loader retries the whole file with fresh load ids, and the streams that
 * were committed meanwhile are found in step 1.
 *
 * Native, ClickHouse's own columnar format, costs the server about a
 * quarter less than RowBinary (docs/performance.md, "ClickHouse"), so a
 * batch is kept column by column: a block is the number of columns and of
 * rows (LEB128), then each column's name, type and values. Values:
 * integers little-endian at their width, Date as days since 1970 in a
 * UInt16, DateTime as seconds in a UInt32, Enum8 as its Int8, String as a
 * LEB128 length and the bytes as they are (no escaping: the bytes of a
 * hostile name are data, never SQL), Array(String) as each row's end
 * offset (UInt64) and then all the strings. Each row writer writes the
 * columns in the schema's order; a row of the wrong width is an internal
 * error, not a refused batch.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "frame.h" /* orbit__put_varint */
#include "replay_export.h"
#include "replay_export_clickhouse.h"

/* A growing byte buffer. */
struct buf {
	uint8_t *p;
	size_t len, cap;
};

/* The rows of one table not sent yet, column by column (Native). */
struct batch {
	struct buf *col; /* one per column of the table */
	size_t ncols;
	size_t ci;         /* the column the row's next value goes to */
	int array_col;     /* the Array(String) column, -1: none */
	struct buf nested; /* its strings; its offsets are in col[array_col] */
	uint64_t nested_n; /* strings in nested */
	uint32_t rows;
	size_t bytes; /* in all its buffers */
};

struct ch {
	struct orbit_rp_ch_load *load;
	const struct orbit_rp_ch_options *opt;
	char *insert[ORBIT_RP_CH_TABLES];
	/* Two batches a table: b[t] is filled while the other may be in
	 * flight (replay_export_clickhouse_send.c). */
	struct batch pair[ORBIT_RP_CH_TABLES][2];
	struct batch *b[ORBIT_RP_CH_TABLES];
	struct orbit_rp_ch_sender *sender;
	char pending[128]; /* what the INSERT in flight is, for its failure */
	/* The block in flight: its counts, names and types, and its pieces;
	 * the sender's until the next orbit__rp_ch_sender_wait. */
	struct buf block;
	struct iovec iov[3 * ORBIT_RP_CH_MAX_COLS];
	const struct orbit_rp_stream *cur;
	int active;        /* the rows of cur are being loaded */
	uint32_t nstreams; /* begun in this run */
	uint32_t index;    /* of cur in its file, from 0 */
	uint64_t capture_id, load_id;
	uint16_t day;
	uint64_t rows[ORBIT_RP_CH_TABLES]; /* of cur */
};

/* ---- Native ---- */

/* Fails the run's loading with a reason of our own (no ClickHouse error). */
static void fail_here(struct ch *st, const char *fmt, size_t a, size_t b)
{
	if (!st->load->failed) {
		st->load->failed = 1;
		st->load->e.transient = 0;
		snprintf(st->load->e.text, sizeof st->load->e.text, fmt, a, b);
	}
	st->active = 0;
}

/* The slow path of room(): u grows. */
static uint8_t *grow(struct ch *st, struct buf *u, size_t n)
{
	size_t cap = u->cap ? u->cap : 1u << 12;
	while (cap < u->len + n)
		cap *= 2;
	uint8_t *p = realloc(u->p, cap);
	if (p == NULL) {
		fail_here(st, "out of memory for a batch of %zu bytes (%zu more)", u->len, n);
		return NULL;
	}
	u->p = p;
	u->cap = cap;
	uint8_t *w = u->p + u->len;
	u->len += n;
	return w;
}

/* Room for n more bytes in u; NULL when out of memory (the run then fails). */
static inline uint8_t *room(struct ch *st, struct buf *u, size_t n)
{
	if (__builtin_expect(u->len + n > u->cap, 0))
		return grow(st, u, n);
	uint8_t *w = u->p + u->len;
	u->len += n;
	return w;
}

static inline void wr_le(struct ch *st, struct buf *u, uint64_t v, unsigned bytes)
{
	uint8_t *w = room(st, u, bytes);
	if (w == NULL)
		return;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(w, &v, bytes); /* the low bytes first */
#else
	for (unsigned i = 0; i < bytes; i++, v >>= 8)
		w[i] = (uint8_t)v;
#endif
}

static void wr_varint(struct ch *st, struct buf *u, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = orbit__put_varint(tmp, v);
	uint8_t *w = room(st, u, n);
	if (w != NULL)
		memcpy(w, tmp, n);
}

static void wr_str(struct ch *st, struct buf *u, const char *s, size_t n)
{
	wr_varint(st, u, n);
	uint8_t *w = n ? room(st, u, n) : NULL;
	if (w != NULL)
		memcpy(w, s, n);
}

/* The column the row's next value goes to; NULL past the table's columns
 * (a row writer that does not match the schema: a bug, reported). */
static inline struct buf *next_col(struct ch *st, struct batch *b)
{
	if (__builtin_expect(b->ci >= b->ncols, 0)) {
		fail_here(st, "internal error: a row of %zu values for %zu columns", b->ci + 1,
		          b->ncols);
		return NULL;
	}
	return &b->col[b->ci++];
}

static inline void put_le(struct ch *st, struct batch *b, uint64_t v, unsigned bytes)
{
	struct buf *c = next_col(st, b);
	if (c != NULL)
		wr_le(st, c, v, bytes);
}

#define U8(v) put_le(st, b, (uint64_t)(v), 1)
#define U16(v) put_le(st, b, (uint64_t)(v), 2)
#define U32(v) put_le(st, b, (uint64_t)(v), 4)
#define U64(v) put_le(st, b, (uint64_t)(v), 8)

static void put_str(struct ch *st, struct batch *b, const char *s, size_t n)
{
	struct buf *c = next_col(st, b);
	if (c != NULL)
		wr_str(st, c, s, n);
}

static void put_cstr(struct ch *st, struct batch *b, const char *s)
{
	put_str(st, b, s ? s : "", s ? strlen(s) : 0);
}

/* An Array(String): its end offset in the column, its strings beside. */
static void put_cstr_array(struct ch *st, struct batch *b, char *const *v, size_t n)
{
	if ((int)b->ci != b->array_col) {
		fail_here(st, "internal error: an array for column %zu of %zu", b->ci, b->ncols);
		return;
	}
	for (size_t i = 0; i < n; i++)
		wr_str(st, &b->nested, v[i], strlen(v[i]));
	b->nested_n += n;
	U64(b->nested_n);
}

static void put_f64(struct ch *st, struct batch *b, double d)
{
	uint64_t bits;
	memcpy(&bits, &d, sizeof bits);
	U64(bits);
}

/* ---- sending ---- */

/* Records the first failure of the run, with what was being done. */
static void fail(struct ch *st, const char *what, const struct orbit_rp_ch_error *e)
{
	struct orbit_rp_ch_load *l = st->load;
	st->active = 0;
	if (l->failed)
		return;
	l->failed = 1;
	l->e.transient = e->transient;
	l->e.code = e->code;
	char text[sizeof l->e.text + 256];
	size_t n = (size_t)snprintf(text, sizeof text, "%s: %s", what, e->text);
	n = n < sizeof l->e.text ? n : sizeof l->e.text - 1;
	memcpy(l->e.text, text, n);
	l->e.text[n] = '\0';
}

/* The batch as one Native block, in pieces that point into the columns:
 * the column and row counts, then each column's name and type (in
 * st->block) and its values. Sets st->iov; the number of pieces, or -1. */
static int block_of(struct ch *st, enum orbit_rp_ch_table t)
{
	const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
	struct batch *b = st->b[t];
	struct buf *o = &st->block;
	size_t head[ORBIT_RP_CH_MAX_COLS + 1];
	o->len = 0;
	wr_varint(st, o, b->ncols);
	wr_varint(st, o, b->rows);
	for (size_t i = 0; i < b->ncols; i++) {
		wr_str(st, o, d->cols[i].name, strlen(d->cols[i].name));
		wr_str(st, o, d->cols[i].type, strlen(d->cols[i].type));
		head[i] = o->len; /* column i's values follow */
	}
	if (st->load->failed)
		return -1;
	int n = 0;
	size_t from = 0;
	for (size_t i = 0; i < b->ncols; i++) {
		st->iov[n++] = (struct iovec){o->p + from, head[i] - from};
		from = head[i];
		st->iov[n++] = (struct iovec){b->col[i].p, b->col[i].len};
		if ((int)i == b->array_col)
			st->iov[n++] = (struct iovec){b->nested.p, b->nested.len};
	}
	return n;
}

static void batch_clear(struct batch *b)
{
	for (size_t i = 0; i < b->ncols; i++)
		b->col[i].len = 0;
	b->nested.len = 0;
	b->nested_n = 0;
	b->rows = 0;
	b->bytes = 0;
	b->ci = 0;
}

/* Waits for the INSERT in flight; 0, or -1 with its failure recorded. */
static int sync_sender(struct ch *st)
{
	struct orbit_rp_ch_error e = {0};
	if (orbit__rp_ch_sender_wait(st->sender, &e) == 0)
		return 0;
	fail(st, st->pending, &e);
	return -1;
}

/* Hands table t's batch to the sender and fills the other one; -1 when
 * the INSERT before it failed. Its own outcome is known at the next
 * sync_sender. */
static int send_batch(struct ch *st, enum orbit_rp_ch_table t)
{
	struct batch *b = st->b[t];
	if (b->rows == 0)
		return 0;
	if (sync_sender(st) != 0)
		return -1;
	int n = block_of(st, t);
	if (n < 0)
		return -1;
	snprintf(st->pending, sizeof st->pending, "INSERT INTO %s (%u rows) refused",
	         orbit__rp_ch_tables[t].name, b->rows);
	orbit__rp_ch_sender_send(st->sender, st->insert[t], st->iov, n);
	st->load->batches++;
	st->rows[t] += b->rows;
	st->b[t] = b == &st->pair[t][0] ? &st->pair[t][1] : &st->pair[t][0];
	batch_clear(st->b[t]); /* sent before the one now in flight: done */
	return 0;
}

/* The row written to table t is complete; ends it, and sends the batch
 * when it is full. Every ROWS_BETWEEN_SIZES rows the batch's bytes are
 * added up again. */
#define ROWS_BETWEEN_SIZES 1024u

static void row_end(struct ch *st, enum orbit_rp_ch_table t, int may_send)
{
	struct batch *b = st->b[t];
	if (b->ci != b->ncols) {
		fail_here(st, "internal error: a row of %zu values for %zu columns", b->ci,
		          b->ncols);
		return;
	}
	b->ci = 0;
	b->rows++;
	if (b->rows % ROWS_BETWEEN_SIZES == 0) {
		b->bytes = b->nested.len;
		for (size_t i = 0; i < b->ncols; i++)
			b->bytes += b->col[i].len;
	}
	if (may_send && (b->rows >= st->opt->batch_rows || b->bytes >= ORBIT_RP_CH_BATCH_BYTES))
		send_batch(st, t);
}

static void row_done(struct ch *st, enum orbit_rp_ch_table t)
{
	row_end(st, t, 1);
}

/* The count() a SELECT returned; -1 with the failure recorded. */
static int64_t count_of(struct ch *st, const char *sql, const char *what)
{
	struct orbit_rp_ch_reply r = {0};
	struct orbit_rp_ch_error e = {0};
	if (sync_sender(st) != 0)
		return -1;
	if (orbit__rp_ch_http_run(st->load->http, sql, NULL, 0, 0, &r, &e) != 0) {
		orbit__rp_ch_reply_free(&r);
		fail(st, what, &e);
		return -1;
	}
	int64_t n = r.data ? strtoll(r.data, NULL, 10) : 0;
	orbit__rp_ch_reply_free(&r);
	return n;
}

static int64_t captures_with(struct ch *st, uint64_t id, const char *what)
{
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT count() FROM captures WHERE capture_id = %llu",
	         (unsigned long long)id);
	return count_of(st, sql, what);
}

/* ---- identity ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

static uint64_t fnv_u64(uint64_t h, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++, v >>= 8)
		le[i] = (uint8_t)v;
	return fnv(h, le, 8);
}

static uint64_t fnv_str(uint64_t h, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	return fnv(fnv_u64(h, n), s ? s : "", n);
}

/* splitmix64's finaliser: every input bit moves every output bit, so the
 * id shards evenly (Distributed takes it modulo the shards' weights). */
static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The id of the stream s's fields name; dumped as given (a dump continues
 * the agent's stream of the same fields: its own id differs by it). */
static uint64_t capture_id(const struct orbit_rp_stream *s, size_t index, uint32_t dumped)
{
	uint64_t h = 0xcbf29ce484222325ull;
	if (!s->handshake) {
		/* No handshake to name it: the file's name and the stream's place. */
		const char *path = s->cap && s->cap->path ? s->cap->path : "";
		const char *base = strrchr(path, '/');
		h = fnv_str(h, "orbit capture id 1, no handshake");
		h = fnv_str(h, base ? base + 1 : path);
		return mix(fnv_u64(h, index));
	}
	h = fnv_str(h, "orbit capture id 1");
	h = fnv_u64(h, s->pid);
	h = fnv_str(h, s->process);
	h = fnv_str(h, s->host);
	h = fnv_str(h, s->agent);
	h = fnv_u64(h, s->ncmd);
	for (size_t i = 0; i < s->ncmd; i++)
		h = fnv_str(h, s->cmdline[i]);
	h = fnv_u64(h, s->realtime_ns);
	h = fnv_u64(h, s->monotonic_ns);
	h = fnv_u64(h, s->ring_count);
	h = fnv_u64(h, s->page_ring_count);
	h = fnv_u64(h, s->page_size);
	for (uint32_t r = 0; r < s->ring_count && r < ORBIT_MAX_RINGS; r++)
		h = fnv_u64(h, s->ring_start[r]);
	if (dumped != 0) /* only then: the ids of every other capture stay as they were */
		h = fnv_u64(fnv_str(h, "dumped"), dumped);
	return mix(h);
}

uint64_t orbit__rp_ch_capture_id(const struct orbit_rp_stream *s, size_t index)
{
	return capture_id(s, index, s->handshake ? s->dumped : 0);
}

uint64_t orbit__rp_ch_continues(const struct orbit_rp_stream *s, size_t index)
{
	return s->handshake && s->dumped == 1 ? capture_id(s, index, 0) : 0;
}

/* The time it began in the high half (a cleanup can tell old loads from
 * loads in progress), random bits in the low half. */
static uint64_t new_load_id(void)
{
	uint32_t rnd;
	if (getrandom(&rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		rnd = (uint32_t)mix((uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32));
	}
	return (uint64_t)time(NULL) << 32 | rnd;
}

/* ---- rows ---- */

static void common(struct ch *st, struct batch *b)
{
	U16(st->day);
	U64(st->capture_id);
	U64(st->load_id);
}

static void source(struct ch *st, struct batch *b, const struct orbit_rp_location *loc)
{
	put_str(st, b, loc ? loc->file : "", loc && loc->file ? loc->file_len : 0);
	put_str(st, b, loc ? loc->function : "", loc && loc->function ? loc->function_len : 0);
	U32(loc ? loc->line : 0);
}

static void attrs(struct ch *st, struct batch *b, uint32_t flags, uint32_t color, uint64_t group)
{
	int has = (flags & ORBIT_RP_ATTRS) != 0;
	U32(flags);
	U32(has ? color : 0);
	U64(has ? group : 0);
}

static int mine(struct ch *st, const struct orbit_rp_stream *s)
{
	return st->active && s == st->cur;
}

static void ch_scope(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct ch *st = x->state;
	if (!mine(st, s->stream))
		return;
	struct batch *b = st->b[ORBIT_RP_CH_SCOPES];
	int unfinished = (s->flags & ORBIT_RP_UNFINISHED) != 0;
	common(st, b);
	put_str(st, b, s->name, s->name ? s->name_len : 0);
	U64(s->start);
	U64(s->end - s->start); /* unfinished: how long it is known to have been open */
	U64(s->self);
	U32(s->tid);
	U32(s->depth);
	U8(unfinished);
	attrs(st, b, s->flags, s->color, s->group);
	source(st, b, s->loc);
	U64(s->sched ? s->sched->oncpu_ns : 0);
	U64(s->sched ? s->sched->runnable_ns : 0);
	U64(s->sched ? s->sched->blocked_ns : 0);
	row_done(st, ORBIT_RP_CH_SCOPES);
}

static void ch_async(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	struct ch *st = x->state;
	if (!mine(st, s->stream))
		return;
	struct batch *b = st->b[ORBIT_RP_CH_ASYNC];
	int unfinished = (s->flags & ORBIT_RP_UNFINISHED) != 0;
	common(st, b);
	put_str(st, b, s->name, s->name ? s->name_len : 0);
	U64(s->id);
	U64(s->start);
	U64(s->end - s->start);
	U32(s->tid);
	U32(s->end_tid);
	U8(unfinished);
	attrs(st, b, s->flags, s->color, s->group);
	source(st, b, s->loc);
	row_done(st, ORBIT_RP_CH_ASYNC);
}

static void ch_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	struct ch *st = x->state;
	if (!mine(st, v->stream))
		return;
	struct batch *b = st->b[ORBIT_RP_CH_VALUES];
	/* the reconstructor makes values of these kinds only */
	uint8_t kind =
	    orbit__rp_value_integral(v) || v->kind == ORBIT_REC_FLOAT ? v->kind : ORBIT_REC_DOUBLE;
	double d = orbit__rp_value_double(v);
	common(st, b);
	put_str(st, b, v->name, v->name ? v->name_len : 0);
	U64(v->time);
	U32(v->tid);
	U8(kind);
	put_f64(st, b, d);
	U64(v->bits);
	attrs(st, b, v->flags, v->color, v->group);
	source(st, b, v->loc);
	row_done(st, ORBIT_RP_CH_VALUES);
}

static void ch_line(struct orbit_rp_export *x, const struct orbit_rp_line *l)
{
	struct ch *st = x->state;
	if (!mine(st, l->stream))
		return;
	struct batch *b = st->b[ORBIT_RP_CH_LOGS];
	common(st, b);
	U64(l->time);
	U32(l->tid);
	U8((l->flags & ORBIT_RP_MARKER) != 0);
	put_str(st, b, l->text, l->text ? l->len : 0);
	U32(l->flags);
	source(st, b, l->loc);
	row_done(st, ORBIT_RP_CH_LOGS);
}

/* The threads that had events in stream s, with their final names. */
static void thread_rows(struct ch *st, const struct orbit_rp_view *v,
                        const struct orbit_rp_stream *s)
{
	struct batch *b = st->b[ORBIT_RP_CH_THREADS];
	for (uint32_t i = 0; i < v->threads->n && st->active; i++) {
		const struct orbit_rp_thread *t = v->threads->all[i];
		if (t->stream != s)
			continue;
		common(st, b);
		U32(t->pid);
		U32(t->tid);
		put_str(st, b, t->name ? t->name : "", t->name ? t->name_len : 0);
		row_done(st, ORBIT_RP_CH_THREADS);
	}
}

static uint8_t equation_enum(int holds)
{
	return holds < 0 ? 2 : holds ? 1 : 0; /* unknown, holds, fails */
}

static void capture_row(struct ch *st, const struct orbit_rp_stream *s)
{
	struct batch *b = st->b[ORBIT_RP_CH_CAPTURES];
	uint64_t first, last, pr, pp, pd;
	orbit__rp_stream_span(s, &first, &last);
	struct orbit_rp_equation eq;
	orbit__rp_stream_equation(s, &eq);
	struct orbit__loss l = orbit__rp_stream_loss(s);
	orbit__rp_stream_page_loss(s, &pr, &pp, &pd);
	int64_t offset = s->handshake ? (int64_t)s->realtime_ns - (int64_t)s->monotonic_ns : 0;
	const struct orbit_reconstruct_stats *r = &s->rstats;
	common(st, b);
	U32((uint32_t)time(NULL));
	put_cstr(st, b, s->host);
	put_cstr(st, b, s->process);
	U32(s->pid);
	put_cstr_array(st, b, s->cmdline, s->ncmd);
	put_cstr(st, b, s->agent);
	put_cstr(st, b, s->cap ? s->cap->path : "");
	U32(st->index);
	U64(s->handshake ? (uint64_t)((int64_t)first + offset) : 0);
	U64(first);
	U64(last);
	U64(last - first);
	U64(s->realtime_ns);
	U64(s->monotonic_ns);
	U64((uint64_t)offset);
	U64(s->records);
	U64(s->scopes);
	U64(s->spans);
	U64(s->values);
	U64(s->thread_names);
	U64(s->logs);
	U64(s->markers);
	U32(s->threads);
	U64(eq.claimed);
	U64(eq.delivered);
	U64(eq.lost);
	U64(l.lapped);
	U64(l.writer_gone);
	U64(l.backstop);
	U64(l.at_end);
	U64(l.unsent);
	U64(pr);
	U64(pp);
	U8(equation_enum(eq.holds));
	U8(equation_enum(orbit__rp_page_equation(s)));
	U8(s->ended != 0);
	U64(r->unfinished);
	U64(r->unmatched_stops);
	U64(r->incomplete_names);
	U64(r->orphan_continuations);
	U64(r->gaps);
	U64(r->bad_records);
	U64(s->bad_logs);
	U64(r->untrusted_events);
	U64(r->thread_ends);
	U64(r->reused_tids);
	U64(s->untrusted_times);
	U64(s->clock_resets);
	U64(s->cap ? s->cap->damaged : 0);
	U64(s->cap ? s->cap->invalid : 0);
	U8(s->kernel.on != 0);
	U64(orbit__rp_ch_continues(s, st->index));
	row_end(st, ORBIT_RP_CH_CAPTURES, 0); /* sent by the commit */
}

/* ---- the stream's beginning and end ---- */

static void ch_stream(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct ch *st = x->state;
	struct orbit_rp_ch_load *l = st->load;
	st->active = 0;
	st->cur = s;
	st->index = st->nstreams++;
	if (l->failed)
		return;
	st->capture_id = orbit__rp_ch_capture_id(s, st->index);
	st->day = s->handshake ? (uint16_t)(s->realtime_ns / 1000000000ull / 86400u) : 0;
	st->load_id = new_load_id();
	if (st->index == 0)
		l->first_id = st->capture_id;
	int64_t n = captures_with(st, st->capture_id, "asking captures for this capture");
	if (n < 0)
		return;
	if (n > 0) {
		l->streams_present++;
		return;
	}
	memset(st->rows, 0, sizeof st->rows);
	st->active = 1;
}

static void ch_stream_end(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct ch *st = x->state;
	struct orbit_rp_ch_load *l = st->load;
	if (!mine(st, s))
		return;
	thread_rows(st, x->view, s);
	for (int t = 0; t < ORBIT_RP_CH_CAPTURES && st->active; t++)
		send_batch(st, (enum orbit_rp_ch_table)t);
	int64_t n = st->active
	                ? captures_with(st, st->capture_id, "asking captures before the commit")
	                : -1;
	if (n > 0) {
		/* Another loader committed it meanwhile: this load's rows stay
		 * uncommitted, counted nowhere. */
		l->streams_present++;
	} else if (n == 0) {
		capture_row(st, s);
		if (st->active && send_batch(st, ORBIT_RP_CH_CAPTURES) == 0 &&
		    sync_sender(st) == 0) {
			l->streams_loaded++;
			l->streams_incomplete += !s->ended;
			for (int t = 0; t < ORBIT_RP_CH_TABLES; t++)
				l->rows[t] += st->rows[t];
		}
	}
	st->active = 0;
}

/* ---- the exporter ---- */

static int ch_begin(struct orbit_rp_export *x)
{
	struct ch *st = x->state;
	st->opt = x->view->o->clickhouse;
	st->load = st->opt->load;
	for (int t = 0; t < ORBIT_RP_CH_TABLES; t++) {
		const struct orbit_rp_ch_table_def *d = &orbit__rp_ch_tables[t];
		for (int k = 0; k < 2; k++) {
			struct batch *b = &st->pair[t][k];
			b->ncols = d->ncols;
			b->array_col = -1;
			for (size_t i = 0; i < d->ncols; i++)
				if (strcmp(d->cols[i].type, "Array(String)") == 0)
					b->array_col = (int)i;
			if ((b->col = calloc(d->ncols, sizeof *b->col)) == NULL)
				return -1;
		}
		st->b[t] = &st->pair[t][0];
		st->insert[t] = orbit__rp_ch_insert_sql((enum orbit_rp_ch_table)t);
		if (st->insert[t] == NULL)
			return -1;
	}
	st->sender = orbit__rp_ch_sender_start(st->load->http);
	return st->sender ? 0 : -1;
}

static void ch_free(struct orbit_rp_export *x)
{
	struct ch *st = x->state;
	orbit__rp_ch_sender_stop(st->sender); /* the INSERT in flight ends first */
	for (int t = 0; t < ORBIT_RP_CH_TABLES; t++) {
		free(st->insert[t]);
		for (int k = 0; k < 2; k++) {
			struct batch *b = &st->pair[t][k];
			for (size_t i = 0; b->col && i < b->ncols; i++)
				free(b->col[i].p);
			free(b->col);
			free(b->nested.p);
		}
	}
	free(st->block.p);
}

static const char *ch_wanted(const struct orbit_replay_options *o)
{
	return o->clickhouse && o->clickhouse->load ? "clickhouse" : NULL;
}

const struct orbit_rp_exporter orbit__rp_export_clickhouse = {
    .name = "clickhouse",
    .wanted = ch_wanted,
    .needs = ORBIT_RP_NEED_STDOUT | ORBIT_RP_NEED_SCHED, /* no file: its output is the server */
    .state_size = sizeof(struct ch),
    .begin = ch_begin,
    .stream = ch_stream,
    .stream_end = ch_stream_end,
    .scope = ch_scope,
    .async = ch_async,
    .value = ch_value,
    .line = ch_line,
    .free = ch_free,
};
