/*
 * replay_html.h — the parts of --html below the exporter
 * (replay_export_html.c): the page's data block, its string table, the
 * spans the page keeps under --html-max-scopes, its processes, and the
 * page's template and code, which the build embeds from replay/html/
 * (html/embed.cmake). Calls go down this list, never up:
 *
 *   replay_export_html.c        the exporter: the events, kept as they come
 *   replay_export_html_tables.c at the end: the events in page order, as tables
 *   replay_export_html_keep.c   the N longest spans, and where the others were
 *   replay_export_html_procs.c  the page's processes, and its tables' growth
 *   replay_export_html_data.c   base64 data block of typed tables, strings
 *   replay_export_html_page.c   the template, its code and styles, the data
 */
#ifndef ORBIT_REPLAY_HTML_H
#define ORBIT_REPLAY_HTML_H

#include <stddef.h>
#include <stdint.h>

#include "replay_internal.h"

/* ---- the data block (replay_export_html_data.c; read by html/data.js) ---- */

/* Column types: the letters of Python's struct module. */
enum orbit_rp_html_type {
	ORBIT_RP_HTML_U8 = 'B',
	ORBIT_RP_HTML_U16 = 'H',
	ORBIT_RP_HTML_U32 = 'I',
	ORBIT_RP_HTML_F64 = 'd',
};

/* Base64 written as it comes, in lines of ORBIT_RP_HTML_B64_LINE chars. */
struct orbit_rp_html_data {
	struct orbit_rp_out *o;
	uint8_t carry[3]; /* the last group's first written % 3 bytes */
	unsigned line;    /* chars on the current line */
	uint64_t written; /* bytes before encoding: the block's size */
	uint64_t col;     /* bytes of the open column */
	uint32_t rows;    /* rows of the open table, for its columns */
	char type;        /* of the open column */
};

#define ORBIT_RP_HTML_MAGIC "ORBITPG1"

/* Starts the block: magic and the number of tables that follow. */
void orbit__rp_html_data_begin(struct orbit_rp_html_data *d, struct orbit_rp_out *o,
                               uint32_t tables);
/* Ends it: the last base64 group and its padding. */
void orbit__rp_html_data_end(struct orbit_rp_html_data *d);
/* A table of `rows` rows and `cols` columns; each column then follows:
 * col, one value per row of the column's type, col_end. */
void orbit__rp_html_table(struct orbit_rp_html_data *d, const char tag[4], uint32_t rows,
                          uint32_t cols);
void orbit__rp_html_col(struct orbit_rp_html_data *d, const char name[4], char type);
void orbit__rp_html_col_end(struct orbit_rp_html_data *d);
void orbit__rp_html_u8(struct orbit_rp_html_data *d, uint8_t v);
void orbit__rp_html_u16(struct orbit_rp_html_data *d, uint16_t v);
void orbit__rp_html_u32(struct orbit_rp_html_data *d, uint32_t v);
void orbit__rp_html_f64(struct orbit_rp_html_data *d, double v);
void orbit__rp_html_bytes(struct orbit_rp_html_data *d, const void *p, size_t n);

/* ---- the string table: every text of the page, by index ---- */

#define ORBIT_RP_HTML_NO_STR UINT32_MAX
#define ORBIT_RP_HTML_STR_BYTES (256u << 20) /* past it, texts are left out */

struct orbit_rp_html_strs {
	char *bytes;
	size_t len, cap;
	uint32_t *off; /* n + 1 offsets into bytes */
	uint32_t n, ncap;
	uint32_t *slots; /* interned strings: index + 1, open addressing */
	size_t mask;
	uint32_t nslots_used;
	uint64_t refused; /* strings left out past the limit or out of memory */
};

/* A new string (not looked up); its index, or ORBIT_RP_HTML_NO_STR. */
uint32_t orbit__rp_html_str_add(struct orbit_rp_html_strs *t, const char *s, size_t n);
/* The same string gets the same index. */
uint32_t orbit__rp_html_str_intern(struct orbit_rp_html_strs *t, const char *s, size_t n);
/* Tables STRO (offsets) and STRB (bytes). */
void orbit__rp_html_strs_write(struct orbit_rp_html_data *d, const struct orbit_rp_html_strs *t);
void orbit__rp_html_strs_free(struct orbit_rp_html_strs *t);

/* ---- the spans the page keeps (replay_export_html_keep.c) ---- */

/* One kept scope or async span. depth_flags: depth in the low 24 bits
 * (deeper is clamped), the event's flags (enum orbit_rp_flag) above. */
