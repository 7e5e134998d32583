/* replay_escape.c — the escaping orbit-replay's outputs rely on: JSON
 * strings valid whatever the bytes (quotes, backslashes, control
 * characters, NUL, invalid UTF-8 of every kind), RFC 4180 fields, terminal
 * text, the --from / --to syntax, and numbers in decimal as printf writes
 * them. Cases: json, json_random, csv, text, bound, numbers. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_internal.h"

static char *buf;
static size_t len;
static FILE *mem;
static struct orbit_rp_out out;

static void begin(void)
{
	mem = open_memstream(&buf, &len);
	CHECK(mem != NULL);
	orbit__rp_out_stream(&out, mem, "memory");
}

static const char *end(void)
{
	CHECK(orbit__rp_out_close(&out) == 0);
	CHECK(fclose(mem) == 0);
	return buf;
}

#define EXPECT(fn, in, want)                                                                       \
	do {                                                                                       \
		begin();                                                                           \
		fn(&out, in, sizeof(in) - 1);                                                      \
		const char *got_ = end();                                                          \
		if (len != sizeof(want) - 1 || memcmp(got_, want, len) != 0) {                     \
			fprintf(stderr, "%s(%s): got [%.*s], want [%s]\n", #fn, #in, (int)len,     \
			        got_, want);                                                       \
			exit(1);                                                                   \
		}                                                                                  \
		free(buf);                                                                         \
	} while (0)

static void json_cases(void)
{
	EXPECT(orbit__rp_out_json, "plain", "\"plain\"");
	EXPECT(orbit__rp_out_json, "q\"b\\", "\"q\\\"b\\\\\"");
	EXPECT(orbit__rp_out_json, "\n\t\r\b\f", "\"\\n\\t\\r\\u0008\\u000c\"");
	EXPECT(orbit__rp_out_json, "nul\0x\x1f\x7f", "\"nul\\u0000x\\u001f\x7f\"");
	EXPECT(orbit__rp_out_json, "\xc3\xa9\xe6\xbc\xa2\xf0\x9f\x9a\x80",
	       "\"\xc3\xa9\xe6\xbc\xa2\xf0\x9f\x9a\x80\"");
	EXPECT(orbit__rp_out_json, "\xff", "\"\xef\xbf\xbd\"");
	EXPECT(orbit__rp_out_json, "\xc0\xaf", "\"\xef\xbf\xbd\xef\xbf\xbd\""); /* overlong */
	EXPECT(orbit__rp_out_json, "\xed\xa0\x80",
	       "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""); /* surrogate */
	EXPECT(orbit__rp_out_json, "\xf4\x90\x80\x80",
	       "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");           /* > U+10FFFF */
	EXPECT(orbit__rp_out_json, "a\xe2\x82", "\"a\xef\xbf\xbd\xef\xbf\xbd\""); /* truncated */
	EXPECT(orbit__rp_out_json, "\xe2\x82\xac", "\"\xe2\x82\xac\"");
	EXPECT(orbit__rp_out_json, "", "\"\"");
}

/* A JSON string as RFC 8259 wants it: quotes, escapes, no control bytes,
 * valid UTF-8 throughout. */
static void json_valid(const char *s, size_t n)
{
	CHECK(n >= 2 && s[0] == '"' && s[n - 1] == '"');
	CHECK(orbit__rp_utf8_valid(s, n) == n);
	for (size_t i = 1; i + 1 < n; i++) {
		unsigned char c = (unsigned char)s[i];
		CHECK(c >= 0x20);
		CHECK(c != '"');
		if (c != '\\')
			continue;
		char e = s[++i];
		CHECK(i + 1 < n);
		if (e == 'u') {
			CHECK(i + 4 < n);
			for (int k = 1; k <= 4; k++)
				CHECK(strchr("0123456789abcdef", s[i + k]) != NULL);
			i += 4;
		} else {
			CHECK(strchr("\"\\/bfnrt", e) != NULL);
		}
	}
}

static void json_random(void)
{
	unsigned seed = 1;
	char in[64];
	for (int round = 0; round < 200000; round++) {
		size_t n = (size_t)(rand_r(&seed) % 64);
		for (size_t i = 0; i < n; i++)
			in[i] = (char)(rand_r(&seed) % 3 ? rand_r(&seed) % 256
			                                 : 0x80 + rand_r(&seed) % 64);
		begin();
		orbit__rp_out_json(&out, in, n);
		end();
		json_valid(buf, len);
		/* valid UTF-8 without specials comes out as it went in */
		if (orbit__rp_utf8_valid(in, n) == n && memchr(in, '"', n) == NULL &&
		    memchr(in, '\\', n) == NULL) {
			int ctrl = 0;
			for (size_t i = 0; i < n; i++)
				ctrl |= (unsigned char)in[i] < 0x20;
			if (!ctrl)
				CHECK(len == n + 2 && memcmp(buf + 1, in, n) == 0);
		}
		free(buf);
	}
}

