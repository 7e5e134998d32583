/* replay_values.c — values by process, thread and name; see replay_values.h. */
#include "replay_values.h"

#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "replay_out.h"

double orbit__rp_value_double(const struct orbit_rp_value *v)
{
	double d;
	switch (v->kind) {
	case ORBIT_REC_INT:
	case ORBIT_REC_INT64:
		return (double)(int64_t)v->bits;
	case ORBIT_REC_UINT:
	case ORBIT_REC_UINT64:
		return (double)v->bits;
	default: /* the reconstructor makes doubles of the floating kinds */
		memcpy(&d, &v->bits, sizeof d);
		return d;
	}
}

int orbit__rp_value_integral(const struct orbit_rp_value *v)
{
	return v->kind >= ORBIT_REC_INT && v->kind <= ORBIT_REC_UINT64;
}

void orbit__rp_out_value(struct orbit_rp_out *o, const struct orbit_rp_value *v)
{
	if (v->kind == ORBIT_REC_INT || v->kind == ORBIT_REC_INT64)
		orbit__rp_out_i64(o, (int64_t)v->bits);
	else if (orbit__rp_value_integral(v))
		orbit__rp_out_u64(o, v->bits);
	else
		orbit__rp_out_double(o, orbit__rp_value_double(v));
}

static uint32_t key_hash(uint32_t pid, uint32_t tid, const char *name, uint32_t len)
{
	uint64_t h = 1469598103934665603ull ^ ((uint64_t)pid << 32 | tid);
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)name[i]) * 1099511628211ull;
	return (uint32_t)(h ^ (h >> 32));
}

static int same(const struct orbit_rp_vseries *s, uint32_t pid, uint32_t tid, const char *name,
                uint32_t len)
{
	return s->pid == pid && s->tid == tid && s->name_len == len &&
	       (len == 0 || memcmp(s->name, name, len) == 0);
}

/* The table at least twice the series: index + 1 in each used slot. */
static int rehash(struct orbit_rp_values *vs)
{
	uint32_t nslot = 64;
	while (nslot < 2 * (vs->n + 1))
		nslot *= 2;
	uint32_t *slot = calloc(nslot, sizeof *slot);
	if (slot == NULL)
		return -1;
	for (uint32_t i = 0; i < vs->n; i++) {
		const struct orbit_rp_vseries *s = &vs->s[i];
		uint32_t j = key_hash(s->pid, s->tid, s->name, s->name_len) & (nslot - 1);
		while (slot[j] != 0)
			j = (j + 1) & (nslot - 1);
		slot[j] = i + 1;
	}
	free(vs->slot);
	vs->slot = slot;
	vs->nslot = nslot;
	return 0;
}

/* The series of (pid, tid, name), made if new; NULL when none can be. */
static struct orbit_rp_vseries *series(struct orbit_rp_values *vs, uint32_t pid, uint32_t tid,
                                       const char *name, uint32_t len)
{
	if (vs->last != 0 && same(&vs->s[vs->last - 1], pid, tid, name, len))
		return &vs->s[vs->last - 1];
	if (vs->nslot == 0 && rehash(vs) != 0)
		return NULL;
	uint32_t j = key_hash(pid, tid, name, len) & (vs->nslot - 1);
	for (; vs->slot[j] != 0; j = (j + 1) & (vs->nslot - 1))
		if (same(&vs->s[vs->slot[j] - 1], pid, tid, name, len)) {
			vs->last = vs->slot[j];
			return &vs->s[vs->slot[j] - 1];
		}
	if (vs->n >= ORBIT_RP_VALUES_MAX_SERIES)
		return NULL;
	if (vs->n == vs->cap) {
		uint32_t cap = vs->cap ? vs->cap * 2 : 16;
		struct orbit_rp_vseries *s = realloc(vs->s, cap * sizeof *s);
		if (s == NULL)
			return NULL;
		vs->s = s;
		vs->cap = cap;
	}
	char *copy = malloc(len ? len : 1);
	if (copy == NULL)
		return NULL;
	if (len)
		memcpy(copy, name, len);
	struct orbit_rp_vseries *s = &vs->s[vs->n];
	*s = (struct orbit_rp_vseries){
	    .pid = pid, .tid = tid, .name = copy, .name_len = len, .integral = 1};
	vs->slot[j] = ++vs->n;
	vs->last = vs->n;
	if (vs->n * 2 > vs->nslot)
		rehash(vs); /* failing, the table is only fuller: every series is still found */
	return s;
}

