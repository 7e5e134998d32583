/* sched_capture.c — kernel scheduling end to end:
 * sched_scopes.c, a real program linked against liborbit.so, traced with
 * ORBIT_SCHED=1 through a real orbit-collector or ORBIT_CAPTURE, read back
 * by the real orbit-replay. Root with tracefs (mounted here if it is not,
 * as the other sched tests do); skips (77) otherwise.
 *
 *   sched_capture CASE REPLAY COLLECTOR SCHED_SCOPES PROTOC SUBSET_DIR [PERFETTO]
 *
 *   collector     through orbit-collector: in orbit-replay's CSV the
 *                 sleeping scopes are <= 10 % on-CPU and the spinning ones
 *                 >= 60 % (unless the spinner's own CPU clock says the host
 *                 gave it less: then that is said, and the replay's figure
 *                 is checked against the thread clock instead); every
 *                 scope's split is within its duration; the JSON summary
 *                 and the text summary carry the same split; the kernel's
 *                 equation holds (events read == events delivered); the
 *                 system's tracing state is as before
 *   file          the same through ORBIT_CAPTURE
 *   perfetto      the capture's --perfetto export decodes with Perfetto's
 *                 own protos where a checkout is given (PERFETTO, cmake's
 *                 ORBIT_PERFETTO_PROTOS), else with replay's subset of
 *                 them (replay/export/perfetto_subset.proto), protoc --decode, and
 *                 holds sched_switch events whose pids are the program's
 *                 threads, in ftrace event bundles of the CPUs
 *   interop       the kernel pages as they arrive in a capture, decoded by
 *                 replay and by libtraceevent (sched_tep_compare.h): the
 *                 same events, fields and text
 *   kill          the program killed with SIGKILL while recording leaves its
 *                 instance; the next traced start removes it; tracing_on,
 *                 trace_clock, the buffers and the instances are as before
 *   unprivileged  as nobody: one line on stderr saying why kernel
 *                 scheduling is off, the reason in the Handshake, and a
 *                 normal capture (every scope, no kernel page)
 *   fork          a child forked without exec that outlives its parent: the
 *                 parent still removes its instance at exit (the child
 *                 closed its copies of the descriptors, guarantee 7)
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "integration/collector_harness.h"
#include "integration/tracefs_util.h"
#include "unit/sched_tep_compare.h"

#define SCOPES 20
#define SCOPE_NS 40000000ull

static const char *replay_exe, *collector_exe, *prog_exe, *protoc_exe, *subset_dir, *perfetto_dir;
static const char *tracefs; /* its mount point */
static char tmp[256];       /* this run's directory */

/* ---- running things ---- */

/* Runs argv with the extra environment (NULL-terminated "K=V"), stdout and
 * stderr to files; as nobody with `nobody`. Returns the child's pid without
 * waiting if nowait, else its exit status (-1: killed). */
static pid_t spawn(const char *const *argv, const char *const *env, const char *out,
                   const char *err, int nobody)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0666);
		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, 1);
		dup2(e, 2);
		for (size_t i = 0; env != NULL && env[i] != NULL; i++)
			putenv((char *)env[i]);
		if (nobody && (setgroups(0, NULL) != 0 || setresgid(65534, 65534, 65534) != 0 ||
		               setresuid(65534, 65534, 65534) != 0))
			_exit(125);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;
	CHECK(waitpid(pid, &st, 0) == pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmp, name);
}

