/* dump_write.c — orbit-dump's capture file: the stream writer's frames
 * (format/stream_writer.h), the flight ring's as they are and its own
 * (docs/format.md 3.3: one stream, a plain zstd stream). A path given with
 * -o is written as asked (created, or truncated, never through a symbolic
 * link); the default name is created and never replaces a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"

static int write_all(struct orbit_dump_out *o, const uint8_t *p, size_t len)
{
	if (o->failed)
		return -EIO;
	while (len > 0) {
		ssize_t n = write(o->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int err = errno;
			fprintf(stderr, "orbit-dump: cannot write %s: %s\n", o->path,
			        strerror(err));
			o->failed = 1;
			return -err;
		}
		p += n;
		len -= (size_t)n;
		o->bytes += (uint64_t)n;
	}
	return 0;
}

static int on_frame(void *ctx, const struct orbit__sw_frame *f)
{
	return write_all(ctx, f->bytes, f->len);
}

/* A frame the writer could not compress (memory): its records are lost. */
static void on_lost(void *ctx, const uint64_t *records, uint32_t rings)
{
	(void)records;
	(void)rings;
	struct orbit_dump_out *o = ctx;
	if (!o->failed)
		fprintf(stderr, "orbit-dump: out of memory while writing %s\n", o->path);
	o->failed = 1;
}

int orbit__dump_out_open(struct orbit_dump_out *o, const char *path, FILE *err)
{
	memset(o, 0, sizeof o[0]);
	o->path = path;
	if (strcmp(path, "-") == 0) {
		o->fd = 1;
	} else {
		o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (o->fd < 0) {
			fprintf(err, "orbit-dump: cannot create %s: %s\n", path, strerror(errno));
			return -1;
		}
	}
	const struct orbit__sw_sink sink = {.ctx = o, .frame = on_frame, .lost = on_lost};
	o->sw = orbit__sw_new(-1, ORBIT_FRAME_TARGET, &sink);
	if (o->sw == NULL) {
		fprintf(err, "orbit-dump: out of memory\n");
		return -1;
	}
	return 0;
}

int orbit__dump_out_close(struct orbit_dump_out *o)
{
	int err = o->sw != NULL ? orbit__sw_cut(o->sw) : 0;
	orbit__sw_free(o->sw);
	o->sw = NULL;
	if (o->fd > 2 && close(o->fd) != 0 && !o->failed) {
		fprintf(stderr, "orbit-dump: cannot write %s: %s\n", o->path, strerror(errno));
		o->failed = 1;
	}
	return err || o->failed ? -1 : 0;
}
