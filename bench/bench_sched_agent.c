/* bench_sched_agent.c — orbit-bench-sched-agent: what ORBIT_SCHED=1 costs
 * the real agent (liborbit's agent thread, its pass planner, the stream and
 * zstd, a capture file), per context switch recorded, beside the same
 * program traced without it in the same run. Root and tracefs needed
 * (prints why and exits 77 otherwise). Never passes or fails.
 *
 * Usage: orbit-bench-sched-agent [runs [round_trips]]   (default 5, 20000)
 *
 * Each run starts this program twice as a child (re-executed with
 * --child), traced through the environment like any user's program:
 * ORBIT_CAPTURE to a file, once with ORBIT_SCHED=0 (the baseline) and
 * once with ORBIT_SCHED=1, in alternating order. The child waits for the
 * agent's first flush (the stream is open, the instance recording), reads
 * the agent thread's CPU time (/proc/self/task/TID/schedstat, ns), runs
 * the workload, reads it again, and exits. Two workloads:
 *
 *   flat out   two threads ping-pong a byte over two pipes as fast as the
 *              host switches (hundreds of thousands of events a second):
 *              the agent's cost per event and whether the pass planner
 *              keeps up with 256 KiB per CPU
 *   paced      the same, one round trip every 200 us (nanosleep): an
 *              ordinary rate, about 20 000 events a second
 *
 * The parent reads the ORBIT_SCHED=1 capture: the kernel's events on its
 * KernelPage packets within the workload's window (decoded with the
 * formats the capture carries, replay/sched/replay_sched_scan.h), and its
 * KernelLoss totals. Rows, medians over the runs:
 *
 *   round trip                 the workload's round trip, both settings
 *   agent CPU                  the agent thread's CPU over the workload
 *   events / switches          recorded in the window
 *   extra agent CPU            (sched - baseline) / switches, / events
 *   lost                       overrun + dropped, as a share of all events
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "frame.h"
#include "orbit.h"
#include "replay_sched.h"
#include "replay_sched_scan.h"

#define MAX_RUNS 31
#define PACED_NS 200000L

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* ---- the child: the traced program ---- */

struct pong {
	int in, out, rounds;
	long pace_ns;
};

static void *pong_main(void *arg)
{
	struct pong *p = arg;
	char c;
	for (int i = 0; i < p->rounds; i++)
		if (read(p->in, &c, 1) != 1 || write(p->out, &c, 1) != 1)
			abort();
	return NULL;
}

/* The agent thread's CPU ns (schedstat's first field), or 0. */
static uint64_t agent_cpu(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], comm[64] = "";
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) == NULL)
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "orbit-agent", 11) != 0)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
		f = fopen(path, "r");
		unsigned long long v = 0;
		if (f != NULL && fscanf(f, "%llu", &v) == 1)
			ns = v;
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return ns;
}

static int child(int rounds, long pace_ns)
{
	int a[2], b[2];
	char c = 'x';
	pthread_t t;
	if (orbit_flush() != 0) /* a pass came: the stream is open, the instance records */
		return 3;
	if (pipe(a) != 0 || pipe(b) != 0)
		return 1;
	struct pong p = {a[0], b[1], rounds, pace_ns};
	uint64_t c0 = agent_cpu(), t0 = now_ns();
	pthread_create(&t, NULL, pong_main, &p);
	for (int i = 0; i < rounds; i++) {
		if (write(a[1], &c, 1) != 1 || read(b[0], &c, 1) != 1)
			return 1;
		if (pace_ns) {
			struct timespec ts = {0, pace_ns};
			nanosleep(&ts, NULL);
		}
	}
	pthread_join(t, NULL);
	uint64_t t1 = now_ns(), c1 = agent_cpu();
	printf("window %llu %llu agent %llu\n", (unsigned long long)t0, (unsigned long long)t1,
	       (unsigned long long)(c1 - c0));
	return 0;
}

