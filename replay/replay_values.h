/*
 * replay_values.h — what the text outputs say of values (ORBIT_VALUE ...):
 * per process, thread and name, the count, min, mean, p50, p95, max and
 * the last sample, for the summary's values table and --json; and the one
 * way a sample's bits are read as a number.
 *
 * Percentiles are nearest rank, exact while a series has at most
 * ORBIT_RP_VALUES_KEEP samples. Past that its samples are counted in log
 * buckets, as the scope tables' durations are (replay_hist.c): each power
 * of two cut into 64, so a percentile is its bucket's midpoint, within
 * 1/128 of the true value, and is marked approximate. Memory follows the
 * series, not the capture's length: at most ORBIT_RP_VALUES_MAX_SERIES
 * series are kept (samples of further ones are only counted), each with at
 * most ORBIT_RP_VALUES_KEEP samples or one count per bucket it touched.
 */
#ifndef ORBIT_REPLAY_VALUES_H
#define ORBIT_REPLAY_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include "replay_event.h"

#define ORBIT_RP_VALUES_KEEP 256u
#define ORBIT_RP_VALUES_MAX_SERIES 16384u

/* A bucket of a series past its exact samples, once sorted. */
struct orbit_rp_vbucket {
	uint32_t key;
	uint64_t count;
};

/* One series: the samples of one name on one thread. */
struct orbit_rp_vseries {
	uint32_t pid, tid;
	char *name; /* a copy: value names are not interned */
	uint32_t name_len;
	int integral; /* every sample was of an integer kind */
	uint64_t count;
	double min, max, sum, last;
	uint64_t last_time;
	double *kept; /* every sample, while at most ORBIT_RP_VALUES_KEEP */
	uint32_t nkept, cap;
	int approx;     /* past them: the buckets instead */
	int sorted;     /* kept, or the buckets, sorted (orbit__rp_values_rows) */
	uint32_t *bkey; /* a bucket's key + 1 (0: empty), open addressing; sorted: packed */
	uint64_t *bcount;
	uint32_t nbucket, bcap;
	struct orbit_rp_vbucket *sorted_b; /* the buckets in order (orbit__rp_values_rows) */
	uint32_t nsorted_b;
};

struct orbit_rp_values {
	struct orbit_rp_vseries *s;
	uint32_t n, cap;
	uint32_t *slot; /* open addressing: index + 1, 0 empty */
	uint32_t nslot;
	uint64_t unkept; /* samples of series past ORBIT_RP_VALUES_MAX_SERIES */
	uint32_t last;   /* index + 1 of the series the last sample went to: a thread's
	                    samples of one name come in runs, found without a hash */
};

/* The sample's number. */
double orbit__rp_value_double(const struct orbit_rp_value *v);
/* 1 when x is a whole number printed exactly as one (|x| < 9e15). */
static inline int orbit__rp_value_whole(double x)
{
	return x > -9e15 && x < 9e15 && x == (double)(long long)x;
}
/* 1 when the sample is of an integer kind. */
int orbit__rp_value_integral(const struct orbit_rp_value *v);
struct orbit_rp_out;
/* Writes the sample's number: an integer exactly, a double as %.17g. */
void orbit__rp_out_value(struct orbit_rp_out *o, const struct orbit_rp_value *v);

/* Counts one sample (one that passed the filters). */
void orbit__rp_values_add(struct orbit_rp_values *vs, const struct orbit_rp_value *v);
/* The series, sorted by name, then pid, then tid; their samples sorted for
 * orbit__rp_vseries_pct. NULL (and *n 0) when there are none; not to free,
 * and valid until the next add. */
struct orbit_rp_vseries *orbit__rp_values_rows(struct orbit_rp_values *vs, uint32_t *n);
/* The p-th percentile (0..100) of a series whose samples are sorted:
 * nearest rank. */
double orbit__rp_vseries_pct(const struct orbit_rp_vseries *s, double p);
void orbit__rp_values_free(struct orbit_rp_values *vs);

#endif
