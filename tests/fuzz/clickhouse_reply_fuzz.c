/*
 * clickhouse_reply_fuzz.c — libFuzzer target for what orbit-replay
 * --clickhouse reads from a server (replay/clickhouse/replay_export_clickhouse*.c):
 * an error reply made into one line (orbit__rp_ch_error_of) and the
 * system.columns reply of the schema check (orbit__rp_ch_check_columns).
 * Whatever the bytes: no crash, no undefined behaviour, a NUL-terminated
 * message of printable bytes. Also run over its corpus as a plain
 * regression test (clickhouse_reply_fuzz_corpus).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "replay_export_clickhouse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void printable(const struct orbit_rp_ch_error *e)
{
	size_t n = strnlen(e->text, sizeof e->text);
	if (n == sizeof e->text)
		abort(); /* not terminated */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit_rp_ch_error e;
	memset(&e, 0, sizeof e);
	orbit__rp_ch_error_of("127.0.0.1:8123", 500, (const char *)data, size, &e);
	printable(&e);
	for (const char *p = e.text; *p; p++)
		if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
			abort(); /* one line of printable ASCII */
	char *tsv = malloc(size + 1);
	if (tsv == NULL)
		return 0;
	memcpy(tsv, data, size);
	tsv[size] = '\0';
	memset(&e, 0, sizeof e);
	orbit__rp_ch_check_columns(tsv, "127.0.0.1:8123", "orbit", &e);
	printable(&e);
	free(tsv);
	return 0;
}
