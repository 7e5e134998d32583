/* dump_write.c — orbit-dump's capture file: frames as the flight ring kept
 * them, and frames of its own (docs/format.md 3.3: one stream, a plain zstd
 * stream). A path given with -o is written as asked (created, or
 * truncated, never through a symbolic link); the default name is created
 * and never replaces a file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "dump.h"

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
	if (orbit__frame_writer_init(&o->fw, -1) != 0) {
		fprintf(err, "orbit-dump: out of memory\n");
		return -1;
	}
	o->fw_init = 1;
	return 0;
}

static int write_all(struct orbit_dump_out *o, const uint8_t *p, size_t len)
{
	if (o->failed)
		return -1;
	while (len > 0) {
		ssize_t n = write(o->fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fprintf(stderr, "orbit-dump: cannot write %s: %s\n", o->path,
			        strerror(errno));
			o->failed = 1;
			return -1;
		}
		p += n;
		len -= (size_t)n;
		o->bytes += (uint64_t)n;
	}
	return 0;
}

int orbit__dump_out_flush(struct orbit_dump_out *o)
{
	if (orbit__frame_finish(&o->fw) != 0) {
		o->failed = 1;
		return -1;
	}
	return o->fw.out_len ? write_all(o, o->fw.out, o->fw.out_len) : 0;
}

int orbit__dump_out_frame(struct orbit_dump_out *o, const uint8_t *bytes, size_t len)
{
	/* Frames stay whole and in order: ours so far go first. */
	if (o->fw.len && orbit__dump_out_flush(o) != 0)
		return -1;
	return write_all(o, bytes, len);
}

int orbit__dump_out_packet(struct orbit_dump_out *o, const Orbit__Packet *p)
{
	if (orbit__frame_add(&o->fw, p) != 0)
		return -1;
	return o->fw.len >= ORBIT_FRAME_TARGET ? orbit__dump_out_flush(o) : 0;
}

uint8_t *orbit__dump_out_append(struct orbit_dump_out *o, size_t len)
{
	if (o->fw.len >= ORBIT_FRAME_TARGET && orbit__dump_out_flush(o) != 0)
		return NULL;
	return orbit__frame_append(&o->fw, len);
}

int orbit__dump_out_close(struct orbit_dump_out *o)
{
	int err = orbit__dump_out_flush(o);
	if (o->fw_init)
		orbit__frame_writer_free(&o->fw);
	o->fw_init = 0;
	if (o->fd > 2 && close(o->fd) != 0 && !o->failed) {
		fprintf(stderr, "orbit-dump: cannot write %s: %s\n", o->path, strerror(errno));
		o->failed = 1;
	}
	return err || o->failed ? -1 : 0;
}
