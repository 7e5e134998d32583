/* sched_reader.c — the kernel's pages in the agent; see sched_reader.h. */
#include "sched_reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sched_tracefs.h"
#include "stream.h"

static int on_kernel_page(void *ctx, uint32_t cpu, const uint8_t *page, size_t len)
{
	/* Verbatim into the stream; one it could not take is counted there
	 * (KernelLoss.unsent_pages), and the other CPUs are read all the same. */
	orbit__stream_kernel_page(ctx, cpu, page, len);
	return 0;
}

int orbit__sched_reader_pass(struct orbit__sched_reader *r, struct orbit__stream *st, int final)
{
	if (r->sched == NULL)
		return 0;
	int n = orbit__sched_read(r->sched, r->budget, on_kernel_page, st);
	/* Bounded: should turning tracing off have failed, the kernel keeps
	 * writing and the final pass must still end. */
	for (int i = 0; final && n > 0 && i < 4; i++)
		n = orbit__sched_read(r->sched, r->budget, on_kernel_page, st);
	return !final && n >= (int)r->budget;
}

static void drop_rates(struct orbit__sched_reader *r)
{
	free(r->seen);
	free(r->rate);
	r->seen = NULL;
	r->rate = NULL;
}

void orbit__sched_reader_open(struct orbit__sched_reader *r, const struct orbit__config *cfg,
                              struct orbit__stream *st)
{
	char why[ORBIT__SCHED_WHY];
	struct orbit__sched *s = NULL;
	if (!cfg->sched || st == NULL)
		return;
	const struct orbit__sched_params p = {.live = &r->live};
	int err = orbit__sched_open(&p, &s, why, sizeof why);
	if (err == 0) {
		const struct orbit__sched_formats *f = orbit__sched_formats(s);
		r->cpus = f->cpu_count;
		r->seen = calloc(f->cpu_count, sizeof *r->seen);
		r->rate = calloc(f->cpu_count, sizeof *r->rate);
		if (r->seen == NULL || r->rate == NULL) {
			orbit__sched_close(s);
			s = NULL;
			err = -ENOMEM;
			snprintf(why, sizeof why, "out of memory");
		}
	}
	if (err < 0) {
		drop_rates(r);
		if (!r->said)
			fprintf(stderr, "orbit: kernel scheduling is off: %s\n", why);
		r->said = 1;
		orbit__stream_sched(st, NULL, why);
		return;
	}
	const struct orbit__sched_formats *f = orbit__sched_formats(s);
	uint64_t buffer = (uint64_t)f->buffer_kb * 1024;
	uint64_t pages = f->page_size ? buffer / f->page_size : 1;
	r->quarter = (double)buffer / 4;
	r->budget = (uint32_t)((pages ? pages : 1) * f->cpu_count);
	r->sched = s;
	orbit__stream_sched(st, s, NULL);
}

/* The kernel's buffers: a pass empties them, so each is a quarter full a
 * quarter buffer's bytes at its rate from now. */
double orbit__sched_reader_soonest(struct orbit__sched_reader *r, double window, double fade,
                                   double soonest)
{
	for (uint32_t c = 0; r->sched != NULL && c < r->cpus; c++) {
		struct orbit__sched_cpu k;
		if (orbit__sched_pages(r->sched, c, &k) != 0)
			continue;
		double seen = (double)(k.data_bytes - r->seen[c]) / window;
		r->seen[c] = k.data_bytes;
		r->rate[c] = seen > r->rate[c] * fade ? seen : r->rate[c] * fade;
		if (r->rate[c] > 0 && r->quarter / r->rate[c] < soonest)
			soonest = r->quarter / r->rate[c];
	}
	return soonest;
}

void orbit__sched_reader_close(struct orbit__sched_reader *r)
{
	orbit__sched_close(r->sched);
	r->sched = NULL;
	drop_rates(r);
}

void orbit__sched_reader_forget(struct orbit__sched_reader *r)
{
	orbit__sched_forget(&r->live, r->sched);
	r->sched = NULL;
	r->seen = NULL; /* the parent's memory, copied: not ours to reuse */
	r->rate = NULL;
}
