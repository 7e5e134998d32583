/*
 * replay_locations.c — a traced program for replay_locations.py: every
 * macro that records its call site, each on a line marked with a comment
 * the test finds (@NAME), three times; with an argument, the path of
 * replay_locations_module.so, which it dlopens to run one scope of the
 * module (a call site in a dlopen'd object) and dlcloses again before
 * the end when a second argument says "close" (the agent then finds the
 * module gone: no location, no fault). Traced through the environment
 * (ORBIT_CAPTURE or ORBIT_COLLECTOR), like a user's program.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

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

int main(int argc, char **argv)
{
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
