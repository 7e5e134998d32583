/*
 * api_disabled.c — with ORBIT_API_ENABLED 0 every macro compiles to nothing
 * (issue 2 §2): it evaluates none of its arguments, attaches no thread,
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
#include "check.h"
#include "segment.h"

static int evaluated;

static const char *name_of(const char *s)
{
	evaluated++;
	return s;
}

static int val(int v)
{
	evaluated++;
	return v;
}

/* Every macro of orbit.h, arguments with side effects. */
static void use_every_macro(void)
{
	ORBIT_SCOPE(name_of("scope"));
	ORBIT_SCOPE_WITH_COLOR(name_of("scope color"), (uint32_t)val(1));
	ORBIT_SCOPE_WITH_GROUP_AND_COLOR(name_of("scope group"), (uint64_t)val(2),
	                                 (uint32_t)val(3));
	ORBIT_START(name_of("start"));
	ORBIT_START_WITH_COLOR(name_of("start color"), (uint32_t)val(4));
	ORBIT_START_WITH_GROUP_AND_COLOR(name_of("start group"), (uint64_t)val(5),
	                                 (uint32_t)val(6));
	ORBIT_STOP();
	ORBIT_STOP();
	ORBIT_STOP();
	ORBIT_START_ASYNC(name_of("async"), val(7));
	ORBIT_START_ASYNC_WITH_COLOR(name_of("async color"), val(8), (uint32_t)val(9));
	ORBIT_STOP_ASYNC(val(7));
	ORBIT_STOP_ASYNC(val(8));
	ORBIT_INT(name_of("int"), val(10));
	ORBIT_INT64(name_of("int64"), val(11));
	ORBIT_UINT(name_of("uint"), val(12));
	ORBIT_UINT64(name_of("uint64"), val(13));
	ORBIT_FLOAT(name_of("float"), val(14));
	ORBIT_DOUBLE(name_of("double"), val(15));
	ORBIT_INT_WITH_COLOR(name_of("int c"), val(16), (uint32_t)val(17));
	ORBIT_INT64_WITH_COLOR(name_of("int64 c"), val(18), (uint32_t)val(19));
	ORBIT_UINT_WITH_COLOR(name_of("uint c"), val(20), (uint32_t)val(21));
	ORBIT_UINT64_WITH_COLOR(name_of("uint64 c"), val(22), (uint32_t)val(23));
	ORBIT_FLOAT_WITH_COLOR(name_of("float c"), val(24), (uint32_t)val(25));
	ORBIT_DOUBLE_WITH_COLOR(name_of("double c"), val(26), (uint32_t)val(27));
	ORBIT_THREAD_NAME(name_of("thread"));
	/* As statements where a statement is expected. */
	if (evaluated)
		ORBIT_STOP();
	else
		ORBIT_INT("x", 1);
}

static uint64_t records;

static void count_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx, (void)ring, (void)first, (void)recs;
	records += n; /* agent thread; read after orbit_flush() returned */
}

static uint64_t claimed(const struct orbit__segment *seg)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < seg->layout.ring_count; i++)
		sum += orbit__ring_claimed(seg, i);
	return sum;
}

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
	CHECK_EQ_U64(orbit_init(), 0);
	const struct orbit__segment *seg = orbit__own_segment();
	CHECK(seg != NULL);
	struct orbit__sink sink = {.records = count_records, .ctx = NULL};
	orbit__agent_set_sink(&sink);
	CHECK_EQ_U64(atomic_load_explicit(&orbit__capture_flag, memory_order_relaxed), 1);

	use_every_macro();
	CHECK_EQ_U64(evaluated, 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, 0);
	CHECK_EQ_U64(claimed(seg), 0);
	CHECK(orbit__thread_self.ring == NULL);

	orbit__emit_named(ORBIT__THREAD_NAME, 0, "control", 7, 0, 0, 0);
	CHECK_EQ_U64(orbit_flush(), 0);
	CHECK_EQ_U64(records, 1);
	CHECK_EQ_U64(claimed(seg), 1);
	orbit_shutdown();
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s CASE\n", argv[0]);
		return 2;
	}
	if (strcmp(argv[1], "no_segment") == 0)
		case_no_segment();
	else if (strcmp(argv[1], "with_capture") == 0)
		case_with_capture();
	else {
		fprintf(stderr, "%s: no case %s\n", argv[0], argv[1]);
		return 2;
	}
	return 0;
}
