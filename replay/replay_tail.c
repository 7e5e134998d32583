/*
 * replay_tail.c — what a capture says at its end, read before the capture
 * itself: the last frames of a capture (the last frame starts in its last
 * 4 MiB + 64 KiB) are read first; the reader resynchronises on the first
 * zstd frame it finds there.
 *
 * Two things come only there. Before protocol version 3 the agent sends
 * the kernel's thread names (ThreadName) at the end of a stream, but CSV
 * rows and log lines are written as they come: those names are read first
 * (a name the program set itself still wins). And the time of the earliest
 * event, which no writer can know before its last record
 * (EndOfStream.first_ns, docs/format.md 4.13), for the runs that count
 * from it while they read.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "replay_tail.h"

#define TAIL_BYTES (ORBIT_FRAME_MAX_COMPRESSED + (64u << 10)) /* holds the last whole frame */

uint64_t orbit__rp_tail_read(struct orbit_rp_threads *threads, const char *path, uint64_t size,
                             uint32_t pid, uint64_t *bytes)
{
	uint64_t first = 0;
	*bytes = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	off_t at = size > TAIL_BYTES ? (off_t)(size - TAIL_BYTES) : 0;
	int err;
	struct orbit_capture_reader *r = NULL;
	if (lseek(fd, at, SEEK_SET) == at)
		r = orbit__capture_from_fd(fd, &err);
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = r ? orbit__capture_next(r, &p, &prob) : 0;
		if (rc == 0 || (rc < 0 && prob.error != rc))
			break;
		if (rc < 0)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE)
			pid = p->handshake->pid;
		if (p->body_case == ORBIT__PACKET__BODY_END)
			first = p->end->first_ns;
		if (threads != NULL && p->body_case == ORBIT__PACKET__BODY_THREAD_NAME &&
		    p->thread_name->name) {
			struct orbit_rp_thread *th =
			    orbit__rp_thread(threads, pid, p->thread_name->tid);
			if (th != NULL && th->pid == pid && th->tid == p->thread_name->tid)
				orbit__rp_thread_name(th, p->thread_name->name,
				                      strlen(p->thread_name->name),
				                      ORBIT_RP_NAMED_OS);
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	if (r != NULL)
		*bytes = orbit__capture_bytes_read(r);
	orbit__capture_close(r);
	close(fd);
	return first;
}
