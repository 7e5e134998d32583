/*
 * html_hostile.c — a traced program for html_page.py's hostile case: every
 * name a page shows (scopes, async spans, threads, values, log lines, a
 * marker) is a piece of HTML or script that would set window.__pwned and
 * call the page binding orbitPwned() if the page ever parsed it. Traced
 * through the environment (ORBIT_CAPTURE), like a user's program; its
 * command line (html_page.py gives it more payloads) reaches the page too.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "orbit.h"

static const char *const payloads[] = {
    "<img src=x onerror=\"window.__pwned='img';orbitPwned('img')\">",
    "</script><script>window.__pwned='script';orbitPwned('script')</script>",
    "<svg onload=\"window.__pwned='svg';orbitPwned('svg')\">",
    "\"><iframe srcdoc=\"<script>parent.orbitPwned('iframe')</script>\"></iframe>",
    "<style>*{background:url(x)}</style><b onmouseover=orbitPwned('hover')>hover</b>",
    "javascript:orbitPwned('url')",
};
#define NPAYLOADS (sizeof payloads / sizeof payloads[0])

static uint64_t spin(uint64_t x)
{
	for (int i = 0; i < 20000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	return x;
}

static void *thread(void *arg)
{
	const char *p = arg;
	ORBIT_THREAD_NAME(p);
	uint64_t x = (uintptr_t)arg;
	for (int i = 0; i < 3; i++) {
		ORBIT_SCOPE(p);
		x = spin(x);
		{
			ORBIT_SCOPE_WITH_COLOR(p, 0xff00ffffu);
			x = spin(x);
		}
		ORBIT_INT(p, (int)(x % 100));
		ORBIT_LOG("%s", p);
	}
	return (void *)(uintptr_t)x;
}

int main(void)
{
	pthread_t t[NPAYLOADS];
	for (unsigned i = 0; i < NPAYLOADS; i++) {
		ORBIT_START_ASYNC(payloads[i], 100 + i);
		pthread_create(&t[i], NULL, thread, (void *)payloads[i]);
	}
	for (unsigned i = 0; i < NPAYLOADS; i++) {
		pthread_join(t[i], NULL);
		ORBIT_STOP_ASYNC(100 + i);
		orbit_marker(payloads[i], strlen(payloads[i]));
	}
	{
		/* an unfinished scope with a hostile name: its stop never comes */
		ORBIT_START(payloads[0]);
	}
	return 0;
}
