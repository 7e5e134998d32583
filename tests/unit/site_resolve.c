/*
 * site_resolve.c — the agent reads a call site only where the compiler put
 * one (agent/src/site_resolve.c): a real descriptor of this program gives
 * its file, line and function; every address a hostile segment writer
 * could put in a record instead (NULL, misaligned, unmapped, heap, stack,
 * writable data holding a perfect copy, code, a read-only descriptor whose
 * text lies in writable memory, the last bytes of a mapping) gives
 * -EFAULT and no fault.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"
#include "site_resolve.h"

static char writable_text[16] = "forged.c";

/* In read-only data (relro), but its file is writable memory. */
static const struct orbit__site text_in_data = {ORBIT__SITE_MAGIC, writable_text, "f", 7, 0};
/* Read-only, with the padding word set. */
static const struct orbit__site bad_zero = {ORBIT__SITE_MAGIC, __FILE__, "f", 7, 1};
/* A perfect descriptor in writable data. */
static struct orbit__site in_data = {ORBIT__SITE_MAGIC, __FILE__, "f", 7, 0};

static struct orbit__site_text t;

static int resolve(const void *p)
{
	return orbit__site_resolve((uint64_t)(uintptr_t)p, &t);
}

/* The descriptor every macro defines, and its line. */
static const struct orbit__site *real_site(int *line)
{
	// clang-format off
	ORBIT__SITE_DEF; *line = __LINE__; return &ORBIT__SITE;
	// clang-format on
}

static void case_resolve(void)
{
	int line;
	const struct orbit__site *s = real_site(&line);
	CHECK(resolve(s) == 0);
	CHECK(strstr(t.file, "site_resolve.c") != NULL);
	CHECK(t.line == (uint32_t)line);
	CHECK(strcmp(t.function, "real_site") == 0);

	CHECK(orbit__site_resolve(0, &t) == -EFAULT);
	CHECK(resolve((const char *)s + 1) == -EFAULT);                /* misaligned */
	CHECK(resolve((const char *)s + 8) == -EFAULT);                /* inside one, no magic */
	CHECK(resolve(&text_in_data) == -EFAULT);                      /* its text is writable */
	CHECK(resolve(&bad_zero) == -EFAULT);                          /* padding not zero */
	CHECK(resolve(&in_data) == -EFAULT);                           /* writable data */
	CHECK(resolve((const void *)(uintptr_t)real_site) == -EFAULT); /* code */
	struct orbit__site on_stack = *s;
	CHECK(resolve(&on_stack) == -EFAULT);
	struct orbit__site *heap = malloc(sizeof *heap);
	CHECK(heap != NULL);
	*heap = *s;
	CHECK(resolve(heap) == -EFAULT);
	free(heap);
	long pg = sysconf(_SC_PAGESIZE);
	void *m = mmap(NULL, (size_t)pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(m != MAP_FAILED);
	CHECK(resolve(m) == -EFAULT); /* mapped, read-only, but no object's */
	munmap(m, (size_t)pg);
	CHECK(resolve(m) == -EFAULT); /* unmapped */
	CHECK(orbit__site_resolve(UINT64_MAX - 7, &t) == -EFAULT);
	CHECK(orbit__site_resolve(0x1000, &t) == -EFAULT);
	/* Every aligned address around the real descriptor: no fault, and
	 * what resolves is a real descriptor (orbit.h's macros in liborbit
	 * or here), with its texts. */
	for (intptr_t d = -65536; d <= 65536; d += 8) {
		if (resolve((const char *)s + d) == 0)
			CHECK(t.file[0] != '\0' && t.function[0] != '\0' && t.line > 0);
	}
}

static const struct test_case cases[] = {
    {"resolve", case_resolve},
};

TEST_MAIN(cases)
