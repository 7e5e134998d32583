/*
 * replay_locations.c — source locations: each distinct (file,
 * line, function) interned once for the run, so exporters and statistics
 * may compare and keep the pointers; and per stream the map from the
 * call-site addresses its records carry to them, filled by its
 * SourceLocations packets (docs/format.md 4.12).
 *
 * The interning reuses the name table (replay_names.c) on a key of the
 * three parts with their lengths, so the same limits hold: past them a
 * location is not kept and its events show none.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_internal.h"
#include "replay_stream.h"

#define SITES_MAX (1u << 20) /* per stream; later sites stay unnamed */

const struct orbit_rp_location *orbit__rp_location(struct orbit_rp_locations *t, const char *file,
                                                   size_t flen, uint32_t line, const char *fn,
                                                   size_t fnlen)
{
	if (flen > ORBIT_SITE_TEXT_MAX || fnlen > ORBIT_SITE_TEXT_MAX)
		return NULL;
	/* key: u32 file length, file, u32 line, function */
	char key[2 * ORBIT_SITE_TEXT_MAX + 8];
	uint32_t fl = (uint32_t)flen;
	memcpy(key, &fl, 4);
	memcpy(key + 4, file, flen);
	memcpy(key + 4 + flen, &line, 4);
	memcpy(key + 8 + flen, fn, fnlen);
	size_t klen = 8 + flen + fnlen;
	uint32_t id = orbit__rp_names_intern(&t->keys, key, klen);
	if (id == ORBIT_RP_NAME_NONE)
		return NULL;
	if (id >= t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 64;
		while (cap <= id)
			cap *= 2;
		struct orbit_rp_location **a = realloc(t->all, cap * sizeof *a);
		if (a == NULL)
			return NULL;
		memset(a + t->cap, 0, (cap - t->cap) * sizeof *a);
		t->all = a;
		t->cap = cap;
	}
	if (t->all[id] != NULL)
		return t->all[id];
	/* The label, "file:line function", for tables. */
	size_t llen = flen + fnlen + 13;
	struct orbit_rp_location *l = malloc(sizeof *l + llen + 1);
	if (l == NULL)
		return NULL;
	const char *k = orbit__rp_name(&t->keys, id)->bytes;
	char *label = (char *)(l + 1);
	int n = snprintf(label, llen + 1, "%.*s:%u %.*s", (int)flen, file, line, (int)fnlen, fn);
	*l = (struct orbit_rp_location){
	    .file = k + 4,
	    .function = k + 8 + flen,
	    .file_len = (uint32_t)flen,
	    .function_len = (uint32_t)fnlen,
	    .line = line,
	    .id = id,
	    .label = label,
	    .label_len = n < 0 ? 0 : (uint32_t)n,
	};
	t->all[id] = l;
	if (id + 1 > t->n)
		t->n = id + 1;
	return l;
}

void orbit__rp_locations_free(struct orbit_rp_locations *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->all[i]);
	free(t->all);
	orbit__rp_names_free(&t->keys);
	memset(t, 0, sizeof *t);
}

/* ---- a stream's call sites ---- */

static uint32_t slot_of(uint64_t a, uint32_t cap)
{
	return (uint32_t)((a * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static int sites_grow(struct orbit_rp_sites *m)
{
	uint32_t cap = m->cap ? m->cap * 2 : 64;
	struct orbit_rp_site *a = calloc(cap, sizeof *a);
	if (a == NULL)
		return -1;
	for (uint32_t i = 0; i < m->cap; i++) {
		if (m->all[i].addr == 0)
			continue;
		uint32_t j = slot_of(m->all[i].addr, cap);
		while (a[j].addr != 0)
			j = (j + 1) & (cap - 1);
		a[j] = m->all[i];
	}
	free(m->all);
	m->all = a;
	m->cap = cap;
	return 0;
}

void orbit__rp_sites_put(struct orbit_rp_sites *m, uint64_t addr,
                         const struct orbit_rp_location *loc)
{
	if (addr == 0 || loc == NULL)
		return;
	if ((m->n + 1) * 2 > m->cap && (m->n >= SITES_MAX || sites_grow(m) != 0))
		return;
	uint32_t j = slot_of(addr, m->cap);
	while (m->all[j].addr != 0 && m->all[j].addr != addr)
		j = (j + 1) & (m->cap - 1);
	if (m->all[j].addr == 0)
		m->n++;
	m->all[j] = (struct orbit_rp_site){addr, loc}; /* a later entry wins */
}

const struct orbit_rp_location *orbit__rp_sites_get(const struct orbit_rp_sites *m, uint64_t addr)
{
	if (addr == 0 || m->cap == 0)
		return NULL;
	uint32_t j = slot_of(addr, m->cap);
	while (m->all[j].addr != 0) {
		if (m->all[j].addr == addr)
			return m->all[j].loc;
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void orbit__rp_sites_free(struct orbit_rp_sites *m)
{
	free(m->all);
	memset(m, 0, sizeof *m);
}
