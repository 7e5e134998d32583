/*
 * replay_export_html_data.c — the data block of the --html page: typed
 * tables, written as base64 while they are produced, and the page's string
 * table. html/data.js reads it back into typed arrays without copying.
 *
 * The block, before base64 (all integers little-endian, every offset a
 * multiple of 8, so that a column is a typed array view of the decoded
 * bytes):
 *
 *   "ORBITPG1"  u32 tables  u32 0
 *   each table: tag[4]  u32 rows  u32 columns  u32 0
 *     each column: name[4]  u8 type ('B' u8, 'H' u16, 'I' u32, 'd' f64)
 *                  3 bytes 0, then rows values of the type, zero-padded
 *                  to a multiple of 8 bytes
 *
 * Names of tables and columns are four ASCII letters; which ones the page
 * has is said in replay_export_html.c, where they are written. Texts live
 * in the string table, STRO (offsets, n + 1 rows) and STRB (the UTF-8
 * bytes, as the capture gave them; the page's decoder replaces what is not
 * UTF-8): a column refers to a string by index, UINT32_MAX for none.
 *
 * Base64 cannot hold '<', so the block can never close its <script>
 * element, whatever the capture's names hold.
 */
#include <stdlib.h>
#include <string.h>

#include "replay_html.h"

#define B64_LINE 1024u /* chars per line of the block */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* ---- base64, as the bytes come ---- */

static void b64_group(struct orbit_rp_html_data *d, const uint8_t *g)
{
	char q[5] = {b64[g[0] >> 2], b64[(g[0] & 3) << 4 | g[1] >> 4],
	             b64[(g[1] & 15) << 2 | g[2] >> 6], b64[g[2] & 63], '\n'};
	d->line += 4;
	int nl = d->line >= B64_LINE;
	if (nl)
		d->line = 0;
	orbit__rp_out_write(d->o, q, nl ? 5 : 4);
}

/* The bytes of the last group begun, 0..2, wait in carry: as many as the
 * block's bytes so far leave over a multiple of 3. */
void orbit__rp_html_bytes(struct orbit_rp_html_data *d, const void *p, size_t n)
{
	const uint8_t *s = p;
	unsigned k = (unsigned)(d->written % 3);
	d->written += n;
	d->col += n;
	if (k > 0) {
		for (; n > 0 && k < 3; n--)
			d->carry[k++] = *s++;
		if (k < 3)
			return;
		b64_group(d, d->carry);
	}
	for (; n >= 3; s += 3, n -= 3)
		b64_group(d, s);
	memcpy(d->carry, s, n);
}

void orbit__rp_html_data_begin(struct orbit_rp_html_data *d, struct orbit_rp_out *o,
                               uint32_t tables)
{
	memset(d, 0, sizeof *d);
	d->o = o;
	orbit__rp_html_bytes(d, ORBIT_RP_HTML_MAGIC, 8);
	orbit__rp_html_u32(d, tables);
	orbit__rp_html_u32(d, 0);
}

void orbit__rp_html_data_end(struct orbit_rp_html_data *d)
{
	unsigned k = (unsigned)(d->written % 3); /* bytes waiting in carry */
	if (k > 0) {
		uint8_t g[3] = {d->carry[0], k > 1 ? d->carry[1] : 0, 0};
		char q[4] = {b64[g[0] >> 2], b64[(g[0] & 3) << 4 | g[1] >> 4],
		             k > 1 ? b64[(g[1] & 15) << 2] : '=', '='};
		orbit__rp_out_write(d->o, q, 4);
	}
	orbit__rp_out_c(d->o, '\n');
}

/* ---- tables and columns ---- */

