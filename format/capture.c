/* capture.c — ring batch encodings and packet checks; see capture.h. */
#include "capture.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "frame.h"
#include "ftrace_page.h" /* ORBIT__FTRACE_HEADER */

/* ---- varints ---- */

static inline size_t put_varint(uint8_t *p, uint64_t v)
{
	if (v < 0x80) {
		p[0] = (uint8_t)v;
		return 1;
	}
	return orbit__put_varint(p, v);
}

/* The bytes used, 0 if the varint is truncated or over 64 bits; the
 * one-byte case inline, since the compact batch is mostly small values. */
static inline size_t get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
	if (p < end && p[0] < 0x80) {
		*v = p[0];
		return 1;
	}
	return p < end ? orbit__get_varint(p, (size_t)(end - p), v) : 0;
}

static inline uint64_t zigzag(uint64_t d)
{
	return d << 1 ^ (uint64_t)((int64_t)d >> 63);
}

static inline uint64_t unzigzag(uint64_t z)
{
	return z >> 1 ^ (0 - (z & 1));
}

/* ---- encoding 2 ---- */

#define SLOTS (2 * ORBIT_BATCH_MAX) /* hash slots: at most half full */

struct orbit_batch_encoder {
	uint16_t gen; /* a slot is in use when its gen is this batch's */
	struct {
		uint16_t gen;
		uint16_t key;
	} slot[SLOTS];
	struct {
		const uint8_t *rec; /* the first record with this key */
		uint64_t prev_id;
		uint64_t named; /* UINT64_MAX when its records carry no name, else 0 */
	} key[ORBIT_BATCH_MAX];
	uint32_t nkeys, n;
	uint64_t earliest_named; /* of the last batch's records that carry a name */
	size_t len[3];           /* the three columns' bytes */
	size_t bytes;            /* the whole encoding */
	uint8_t col_index[ORBIT_BATCH_MAX * 3];
	uint8_t col_time[ORBIT_BATCH_MAX * 10];
	uint8_t col_id[ORBIT_BATCH_MAX * 10];
};

struct orbit_batch_encoder *orbit__batch_encoder_new(void)
{
	return calloc(1, sizeof(struct orbit_batch_encoder));
}

void orbit__batch_encoder_free(struct orbit_batch_encoder *e)
{
	free(e);
}

/* The stored bytes of a key's name area: up to its last non-zero byte. */
static inline uint32_t name_len(const uint8_t *rec)
{
	uint64_t w[4];
	memcpy(w, rec + 24, 32);
	for (int i = 3; i >= 0; i--)
		if (w[i] != 0)
			return (uint32_t)(8 * i + 8 - __builtin_clzll(w[i]) / 8);
	return 0;
}

static inline int same_key(const uint8_t *a, const uint8_t *b)
{
	return memcmp(a + 16, b + 16, 40) == 0;
}

static inline uint32_t key_hash(const uint8_t *rec)
{
	uint64_t w[5];
	memcpy(w, rec + 16, 40);
	uint64_t h = w[0] * 0x9e3779b97f4a7c15ull ^ w[1] * 0xc2b2ae3d27d4eb4full ^
	             w[2] * 0x165667b19e3779f9ull ^ w[3] * 0x27d4eb2f165667c5ull ^
	             w[4] * 0x94d049bb133111ebull;
	return (uint32_t)(h >> 40);
}

/* The key index of rec, a new key if it is the first of its kind. */
static inline uint32_t key_of(struct orbit_batch_encoder *e, const uint8_t *rec)
{
	uint32_t s = key_hash(rec) & (SLOTS - 1);
	for (;;) {
		if (e->slot[s].gen != e->gen) {
			uint32_t k = e->nkeys++;
			e->slot[s].gen = e->gen;
			e->slot[s].key = (uint16_t)k;
			e->key[k].rec = rec;
			e->key[k].prev_id = 0;
			e->key[k].named = orbit__record_has_name(rec[20]) ? 0 : UINT64_MAX;
			return k;
		}
		uint32_t k = e->slot[s].key;
		if (same_key(e->key[k].rec, rec))
			return k;
		s = (s + 1) & (SLOTS - 1);
	}
}

