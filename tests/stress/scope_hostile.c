/*
 * scope_hostile.c — the slot protocol end to end with real processes:
 * eight threads share one small ring (ORBIT_RINGS=1, ORBIT_RING_BUDGET=256K:
 * 4096 slots) so it laps all the time, on however few CPUs the machine has
 * (preemption is real: eight writers on two vCPUs), writing scopes with
 * hostile names (empty, 31/32/33 bytes, 1000 bytes, UTF-8, quotes, commas,
 * control bytes), nested two deep now and then. The traced child logs the
 * truth: for every scope, its thread, its name and the CLOCK_MONOTONIC
 * readings around its ORBIT_START and its ORBIT_STOP. The capture goes to a
 * file (ORBIT_CAPTURE); orbit-replay turns it into CSV, and every row must
 * be a scope the child really ran:
 *   - on its thread, in the thread's order (rows sorted by start match the
 *     truth as a subsequence, each truth at most once);
 *   - with its full name, or a prefix of it when the row says
 *     name_incomplete;
 *   - starting within 2 us of the readings around its ORBIT_START, and
 *     ending within 2 us of those around its ORBIT_STOP unless the row says
 *     unfinished (then no earlier than its start);
 * and everything else is counted lost: the summary says claimed == delivered
 * + lost holds, with nothing left pending at the end (the writers were all
 * joined before the child exited): scope_ring.c guarantees 2, 4 and 7,
 * reconstruct.h. Several runs, each a new child.
 *
 *   scope_hostile lapped ORBIT-REPLAY DIR [RUNS [SCOPES-PER-THREAD]]
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"

#define THREADS 8
#define SLACK_NS 2000u

static char long_name[1001];
static const char *names[] = {
    "",
    "abcdefghijklmnopqrstuvwxyz01234",   /* 31 bytes */
    "abcdefghijklmnopqrstuvwxyz012345",  /* 32 */
    "abcdefghijklmnopqrstuvwxyz0123456", /* 33 */
    long_name,                           /* 1000 */
    "na\xc3\xafve \xe2\x80\x94 \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x9a\x80", /* UTF-8 */
    "say \"hi\", 'there' \\ and \"\"",          /* quotes, comma, backslash */
    "\x01\x02\t\n\r\x1b[31mred\x1b[0m\x7f end", /* control bytes */
    "a,b,c\r\nnext line",
    "parse",
};
#define NNAMES (sizeof names / sizeof names[0])

struct truth {
	uint32_t name;
	uint32_t depth;
	uint64_t t0, t1; /* around ORBIT_START */
	uint64_t t2, t3; /* around ORBIT_STOP */
};

/* ---- the traced child ---- */

struct writer {
	pthread_t thread;
	uint32_t tid;
	uint32_t index;
	uint32_t n; /* scopes to write */
	struct truth *truth;
	uint32_t count;
};

static pthread_barrier_t go;

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	w->tid = (uint32_t)syscall(SYS_gettid);
	pthread_barrier_wait(&go);
	uint64_t rng = 0x9e3779b97f4a7c15ull * (w->index + 1);
	for (uint32_t i = 0; i < w->n; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		struct truth *outer = &w->truth[w->count++];
		outer->name = (uint32_t)((rng >> 33) % NNAMES);
		outer->depth = 0;
		outer->t0 = test_now_ns(CLOCK_MONOTONIC);
		ORBIT_START(names[outer->name]);
		outer->t1 = test_now_ns(CLOCK_MONOTONIC);
		if ((rng >> 20) % 4 == 0) { /* a scope inside, now and then */
			struct truth *inner = &w->truth[w->count++];
			inner->name = (uint32_t)((rng >> 40) % NNAMES);
			inner->depth = 1;
			inner->t0 = test_now_ns(CLOCK_MONOTONIC);
			ORBIT_START(names[inner->name]);
			inner->t1 = test_now_ns(CLOCK_MONOTONIC);
			inner->t2 = test_now_ns(CLOCK_MONOTONIC);
			ORBIT_STOP();
			inner->t3 = test_now_ns(CLOCK_MONOTONIC);
		}
		outer->t2 = test_now_ns(CLOCK_MONOTONIC);
		ORBIT_STOP();
		outer->t3 = test_now_ns(CLOCK_MONOTONIC);
	}
	return NULL;
}

