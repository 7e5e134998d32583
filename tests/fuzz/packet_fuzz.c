/*
 * packet_fuzz.c — libFuzzer target for one packet: orbit__packet__unpack,
 * orbit__packet_validate, and for ring batches orbit__batch_decode and
 * orbit__record_decode of every record. A batch of columns that validates
 * must decode;
 * decoding never writes past count records; a decoded packet packs, and
 * what it packs to decodes to the same thing. Also run over its corpus as a plain regression test
 * (packet_fuzz_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "frame.h"
#include "record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void batch_walk(const Orbit__RingBatch *b, int valid)
{
	uint32_t n = b->count <= ORBIT_BATCH_MAX ? b->count : 0;
	uint8_t *records = malloc((size_t)n * ORBIT_RECORD_SIZE + 1);

	if (records == NULL)
		abort();
	int r = orbit__batch_decode(b, records);
	/* Validation checks sizes, not an encoding's contents: a valid batch
	 * of columns decodes; a compact one may still be refused. */
	if (valid && b->encoding == ORBIT_BATCH_COLUMNS && r != 0)
		abort();
	if (r == 0 && b->count > ORBIT_BATCH_MAX)
		abort();
	for (uint32_t i = 0; r == 0 && i < n; i++) {
		struct orbit_record rec;
		(void)orbit__record_decode(records + (size_t)i * ORBIT_RECORD_SIZE, &rec);
	}
	free(records);
}

static void repack(const Orbit__Packet *p)
{
	size_t n = orbit__packet__get_packed_size(p);
	uint8_t *buf = malloc(n ? n : 1);

	if (buf == NULL || orbit__packet__pack(p, buf) != n)
		abort();
	/* protobuf-c keeps unknown fields and packs them again; one it accepts
	 * (field number 0 in a non-minimal varint tag: 80 00) it then refuses
	 * once packed minimally (00). So q may be NULL; if not, it matches. */
	Orbit__Packet *q = orbit__packet__unpack(NULL, n, buf);
	if (q != NULL && (q->body_case != p->body_case || orbit__packet__get_packed_size(q) != n ||
	                  (orbit__packet_validate(q) == 0) != (orbit__packet_validate(p) == 0)))
		abort();
	if (q != NULL)
		orbit__packet__free_unpacked(q, NULL);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > ORBIT_PACKET_MAX)
		return 0; /* the frame layer refuses longer packets */
	Orbit__Packet *p = orbit__packet__unpack(NULL, size, data);
	if (p == NULL)
		return 0;
	int valid = orbit__packet_validate(p) == 0;
	if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH)
		batch_walk(p->ring_batch, valid);
	repack(p);
	orbit__packet__free_unpacked(p, NULL);
	return 0;
}