size_t orbit__batch_compact(struct orbit_batch_encoder *e, const uint8_t *records, uint32_t n)
{
	if (++e->gen == 0) { /* generations wrapped: forget every slot */
		memset(e->slot, 0, sizeof e->slot);
		e->gen = 1;
	}
	e->nkeys = 0;
	e->n = n;
	uint8_t *ci = e->col_index, *ct = e->col_time, *cd = e->col_id;
	uint64_t prev_time = 0, earliest = UINT64_MAX;
	/* The two keys seen last skip the hash: a run of one key (a value in
	 * a loop) and a thread's starts and stops taking turns. */
	uint32_t mru[2] = {0, 0};
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *r = records + (size_t)i * ORBIT_RECORD_SIZE;
		uint32_t k;
		if (i > 0 && same_key(e->key[mru[0]].rec, r)) {
			k = mru[0];
		} else if (i > 0 && same_key(e->key[mru[1]].rec, r)) {
			k = mru[1];
			mru[1] = mru[0];
			mru[0] = k;
		} else {
			k = key_of(e, r);
			mru[1] = mru[0];
			mru[0] = k;
		}
		uint64_t time = orbit__le64(r), id = orbit__le64(r + 8);
		/* The earliest named time in the same pass: a key without a
		 * name lifts its records' times above every other. */
		uint64_t t = time | e->key[k].named;
		earliest = t < earliest ? t : earliest;
		ci += put_varint(ci, k);
		ct += put_varint(ct, zigzag(time - prev_time));
		cd += put_varint(cd, zigzag(id - e->key[k].prev_id));
		prev_time = time;
		e->key[k].prev_id = id;
	}
	e->earliest_named = earliest;
	e->len[0] = (size_t)(ci - e->col_index);
	e->len[1] = (size_t)(ct - e->col_time);
	e->len[2] = (size_t)(cd - e->col_id);
	size_t bytes = n ? orbit__varint_size(e->nkeys) : 0;
	for (uint32_t k = 0; k < e->nkeys; k++)
		bytes += 9 + name_len(e->key[k].rec);
	e->bytes = bytes + e->len[0] + e->len[1] + e->len[2];
	return e->bytes;
}

uint32_t orbit__batch_nkeys(const struct orbit_batch_encoder *e)
{
	return e->nkeys;
}

uint32_t orbit__batch_key_tid(const struct orbit_batch_encoder *e, uint32_t k)
{
	return orbit__le32(e->key[k].rec + 16);
}

uint64_t orbit__batch_earliest_named(const struct orbit_batch_encoder *e)
{
	return e->earliest_named;
}

/* The encoding of the last batch into out (e->bytes of room). */
static size_t compact_write(const struct orbit_batch_encoder *e, uint8_t *out)
{
	if (e->n == 0)
		return 0;
	uint8_t *p = out;
	p += orbit__put_varint(p, e->nkeys);
	for (uint32_t k = 0; k < e->nkeys; k++) {
		const uint8_t *r = e->key[k].rec;
		uint32_t l = name_len(r);
		memcpy(p, r + 16, 8);
		p[8] = (uint8_t)l;
		memcpy(p + 9, r + 24, l);
		p += 9 + l;
	}
	memcpy(p, e->col_index, e->len[0]);
	p += e->len[0];
	memcpy(p, e->col_time, e->len[1]);
	p += e->len[1];
	memcpy(p, e->col_id, e->len[2]);
	p += e->len[2];
	return (size_t)(p - out);
}

size_t orbit__batch_encode(const uint8_t *records, uint32_t n, uint8_t *out)
{
	if (n == 0)
		return 0;
	struct orbit_batch_encoder *e = orbit__batch_encoder_new();
	if (e == NULL)
		return 0;
	orbit__batch_compact(e, records, n);
	size_t len = compact_write(e, out);
	orbit__batch_encoder_free(e);
	return len;
}

/* RingBatch fields 1..4 as varints (tags 0x08, 0x10, 0x18, 0x20), then
 * records (tag 0x2a, length-delimited); the Packet wraps it as field 2
 * (tag 0x12). */
static size_t batch_body_size(uint32_t ring, uint64_t first, uint32_t n, size_t bytes)
{
	return 1 + orbit__varint_size(ring) + 1 + orbit__varint_size(first) + 1 +
	       orbit__varint_size(n) + 1 + orbit__varint_size(ORBIT_BATCH_COMPACT) + 1 +
	       orbit__varint_size(bytes) + bytes;
}

size_t orbit__batch_packet_size(const struct orbit_batch_encoder *e, uint32_t ring, uint64_t first)
{
	size_t body = batch_body_size(ring, first, e->n, e->bytes);
	return 1 + orbit__varint_size(body) + body;
}

