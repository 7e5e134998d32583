/* record.c — bytes to and from the 56-byte scope-ring record. */
#include "record.h"

#include <errno.h>
#include <string.h>

int orbit__record_decode(const uint8_t *b, struct orbit_record *r)
{
	r->time = orbit__le64(b);
	r->id = orbit__le64(b + 8);
	r->tid = orbit__le32(b + 16);
	r->kind = b[20];
	r->flags = b[21];
	r->len = orbit__le16(b + 22);
	memcpy(r->name, b + 24, ORBIT_RECORD_NAME);
	if (r->kind == 0 || r->kind > ORBIT_REC_KIND_MAX)
		return -EINVAL;
	if (r->flags & ~ORBIT_REC_FLAGS_KNOWN)
		return -EINVAL;
	return 0;
}

void orbit__record_encode(const struct orbit_record *r, uint8_t *b)
{
	orbit__put_le64(b, r->time);
	orbit__put_le64(b + 8, r->id);
	orbit__put_le32(b + 16, r->tid);
	b[20] = r->kind;
	b[21] = r->flags;
	orbit__put_le16(b + 22, r->len);
	memcpy(b + 24, r->name, ORBIT_RECORD_NAME);
}

/* Where the parts of a head's name area start. */
static size_t site_bytes(const struct orbit_record *r)
{
	return (r->flags & ORBIT_REC_FLAG_SITE) ? ORBIT_RECORD_SITE : 0;
}

size_t orbit__record_head_name(const struct orbit_record *r, const uint8_t **name)
{
	if (!orbit__record_has_name(r->kind)) {
		*name = r->name;
		return 0;
	}
	size_t skip = site_bytes(r) + ((r->flags & ORBIT_REC_FLAG_ATTRS) ? ORBIT_RECORD_ATTRS : 0);
	size_t cap = ORBIT_RECORD_NAME - skip;
	*name = r->name + skip;
	return r->len < cap ? r->len : cap;
}

uint64_t orbit__record_site(const struct orbit_record *r)
{
	if (!orbit__record_has_name(r->kind) || !(r->flags & ORBIT_REC_FLAG_SITE))
		return 0;
	return orbit__le64(r->name);
}

int orbit__record_attrs(const struct orbit_record *r, uint32_t *color, uint64_t *group)
{
	*color = 0;
	*group = 0;
	if (!orbit__record_has_name(r->kind) || !(r->flags & ORBIT_REC_FLAG_ATTRS))
		return 0;
	const uint8_t *a = r->name + site_bytes(r);
	*color = orbit__le32(a);
	*group = orbit__le64(a + 4);
	return 1;
}