/* ---- the parent ---- */

struct result {
	uint64_t t0, t1, agent_ns;
	uint64_t events, switches, lost, all_events;
};

static int run_child(const char *self, int rounds, long pace, int sched, const char *capture,
                     struct result *r)
{
	char out[300], rs[32], ps[32], env_cap[400], env_sched[32];
	snprintf(out, sizeof out, "%s.out", capture);
	snprintf(rs, sizeof rs, "%d", rounds);
	snprintf(ps, sizeof ps, "%ld", pace);
	snprintf(env_cap, sizeof env_cap, "ORBIT_CAPTURE=%s", capture);
	snprintf(env_sched, sizeof env_sched, "ORBIT_SCHED=%d", sched);
	unlink(capture);
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		if (freopen(out, "w", stdout) == NULL)
			_exit(126);
		putenv(env_cap);
		putenv(env_sched);
		execl(self, self, "--child", rs, ps, (char *)NULL);
		_exit(127);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return -1;
	FILE *f = fopen(out, "r");
	unsigned long long t0, t1, ns;
	int ok = f != NULL && fscanf(f, "window %llu %llu agent %llu", &t0, &t1, &ns) == 3;
	if (f != NULL)
		fclose(f);
	unlink(out);
	if (!ok)
		return -1;
	*r = (struct result){.t0 = t0, .t1 = t1, .agent_ns = ns};
	return 0;
}

struct counting {
	const struct result *r;
	uint64_t events, switches;
};

static int count_event(void *ctx, const struct orbit__rp_sched_event *ev)
{
	struct counting *c = ctx;
	if (ev->time >= c->r->t0 && ev->time <= c->r->t1) {
		c->events++;
		c->switches += ev->kind == ORBIT__RP_SCHED_SWITCH;
	}
	return 0;
}

