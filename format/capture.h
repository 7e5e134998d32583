/*
 * capture.h — the contents of packets: the encodings of ring batches, and
 * the checks a reader applies to each packet before trusting it.
 */
#ifndef ORBIT_FORMAT_CAPTURE_H
#define ORBIT_FORMAT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.pb-c.h"
#include "record.h"
#include "wire_limits.h"

#define ORBIT_BATCH_COLUMNS 1u /* RingBatch.encoding 1: read, no longer written */
#define ORBIT_BATCH_COMPACT 2u /* RingBatch.encoding 2: what writers write */
#define ORBIT_BATCH_MAX 16384u /* records in one batch */
/* Bytes of one page an FtracePage or KernelPage carries, and of the page
 * size a Handshake or its KernelSched states. */
#define ORBIT_PAGE_BYTES_MAX (1u << 20)
/* SourceLocations (format.md 4.12): entries in one packet, and bytes of a
 * file or function name; a writer cuts longer names to this. */
#define ORBIT_SITES_PER_PACKET 4096u
#define ORBIT_SITE_TEXT_MAX 4096u
/* Kernel scheduling (docs/format.md 4.10): event formats in a KernelSched
 * and the bytes of each (its CPUs: ORBIT_KERNEL_MAX_CPUS). */
#define ORBIT_KERNEL_MAX_FORMATS 256u
#define ORBIT_KERNEL_MAX_FORMAT (64u << 10)
/* How a stream ended: EndOfStream.ended (docs/format.md 4.8), and
 * Dump.ended, which orbit-dump writes and is never ORBIT_ENDED_AGENT
 * (4.11). */
enum orbit_stream_ended {
	ORBIT_ENDED_AGENT = 0,    /* the agent ended it */
	ORBIT_ENDED_SNAPSHOT = 1, /* orbit-dump took a snapshot of the live process */
	ORBIT_ENDED_GONE = 2,     /* orbit-dump found the process gone */
};
/* The most bytes encoding 2 takes for n records: per record a key index (3
 * bytes), a time and an id delta (10 each) and, at worst, a key of its own
 * (41); and the key count. Writers keep a packet under ORBIT_PACKET_MAX. */
#define ORBIT_BATCH_COMPACT_BOUND(n) ((size_t)(n)*64u + 3u)

/*
 * Encoding 2, "compact" (docs/format.md 4.3 is normative). For n records:
 *
 *   varint k                  the number of distinct keys, 1..n
 *   k keys                    u64 meta word (tid | kind << 32 | flags << 40 |
 *                             len << 48), u8 L, then the first L bytes of the
 *                             32-byte name area (the rest are zero)
 *   n varints                 each record's key index, below k
 *   n varints                 zigzag(time[i] - time[i-1]), time[-1] = 0
 *   n varints                 zigzag(id[i] - the id of the previous record
 *                             with the same key), 0 before the first
 *
 * A key is a record's bytes 16..55 (meta word and name area): a thread's
 * scope starts of one name share one, its stops another, so a batch of a
 * few names is a small table and three columns of one-byte varints. Nothing
 * refers outside the batch: a damaged frame costs only itself.
 */

/* The state of the encoder (its key table), reused batch after batch. */
struct orbit_batch_encoder;
struct orbit_batch_encoder *orbit__batch_encoder_new(void);
void orbit__batch_encoder_free(struct orbit_batch_encoder *e);
/* Encodes n records (n <= ORBIT_BATCH_MAX) in encoding 2, kept in e until
 * the next call; returns its size in bytes. */
size_t orbit__batch_compact(struct orbit_batch_encoder *e, const uint8_t *records, uint32_t n);
/* What the last orbit__batch_compact found besides the encoding: its
 * distinct keys (a key is a record's bytes 16..55, so each is of one
 * thread), the thread of key k, and the earliest time of its records that
 * carry a name (orbit__record_has_name; UINT64_MAX: none). */
uint32_t orbit__batch_nkeys(const struct orbit_batch_encoder *e);
uint32_t orbit__batch_key_tid(const struct orbit_batch_encoder *e, uint32_t k);
uint64_t orbit__batch_earliest_named(const struct orbit_batch_encoder *e);

/* The last batch encoded in e as a whole orbit.Packet (ring_batch) message,
 * written straight into out without going through protobuf-c: its exact
 * size, then the bytes. protobuf-c decodes it like any other packet. */
size_t orbit__batch_packet_size(const struct orbit_batch_encoder *e, uint32_t ring,
                                uint64_t first_claim);
size_t orbit__batch_packet_write(uint8_t *out, const struct orbit_batch_encoder *e, uint32_t ring,
                                 uint64_t first_claim);

/* One batch in encoding 2 into out (room for ORBIT_BATCH_COMPACT_BOUND(n)):
 * the bytes written, or 0 if memory is out (n > 0). For tools and tests. */
size_t orbit__batch_encode(const uint8_t *records, uint32_t n, uint8_t *out);
/* Encoding 1 (columns), which version-1 captures hold: n * 56 bytes. For
 * tests of the reader. */
void orbit__batch_encode_columns(const uint8_t *records, uint32_t n, uint8_t *out);

/* Decodes into n * ORBIT_RECORD_SIZE bytes of records (encoding 1 or 2);
 * returns 0, or -EINVAL when the bytes do not hold count records of that
 * encoding, or -ENOMEM. */
int orbit__batch_decode(const Orbit__RingBatch *b, uint8_t *records);

/* Checks a packet's fields against the format's limits (ring numbers,
 * counts, sizes, protocol version); 0 or -EINVAL. The contents of a ring
 * batch are checked by orbit__batch_decode, not here. */
int orbit__packet_validate(const Orbit__Packet *p);

#endif
