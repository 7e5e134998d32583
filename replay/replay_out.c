/* replay_out.c — buffered output that keeps its first error, and the
 * escaping every exporter shares (JSON, RFC 4180 CSV, terminal text). */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "replay_out.h"

#define OUT_BUF (256u << 10)

static void out_init(struct orbit_rp_out *o)
{
	o->buf = malloc(OUT_BUF);
	o->cap = o->buf ? OUT_BUF : 0;
	o->len = 0;
	if (o->buf == NULL && o->err == 0)
		o->err = ENOMEM;
}

int orbit__rp_out_open(struct orbit_rp_out *o, const char *path)
{
	memset(o, 0, sizeof *o);
	o->path = path;
	if (strcmp(path, "-") == 0) {
		o->f = stdout;
		o->path = "stdout";
	} else {
		o->f = fopen(path, "wbe");
		if (o->f == NULL)
			return -errno;
		o->own = 1;
	}
	out_init(o);
	return o->err ? -o->err : 0;
}

void orbit__rp_out_stream(struct orbit_rp_out *o, FILE *f, const char *name)
{
	memset(o, 0, sizeof *o);
	o->f = f;
	o->path = name;
	out_init(o);
}

void orbit__rp_out_flush(struct orbit_rp_out *o)
{
	if (o->len == 0 || o->f == NULL)
		return;
	if (o->err == 0 && fwrite(o->buf, 1, o->len, o->f) != o->len)
		o->err = errno ? errno : EIO;
	o->len = 0;
}

void orbit__rp_out_slow(struct orbit_rp_out *o, const void *p, size_t n)
{
	orbit__rp_out_flush(o);
	if (n <= o->cap) {
		memcpy(o->buf, p, n);
		o->len = n;
		return;
	}
	/* Larger than the buffer: straight through. */
	if (o->err == 0 && o->f != NULL && fwrite(p, 1, n, o->f) != n)
		o->err = errno ? errno : EIO;
}

int orbit__rp_out_close(struct orbit_rp_out *o)
{
	if (o->f == NULL) {
		free(o->buf);
		o->buf = NULL;
		return -o->err;
	}
	orbit__rp_out_flush(o);
	if (fflush(o->f) != 0 && o->err == 0)
		o->err = errno ? errno : EIO;
	if (ferror(o->f) && o->err == 0)
		o->err = EIO;
	if (o->own && fclose(o->f) != 0 && o->err == 0)
		o->err = errno ? errno : EIO;
	o->f = NULL;
	free(o->buf);
	o->buf = NULL;
	o->cap = 0;
	return -o->err;
}

