/*
 * replay_origin.c — the time origin: the earliest time of any event
 * (scope, async span, value, thread name) or log line in any of the
 * captures, that is, the earliest start the summary shows (a stream with
 * neither starts at its handshake). --log prints seconds since it, relative
 * --from/--to count from it, --json states it; CSV, Chrome and Perfetto
 * carry absolute CLOCK_MONOTONIC times.
 *
 * The captures hold records from before their handshake (those still in
 * the rings when a stream began), and a ring's records are not in time
 * order, so the origin is known once everything is read: a capture of
 * protocol version 3 says it in its last packet (EndOfStream.first_ns,
 * docs/format.md 4.13), which the run reads first when it needs the origin
 * during the run (an exporter with ORBIT_RP_NEED_ORIGIN, or a relative
 * bound: replay_tail.c). The other captures are then read once before, for
 * their times only: the same reader, packet code and reconstructor,
 * without the statistics and the exporters (about 80 % of the summary's
 * CPU time). The other runs pay nothing for it.
 */
#include "replay_origin.h"
#include "replay_report.h"
#include "replay_timeline.h"

uint64_t orbit__rp_origin_of_capture(const struct orbit_rp_capture *cap)
{
	uint64_t origin = UINT64_MAX;
	for (const struct orbit_rp_stream *s = cap->streams; s; s = s->next) {
		uint64_t first, last;
		if (s->first > s->last && !s->handshake)
			continue; /* no time at all */
		orbit__rp_stream_span(s, &first, &last);
		if (first < origin)
			origin = first;
	}
	return origin;
}

uint64_t orbit__rp_origin_of(const struct orbit_rp_capture *caps, size_t n)
{
	uint64_t origin = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t o = orbit__rp_origin_of_capture(&caps[i]);
		if (o < origin)
			origin = o;
	}
	return origin == UINT64_MAX ? 0 : origin;
}

uint64_t orbit__rp_origin_scan(const char *const *paths, size_t n, uint64_t *bytes)
{
	struct orbit_rp_report quiet = {.err = NULL}; /* the run says it all */
	struct orbit_rp_timeline tl = {.rep = &quiet};
	uint64_t origin = UINT64_MAX;
	if (orbit__rp_timeline_open(&tl, paths, n) == 0) {
		orbit__rp_timeline_read(&tl);
		for (size_t i = 0; i < tl.n; i++) {
			uint64_t o = orbit__rp_origin_of_capture(&tl.caps[i]);
			if (o < origin)
				origin = o;
		}
	}
	orbit__rp_timeline_free(&tl);
	*bytes = orbit__rp_timeline_bytes_read(&tl);
	return origin;
}
