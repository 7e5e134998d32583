/* ftrace_page.c — hostile-input decoder for ftrace ring-buffer pages; see
 * ftrace_page.h for the layout. Every length read from the page is checked
 * against the commit size before it is used, and every step moves forward by
 * at least 4 bytes, so a page of n bytes costs at most n/4 steps. The
 * retimer runs the decoder over the whole page before it writes a byte. */
#include "ftrace_page.h"

#include <string.h>

/* Little-endian loads that need no alignment. */
static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t load_le64(const uint8_t *p)
{
	return (uint64_t)load_le32(p) | (uint64_t)load_le32(p + 4) << 32;
}

static int fail(struct orbit__ftrace_iter *it, int err, uint32_t off)
{
	it->err = err;
	it->err_off = off;
	return err;
}

int orbit__ftrace_open(struct orbit__ftrace_iter *it, const void *page, size_t len,
                       struct orbit__ftrace_header *hdr)
{
	const uint8_t *p = page;

	memset(it, 0, sizeof(*it));
	memset(hdr, 0, sizeof(*hdr));
	it->page = p;
	if (len < ORBIT__FTRACE_HEADER)
		return fail(it, ORBIT__FTRACE_ESHORT, 0);
	if (len > UINT32_MAX)
		len = UINT32_MAX;

	hdr->timestamp = load_le64(p);
	hdr->commit_raw = load_le64(p + 8);
	hdr->size = (uint32_t)(hdr->commit_raw & ORBIT__FTRACE_SIZE_MASK);
	hdr->missed = (hdr->commit_raw & ORBIT__FTRACE_MISSED_EVENTS) != 0;
	hdr->missed_stored = (hdr->commit_raw & ORBIT__FTRACE_MISSED_STORED) != 0;
	if (hdr->size > len - ORBIT__FTRACE_HEADER)
		return fail(it, ORBIT__FTRACE_ESIZE, 8);

	it->end = ORBIT__FTRACE_HEADER + hdr->size;
	if (hdr->missed_stored) {
		/* The kernel stores an unsigned long after the records. */
		if (len - it->end < 8)
			return fail(it, ORBIT__FTRACE_ELOSTCOUNT, it->end);
		hdr->missed_count = load_le64(p + it->end);
	}
	it->off = ORBIT__FTRACE_HEADER;
	it->time = hdr->timestamp;
	return 0;
}

/* The u32 after a record header, if commit covers it. */
static int load_arg(struct orbit__ftrace_iter *it, uint32_t *arg)
{
	if (it->end - it->off < 8)
		return fail(it, ORBIT__FTRACE_EHEADER, it->off);
	*arg = load_le32(it->page + it->off + 4);
	return 0;
}

/* Steps over one non-data record. Returns 0 to go on, 1 at the end of the
 * records (padding that fills the rest), or an error. */
static int skip_meta(struct orbit__ftrace_iter *it, uint32_t type_len, uint32_t delta)
{
	uint32_t arg;
	uint64_t value;
	int err;

	if (type_len == ORBIT__FTRACE_TYPE_PADDING && delta == 0)
		return 1;
	err = load_arg(it, &arg);
	if (err < 0)
		return err;
	switch (type_len) {
	case ORBIT__FTRACE_TYPE_PADDING:
		/* kbuffer: the length counts from after the header word. */
		if (arg < 4 || arg > it->end - it->off - 4)
			return fail(it, ORBIT__FTRACE_EPADDING, it->off);
		it->time += delta;
		it->off += 4 + arg;
		return 0;
	case ORBIT__FTRACE_TYPE_TIME_EXTEND:
		it->time += (uint64_t)arg << ORBIT__FTRACE_TS_BITS | delta;
		break;
	default: /* TIME_STAMP: bits 0..58 absolute, the upper 5 kept. */
		value = (uint64_t)arg << ORBIT__FTRACE_TS_BITS | delta;
		it->time = value | (it->time & (0x1full << 59));
		break;
	}
	it->off += 8;
	return 0;
}

/* Decodes the data record at it->off. */
static int take_data(struct orbit__ftrace_iter *it, uint32_t type_len, uint32_t delta,
                     struct orbit__ftrace_record *rec)
{
	uint32_t head = 4, len = type_len * 4, arg;
	int err;

	if (type_len == 0) {
		err = load_arg(it, &arg);
		if (err < 0)
			return err;
		if (arg <= 4)
			return fail(it, ORBIT__FTRACE_EZERO, it->off);
		if (arg > UINT32_MAX - 3)
			return fail(it, ORBIT__FTRACE_ELENGTH, it->off);
		len = (arg - 4 + 3) & ~3u;
		head = 8;
	}
	if (len > it->end - it->off - head)
		return fail(it, ORBIT__FTRACE_ELENGTH, it->off);

	it->time += delta;
	rec->time = it->time;
	rec->offset = it->off;
	rec->type_len = type_len;
	rec->data = it->page + it->off + head;
	rec->len = len;
	it->off += head + len;
	return 1;
}

int orbit__ftrace_next(struct orbit__ftrace_iter *it, struct orbit__ftrace_record *rec)
{
	while (it->err == 0) {
		uint32_t word, type_len, delta;
		int r;

		if (it->off >= it->end)
			return 0;
		if (it->end - it->off < 4)
			return fail(it, ORBIT__FTRACE_EHEADER, it->off);
		word = load_le32(it->page + it->off);
		type_len = word & ORBIT__FTRACE_TYPE_MASK;
		delta = word >> ORBIT__FTRACE_TYPE_BITS;
		if (type_len <= ORBIT__FTRACE_TYPE_DATA_MAX)
			return take_data(it, type_len, delta, rec);
		r = skip_meta(it, type_len, delta);
		if (r == 1) {
			it->off = it->end;
			return 0;
		}
	}
	return it->err;
}

