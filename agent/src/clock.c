/* clock.c — choosing the producers' clock and converting it; see clock.h. */
#include "clock.h"

#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

uint64_t orbit__monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int clocksource_is(const char *want)
{
	char buf[64] = {0};
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (f == NULL)
		return 0;
	int ok = fgets(buf, sizeof buf, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok && strcmp(buf, want) == 0;
}

uint32_t orbit__clock_choose(void)
{
	const char *env = orbit__config_clock();
	if (env != NULL && strcmp(env, "monotonic") == 0)
		return ORBIT__CLOCK_MONOTONIC;
	int force = env != NULL && strcmp(env, "tsc") == 0;
	if (env != NULL && !force && strcmp(env, "auto") != 0)
		fprintf(stderr, "orbit: ORBIT_CLOCK=%s is not monotonic, tsc or auto; using auto\n",
		        env);
#if defined(__x86_64__)
	/* tsc: trust an invariant TSC even when the kernel chose another
	 * clocksource (conversion still goes through CLOCK_MONOTONIC). */
	unsigned a, b, c, d;
	if (__get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8)) &&
	    (force || clocksource_is("tsc")))
		return ORBIT__CLOCK_TSC;
#elif defined(__aarch64__)
	if (force || clocksource_is("arch_sys_counter"))
		return ORBIT__CLOCK_CNTVCT;
#endif
	if (force)
		fprintf(stderr, "orbit: ORBIT_CLOCK=tsc: no invariant counter here; using "
		                "CLOCK_MONOTONIC\n");
	return ORBIT__CLOCK_MONOTONIC;
}

uint64_t orbit__clock_ticks(uint32_t source)
{
#if defined(__x86_64__)
	if (source == ORBIT__CLOCK_TSC)
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
	if (source == ORBIT__CLOCK_CNTVCT) {
		uint64_t v;
		__asm__ __volatile__("isb; mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	(void)source;
	return orbit__monotonic_ns();
}

void orbit__clock_init(struct orbit__clock_conv *c, uint32_t source)
{
	memset(c, 0, sizeof *c);
	c->source = source;
}

static const struct orbit__clock_pair *pair_at(const struct orbit__clock_conv *c, uint32_t i)
{
	return &c->pair[(c->head + i) % ORBIT__CLOCK_PAIRS];
}

void orbit__clock_add_pair(struct orbit__clock_conv *c, struct orbit__clock_pair p)
{
	if (c->count > 0) {
		const struct orbit__clock_pair *last = pair_at(c, c->count - 1);
		if (p.ticks <= last->ticks || p.ns < last->ns)
			return;
	}
	if (c->count == ORBIT__CLOCK_PAIRS) {
		c->pair[c->head] = p;
		c->head = (c->head + 1) % ORBIT__CLOCK_PAIRS;
	} else {
		c->pair[(c->head + c->count) % ORBIT__CLOCK_PAIRS] = p;
		c->count++;
	}
}

void orbit__clock_calibrate(struct orbit__clock_conv *c)
{
	if (c->source == ORBIT__CLOCK_MONOTONIC)
		return;
	struct orbit__clock_pair best = {0, 0};
	uint64_t best_width = UINT64_MAX;
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = orbit__clock_ticks(c->source);
		uint64_t ns = orbit__monotonic_ns();
		uint64_t t1 = orbit__clock_ticks(c->source);
		if (t1 - t0 < best_width) {
			best_width = t1 - t0;
			best.ticks = t0 + (t1 - t0) / 2;
			best.ns = ns;
		}
	}
	orbit__clock_add_pair(c, best);
}

/* ns at ticks on the line through a and b (a.ticks < b.ticks). */
static uint64_t line(const struct orbit__clock_pair *a, const struct orbit__clock_pair *b,
                     uint64_t ticks)
{
	__int128 dt = (__int128)ticks - (__int128)a->ticks;
	__int128 span_t = (__int128)b->ticks - (__int128)a->ticks;
	__int128 span_ns = (__int128)b->ns - (__int128)a->ns;
	__int128 ns = (__int128)a->ns + dt * span_ns / span_t;
	return ns < 0 ? 0 : (uint64_t)ns;
}

uint64_t orbit__clock_to_ns(const struct orbit__clock_conv *c, uint64_t ticks)
{
	if (c->source == ORBIT__CLOCK_MONOTONIC)
		return ticks;
	if (c->count == 0)
		return 0;
	if (c->count == 1) /* no rate yet: the agent converts only with two */
		return pair_at(c, 0)->ns;
	/* Binary search for the last pair at or before ticks. */
	uint32_t lo = 0, hi = c->count - 1;
	if (ticks <= pair_at(c, 0)->ticks)
		return line(pair_at(c, 0), pair_at(c, 1), ticks);
	if (ticks >= pair_at(c, hi)->ticks)
		return line(pair_at(c, hi - 1), pair_at(c, hi), ticks);
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pair_at(c, mid)->ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	return line(pair_at(c, lo), pair_at(c, hi), ticks);
}

uint64_t orbit__clock_rate(const struct orbit__clock_conv *c)
{
	if (c->source == ORBIT__CLOCK_MONOTONIC || c->count < 2)
		return 0;
	const struct orbit__clock_pair *a = pair_at(c, 0), *b = pair_at(c, c->count - 1);
	if (b->ns == a->ns)
		return 0;
	return (uint64_t)((__int128)(b->ticks - a->ticks) * 1000000000 / (b->ns - a->ns));
}

void orbit__clock_cursor_init(struct orbit__clock_cursor *c, const struct orbit__clock_conv *conv)
{
	memset(c, 0, sizeof *c);
	c->conv = conv;
}

/* Loads the segment that holds ticks (pairs i and i + 1). */
static void cursor_load(struct orbit__clock_cursor *c, uint64_t ticks)
{
	const struct orbit__clock_conv *v = c->conv;
	uint32_t lo = 0, hi = v->count - 1;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (pair_at(v, mid)->ticks <= ticks)
			lo = mid;
		else
			hi = mid;
	}
	const struct orbit__clock_pair *a = pair_at(v, lo), *b = pair_at(v, hi);
	c->lo = a->ticks;
	c->hi = b->ticks;
	c->base_ns = a->ns;
	c->mult = (uint64_t)(((unsigned __int128)(b->ns - a->ns) << 32) / (b->ticks - a->ticks));
	c->valid = 1;
}

uint64_t orbit__clock_cursor_to_ns(struct orbit__clock_cursor *c, uint64_t ticks)
{
	const struct orbit__clock_conv *v = c->conv;
	/* Outside the pairs, or with too few, the exact path extrapolates. */
	if (v->source == ORBIT__CLOCK_MONOTONIC || v->count < 2 || ticks < pair_at(v, 0)->ticks ||
	    ticks >= pair_at(v, v->count - 1)->ticks)
		return orbit__clock_to_ns(v, ticks);
	if (!c->valid || ticks < c->lo || ticks >= c->hi)
		cursor_load(c, ticks);
	return c->base_ns + (uint64_t)(((unsigned __int128)(ticks - c->lo) * c->mult) >> 32);
}
