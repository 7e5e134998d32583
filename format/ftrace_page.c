/* ftrace_page.c — hostile-input decoder for ftrace ring-buffer pages; see
 * ftrace_page.h for the layout. Every length read from the page is checked
 * against the commit size before it is used, and every step moves forward by
 * at least 4 bytes, so a page of n bytes costs at most n/4 steps. */
#include "ftrace_page.h"

#include <string.h>

/* Little-endian loads that need no alignment. */
static uint32_t load_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
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
		type_len = word & 0x1f;
		delta = word >> 5;
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
#define ORBIT__FTRACE_ERR_TEXT(name, value, text)                              \
	case name:                                                             \
		return text;
		ORBIT__FTRACE_ERRORS(ORBIT__FTRACE_ERR_TEXT)
#undef ORBIT__FTRACE_ERR_TEXT
	}
	return NULL;
}
