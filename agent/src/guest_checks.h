/*
 * guest_checks.h — what the agent makes sure of before it starts a thread
 * in someone else's process: that the descriptors it needs can be opened
 * (libuv aborts when it cannot make its signal pipe), and the signal mask
 * its threads start with (no signal of the host's is ever handled on them).
 */
#ifndef ORBIT_AGENT_GUEST_CHECKS_H
#define ORBIT_AGENT_GUEST_CHECKS_H

#include <signal.h>

/* File descriptors the agent may need at once: its loop (epoll, libuv's
 * process-wide signal pipe and the loop's own, the wake pipe), the pass
 * timer, the collector's socket or the capture file, the local copy, and
 * two at a time while it reads /proc or replaces a capture file
 * (docs/operations.md, Limits). Checked in the host's table, where libuv's
 * process-wide pipe is made; the rest are in the agent's own
 * (guest_files.h), under the same RLIMIT_NOFILE. */
#define ORBIT__AGENT_FDS 12

/* 0 if ORBIT__AGENT_FDS descriptors can be opened now; else -EMFILE after
 * one stderr line (tracing stays off). */
int orbit__guest_check_fds(void);

/* The mask the agent's threads start with: every signal blocked but the
 * faults a thread causes itself. */
void orbit__guest_sigmask(sigset_t *set);

/* 1 when the calling thread is the process's last: the leader has ended
 * (main called pthread_exit; it waits as a zombie for the others) and no
 * other thread is left. Untraced, the process would have ended as by
 * exit(0). 0 otherwise, and when /proc cannot say. One read of
 * /proc/self/stat. */
int orbit__guest_alone(void);

/* 1 when the leader has ended (a zombie, main having called pthread_exit)
 * while other threads run; 0 otherwise, and when /proc cannot say. */
int orbit__guest_leader_ended(void);

/* The host's threads other than the caller, by /proc/self/task: every
 * thread but those whose name begins "orbit-" (the agent's); -1 when /proc
 * cannot say. */
int orbit__guest_others(void);

#endif