const char *orbit__ftrace_strerror(int err)
{
	switch (err) {
#define ORBIT__FTRACE_ERR_TEXT(name, value, text)                                                  \
	case name:                                                                                 \
		return text;
		ORBIT__FTRACE_ERRORS(ORBIT__FTRACE_ERR_TEXT)
#undef ORBIT__FTRACE_ERR_TEXT
	}
	return NULL;
}

/* ---- retiming (the agent's tick-to-ns conversion) ---- */

#define DELTA_LIMIT (1ull << ORBIT__FTRACE_TS_BITS)
#define EXTEND_LIMIT (1ull << 59) /* 27 header bits + the 32-bit argument */

static void store_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static void store_le64(uint8_t *p, uint64_t v)
{
	store_le32(p, (uint32_t)v);
	store_le32(p + 4, (uint32_t)(v >> 32));
}

/* A TIME_EXTEND or TIME_STAMP at p carrying the 59-bit value v. */
static void store_time(uint8_t *p, uint32_t type_len, uint64_t v)
{
	store_le32(p, type_len | (uint32_t)(v & (DELTA_LIMIT - 1)) << ORBIT__FTRACE_TYPE_BITS);
	store_le32(p + 4, (uint32_t)(v >> ORBIT__FTRACE_TS_BITS));
}

static void store_delta(uint8_t *p, uint32_t delta)
{
	store_le32(p, (load_le32(p) & ORBIT__FTRACE_TYPE_MASK) | delta << ORBIT__FTRACE_TYPE_BITS);
}

/* Bytes of the record at p, on a page the decoder accepted. */
static uint32_t record_size(const uint8_t *p, uint32_t type_len)
{
	if (type_len == 0)
		return 8 + ((load_le32(p + 4) - 4 + 3) & ~3u);
	if (type_len <= ORBIT__FTRACE_TYPE_DATA_MAX)
		return 4 + type_len * 4;
	if (type_len == ORBIT__FTRACE_TYPE_PADDING)
		return 4 + load_le32(p + 4);
	return 8;
}

int orbit__ftrace_retime(uint8_t *page, size_t len, uint64_t (*to_ns)(void *ctx, uint64_t ticks),
                         void *ctx)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	uint64_t old_time, new_time;
	uint32_t off, end, ext = 0; /* first TIME_EXTEND since the last record */
	int r, clamped = 0;

	/* Validate the whole page first, so the walk below can trust every
	 * length and a rejected page is left as it was. */
	r = orbit__ftrace_open(&it, page, len, &hdr);
	while (r == 0 && (r = orbit__ftrace_next(&it, &rec)) == 1)
		r = 0;
	if (r < 0)
		return r;

	end = ORBIT__FTRACE_HEADER + hdr.size;
	old_time = hdr.timestamp;
	new_time = to_ns(ctx, old_time);
	store_le64(page, new_time);
	for (off = ORBIT__FTRACE_HEADER; off < end;) {
		uint8_t *p = page + off;
		uint32_t word = load_le32(p), type_len = word & ORBIT__FTRACE_TYPE_MASK,
		         delta = word >> ORBIT__FTRACE_TYPE_BITS;
		uint64_t want, d;

		if (type_len == ORBIT__FTRACE_TYPE_PADDING && delta == 0)
			break; /* the rest is padding */
		if (type_len == ORBIT__FTRACE_TYPE_PADDING) {
			/* Its delta also marks it as not the last record: keep
			 * it, and count it on both timelines. */
			old_time += delta;
			new_time += delta;
		} else if (type_len == ORBIT__FTRACE_TYPE_TIME_EXTEND) {
			old_time += (uint64_t)load_le32(p + 4) << ORBIT__FTRACE_TS_BITS | delta;
			if (ext == 0)
				ext = off;
			else
				store_time(p, type_len, 0); /* the first one carries it */
		} else if (type_len == ORBIT__FTRACE_TYPE_TIME_STAMP) {
			d = (uint64_t)load_le32(p + 4) << ORBIT__FTRACE_TS_BITS | delta;
			old_time = d | (old_time & (0x1full << 59));
			want = to_ns(ctx, old_time);
			if (want < new_time) {
				want = new_time;
				clamped++;
			}
			store_time(p, type_len, want & (EXTEND_LIMIT - 1));
			new_time = (want & (EXTEND_LIMIT - 1)) | (new_time & ~(EXTEND_LIMIT - 1));
			if (ext != 0)
				store_time(page + ext, ORBIT__FTRACE_TYPE_TIME_EXTEND, 0);
			ext = 0;
		} else {
			old_time += delta;
			want = to_ns(ctx, old_time);
			if (want < new_time) {
				want = new_time;
				clamped++;
			}
			d = want - new_time;
			if (d < DELTA_LIMIT) {
				store_delta(p, (uint32_t)d);
				if (ext != 0)
					store_time(page + ext, ORBIT__FTRACE_TYPE_TIME_EXTEND, 0);
			} else if (ext != 0) {
				if (d >= EXTEND_LIMIT) {
					d = EXTEND_LIMIT - 1;
					clamped++;
				}
				store_time(page + ext, ORBIT__FTRACE_TYPE_TIME_EXTEND, d);
				store_delta(p, 0);
			} else {
				d = DELTA_LIMIT - 1;
				clamped++;
				store_delta(p, (uint32_t)d);
			}
			new_time += d;
			ext = 0;
		}
		off += record_size(p, type_len);
	}
	return clamped;
}
