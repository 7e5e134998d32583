/*
 * segment_env.c — ORBIT_RINGS and ORBIT_RING_BUDGET: good values are taken,
 * bad ones get one clear stderr line naming the variable and the default.
 * Each case runs in a child so its stderr can be read.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "harness.h"
#include "segment.h"

struct expect {
	const char *rings, *budget;
	uint32_t ring_count, slots;
	const char *message; /* substring of stderr, NULL: nothing printed */
};

static int read_config(const void *arg)
{
	const struct expect *e = arg;
	if (e->rings)
		setenv("ORBIT_RINGS", e->rings, 1);
	if (e->budget)
		setenv("ORBIT_RING_BUDGET", e->budget, 1);
	static struct orbit__config c;
	orbit__config_read(&c, NULL);
	return c.rings == e->ring_count && c.slots_per_ring == e->slots ? 0 : 1;
}

static void run(const struct expect *e)
{
	char buf[1024];
	int status = test_in_child(read_config, e, buf, sizeof buf);
	printf("ORBIT_RINGS=%s ORBIT_RING_BUDGET=%s -> %s", e->rings ? e->rings : "(unset)",
	       e->budget ? e->budget : "(unset)", buf[0] ? buf : "(no message)\n");
	CHECK_EQ_U64(status, 0);
	if (e->message == NULL) {
		CHECK(buf[0] == '\0');
	} else {
		CHECK(strstr(buf, e->message) != NULL);
		CHECK(strchr(buf, '\n') == buf + strlen(buf) - 1); /* one line */
	}
}

static void case_rings_budget(void)
{
	static const struct expect cases[] = {
	    {NULL, NULL, 8, 65536, NULL},
	    {"8", NULL, 8, 65536, NULL},
	    {"16", NULL, 16, 32768, NULL},
	    {"128", NULL, 128, 4096, NULL},
	    {"1", "64K", 1, 1024, NULL},
	    {"3", "1M", 3, 4096, NULL}, /* 1M/3/64 = 5461: rounded down to 4096 */
	    {"0", NULL, 8, 65536, "ORBIT_RINGS=0 is not a number from 1 to 128"},
	    {"129", NULL, 8, 65536, "ORBIT_RINGS=129"},
	    {"sixteen", NULL, 8, 65536, "ORBIT_RINGS=sixteen"},
	    {"16x", NULL, 8, 65536, "ORBIT_RINGS=16x"},
	    {NULL, "lots", 8, 65536, "ORBIT_RING_BUDGET=lots is not a size"},
	    {NULL, "100", 8, 65536, "ORBIT_RING_BUDGET=100"},
	    {NULL, "64G", 8, 65536, "ORBIT_RING_BUDGET=64G"},
	    {NULL, "-1", 8, 65536, "ORBIT_RING_BUDGET=-1"},
	    {NULL, "8M", 8, 16384, NULL},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		run(&cases[i]);
}

static const struct test_case cases[] = {
    {"rings_budget", case_rings_budget},
};

TEST_MAIN(cases)
