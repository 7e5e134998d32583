/*
 * segment_pages.h — the log pages a segment still holds (docs/format.md
 * 1.5): a page ring's pages that no reader took, from a private copy of the
 * ring's memory in the segment (pages × page_size bytes, then a 64-byte
 * state line per page).
 */
#ifndef ORBIT_FORMAT_SEGMENT_PAGES_H
#define ORBIT_FORMAT_SEGMENT_PAGES_H

#include <stdint.h>

#include "segment.h"

/* One page: page_size bytes in the ftrace layout (times as the ring stamped
 * them), commit = the bytes of its records that decode; writers: writers
 * inside it when it was copied; cut: records past commit were dropped
 * because they did not decode (a writer stopped inside one). */
typedef void (*orbit__seg_page_fn)(void *ctx, const uint8_t *page, uint32_t page_size,
                                   uint32_t index, uint32_t writers, int cut);

/* Calls fn for every page holding records no reader took, oldest first (by
 * the page's timestamp, then index), built in out (page_size bytes). The
 * bytes are hostile: a claim past the page is cut to it, records that do
 * not decode are left out. Returns the pages delivered, or -1 (memory). */
int orbit__seg_pages_unread(const uint8_t *mem, uint32_t pages, uint32_t page_size, uint8_t *out,
                            orbit__seg_page_fn fn, void *ctx);

#endif
