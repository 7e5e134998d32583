/* capture.c — ring batch encoding and packet checks; see capture.h. */
#include "capture.h"

#include <errno.h>
#include <string.h>

#include "frame.h"

void orbit__batch_encode(const uint8_t *records, uint32_t n, uint8_t *out)
{
	uint8_t *times = out, *ids = out + (size_t)n * 8, *metas = out + (size_t)n * 16,
	        *names = out + (size_t)n * 24;
	uint64_t prev_time = 0, prev_id = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = records + (size_t)i * ORBIT_RECORD_SIZE;
		uint64_t time = orbit__le64(r), id = orbit__le64(r + 8);
		orbit__put_le64(times + (size_t)i * 8, time - prev_time);
		orbit__put_le64(ids + (size_t)i * 8, id - prev_id);
		memcpy(metas + (size_t)i * 8, r + 16, 8);
		memcpy(names + (size_t)i * ORBIT_RECORD_NAME, r + 24, ORBIT_RECORD_NAME);
		prev_time = time;
		prev_id = id;
	}
}

/* RingBatch fields 1..4 as varints (tags 0x08, 0x10, 0x18, 0x20), then
 * records (tag 0x2a, length-delimited); the Packet wraps it as field 2
 * (tag 0x12). */
static size_t batch_body_size(uint32_t ring, uint64_t first, uint32_t n)
{
	size_t bytes = (size_t)n * ORBIT_RECORD_SIZE;
	return 1 + orbit__varint_size(ring) + 1 + orbit__varint_size(first) + 1 +
	       orbit__varint_size(n) + 1 + orbit__varint_size(ORBIT_BATCH_COLUMNS) + 1 +
	       orbit__varint_size(bytes) + bytes;
}

size_t orbit__batch_packet_size(uint32_t ring, uint64_t first, uint32_t n)
{
	size_t body = batch_body_size(ring, first, n);
	return 1 + orbit__varint_size(body) + body;
}

size_t orbit__batch_packet_write(uint8_t *out, uint32_t ring, uint64_t first,
                                 const uint8_t *records, uint32_t n)
{
	size_t bytes = (size_t)n * ORBIT_RECORD_SIZE, o = 0;
	out[o++] = 0x12;
	o += orbit__put_varint(out + o, batch_body_size(ring, first, n));
	out[o++] = 0x08;
	o += orbit__put_varint(out + o, ring);
	out[o++] = 0x10;
	o += orbit__put_varint(out + o, first);
	out[o++] = 0x18;
	o += orbit__put_varint(out + o, n);
	out[o++] = 0x20;
	o += orbit__put_varint(out + o, ORBIT_BATCH_COLUMNS);
	out[o++] = 0x2a;
	o += orbit__put_varint(out + o, bytes);
	orbit__batch_encode(records, n, out + o);
	return o + bytes;
}

int orbit__batch_decode(const Orbit__RingBatch *b, uint8_t *records)
{
	uint32_t n = b->count;
	if (b->encoding != ORBIT_BATCH_COLUMNS || n > ORBIT_BATCH_MAX ||
	    b->records.len != (size_t)n * ORBIT_RECORD_SIZE)
		return -EINVAL;
	if (n == 0) /* protobuf-c leaves an empty bytes field NULL */
		return 0;
	const uint8_t *in = b->records.data;
	const uint8_t *times = in, *ids = in + (size_t)n * 8, *metas = in + (size_t)n * 16,
	              *names = in + (size_t)n * 24;
	uint64_t time = 0, id = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *r = records + (size_t)i * ORBIT_RECORD_SIZE;
		time += orbit__le64(times + (size_t)i * 8);
		id += orbit__le64(ids + (size_t)i * 8);
		orbit__put_le64(r, time);
		orbit__put_le64(r + 8, id);
		memcpy(r + 16, metas + (size_t)i * 8, 8);
		memcpy(r + 24, names + (size_t)i * ORBIT_RECORD_NAME, ORBIT_RECORD_NAME);
	}
	return 0;
}

int orbit__packet_validate(const Orbit__Packet *p)
{
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_HANDSHAKE: {
		const Orbit__Handshake *h = p->handshake;
		if (h->protocol_version != ORBIT_PROTOCOL_VERSION)
			return -EPROTO;
		if (h->ring_count > ORBIT_MAX_RINGS || h->n_ring_start != h->ring_count ||
		    (h->ring_count > 0 && h->record_size != ORBIT_RECORD_SIZE) ||
		    h->page_ring_count > 4096 || h->page_size > (1u << 20))
			return -EINVAL;
		return 0;
	}
	case ORBIT__PACKET__BODY_RING_BATCH: {
		const Orbit__RingBatch *b = p->ring_batch;
		if (b->ring >= ORBIT_MAX_RINGS || b->encoding != ORBIT_BATCH_COLUMNS ||
		    b->count > ORBIT_BATCH_MAX ||
		    b->records.len != (size_t)b->count * ORBIT_RECORD_SIZE)
			return -EINVAL;
		return 0;
	}
	case ORBIT__PACKET__BODY_FTRACE_PAGE:
		return p->ftrace_page->page.len >= 16 && p->ftrace_page->page.len <= (1u << 20)
		           ? 0
		           : -EINVAL;
	case ORBIT__PACKET__BODY_LOSS:
		return p->loss->ring < ORBIT_MAX_RINGS ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_END:
		return p->end->n_claimed_per_ring <= ORBIT_MAX_RINGS ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_THREAD_NAME:
	case ORBIT__PACKET__BODY_PAGE_LOSS:
		return 0;
	case ORBIT__PACKET__BODY_ACK:
		return p->ack->synced_frames <= p->ack->frames ? 0 : -EINVAL;
	default:
		return -EINVAL;
	}
}