static void le(struct orbit_rp_html_data *d, uint64_t v, unsigned n)
{
	uint8_t b[8];
	for (unsigned i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	orbit__rp_html_bytes(d, b, n);
}

void orbit__rp_html_u8(struct orbit_rp_html_data *d, uint8_t v)
{
	orbit__rp_html_bytes(d, &v, 1);
}

void orbit__rp_html_u16(struct orbit_rp_html_data *d, uint16_t v)
{
	le(d, v, 2);
}

void orbit__rp_html_u32(struct orbit_rp_html_data *d, uint32_t v)
{
	le(d, v, 4);
}

void orbit__rp_html_f64(struct orbit_rp_html_data *d, double v)
{
	uint64_t bits;
	memcpy(&bits, &v, sizeof bits);
	le(d, bits, 8);
}

void orbit__rp_html_table(struct orbit_rp_html_data *d, const char tag[4], uint32_t rows,
                          uint32_t cols)
{
	orbit__rp_html_bytes(d, tag, 4);
	orbit__rp_html_u32(d, rows);
	orbit__rp_html_u32(d, cols);
	orbit__rp_html_u32(d, 0);
	d->rows = rows;
}

void orbit__rp_html_col(struct orbit_rp_html_data *d, const char name[4], char type)
{
	uint8_t h[8] = {(uint8_t)name[0],
	                (uint8_t)name[1],
	                (uint8_t)name[2],
	                (uint8_t)name[3],
	                (uint8_t)type,
	                0,
	                0,
	                0};
	orbit__rp_html_bytes(d, h, 8);
	d->col = 0;
	d->type = type;
}

void orbit__rp_html_col_end(struct orbit_rp_html_data *d)
{
	static const uint8_t zero[8];
	if (d->col % 8)
		orbit__rp_html_bytes(d, zero, 8 - d->col % 8);
}

/* ---- the string table ---- */

static uint64_t str_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

uint32_t orbit__rp_html_str_add(struct orbit_rp_html_strs *t, const char *s, size_t n)
{
	if (t->n + 2 > t->ncap) {
		uint32_t cap = t->ncap ? t->ncap * 2 : 1024;
		uint32_t *off = realloc(t->off, cap * sizeof *off);
		if (off == NULL)
			goto refuse;
		t->off = off;
		t->ncap = cap;
		if (t->n == 0)
			t->off[0] = 0;
	}
	if (t->len + n > ORBIT_RP_HTML_STR_BYTES)
		goto refuse;
	if (t->len + n > t->cap) {
		size_t cap = t->cap ? t->cap : 64u << 10;
		while (cap < t->len + n)
			cap *= 2;
		char *b = realloc(t->bytes, cap);
		if (b == NULL)
			goto refuse;
		t->bytes = b;
		t->cap = cap;
	}
	if (n > 0)
		memcpy(t->bytes + t->len, s, n);
	t->len += n;
	t->off[++t->n] = (uint32_t)t->len;
	return t->n - 1;
refuse:
	t->refused++;
	return ORBIT_RP_HTML_NO_STR;
}

static int slots_grow(struct orbit_rp_html_strs *t)
{
	size_t cap = t->mask ? (t->mask + 1) * 2 : 4096;
	uint32_t *s = calloc(cap, sizeof *s);
	if (s == NULL)
		return -1;
	for (size_t i = 0; t->mask && i <= t->mask; i++) {
		uint32_t id = t->slots[i];
		if (id == 0)
			continue;
		const char *b = t->bytes + t->off[id - 1];
		size_t j = str_hash(b, t->off[id] - t->off[id - 1]) & (cap - 1);
		while (s[j])
			j = (j + 1) & (cap - 1);
		s[j] = id;
	}
	free(t->slots);
	t->slots = s;
	t->mask = cap - 1;
	return 0;
}

uint32_t orbit__rp_html_str_intern(struct orbit_rp_html_strs *t, const char *s, size_t n)
{
	if ((t->nslots_used + 1) * 2 > t->mask && slots_grow(t) != 0) {
		t->refused++;
		return ORBIT_RP_HTML_NO_STR;
	}
	size_t j = str_hash(s, n) & t->mask;
	for (uint32_t id; (id = t->slots[j]) != 0; j = (j + 1) & t->mask) {
		uint32_t len = t->off[id] - t->off[id - 1];
		if (len == n && (n == 0 || memcmp(t->bytes + t->off[id - 1], s, n) == 0))
			return id - 1;
	}
	uint32_t id = orbit__rp_html_str_add(t, s, n);
	if (id != ORBIT_RP_HTML_NO_STR) {
		t->slots[j] = id + 1;
		t->nslots_used++;
	}
	return id;
}

void orbit__rp_html_strs_write(struct orbit_rp_html_data *d, const struct orbit_rp_html_strs *t)
{
	orbit__rp_html_table(d, "STRO", t->n + 1, 1);
	orbit__rp_html_col(d, "off ", ORBIT_RP_HTML_U32);
	orbit__rp_html_u32(d, 0);
	for (uint32_t i = 1; i <= t->n; i++)
		orbit__rp_html_u32(d, t->off[i]);
	orbit__rp_html_col_end(d);
	orbit__rp_html_table(d, "STRB", (uint32_t)t->len, 1);
	orbit__rp_html_col(d, "byte", ORBIT_RP_HTML_U8);
	orbit__rp_html_bytes(d, t->bytes, t->len);
	orbit__rp_html_col_end(d);
}

void orbit__rp_html_strs_free(struct orbit_rp_html_strs *t)
{
	free(t->bytes);
	free(t->off);
	free(t->slots);
	memset(t, 0, sizeof *t);
}
