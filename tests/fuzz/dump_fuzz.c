/*
 * dump_fuzz.c — libFuzzer target: hostile bytes as a segment, read by
 * orbit-dump's reader (dump/dump_read.c): the header's validation, the
 * state area and its calibration, the flight ring (metadata, handshake,
 * entries anywhere), the scope rings past the flight ring's frames
 * (dump/dump_rings.c: hostile cursors and stamps, torn records, through
 * format/scope_slot.c), the page rings, and the capture it writes.
 *
 * A segment is megabytes of mostly zeros, so the input describes one as
 * patches over zeros: a u32 size in KiB (at most 8 MiB), then any number of
 * (u32 offset, u16 length, length bytes). The image goes into a memfd and
 * the dump reads it through its descriptor, as it reads /dev/shm.
 *
 * Besides "no crash, no sanitizer report, no hang": the exit status is 0
 * or 2, and a capture it calls complete (0) reads back with orbit-replay's
 * reader without a damaged frame. make_dump_corpus.py writes the seeds
 * from real segments; the plain build runs corpus/dump/ as dump_fuzz_corpus.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dump.h"
#include "frame.h"

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "dump_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);      \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 4)
		return 0;
	uint64_t image = (uint64_t)(le32(data) % (8u << 10)) << 10;
	int fd = memfd_create("dump_fuzz", MFD_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(ftruncate(fd, (off_t)image) == 0);
	for (size_t at = 4; at + 6 <= size;) {
		uint32_t off = le32(data + at);
		uint32_t len = (uint32_t)data[at + 4] | (uint32_t)data[at + 5] << 8;
		at += 6;
		if (len > size - at)
			len = (uint32_t)(size - at);
		if (off < image) {
			uint64_t n = len < image - off ? len : image - off;
			FUZZ_CHECK(pwrite(fd, data + at, n, off) == (ssize_t)n);
		}
		at += len;
	}
	char out[64];
	snprintf(out, sizeof out, "/tmp/dump_fuzz-%d.orbit.zst", (int)getpid());
	static struct orbit_dump d;
	memset(&d, 0, sizeof d);
	d.name = "fuzz";
	d.fd = fd;
	d.err = fopen("/dev/null", "w");
	FUZZ_CHECK(d.err != NULL);
	int status = orbit__dump_run(&d, out);
	fclose(d.err);
	close(fd);
	FUZZ_CHECK(status == ORBIT_DUMP_OK || status == ORBIT_DUMP_DAMAGED);
	if (status == ORBIT_DUMP_OK) {
		int err;
		struct orbit_capture_reader *r = orbit__capture_open(out, &err);
		FUZZ_CHECK(r != NULL);
		Orbit__Packet *p;
		struct orbit_capture_problem problem;
		int n;
		while ((n = orbit__capture_next(r, &p, &problem)) != 0) {
			FUZZ_CHECK(n == 1); /* no damaged frame in a complete dump */
			orbit__packet__free_unpacked(p, NULL);
		}
		orbit__capture_close(r);
	}
	unlink(out);
	return 0;
}
