/* check.h — the assertions every test uses. A failed check prints where and
 * what, and exits 1; a test that cannot run here exits 77 (skip). */
#ifndef ORBIT_TEST_CHECK_H
#define ORBIT_TEST_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define CHECK_EQ_U64(a, b)                                                                         \
	do {                                                                                       \
		uint64_t check_a_ = (uint64_t)(a), check_b_ = (uint64_t)(b);                       \
		if (check_a_ != check_b_) {                                                        \
			fprintf(stderr,                                                            \
			        "%s:%d: check failed: %s == %s (%" PRIu64 " != %" PRIu64 ")\n",    \
			        __FILE__, __LINE__, #a, #b, check_a_, check_b_);                   \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		fprintf(stderr, "skip: " __VA_ARGS__);                                             \
		fputc('\n', stderr);                                                               \
		exit(77);                                                                          \
	} while (0)

#endif
