/*
 * replay_tail.c — thread names from a capture's tail, read before the
 * capture itself.
 *
 * The agent sends the kernel's thread names (ThreadName) at the end of a
 * stream, but CSV rows and log lines are written as they come. The last
 * frames of a capture (the last frame starts in its last 4 MiB) are read
 * first for those names; the reader resynchronises on the first zstd frame
 * it finds there. A name the program set itself still wins.
 */
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "replay_tail.h"

#define TAIL_BYTES (ORBIT_FRAME_MAX_COMPRESSED + (64u << 10)) /* holds the last whole frame */

void orbit__rp_tail_names(struct orbit_rp_threads *threads, const char *path, uint64_t size,
                          uint32_t pid)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
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
		if (p->body_case == ORBIT__PACKET__BODY_THREAD_NAME && p->thread_name->name) {
			struct orbit_rp_thread *th =
			    orbit__rp_thread(threads, pid, p->thread_name->tid);
			if (th != NULL && th->pid == pid && th->tid == p->thread_name->tid)
				orbit__rp_thread_name(th, p->thread_name->name,
				                      strlen(p->thread_name->name),
				                      ORBIT_RP_NAMED_OS);
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(r);
	close(fd);
}
