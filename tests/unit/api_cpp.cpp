/*
 * api_cpp.cpp — orbit.h compiles as C++ and its macros work there:
 * ORBIT_SCOPE is an RAII object, so a scope ends wherever its block is
 * left — fall-through, early return, an exception unwinding through it — and
 * every start pairs with its stop. The records are checked through a sink
 * and the reconstructor (api_capture.c).
 */
#include <stdexcept>
#include <string>

#include "orbit.h"

#include "api_capture.h"
#include "harness.h"

static uint32_t g_tid;

/* The scope event named name, its depth and attributes; fails if absent. */
static const capture_event *scope(const char *name, uint32_t depth, size_t from = 0)
{
	long i = capture_find(1, name, from);
	if (i < 0) {
		fprintf(stderr, "no scope \"%s\"\n", name);
		exit(1);
	}
	const capture_event *e = capture_get((size_t)i);
	if (e->depth != depth || e->unfinished || e->tid != g_tid || e->end < e->start) {
		fprintf(stderr, "scope \"%s\": depth %u (want %u), unfinished %d, tid %u\n", name,
		        e->depth, depth, e->unfinished, e->tid);
		exit(1);
	}
	return e;
}

static const capture_event *value(const char *name, uint8_t kind, uint64_t bits)
{
	long i = capture_find(3, name, 0);
	if (i < 0) {
		fprintf(stderr, "no value \"%s\"\n", name);
		exit(1);
	}
	const capture_event *e = capture_get((size_t)i);
	if (e->value_kind != kind || e->value_bits != bits) {
		fprintf(stderr, "value \"%s\": kind %u bits %016llx, want %u %016llx\n", name,
		        e->value_kind, (unsigned long long)e->value_bits, kind,
		        (unsigned long long)bits);
		exit(1);
	}
	return e;
}

static int early_return(bool early)
{
	ORBIT_SCOPE("early");
	if (early)
		return 1;
	ORBIT_SCOPE("late");
	return 2;
}

static void thrower()
{
	ORBIT_SCOPE("thrower");
	throw std::runtime_error("unwind through a scope");
}

struct widget {
	int n;
	widget() : n(0)
	{
		ORBIT_SCOPE("widget::widget");
	}
	void work()
	{
		ORBIT_SCOPE_WITH_GROUP_AND_COLOR("widget::work", 42u, 0x00ff00ffu);
		n++;
	}
};

template <typename T> static T twice(T v)
{
	ORBIT_SCOPE("twice<T>");
	return v * 2;
}

