/*
 * ingest_fuzz.c — libFuzzer target: hostile bytes as spool files and as a
 * capture planted in the directory, taken in by `orbit-collector --ingest`
 * (collector/ingest.c: the frame walk, frame_rules.c's checks, the search
 * for the stream's capture, the comparison of frames, the append).
 *
 * The input's first four bytes (a u32, little-endian, cut to what follows)
 * split the rest: the bytes before the split are a capture already in the
 * directory, those after it the spool. The spool is
 * taken in twice, and the second time must add nothing: ingesting is
 * idempotent whatever the bytes. Besides "no crash, no sanitizer report, no
 * hang". corpus/ingest/ holds seeds made from a real capture (a whole one
 * into an empty directory; a collector's part, torn, and the spool of its
 * tail); the plain build runs them as ingest_fuzz_corpus.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector.h"
#include "frame.h"

#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "ingest_fuzz: %s:%d: %s\n", __FILE__, __LINE__, #cond);    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static char dir[64], spool[96], planted[96];

static void write_file(const char *path, const uint8_t *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* A sum of every file's bytes in the directory, by position: what changed. */
static uint64_t dir_sum(void)
{
	uint64_t sum = 0;
	DIR *d = opendir(dir);
	FUZZ_CHECK(d != NULL);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char path[400];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		FILE *f = fopen(path, "rb");
		FUZZ_CHECK(f != NULL);
		int ch;
		uint64_t i = 0;
		while ((ch = fgetc(f)) != EOF)
			sum += (uint64_t)(ch + 1) * ++i;
		fclose(f);
	}
	closedir(d);
	return sum;
}

static void clear_dir(void)
{
	DIR *d = opendir(dir);
	if (d == NULL)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.') {
			char path[400];
			snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
			unlink(path);
		}
	closedir(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (dir[0] == '\0') {
		snprintf(dir, sizeof dir, "/tmp/orbit-ingest-fuzz-%d", (int)getpid());
		snprintf(spool, sizeof spool, "%s.spool", dir);
		snprintf(planted, sizeof planted, "%s/planted.orbit.zst", dir);
		FUZZ_CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST);
		/* quiet: every input says a line or two */
		FUZZ_CHECK(freopen("/dev/null", "w", stdout) != NULL);
	}
	if (size < 4)
		return 0;
	size_t split =
	    (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
	if (split > size - 4)
		split = size - 4;
	clear_dir();
	if (split > 0)
		write_file(planted, data + 4, split);
	write_file(spool, data + 4 + split, size - 4 - split);
	char *files[] = {spool};
	int first = orbit__ingest(dir, files, 1);
	uint64_t after = dir_sum();
	int second = orbit__ingest(dir, files, 1);
	FUZZ_CHECK(first == 0 || first == 1);
	if (first == 0) /* taken in: again, nothing changes */
		FUZZ_CHECK(second == 0 && dir_sum() == after);
	unlink(spool);
	return 0;
}