/* Two digits at a time: "00" .. "99". */
static const char digits2[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                              "34353637383940414243444546474849505152535455565758596061626364656667"
                              "6869707172737475767778798081828384858687888990919293949596979899";

/* The last 8 digits of v, zero-padded, ending at end (32-bit arithmetic). */
static char *eight_digits(char *end, uint32_t v)
{
	for (int i = 0; i < 4; i++) {
		uint32_t q = v / 100;
		end -= 2;
		memcpy(end, digits2 + 2 * (v - 100 * q), 2);
		v = q;
	}
	return end;
}

/* The digits of v, last first, ending at end; returns where they start. */
static char *digits_before(char *end, uint64_t v)
{
	char *p = end;
	while (v >= 100000000u) { /* timestamps: 12 digits and more */
		uint64_t q = v / 100000000u;
		p = eight_digits(p, (uint32_t)(v - q * 100000000u));
		v = q;
	}
	uint32_t w = (uint32_t)v;
	while (w >= 100) {
		uint32_t q = w / 100;
		p -= 2;
		memcpy(p, digits2 + 2 * (w - 100 * q), 2);
		w = q;
	}
	if (w >= 10) {
		p -= 2;
		memcpy(p, digits2 + 2 * w, 2);
	} else {
		*--p = (char)('0' + w);
	}
	return p;
}

/* How many decimal digits v has (1 for 0). */
static size_t decimal_digits(uint64_t v)
{
	static const uint64_t pow10[20] = {1ull,
	                                   10ull,
	                                   100ull,
	                                   1000ull,
	                                   10000ull,
	                                   100000ull,
	                                   1000000ull,
	                                   10000000ull,
	                                   100000000ull,
	                                   1000000000ull,
	                                   10000000000ull,
	                                   100000000000ull,
	                                   1000000000000ull,
	                                   10000000000000ull,
	                                   100000000000000ull,
	                                   1000000000000000ull,
	                                   10000000000000000ull,
	                                   100000000000000000ull,
	                                   1000000000000000000ull,
	                                   10000000000000000000ull};
	/* log10(2) ~ 1233 / 4096: t is the digit count or one less. */
	size_t t = (size_t)((64 - __builtin_clzll(v | 1)) * 1233) >> 12;
	return t + ((v | 1) >= pow10[t]); /* 0 has one digit */
}

void orbit__rp_out_u64(struct orbit_rp_out *o, uint64_t v)
{
	if (o->cap - o->len >= 20) { /* in place: no copy */
		size_t n = decimal_digits(v);
		digits_before(o->buf + o->len + n, v);
		o->len += n;
		return;
	}
	char b[24];
	char *p = digits_before(b + sizeof b, v);
	orbit__rp_out_write(o, p, (size_t)(b + sizeof b - p));
}

void orbit__rp_out_i64(struct orbit_rp_out *o, int64_t v)
{
	if (v < 0) {
		orbit__rp_out_c(o, '-');
		orbit__rp_out_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		orbit__rp_out_u64(o, (uint64_t)v);
	}
}

void orbit__rp_out_us(struct orbit_rp_out *o, uint64_t ns)
{
	char frac[4] = {'.', 0, 0, 0};
	uint64_t r = ns % 1000;
	orbit__rp_out_u64(o, ns / 1000);
	frac[1] = (char)('0' + r / 100);
	frac[2] = (char)('0' + r / 10 % 10);
	frac[3] = (char)('0' + r % 10);
	orbit__rp_out_write(o, frac, 4);
}

void orbit__rp_out_double(struct orbit_rp_out *o, double v)
{
	if (v != v || v > 1.7976931348623157e308 || v < -1.7976931348623157e308) {
		orbit__rp_out_s(o, "null");
		return;
	}
	orbit__rp_out_printf(o, "%.17g", v);
}

void orbit__rp_out_printf(struct orbit_rp_out *o, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		orbit__rp_out_write(o, small, (size_t)n);
		return;
	}
	char *big = malloc((size_t)n + 1);
	if (big == NULL) {
		if (o->err == 0)
			o->err = ENOMEM;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(big, (size_t)n + 1, fmt, ap);
	va_end(ap);
	orbit__rp_out_write(o, big, (size_t)n);
	free(big);
}

static const char hex_digit[] = "0123456789abcdef";

void orbit__rp_hex(char *dst, const void *src, size_t n)
{
	const unsigned char *p = src;
	for (size_t i = 0; i < n; i++) {
		dst[2 * i] = hex_digit[p[i] >> 4];
		dst[2 * i + 1] = hex_digit[p[i] & 15];
	}
}

void orbit__rp_out_hex(struct orbit_rp_out *o, const void *src, size_t n)
{
	const unsigned char *p = src;
	char b[128];
	while (n > 0) {
		size_t k = n < sizeof b / 2 ? n : sizeof b / 2;
		orbit__rp_hex(b, p, k);
		orbit__rp_out_write(o, b, 2 * k);
		p += k;
		n -= k;
	}
}

void orbit__rp_color_text(uint32_t color, char text[10])
{
	unsigned char be[4] = {(unsigned char)(color >> 24), (unsigned char)(color >> 16),
	                       (unsigned char)(color >> 8), (unsigned char)color};
	text[0] = '#';
	orbit__rp_hex(text + 1, be, 4);
	text[9] = '\0';
}

void orbit__rp_out_color(struct orbit_rp_out *o, uint32_t color)
{
	char text[10];
	orbit__rp_color_text(color, text);
	orbit__rp_out_write(o, text, 9);
}

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if it is not one:
 * no overlong forms, no surrogates, nothing past U+10FFFF (RFC 3629). */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xBF;
	if (c >= 0xC2 && c <= 0xDF)
		len = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
	else if (c >= 0xF0 && c <= 0xF4)
		len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
	else
		return 0;
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xBF)
			return 0;
	return len;
}

