/* frame.c — writing, checking and reading frames; see frame.h. */
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_d_windowLogMax, frame header */
#include "frame.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#define ZSTD_MAGIC 0xFD2FB528u
#define SKIPPABLE_MASK 0xFFFFFFF0u
#define SKIPPABLE_MAGIC 0x184D2A50u

const char *orbit__frame_strerror(int err)
{
	switch (err) {
	case ORBIT_FRAME_EMAGIC:
		return "not a zstd frame";
	case ORBIT_FRAME_EBIG:
		return "frame over the size limits";
	case ORBIT_FRAME_ENOSIZE:
		return "frame header without content size";
	case ORBIT_FRAME_ECORRUPT:
		return "frame data damaged";
	case ORBIT_FRAME_ECHECKSUM:
		return "frame without content checksum";
	case ORBIT_FRAME_EPACKET:
		return "bad packet in frame";
	case ORBIT_FRAME_ETRUNC:
		return "input ends inside a frame";
	default:
		return err < 0 ? strerror(-err) : "unknown error";
	}
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 1 << 16;
	while (c < need)
		c *= 2;
	uint8_t *b = realloc(*buf, c);
	if (b == NULL)
		return -ENOMEM;
	*buf = b;
	*cap = c;
	return 0;
}

/* ---- writing ---- */

int orbit__frame_writer_init(struct orbit_frame_writer *w, int level)
{
	memset(w, 0, sizeof *w);
	w->cctx = ZSTD_createCCtx();
	if (w->cctx == NULL)
		return -ENOMEM;
	w->level = level;
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_checksumFlag, 1);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_contentSizeFlag, 1);
	ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_windowLog, 22);
	return 0;
}

void orbit__frame_writer_free(struct orbit_frame_writer *w)
{
	ZSTD_freeCCtx(w->cctx);
	free(w->content);
	free(w->out);
	memset(w, 0, sizeof *w);
}

void orbit__frame_writer_trim(struct orbit_frame_writer *w)
{
	if (w->len != 0)
		return;
	free(w->content);
	free(w->out);
	w->content = w->out = NULL;
	w->cap = w->out_cap = w->out_len = 0;
}

int orbit__frame_add(struct orbit_frame_writer *w, const Orbit__Packet *p)
{
	size_t n = orbit__packet__get_packed_size(p);
	if (n > ORBIT_PACKET_MAX)
		return -E2BIG;
	if (grow(&w->content, &w->cap, w->len + n + 10) != 0)
		return -ENOMEM;
	w->len += orbit__put_varint(w->content + w->len, n);
	w->len += orbit__packet__pack(p, w->content + w->len);
	w->packets++;
	return 0;
}

uint8_t *orbit__frame_append(struct orbit_frame_writer *w, size_t len)
{
	if (len > ORBIT_PACKET_MAX || grow(&w->content, &w->cap, w->len + len + 10) != 0)
		return NULL;
	w->len += orbit__put_varint(w->content + w->len, len);
	uint8_t *p = w->content + w->len;
	w->len += len;
	w->packets++;
	return p;
}

int orbit__frame_finish(struct orbit_frame_writer *w)
{
	w->out_len = 0;
	if (w->len == 0)
		return 0;
	size_t bound = ZSTD_compressBound(w->len);
	if (grow(&w->out, &w->out_cap, bound) != 0)
		return -ENOMEM;
	size_t r = ZSTD_compress2(w->cctx, w->out, w->out_cap, w->content, w->len);
	if (ZSTD_isError(r))
		return -EIO;
	w->out_len = r;
	w->len = 0;
	w->packets = 0;
	return 0;
}

/* ---- checking ---- */

