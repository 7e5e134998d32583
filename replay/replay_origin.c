/*
 * replay_origin.c — the time origin: the earliest time of any event
 * (scope, async span, value, thread name) or log line in any of the
 * captures, that is, the earliest start the summary shows (a stream with
 * neither starts at its handshake). --log prints seconds since it, relative
 * --from/--to count from it, --json states it; CSV, Chrome and Perfetto
 * carry absolute CLOCK_MONOTONIC times.
 *
 * The captures hold records from before their handshake (those still in
 * the rings when a stream began), so the origin is not in any header: it is
 * known once everything is read. When something needs it during the run
 * (an exporter with ORBIT_RP_NEED_ORIGIN, or a relative bound), the
 * captures are read once before for their times only: the same reader,
 * packet code and reconstructor, without the statistics and the exporters
 * (about 80 % of the summary's CPU time). The other runs pay
 * nothing for it.
 */
#include "replay_origin.h"
#include "replay_report.h"
#include "replay_timeline.h"

uint64_t orbit__rp_origin_of(const struct orbit_rp_capture *caps, size_t n)
{
	uint64_t origin = UINT64_MAX;
	for (size_t i = 0; i < n; i++)
		for (const struct orbit_rp_stream *s = caps[i].streams; s; s = s->next) {
			uint64_t first, last;
			if (s->first > s->last && !s->handshake)
				continue; /* no time at all */
			orbit__rp_stream_span(s, &first, &last);
			if (first < origin)
				origin = first;
		}
	return origin == UINT64_MAX ? 0 : origin;
}

uint64_t orbit__rp_origin_scan(const char *const *paths, size_t n)
{
	struct orbit_rp_report quiet = {.err = NULL}; /* the run says it all */
	struct orbit_rp_timeline tl = {.rep = &quiet};
	uint64_t origin = 0;
	if (orbit__rp_timeline_open(&tl, paths, n) == 0) {
		orbit__rp_timeline_read(&tl);
		origin = orbit__rp_origin_of(tl.caps, tl.n);
	}
	orbit__rp_timeline_free(&tl);
	return origin;
}
