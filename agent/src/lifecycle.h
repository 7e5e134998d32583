/*
 * lifecycle.h — the process's one agent root and its life: orbit_init,
 * orbit_flush, orbit_shutdown (orbit.h), the exit handler, the fork
 * handler and the start when the library loads with an output configured.
 *
 * The root owns every piece of the agent for the process: its segment, its
 * log page rings, its agent thread, its configuration and the memory of
 * which bad values were said. It is the only process-wide state besides
 * what producers reach without a handle (producers.h), which it publishes;
 * everything else is an instance it passes down.
 */
#ifndef ORBIT_AGENT_LIFECYCLE_H
#define ORBIT_AGENT_LIFECYCLE_H

struct orbit__agent;

/* The process's agent (for tests and demo-drain, which set its sink and
 * read its totals). */
struct orbit__agent *orbit__root_agent(void);

#endif
