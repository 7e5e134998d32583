/*
 * replay_damage.c — orbit-replay on damaged copies of a real capture, in
 * process (the replay core, replay.h): every truncation point, and random
 * byte flips. Each run must end with status 2, say what is wrong in lines
 * that name the file, and report only scopes the program emitted: every
 * finished scope in the CSV is one of the intact capture's (same thread,
 * name, start and end), every unfinished one starts where one of them
 * does. Never a crash (run it under the asan preset too).
 *
 *   replay_damage truncate|flip CAPTURE
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "replay.h"

#define MAX_ROWS 65536

struct row {
	uint32_t tid;
	char name[64];
	uint64_t start, end;
	int unfinished;
};

static struct row intact[MAX_ROWS];
static size_t nintact;
static char tmpdir[200];
static char cap_path[256], csv_path[256], err_path[256];

/* Rows of an orbit-replay CSV whose names have no commas or quotes. */
static size_t read_rows(const char *path, struct row *rows)
{
	FILE *f = fopen(path, "r");
	char line[512];
	size_t n = 0;
	CHECK(f != NULL);
	CHECK(fgets(line, sizeof line, f) != NULL); /* header */
	while (fgets(line, sizeof line, f) != NULL) {
		char *field[12];
		char *p = line;
		for (int i = 0; i < 12; i++) {
			field[i] = p;
			p = strchr(p, ',');
			if (i < 11) {
				CHECK(p != NULL);
				*p++ = '\0';
			}
		}
		CHECK(n < MAX_ROWS);
		struct row *r = &rows[n++];
		r->tid = (uint32_t)strtoul(field[1], NULL, 10);
		snprintf(r->name, sizeof r->name, "%s", field[4]);
		r->start = strtoull(field[5], NULL, 10);
		r->unfinished = strstr(field[11], "unfinished") != NULL; /* marks */
		r->end = r->unfinished ? 0 : strtoull(field[6], NULL, 10);
		CHECK(strncmp(field[8], "scope", 5) == 0 || strncmp(field[8], "async", 5) == 0);
	}
	fclose(f);
	return n;
}

static int run(const char *path)
{
	const char *inputs[] = {path};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	FILE *null = fopen("/dev/null", "w");
	FILE *err = fopen(err_path, "w");
	CHECK(null != NULL && err != NULL);
	o.inputs = inputs;
	o.ninputs = 1;
	o.csv_path = csv_path;
	o.out = null;
	o.err = err;
	o.progress = 0;
	int status = orbit__replay_run(&o);
	fclose(null);
	fclose(err);
	return status;
}

static int in_intact(const struct row *r)
{
	for (size_t i = 0; i < nintact; i++) {
		const struct row *w = &intact[i];
		if (w->tid == r->tid && w->start == r->start && strcmp(w->name, r->name) == 0 &&
		    (r->unfinished || w->end == r->end))
			return 1;
	}
	return 0;
}

static int same_as_intact(const struct row *rows, size_t n)
{
	if (n != nintact)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (rows[i].tid != intact[i].tid || rows[i].start != intact[i].start ||
		    rows[i].end != intact[i].end || rows[i].unfinished != intact[i].unfinished ||
		    strcmp(rows[i].name, intact[i].name) != 0)
			return 0;
	return 1;
}

static int harmless; /* flips zstd does not see: a window size, a spare bit */

/* The checks every damaged run gets. A flip may change nothing zstd
 * checks (a larger window in a frame header, say): then the run must be
 * clean and give exactly the intact scopes. */
static void check_damaged(const char *what, int may_be_clean)
{
	static struct row rows[MAX_ROWS];
	int status = run(cap_path);
	size_t n = read_rows(csv_path, rows);
	if (status == ORBIT_REPLAY_OK && may_be_clean && same_as_intact(rows, n)) {
		harmless++;
		return;
	}
	if (status != ORBIT_REPLAY_DAMAGED) {
		fprintf(stderr, "%s: status %d, want 2\n", what, status);
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		if (!in_intact(&rows[i])) {
			fprintf(stderr, "%s: invented scope tid %u \"%s\" %llu..%llu\n", what,
			        rows[i].tid, rows[i].name, (unsigned long long)rows[i].start,
			        (unsigned long long)rows[i].end);
			exit(1);
		}
	FILE *f = fopen(err_path, "r");
	char line[1024], prefix[300];
	int lines = 0;
	snprintf(prefix, sizeof prefix, "orbit-replay: %s: ", cap_path);
	CHECK(f != NULL);
	while (fgets(line, sizeof line, f) != NULL) {
		lines++;
		if (strncmp(line, prefix, strlen(prefix)) != 0) {
			fprintf(stderr, "%s: problem line does not name the file: %s", what, line);
			exit(1);
		}
	}
	fclose(f);
	if (lines == 0) {
		fprintf(stderr, "%s: status 2 without a problem line\n", what);
		exit(1);
	}
}

static void put(const uint8_t *b, size_t len)
{
	FILE *f = fopen(cap_path, "wb");
	CHECK(f != NULL);
	CHECK(fwrite(b, 1, len, f) == len);
	CHECK(fclose(f) == 0);
}

static const char *capture; /* the intact capture */
static uint8_t *cap;
static size_t len;

/* Every truncation point. */
static void case_truncate(void)
{
	char what[64];
	for (size_t cut = 0; cut < len; cut++) {
		put(cap, cut);
		snprintf(what, sizeof what, "cut at %zu", cut);
		check_damaged(what, 0);
	}
}

/* 2000 rounds of 1 to 8 random byte flips. */
static void case_flip(void)
{
	char what[64];
	uint8_t *copy = malloc(len);
	unsigned seed = 12345;
	CHECK(copy != NULL);
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, cap, len);
		int flips = 1 + rand_r(&seed) % 8;
		for (int k = 0; k < flips; k++)
			copy[(size_t)rand_r(&seed) % len] ^= (uint8_t)(1 + rand_r(&seed) % 255);
		put(copy, len);
		snprintf(what, sizeof what, "flip round %d", round);
		check_damaged(what, 1);
	}
	free(copy);
}

static const struct test_case cases[] = {
    {"truncate", case_truncate},
    {"flip", case_flip},
};

/* The intact capture's scopes, from a copy in a directory of this run. */
static void begin(void)
{
	CHECK(capture != NULL);
	cap = (uint8_t *)test_read_file(capture, &len);
	test_tmpdir(tmpdir, sizeof tmpdir, "replay-damage");
	snprintf(cap_path, sizeof cap_path, "%s/capture.zst", tmpdir);
	snprintf(csv_path, sizeof csv_path, "%s/scopes.csv", tmpdir);
	snprintf(err_path, sizeof err_path, "%s/stderr", tmpdir);
	put(cap, len);
	CHECK(run(cap_path) == ORBIT_REPLAY_OK);
	nintact = read_rows(csv_path, intact);
	CHECK(nintact > 0);
}

static void end(void)
{
	test_rm_tree(tmpdir);
	free(cap);
	printf("%zu intact scopes; no damaged run invented one (%d flips changed nothing)\n",
	       nintact, harmless);
}

TEST_MAIN_WITH(cases, .args = "CAPTURE", .arg = &capture, .begin = begin, .end = end)