size_t orbit__batch_packet_write(uint8_t *out, const struct orbit_batch_encoder *e, uint32_t ring,
                                 uint64_t first)
{
	size_t o = 0;
	out[o++] = 0x12;
	o += orbit__put_varint(out + o, batch_body_size(ring, first, e->n, e->bytes));
	out[o++] = 0x08;
	o += orbit__put_varint(out + o, ring);
	out[o++] = 0x10;
	o += orbit__put_varint(out + o, first);
	out[o++] = 0x18;
	o += orbit__put_varint(out + o, e->n);
	out[o++] = 0x20;
	o += orbit__put_varint(out + o, ORBIT_BATCH_COMPACT);
	out[o++] = 0x2a;
	o += orbit__put_varint(out + o, e->bytes);
	return o + compact_write(e, out + o);
}

/* Decodes encoding 2; every byte is hostile. */
static int compact_decode(const uint8_t *in, size_t len, uint32_t n, uint8_t *records)
{
	const uint8_t *p = in, *end = in + len;
	if (n == 0)
		return len == 0 ? 0 : -EINVAL;
	uint64_t k, v;
	size_t used = get_varint(p, end, &k);
	if (used == 0 || k == 0 || k > n)
		return -EINVAL;
	p += used;
	struct key {
		uint64_t words[5]; /* the record's bytes 16..55, as they are stored */
		uint64_t prev_id;
	} stack[32], *keys = k <= 32 ? stack : malloc((size_t)k * sizeof *keys);
	if (keys == NULL)
		return -ENOMEM;
	int err = -EINVAL;
	for (uint64_t i = 0; i < k; i++) {
		if (end - p < 9 || p[8] > 32 || (size_t)(end - p) < 9u + p[8])
			goto out;
		uint8_t bytes[40] = {0};
		memcpy(bytes, p, 8);
		memcpy(bytes + 8, p + 9, p[8]);
		memcpy(keys[i].words, bytes, sizeof bytes);
		keys[i].prev_id = 0;
		p += 9 + p[8];
	}
	/* The key index of record i waits in its id field until the id column
	 * is read; its time goes to its place at once. */
	for (uint32_t i = 0; i < n; i++) {
		if ((used = get_varint(p, end, &v)) == 0 || v >= k)
			goto out;
		p += used;
		orbit__put_le64(records + (size_t)i * ORBIT_RECORD_SIZE + 8, v);
	}
	uint64_t time = 0;
	for (uint32_t i = 0; i < n; i++) {
		if ((used = get_varint(p, end, &v)) == 0)
			goto out;
		p += used;
		time += unzigzag(v);
		orbit__put_le64(records + (size_t)i * ORBIT_RECORD_SIZE, time);
	}
	for (uint32_t i = 0; i < n; i++) {
		uint8_t *r = records + (size_t)i * ORBIT_RECORD_SIZE;
		if ((used = get_varint(p, end, &v)) == 0)
			goto out;
		p += used;
		struct key *key = &keys[orbit__le64(r + 8)];
		key->prev_id += unzigzag(v);
		orbit__put_le64(r + 8, key->prev_id);
		/* Five word copies: a 40-byte memcpy became a slow rep movs. */
		for (int w = 0; w < 5; w++)
			memcpy(r + 16 + 8 * w, &key->words[w], 8);
	}
	err = p == end ? 0 : -EINVAL;
out:
	if (keys != stack)
		free(keys);
	return err;
}

/* ---- encoding 1 ---- */

void orbit__batch_encode_columns(const uint8_t *records, uint32_t n, uint8_t *out)
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

