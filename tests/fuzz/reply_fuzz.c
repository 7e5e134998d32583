/*
 * reply_fuzz.c — libFuzzer target for what the agent reads from a collector
 * (format/reply.c), fed the way output_tcp.c feeds it: the input is the byte
 * stream a peer sends, arriving in pieces (the first input byte sets their
 * size), held in a buffer of ORBIT_REPLY_MAX bytes, each reply taken off its
 * front as soon as it is whole. Whatever the bytes: no crash, never more
 * than the buffer, every Ack within the format's rules (frames >= 1,
 * synced_frames <= frames), a refusal's reason printable and NUL-ended, and
 * a stream that is not a reply stopped at its first bad byte. Also run over
 * its corpus as a plain regression test (reply_fuzz_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t buf[ORBIT_REPLY_MAX];
	size_t len = 0, at = 0, piece = size > 0 ? (size_t)data[0] % 64 + 1 : 1;
	char what[80];
	if (size > 0) {
		data++;
		size--;
	}
	while (at < size) {
		size_t n = size - at < piece ? size - at : piece;
		if (n > sizeof buf - len)
			n = sizeof buf - len;
		memcpy(buf + len, data + at, n);
		len += n;
		at += n;
		for (;;) {
			struct orbit_ack a;
			char reason[ORBIT_REPLY_MAX];
			size_t used = 0;
			int r = orbit__reply_next(buf, len, &used, &a, reason, sizeof reason);
			if (r == ORBIT_REPLY_MORE) {
				if (used != 0 || len >= sizeof buf)
					abort(); /* a reply that never ends is refused */
				break;
			}
			if (r < 0) {
				orbit__reply_describe(buf, len, what, sizeof what);
				if (memchr(what, '\0', sizeof what) == NULL)
					abort();
				return 0; /* the agent drops such a peer */
			}
			if (used == 0 || used > len)
				abort();
			if (r == ORBIT_REPLY_ACK && (a.frames == 0 || a.synced_frames > a.frames))
				abort();
			if (r == ORBIT_REPLY_REFUSAL) {
				size_t k = strlen(reason);
				for (size_t i = 0; i < k; i++)
					if (reason[i] < 0x20 || reason[i] > 0x7e)
						abort();
				return 0; /* tracing is off */
			}
			memmove(buf, buf + used, len - used);
			len -= used;
		}
	}
	orbit__reply_describe(buf, len, what, sizeof what);
	return 0;
}
