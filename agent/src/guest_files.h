/*
 * guest_files.h — the agent thread's descriptors, in a table of its own.
 *
 * A host may close descriptors it did not open (closefrom(3), a loop to
 * 1024: daemon-style code) and then reuse their numbers for files of its
 * own. Were the agent's loop, timer, sockets and files in the process's
 * table, libuv would abort on the next epoll_wait, and a wake-up or a frame
 * could be written into the host's file that now has the number. So the
 * agent thread leaves the process's table (unshare(CLONE_FILES)) before it
 * opens anything:
 *
 *  1. Every descriptor the agent opens on its thread (and on libuv's
 *     resolver threads, which share the thread's table) is in a table the
 *     host's threads do not see: their closes, dup2s and opens never reach
 *     it, and the agent's never reach theirs.
 *  2. Of the table it inherits it keeps only stderr (for its one-line
 *     messages) and the segment's descriptor (its owner's lock stays held
 *     while the agent runs, whatever the host closes); it closes the
 *     rest, so a file, pipe or socket the host closes is closed (no pipe
 *     reader waits for an end of file because of us).
 *  3. Its stderr follows the host's (orbit__guest_files_follow, at most
 *     SLOW_CHECK_NS apart, agent.c): when the host points descriptor 2
 *     elsewhere or closes it, the agent's messages follow, and the old
 *     file is let go.
 *  4. Host threads wake it without a descriptor of the agent's: they open
 *     the agent thread's wake pipe by its /proc/self/task name for one
 *     write and close it at once; if that cannot be done, the agent finds
 *     the request at its next pass (agent.c).
 *  5. Where unshare is refused (a seccomp filter), and in a build under
 *     ThreadSanitizer (which tracks descriptors by number, process-wide),
 *     the agent shares the process's table as any library's thread does,
 *     and says nothing: a host that closes the agent's descriptors then
 *     stops its tracing.
 *
 * A forked child has a copy of the forking thread's table: with a table of
 * its own the agent left no copies of its descriptors in it (own), and
 * the child must not close the numbers the agent had (they are the host's).
 */
#ifndef ORBIT_AGENT_GUEST_FILES_H
#define ORBIT_AGENT_GUEST_FILES_H

struct orbit__guest_files {
	int own;    /* the thread has a table of its own (5.) */
	int pidfd;  /* the process, whose stderr the agent's follows (3.); -1: none */
	int tid;    /* the agent thread */
	int wake_r; /* the wake pipe, in the agent's table; -1: none */
	int wake_w;
};

#define ORBIT__GUEST_FILES_INIT                                                                    \
	{                                                                                          \
		.pidfd = -1, .wake_r = -1, .wake_w = -1                                            \
	}

/* On the agent thread, before it opens anything: a table of its own
 * holding, of what it inherited, only stderr and keep (-1: nothing more),
 * then the wake pipe (non-blocking). 0, or a negative errno if the pipe
 * cannot be made (the agent then has nothing to be woken by). */
int orbit__guest_files_own(struct orbit__guest_files *g, int keep);
/* On the agent thread: its descriptor 2 made the host's descriptor 2 again
 * (closed if the host has none). */
void orbit__guest_files_follow(struct orbit__guest_files *g);
/* On the agent thread: the wake pipe read empty. */
void orbit__guest_files_woken(struct orbit__guest_files *g);
/* On a host thread: one byte into the wake pipe, or nothing if it cannot
 * be reached (the agent's next pass finds the request). */
void orbit__guest_files_wake(const struct orbit__guest_files *g);
/* On the agent thread, as it ends: the pipe and the pidfd closed. */
void orbit__guest_files_close(struct orbit__guest_files *g);

#endif
