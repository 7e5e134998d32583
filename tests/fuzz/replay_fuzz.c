/*
 * replay_fuzz.c — libFuzzer target for orbit-replay's reading path: the
 * replay core (replay/replay.h) reads the input as a capture file, from a
 * memfd, with every output on (CSV, Chrome, Perfetto, HTML, JSON to /dev/null).
 * Whatever the bytes: no crash, no leak, no undefined behaviour, a status
 * of 0 or 2. Also run over its corpus as a plain regression test
 * (replay_fuzz_corpus).
 *
 * The first byte chooses how the rest becomes a capture:
 *   bit 0 clear  the bytes are the capture (the reader and its
 *                resynchronisation get the mutations);
 *   bit 0 set    the bytes are frame contents, each a u16 length and that
 *                many bytes, compressed here into checksummed zstd frames
 *                (the packets, batches, records, pages and the
 *                reconstruction get them);
 *   bit 1        --log as well;  bit 2  filters (--name, --from, --to);
 *   bit 3        --by location;  bit 4  up_front_off (what a capture of
 *                protocol version 3 states up front is not taken: the other
 *                reading, docs/replay.md).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zstd.h>

#include "replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void put(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w <= 0)
			abort();
		b += w;
		n -= (size_t)w;
	}
}

/* u16-length chunks of content, each one checksummed zstd frame. */
static void frames(int fd, const uint8_t *data, size_t size)
{
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(65535);
	void *out = malloc(cap);
	if (c == NULL || out == NULL)
		abort();
	ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, 1);
	size_t off = 0;
	while (off < size) {
		size_t len = size - off >= 2 ? (size_t)(data[off] | data[off + 1] << 8) : 0;
		off += size - off >= 2 ? 2 : size - off;
		if (len > size - off)
			len = size - off;
		size_t n = ZSTD_compress2(c, out, cap, data + off, len);
		if (ZSTD_isError(n))
			abort();
		put(fd, out, n);
		off += len;
	}
	free(out);
	ZSTD_freeCCtx(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t mode = data[0];
	int fd = memfd_create("replay_fuzz", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (mode & 1)
		frames(fd, data + 1, size - 1);
	else if (size > 1)
		put(fd, data + 1, size - 1);
	char path[64];
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	const char *inputs[] = {path};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	FILE *null = fopen("/dev/null", "w");
	if (null == NULL)
		abort();
	o.inputs = inputs;
	o.ninputs = 1;
	o.out = null;
	o.err = null;
	o.progress = 0;
	o.csv_path = "/dev/null";
	o.chrome_path = "/dev/null";
	o.perfetto_path = "/dev/null";
	o.html_path = "/dev/null";
	o.json_path = "/dev/null";
	o.top = 0;
	o.log = (mode & 2) != 0;
	o.by_location = (mode & 8) != 0;
	o.up_front_off = (mode & 16) != 0;
	if (mode & 4) {
		o.name = "a";
		orbit__replay_parse_bound("+1000", &o.from);
		orbit__replay_parse_bound("+10ms", &o.to);
	}
	int status = orbit__replay_run(&o);
	if (status != ORBIT_REPLAY_OK && status != ORBIT_REPLAY_DAMAGED)
		abort();
	fclose(null);
	close(fd);
	return 0;
}
