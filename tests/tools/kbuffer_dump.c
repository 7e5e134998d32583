/* kbuffer_dump.c — prints a raw ftrace page file as libtraceevent's kbuffer
 * reads it, in the lines of `orbit-replay --pages` that describe pages and
 * records (data/sample-pages.expected.txt):
 *
 *   page N: page_ts=T commit=0xC size=S missed_flag=M stored_flag=F
 *     kbuffer: subbuf_ts=T missed_events=E data_size=S
 *     rec   I ts=T (+D) off=O payload_len=L common_type=C
 *     kbuffer: N records
 *   total pages=P records=R
 *
 * The commit word and its flags are read from the page's bytes; everything
 * else comes from kbuffer. replay_pages.sh (case sched) diffs these lines
 * with orbit-replay's on real kernel sched pages.
 *
 * Usage: kbuffer_dump FILE [PAGE_SIZE]   (default 4096) */
#include <inttypes.h>
#include <kbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t page_size = argc > 2 ? strtoul(argv[2], NULL, 10) : 4096;
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : NULL;
	uint8_t *page = malloc(page_size);
	uint64_t n = 0, total = 0, prev = 0;
	int have_prev = 0;

	if (f == NULL || kb == NULL || page == NULL || page_size < 16) {
		fprintf(stderr, "usage: kbuffer_dump FILE [PAGE_SIZE]\n");
		return 2;
	}
	while (fread(page, 1, page_size, f) == page_size) {
		uint64_t ts, commit;
		unsigned long long t;
		void *data;
		unsigned idx = 0;

		memcpy(&ts, page, 8);
		memcpy(&commit, page + 8, 8);
		if (kbuffer_load_subbuffer(kb, page) != 0) {
			fprintf(stderr, "kbuffer_dump: page %" PRIu64 " not loaded\n", n);
			return 1;
		}
		printf("page %" PRIu64 ": page_ts=%" PRIu64 " commit=0x%" PRIx64
		       " size=%d missed_flag=%u stored_flag=%u\n",
		       n, ts, commit, kbuffer_subbuffer_size(kb), (unsigned)(commit >> 31 & 1),
		       (unsigned)(commit >> 30 & 1));
		printf("  kbuffer: subbuf_ts=%llu missed_events=%d data_size=%d\n",
		       kbuffer_subbuf_timestamp(kb, page), kbuffer_missed_events(kb),
		       kbuffer_subbuffer_size(kb));
		for (data = kbuffer_read_event(kb, &t); data != NULL;
		     data = kbuffer_next_event(kb, &t)) {
			uint16_t type;

			memcpy(&type, data, 2);
			printf("  rec %3u ts=%llu (+%" PRIu64
			       ") off=%d payload_len=%d common_type=%u\n",
			       idx++, t, have_prev ? (uint64_t)t - prev : 0,
			       kbuffer_curr_offset(kb), kbuffer_event_size(kb), type);
			prev = t;
			have_prev = 1;
		}
		printf("  kbuffer: %u records\n", idx);
		total += idx;
		n++;
	}
	printf("total pages=%" PRIu64 " records=%" PRIu64 "\n", n, total);
	fclose(f);
	kbuffer_free(kb);
	free(page);
	return 0;
}
