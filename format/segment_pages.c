/* segment_pages.c — the log pages a segment holds that no reader took
 * (docs/format.md 1.9): from a private copy of one page ring's memory, the
 * pages whose state line says records were claimed on them, oldest first,
 * each cut to its claimed bytes. */
#include "segment_pages.h"

#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "record.h" /* orbit__le32 and kin */

struct found {
	uint64_t time;
	uint32_t index;
};

static int by_time(const void *a, const void *b)
{
	const struct found *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

int orbit__seg_pages_unread(const uint8_t *mem, uint32_t pages, uint32_t page_size, uint8_t *out,
                            orbit__seg_page_fn fn, void *ctx)
{
	if (pages == 0 || page_size <= ORBIT__FTRACE_HEADER)
		return 0;
	struct found *f = malloc((size_t)pages * sizeof *f);
	if (f == NULL)
		return -1;
	const uint8_t *state = mem + (uint64_t)pages * page_size;
	const uint32_t area = page_size - ORBIT__FTRACE_HEADER;
	uint32_t n = 0;
	for (uint32_t i = 0; i < pages; i++) {
		uint64_t claim = orbit__le64(state + (uint64_t)i * ORBIT__SEG_PAGE_STATE);
		if ((claim & ORBIT__SEG_PAGE_CLAIM_BYTES) == 0)
			continue; /* reset: read, or never written */
		f[n].time = orbit__le64(mem + (uint64_t)i * page_size);
		f[n].index = i;
		n++;
	}
	qsort(f, n, sizeof *f, by_time);
	int delivered = 0;
	for (uint32_t k = 0; k < n; k++) {
		uint32_t i = f[k].index;
		const uint8_t *page = mem + (uint64_t)i * page_size;
		const uint8_t *st = state + (uint64_t)i * ORBIT__SEG_PAGE_STATE;
		uint64_t bytes = orbit__le64(st) & ORBIT__SEG_PAGE_CLAIM_BYTES;
		if (bytes > area)
			bytes = area; /* hostile: never past the page */
		uint32_t writers =
		    orbit__le32(st + ORBIT__SEG_PAGE_WRITERS_AT) & ORBIT__SEG_PAGE_WRITERS_IN;
		memcpy(out, page, ORBIT__FTRACE_HEADER + bytes);
		memset(out + ORBIT__FTRACE_HEADER + bytes, 0, area - bytes);
		uint64_t commit = bytes;
		memcpy(out + 8, &commit, 8);
		/* Keep the records that decode: a writer killed (or still busy)
		 * inside its record leaves a tail that may not. */
		struct orbit__ftrace_iter it;
		struct orbit__ftrace_header h;
		struct orbit__ftrace_record rec;
		uint32_t good = 0;
		if (orbit__ftrace_open(&it, out, page_size, &h) == 0) {
			int r;
			while ((r = orbit__ftrace_next(&it, &rec)) == 1)
				good = rec.offset + (rec.type_len ? 4 : 8) + rec.len -
				       ORBIT__FTRACE_HEADER;
			if (r == 0)
				good = (uint32_t)bytes;
		}
		if (good < bytes) {
			commit = good;
			memcpy(out + 8, &commit, 8);
			memset(out + ORBIT__FTRACE_HEADER + good, 0, area - good);
		}
		if (good == 0)
			continue;
		fn(ctx, out, page_size, i, writers, good < bytes);
		delivered++;
	}
	free(f);
	return delivered;
}
