/*
 * harness.h — the case harness every C test program uses, and the helpers
 * the tests share (the assertions are check.h's, included here).
 *
 * A test program is a table of named cases; its main runs the one named on
 * the command line:
 *
 *	static void case_roundtrip(void) { ... CHECK(...); ... }
 *	static void case_full(void) { ... }
 *
 *	static const struct test_case cases[] = {
 *	    {"roundtrip", case_roundtrip},
 *	    {"full", case_full},
 *	};
 *
 *	TEST_MAIN(cases)
 *
 * `prog CASE [ARG...]` runs CASE and exits 0 when it returns; a failed
 * CHECK exits 1 and SKIP exits 77. A missing or unknown name, arguments
 * the program does not take, or a table with a name twice exit 2 with a
 * line saying so and the list of cases; `prog --list` prints the names.
 * tests/CMakeLists.txt gives every case its own ctest entry
 * (orbit_add_test(NAME ... ARGS CASE ... TARGET prog)), and the test
 * test_cases checks that every case of every program has one.
 *
 * Cases that share one body are a family: a table of the test's own whose
 * entries begin with their name (`const char *name` first), run by one
 * function that is handed the entry:
 *
 *	static const struct attack { const char *name; void (*fn)(struct coll *); }
 *	    attacks[] = {{"random", attack_random}, {"bomb", attack_bomb}};
 *	static void run_attack(const void *entry) { ... }
 *
 *	TEST_MAIN_WITH(cases, .family = TEST_FAMILY(attacks, run_attack))
 *
 * A program whose cases need what follows CASE (the programs they drive, a
 * directory) says what that is and takes it in .arg (one argument) or
 * .take (several); .begin runs before the case and .end after it returned:
 *
 *	static const char *synth;
 *	TEST_MAIN_WITH(cases, .args = "SYNTH_DIR", .arg = &synth)
 */
#ifndef ORBIT_TEST_HARNESS_H
#define ORBIT_TEST_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "check.h"

#ifdef __cplusplus
extern "C" {
#endif

struct test_case {
	const char *name;
	void (*run)(void);
};

struct test_family {
	const void *entries; /* count entries of size bytes, each starting with its name */
	size_t count, size;
	void (*run)(const void *entry);
};

#define TEST_FAMILY(table, fn)                                                                     \
	{                                                                                          \
		(table), sizeof(table) / sizeof((table)[0]), sizeof((table)[0]), (fn)              \
	}

struct test_suite {
	const struct test_case *cases;
	size_t count;
	struct test_family family; /* more cases; entries NULL: none */
	/* What may follow CASE, for the usage line; NULL: nothing may. */
	const char *args;
	/* The one argument after CASE goes to *arg (NULL when none is given;
	 * more than one is a usage error), or all of them to take (argc may
	 * be 0), which checks them. */
	const char **arg;
	void (*take)(int argc, char **argv);
	/* Called before the case (after take), and after it returned. */
	void (*begin)(void);
	void (*end)(void);
};

/* Runs the case named argv[1]; the exit status as above. */
int test_main(int argc, char **argv, const struct test_suite *suite);

/* main, running the suite made of the designated initializers given. */
#define TEST_MAIN_SUITE(...)                                                                       \
	int main(int argc, char **argv)                                                            \
	{                                                                                          \
		static const struct test_suite test_suite_ = {__VA_ARGS__};                        \
		return test_main(argc, argv, &test_suite_);                                        \
	}
#define TEST_CASES(table) .cases = (table), .count = sizeof(table) / sizeof((table)[0])
#define TEST_MAIN(table) TEST_MAIN_SUITE(TEST_CASES(table))
#define TEST_MAIN_WITH(table, ...) TEST_MAIN_SUITE(TEST_CASES(table), __VA_ARGS__)

/* ---- what the tests share ---- */

/* clock_gettime(clock) in ns. */
uint64_t test_now_ns(clockid_t clock);

/* The next number of a reproducible sequence (xorshift64) from *state,
 * which must not start at 0. */
uint64_t test_rand(uint64_t *state);

/* Sleeps ms milliseconds, through signals. */
void test_sleep_ms(unsigned ms);

/* The whole file, NUL-terminated (the NUL not counted in *len; len may be
 * NULL). A file that cannot be read fails the test, with its name. */
char *test_read_file(const char *path, size_t *len);

/* Makes a fresh directory $TMPDIR/orbit-NAME-XXXXXX (/tmp without TMPDIR)
 * and writes its path to buf. */
void test_tmpdir(char *buf, size_t size, const char *name);

/* Removes path and everything under it; a path already gone is fine. With
 * KEEP set in the environment it leaves it, and says where, for a look
 * after a failure. */
void test_rm_tree(const char *path);

/* Runs fn(arg) in a forked child, whose exit status is fn's result, with
 * its stderr read into err (NUL-terminated, cut to size); returns that
 * status. A child that dies of a signal fails the test. */
int test_in_child(int (*fn)(const void *arg), const void *arg, char *err, size_t size);

#ifdef __cplusplus
}
#endif

#endif