/* orbit-replay ARGS...; its status. */
static int replay(const char *const *args)
{
	const char *argv[16];
	char out[300], err[300];
	int n = 0;
	argv[n++] = replay_exe;
	for (size_t i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	path_of(out, sizeof out, "replay.out");
	path_of(err, sizeof err, "replay.err");
	int st = wait_status(spawn(argv, NULL, out, err, 0));
	if (st != 0) {
		char *e = test_read_file(err, NULL);
		fprintf(stderr, "orbit-replay exited %d: %s\n", st, e);
		free(e);
	}
	return st;
}

/* ---- the program ---- */

struct prog {
	pid_t pid;
	int tid[2];               /* sleeper, spinner */
	uint64_t wall[2], cpu[2]; /* over their scopes, as the threads measured */
	long scopes[2];
	char *err; /* its stderr */
};

static void read_prog_output(struct prog *p, const char *out)
{
	char *text = test_read_file(out, NULL);
	for (char *line = strtok(text, "\n"); line != NULL; line = strtok(NULL, "\n")) {
		char name[32];
		int tid;
		long n;
		unsigned long long wall, cpu;
		if (sscanf(line, "thread %31s %d %ld %llu %llu", name, &tid, &n, &wall, &cpu) != 5)
			continue;
		int k = strcmp(name, "spinner") == 0;
		p->tid[k] = tid;
		p->scopes[k] = n;
		p->wall[k] = wall;
		p->cpu[k] = cpu;
	}
	free(text);
}

/* Runs sched_scopes MODE to the end with ORBIT_SCHED=1 and the given
 * output variable. */
static void run_prog(struct prog *p, const char *mode, const char *output_env, int nobody)
{
	char out[300], err[300], scopes[16];
	snprintf(scopes, sizeof scopes, "%d", SCOPES);
	const char *argv[] = {prog_exe, mode, scopes, NULL};
	const char *env[] = {"ORBIT_SCHED=1", output_env, NULL};
	path_of(out, sizeof out, "prog.out");
	path_of(err, sizeof err, "prog.err");
	memset(p, 0, sizeof *p);
	p->pid = spawn(argv, env, out, err, nobody);
	int st = wait_status(p->pid);
	p->err = test_read_file(err, NULL);
	if (st == 125)
		SKIP("cannot become nobody");
	if (st != 0)
		fprintf(stderr, "sched_scopes exited %d; stderr:\n%s\n", st, p->err);
	CHECK(st == 0);
	read_prog_output(p, out);
	CHECK(p->tid[0] > 0 && p->tid[1] > 0);
	CHECK(p->scopes[0] == SCOPES && p->scopes[1] == SCOPES);
}

/* ---- the capture ---- */

struct capture {
	int handshakes;
	int kernel_sched; /* the Handshake has a KernelSched */
	char kernel_off[512];
	uint64_t kernel_pages, kernel_losses, batches, records;
	/* the formats and pages, for interop */
	char *header_page;
	struct cmp_format fmt[16];
	int nfmt;
	struct cmp_page *page;
	size_t npage, page_cap;
};

static void read_capture(const char *path, struct capture *c)
{
	int err;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	memset(c, 0, sizeof *c);
	CHECK(r != NULL);
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(r, &p, &prob);
		CHECK(rc >= 0); /* no damage in a capture of a clean run */
		if (rc == 0)
			break;
		switch (p->body_case) {
		case ORBIT__PACKET__BODY_HANDSHAKE: {
			const Orbit__Handshake *h = p->handshake;
			c->handshakes++;
			if (h->kernel_sched_off != NULL)
				snprintf(c->kernel_off, sizeof c->kernel_off, "%s",
				         h->kernel_sched_off);
			if (h->kernel_sched != NULL) {
				const Orbit__KernelSched *k = h->kernel_sched;
				c->kernel_sched = 1;
				c->header_page = strdup(k->header_page);
				for (size_t i = 0; i < k->n_events && c->nfmt < 16; i++)
					c->fmt[c->nfmt++] =
					    (struct cmp_format){strdup(k->events[i]->system),
					                        strdup(k->events[i]->format),
					                        strlen(k->events[i]->format)};
			}
			break;
		}
		case ORBIT__PACKET__BODY_KERNEL_PAGE: {
			const Orbit__KernelPage *k = p->kernel_page;
			if (c->npage == c->page_cap) {
				c->page_cap = c->page_cap ? 2 * c->page_cap : 256;
				c->page = realloc(c->page, c->page_cap * sizeof *c->page);
				CHECK(c->page != NULL);
			}
			uint8_t *b = malloc(k->page.len);
			CHECK(b != NULL);
			memcpy(b, k->page.data, k->page.len);
			c->page[c->npage++] = (struct cmp_page){k->cpu, b, k->page.len};
			c->kernel_pages++;
			break;
		}
		case ORBIT__PACKET__BODY_KERNEL_LOSS:
			c->kernel_losses++;
			break;
		case ORBIT__PACKET__BODY_RING_BATCH:
			c->batches++;
			c->records += p->ring_batch->count;
			break;
		default:
			break;
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(r);
}

static void free_capture(struct capture *c)
{
	free(c->header_page);
	for (int i = 0; i < c->nfmt; i++) {
		free((char *)c->fmt[i].system);
		free((char *)c->fmt[i].text);
	}
	for (size_t i = 0; i < c->npage; i++)
		free((void *)c->page[i].bytes);
	free(c->page);
}

/* ---- what replay says ---- */

struct split {
	uint64_t scopes, dur, oncpu, runnable, blocked, with_sched;
};

/* The CSV's rows of the program, per name (sleep 0, spin 1). */
static void read_csv(const char *path, const struct prog *p, struct split s[2])
{
	char *text = test_read_file(path, NULL), *save = NULL;
	int col[32], ncol = 0;
	memset(s, 0, 2 * sizeof *s);
	char *line = strtok_r(text, "\r\n", &save);
	CHECK(line != NULL);
	static const char *const want[] = {"tid",      "name",        "duration_ns",
	                                   "oncpu_ns", "runnable_ns", "blocked_ns"};
	char *h = strdup(line), *hs = NULL;
	int idx = 0;
	for (char *f = strtok_r(h, ",", &hs); f != NULL; f = strtok_r(NULL, ",", &hs), idx++)
		for (int w = 0; w < 6; w++)
			if (strcmp(f, want[w]) == 0)
				col[w] = idx;
	ncol = idx;
	free(h);
	/* The scheduler's columns end the header (docs/replay.md). */
	CHECK(col[5] == ncol - 1 && col[4] == ncol - 2 && col[3] == ncol - 3);
	while ((line = strtok_r(NULL, "\r\n", &save)) != NULL) {
		char *f[32];
		int n = 0;
		/* Names here hold no comma or quote: a plain split is exact. Empty
		 * fields are kept (strsep). */
		for (char *c = line, *tok; (tok = strsep(&c, ",")) != NULL && n < 32;)
			f[n++] = tok;
		CHECK(n == ncol);
		int k = strcmp(f[col[1]], "spin") == 0    ? 1
		        : strcmp(f[col[1]], "sleep") == 0 ? 0
		                                          : -1;
		if (k < 0)
			continue;
		CHECK(atoi(f[col[0]]) == p->tid[k]);
		uint64_t dur = strtoull(f[col[2]], NULL, 10);
		s[k].scopes++;
		s[k].dur += dur;
		if (f[col[3]][0] == '\0') /* no kernel data for it */
			continue;
		uint64_t on = strtoull(f[col[3]], NULL, 10), run = strtoull(f[col[4]], NULL, 10),
		         blk = strtoull(f[col[5]], NULL, 10);
		CHECK(on + run + blk <= dur);
		s[k].with_sched++;
		s[k].oncpu += on;
		s[k].runnable += run;
		s[k].blocked += blk;
	}
	free(text);
}

/* A JSON number after "key": in text (the first from `from` on). */
static uint64_t json_u64(const char *from, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *at = strstr(from, k);
	CHECK(at != NULL);
	return strtoull(at + strlen(k), NULL, 10);
}

/* The checks of the acceptance on one capture. */
static void check_capture(const char *capture, const struct prog *p)
{
	char csv[300], json[300];
	struct split s[2];
	struct capture c;
	read_capture(capture, &c);
	CHECK(c.handshakes == 1 && c.kernel_sched);
	CHECK(c.kernel_off[0] == '\0');
	CHECK(c.kernel_pages > 0 && c.kernel_losses > 0);
	printf("capture: %llu records, %llu kernel pages, %llu KernelLoss packets\n",
	       (unsigned long long)c.records, (unsigned long long)c.kernel_pages,
	       (unsigned long long)c.kernel_losses);
	free_capture(&c);

	path_of(csv, sizeof csv, "x.csv");
	path_of(json, sizeof json, "x.json");
	CHECK(replay((const char *[]){capture, "-q", "--csv", csv, "--json", json, NULL}) == 0);
	read_csv(csv, p, s);
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "spin" : "sleep";
		CHECK(s[k].scopes == SCOPES);
		/* The program begins its scopes once the agent records
		 * (sched_scopes.c): every one has its split. */
		CHECK(s[k].with_sched == SCOPES);
		printf(
		    "%-5s %llu scopes, %.1f ms: on-CPU %.1f %%, runnable %.1f %%, blocked %.1f %%, "
		    "unknown %.1f %% (thread clock: %.1f %% on CPU)\n",
		    name, (unsigned long long)s[k].scopes, s[k].dur / 1e6,
		    100.0 * s[k].oncpu / s[k].dur, 100.0 * s[k].runnable / s[k].dur,
		    100.0 * s[k].blocked / s[k].dur,
		    100.0 * (s[k].dur - s[k].oncpu - s[k].runnable - s[k].blocked) / s[k].dur,
		    100.0 * p->cpu[k] / p->wall[k]);
		/* What the kernel's clock of the thread says it ran is what the
		 * replay saw running, within what it could not see (unknown)
		 * and 0.5 ms + 2 % a scope (as sched_record.c's states). */
		uint64_t unknown = s[k].dur - s[k].oncpu - s[k].runnable - s[k].blocked;
		uint64_t tol = SCOPES * 500000ull + p->cpu[k] / 50;
		CHECK(p->cpu[k] <= s[k].oncpu + unknown + tol);
		CHECK(p->cpu[k] + SCOPES * 1000000ull >= s[k].oncpu * 3 / 4);
	}
	CHECK(s[0].oncpu * 10 <= s[0].dur); /* sleeping: at most 10 % on-CPU */
	if (p->cpu[1] * 100 < p->wall[1] * 60)
		/* The spinner's own clock says it got less than 60 % of its
		 * scopes: the host is too busy for the bound, which is about the
		 * host; the agreement with the thread clock above still holds. */
		printf(
		    "host too busy for the 60 %% bound: the spinner's thread clock says %.1f %%, "
		    "replay %.1f %%\n",
		    100.0 * p->cpu[1] / p->wall[1], 100.0 * s[1].oncpu / s[1].dur);
	else
		CHECK(s[1].oncpu * 100 >= s[1].dur * 60); /* spinning: at least 60 % */

	/* The JSON summary: the same split per name, the kernel's equation. */
	char *j = test_read_file(json, NULL);
	const char *ks = strstr(j, "\"kernel\":{");
	CHECK(ks != NULL);
	CHECK(strstr(ks, "\"equation\":\"holds\"") != NULL);
	CHECK(json_u64(ks, "overrun") == 0 && json_u64(ks, "read_events") > 0);
	for (int k = 0; k < 2; k++) {
		char key[64];
		snprintf(key, sizeof key, "\"name\":\"%s\"", k ? "spin" : "sleep");
		const char *row = strstr(j, key);
		CHECK(row != NULL);
		CHECK_EQ_U64(json_u64(row, "oncpu_ns"), s[k].oncpu);
		CHECK_EQ_U64(json_u64(row, "runnable_ns"), s[k].runnable);
		CHECK_EQ_U64(json_u64(row, "blocked_ns"), s[k].blocked);
	}
	free(j);
	/* The text summary: the on-CPU column and the kernel's lines. */
	CHECK(replay((const char *[]){capture, NULL}) == 0);
	char out[300];
	path_of(out, sizeof out, "replay.out");
	char *text = test_read_file(out, NULL);
	CHECK(strstr(text, "on-CPU") != NULL);
	CHECK(strstr(text, "  kernel     read ") != NULL && strstr(text, ": holds") != NULL);
	free(text);
}

/* ---- cases ---- */

static char *snapshot(const char *tracefs, const int *ours, int n)
{
	return tracefs_snapshot(tracefs, ours, n);
}

static void case_collector(void)
{
	int self = getpid(), ours[2] = {self, 0};
	char *before = snapshot(tracefs, &self, 1), *after, env[300];
	struct coll h;
	struct prog p;
	harness_root(&h);
	coll_start(&h, collector_exe, NULL, NULL);
	snprintf(env, sizeof env, "ORBIT_COLLECTOR=%s", h.listen);
	run_prog(&p, "scopes", env, 0);
	CHECK(coll_stop(&h, SIGTERM) == 0);
	ours[1] = p.pid;
	CHECK(tracefs_instances_of(tracefs, p.pid) == 0);
	char cmd[600], capture[512] = "";
	snprintf(cmd, sizeof cmd, "ls %s/*.orbit.zst", h.dir);
	FILE *ls = popen(cmd, "r");
	CHECK(ls != NULL && fgets(capture, sizeof capture, ls) != NULL);
	pclose(ls);
	capture[strcspn(capture, "\n")] = '\0';
	CHECK(strstr(p.err, "orbit:") == NULL); /* nothing to say */
	check_capture(capture, &p);
	after = snapshot(tracefs, ours, 2);
	tracefs_expect_same(before, after, "by a traced run through the collector");
	free(before);
	free(after);
	free(p.err);
	coll_cleanup(&h);
}

/* A traced run into a capture file; the file's path in capture. */
static void file_run(struct prog *p, char *capture, size_t n)
{
	char env[400];
	path_of(capture, n, "run.orbit.zst");
	snprintf(env, sizeof env, "ORBIT_CAPTURE=%s", capture);
	run_prog(p, "scopes", env, 0);
	CHECK(strstr(p->err, "orbit:") == NULL);
}

static void case_file(void)
{
	int self = getpid(), ours[2] = {self, 0};
	char *before = snapshot(tracefs, &self, 1), *after, capture[300];
	struct prog p;
	file_run(&p, capture, sizeof capture);
	ours[1] = p.pid;
	CHECK(tracefs_instances_of(tracefs, p.pid) == 0);
	check_capture(capture, &p);
	after = snapshot(tracefs, ours, 2);
	tracefs_expect_same(before, after, "by a traced run into ORBIT_CAPTURE");
	free(before);
	free(after);
	free(p.err);
}

static void case_perfetto(void)
{
	char capture[300], trace[300], cmd[1400], line[512];
	struct prog p;
	if (access(protoc_exe, X_OK) != 0)
		SKIP("no protoc at %s", protoc_exe);
	file_run(&p, capture, sizeof capture);
	path_of(trace, sizeof trace, "x.pftrace");
	CHECK(replay((const char *[]){capture, "-q", "--perfetto", trace, NULL}) == 0);
	char real[600];
	snprintf(real, sizeof real, "%s/protos/perfetto/trace/trace.proto", perfetto_dir);
	int theirs = perfetto_dir[0] != 0 && access(real, R_OK) == 0;
	if (theirs)
		snprintf(cmd, sizeof cmd,
		         "cd %s && %s -I. --decode=perfetto.protos.Trace "
		         "protos/perfetto/trace/trace.proto < %s 2>&1",
		         perfetto_dir, protoc_exe, trace);
	else
		snprintf(cmd, sizeof cmd,
		         "cd %s && %s -I. --decode=perfetto.protos.Trace perfetto_subset.proto "
		         "< %s 2>&1",
		         subset_dir, protoc_exe, trace);
	printf("perfetto: decoding with %s\n",
	       theirs ? real : "replay/export/perfetto_subset.proto (no Perfetto checkout given)");
	FILE *f = popen(cmd, "r");
	CHECK(f != NULL);
	uint64_t bundles = 0, switches = 0, wakings = 0, ours = 0;
	int in_switch = 0, seen[2][2] = {{0, 0}, {0, 0}}, release = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		int v;
		bundles += strstr(line, "ftrace_events {") != NULL;
		wakings += strstr(line, "sched_waking {") != NULL;
		release |= strstr(line, "release: ") != NULL;
		if (strstr(line, "sched_switch {") != NULL) {
			switches++;
			in_switch = 1;
			continue;
		}
		if (in_switch && strchr(line, '}') != NULL)
			in_switch = 0;
		if (in_switch && (sscanf(line, " prev_pid: %d", &v) == 1 ||
		                  sscanf(line, " next_pid: %d", &v) == 1))
			for (int k = 0; k < 2; k++)
				if (v == p.tid[k]) {
					seen[k][strstr(line, "next_pid") != NULL] = 1;
					ours++;
				}
		CHECK(strstr(line, "Failed to parse") == NULL);
	}
	CHECK(pclose(f) == 0); /* protoc decoded the whole file */
	printf("perfetto: %llu ftrace bundles, %llu sched_switch (%llu naming the program's "
	       "threads), %llu sched_waking\n",
	       (unsigned long long)bundles, (unsigned long long)switches, (unsigned long long)ours,
	       (unsigned long long)wakings);
	CHECK(bundles > 0 && switches > 0 && wakings > 0 && release);
	/* Both threads switched in and out. */
	CHECK(seen[0][0] && seen[0][1] && seen[1][0] && seen[1][1]);
	free(p.err);
}

