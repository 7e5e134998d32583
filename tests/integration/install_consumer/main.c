/* main.c — an instrumented program built against an installed Orbit. It
 * prints the file liborbit was loaded from (the shared build) so the caller
 * can check it is the installed one, and exits 0 when the API worked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <orbit.h>

static int work(int n)
{
	ORBIT_SCOPE("work");
	ORBIT_INT("n", n);
	return n * 2;
}

int main(void)
{
	int err = orbit_init();
	if (err != 0) {
		fprintf(stderr, "consumer: orbit_init: %s\n", orbit_strerror(err));
		return 1;
	}
	ORBIT_THREAD_NAME("consumer");
	ORBIT_START("main");
	int sum = 0;
	for (int i = 0; i < 10; i++)
		sum += work(i);
	ORBIT_STOP();
	err = orbit_flush();
	if (err != 0) {
		fprintf(stderr, "consumer: orbit_flush: %s\n", orbit_strerror(err));
		return 1;
	}
	orbit_shutdown();
	if (sum != 90 || strcmp(orbit_strerror(ORBIT_ETRUNC), "") == 0)
		return 1;
#ifndef CONSUMER_STATIC
	Dl_info info;
	if (dladdr((void *)orbit_init, &info) == 0 || info.dli_fname == NULL) {
		fprintf(stderr, "consumer: dladdr failed\n");
		return 1;
	}
	printf("liborbit: %s\n", info.dli_fname);
#else
	printf("liborbit: static\n");
#endif
	return 0;
}
