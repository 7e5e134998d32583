/* parse.c — HOST:PORT and sizes, for the agent and the collector; see parse.h. */
#include "parse.h"

#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

const char ORBIT_PARSE_URL[] = "a URL, not HOST:PORT";

static int bad(const char **why, const char *text)
{
	*why = text;
	return -EINVAL;
}

void orbit__parse_url_authority(const char *s, char *out, size_t outlen)
{
	const char *p = s != NULL ? strstr(s, "://") : NULL;
	if (outlen == 0)
		return;
	out[0] = '\0';
	if (p == NULL)
		return;
	p += 3;
	size_t n = strcspn(p, "/?#");
	if (n >= outlen)
		return;
	memcpy(out, p, n);
	out[n] = '\0';
}

int orbit__parse_host_port(const char *s, int port_zero, char *host, size_t hostlen, uint16_t *port,
                           const char **why)
{
	const char *h, *colon;
	size_t hl;

	if (s == NULL || s[0] == '\0')
		return bad(why, "empty");
	if (strstr(s, "://") != NULL)
		return bad(why, ORBIT_PARSE_URL);
	if (s[0] == '[') {
		const char *close = strchr(s, ']');
		if (close == NULL || close[1] != ':')
			return bad(why, "expected [IPV6]:PORT");
		h = s + 1;
		hl = (size_t)(close - h);
		colon = close + 1;
	} else {
		colon = strrchr(s, ':');
		if (colon == NULL)
			return bad(why, "expected HOST:PORT");
		if (memchr(s, ':', (size_t)(colon - s)) != NULL)
			return bad(why, "an IPv6 address needs brackets: [::1]:7411");
		h = s;
		hl = (size_t)(colon - s);
	}
	if (hl == 0)
		return bad(why, "missing host");
	if (hl >= hostlen || hl >= ORBIT_HOST_MAX)
		return bad(why, "the host is too long");
	for (size_t i = 0; i < hl; i++)
		if (h[i] == '/' || h[i] == ' ' || h[i] == '\t' || h[i] == '\n' || h[i] == '\r' ||
		    h[i] == '[' || h[i] == ']')
			return bad(why, "the host holds a character no host name has");
	const char *p = colon + 1;
	unsigned long v = 0;
	size_t digits = strspn(p, "0123456789");
	if (digits == 0 || p[digits] != '\0' || digits > 5)
		return bad(why, port_zero ? "the port must be a number from 0 to 65535"
		                          : "the port must be a number from 1 to 65535");
	for (size_t i = 0; i < digits; i++)
		v = v * 10 + (unsigned long)(p[i] - '0');
	if (v > 65535 || (v == 0 && !port_zero))
		return bad(why, port_zero ? "the port must be a number from 0 to 65535"
		                          : "the port must be a number from 1 to 65535");
	memcpy(host, h, hl);
	host[hl] = '\0';
	*port = (uint16_t)v;
	return 0;
}

int orbit__parse_bool(const char *s, int *out)
{
	static const char *const yes[] = {"1", "yes", "true", "on"};
	static const char *const no[] = {"0", "no", "false", "off"};
	for (size_t i = 0; s != NULL && i < sizeof yes / sizeof yes[0]; i++) {
		if (strcasecmp(s, yes[i]) == 0 || strcasecmp(s, no[i]) == 0) {
			*out = strcasecmp(s, yes[i]) == 0;
			return 0;
		}
	}
	return -EINVAL;
}

int orbit__parse_size(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (s == NULL || s[0] < '0' || s[0] > '9')
		return -EINVAL;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	unsigned shift = 0;
	switch (s[i]) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 't':
	case 'T':
		shift = 40;
		break;
	case '\0':
		break;
	default:
		return -EINVAL;
	}
	if (shift != 0 && s[i + 1] != '\0')
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = v << shift;
	return 0;
}

int orbit__parse_long_whole(char *const *argv, int optind, const char *optarg,
                            const struct option *opts, int li, const char **written)
{
	if (li < 0 || optind < 2)
		return 0;
	/* The option is the word before optind, or the one before its value
	 * when the value came as a word of its own ("--name VALUE"). */
	const char *word = argv[optind - 1];
	if (optarg != NULL && optarg == argv[optind - 1] && optind >= 3)
		word = argv[optind - 2];
	if (strncmp(word, "--", 2) != 0)
		return 0;
	const char *name = word + 2;
	size_t len = strcspn(name, "=");
	const char *want = opts[li].name;
	if (strlen(want) == len && memcmp(name, want, len) == 0)
		return 0;
	*written = word;
	return -1;
}

static int name_byte_ok(unsigned char ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
	       ch == '.' || ch == '_' || ch == '-';
}

void orbit__parse_name_for_file(const char *in, char *out, size_t outlen)
{
	size_t n = 0;
	for (; in != NULL && in[n] != '\0' && n < outlen - 1; n++) {
		char ch = name_byte_ok((unsigned char)in[n]) ? in[n] : '_';
		if ((ch == '.' && (n == 0 || out[n - 1] == '.')) || (ch == '-' && n == 0))
			ch = '_';
		out[n] = ch;
	}
	out[n] = '\0';
	if (n == 0)
		snprintf(out, outlen, "unknown");
}
