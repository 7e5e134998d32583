/*
 * replay_locations.c — a traced program for replay_locations.py: every
 * macro that records its call site, each on a line marked with a comment
 * the test finds (@NAME), three times; with an argument, the path of
 * replay_locations_module.so, which it dlopens to run one scope of the
 * module (a call site in a dlopen'd object) and dlcloses again before
 * the end when a second argument says "close" (the agent then finds the
 * module gone: no location, no fault). With "forged" as the first
 * argument instead, it writes scopes "forged N" whose records name call
 * sites no macro made, as a hostile writer of the segment could: the agent
 * must resolve none of them, and not fault. Traced through the environment
 * (ORBIT_CAPTURE or ORBIT_COLLECTOR), like a user's program.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "orbit.h"

static void work(int i)
{
	ORBIT_SCOPE("loc outer"); /* @outer */
	{
		ORBIT_SCOPE("loc inner, a name longer than one record holds"); /* @inner */
	}
	ORBIT_START("loc started"); /* @started */
	ORBIT_STOP();
	ORBIT_START_ASYNC("loc async", 100 + i); /* @async */
	ORBIT_STOP_ASYNC(100 + i);
	ORBIT_INT("loc value", i);                          /* @value */
	ORBIT_LOG("loc log %d", i);                         /* @log */
	ORBIT_SCOPE_WITH_COLOR("loc colored", 0xff0000ffu); /* @colored */
}

static char writable[64];

/* Scopes whose records carry addresses that are not descriptors. */
static int forged(void)
{
	static const struct orbit__site real = ORBIT__SITE_INIT;
	struct orbit__site *heap = malloc(sizeof *heap);
	void *gone = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (heap == NULL || gone == MAP_FAILED)
		return 1;
	*heap = real; /* a perfect copy, in writable memory */
	memcpy(writable, &real, sizeof real);
	munmap(gone, 4096);
	const void *sites[] = {
	    heap,                          /* heap */
	    writable,                      /* .bss */
	    gone,                          /* unmapped */
	    (const char *)&real + 8,       /* inside a real one */
	    (const char *)&real + 1,       /* misaligned */
	    (const void *)(uintptr_t)work, /* code */
	    (const void *)(uintptr_t)8,    /* the first page */
	    (const void *)~(uintptr_t)7,   /* the last */
	};
	char name[32];
	for (size_t i = 0; i < sizeof sites / sizeof sites[0]; i++) {
		snprintf(name, sizeof name, "forged %zu", i);
		orbit__scope_end(orbit__scope_begin((const struct orbit__site *)sites[i], name));
	}
	free(heap);
	work(0);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "forged") == 0)
		return forged();
	for (int i = 0; i < 3; i++)
		work(i);
	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);
		if (h == NULL) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
		void (*f)(void) = (void (*)(void))dlsym(h, "replay_locations_module");
		if (f == NULL)
			return 1;
		f();
		if (argc > 2 && strcmp(argv[2], "close") == 0)
			dlclose(h);
	}
	return 0;
}
