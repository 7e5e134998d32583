/* reply.c — the refusal line and Ack frames, as an agent reads them; see reply.h. */
#include "reply.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <zstd.h>

#include "capture.h"
#include "frame.h"

static int refusal(const uint8_t *buf, size_t len, size_t *used, char *reason, size_t reasonlen)
{
	const size_t plen = sizeof ORBIT_REFUSAL_PREFIX - 1;
	if (memcmp(buf, ORBIT_REFUSAL_PREFIX, len < plen ? len : plen) != 0)
		return -EPROTO;
	const uint8_t *nl = memchr(buf, '\n', len < ORBIT_REPLY_MAX ? len : ORBIT_REPLY_MAX);
	if (nl == NULL)
		return len >= ORBIT_REPLY_MAX ? -EPROTO : ORBIT_REPLY_MORE;
	if ((size_t)(nl - buf) < plen)
		return -EPROTO;
	/* "orbit-collector: rejected: REASON" */
	const uint8_t *p = buf + plen;
	if (p < nl && *p == ':')
		p++;
	while (p < nl && *p == ' ')
		p++;
	size_t n = 0;
	for (; p < nl && n + 1 < reasonlen; p++)
		reason[n++] = *p >= 0x20 && *p < 0x7f ? (char)*p : '?';
	if (reasonlen > 0)
		reason[n] = '\0';
	*used = (size_t)(nl - buf) + 1;
	return ORBIT_REPLY_REFUSAL;
}

static int ack_frame(const uint8_t *buf, size_t len, size_t *used, struct orbit_ack *ack)
{
	static const uint8_t magic[4] = {0x28, 0xB5, 0x2F, 0xFD};
	if (memcmp(buf, magic, len < 4 ? len : 4) != 0)
		return -EPROTO;
	if (len < 4)
		return ORBIT_REPLY_MORE;
	size_t flen = 0;
	int err = orbit__frame_size(buf, len, &flen);
	if (err == 1)
		return len >= ORBIT_ACK_FRAME_MAX ? -EPROTO : ORBIT_REPLY_MORE;
	if (err < 0 || flen > ORBIT_ACK_FRAME_MAX)
		return -EPROTO;
	/* The header says the content size (orbit__frame_size checked it is
	 * there): never more than an Ack frame could hold. */
	unsigned long long csize = ZSTD_getFrameContentSize(buf, flen);
	uint8_t content[ORBIT_ACK_FRAME_MAX];
	if (csize == ZSTD_CONTENTSIZE_ERROR || csize == ZSTD_CONTENTSIZE_UNKNOWN ||
	    csize > sizeof content || csize < 2)
		return -EPROTO;
	size_t got = ZSTD_decompress(content, sizeof content, buf, flen);
	if (ZSTD_isError(got) || got != csize)
		return -EPROTO;
	/* Exactly one packet: its varint length, then all the rest. */
	uint64_t plen = 0;
	size_t off = 0;
	for (int shift = 0; off < got && shift < 64; shift += 7) {
		uint8_t b = content[off++];
		plen |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
		if (off == got)
			return -EPROTO;
	}
	if (plen == 0 || plen != got - off)
		return -EPROTO;
	Orbit__Packet *p = orbit__packet__unpack(NULL, (size_t)plen, content + off);
	if (p == NULL)
		return -EPROTO;
	int ok = p->body_case == ORBIT__PACKET__BODY_ACK && orbit__packet_validate(p) == 0 &&
	         p->ack->frames > 0;
	if (ok)
		*ack = (struct orbit_ack){.frames = p->ack->frames,
		                          .bytes = p->ack->bytes,
		                          .synced_frames = p->ack->synced_frames,
		                          .end = p->ack->end};
	orbit__packet__free_unpacked(p, NULL);
	if (!ok)
		return -EPROTO;
	*used = flen;
	return ORBIT_REPLY_ACK;
}

int orbit__reply_next(const uint8_t *buf, size_t len, size_t *used, struct orbit_ack *ack,
                      char *reason, size_t reasonlen)
{
	*used = 0;
	if (len == 0)
		return ORBIT_REPLY_MORE;
	if (buf[0] == 'o')
		return refusal(buf, len, used, reason, reasonlen);
	return ack_frame(buf, len, used, ack);
}

void orbit__reply_describe(const uint8_t *buf, size_t len, char *out, size_t outlen)
{
	if (outlen == 0)
		return;
	if (len >= 5 && memcmp(buf, "HTTP/", 5) == 0) {
		snprintf(out, outlen, "HTTP");
		return;
	}
	size_t n = 0;
	while (n < len && n < 40 && buf[n] >= 0x20 && buf[n] < 0x7f)
		n++;
	if (n >= 3 && (n == len || buf[n] == '\r' || buf[n] == '\n'))
		snprintf(out, outlen, "\"%.*s\"", (int)n, (const char *)buf);
	else
		snprintf(out, outlen, "%zu bytes that are not an Orbit reply", len);
}

size_t orbit__reply_ack_encode(struct orbit_frame_writer *w, const struct orbit_ack *ack,
                               uint8_t *out)
{
	Orbit__Ack a = ORBIT__ACK__INIT;
	Orbit__Packet p = ORBIT__PACKET__INIT;
	a.frames = ack->frames;
	a.bytes = ack->bytes;
	a.synced_frames = ack->synced_frames;
	a.end = ack->end;
	p.body_case = ORBIT__PACKET__BODY_ACK;
	p.ack = &a;
	if (orbit__frame_add(w, &p) != 0 || orbit__frame_finish(w) != 0 || w->out_len == 0 ||
	    w->out_len > ORBIT_ACK_FRAME_MAX)
		return 0;
	memcpy(out, w->out, w->out_len);
	return w->out_len;
}
