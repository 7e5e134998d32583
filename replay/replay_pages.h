/*
 * replay_pages.h — --pages FILE: a raw ftrace page file, page by page
 * (replay_pages.c).
 */
#ifndef ORBIT_REPLAY_PAGES_H
#define ORBIT_REPLAY_PAGES_H

#include <stdint.h>

#include "replay_internal.h"
#include "replay_report.h"

/* Prints every page of path (page_size bytes each) on out; returns
 * ORBIT_REPLAY_OK, or ORBIT_REPLAY_DAMAGED when a page is damaged or the
 * file cannot be read (reported). */
int orbit__rp_pages(struct orbit_rp_out *out, struct orbit_rp_report *rep, const char *path,
                    uint32_t page_size);

#endif
