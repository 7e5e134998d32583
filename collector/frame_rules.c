/*
 * frame_rules.c — what every frame of a stream must be before a collector
 * writes it, whether it came over TCP (conn.c) or from a spool file
 * (ingest.c): one checker, so that a file ingested meets exactly the rules
 * a connection does; and the one comparison of a secret the collector
 * makes (its token, from an agent or from a browser).
 */
#include "collector.h"

#include <inttypes.h>
#include <stdio.h>

#include "parse.h"

int orbit__secret_equal(const void *got, size_t n, const void *secret, size_t len)
{
	/* Constant time in the peer's bytes: every byte of the secret is compared. */
	const unsigned char *g = got, *t = secret;
	unsigned diff = n != len;
	for (size_t i = 0; i < len; i++)
		diff |= t[i] ^ (i < n ? g[i] : 0u);
	return diff == 0;
}

int orbit__frame_rules(struct orbit_frame_scratch *s, const uint8_t *frame, size_t len, int first,
                       int (*each)(void *ctx, const Orbit__Packet *p, char *why, size_t n),
                       void *ctx, char *why, size_t n)
{
	int err = orbit__frame_decompress(s, frame, len);
	if (err) {
		snprintf(why, n, "%s", orbit__frame_strerror(err));
		return err;
	}
	size_t off = 0, plen;
	const uint8_t *bytes;
	uint32_t i = 0, count = 0;
	while (orbit__frame_next_packet(s, &off, &bytes, &plen))
		count++;
	if (first && count == 0) {
		snprintf(why, n, "the first frame holds no packet");
		return -EPROTO;
	}
	for (off = 0; !err && orbit__frame_next_packet(s, &off, &bytes, &plen); i++) {
		Orbit__Packet *p = orbit__packet__unpack(NULL, plen, bytes);
		if (p == NULL || p->body_case == ORBIT__PACKET__BODY__NOT_SET) {
			snprintf(why, n, "packet %" PRIu32 ": %s", i,
			         orbit__frame_strerror(ORBIT_FRAME_EPACKET));
			err = ORBIT_FRAME_EPACKET;
		} else if (first && p->body_case != ORBIT__PACKET__BODY_HANDSHAKE) {
			snprintf(why, n, "the first packet is not a handshake (packet type %d)",
			         (int)p->body_case);
			err = -EPROTO;
		} else if (first && count != 1) {
			snprintf(why, n, "the handshake frame holds %" PRIu32 " packets, not 1",
			         count);
			err = -EPROTO;
		} else if (first && (p->handshake->protocol_version < ORBIT_PROTOCOL_VERSION_MIN ||
		                     p->handshake->protocol_version > ORBIT_PROTOCOL_VERSION_MAX)) {
			snprintf(why, n,
			         "protocol version %" PRIu32 ", this collector speaks %u to %u",
			         p->handshake->protocol_version, ORBIT_PROTOCOL_VERSION_MIN,
			         ORBIT_PROTOCOL_VERSION_MAX);
			err = -EPROTO;
		} else if (first && orbit__packet_validate(p) != 0) {
			snprintf(why, n, "invalid handshake (ring geometry out of bounds)");
			err = -EINVAL;
		} else if (!first && p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
			snprintf(why, n, "packet %" PRIu32 ": a second handshake", i);
			err = -EPROTO;
		} else if (p->body_case == ORBIT__PACKET__BODY_ACK) { /* collectors' only */
			snprintf(why, n, "packet %" PRIu32 ": an acknowledgement from an agent", i);
			err = -EPROTO;
		} else if (!first && orbit__packet_validate(p) != 0) {
			snprintf(why, n, "packet %" PRIu32 " (type %d): fields out of bounds", i,
			         (int)p->body_case);
			err = -EINVAL;
		} else if (each != NULL) {
			err = each(ctx, p, why, n);
		}
		if (p != NULL)
			orbit__packet__free_unpacked(p, NULL);
	}
	return err; /* an empty frame later in the stream is harmless */
}