static void case_interop(void)
{
	char capture[300];
	struct prog p;
	struct capture c;
	struct cmp_result res;
	file_run(&p, capture, sizeof capture);
	read_capture(capture, &c);
	CHECK(c.kernel_sched && c.npage > 0);
	sched_compare(c.header_page, strlen(c.header_page), c.fmt, c.nfmt, c.page, c.npage, &res);
	printf("%llu records on %zu pages of the capture: %llu events agree with libtraceevent "
	       "(%llu also as printed text)\n",
	       (unsigned long long)res.records, c.npage, (unsigned long long)res.events,
	       (unsigned long long)res.printed);
	for (int k = 1; k < ORBIT__RP_SCHED_KINDS; k++)
		printf("  %-18s %llu\n", CMP_NAMES[k], (unsigned long long)res.by_kind[k]);
	CHECK(res.by_kind[ORBIT__RP_SCHED_SWITCH] > 0 && res.by_kind[ORBIT__RP_SCHED_WAKING] > 0);
	CHECK(res.events > 0 && res.events <= res.records);
	free_capture(&c);
	free(p.err);
}

static void case_kill(void)
{
	int self = getpid(), ours[3] = {self, 0, 0};
	char *before = snapshot(tracefs, &self, 1), *after, env[400], capture[300], out[300],
	     err[300];
	path_of(capture, sizeof capture, "killed.orbit.zst");
	snprintf(env, sizeof env, "ORBIT_CAPTURE=%s", capture);
	path_of(out, sizeof out, "killed.out");
	path_of(err, sizeof err, "killed.err");
	const char *argv[] = {prog_exe, "forever", NULL};
	const char *envs[] = {"ORBIT_SCHED=1", env, NULL};
	pid_t pid = spawn(argv, envs, out, err, 0);
	ours[1] = pid;
	/* Recording: its instance is there once both threads are in a scope
	 * and the agent's first pass came. */
	int waited = 0;
	for (; waited < 10000 && tracefs_instances_of(tracefs, pid) == 0; waited += 10)
		usleep(10000);
	CHECK(tracefs_instances_of(tracefs, pid) == 1);
	usleep(300000);
	CHECK(kill(pid, SIGKILL) == 0);
	CHECK(wait_status(pid) == -1);
	CHECK(tracefs_instances_of(tracefs, pid) == 1); /* left behind */
	printf("killed %d; its instance is left behind\n", (int)pid);
	/* The next traced start removes it. */
	struct prog p;
	file_run(&p, capture, sizeof capture);
	ours[2] = p.pid;
	CHECK(tracefs_instances_of(tracefs, pid) == 0);
	CHECK(tracefs_instances_of(tracefs, p.pid) == 0);
	printf("the next start (%d) removed it\n", (int)p.pid);
	/* The killed program's segment is kept as evidence (orbit-dump): the
	 * test removes it, so runs do not pile them up in /dev/shm. */
	char rm[96];
	snprintf(rm, sizeof rm, "rm -f /dev/shm/orbit-%d-*", (int)pid);
	CHECK(system(rm) == 0);
	after = snapshot(tracefs, ours, 3);
	tracefs_expect_same(before, after, "by a run killed with SIGKILL and the next one");
	free(before);
	free(after);
	free(p.err);
}

