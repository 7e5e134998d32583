/*
 * replay_options.c — the replay core's options: their defaults, and the
 * --from / --to syntax ("1.5s" or "+1.5s" after the origin, "@123" absolute
 * CLOCK_MONOTONIC ns).
 */
#include <errno.h>
#include <string.h>

#include "replay.h"

void orbit__replay_defaults(struct orbit_replay_options *o)
{
	memset(o, 0, sizeof *o);
	o->top = 20;
	o->sort = ORBIT_REPLAY_SORT_TOTAL;
	o->progress = -1;
	o->html_max_scopes = 1000000;
	o->out = stdout;
	o->err = stderr;
}

static int unit_of(const char *s, uint64_t *unit)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (strcmp(s, units[i].name) == 0) {
			*unit = units[i].ns;
			return 0;
		}
	return -EINVAL;
}

int orbit__replay_parse_bound(const char *s, struct orbit_replay_bound *b)
{
	uint64_t whole = 0, frac = 0, scale = 1, unit;
	memset(b, 0, sizeof *b);
	b->relative = *s != '@';
	if (*s == '+' || *s == '@')
		s++;
	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		uint64_t d = (uint64_t)(*s - '0');
		if (whole > (UINT64_MAX - d) / 10)
			return -EINVAL;
		whole = whole * 10 + d;
	}
	if (*s == '.') {
		for (s++; *s >= '0' && *s <= '9'; s++)
			if (scale < 1000000000) {
				frac = frac * 10 + (uint64_t)(*s - '0');
				scale *= 10;
			}
	}
	if (unit_of(s, &unit) != 0)
		return -EINVAL;
	if (whole > UINT64_MAX / unit)
		return -EINVAL;
	b->ns = whole * unit + frac * unit / scale;
	b->set = 1;
	return 0;
}
