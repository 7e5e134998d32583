/*
 * site_resolve.h — what a call site's descriptor says (struct orbit__site,
 * orbit.h), read from an address a ring record carries (flag bit 2).
 *
 * The address comes from shared memory that any process able to open the
 * segment may have written, so it is a number to check, never a pointer to
 * follow: the agent reads the bytes only once it knows they are a
 * descriptor the compiler wrote (site_resolve.c). A bad address gives no
 * location, never a fault.
 */
#ifndef ORBIT_AGENT_SITE_RESOLVE_H
#define ORBIT_AGENT_SITE_RESOLVE_H

#include <stddef.h>
#include <stdint.h>

#include "capture.h"

/* A descriptor's contents, copied out while its object could not be
 * unloaded; texts longer than ORBIT_SITE_TEXT_MAX are cut. */
struct orbit__site_text {
	char file[ORBIT_SITE_TEXT_MAX + 1];
	char function[ORBIT_SITE_TEXT_MAX + 1];
	uint32_t line;
};

/* 0 and *out filled (NUL-terminated texts), or -EFAULT: not a descriptor
 * of an object loaded in this process. */
int orbit__site_resolve(uint64_t addr, struct orbit__site_text *out);

#endif
