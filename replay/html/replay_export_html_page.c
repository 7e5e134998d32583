/*
 * replay_export_html_page.c — the --html page around its data: the
 * template (replay/html/page.html), with its tokens replaced by the
 * styles, the code and the data block, and a nonce for the page's
 * Content-Security-Policy.
 *
 *   @ORBIT_NONCE@  a fresh random nonce: only the page's own <script> and
 *                  <style> run (no inline handler, no other script, no
 *                  fetch of anything, whatever got into the page)
 *   @ORBIT_CSS@    replay/html/timeline.css
 *   @ORBIT_JS@     the scripts of replay/html/, concatenated (html/embed.cmake)
 *   @ORBIT_DATA@   the data block (replay_export_html_data.c): base64
 *   @ORBIT_MODE@   "file", or "live": the page of orbit-collector's live
 *                  view, which gets its blocks from where it came from
 *   @ORBIT_CONNECT@ what the page may fetch: 'none', or live 'self'
 *
 * The build refuses code or styles that hold "</script" or "</style" or a
 * URL with a scheme (html/embed.cmake), so nothing written here can end an
 * element early or fetch anything.
 */
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "replay_html.h"

static void nonce(char out[23])
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	uint8_t r[16];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
		/* No entropy to be had: a nonce nobody chose is still better than none. */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x =
		    (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 30 ^ (uint64_t)getpid() << 48;
		for (unsigned i = 0; i < sizeof r; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			r[i] = (uint8_t)(x >> 56);
		}
	}
	for (unsigned i = 0; i < 22; i++) {
		unsigned bit = i * 6, byte = bit / 8, sh = bit % 8;
		unsigned v = (unsigned)r[byte] << 8 | (byte + 1 < sizeof r ? r[byte + 1] : 0);
		out[i] = b64[(v >> (10 - sh)) & 63];
	}
	out[22] = '\0';
}

void orbit__rp_html_page(struct orbit_rp_out *o, void (*data)(void *ctx, struct orbit_rp_out *o),
                         void *ctx)
{
	static const struct {
		const char *token;
		int what; /* 0 nonce, 1 css, 2 js, 3 data, 4 mode, 5 connect */
	} tokens[] = {{"@ORBIT_NONCE@", 0}, {"@ORBIT_CSS@", 1},  {"@ORBIT_JS@", 2},
	              {"@ORBIT_DATA@", 3},  {"@ORBIT_MODE@", 4}, {"@ORBIT_CONNECT@", 5}};
	int live = data == NULL;
	char n[23];
	nonce(n);
	const char *p = (const char *)orbit__rp_html_template;
	const char *end = p + orbit__rp_html_template_len;
	while (p < end) {
		const char *at = memchr(p, '@', (size_t)(end - p));
		if (at == NULL) {
			orbit__rp_out_write(o, p, (size_t)(end - p));
			return;
		}
		orbit__rp_out_write(o, p, (size_t)(at - p));
		p = at;
		size_t i;
		for (i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
			size_t len = strlen(tokens[i].token);
			if ((size_t)(end - p) >= len && memcmp(p, tokens[i].token, len) == 0)
				break;
		}
		if (i == sizeof tokens / sizeof tokens[0]) {
			orbit__rp_out_c(o, '@');
			p++;
			continue;
		}
		p += strlen(tokens[i].token);
		switch (tokens[i].what) {
		case 0:
			orbit__rp_out_s(o, n);
			break;
		case 1:
			orbit__rp_out_write(o, orbit__rp_html_css, orbit__rp_html_css_len);
			break;
		case 2:
			orbit__rp_out_write(o, orbit__rp_html_js, orbit__rp_html_js_len);
			break;
		case 4:
			orbit__rp_out_s(o, live ? "live" : "file");
			break;
		case 5:
			orbit__rp_out_s(o, live ? "'self'" : "'none'");
			break;
		default:
			if (data != NULL)
				data(ctx, o);
		}
	}
}
