/*
 * replay_out.h — buffered output that remembers its first error, and the
 * escaping every exporter shares: JSON, RFC 4180 CSV, terminal text, hex,
 * colours, UTF-8 (replay_out.c). The lowest part of orbit-replay beside the
 * report: it calls nothing of the rest.
 */
#ifndef ORBIT_REPLAY_OUT_H
#define ORBIT_REPLAY_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ---- output: a buffered writer that remembers its first error ---- */

struct orbit_rp_out {
	FILE *f;
	const char *path; /* for messages */
	int own;          /* fclose at the end */
	char *buf;
	size_t len, cap;
	int err; /* first errno, 0 while all is well */
};

int orbit__rp_out_open(struct orbit_rp_out *o, const char *path);
void orbit__rp_out_stream(struct orbit_rp_out *o, FILE *f, const char *name);
void orbit__rp_out_flush(struct orbit_rp_out *o);
/* Flushes and closes; returns 0 or the first -errno seen. */
int orbit__rp_out_close(struct orbit_rp_out *o);
/* The slow path of orbit__rp_out_write: flushes, or writes straight through. */
void orbit__rp_out_slow(struct orbit_rp_out *o, const void *p, size_t n);

static inline void orbit__rp_out_write(struct orbit_rp_out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap) {
		orbit__rp_out_slow(o, p, n);
		return;
	}
	memcpy(o->buf + o->len, p, n);
	o->len += n;
}

static inline void orbit__rp_out_c(struct orbit_rp_out *o, char c)
{
	if (o->len < o->cap)
		o->buf[o->len++] = c;
	else
		orbit__rp_out_slow(o, &c, 1);
}

static inline void orbit__rp_out_s(struct orbit_rp_out *o, const char *s)
{
	orbit__rp_out_write(o, s, strlen(s)); /* a literal's length is known here */
}
void orbit__rp_out_u64(struct orbit_rp_out *o, uint64_t v);
void orbit__rp_out_i64(struct orbit_rp_out *o, int64_t v);
/* ns as microseconds with three decimals, "123.456". */
void orbit__rp_out_us(struct orbit_rp_out *o, uint64_t ns);
void orbit__rp_out_double(struct orbit_rp_out *o, double v); /* %.17g; "null" if not finite */
void orbit__rp_out_printf(struct orbit_rp_out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A JSON string with its quotes: escapes '"', '\\' and control characters,
 * replaces bytes that are not UTF-8 with U+FFFD. */
void orbit__rp_out_json(struct orbit_rp_out *o, const char *s, size_t n);
/* An RFC 4180 field: quoted when it holds , " CR LF or another control
 * character; quotes doubled. Bytes are kept as they are. */
void orbit__rp_out_csv(struct orbit_rp_out *o, const char *s, size_t n);
/* Bytes a terminal may show: printable ASCII and valid UTF-8 kept,
 * everything else as \xNN. */
void orbit__rp_out_text(struct orbit_rp_out *o, const char *s, size_t n);

/* Bytes as lower-case hex digits, two per byte (dst: room for 2 * n). */
void orbit__rp_hex(char *dst, const void *src, size_t n);
void orbit__rp_out_hex(struct orbit_rp_out *o, const void *src, size_t n);
/* A colour given as 0xRRGGBBAA, as text: "#rrggbbaa" and its NUL. */
void orbit__rp_color_text(uint32_t color, char text[10]);
void orbit__rp_out_color(struct orbit_rp_out *o, uint32_t color);

/* Length of the valid UTF-8 prefix of s (n when all of it is valid). */
size_t orbit__rp_utf8_valid(const char *s, size_t n);
/* Writes s into dst (room for 3 * n bytes) with invalid bytes replaced by
 * U+FFFD; returns the length. */
size_t orbit__rp_utf8_fix(const char *s, size_t n, char *dst);

#endif