/* A double's bucket: its bits made to sort as the numbers do (negatives
 * reversed), keeping sign, exponent and the top 6 bits of the mantissa:
 * every power of two cut into 64 buckets. */
static uint32_t bucket_of(double x)
{
	uint64_t b;
	memcpy(&b, &x, sizeof b);
	b = b >> 63 ? ~b : b | (1ull << 63);
	return (uint32_t)(b >> 46);
}

/* The middle of bucket k. */
static double bucket_mid(uint32_t k)
{
	uint64_t b = (uint64_t)k << 46 | 1ull << 45;
	b = b >> 63 ? b & ~(1ull << 63) : ~b;
	double x;
	memcpy(&x, &b, sizeof x);
	return x;
}

static int bucket_grow(struct orbit_rp_vseries *s)
{
	uint32_t cap = s->bcap ? s->bcap * 2 : 64;
	uint32_t *key = calloc(cap, sizeof *key);
	uint64_t *count = calloc(cap, sizeof *count);
	if (key == NULL || count == NULL) {
		free(key);
		free(count);
		return -1;
	}
	for (uint32_t i = 0; i < s->bcap; i++) {
		if (s->bkey[i] == 0)
			continue;
		uint32_t j = (s->bkey[i] * 2654435761u) & (cap - 1);
		while (key[j] != 0)
			j = (j + 1) & (cap - 1);
		key[j] = s->bkey[i];
		count[j] = s->bcount[i];
	}
	free(s->bkey);
	free(s->bcount);
	s->bkey = key;
	s->bcount = count;
	s->bcap = cap;
	return 0;
}

/* Counts x in its bucket; without memory the sample is in count, min,
 * max and mean only. */
static void bucket_add(struct orbit_rp_vseries *s, double x)
{
	if ((s->nbucket + 1) * 2 > s->bcap && bucket_grow(s) != 0)
		return;
	uint32_t k = bucket_of(x) + 1, j = (k * 2654435761u) & (s->bcap - 1);
	while (s->bkey[j] != 0 && s->bkey[j] != k)
		j = (j + 1) & (s->bcap - 1);
	if (s->bkey[j] == 0) {
		s->bkey[j] = k;
		s->nbucket++;
	}
	s->bcount[j]++;
}

