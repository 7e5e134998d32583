/*
 * live_request_fuzz.c — libFuzzer target for what the collector's live view
 * reads of a browser's request beside h2o (collector/live_request.c): a
 * query's values, the session cookie, a stream's number. The input is
 * split at its first NUL: the query before, the cookie header after (and
 * both as a stream number). Each result is checked against the input: a
 * value never longer than its buffer, a cookie taken only when it holds
 * the session, a number only of digits.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "live_internal.h"

static const char session[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *q = (const char *)data;
	const uint8_t *nul = memchr(data, 0, size);
	size_t qlen = nul ? (size_t)(nul - data) : size;
	const char *c = nul ? (const char *)nul + 1 : "";
	size_t clen = nul ? size - qlen - 1 : 0;
	/* The buffers are exact, so ASan sees any write past them. */
	for (size_t n = 0; n < 20; n += 7) {
		char *out = malloc(n ? n : 1);
		ssize_t got = orbit__live_query_value(q, qlen, "stream", out, n);
		if (got > (ssize_t)n || got < -1)
			abort();
		got = orbit__live_query_value(q, qlen, "token", out, n);
		if (got > (ssize_t)n || got < -1)
			abort();
		free(out);
	}
	char *cookie = malloc(clen ? clen : 1);
	memcpy(cookie, c, clen);
	if (orbit__live_cookie_session(cookie, clen, session) &&
	    (clen < 9 + 64 || memmem(cookie, clen, session, 64) == NULL))
		abort();
	uint32_t id = 0;
	if (orbit__live_stream_number(cookie, clen, &id) == 0) {
		if (id == 0 || clen == 0)
			abort();
		for (size_t i = 0; i < clen; i++)
			if (cookie[i] < '0' || cookie[i] > '9')
				abort();
	}
	free(cookie);
	return 0;
}
