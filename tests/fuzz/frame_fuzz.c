/*
 * frame_fuzz.c — libFuzzer target for the frame layer, fed the way
 * orbit-collector feeds it: the input is a byte stream; orbit__frame_size
 * finds each frame from its headers, orbit__frame_check decompresses and
 * decodes it into one scratch reused for every input (as the collector's one
 * scratch serves every connection), and every packet goes through
 * orbit__packet_validate. The same bytes then go through the streaming
 * capture reader. Whatever the bytes: no crash, frames within the input and
 * the limits, packet walks inside the content, errors with names. Also run
 * over its corpus as a plain regression test (frame_fuzz_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct orbit_frame_scratch scratch;

static void packets_walk(const struct orbit_frame_info *info)
{
	size_t off = 0, len;
	const uint8_t *p;
	uint32_t count = 0;

	while (orbit__frame_next_packet(&scratch, &off, &p, &len)) {
		if (p < scratch.buf || len > scratch.len || p + len > scratch.buf + scratch.len)
			abort();
		Orbit__Packet *pk = orbit__packet__unpack(NULL, len, p);
		if (pk == NULL)
			abort(); /* orbit__frame_check decoded every packet */
		(void)orbit__packet_validate(pk);
		orbit__packet__free_unpacked(pk, NULL);
		count++;
	}
	if (count != info->packets || off != scratch.len)
		abort();
}

/* Frames back to back, as the collector reads them. */
static void stream_walk(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		size_t flen = 0;
		struct orbit_frame_info info;
		int r = orbit__frame_size(data + off, size - off, &flen);

		if (r == 1)
			return;
		if (r < 0) {
			if (orbit__frame_strerror(r) == NULL)
				abort();
			return;
		}
		if (r != 0 || flen == 0 || flen > size - off || flen > ORBIT_FRAME_MAX_COMPRESSED)
			abort();
		r = orbit__frame_check(&scratch, data + off, flen, &info);
		if (r == 0) {
			if ((info.packets == 0) != (info.first == NULL) ||
			    info.content_size > ORBIT_FRAME_MAX_CONTENT ||
			    info.content_size != scratch.len)
				abort();
			packets_walk(&info);
			if (info.first != NULL)
				orbit__packet__free_unpacked(info.first, NULL);
		} else if (info.first != NULL || orbit__frame_strerror(r) == NULL) {
			abort();
		}
		off += flen;
	}
}

/* The streaming reader over the same bytes: terminates, never delivers
 * more packets than bytes. */
static void capture_walk(const uint8_t *data, size_t size)
{
	int fd = memfd_create("frame_fuzz", MFD_CLOEXEC), err = 0;

	if (fd < 0)
		return;
	if (write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET) != 0) {
		close(fd);
		return;
	}
	struct orbit_capture_reader *r = orbit__capture_from_fd(fd, &err);
	Orbit__Packet *p;
	struct orbit_capture_problem problem;
	size_t steps = 0;

	while (r != NULL) {
		int n = orbit__capture_next(r, &p, &problem);
		if (n == 0)
			break;
		if (n == 1)
			orbit__packet__free_unpacked(p, NULL);
		else if (problem.offset > size || orbit__frame_strerror(n) == NULL)
			abort();
		if (orbit__capture_offset(r) > size || ++steps > 2 * size + 16)
			abort();
	}
	orbit__capture_close(r);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stream_walk(data, size);
	capture_walk(data, size);
	return 0;
}