struct orbit_rp_html_span {
	uint64_t start, end, self;
	uint32_t lane; /* the page's lane: a thread's, or a process's async lane */
	uint32_t site; /* name, colour, location (replay_export_html.c) */
	uint32_t depth_flags;
	uint32_t extra; /* index into the extras, or ORBIT_RP_HTML_NO_EXTRA */
};

#define ORBIT_RP_HTML_DEPTH_MAX ((1u << 24) - 1)
#define ORBIT_RP_HTML_NO_EXTRA UINT32_MAX

/* What few spans carry: a group id, an async span's threads, the split
 * of its time from the kernel's scheduling. */
struct orbit_rp_html_extra {
	uint64_t group;
	uint32_t tid, end_tid; /* end_tid: the free list's link while unused */
	uint8_t has_sched;
	struct orbit_rp_sched_time sched;
};

/* Where the spans left out were: per lane, counts in DENSITY_BINS bins of
 * equal width that doubles to take in a time outside them. */
#define ORBIT_RP_HTML_DENSITY_BINS 256u
#define ORBIT_RP_HTML_DENSITY_LANES 4096u /* lanes that get bins; others count only */

struct orbit_rp_html_density {
	uint64_t lo, width; /* bins cover [lo, lo + BINS * width) */
	uint32_t count[ORBIT_RP_HTML_DENSITY_BINS];
};

struct orbit_rp_html_keep {
	size_t cap; /* 0: keep every span */
	struct orbit_rp_html_span *spans;
	size_t n, alloc;
	uint32_t *heap; /* with a cap: indexes of spans, shortest on top */
	struct orbit_rp_html_extra *extras;
	uint32_t nextra, extra_alloc, free_extra; /* free list through .end_tid */
	uint64_t merged;                          /* spans left out */
	uint64_t merged_max;                      /* the longest of them, ns */
	uint64_t *lane_merged;                    /* per lane */
	struct orbit_rp_html_density **density;
	uint32_t nlanes, ndensity;
	int oom;
};

void orbit__rp_html_keep_init(struct orbit_rp_html_keep *k, size_t cap);
/* Offers a span; its extra (may be NULL) is copied when it is kept.
 * Returns 0, or -1 when out of memory. */
int orbit__rp_html_keep(struct orbit_rp_html_keep *k, const struct orbit_rp_html_span *s,
                        const struct orbit_rp_html_extra *extra);
void orbit__rp_html_keep_free(struct orbit_rp_html_keep *k);
/* Drops the finished spans that ended before cutoff (the live view's
 * history: replay_export_html.c), their extras with them; the rest keep
 * their order, and with a cap the heap is rebuilt. */
void orbit__rp_html_keep_evict(struct orbit_rp_html_keep *k, uint64_t cutoff);

/* ---- the events kept (replay_export_html.c) ---- */

#define ORBIT_RP_HTML_BIG 0xffffffffu /* a u32 column's "see elsewhere" */

/* Kinds of lanes (LANE.kind on the page). */
enum orbit_rp_html_lane_kind {
	ORBIT_RP_HTML_THREAD = 1, /* a thread: its scopes and log lines */
	ORBIT_RP_HTML_ASYNC = 2,  /* a process's async spans */
	ORBIT_RP_HTML_VALUE = 3,  /* a value track */
};

struct orbit_rp_html_proc {
	uint32_t pid;
	uint32_t name, host, cmd;
	uint32_t async_lane; /* + 1; 0: none yet */
};

struct orbit_rp_html_lane {
	uint8_t kind;
	uint8_t attrs;
	uint32_t proc;
	uint32_t tid;
	uint32_t name; /* a value track's name */
	uint32_t color;
	struct orbit_rp_thread *th; /* its word export[] holds the lane + 1 */
};

struct orbit_rp_html_site {
	uint32_t name, color, file, func, line;
	uint8_t attrs;
	const struct orbit_rp_location *loc;
};

struct orbit_rp_html_value {
	uint64_t t;
	double v;
	uint32_t lane;
};

struct orbit_rp_html_line {
	uint64_t t;
	uint32_t lane, text;
	uint8_t flags;
};

struct orbit_rp_html_loss {
	uint64_t from, to, count;
	uint32_t proc, ring;
	uint8_t flags;
};

/* An open-addressing map from a 64-bit hash to ids; equality is the
 * caller's (the hash may collide). */
struct orbit_rp_html_idmap {
	uint64_t *hash;
	uint32_t *id; /* id + 1; 0: empty */
	size_t mask;
	uint32_t n;
};