size_t orbit__rp_utf8_valid(const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		if (u[i] < 0x80) {
			i++;
			continue;
		}
		size_t k = utf8_seq(u + i, n - i);
		if (k == 0)
			return i;
		i += k;
	}
	return n;
}

size_t orbit__rp_utf8_fix(const char *s, size_t n, char *dst)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, w = 0;
	while (i < n) {
		size_t k = utf8_seq(u + i, n - i);
		if (k == 0) {
			memcpy(dst + w, "\xEF\xBF\xBD", 3);
			w += 3;
			i++;
			continue;
		}
		memcpy(dst + w, s + i, k);
		w += k;
		i += k;
	}
	return w;
}

/* ---- JSON ---- */

static int json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static void json_escape(struct orbit_rp_out *o, unsigned char c)
{
	char e[6] = {'\\', 'u', '0', '0', hex_digit[c >> 4], hex_digit[c & 15]};
	switch (c) {
	case '"':
		orbit__rp_out_write(o, "\\\"", 2);
		return;
	case '\\':
		orbit__rp_out_write(o, "\\\\", 2);
		return;
	case '\n':
		orbit__rp_out_write(o, "\\n", 2);
		return;
	case '\t':
		orbit__rp_out_write(o, "\\t", 2);
		return;
	case '\r':
		orbit__rp_out_write(o, "\\r", 2);
		return;
	default:
		orbit__rp_out_write(o, e, 6);
	}
}

void orbit__rp_out_json(struct orbit_rp_out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	orbit__rp_out_c(o, '"');
	while (i < n) {
		size_t run = i;
		while (run < n && json_plain(u[run]))
			run++;
		if (run > i) {
			orbit__rp_out_write(o, s + i, run - i);
			i = run;
			continue;
		}
		if (u[i] < 0x80) {
			json_escape(o, u[i]);
			i++;
			continue;
		}
		size_t k = utf8_seq(u + i, n - i);
		if (k == 0) {
			orbit__rp_out_write(o, "\xEF\xBF\xBD", 3);
			i++;
		} else {
			orbit__rp_out_write(o, s + i, k);
			i += k;
		}
	}
	orbit__rp_out_c(o, '"');
}

/* ---- CSV ---- */

void orbit__rp_out_csv(struct orbit_rp_out *o, const char *s, size_t n)
{
	size_t i;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == ',' || c == '"' || c < 0x20)
			break;
	}
	if (i == n) {
		orbit__rp_out_write(o, s, n);
		return;
	}
	orbit__rp_out_c(o, '"');
	size_t start = 0;
	for (i = 0; i < n; i++) {
		if (s[i] != '"')
			continue;
		orbit__rp_out_write(o, s + start, i + 1 - start); /* through the quote */
		orbit__rp_out_c(o, '"');
		start = i + 1;
	}
	orbit__rp_out_write(o, s + start, n - start);
	orbit__rp_out_c(o, '"');
}

/* ---- terminal text ---- */

void orbit__rp_out_text(struct orbit_rp_out *o, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t k = u[i] >= 0x20 && u[i] < 0x7f && u[i] != '\\' ? 1
		           : u[i] >= 0x80                              ? utf8_seq(u + i, n - i)
		                                                       : 0;
		if (k == 0) {
			char e[4] = {'\\', 'x', hex_digit[u[i] >> 4], hex_digit[u[i] & 15]};
			orbit__rp_out_write(o, e, 4);
			i++;
			continue;
		}
		orbit__rp_out_write(o, s + i, k);
		i += k;
	}
}
