/*
 * replay_pages.c — --pages FILE: every page header and record of a raw
 * ftrace page file (a copy of per_cpu/cpuN/trace_pipe_raw, or pages of our
 * page rings), one per line, in the layout of libtraceevent's kbuffer dump
 * that tests/data/sample-pages.expected.txt holds:
 *
 *   page 0: page_ts=282039454828 commit=0xff0 size=4080 missed_flag=0 stored_flag=0
 *     missed_events=0 data_size=4080
 *     rec   0 ts=282039454828 (+0) off=16 payload_len=64 common_type=372
 *     records=60
 *   total pages=4 records=153
 *
 * ts is absolute; (+N) is the time since the previous record of the file;
 * off is the record header's byte offset in its page; common_type is the
 * first u16 of the payload. missed_events is 0 (none), -1 (lost, count
 * unknown) or the stored count, as kbuffer reports it. A page the parser
 * rejects gets an "error" line and the run exits 2.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "record.h"
#include "replay_pages.h"

struct pages_state {
	uint64_t prev;
	int have_prev;
	uint64_t records;
	int damaged;
};

struct raw {
	uint32_t data, type0, padding, extend, stamp;
	uint32_t hist[ORBIT__FTRACE_TYPE_DATA_MAX + 1];
};

/* Bytes of the record at off (0: stop), counting it; every read checked
 * against end even though the parser accepted the page. */
static uint32_t raw_record(struct orbit_rp_out *o, const uint8_t *p, uint32_t off, uint32_t end,
                           struct raw *r)
{
	uint32_t word = orbit__le32(p + off), tl = word & 31, delta = word >> 5;
	uint32_t next = off + 8 <= end ? orbit__le32(p + off + 4) : 0;
	if (tl >= 1 && tl <= ORBIT__FTRACE_TYPE_DATA_MAX) {
		r->data++;
		r->hist[tl]++;
		return 4 + tl * 4;
	}
	if (off + 8 > end)
		return 0;
	switch (tl) {
	case 0:
		r->data++;
		r->type0++;
		r->hist[0]++;
		return next < 4 ? 0 : 8 + ((next - 4 + 3) & ~3u);
	case ORBIT__FTRACE_TYPE_PADDING:
		r->padding++;
		return delta == 0 || next > end - off - 4 ? 0 : 4 + next;
	default:
		if (tl == ORBIT__FTRACE_TYPE_TIME_EXTEND)
			r->extend++;
		else
			r->stamp++;
		orbit__rp_out_printf(o, "  raw: %s at %" PRIu32 " value=%" PRIu64 "\n",
		                     tl == ORBIT__FTRACE_TYPE_TIME_EXTEND ? "TIME_EXTEND"
		                                                          : "TIME_STAMP",
		                     off, (uint64_t)next << ORBIT__FTRACE_TS_BITS | delta);
		return 8;
	}
}

static void raw_lines(struct orbit_rp_out *o, const uint8_t *page, size_t len,
                      const struct orbit__ftrace_header *h)
{
	struct raw r;
	uint32_t end = ORBIT__FTRACE_HEADER + h->size, off = ORBIT__FTRACE_HEADER;
	memset(&r, 0, sizeof r);
	while (off + 4 <= end) {
		uint32_t n = raw_record(o, page, off, end, &r);
		if (n == 0 || n > end - off)
			break;
		off += n;
	}
	orbit__rp_out_printf(o,
	                     "  raw: data=%" PRIu32 " (type_len0=%" PRIu32 ") padding=%" PRIu32
	                     " time_extend=%" PRIu32 " time_stamp=%" PRIu32 " unused_tail=%zu\n",
	                     r.data, r.type0, r.padding, r.extend, r.stamp, len - end);
	orbit__rp_out_s(o, "  raw: type_len histogram:");
	for (uint32_t i = 0; i <= ORBIT__FTRACE_TYPE_DATA_MAX; i++)
		if (r.hist[i])
			orbit__rp_out_printf(o, " %" PRIu32 ":%" PRIu32, i, r.hist[i]);
	orbit__rp_out_c(o, '\n');
}