void orbit__rp_values_add(struct orbit_rp_values *vs, const struct orbit_rp_value *v)
{
	struct orbit_rp_vseries *s =
	    series(vs, v->pid, v->tid, v->name ? v->name : "", v->name ? v->name_len : 0);
	if (s == NULL) {
		vs->unkept++;
		return;
	}
	double x = orbit__rp_value_double(v);
	if (s->count == 0 || x < s->min)
		s->min = x;
	if (s->count == 0 || x > s->max)
		s->max = x;
	s->count++;
	s->sum += x;
	s->last = x;
	s->last_time = v->time;
	s->integral &= orbit__rp_value_integral(v);
	s->sorted = 0;
	if (s->approx) {
		bucket_add(s, x);
		return;
	}
	if (s->nkept == s->cap && s->cap < ORBIT_RP_VALUES_KEEP) {
		uint32_t cap = s->cap ? s->cap * 4 : 16;
		double *k = realloc(s->kept, cap * sizeof *k);
		if (k != NULL) {
			s->kept = k;
			s->cap = cap;
		}
	}
	if (s->nkept < s->cap) {
		s->kept[s->nkept++] = x;
		return;
	}
	/* More samples than are kept exactly: all of them into buckets. */
	s->approx = 1;
	for (uint32_t i = 0; i < s->nkept; i++)
		bucket_add(s, s->kept[i]);
	bucket_add(s, x);
	free(s->kept);
	s->kept = NULL;
	s->nkept = s->cap = 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int cmp_bucket(const void *a, const void *b)
{
	uint32_t x = ((const struct orbit_rp_vbucket *)a)->key;
	uint32_t y = ((const struct orbit_rp_vbucket *)b)->key;
	return x < y ? -1 : x > y;
}

/* The buckets in the order of their numbers, for the percentiles. */
static void bucket_sort(struct orbit_rp_vseries *s)
{
	free(s->sorted_b);
	s->sorted_b = malloc((s->nbucket ? s->nbucket : 1) * sizeof *s->sorted_b);
	s->nsorted_b = 0;
	if (s->sorted_b == NULL)
		return;
	for (uint32_t i = 0; i < s->bcap; i++)
		if (s->bkey[i] != 0)
			s->sorted_b[s->nsorted_b++] =
			    (struct orbit_rp_vbucket){s->bkey[i] - 1, s->bcount[i]};
	qsort(s->sorted_b, s->nsorted_b, sizeof *s->sorted_b, cmp_bucket);
}

static int cmp_series(const void *a, const void *b)
{
	const struct orbit_rp_vseries *x = a, *y = b;
	uint32_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = n ? memcmp(x->name, y->name, n) : 0;
	if (c != 0)
		return c;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

struct orbit_rp_vseries *orbit__rp_values_rows(struct orbit_rp_values *vs, uint32_t *n)
{
	*n = vs->n;
	if (vs->n == 0)
		return NULL;
	qsort(vs->s, vs->n, sizeof *vs->s, cmp_series);
	free(vs->slot); /* the order changed: the next add rebuilds the table */
	vs->slot = NULL;
	vs->nslot = 0;
	vs->last = 0;
	for (uint32_t i = 0; i < vs->n; i++) {
		struct orbit_rp_vseries *s = &vs->s[i];
		if (!s->sorted && s->nkept > 1)
			qsort(s->kept, s->nkept, sizeof *s->kept, cmp_double);
		if (!s->sorted && s->approx)
			bucket_sort(s);
		s->sorted = 1;
	}
	return vs->s;
}

double orbit__rp_vseries_pct(const struct orbit_rp_vseries *s, double p)
{
	uint64_t n = s->approx ? s->count : s->nkept;
	if (n == 0)
		return s->last;
	double r = p / 100.0 * (double)n;
	uint64_t rank = (uint64_t)r; /* nearest rank: r rounded up, from 1 */
	rank += (double)rank < r;
	if (rank < 1)
		rank = 1;
	if (!s->approx)
		return s->kept[rank - 1 < s->nkept ? rank - 1 : s->nkept - 1];
	uint64_t seen = 0;
	for (uint32_t i = 0; s->sorted_b != NULL && i < s->nsorted_b; i++) {
		seen += s->sorted_b[i].count;
		if (seen >= rank) {
			double x = bucket_mid(s->sorted_b[i].key);
			if (s->integral) /* a whole number, as every sample was */
				x = (double)(long long)(x + (x < 0 ? -0.5 : 0.5));
			return x < s->min ? s->min : x > s->max ? s->max : x;
		}
	}
	return s->max;
}

void orbit__rp_values_free(struct orbit_rp_values *vs)
{
	for (uint32_t i = 0; i < vs->n; i++) {
		free(vs->s[i].name);
		free(vs->s[i].kept);
		free(vs->s[i].bkey);
		free(vs->s[i].bcount);
		free(vs->s[i].sorted_b);
	}
	free(vs->s);
	free(vs->slot);
	memset(vs, 0, sizeof *vs);
}