/* Writes the truth: per thread its tid, its count, then its entries in the
 * order they began. */
static int child_main(const char *truth_path, uint32_t per_thread)
{
	static struct writer w[THREADS];
	CHECK(pthread_barrier_init(&go, NULL, THREADS) == 0);
	for (uint32_t i = 0; i < THREADS; i++) {
		w[i].index = i;
		w[i].n = per_thread;
		w[i].truth = calloc(2 * (size_t)per_thread, sizeof *w[i].truth);
		CHECK(w[i].truth != NULL);
		CHECK(pthread_create(&w[i].thread, NULL, writer_main, &w[i]) == 0);
	}
	for (uint32_t i = 0; i < THREADS; i++)
		CHECK(pthread_join(w[i].thread, NULL) == 0);
	FILE *f = fopen(truth_path, "wb");
	CHECK(f != NULL);
	for (uint32_t i = 0; i < THREADS; i++) {
		/* Inner scopes were logged after their outer one began: the
		 * order of starts. */
		CHECK(fwrite(&w[i].tid, 4, 1, f) == 1 && fwrite(&w[i].count, 4, 1, f) == 1);
		CHECK(fwrite(w[i].truth, sizeof *w[i].truth, w[i].count, f) == w[i].count);
	}
	CHECK(fclose(f) == 0);
	return 0; /* exit flushes the capture */
}

/* ---- the checker ---- */

struct row {
	uint32_t tid;
	uint64_t start, end;
	char *name;
	size_t name_len;
	int unfinished, incomplete;
};

/* One RFC 4180 field from *p (quoted or not); returns it NUL-free with its
 * length, and moves *p past the separator. */
static char *csv_field(char **p, size_t *len, int *eol)
{
	char *s = *p, *out = s, *w = s;
	if (*s == '"') {
		s++;
		for (;;) {
			CHECK(*s != '\0');
			if (*s == '"') {
				if (s[1] == '"') {
					*w++ = '"';
					s += 2;
					continue;
				}
				s++;
				break;
			}
			*w++ = *s++;
		}
	} else {
		while (*s != ',' && *s != '\r' && *s != '\0')
			*w++ = *s++;
	}
	*len = (size_t)(w - out);
	*eol = *s != ',';
	if (*s == ',')
		s++;
	else if (*s == '\r') {
		CHECK(s[1] == '\n');
		s += 2;
	}
	*p = s;
	return out;
}