static void page_header(struct orbit_rp_out *o, uint64_t n, const uint8_t *page, size_t len,
                        const struct orbit__ftrace_header *h)
{
	int64_t missed = !h->missed ? 0 : !h->missed_stored ? -1 : (int64_t)h->missed_count;
	orbit__rp_out_printf(o,
	                     "page %" PRIu64 ": page_ts=%" PRIu64 " commit=0x%" PRIx64
	                     " size=%" PRIu32 " missed_flag=%u stored_flag=%u\n",
	                     n, h->timestamp, h->commit_raw, h->size, h->missed, h->missed_stored);
	raw_lines(o, page, len, h);
	orbit__rp_out_printf(
	    o, "  kbuffer: subbuf_ts=%" PRIu64 " missed_events=%" PRId64 " data_size=%" PRIu32 "\n",
	    h->timestamp, missed, h->size);
}

static void page_record(struct orbit_rp_out *o, struct pages_state *st, uint32_t idx,
                        const struct orbit__ftrace_record *r)
{
	uint64_t delta = st->have_prev ? r->time - st->prev : 0;
	orbit__rp_out_printf(o,
	                     "  rec %3" PRIu32 " ts=%" PRIu64 " (+%" PRIu64 ") off=%" PRIu32
	                     " payload_len=%" PRIu32 " common_type=",
	                     idx, r->time, delta, r->offset, r->len);
	if (r->len >= 2)
		orbit__rp_out_u64(o, orbit__le16(r->data));
	else
		orbit__rp_out_c(o, '-');
	orbit__rp_out_c(o, '\n');
	st->prev = r->time;
	st->have_prev = 1;
}

static void one_page(struct orbit_rp_out *o, struct orbit_rp_report *rep, struct pages_state *st,
                     const char *path, uint64_t n, uint64_t at, const uint8_t *page, size_t len)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record r;
	int err = orbit__ftrace_open(&it, page, len, &h);
	uint32_t idx = 0;
	if (err == 0) {
		page_header(o, n, page, len, &h);
		while ((err = orbit__ftrace_next(&it, &r)) == 1)
			page_record(o, st, idx++, &r);
	} else {
		orbit__rp_out_printf(o, "page %" PRIu64 ":\n", n);
	}
	if (err < 0) {
		orbit__rp_out_printf(o, "  error at byte %" PRIu32 ": %s\n", it.err_off,
		                     orbit__ftrace_strerror(err));
		orbit__rp_problem(rep,
		                  "%s: page %" PRIu64 " (file offset %" PRIu64
		                  "): %s at byte %" PRIu32 " of the page",
		                  path, n, at, orbit__ftrace_strerror(err), it.err_off);
		st->damaged = 1;
	}
	orbit__rp_out_printf(o, "  kbuffer: %" PRIu32 " records\n", idx);
	st->records += idx;
}

int orbit__rp_pages(struct orbit_rp_out *out, struct orbit_rp_report *rep, const char *path,
                    uint32_t page_size)
{
	struct pages_state st = {0, 0, 0, 0};
	FILE *f = fopen(path, "rbe");
	if (f == NULL) {
		orbit__rp_problem(rep, "%s: %s", path, strerror(errno));
		return ORBIT_REPLAY_DAMAGED;
	}
	uint8_t *page = malloc(page_size);
	if (page == NULL) {
		fclose(f);
		orbit__rp_problem(rep, "%s: out of memory", path);
		return ORBIT_REPLAY_DAMAGED;
	}
	uint64_t n = 0;
	size_t got;
	while ((got = fread(page, 1, page_size, f)) > 0) {
		one_page(out, rep, &st, path, n, n * page_size, page, got);
		n++;
	}
	if (ferror(f)) {
		orbit__rp_problem(rep, "%s: read error after %" PRIu64 " pages", path, n);
		st.damaged = 1;
	}
	fclose(f);
	free(page);
	orbit__rp_out_printf(out, "total pages=%" PRIu64 " records=%" PRIu64 "\n", n, st.records);
	return st.damaged ? ORBIT_REPLAY_DAMAGED : ORBIT_REPLAY_OK;
}
