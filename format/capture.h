/*
 * capture.h — the contents of packets: the encoding of ring batches, and the
 * checks a reader applies to each packet before trusting it.
 */
#ifndef ORBIT_FORMAT_CAPTURE_H
#define ORBIT_FORMAT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include "orbit.pb-c.h"
#include "record.h"

#define ORBIT_BATCH_COLUMNS 1u /* RingBatch.encoding */
#define ORBIT_BATCH_MAX 16384u /* records in one batch (under ORBIT_PACKET_MAX) */
#define ORBIT_MAX_RINGS 128u

/*
 * Encoding 1, "columns": for n records, n little-endian u64 time deltas (each
 * record's time minus the previous one's, wrapping; the first minus 0), then n
 * u64 id deltas likewise, then n u64 words of tid | kind << 32 | flags << 40 |
 * len << 48, then n 32-byte name areas. n * 56 bytes in all; zstd compresses
 * the columns far better than the rows.
 */
void orbit__batch_encode(const uint8_t *records, uint32_t n, uint8_t *out);
/* The same batch as a whole orbit.Packet (ring_batch) message, written
 * straight into out without going through protobuf-c: its exact size, then
 * the bytes. protobuf-c decodes it like any other packet. */
size_t orbit__batch_packet_size(uint32_t ring, uint64_t first_claim, uint32_t n);
size_t orbit__batch_packet_write(uint8_t *out, uint32_t ring, uint64_t first_claim,
                                 const uint8_t *records, uint32_t n);

/* Decodes into n * ORBIT_RECORD_SIZE bytes of records; returns 0, or -EINVAL
 * when the bytes do not hold count records of that encoding. */
int orbit__batch_decode(const Orbit__RingBatch *b, uint8_t *records);

/* Checks a packet's fields against the format's limits (ring numbers,
 * counts, sizes, protocol version); 0 or -EINVAL. */
int orbit__packet_validate(const Orbit__Packet *p);

#endif
