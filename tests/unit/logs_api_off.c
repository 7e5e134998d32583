/* logs_api_off.c — with ORBIT_API_ENABLED 0, ORBIT_LOG compiles to nothing:
 * it evaluates none of its arguments and writes no record, even while the
 * log rings run and the capture flag is on. orbit_log / orbit_marker stay
 * ordinary functions. */
#define ORBIT_API_ENABLED 0
#include "orbit.h"

#include <stdatomic.h>

#include "clock.h"
#include "harness.h"
#include "logs.h"
#include "producers.h"

static int evaluated;

static int side(int v)
{
	evaluated++;
	return v;
}

static const char *fmt_of(const char *f)
{
	evaluated++;
	return f;
}

static int pages;

static uint64_t identity(void *ctx, uint64_t t)
{
	(void)ctx;
	return t;
}

static void count_page(void *arg, uint32_t ring, const uint8_t *page, size_t len)
{
	(void)arg, (void)ring, (void)page, (void)len;
	pages++;
}

static void case_compiled_out(void)
{
	uint64_t reserved = 0;

	(void)side; /* used only by macros that compile away */
	(void)fmt_of;
	static struct orbit__config cfg;
	struct orbit__logs *l;
	orbit__config_read(&cfg, NULL);
	orbit__clock_kind = orbit__clock_choose(cfg.clock);
	CHECK(orbit__logs_create(&l, &cfg, orbit__clock_kind, NULL) == 0);
	CHECK(orbit__logs_start(l) == 0);
	orbit__producers_logs(l);
	atomic_store_explicit(&orbit__capture_flag, 1, memory_order_relaxed);

	ORBIT_LOG("%d %d", side(1), side(2));
	ORBIT_LOG(fmt_of("plain"));
	if (evaluated)
		ORBIT_LOG("x");
	else
		ORBIT_LOG("y %d", side(3));
	CHECK(evaluated == 0);
	CHECK(orbit__logs_read(l, identity, NULL, count_page, NULL, 0) == 0);
	CHECK(pages == 0);
	for (uint32_t i = 0; i < orbit__logs_ring_count(l); i++) {
		uint64_t r;

		orbit__logs_totals(l, i, &r, NULL, NULL);
		reserved += r;
	}
	CHECK_EQ_U64(reserved, 0);

	/* The functions still work when called. */
	CHECK(orbit_marker("m", 1) == 0);
	CHECK(orbit__logs_read(l, identity, NULL, count_page, NULL, 0) == 1);
	orbit__logs_stop(l);
}

static const struct test_case cases[] = {
    {"compiled_out", case_compiled_out},
};

TEST_MAIN(cases)
