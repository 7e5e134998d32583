/*
 * replay_open.h — the scopes still open on each thread when a stream's
 * input ended (its reconstructor's finish, format/reconstruct.h): what a
 * crashed, killed or snapshot process was in the middle of. The summary
 * shows each thread's as a stack, outermost first (replay_open.c).
 */
#ifndef ORBIT_REPLAY_OPEN_H
#define ORBIT_REPLAY_OPEN_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT_RP_OPEN_MAX 4096u /* open scopes kept per stream */
#define ORBIT_RP_OPEN_NAME 80u  /* name bytes kept of each */

struct orbit_rp_open_scope {
	uint32_t tid, depth;
	uint64_t start;
	uint32_t name_len;
	char name[ORBIT_RP_OPEN_NAME];
};

struct orbit_rp_open {
	struct orbit_rp_open_scope *v;
	size_t n, cap;
	uint64_t dropped; /* past ORBIT_RP_OPEN_MAX, or no memory */
	int sorted;
};

/* A scope open at the end of the input. */
void orbit__rp_open_note(struct orbit_rp_open *o, uint32_t tid, uint32_t depth, uint64_t start,
                         const char *name, size_t len);
/* By thread (tid), then depth: each thread's stack, outermost first. */
void orbit__rp_open_sort(struct orbit_rp_open *o);
void orbit__rp_open_free(struct orbit_rp_open *o);

#endif