/* The kernel events of the capture within the window, and its loss. */
static int read_capture(const char *path, struct result *r)
{
	int err;
	struct orbit_capture_reader *rd = orbit__capture_open(path, &err);
	struct orbit__rp_sched_decoder *d = NULL;
	struct counting c = {r, 0, 0};
	uint64_t loss[4096][2] = {{0}}, all = 0;
	if (rd == NULL)
		return -1;
	for (;;) {
		struct orbit_capture_problem prob = {0, 0};
		Orbit__Packet *p = NULL;
		int rc = orbit__capture_next(rd, &p, &prob);
		if (rc <= 0)
			break;
		const char *what;
		if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE && p->handshake->kernel_sched)
			orbit__rp_sched_decoder_of(p->handshake->kernel_sched, &d, &what);
		if (p->body_case == ORBIT__PACKET__BODY_KERNEL_PAGE && d != NULL) {
			struct orbit__rp_sched_page info;
			orbit__rp_sched_decode_page(
			    d, p->kernel_page->cpu, p->kernel_page->page.data,
			    p->kernel_page->page.len, count_event, &c, &info);
			all += info.records;
		}
		if (p->body_case == ORBIT__PACKET__BODY_KERNEL_LOSS && p->kernel_loss->cpu < 4096) {
			loss[p->kernel_loss->cpu][0] = p->kernel_loss->overrun;
			loss[p->kernel_loss->cpu][1] = p->kernel_loss->dropped;
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(rd);
	orbit__rp_sched_decoder_free(d);
	r->events = c.events;
	r->switches = c.switches;
	r->lost = 0;
	for (int i = 0; i < 4096; i++)
		r->lost += loss[i][0] + loss[i][1];
	r->all_events = all;
	return d == NULL && all == 0 ? -1 : 0;
}

static void workload(const char *self, const char *dir, const char *name, int runs, int rounds,
                     long pace)
{
	double rt[2][MAX_RUNS], cpu[2][MAX_RUNS], per_sw[MAX_RUNS], per_ev[MAX_RUNS],
	    events[MAX_RUNS], switches[MAX_RUNS], lost[MAX_RUNS];
	char cap[2][300];
	int n = 0;
	snprintf(cap[0], sizeof cap[0], "%s/base.orbit.zst", dir);
	snprintf(cap[1], sizeof cap[1], "%s/sched.orbit.zst", dir);
	for (int i = 0; i < runs; i++) {
		struct result r[2];
		int ok = 1;
		for (int k = 0; k < 2; k++) { /* alternate which goes first */
			int sched = (i + k) % 2;
			ok &= run_child(self, rounds, pace, sched, cap[sched], &r[sched]) == 0;
		}
		if (!ok || read_capture(cap[1], &r[1]) != 0 || r[1].switches == 0) {
			fprintf(stderr, "run %d failed\n", i);
			continue;
		}
		for (int k = 0; k < 2; k++) {
			rt[k][n] = (double)(r[k].t1 - r[k].t0) / rounds;
			cpu[k][n] = (double)r[k].agent_ns / 1e6;
		}
		double extra = (double)r[1].agent_ns - (double)r[0].agent_ns;
		per_sw[n] = extra / (double)r[1].switches;
		per_ev[n] = extra / (double)r[1].events;
		events[n] = (double)r[1].events;
		switches[n] = (double)r[1].switches;
		lost[n] = 100.0 * (double)r[1].lost / (double)(r[1].all_events + r[1].lost);
		n++;
	}
	unlink(cap[0]);
	unlink(cap[1]);
	if (n == 0) {
		printf("%s: no run succeeded\n", name);
		return;
	}
	printf("\n%s (%d rounds trips, %d runs)\n", name, rounds, n);
	printf("  round trip, not recorded        %10.0f ns\n", median(rt[0], n));
	printf("  round trip, recorded            %10.0f ns\n", median(rt[1], n));
	printf("  agent CPU, not recorded         %10.2f ms\n", median(cpu[0], n));
	printf("  agent CPU, recorded             %10.2f ms\n", median(cpu[1], n));
	printf("  events recorded in the window   %10.0f (%.0f sched_switch)\n", median(events, n),
	       median(switches, n));
	printf("  extra agent CPU per switch      %10.0f ns\n", median(per_sw, n));
	printf("  extra agent CPU per event       %10.0f ns\n", median(per_ev, n));
	printf("  events lost (overrun+dropped)   %10.3f %%\n", median(lost, n));
}

int main(int argc, char **argv)
{
	if (argc >= 4 && strcmp(argv[1], "--child") == 0)
		return child(atoi(argv[2]), atol(argv[3]));
	int runs = argc > 1 ? atoi(argv[1]) : 5, rounds = argc > 2 ? atoi(argv[2]) : 20000;
	char self[4096], dir[] = "/tmp/orbit-bench-sched-agent-XXXXXX";
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (runs < 1 || runs > MAX_RUNS || rounds < 1 || k <= 0) {
		fprintf(stderr, "usage: orbit-bench-sched-agent [runs (1..%d) [round_trips]]\n",
		        MAX_RUNS);
		return 2;
	}
	self[k] = '\0';
	if (geteuid() != 0 || access("/sys/kernel/tracing/instances", W_OK) != 0) {
		fprintf(stderr, "orbit-bench-sched-agent: needs root and tracefs at "
		                "/sys/kernel/tracing\n");
		return 77;
	}
	if (mkdtemp(dir) == NULL)
		return 1;
	printf("orbit-bench-sched-agent: %d runs, medians; %ld CPUs online; the agent's defaults "
	       "(ORBIT_DRAIN_MS 10, 256 KiB per CPU)\n",
	       runs, sysconf(_SC_NPROCESSORS_ONLN));
	workload(self, dir, "flat out", runs, rounds, 0);
	workload(self, dir, "paced (a round trip every 200 us)", runs, rounds / 4, PACED_NS);
	rmdir(dir);
	return 0;
}