static void case_macros()
{
	capture_install(); /* first: every drain pass hands its records to it */
	CHECK(orbit_init() == 0);
	g_tid = capture_tid();
	capture_stats st;

	{
		ORBIT_SCOPE("outer");
		ORBIT_SCOPE("second, same block");
		std::string runtime = std::string("runtime ") + "name";
		ORBIT_SCOPE(runtime.c_str());
		runtime.assign("overwritten after the macro");
	}
	CHECK(early_return(true) == 1);
	CHECK(early_return(false) == 2);
	bool caught = false;
	try {
		ORBIT_SCOPE("try block");
		thrower();
	} catch (const std::runtime_error &) {
		caught = true;
	}
	CHECK(caught);
	widget w;
	w.work();
	CHECK(w.n == 1);
	CHECK(twice(21) == 42);
	auto lambda = [](int x) {
		ORBIT_SCOPE_WITH_COLOR("lambda", 0x0000ffffu);
		return x + 1;
	};
	CHECK(lambda(1) == 2);

	ORBIT_START("start");
	ORBIT_START_WITH_COLOR("start color", 0x11223344u);
	ORBIT_START_WITH_GROUP_AND_COLOR("start group", 7u, 0x55667788u);
	ORBIT_STOP();
	ORBIT_STOP();
	ORBIT_STOP();

	ORBIT_START_ASYNC("async", 99u);
	ORBIT_STOP_ASYNC(99u);
	ORBIT_START_ASYNC_WITH_COLOR("async color", 100u, 0x01020304u);
	ORBIT_STOP_ASYNC(100u);

	ORBIT_INT("int", -3);
	ORBIT_INT64("int64", -4000000000ll);
	ORBIT_UINT("uint", 4000000000u);
	ORBIT_UINT64("uint64", 0xfedcba9876543210ull);
	ORBIT_FLOAT("float", 0.5f);
	ORBIT_DOUBLE("double", -2.0);
	ORBIT_INT_WITH_COLOR("int c", 1, 1u);
	ORBIT_INT64_WITH_COLOR("int64 c", 2, 2u);
	ORBIT_UINT_WITH_COLOR("uint c", 3u, 3u);
	ORBIT_UINT64_WITH_COLOR("uint64 c", 4u, 4u);
	ORBIT_FLOAT_WITH_COLOR("float c", 5.0f, 5u);
	ORBIT_DOUBLE_WITH_COLOR("double c", 6.0, 6u);
	ORBIT_THREAD_NAME("c++ main");

	CHECK(capture_collect(&st) == 0);
	CHECK_EQ_U64(st.lost, 0);
	CHECK_EQ_U64(st.records, st.claimed);
	CHECK_EQ_U64(st.bad_records, 0);
	CHECK_EQ_U64(st.unmatched_stops, 0);
	CHECK_EQ_U64(st.unfinished, 0);
	CHECK_EQ_U64(st.incomplete_names, 0);
	CHECK_EQ_U64(st.gaps, 0);

	/* RAII: destroyed in reverse order, so inner scopes stop first. */
	const capture_event *outer = scope("outer", 0);
	const capture_event *second = scope("second, same block", 1);
	const capture_event *rt = scope("runtime name", 2);
	CHECK(outer->start <= second->start && second->start <= rt->start);
	CHECK(rt->end <= second->end && second->end <= outer->end);
	/* One "early" per call, "late" only when not returning early. */
	long e1 = capture_find(1, "early", 0);
	CHECK(e1 >= 0);
	scope("early", 0, (size_t)e1 + 1);
	scope("late", 1);
	CHECK(capture_find(1, "late", (size_t)capture_find(1, "late", 0) + 1) < 0);
	/* The exception closed both scopes it unwound through. */
	scope("thrower", 1);
	scope("try block", 0);
	scope("widget::widget", 0);
	const capture_event *wk = scope("widget::work", 0);
	CHECK(wk->has_attrs && wk->color == 0x00ff00ffu && wk->group == 42u);
	scope("twice<T>", 0);
	const capture_event *lm = scope("lambda", 0);
	CHECK(lm->has_attrs && lm->color == 0x0000ffffu && lm->group == 0);
	scope("start", 0);
	const capture_event *sc = scope("start color", 1);
	CHECK(sc->has_attrs && sc->color == 0x11223344u);
	const capture_event *sg = scope("start group", 2);
	CHECK(sg->has_attrs && sg->color == 0x55667788u && sg->group == 7u);
	CHECK(!outer->has_attrs);

	long a = capture_find(2, "async", 0);
	CHECK(a >= 0 && capture_get((size_t)a)->id == 99u && !capture_get((size_t)a)->unfinished);
	a = capture_find(2, "async color", 0);
	CHECK(a >= 0 && capture_get((size_t)a)->id == 100u &&
	      capture_get((size_t)a)->color == 0x01020304u);

	value("int", 5, (uint64_t)-3);
	value("int64", 6, (uint64_t)-4000000000ll);
	value("uint", 7, 4000000000u);
	value("uint64", 8, 0xfedcba9876543210ull);
	value("float", 9, 0x3fe0000000000000ull);
	value("double", 10, 0xc000000000000000ull);
	CHECK(value("int c", 5, 1)->color == 1u);
	CHECK(value("int64 c", 6, 2)->color == 2u);
	CHECK(value("uint c", 7, 3)->color == 3u);
	CHECK(value("uint64 c", 8, 4)->color == 4u);
	CHECK(value("float c", 9, 0x4014000000000000ull)->color == 5u);
	CHECK(value("double c", 10, 0x4018000000000000ull)->color == 6u);
	CHECK(capture_find(4, "c++ main", 0) >= 0);

	/* Every scope above, and nothing else. */
	size_t scopes = 0;
	for (size_t i = 0; i < capture_count(); i++)
		scopes += capture_get(i)->type == 1;
	CHECK_EQ_U64(scopes, 15);
	orbit_shutdown();
}

static const test_case cases[] = {
    {"macros", case_macros},
};

int main(int argc, char **argv)
{
	test_suite suite = {}; /* harness.h's TEST_MAIN is C (designated initializers) */
	suite.cases = cases;
	suite.count = sizeof cases / sizeof cases[0];
	return test_main(argc, argv, &suite);
}
