/* api_every_macro.h — one use of every macro of orbit.h, for the tests that
 * check what the macros do when they must do nothing (api_disabled.c, with
 * ORBIT_API_ENABLED 0; api_capture_off.c, with no capture running), and
 * what they count it with: records that reach a sink, claims in a segment.
 * Include after orbit.h, agent.h and segment_create.h. */
#ifndef ORBIT_TEST_API_EVERY_MACRO_H
#define ORBIT_TEST_API_EVERY_MACRO_H

#include <stdint.h>

/* Records that reached count_records, the sink. */
static uint64_t records;

static void count_records(void *ctx, uint32_t ring, uint64_t first, const uint8_t *recs, uint32_t n)
{
	(void)ctx, (void)ring, (void)first, (void)recs;
	records += n; /* agent thread; read after orbit_flush() returned */
}

/* The segment's claims, all rings. */
static uint64_t claimed(const struct orbit__segment *seg)
{
	uint64_t sum = 0;
	for (uint32_t i = 0; i < seg->layout.ring_count; i++)
		sum += orbit__ring_claimed(seg, i);
	return sum;
}

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

/* Every macro of orbit.h, arguments with side effects counted in evaluated.
 * With a capture running it writes 29 records (3 scopes x 2, 3 slices x 2,
 * 2 spans x 2, 12 values, 1 thread name); the last lines use macros where
 * a statement is expected and write nothing more. */
static void use_every_macro(void)
{
	{
		ORBIT_SCOPE(name_of("scope"));
		ORBIT_SCOPE_WITH_COLOR(name_of("scope color"), (uint32_t)val(1));
		ORBIT_SCOPE_WITH_GROUP_AND_COLOR(name_of("scope group"), (uint64_t)val(2),
		                                 (uint32_t)val(3));
	}
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

#endif
