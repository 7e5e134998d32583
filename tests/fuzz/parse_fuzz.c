/*
 * parse_fuzz.c — libFuzzer target for the two shared syntaxes
 * (format/parse.c): the input, cut at its first NUL, goes through the
 * HOST:PORT parser (both port rules) and the size parser. Whatever the
 * bytes: no crash, a host that fits its buffer and is NUL-ended, a port in
 * range, a reason for every refusal. Also run over its corpus as a plain
 * regression test (parse_fuzz_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	if (s == NULL)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	for (int zero = 0; zero < 2; zero++) {
		char host[16]; /* small: a longer host must be refused, not cut */
		uint16_t port = 0;
		const char *why = NULL;
		if (orbit__parse_host_port(s, zero, host, sizeof host, &port, &why) == 0) {
			if (memchr(host, '\0', sizeof host) == NULL || host[0] == '\0' ||
			    (!zero && port == 0))
				abort();
		} else if (why == NULL) {
			abort();
		}
	}
	char hint[32];
	orbit__parse_url_authority(s, hint, sizeof hint);
	if (memchr(hint, '\0', sizeof hint) == NULL)
		abort();
	uint64_t v;
	(void)orbit__parse_size(s, &v);
	free(s);
	return 0;
}
