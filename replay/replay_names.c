/*
 * replay_names.c — names interned once: statistics and Perfetto's interned
 * event names refer to them by id.
 *
 * Open addressing with the full 64-bit hash in each slot; the bytes live in
 * arena blocks that never move, so a name's pointer stays valid for the
 * whole run. A capture may hold any number of distinct names (a name per
 * iteration is common), so the table stops at ORBIT_RP_MAX_NAMES names or
 * ORBIT_RP_MAX_NAME_BYTES bytes; later new names get no id and are counted
 * together (docs/replay.md, "Memory").
 */
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"

struct orbit_rp_name_slot {
	uint64_t hash;
	uint32_t id1; /* id + 1; 0: empty */
	uint32_t len; /* compared before the bytes are */
};

struct orbit_rp_arena {
	struct orbit_rp_arena *prev;
	size_t used, cap;
	char bytes[];
};

#define ARENA_BLOCK (1u << 20)

/* The last n < 8 bytes of a name as one word, without a byte loop or a
 * variable-length copy. Every byte lands in it (two overlapping 4-byte
 * loads, or bytes 0, n/2 and n - 1 of a shorter tail), so equal words
 * mean equal bytes. */
static uint64_t tail_word(const char *p, size_t n)
{
	uint32_t a, b;
	if (n >= 4) {
		memcpy(&a, p, 4);
		memcpy(&b, p + n - 4, 4);
		return a | (uint64_t)b << 32;
	}
	if (n == 0)
		return 0;
	return (uint8_t)p[0] | (uint64_t)(uint8_t)p[n / 2] << 8 | (uint64_t)(uint8_t)p[n - 1] << 16;
}

/* Whether two names of n bytes are equal: word loads, no call. */
static int same_bytes(const char *a, const char *b, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t x, y;
		memcpy(&x, a + i, 8);
		memcpy(&y, b + i, 8);
		if (x != y)
			return 0;
	}
	return tail_word(a + i, n - i) == tail_word(b + i, n - i);
}

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	h = (h ^ tail_word(s + i, n - i)) * 0xc4ceb9fe1a85ec53ull;
	return h ^ h >> 29;
}

static char *arena_copy(struct orbit_rp_names *t, const char *s, size_t n)
{
	struct orbit_rp_arena *a = t->arena;
	if (a == NULL || a->cap - a->used < n) {
		size_t cap = n > ARENA_BLOCK ? n : ARENA_BLOCK;
		struct orbit_rp_arena *b = malloc(sizeof *b + cap);
		if (b == NULL)
			return NULL;
		b->prev = a;
		b->used = 0;
		b->cap = cap;
		t->arena = a = b;
	}
	char *p = a->bytes + a->used;
	memcpy(p, s, n);
	a->used += n;
	return p;
}

static int names_grow(struct orbit_rp_names *t)
{
	size_t cap = t->mask ? (t->mask + 1) * 2 : 1024;
	struct orbit_rp_name_slot *s = calloc(cap, sizeof *s);
	if (s == NULL)
		return -1;
	for (size_t i = 0; t->mask && i <= t->mask; i++) {
		if (t->slots[i].id1 == 0)
			continue;
		size_t j = t->slots[i].hash & (cap - 1);
		while (s[j].id1)
			j = (j + 1) & (cap - 1);
		s[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = s;
	t->mask = cap - 1;
	return 0;
}

static uint32_t names_add(struct orbit_rp_names *t, size_t slot, uint64_t h, const char *s,
                          size_t len)
{
	if (t->n >= ORBIT_RP_MAX_NAMES || t->bytes + len > ORBIT_RP_MAX_NAME_BYTES) {
		t->refused++;
		return ORBIT_RP_NAME_NONE;
	}
	if (t->n == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 1024;
		struct orbit_rp_name *e = realloc(t->ents, cap * sizeof *e);
		if (e == NULL)
			return ORBIT_RP_NAME_NONE;
		t->ents = e;
		t->cap = cap;
	}
	const char *copy = len ? arena_copy(t, s, len) : "";
	if (copy == NULL)
		return ORBIT_RP_NAME_NONE;
	t->ents[t->n] = (struct orbit_rp_name){copy, (uint32_t)len};
	t->slots[slot] = (struct orbit_rp_name_slot){h, t->n + 1, (uint32_t)len};
	t->bytes += len;
	return t->n++;
}

uint32_t orbit__rp_names_intern(struct orbit_rp_names *t, const char *s, size_t len)
{
	if ((size_t)(t->n + 1) * 2 > t->mask + 1 && names_grow(t) != 0)
		return ORBIT_RP_NAME_NONE;
	uint64_t h = hash_bytes(s, len);
	size_t j = h & t->mask;
	for (;; j = (j + 1) & t->mask) {
		const struct orbit_rp_name_slot *sl = &t->slots[j];
		if (sl->id1 == 0)
			return names_add(t, j, h, s, len);
		if (sl->hash != h || sl->len != len)
			continue;
		if (same_bytes(t->ents[sl->id1 - 1].bytes, s, len))
			return sl->id1 - 1;
	}
}

void orbit__rp_names_free(struct orbit_rp_names *t)
{
	struct orbit_rp_arena *a = t->arena;
	while (a) {
		struct orbit_rp_arena *prev = a->prev;
		free(a);
		a = prev;
	}
	free(t->slots);
	free(t->ents);
	memset(t, 0, sizeof *t);
}