int orbit__frame_size(const uint8_t *buf, size_t len, size_t *frame_len)
{
	if (len < 4)
		return 1;
	uint32_t magic = (uint32_t)buf[0] | (uint32_t)buf[1] << 8 | (uint32_t)buf[2] << 16 |
	                 (uint32_t)buf[3] << 24;
	if (magic != ZSTD_MAGIC)
		return ORBIT_FRAME_EMAGIC;
	ZSTD_frameHeader h;
	size_t r = ZSTD_getFrameHeader(&h, buf, len);
	if (ZSTD_isError(r))
		return ORBIT_FRAME_ECORRUPT;
	if (r > 0)
		return 1; /* header incomplete */
	if (h.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN)
		return ORBIT_FRAME_ENOSIZE;
	if (h.frameContentSize > ORBIT_FRAME_MAX_CONTENT ||
	    h.windowSize > (1ull << ORBIT_FRAME_WINDOW_LOG_MAX))
		return ORBIT_FRAME_EBIG;
	if (!h.checksumFlag)
		return ORBIT_FRAME_ECHECKSUM;
	size_t n = ZSTD_findFrameCompressedSize(buf, len);
	if (ZSTD_isError(n)) {
		if (ZSTD_getErrorCode(n) != ZSTD_error_srcSize_wrong)
			return ORBIT_FRAME_ECORRUPT;
		/* Incomplete: more may come, up to the limit. */
		return len >= ORBIT_FRAME_MAX_COMPRESSED ? ORBIT_FRAME_EBIG : 1;
	}
	if (n > ORBIT_FRAME_MAX_COMPRESSED)
		return ORBIT_FRAME_EBIG;
	*frame_len = n;
	return 0;
}

void orbit__frame_scratch_free(struct orbit_frame_scratch *s)
{
	ZSTD_freeDCtx(s->dctx);
	free(s->buf);
	memset(s, 0, sizeof *s);
}

int orbit__frame_decompress(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len)
{
	s->len = 0;
	size_t flen;
	int err = orbit__frame_size(frame, len, &flen);
	if (err == 1)
		return ORBIT_FRAME_ETRUNC;
	if (err)
		return err;
	if (flen != len)
		return ORBIT_FRAME_ECORRUPT;
	unsigned long long content = ZSTD_getFrameContentSize(frame, len);
	if (s->dctx == NULL) {
		s->dctx = ZSTD_createDCtx();
		if (s->dctx == NULL)
			return -ENOMEM;
		ZSTD_DCtx_setParameter(s->dctx, ZSTD_d_windowLogMax, ORBIT_FRAME_WINDOW_LOG_MAX);
	}
	if (grow(&s->buf, &s->cap, content ? content : 1) != 0)
		return -ENOMEM;
	size_t r = ZSTD_decompressDCtx(s->dctx, s->buf, s->cap, frame, len);
	if (ZSTD_isError(r) || r != content) {
		ZSTD_DCtx_reset(s->dctx, ZSTD_reset_session_only);
		return ORBIT_FRAME_ECORRUPT;
	}
	/* Every packet length must fit: then walking cannot go wrong. */
	size_t off = 0;
	while (off < r) {
		uint64_t n;
		size_t used = orbit__get_varint(s->buf + off, r - off, &n);
		if (used == 0 || n > ORBIT_PACKET_MAX || n > r - off - used)
			return ORBIT_FRAME_EPACKET;
		off += used + n;
	}
	s->len = r;
	return 0;
}

int orbit__frame_next_packet(const struct orbit_frame_scratch *s, size_t *off,
                             const uint8_t **packet, size_t *len)
{
	if (*off >= s->len)
		return 0;
	uint64_t n = 0; /* lengths were checked by orbit__frame_decompress */
	size_t used = orbit__get_varint(s->buf + *off, s->len - *off, &n);
	*packet = s->buf + *off + used;
	*len = (size_t)n;
	*off += used + (size_t)n;
	return 1;
}

int orbit__frame_check(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len,
                       struct orbit_frame_info *info)
{
	memset(info, 0, sizeof *info);
	int err = orbit__frame_decompress(s, frame, len);
	if (err)
		return err;
	info->content_size = s->len;
	size_t off = 0, plen;
	const uint8_t *p;
	while (orbit__frame_next_packet(s, &off, &p, &plen)) {
		Orbit__Packet *pk = orbit__packet__unpack(NULL, plen, p);
		if (pk == NULL || pk->body_case == ORBIT__PACKET__BODY__NOT_SET) {
			if (pk)
				orbit__packet__free_unpacked(pk, NULL);
			if (info->first)
				orbit__packet__free_unpacked(info->first, NULL);
			info->first = NULL;
			return ORBIT_FRAME_EPACKET;
		}
		if (info->packets++ == 0)
			info->first = pk;
		else
			orbit__packet__free_unpacked(pk, NULL);
	}
	return 0;
}