static int columns_decode(const uint8_t *in, size_t len, uint32_t n, uint8_t *records)
{
	if (len != (size_t)n * ORBIT_RECORD_SIZE)
		return -EINVAL;
	if (n == 0) /* protobuf-c leaves an empty bytes field NULL */
		return 0;
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

int orbit__batch_decode(const Orbit__RingBatch *b, uint8_t *records)
{
	if (b->count > ORBIT_BATCH_MAX)
		return -EINVAL;
	if (b->encoding == ORBIT_BATCH_COMPACT)
		return compact_decode(b->records.data, b->records.len, b->count, records);
	if (b->encoding == ORBIT_BATCH_COLUMNS)
		return columns_decode(b->records.data, b->records.len, b->count, records);
	return -EINVAL;
}

/* ---- packets ---- */

/* Every entry names a site, and no text is longer than a writer writes. */
static int sites_validate(const Orbit__SourceLocations *l)
{
	if (l->n_locations > ORBIT_SITES_PER_PACKET)
		return -EINVAL;
	for (size_t i = 0; i < l->n_locations; i++) {
		const Orbit__SourceLocation *e = l->locations[i];
		if (e->site == 0 || strlen(e->file) > ORBIT_SITE_TEXT_MAX ||
		    strlen(e->function) > ORBIT_SITE_TEXT_MAX)
			return -EINVAL;
	}
	return 0;
}

/* Handshake.kernel_sched (docs/format.md 4.10): the limits a reader's
 * decoder applies (replay/sched/replay_sched.h), so that what a collector keeps
 * can be read. */
static int kernel_sched_validate(const Orbit__KernelSched *k)
{
	if (k->cpu_count > ORBIT_KERNEL_MAX_CPUS || k->page_size > ORBIT_PAGE_BYTES_MAX ||
	    k->n_events > ORBIT_KERNEL_MAX_FORMATS)
		return -EINVAL;
	for (size_t i = 0; i < k->n_events; i++)
		if (k->events[i]->format != NULL &&
		    strlen(k->events[i]->format) > ORBIT_KERNEL_MAX_FORMAT)
			return -EINVAL;
	return 0;
}

int orbit__packet_validate(const Orbit__Packet *p)
{
	switch (p->body_case) {
	case ORBIT__PACKET__BODY_HANDSHAKE: {
		const Orbit__Handshake *h = p->handshake;
		/* Readers read every version there were; a collector takes only
		 * those it speaks, and says so itself (collector/conn.c). */
		if (h->protocol_version < ORBIT_PROTOCOL_VERSION_MIN ||
		    h->protocol_version > ORBIT_PROTOCOL_VERSION_MAX)
			return -EPROTO;
		if (h->ring_count > ORBIT_MAX_RINGS || h->n_ring_start != h->ring_count ||
		    (h->ring_count > 0 && h->record_size != ORBIT_RECORD_SIZE) ||
		    h->page_ring_count > ORBIT_MAX_PAGE_RINGS ||
		    h->page_size > ORBIT_PAGE_BYTES_MAX)
			return -EINVAL;
		/* The previous stream's report: one value per ring each. */
		const Orbit__PreviousStream *ps = h->previous_stream;
		if (ps != NULL &&
		    (ps->n_claimed != h->ring_count || ps->n_acknowledged != h->ring_count ||
		     ps->n_unacknowledged != h->ring_count || ps->n_lost != h->ring_count ||
		     ps->frames_acknowledged > ps->frames_sent))
			return -EINVAL;
		return h->kernel_sched != NULL ? kernel_sched_validate(h->kernel_sched) : 0;
	}
	case ORBIT__PACKET__BODY_RING_BATCH: {
		const Orbit__RingBatch *b = p->ring_batch;
		if (b->ring >= ORBIT_MAX_RINGS || b->count > ORBIT_BATCH_MAX)
			return -EINVAL;
		if (b->encoding == ORBIT_BATCH_COLUMNS)
			return b->records.len == (size_t)b->count * ORBIT_RECORD_SIZE ? 0 : -EINVAL;
		if (b->encoding == ORBIT_BATCH_COMPACT)
			return (b->count == 0) == (b->records.len == 0) &&
			               b->records.len <= ORBIT_BATCH_COMPACT_BOUND(b->count)
			           ? 0
			           : -EINVAL;
		return -EINVAL;
	}
	case ORBIT__PACKET__BODY_FTRACE_PAGE:
		return p->ftrace_page->page.len >= ORBIT__FTRACE_HEADER &&
		               p->ftrace_page->page.len <= ORBIT_PAGE_BYTES_MAX
		           ? 0
		           : -EINVAL;
	case ORBIT__PACKET__BODY_LOSS:
		return p->loss->ring < ORBIT_MAX_RINGS ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_END:
		return p->end->n_claimed_per_ring <= ORBIT_MAX_RINGS ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_THREAD_NAME:
	case ORBIT__PACKET__BODY_PAGE_LOSS:
	case ORBIT__PACKET__BODY_KERNEL_MARK:
		return 0;
	case ORBIT__PACKET__BODY_ACK:
		return p->ack->synced_frames <= p->ack->frames ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_SOURCE_LOCATIONS:
		return sites_validate(p->source_locations);
	case ORBIT__PACKET__BODY_KERNEL_PAGE:
		return p->kernel_page->cpu < ORBIT_KERNEL_MAX_CPUS &&
		               p->kernel_page->page.len >= ORBIT__FTRACE_HEADER &&
		               p->kernel_page->page.len <= ORBIT_PAGE_BYTES_MAX
		           ? 0
		           : -EINVAL;
	case ORBIT__PACKET__BODY_KERNEL_LOSS:
		return p->kernel_loss->cpu < ORBIT_KERNEL_MAX_CPUS ? 0 : -EINVAL;
	case ORBIT__PACKET__BODY_DUMP: /* written by orbit-dump only */
		return p->dump->ended == ORBIT_ENDED_SNAPSHOT || p->dump->ended == ORBIT_ENDED_GONE
		           ? 0
		           : -EINVAL;
	default:
		return -EINVAL;
	}
}
