/* harness.c — see harness.h. */
#include "harness.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the case harness ---- */

static const char *family_name(const struct test_family *f, size_t i)
{
	return *(const char *const *)((const char *)f->entries + i * f->size);
}

static size_t cases_count(const struct test_suite *s)
{
	return s->count + (s->family.entries != NULL ? s->family.count : 0);
}

/* The i-th name of the cases, then of the family. */
static const char *case_name(const struct test_suite *s, size_t i)
{
	return i < s->count ? s->cases[i].name : family_name(&s->family, i - s->count);
}

static void usage(const char *prog, const struct test_suite *s)
{
	fprintf(stderr, "usage: %s CASE%s%s | --list\ncases:", prog, s->args ? " " : "",
	        s->args ? s->args : "");
	for (size_t i = 0; i < cases_count(s); i++)
		fprintf(stderr, " %s", case_name(s, i));
	fputc('\n', stderr);
}

/* 0 when every case has a name and a body, and no name is used twice. */
static int suite_ok(const char *prog, const struct test_suite *s)
{
	if (s->family.entries != NULL &&
	    (s->family.run == NULL || s->family.size < sizeof(char *))) {
		fprintf(stderr, "%s: the family of cases needs a run function\n", prog);
		return -1;
	}
	for (size_t i = 0; i < cases_count(s); i++) {
		const char *name = case_name(s, i);
		if (name == NULL || (i < s->count && s->cases[i].run == NULL)) {
			fprintf(stderr, "%s: case %zu needs a name and a run function\n", prog, i);
			return -1;
		}
		for (size_t j = 0; j < i; j++) {
			if (strcmp(case_name(s, j), name) == 0) {
				fprintf(stderr, "%s: two cases named %s\n", prog, name);
				return -1;
			}
		}
	}
	return 0;
}

int test_main(int argc, char **argv, const struct test_suite *s)
{
	const char *prog = argc > 0 && strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1
	                   : argc > 0                        ? argv[0]
	                                                     : "test";
	if (suite_ok(prog, s) != 0)
		return 2;
	if (argc < 2) {
		usage(prog, s);
		return 2;
	}
	if (strcmp(argv[1], "--list") == 0 && argc == 2) {
		for (size_t i = 0; i < cases_count(s); i++)
			printf("%s\n", case_name(s, i));
		return 0;
	}
	size_t i = 0;
	while (i < cases_count(s) && strcmp(argv[1], case_name(s, i)) != 0)
		i++;
	if (i == cases_count(s)) {
		fprintf(stderr, "%s: no case named %s\n", prog, argv[1]);
		usage(prog, s);
		return 2;
	}
	if (s->args == NULL && argc > 2) {
		fprintf(stderr, "%s: case %s takes no arguments, given %s...\n", prog, argv[1],
		        argv[2]);
		usage(prog, s);
		return 2;
	}
	if (s->arg != NULL && argc > 3) {
		fprintf(stderr, "%s: case %s takes one argument, given %d\n", prog, argv[1],
		        argc - 2);
		usage(prog, s);
		return 2;
	}
	/* What the case prints comes out in order with what its children do. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (s->arg != NULL)
		*s->arg = argc == 3 ? argv[2] : NULL;
	if (s->take != NULL)
		s->take(argc - 2, argv + 2);
	if (s->begin != NULL)
		s->begin();
	if (i < s->count)
		s->cases[i].run();
	else
		s->family.run((const char *)s->family.entries + (i - s->count) * s->family.size);
	if (s->end != NULL)
		s->end();
	return 0;
}

/* ---- what the tests share ---- */

uint64_t test_now_ns(clockid_t clock)
{
	struct timespec ts;
	CHECK(clock_gettime(clock, &ts) == 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t test_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *state = x;
}

void test_sleep_ms(unsigned ms)
{
	struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

char *test_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	size_t cap = 1 << 16, n = 0, r;
	char *b = malloc(cap + 1);
	CHECK(b != NULL);
	while ((r = fread(b + n, 1, cap - n, f)) > 0) {
		n += r;
		if (n == cap) {
			cap *= 2;
			b = realloc(b, cap + 1);
			CHECK(b != NULL);
		}
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		exit(1);
	}
	fclose(f);
	b[n] = '\0';
	if (len != NULL)
		*len = n;
	return b;
}

void test_tmpdir(char *buf, size_t size, const char *name)
{
	const char *tmp = getenv("TMPDIR");
	int n = snprintf(buf, size, "%s/orbit-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
	CHECK(n > 0 && (size_t)n < size);
	if (mkdtemp(buf) == NULL) {
		fprintf(stderr, "%s: %s\n", buf, strerror(errno));
		exit(1);
	}
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	if (remove(path) != 0 && errno != ENOENT)
		fprintf(stderr, "could not remove %s: %s\n", path, strerror(errno));
	return 0;
}

void test_rm_tree(const char *path)
{
	if (getenv("KEEP") != NULL) {
		fprintf(stderr, "kept %s\n", path);
		return;
	}
	nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int test_in_child(int (*fn)(const void *arg), const void *arg, char *err, size_t size)
{
	int fds[2];
	CHECK(size > 0 && pipe(fds) == 0);
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		close(fds[1]);
		_exit(fn(arg));
	}
	close(fds[1]);
	size_t got = 0;
	char drop[512];
	for (;;) {
		/* Read to the end even past size, so the child never blocks on
		 * a full pipe. */
		int keep = got + 1 < size;
		ssize_t n =
		    read(fds[0], keep ? err + got : drop, keep ? size - 1 - got : sizeof drop);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (keep)
			got += (size_t)n;
	}
	err[got] = '\0';
	close(fds[0]);
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	if (!WIFEXITED(st)) {
		fprintf(stderr, "child died of signal %d; its stderr: %s\n",
		        WIFSIGNALED(st) ? WTERMSIG(st) : 0, err);
		exit(1);
	}
	return WEXITSTATUS(st);
}
