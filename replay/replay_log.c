/*
 * replay_log.c — log lines and markers from the page rings: one FtracePage
 * packet decoded with the hostile-input parser (ftrace_page.h), each record
 * handed to a callback, as the reconstructor hands over events.
 *
 * A record's payload is a log record (format/log_record.h, docs/format.md
 * 5.3): its type, the writer's tid, then the text (up to the first NUL: the
 * ring pads to 4 bytes with zeros) or the marker's bytes.
 */
#include <inttypes.h>
#include <string.h>

#include "ftrace_page.h"
#include "log_record.h"
#include "replay_log.h"
#include "replay_report.h"

/* One record of a page: a line, a marker, or something we do not know. */
static void log_record(struct orbit_rp_stream *s, uint32_t ring,
                       const struct orbit__ftrace_record *rec, orbit_rp_line_fn fn, void *ctx)
{
	if (rec->len < ORBIT__LOGS_HEADER) {
		s->bad_logs++;
		return;
	}
	uint16_t type = orbit__le16(rec->data);
	const char *text = (const char *)rec->data + ORBIT__LOGS_HEADER;
	size_t len = rec->len - ORBIT__LOGS_HEADER;
	uint64_t site = 0;
	if (type == ORBIT__LOGS_LINE_AT && len >= 8) { /* its call site, then the text */
		site = orbit__le64(rec->data + ORBIT__LOGS_HEADER);
		text += 8;
		len -= 8;
		type = ORBIT__LOGS_LINE;
	}
	if (type == ORBIT__LOGS_LINE) {
		const char *nul = memchr(text, '\0', len);
		len = nul ? (size_t)(nul - text) : len;
		s->logs++;
	} else if (type == ORBIT__LOGS_MARKER) {
		s->markers++;
	} else {
		s->bad_logs++;
		return;
	}
	orbit__rp_stream_saw(s, rec->time, rec->time);
	if (ring < s->npage)
		s->page_time[ring] = rec->time;
	struct orbit_rp_line l = {
	    .stream = s,
	    .pid = s->pid,
	    .tid = orbit__le32(rec->data + 4),
	    .flags = type == ORBIT__LOGS_MARKER ? ORBIT_RP_MARKER : 0,
	    .time = rec->time,
	    .text = text,
	    .len = (uint32_t)len,
	    .loc = orbit__rp_sites_get(&s->sites, site),
	};
	if (fn != NULL)
		fn(ctx, &l);
}

void orbit__rp_log_page(struct orbit_rp_stream *s, struct orbit_rp_report *rep, uint32_t ring,
                        const uint8_t *page, size_t len, orbit_rp_line_fn fn, void *ctx)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	int err = orbit__ftrace_open(&it, page, len, &h);
	uint64_t bad = s->bad_logs;
	int have_ring = orbit__rp_stream_page_ring(s, ring) == 0;
	while (err == 0 && (err = orbit__ftrace_next(&it, &rec)) == 1) {
		if (have_ring)
			s->page_delivered[ring]++;
		log_record(s, ring, &rec, fn, ctx);
		err = 0;
	}
	if (err < 0) {
		orbit__rp_problem(
		    rep, "%s: log page of ring %" PRIu32 ": %s at byte %" PRIu32 " of the page",
		    s->cap->path, ring, orbit__ftrace_strerror(err), it.err_off);
		s->cap->invalid++;
	} else if (!have_ring) {
		orbit__rp_problem(rep,
		                  "%s: log page of ring %" PRIu32 ", past the %u page rings a "
		                  "capture may have",
		                  s->cap->path, ring, ORBIT_MAX_PAGE_RINGS);
		s->cap->invalid++;
	}
	if (s->bad_logs > bad)
		orbit__rp_problem(rep,
		                  "%s: %" PRIu64 " log records of unknown type or too short in a "
		                  "page of ring %" PRIu32,
		                  s->cap->path, s->bad_logs - bad, ring);
}
