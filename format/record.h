/*
 * record.h — the 56-byte scope-ring record, as bytes.
 *
 * The agent writes records in the layout of struct orbit__slot
 * (orbit/internal.h) minus its 8-byte sequence stamp; everything that reads them (drain, capture,
 * replay) goes through orbit__record_decode(), which treats the bytes as
 * hostile. Little-endian; docs/format.md is normative.
 *
 *   offset size field
 *   0      8    time  (ticks in a segment; CLOCK_MONOTONIC ns once drained)
 *   8      8    id    (scope id, async id, or the value's bits)
 *   16     4    tid
 *   20     1    kind  (ORBIT_REC_*)
 *   21     1    flags (bit 0: the name area has color u32, group u64;
 *                       bit 1: the agent could not trust the time's conversion;
 *                       bit 2: the name area starts with the u64 address of
 *                       the record's call site, a struct orbit__site of the
 *                       traced process)
 *   22     2    len   (head: whole name length; continuation: part number)
 *   24     32   name  (a head's name area: [site 8][color 4, group 8][name];
 *                      unused bytes are zero)
 */
#ifndef ORBIT_FORMAT_RECORD_H
#define ORBIT_FORMAT_RECORD_H

#include <stddef.h>
#include <stdint.h>

#define ORBIT_RECORD_SIZE 56u
#define ORBIT_RECORD_NAME 32u
#define ORBIT_RECORD_ATTRS 12u
#define ORBIT_RECORD_SITE 8u
#define ORBIT_NAME_LIMIT 65535u

enum orbit_rec_kind {
	ORBIT_REC_SCOPE_START = 1,
	ORBIT_REC_SCOPE_STOP = 2,
	ORBIT_REC_ASYNC_START = 3,
	ORBIT_REC_ASYNC_STOP = 4,
	ORBIT_REC_INT = 5,
	ORBIT_REC_INT64 = 6,
	ORBIT_REC_UINT = 7,
	ORBIT_REC_UINT64 = 8,
	ORBIT_REC_FLOAT = 9,
	ORBIT_REC_DOUBLE = 10,
	ORBIT_REC_THREAD_NAME = 11,
	ORBIT_REC_NAME_CONT = 12,
	ORBIT_REC_THREAD_END = 13,
	ORBIT_REC_KIND_MAX = 13,
};
#define ORBIT_REC_FLAG_ATTRS 1u
#define ORBIT_REC_FLAG_TIME_UNTRUSTED 2u
#define ORBIT_REC_FLAG_SITE 4u
#define ORBIT_REC_FLAGS_KNOWN                                                                      \
	(ORBIT_REC_FLAG_ATTRS | ORBIT_REC_FLAG_TIME_UNTRUSTED | ORBIT_REC_FLAG_SITE)

struct orbit_record {
	uint64_t time;
	uint64_t id;
	uint32_t tid;
	uint8_t kind;
	uint8_t flags;
	uint16_t len;
	uint8_t name[ORBIT_RECORD_NAME];
};

/* Decodes one record; returns 0, or -EINVAL for an unknown kind or flag. */
int orbit__record_decode(const uint8_t *bytes, struct orbit_record *out);

/* Encodes one record into ORBIT_RECORD_SIZE bytes. */
void orbit__record_encode(const struct orbit_record *rec, uint8_t *bytes);

/* Head records: how many name bytes this record carries inline, and where
 * they start (after the site and the attributes). Zero for kinds that carry
 * no name. */
size_t orbit__record_head_name(const struct orbit_record *rec, const uint8_t **name);

/* A head record's call site (the address it names, flag bit 2), or 0. */
uint64_t orbit__record_site(const struct orbit_record *rec);

/* A head record's color and group (flag bit 0): 1 and both, or 0. */
int orbit__record_attrs(const struct orbit_record *rec, uint32_t *color, uint64_t *group);

/* The kinds whose record starts a name (may have continuations): every kind
 * but the stops, continuations and thread ends. */
#define ORBIT__REC_NAMED_KINDS                                                                     \
	(((1u << (ORBIT_REC_KIND_MAX + 1)) - 2) &                                                  \
	 ~((1u << ORBIT_REC_SCOPE_STOP) | (1u << ORBIT_REC_ASYNC_STOP) |                           \
	   (1u << ORBIT_REC_NAME_CONT) | (1u << ORBIT_REC_THREAD_END)))

/* Whether a record of this kind starts a name (may have continuations).
 * Inline: the agent's stream writer asks it of every record. */
static inline int orbit__record_has_name(uint8_t kind)
{
	return kind <= ORBIT_REC_KIND_MAX && ((ORBIT__REC_NAMED_KINDS >> kind) & 1u);
}

/* Little-endian loads and stores; inline, since codecs call them per field.
 * On little-endian machines a memcpy, which compiles to one move. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#include <string.h>
static inline uint32_t orbit__le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static inline uint64_t orbit__le64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static inline void orbit__put_le32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static inline void orbit__put_le64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}
#else
static inline uint32_t orbit__le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t orbit__le64(const uint8_t *p)
{
	return (uint64_t)orbit__le32(p) | (uint64_t)orbit__le32(p + 4) << 32;
}

static inline void orbit__put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void orbit__put_le64(uint8_t *p, uint64_t v)
{
	orbit__put_le32(p, (uint32_t)v);
	orbit__put_le32(p + 4, (uint32_t)(v >> 32));
}
#endif

static inline uint16_t orbit__le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline void orbit__put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

#endif