static void case_unprivileged(void)
{
	int self = getpid(), ours[2] = {self, 0};
	char *before = snapshot(tracefs, &self, 1), *after, env[400], capture[300];
	struct prog p;
	struct capture c;
	CHECK(chmod(tmp, 0777) == 0);
	path_of(capture, sizeof capture, "nobody.orbit.zst");
	snprintf(env, sizeof env, "ORBIT_CAPTURE=%s", capture);
	run_prog(&p, "scopes", env, 1);
	ours[1] = p.pid;
	/* One line, and it says why. */
	const char *nl = strchr(p.err, '\n');
	printf("as nobody: %s", p.err);
	CHECK(strncmp(p.err, "orbit: kernel scheduling is off: ", 33) == 0);
	CHECK(nl != NULL && nl[1] == '\0');
	read_capture(capture, &c);
	CHECK(c.handshakes == 1 && !c.kernel_sched && c.kernel_pages == 0);
	CHECK(strlen(c.kernel_off) == (size_t)(nl - p.err) - 33);
	CHECK(strncmp(c.kernel_off, p.err + 33, strlen(c.kernel_off)) == 0);
	/* A normal capture: every scope (a start and a stop each, and the
	 * threads' ends). */
	CHECK(c.records >= 4 * SCOPES);
	free_capture(&c);
	char csv[300];
	path_of(csv, sizeof csv, "nobody.csv");
	CHECK(replay((const char *[]){capture, "-q", "--csv", csv, NULL}) == 0);
	struct split s[2];
	read_csv(csv, &p, s);
	CHECK(s[0].scopes == SCOPES && s[1].scopes == SCOPES);
	CHECK(s[0].with_sched == 0 && s[1].with_sched == 0); /* empty columns */
	CHECK(tracefs_instances_of(tracefs, p.pid) == 0);
	after = snapshot(tracefs, ours, 2);
	tracefs_expect_same(before, after, "by an unprivileged run");
	free(before);
	free(after);
	free(p.err);
}