/* ---- reading a capture ---- */

struct orbit_capture_reader {
	int fd;
	int own_fd;
	int eof;
	int follow;    /* a read of 0 bytes is the end for now, not the end */
	int dry;       /* following: the last read found nothing more yet */
	int resyncing; /* following: a search for the next frame waits for bytes */
	uint8_t *buf;  /* bytes read, not yet consumed: [start, end) */
	size_t start, end, cap;
	uint64_t base; /* file offset of buf[0] */
	struct orbit_frame_scratch scratch;
	size_t packet_off; /* next packet in scratch, when in_frame */
	int in_frame;
	uint64_t frames;     /* frames met so far, damaged ones too */
	uint64_t bytes_read; /* bytes read() from fd */
	int (*skip)(void *ctx, uint64_t offset, size_t len); /* orbit__capture_skip_frames */
	void *skip_ctx;
	uint64_t skipped; /* frames passed over */
};

struct orbit_capture_reader *orbit__capture_from_fd(int fd, int *err)
{
	struct orbit_capture_reader *r = calloc(1, sizeof *r);
	if (r == NULL) {
		*err = -ENOMEM;
		return NULL;
	}
	r->fd = fd;
	return r;
}

struct orbit_capture_reader *orbit__capture_open(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = -errno;
		return NULL;
	}
	struct orbit_capture_reader *r = orbit__capture_from_fd(fd, err);
	if (r == NULL)
		close(fd);
	else
		r->own_fd = 1;
	return r;
}

void orbit__capture_close(struct orbit_capture_reader *r)
{
	if (r == NULL)
		return;
	if (r->own_fd)
		close(r->fd);
	orbit__frame_scratch_free(&r->scratch);
	free(r->buf);
	free(r);
}

void orbit__capture_follow(struct orbit_capture_reader *r)
{
	r->follow = 1;
	r->eof = 0;
}

void orbit__capture_skip_frames(struct orbit_capture_reader *r,
                                int (*skip)(void *ctx, uint64_t offset, size_t len), void *ctx)
{
	r->skip = skip;
	r->skip_ctx = ctx;
}

uint64_t orbit__capture_skipped(const struct orbit_capture_reader *r)
{
	return r->skipped;
}

uint64_t orbit__capture_offset(const struct orbit_capture_reader *r)
{
	return r->base + r->start;
}

uint64_t orbit__capture_frames(const struct orbit_capture_reader *r)
{
	return r->frames;
}

uint64_t orbit__capture_bytes_read(const struct orbit_capture_reader *r)
{
	return r->bytes_read;
}

/* Makes at least want bytes available from start, unless the file ends. */
static int fill(struct orbit_capture_reader *r, size_t want)
{
	if (r->start > 0 && r->start + want > r->cap) {
		memmove(r->buf, r->buf + r->start, r->end - r->start);
		r->base += r->start;
		r->end -= r->start;
		r->start = 0;
	}
	if (grow(&r->buf, &r->cap, r->start + want) != 0)
		return -ENOMEM;
	r->dry = 0;
	while (!r->eof && r->end - r->start < want) {
		ssize_t n = read(r->fd, r->buf + r->end, r->cap - r->end);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0 && r->follow) {
			r->dry = 1;
			break;
		}
		if (n == 0)
			r->eof = 1;
		r->end += (size_t)n;
		r->bytes_read += (uint64_t)n;
	}
	return 0;
}

/* After damage at start: the next zstd magic past it, or the end; following,
 * 1 when the file ends for now before one (the search goes on at the next
 * call: resync_on). */
static int resync_on(struct orbit_capture_reader *r)
{
	for (;;) {
		while (r->start + 4 <= r->end) {
			const uint8_t *p = r->buf + r->start;
			if (p[0] == 0x28 && p[1] == 0xB5 && p[2] == 0x2F && p[3] == 0xFD)
				return 0;
			r->start++;
		}
		if (r->eof) {
			r->start = r->end;
			return 0;
		}
		int err = fill(r, 1 << 16);
		if (err)
			return err;
		if (r->end - r->start < 4 && r->eof) {
			r->start = r->end;
			return 0;
		}
		if (r->dry && r->end - r->start < 4) {
			r->resyncing = 1;
			return 1;
		}
	}
}

