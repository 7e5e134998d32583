/*
 * live_request.c — the live view's reading of what a browser sends, beside
 * h2o's own parsing of the request: a query's value, the session cookie, a
 * stream's number. Pure functions of the bytes given, bounds-checked,
 * fuzzed by tests/fuzz/live_request_fuzz.c.
 */
#include <string.h>

#include "collector.h"
#include "live_internal.h"

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

ssize_t orbit__live_query_value(const char *q, size_t len, const char *key, char *out, size_t n)
{
	const char *end = q + len;
	size_t klen = strlen(key);
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *e = amp ? amp : end;
		if ((size_t)(e - q) > klen && memcmp(q, key, klen) == 0 && q[klen] == '=') {
			size_t w = 0;
			for (const char *p = q + klen + 1; p < e; p++) {
				int c = (unsigned char)*p;
				if (c == '%' && e - p >= 3 && hexval(p[1]) >= 0 &&
				    hexval(p[2]) >= 0) {
					c = hexval(p[1]) * 16 + hexval(p[2]);
					p += 2;
				} else if (c == '+') {
					c = ' ';
				}
				if (w == n)
					return -1;
				out[w++] = (char)c;
			}
			return (ssize_t)w;
		}
		if (amp == NULL)
			break;
		q = amp + 1;
	}
	return -1;
}

int orbit__live_cookie_session(const char *v, size_t len, const char *session)
{
	static const char name[] = "orbit_ui=";
	const size_t nl = sizeof name - 1, sl = ORBIT_LIVE_SESSION_LEN;
	for (size_t at = 0; at + nl + sl <= len; at++)
		if (memcmp(v + at, name, nl) == 0 &&
		    (at == 0 || v[at - 1] == ' ' || v[at - 1] == ';') &&
		    (at + nl + sl == len || v[at + nl + sl] == ';') &&
		    orbit__secret_equal(v + at + nl, sl, session, sl))
			return 1;
	return 0;
}

int orbit__live_stream_number(const char *s, size_t len, uint32_t *id)
{
	uint64_t v = 0;
	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v == 0 || v > UINT32_MAX)
		return -1;
	*id = (uint32_t)v;
	return 0;
}