static void case_fork(void)
{
	int self = getpid(), ours[3] = {self, 0, 0};
	char *before = snapshot(tracefs, &self, 1), *after, env[400], capture[300], out[300];
	struct prog p;
	path_of(capture, sizeof capture, "fork.orbit.zst");
	snprintf(env, sizeof env, "ORBIT_CAPTURE=%s", capture);
	run_prog(&p, "fork", env, 0);
	path_of(out, sizeof out, "prog.out");
	char *text = test_read_file(out, NULL);
	int child = 0, parent_fds = -1, child_fds = -1;
	for (char *l = strtok(text, "\n"); l != NULL; l = strtok(NULL, "\n")) {
		sscanf(l, "child %d", &child);
		sscanf(l, "parent tracefs fds %d", &parent_fds);
		sscanf(l, "child tracefs fds %d", &child_fds);
	}
	free(text);
	/* The fork came while the agent recorded, and the child closed its
	 * copies of the instance's files (orbit__sched_forget). */
	printf("instance files open: %d in the parent at the fork, %d in the child after it\n",
	       parent_fds, child_fds);
	CHECK(child > 0 && parent_fds > 0 && child_fds == 0);
	ours[1] = p.pid;
	ours[2] = child;
	/* The parent is gone, its child is not: the instance went with the
	 * parent, the child held none of its files. */
	CHECK(kill(child, 0) == 0);
	CHECK(tracefs_instances_of(tracefs, p.pid) == 0);
	printf("parent %d exited, child %d still runs, no instance left\n", (int)p.pid, child);
	while (kill(child, 0) == 0) /* not ours to wait for: it is the program's */
		usleep(20000);
	after = snapshot(tracefs, ours, 3);
	tracefs_expect_same(before, after, "by a run with a forked child");
	free(before);
	free(after);
	free(p.err);
}

static const struct test_case cases[] = {
    {"collector", case_collector}, {"file", case_file}, {"perfetto", case_perfetto},
    {"interop", case_interop},     {"kill", case_kill}, {"unprivileged", case_unprivileged},
    {"fork", case_fork},
};

static void take_programs(int argc, char **argv)
{
	CHECK(argc == 5 || argc == 6);
	replay_exe = argv[0];
	collector_exe = argv[1];
	prog_exe = argv[2];
	protoc_exe = argv[3];
	subset_dir = argv[4];
	perfetto_dir = argc > 5 ? argv[5] : "";
}

static void begin(void)
{
	tracefs = tracefs_test_require();
	test_tmpdir(tmp, sizeof tmp, "sched-capture");
}

static void end(void)
{
	test_rm_tree(tmp);
}

TEST_MAIN_WITH(cases, .args = "REPLAY COLLECTOR SCHED_SCOPES PROTOC SUBSET_DIR [PERFETTO]",
               .take = take_programs, .begin = begin, .end = end)