static int resync(struct orbit_capture_reader *r)
{
	r->start++;
	int rc = resync_on(r);
	return rc < 0 ? rc : 0;
}

/* Skips a skippable frame at start, if there is one: 1 skipped, 0 not,
 * following, 2 when it is not all written yet. */
static int skip_skippable(struct orbit_capture_reader *r)
{
	const uint8_t *p = r->buf + r->start;
	uint32_t magic =
	    (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
	if ((magic & SKIPPABLE_MASK) != SKIPPABLE_MAGIC)
		return 0;
	if (fill(r, 8) != 0)
		return 0;
	if (r->end - r->start < 8)
		return r->dry ? 2 : 0;
	p = r->buf + r->start;
	uint64_t n = 8 + ((uint64_t)p[4] | (uint64_t)p[5] << 8 | (uint64_t)p[6] << 16 |
	                  (uint64_t)p[7] << 24);
	if (fill(r, n > ORBIT_FRAME_MAX_COMPRESSED ? 8 : (size_t)n) != 0)
		return 0;
	if (r->dry && n <= ORBIT_FRAME_MAX_COMPRESSED && r->end - r->start < n)
		return 2;
	if (r->end - r->start < n) {
		/* Skippable frames longer than we buffer: skip by reading. */
		uint64_t left = n - (r->end - r->start);
		r->base += r->end;
		r->start = r->end = 0;
		if (lseek(r->fd, (off_t)left, SEEK_CUR) < 0)
			r->eof = 1;
		else
			r->base += left;
		return 1;
	}
	r->start += (size_t)n;
	return 1;
}

int orbit__capture_next(struct orbit_capture_reader *r, Orbit__Packet **packet,
                        struct orbit_capture_problem *problem)
{
	if (r->resyncing) {
		r->resyncing = 0;
		int rc = resync_on(r);
		if (rc != 0)
			return rc < 0 ? rc : ORBIT_CAPTURE_AGAIN;
	}
	for (;;) {
		if (r->in_frame) {
			const uint8_t *p;
			size_t len;
			if (orbit__frame_next_packet(&r->scratch, &r->packet_off, &p, &len)) {
				Orbit__Packet *pk = orbit__packet__unpack(NULL, len, p);
				if (pk != NULL) {
					*packet = pk;
					return 1;
				}
				/* A packet protobuf-c cannot decode, in a frame
				 * whose checksum held: written so by the agent. */
				problem->offset = orbit__capture_offset(r);
				problem->error = ORBIT_FRAME_EPACKET;
				return ORBIT_FRAME_EPACKET;
			}
			r->in_frame = 0;
		}
		int err = fill(r, 4);
		if (err)
			return err;
		if (r->dry && r->end - r->start < 4)
			return ORBIT_CAPTURE_AGAIN;
		if (r->end - r->start == 0)
			return 0;
		if (r->end - r->start >= 4) {
			int skipped = skip_skippable(r);
			if (skipped == 2)
				return ORBIT_CAPTURE_AGAIN;
			if (skipped)
				continue;
		}
		size_t flen = 0;
		uint64_t at = orbit__capture_offset(r);
		for (;;) {
			err = orbit__frame_size(r->buf + r->start, r->end - r->start, &flen);
			if (err != 1)
				break;
			if (r->dry)
				return ORBIT_CAPTURE_AGAIN; /* the frame is still being written */
			if (r->eof) {
				err = ORBIT_FRAME_ETRUNC;
				break;
			}
			size_t have = r->end - r->start;
			int e = fill(r, have < 65536 ? 65536 : have * 2);
			if (e)
				return e;
		}
		if (err == 0 && r->skip != NULL && r->frames > 0 &&
		    r->skip(r->skip_ctx, at, flen)) { /* whole, and not wanted */
			r->start += flen;
			r->frames++;
			r->skipped++;
			continue;
		}
		if (err == 0)
			err = orbit__frame_decompress(&r->scratch, r->buf + r->start, flen);
		if (err) {
			r->frames++;
			problem->offset = at;
			problem->error = err;
			int e = err == ORBIT_FRAME_ETRUNC ? (r->start = r->end, 0) : resync(r);
			return e ? e : err;
		}
		r->start += flen;
		r->packet_off = 0;
		r->in_frame = 1;
		r->frames++;
	}
}
