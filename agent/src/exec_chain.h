/*
 * exec_chain.h — an image of the process after exec, and what the image
 * before it left (exec_chain.c).
 */
#ifndef ORBIT_AGENT_EXEC_CHAIN_H
#define ORBIT_AGENT_EXEC_CHAIN_H

#include "config.h"

#include <limits.h>
#include <stdint.h>

/* What this image found of the one before it. */
struct orbit__exec_link {
	uint32_t generation;    /* images before this one; 0: this is the first */
	uint64_t monotonic_ns;  /* the earlier image's stream; 0: unknown */
	char capture[PATH_MAX]; /* its capture, completed; "": none here */
	char comm[16];
	int renamed;       /* this image's capture is next, not ORBIT_CAPTURE */
	int name_too_long; /* ... which could not be named: no capture */
	char next[PATH_MAX];
};

/* Before this image makes its own segment (c: the configuration read
 * then): when an earlier image of this process (the same pid and start
 * time) left its segment, completes that image's capture, removes the
 * segment, and fills l. Says one line for anything it could not do; never
 * fails orbit_init. */
void orbit__exec_take_over(const struct orbit__config *c, struct orbit__exec_link *l);
/* The link into a configuration read later (every orbit_init reads one):
 * the exec_* fields and, when renamed, the capture path. */
void orbit__exec_apply(const struct orbit__exec_link *l, struct orbit__config *c);

#endif