static int by_thread_start(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int name_ok(const struct row *r, const char *want)
{
	size_t n = strlen(want);
	if (r->name_len == n)
		return memcmp(r->name, want, n) == 0;
	return r->incomplete && r->name_len < n && memcmp(r->name, want, r->name_len) == 0;
}

static int times_ok(const struct row *r, const struct truth *t)
{
	if (r->start + SLACK_NS < t->t0 || r->start > t->t1 + SLACK_NS)
		return 0;
	if (r->unfinished)
		return r->end >= r->start;
	return r->end + SLACK_NS >= t->t2 && r->end <= t->t3 + SLACK_NS;
}

static void check_run(const char *csv_path, const char *truth_path, uint64_t *rows_out,
                      uint64_t *truths_out)
{
	size_t len;
	char *csv = test_read_file(csv_path, &len), *p = csv;
	size_t cap = 1024, n = 0;
	struct row *rows = malloc(cap * sizeof *rows);
	CHECK(rows != NULL);
	/* header */
	char *nl = strstr(p, "\r\n");
	CHECK(nl != NULL && strncmp(p, "pid,tid,thread_name,depth,name,start_ns,end_ns", 46) == 0);
	p = nl + 2;
	while (*p != '\0') {
		if (n == cap) {
			cap *= 2;
			rows = realloc(rows, cap * sizeof *rows);
			CHECK(rows != NULL);
		}
		struct row *r = &rows[n];
		memset(r, 0, sizeof *r);
		int eol = 0;
		char *kind = NULL, *marks = NULL;
		size_t kind_len = 0, marks_len = 0;
		for (int col = 0; !eol; col++) {
			size_t fl;
			char *f = csv_field(&p, &fl, &eol);
			char save = f[fl];
			switch (col) {
			case 1:
				f[fl] = '\0';
				r->tid = (uint32_t)strtoul(f, NULL, 10);
				break;
			case 4:
				r->name = f;
				r->name_len = fl;
				break;
			case 5:
				f[fl] = '\0';
				r->start = strtoull(f, NULL, 10);
				break;
			case 6:
				f[fl] = '\0';
				r->end = strtoull(f, NULL, 10);
				break;
			case 8:
				kind = f;
				kind_len = fl;
				break;
			case 11:
				marks = f;
				marks_len = fl;
				break;
			default:
				break;
			}
			if (col != 4 && col != 8 && col != 11)
				f[fl] = save;
		}
		CHECK(kind != NULL && kind_len == 5 && memcmp(kind, "scope", 5) == 0);
		if (marks != NULL) {
			char m[128];
			CHECK(marks_len < sizeof m);
			memcpy(m, marks, marks_len);
			m[marks_len] = '\0';
			r->unfinished = strstr(m, "unfinished") != NULL;
			r->incomplete = strstr(m, "name_incomplete") != NULL;
		}
		n++;
	}
	qsort(rows, n, sizeof *rows, by_thread_start);

	size_t tlen;
	char *tb = test_read_file(truth_path, &tlen), *tp = tb;
	uint64_t truths = 0, matched = 0;
	size_t ri = 0;
	uint32_t threads_seen = 0;
	while (tp < tb + tlen) {
		uint32_t tid, count;
		memcpy(&tid, tp, 4);
		memcpy(&count, tp + 4, 4);
		tp += 8;
		const struct truth *t = (const struct truth *)tp;
		tp += (size_t)count * sizeof *t;
		CHECK(tp <= tb + tlen);
		truths += count;
		threads_seen++;
		/* The thread's rows, in start order, as a subsequence of its
		 * truth, each entry taken at most once: the earliest that fits
		 * leaves the most room for the rows after it. */
		size_t lo = 0;
		while (lo < n && rows[lo].tid < tid)
			lo++;
		uint32_t k = 0;
		for (ri = lo; ri < n && rows[ri].tid == tid; ri++) {
			const struct row *r = &rows[ri];
			while (k < count && !(name_ok(r, names[t[k].name]) && times_ok(r, &t[k])))
				k++;
			if (k == count) {
				fprintf(
				    stderr,
				    "tid %u: a row no scope of the thread explains: start %llu end "
				    "%llu name %zu bytes%s%s\n",
				    tid, (unsigned long long)r->start, (unsigned long long)r->end,
				    r->name_len, r->unfinished ? " unfinished" : "",
				    r->incomplete ? " name_incomplete" : "");
				CHECK(0);
			}
			k++;
			matched++;
		}
	}
	CHECK_EQ_U64(threads_seen, THREADS);
	/* Every row belonged to one of the writers. */
	CHECK_EQ_U64(matched, n);
	*rows_out = n;
	*truths_out = truths;
	free(tb);
	free(rows);
	free(csv);
}

static int run(char *const argv[], char *const envp[], const char *out_path)
{
	fflush(stdout);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (out_path != NULL && freopen(out_path, "w", stdout) == NULL)
			_exit(126);
		execve(argv[0], argv, envp);
		_exit(127);
	}
	int status;
	CHECK(waitpid(pid, &status, 0) == pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static const char *replay_exe, *dir;
static int runs = 3;
static uint32_t per_thread = 20000;

static void case_lapped(void)
{
	const char *child_truth = getenv("SCOPE_HOSTILE_TRUTH");
	if (child_truth != NULL) /* the traced child: this program again */
		exit(child_main(child_truth, (uint32_t)atoi(getenv("SCOPE_HOSTILE_SCOPES"))));
	CHECK(replay_exe != NULL && dir != NULL);
	for (int run_i = 0; run_i < runs; run_i++) {
		char capture[4096], truth[4096], csv[4096], summary[4096];
		snprintf(capture, sizeof capture, "%s/scope_hostile-%d.orbit.zst", dir, run_i);
		snprintf(truth, sizeof truth, "%s/scope_hostile-%d.truth", dir, run_i);
		snprintf(csv, sizeof csv, "%s/scope_hostile-%d.csv", dir, run_i);
		snprintf(summary, sizeof summary, "%s/scope_hostile-%d.txt", dir, run_i);
		unlink(capture);
		char e_capture[4200], e_truth[4200], e_scopes[64];
		snprintf(e_capture, sizeof e_capture, "ORBIT_CAPTURE=%s", capture);
		snprintf(e_truth, sizeof e_truth, "SCOPE_HOSTILE_TRUTH=%s", truth);
		snprintf(e_scopes, sizeof e_scopes, "SCOPE_HOSTILE_SCOPES=%u", per_thread);
		char *env[] = {
		    e_capture, e_truth, e_scopes, "ORBIT_RINGS=1", "ORBIT_RING_BUDGET=256K", NULL};
		char *child_argv[] = {"/proc/self/exe", "lapped", NULL};
		CHECK_EQ_U64(run(child_argv, env, NULL), 0);
		char *replay_argv[] = {(char *)replay_exe, "--csv", csv, capture, NULL};
		char *no_env[] = {NULL};
		int rc = run(replay_argv, no_env, summary);
		size_t slen;
		char *text = test_read_file(summary, &slen);
		const char *eq = strstr(text, "equation");
		CHECK(eq != NULL);
		const char *eol = strchr(eq, '\n');
		printf("run %d: %.*s\n", run_i, (int)(eol ? eol - eq : (long)strlen(eq)), eq);
		CHECK(strstr(eq, ": holds") != NULL &&
		      (eol == NULL || strstr(eq, ": holds") < eol));
		CHECK_EQ_U64(rc, 0);
		uint64_t rows, truths;
		check_run(csv, truth, &rows, &truths);
		const char *lost = strstr(text, "  loss");
		const char *lost_end = lost ? strchr(lost, '\n') : NULL;
		printf("run %d: %llu of %llu scopes delivered, each one the child ran%s%.*s\n",
		       run_i, (unsigned long long)rows, (unsigned long long)truths,
		       lost ? "; " : "", lost ? (int)(lost_end - lost - 2) : 0,
		       lost ? lost + 2 : "");
		CHECK(rows > 0);
		/* Every writer was joined before the child exited: nothing was
		 * pending at its end, so nothing may be left waiting (a stamp a
		 * late producer left is written off, not waited on: guarantee 7). */
		CHECK(lost != NULL && lost_end != NULL);
		CHECK(memmem(lost, (size_t)(lost_end - lost), "at end 0", 8) != NULL ||
		      memmem(lost, (size_t)(lost_end - lost), "none", 4) != NULL);
		free(text);
	}
}

static const struct test_case cases[] = {
    {"lapped", case_lapped},
};

static void take_args(int argc, char **argv)
{
	CHECK(argc <= 4);
	replay_exe = argc > 0 ? argv[0] : NULL;
	dir = argc > 1 ? argv[1] : NULL;
	if (argc > 2)
		runs = atoi(argv[2]);
	if (argc > 3)
		per_thread = (uint32_t)atoi(argv[3]);
}

TEST_MAIN_WITH(cases, .args = "ORBIT-REPLAY DIR [RUNS [SCOPES-PER-THREAD]]", .take = take_args)

__attribute__((constructor)) static void make_long_name(void)
{
	for (int i = 0; i < 1000; i++)
		long_name[i] = (char)('A' + i % 26);
	long_name[1000] = '\0';
}
