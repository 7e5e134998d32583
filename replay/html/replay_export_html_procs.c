/*
 * replay_export_html_procs.c — the page's processes, one per pid in the
 * order their streams come (the PROC table), and the growth of the arrays
 * the page's tables are kept in.
 */
#include <stdlib.h>

#include "replay_html.h"

int orbit__rp_html_grow(void **p, size_t *alloc, size_t n, size_t size)
{
	if (n < *alloc)
		return 0;
	size_t a = *alloc ? *alloc * 2 : 1024;
	void *q = realloc(*p, a * size);
	if (q == NULL)
		return -1;
	*p = q;
	*alloc = a;
	return 0;
}

int orbit__rp_html_grow32(void **p, uint32_t *alloc, uint32_t n, size_t size)
{
	size_t a = *alloc;
	int r = orbit__rp_html_grow(p, &a, n, size);
	*alloc = (uint32_t)(a > UINT32_MAX ? UINT32_MAX : a);
	return r;
}

uint32_t orbit__rp_html_proc_of(struct orbit_rp_html *h, uint32_t pid)
{
	if (h->last_proc < h->nprocs && h->procs[h->last_proc].pid == pid)
		return h->last_proc;
	for (uint32_t i = 0; i < h->nprocs; i++)
		if (h->procs[i].pid == pid)
			return h->last_proc = i;
	if (orbit__rp_html_grow32((void **)&h->procs, &h->procs_alloc, h->nprocs,
	                          sizeof *h->procs) != 0)
		return ORBIT_RP_HTML_BIG;
	h->procs[h->nprocs] = (struct orbit_rp_html_proc){
	    pid, ORBIT_RP_HTML_NO_STR, ORBIT_RP_HTML_NO_STR, ORBIT_RP_HTML_NO_STR, 0};
	return h->last_proc = h->nprocs++;
}