/* Values and log lines past their limit are thinned, not cut off: when
 * the limit is reached every lane keeps every other one of what it has,
 * and from then on every stride-th of what comes, so that a plot still
 * covers the whole capture (replay_export_html.c). */
struct orbit_rp_html_thin {
	size_t limit;    /* 0: keep all */
	uint32_t stride; /* a lane keeps every stride-th of its events */
	uint64_t dropped;
	uint32_t *seen; /* per lane: events offered */
	uint32_t nlanes;
};

/* The exporter's state: every event kept so far, and what they refer to. */
struct orbit_rp_html {
	struct orbit_rp_html_strs strs;
	struct orbit_rp_html_keep keep;
	struct orbit_rp_html_proc *procs;
	uint32_t nprocs, procs_alloc, last_proc;
	struct orbit_rp_html_lane *lanes;
	uint32_t nlanes, lanes_alloc;
	struct orbit_rp_html_site *sites;
	uint32_t nsites, sites_alloc;
	struct orbit_rp_html_idmap site_map, value_map;
	uint32_t *name_str; /* core name id -> string + 1 */
	uint32_t nname_str;
	struct orbit_rp_html_value *values;
	size_t nvalues, values_alloc;
	struct orbit_rp_html_thin values_thin;
	struct orbit_rp_html_line *lines;
	size_t nlines, lines_alloc;
	struct orbit_rp_html_thin lines_thin;
	uint64_t texts_dropped, text_bytes;
	struct orbit_rp_html_loss *losses;
	uint32_t nlosses, losses_alloc;
	uint64_t losses_dropped;
	int oom;
	struct orbit_rp_html_lane value_key; /* what value_eq and site_eq compare with */
	struct orbit_rp_html_site site_key;
	struct orbit_rp_html_tables *tables; /* while they are written (..._tables.c) */
	/* The live view (options.html_live): the time origin of its blocks
	 * (its first stream's Handshake) and where its history starts. */
	int live, live_dirty; /* dirty: an event came since the last block */
	uint64_t live_origin, live_from, live_next;
	uint64_t live_cost_ns; /* the last block's, of the thread's CPU time */
};

/* A live block is built at most every PACE times what the last one cost. */
#define ORBIT_RP_HTML_LIVE_PACE 50u
/* Rows of a live block's statistics: the names of the largest totals. */
#define ORBIT_RP_HTML_LIVE_STATS 1000u

struct orbit_rp_export;

/* ---- the processes (replay_export_html_procs.c) ---- */

/* The process of pid (added if new), or ORBIT_RP_HTML_BIG. */
uint32_t orbit__rp_html_proc_of(struct orbit_rp_html *h, uint32_t pid);
/* Room for element n of an array of *alloc elements of size bytes (it
 * doubles, from 1024): 0, or -1 without memory. */
int orbit__rp_html_grow(void **p, size_t *alloc, size_t n, size_t size);
int orbit__rp_html_grow32(void **p, uint32_t *alloc, uint32_t n, size_t size);

/* The string of s cut to max bytes, interned. */
static inline uint32_t orbit__rp_html_str_cut(struct orbit_rp_html *h, const char *s, size_t n,
                                              size_t max)
{
	return orbit__rp_html_str_intern(&h->strs, s, n < max ? n : max);
}

/* ---- at the end (replay_export_html_tables.c) ---- */

/* The events in page order, written as the page's tables (their list is
 * that file's opening comment) into the page on x's output, or with block
 * only the data block, on block. The events stay as they were but in page
 * order, and what refers to lanes (threads' words, value tracks, async
 * lanes) follows their new numbers, so that more can come. Returns 0, or
 * -1 when out of memory. */
int orbit__rp_html_write(struct orbit_rp_html *h, const struct orbit_rp_export *x,
                         struct orbit_rp_out *block);

/* ---- the page (replay_export_html_page.c) ---- */

/* The embedded page (generated from replay/html/ by html/embed.cmake). */
extern const unsigned char orbit__rp_html_template[];
extern const size_t orbit__rp_html_template_len;
extern const unsigned char orbit__rp_html_css[];
extern const size_t orbit__rp_html_css_len;
extern const unsigned char orbit__rp_html_js[];
extern const size_t orbit__rp_html_js_len;

/* Writes the page: the template with its styles, code and a fresh nonce
 * for the Content-Security-Policy, and where the data goes, data(ctx, o).
 * data NULL: the live view's page (orbit-collector --ui), with no data,
 * allowed to fetch its blocks from the server it came from. */
void orbit__rp_html_page(struct orbit_rp_out *o, void (*data)(void *ctx, struct orbit_rp_out *o),
                         void *ctx);

#endif
