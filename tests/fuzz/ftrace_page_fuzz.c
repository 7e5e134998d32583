/* ftrace_page_fuzz.c — libFuzzer target for the ftrace page parser. The
 * input is one page of any length. Whatever the bytes, the parser must stop
 * with records inside the page, offsets strictly increasing, or a known
 * error; ASan/UBSan catch the rest. Also run over its corpus as a plain
 * regression test (ftrace_page_fuzz_corpus). */
#include <stdint.h>
#include <stdlib.h>

#include "ftrace_page.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header hdr;
	struct orbit__ftrace_record rec;
	uint32_t last_off = 0;
	size_t steps = 0;
	int r = orbit__ftrace_open(&it, data, size, &hdr);

	if (r < 0) {
		if (orbit__ftrace_strerror(r) == NULL)
			abort();
		return 0;
	}
	if (16 + (size_t)hdr.size > size)
		abort();
	while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
		if (rec.data < data || rec.data + rec.len > data + 16 + hdr.size)
			abort();
		if (rec.offset < 16 || (steps > 0 && rec.offset <= last_off))
			abort();
		if (++steps > size / 4)
			abort(); /* every record takes at least 4 bytes */
		last_off = rec.offset;
	}
	if (r < 0 && (orbit__ftrace_strerror(r) == NULL || orbit__ftrace_next(&it, &rec) != r))
		abort();
	return 0;
}
