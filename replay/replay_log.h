/*
 * replay_log.h — log lines from FtracePage packets (replay_log.c).
 */
#ifndef ORBIT_REPLAY_LOG_H
#define ORBIT_REPLAY_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "replay_event.h"
#include "replay_stream.h"

struct orbit_rp_report;

/* Gets each log line and marker of a page (the line's thread unset). */
typedef void (*orbit_rp_line_fn)(void *ctx, const struct orbit_rp_line *l);

/* Decodes one FtracePage packet of stream s: counts its records in the
 * stream, reports a page the parser rejects, hands every line to fn (NULL:
 * count only). */
void orbit__rp_log_page(struct orbit_rp_stream *s, struct orbit_rp_report *rep, uint32_t ring,
                        const uint8_t *page, size_t len, orbit_rp_line_fn fn, void *ctx);

#endif
