/*
 * api_capture_off.c — with no capture running the macros do nothing ("a relaxed load and a
 * not-taken branch"): before orbit_init() they evaluate no argument, attach no thread and create no
 * segment; after orbit_shutdown() they write no record into the segment that stays mapped, and
 * orbit_init() starts a new capture afterwards; in the child of a fork they write nothing.
 *
 * Usage: api_capture_off CASE (one ctest entry per case).
 */
#include <errno.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent.h"
#include "harness.h"
#include "lifecycle.h"
#include "orbit.h"
#include "producers.h"
#include "segment_create.h"

#include "api_every_macro.h"

#define RECORDS_PER_USE 29u /* see api_every_macro.h */

static const struct orbit__segment *start(void)
{
	/* The sink first: every drain pass hands its records to it. */
	struct orbit__sink sink = {.records = count_records, .ctx = NULL};
	orbit__agent_set_sink(orbit__root_agent(), &sink);
	CHECK_EQ_U64(orbit_init(), 0);
	const struct orbit__segment *seg = orbit__own_segment();
	CHECK(seg != NULL);
	return seg;
}

/* Before orbit_init(): nothing evaluated, attached or created; what the
 * macros did then does not show up once a capture starts. */
static void case_before_init(void)
{
	use_every_macro();
	CHECK_EQ_U64(evaluated, 0);
	CHECK(orbit__own_segment() == NULL);
	CHECK(orbit__thread_self.ring == NULL);
	CHECK_EQ_U64(orbit__thread_self.depth, 0);
	char name[128];
	CHECK_EQ_U64(orbit__segment_find(getpid(), name, sizeof name), (uint64_t)(int64_t)-ENOENT);
	CHECK_EQ_U64(orbit_flush(), (uint64_t)(int64_t)ORBIT_EDISABLED);

	const struct orbit__segment *seg = start();
	CHECK_EQ_U64(orbit__segment_find(getpid(), name, sizeof name), 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, 0);
	CHECK_EQ_U64(claimed(seg), 0);
	/* The same calls with the capture on: every record arrives. */
	use_every_macro();
	CHECK(evaluated > 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(claimed(seg), RECORDS_PER_USE);
	CHECK_EQ_U64(records, RECORDS_PER_USE);
	orbit_shutdown();
}

/* After orbit_shutdown(): the segment stays mapped, nothing is written to
 * it; a second orbit_init() captures again, into the same segment. */
static void case_after_shutdown(void)
{
	const struct orbit__segment *seg = start();
	use_every_macro();
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, RECORDS_PER_USE);
	orbit_shutdown();
	CHECK_EQ_U64(atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed), 0);
	CHECK_EQ_U64(atomic_load_explicit(&seg->control->capture, memory_order_relaxed), 0);

	evaluated = 0;
	use_every_macro();
	CHECK_EQ_U64(evaluated, 0);
	CHECK_EQ_U64(claimed(seg), RECORDS_PER_USE);
	CHECK(orbit_flush() < 0); /* no agent to flush */

	CHECK(start() == seg);
	use_every_macro();
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(claimed(seg), 2 * RECORDS_PER_USE);
	CHECK_EQ_U64(records, 2 * RECORDS_PER_USE);
	orbit_shutdown();
}

/* The child of a fork while a capture runs starts with tracing off and no
 * segment (orbit.c, after_fork_child): its macros must not write into the
 * parent's rings, which the child still has mapped. */
static void case_fork_child(void)
{
	const struct orbit__segment *seg = start();
	use_every_macro(); /* this thread is attached, its ring known */
	CHECK(orbit__thread_self.ring != NULL);
	evaluated = 0;
	/* The child forgets the process's segment (it zeroes its descriptor),
	 * but still has the mapping: look at the rings through a copy. */
	const struct orbit__segment parent_seg = *seg;
	pid_t r = fork();
	CHECK(r >= 0);
	if (r == 0) {
		use_every_macro();
		/* Exit status: which expectation failed. */
		_exit(evaluated != 0                            ? 1
		      : orbit__own_segment() != NULL            ? 2
		      : orbit__thread_self.ring != NULL         ? 3
		      : claimed(&parent_seg) != RECORDS_PER_USE ? 4
		                                                : 0);
	}
	int st;
	CHECK(waitpid(r, &st, 0) == r);
	CHECK(WIFEXITED(st));
	CHECK_EQ_U64(WEXITSTATUS(st), 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(claimed(seg), RECORDS_PER_USE);
	CHECK_EQ_U64(records, RECORDS_PER_USE);
	orbit_shutdown();
}

static const struct test_case cases[] = {
    {"before_init", case_before_init},
    {"after_shutdown", case_after_shutdown},
    {"fork_child", case_fork_child},
};

TEST_MAIN(cases)