static void csv_cases(void)
{
	EXPECT(orbit__rp_out_csv, "plain name", "plain name");
	EXPECT(orbit__rp_out_csv, "a,b", "\"a,b\"");
	EXPECT(orbit__rp_out_csv, "say \"hi\"", "\"say \"\"hi\"\"\"");
	EXPECT(orbit__rp_out_csv, "\"", "\"\"\"\"");
	EXPECT(orbit__rp_out_csv, "two\r\nlines", "\"two\r\nlines\"");
	EXPECT(orbit__rp_out_csv, "tab\there", "\"tab\there\"");
	EXPECT(orbit__rp_out_csv, "nul\0", "\"nul\0\"");
	EXPECT(orbit__rp_out_csv, "\xff utf-8 kept \xc3\xa9", "\xff utf-8 kept \xc3\xa9");
	EXPECT(orbit__rp_out_csv, "", "");
}

static void text_cases(void)
{
	EXPECT(orbit__rp_out_text, "ok \xc3\xa9", "ok \xc3\xa9");
	EXPECT(orbit__rp_out_text, "esc\x1b[31m", "esc\\x1b[31m");
	EXPECT(orbit__rp_out_text, "back\\slash", "back\\x5cslash");
	EXPECT(orbit__rp_out_text, "\xff\n", "\\xff\\x0a");
}

static void bound_cases(void)
{
	struct orbit_replay_bound b;
	CHECK(orbit__replay_parse_bound("123", &b) == 0 && b.set && b.relative && b.ns == 123);
	CHECK(orbit__replay_parse_bound("10ms", &b) == 0 && b.relative && b.ns == 10000000);
	CHECK(orbit__replay_parse_bound("@123", &b) == 0 && b.set && !b.relative && b.ns == 123);
	CHECK(orbit__replay_parse_bound("@1.5s", &b) == 0 && !b.relative && b.ns == 1500000000);
	CHECK(orbit__replay_parse_bound("+1.5s", &b) == 0 && b.relative && b.ns == 1500000000);
	CHECK(orbit__replay_parse_bound("+200ms", &b) == 0 && b.ns == 200000000);
	CHECK(orbit__replay_parse_bound("+10us", &b) == 0 && b.ns == 10000);
	CHECK(orbit__replay_parse_bound("+7ns", &b) == 0 && b.ns == 7);
	CHECK(orbit__replay_parse_bound("+0.000000001s", &b) == 0 && b.ns == 1);
	CHECK(orbit__replay_parse_bound("@18446744073709551615", &b) == 0 && b.ns == UINT64_MAX);
	static const char *bad[] = {"",
	                            "+",
	                            "abc",
	                            "1x",
	                            "-5",
	                            "1.5.5",
	                            "+s",
	                            "99999999999999999999",
	                            "18446744073709551615s",
	                            "@",
	                            "@+5",
	                            "+@5",
	                            "@@5",
	                            "@-5"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		if (orbit__replay_parse_bound(bad[i], &b) == 0) {
			fprintf(stderr, "bound '%s' accepted\n", bad[i]);
			exit(1);
		}
}

/* Every length of number, the edges of each split (10^k - 1, 10^k, 2^32,
 * 2^64 - 1) and random ones, against printf. */
static void number_cases(void)
{
	uint64_t v[200];
	size_t n = 0;
	uint64_t p = 1;
	for (int k = 0; k < 20; k++, p *= 10) {
		v[n++] = p;
		v[n++] = p - 1;
		v[n++] = p + 1;
	}
	v[n++] = UINT64_MAX;
	v[n++] = (uint64_t)1 << 32;
	v[n++] = ((uint64_t)1 << 32) - 1;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	while (n < sizeof v / sizeof v[0]) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		v[n++] = x >> (x % 64);
	}
	for (size_t i = 0; i < n; i++) {
		char want[32];
		snprintf(want, sizeof want, "%llu", (unsigned long long)v[i]);
		begin();
		orbit__rp_out_u64(&out, v[i]);
		orbit__rp_out_c(&out, ',');
		orbit__rp_out_i64(&out, -(int64_t)(v[i] >> 1));
		const char *got = end();
		char full[64];
		snprintf(full, sizeof full, "%s,%lld", want, -(long long)(v[i] >> 1));
		if (len != strlen(full) || memcmp(got, full, len) != 0) {
			fprintf(stderr, "got [%.*s], want [%s]\n", (int)len, got, full);
			exit(1);
		}
		free(buf);
	}
}

static const struct test_case cases[] = {
    {"json", json_cases}, {"json_random", json_random}, {"csv", csv_cases},
    {"text", text_cases}, {"bound", bound_cases},       {"numbers", number_cases},
};

TEST_MAIN(cases)
