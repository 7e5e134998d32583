/*
 * api_disabled.c — with ORBIT_API_ENABLED 0 every macro compiles to nothing
 *: it evaluates none of its arguments, attaches no thread,
 * creates no segment and writes no record, even while a capture runs.
 *
 * Usage: api_disabled CASE (one ctest entry per case).
 */
#define ORBIT_API_ENABLED 0
#include "orbit.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "harness.h"
#include "lifecycle.h"
#include "producers.h"
#include "segment_create.h"

#include "api_every_macro.h"

/* No capture: nothing at all happens. */
static void case_no_segment(void)
{
	use_every_macro();
	CHECK_EQ_U64(evaluated, 0);
	/* The counter does count. */
	CHECK(val(1) == 1 && strcmp(name_of("n"), "n") == 0);
	CHECK_EQ_U64(evaluated, 2);
	CHECK(orbit__own_segment() == NULL);
	CHECK(orbit__thread_self.ring == NULL);
	char name[128];
	CHECK_EQ_U64(orbit__segment_find(getpid(), name, sizeof name), (uint64_t)(int64_t)-ENOENT);
}

/* A capture runs (the functions still exist), the macros still do nothing;
 * the out-of-line path, called directly, shows the sink works. */
static void case_with_capture(void)
{
	struct orbit__sink sink = {.records = count_records, .ctx = NULL};
	orbit__agent_set_sink(orbit__root_agent(),
	                      &sink); /* first: every drain pass hands its records to it */
	CHECK_EQ_U64(orbit_init(), 0);
	const struct orbit__segment *seg = orbit__own_segment();
	CHECK(seg != NULL);
	CHECK_EQ_U64(atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed), 1);

	use_every_macro();
	CHECK_EQ_U64(evaluated, 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, 0);
	CHECK_EQ_U64(claimed(seg), 0);
	CHECK(orbit__thread_self.ring == NULL);

	orbit__emit_named(ORBIT__THREAD_NAME, 0, NULL, "control", 7, 0, 0, 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, 1);
	CHECK_EQ_U64(claimed(seg), 1);
	orbit_shutdown();
}

static const struct test_case cases[] = {
    {"no_segment", case_no_segment},
    {"with_capture", case_with_capture},
};

TEST_MAIN(cases)
