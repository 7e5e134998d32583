/*
 * bench_pipeline.c — orbit-bench-pipeline: producers -> agent -> a real
 * orbit-collector on loopback, with the defaults unless the environment says
 * otherwise. Never pass/fail. Each run is a fresh child process (its own
 * segment and agent), so ORBIT_* variables apply as set.
 *
 *   orbit-bench-pipeline [--collector PATH] [--collector-arg ARG]...
 *                        [--viewers N] [--runs K] MODE...
 *
 *   --collector-arg ARG    one more argument for the collector (--ui off, ...)
 *   --viewers N            N viewers of the collector's live view (--ui), each
 *                          reading the run's stream's blocks (/events) as
 *                          fast as they come while the run streams
 *
 *   --rates R1,R2,..|max   (the default mode) one producer thread, or
 *                          --threads N, emits scopes (ORBIT_SCOPE, 2 events)
 *                          at each rate for --seconds S (10), paced with
 *                          sleeps, or with --spin by busy-waiting between
 *                          scopes: a producer that never pauses
 *   --burst T,N            T threads, each N records as fast as it can:
 *                          nested scopes, long names, values, a log line
 *   --hot N                one thread, N ORBIT_SCOPEs flat out, nothing else
 *   --rss T1,T2,..         T threads write 1 M events/s each for 2 s; the
 *                          process's resident memory then
 *
 * Columns: events emitted (claimed, from the capture's EndOfStream; and
 * counted by the producers), delivered (records in the capture's ring
 * batches), lost (its Loss packets), B/event (file size over delivered),
 * agent ns/ev (CPU of the thread orbit-agent over emitted), collector ns/ev
 * (CPU of the collector process over emitted, while the run streamed and
 * until its file was read: its threads' schedstat run times, in ns), equation (claimed == delivered
 * + lost, and claimed == emitted, plus a thread-end record per producer thread from an agent that
 * writes them). With --runs K every run is printed, then the median. A paced producer that fell
 * more than 1 ms behind its pace (it was not scheduled) says so under its row: it then caught up at
 * full speed, a burst far above the nominal rate.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "frame.h"
#include "orbit.h"

#ifndef ORBIT_COLLECTOR_PATH
#define ORBIT_COLLECTOR_PATH "orbit-collector"
#endif

#define MAX_THREADS 64
#define MAX_RUNS 15

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
	nanosleep(&ts, NULL);
}

/* ---- the producers (child) ---- */

enum mode { RATES, BURST, HOT, RSS };

struct producer {
	enum mode mode;
	double rate; /* events per second for this thread; 0: flat out */
	int spin;    /* busy-wait between scopes */
	uint64_t seconds_ns;
	uint64_t count; /* BURST: records; HOT: scopes */
	int index;
	uint64_t emitted;
	uint64_t behind_ns; /* the most the producer fell behind its pace */
};

static _Atomic int go;

static void *produce_rate(struct producer *p)
{
	uint64_t start = now_ns(), n = 0;
	if (p->spin && p->rate > 0) {
		/* Never pauses: one scope, then spin until the next is due. */
		double step = 2e9 / p->rate;
		for (uint64_t k = 0;; k++) {
			uint64_t due = start + (uint64_t)((double)k * step), now;
			while ((now = now_ns()) < due)
				;
			if (now - due > p->behind_ns)
				p->behind_ns = now - due;
			if (now - start >= p->seconds_ns)
				break;
			ORBIT_SCOPE("pipeline scope");
			n += 2;
		}
		p->emitted = n;
		return NULL;
	}
	for (;;) {
		for (int k = 0; k < 256; k++) {
			ORBIT_SCOPE("pipeline scope");
		}
		n += 512; /* a scope is a start and a stop */
		uint64_t now = now_ns();
		if (now - start >= p->seconds_ns)
			break;
		if (p->rate > 0) {
			uint64_t due = start + (uint64_t)((double)n * 1e9 / p->rate);
			if (due > now + 20000)
				sleep_ns(due - now);
			else if (now > due && now - due > p->behind_ns)
				p->behind_ns = now - due; /* it catches up flat out */
		}
	}
	p->emitted = n;
	return NULL;
}

/* One iteration of the burst: 10 records (an outer scope with a 40-byte
 * name: head and continuation; inner scope; a value; a second value; the
 * inner stop; a start/stop with a runtime name), then a log line every 64
 * iterations. */
static uint64_t burst_iteration(int t, uint64_t i)
{
	char name[48];
	snprintf(name, sizeof name, "t%d item %" PRIu64, t, i & 1023);
	ORBIT_START("burst outer scope with a name over 32 B"); /* 2 records */
	ORBIT_START("inner");                                   /* 1 */
	ORBIT_INT("queue depth", (int)(i % 17));                /* 1 */
	ORBIT_DOUBLE("load", (double)i * 0.5);                  /* 1 */
	ORBIT_STOP();                                           /* 1 */
	ORBIT_START(name);                                      /* 1 */
	ORBIT_STOP();                                           /* 1 */
	ORBIT_STOP();                                           /* 1 */
	ORBIT_UINT64("bytes", i);                               /* 1 */
	if (i % 64 == 0)
		ORBIT_LOG("t%d reached %" PRIu64, t, i);
	return 10;
}

static void *produce(void *arg)
{
	struct producer *p = arg;
	while (!atomic_load(&go))
		;
	switch (p->mode) {
	case RATES:
	case RSS:
		return produce_rate(p);
	case BURST:
		for (uint64_t i = 0; p->emitted + 10 <= p->count; i++)
			p->emitted += burst_iteration(p->index, i);
		return NULL;
	case HOT:
		for (uint64_t i = 0; i < p->count; i++) {
			ORBIT_SCOPE("hot");
		}
		p->emitted = 2 * p->count;
		return NULL;
	}
	return NULL;
}

/* CPU time of this process's thread called orbit-agent, in ns. */
static uint64_t agent_cpu_ns(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	uint64_t ns = 0;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], buf[512];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		int agent =
		    fgets(buf, sizeof buf, f) != NULL && strncmp(buf, "orbit-agent", 11) == 0;
		fclose(f);
		if (!agent)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
		f = fopen(path, "re");
		if (f == NULL || fgets(buf, sizeof buf, f) == NULL) {
			if (f)
				fclose(f);
			continue;
		}
		fclose(f);
		unsigned long long ut = 0, st = 0;
		char *p = strrchr(buf, ')');
		/* fields 14 and 15 (utime, stime) after the comm */
		if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
		                &st) == 2)
			ns = (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
	}
	if (d)
		closedir(d);
	return ns;
}

/* A field of /proc/self/status in kB (VmRSS, VmHWM, RssShmem ...). */
static uint64_t status_kb(const char *field)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	uint64_t v = 0;
	size_t n = strlen(field);
	while (f != NULL && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, field, n) == 0 && line[n] == ':')
			v = strtoull(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

struct report {
	uint64_t emitted, agent_cpu_ns, rss_kb, hwm_kb, shmem_kb, anon_kb;
	uint64_t behind_ns; /* the most a producer fell behind its pace */
};

static _Noreturn void child(int out, const struct producer *tmpl, int threads)
{
	if (orbit_init() != 0)
		_exit(1);
	struct producer p[MAX_THREADS];
	pthread_t t[MAX_THREADS];
	atomic_store(&go, 0);
	for (int i = 0; i < threads; i++) {
		p[i] = *tmpl;
		p[i].index = i;
		if (tmpl->mode == RATES)
			p[i].rate = tmpl->rate / threads;
		pthread_create(&t[i], NULL, produce, &p[i]);
	}
	atomic_store(&go, 1);
	struct report r = {0};
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		r.emitted += p[i].emitted;
		if (p[i].behind_ns > r.behind_ns)
			r.behind_ns = p[i].behind_ns;
	}
	orbit_flush();
	r.agent_cpu_ns = agent_cpu_ns(); /* before the thread ends */
	r.rss_kb = status_kb("VmRSS");
	r.hwm_kb = status_kb("VmHWM");
	r.shmem_kb = status_kb("RssShmem");
	r.anon_kb = status_kb("RssAnon");
	orbit_shutdown();
	if (write(out, &r, sizeof r) != sizeof r)
		_exit(1);
	_exit(0);
}

/* ---- the capture ---- */

struct tally {
	uint64_t delivered, lost, claimed, bytes;
	uint64_t log_records, log_lost, log_reserved;
	int ended;
};

static int tally_capture(const char *path, struct tally *t)
{
	memset(t, 0, sizeof *t);
	struct stat st;
	if (stat(path, &st) != 0)
		return -errno;
	t->bytes = (uint64_t)st.st_size;
	int err;
	struct orbit_capture_reader *r = orbit__capture_open(path, &err);
	if (r == NULL)
		return err;
	Orbit__Packet *p;
	struct orbit_capture_problem prob;
	static uint64_t lost[ORBIT_MAX_RINGS], plost[ORBIT_MAX_PAGE_RINGS];
	memset(lost, 0, sizeof lost);
	memset(plost, 0, sizeof plost);
	while ((err = orbit__capture_next(r, &p, &prob)) != 0) {
		if (err < 0)
			continue;
		if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH)
			t->delivered += p->ring_batch->count;
		else if (p->body_case == ORBIT__PACKET__BODY_LOSS &&
		         p->loss->ring < ORBIT_MAX_RINGS)
			lost[p->loss->ring] = p->loss->lapped + p->loss->writer_gone +
			                      p->loss->backstop + p->loss->at_end;
		else if (p->body_case == ORBIT__PACKET__BODY_PAGE_LOSS &&
		         p->page_loss->ring < ORBIT_MAX_PAGE_RINGS)
			plost[p->page_loss->ring] = p->page_loss->records;
		else if (p->body_case == ORBIT__PACKET__BODY_FTRACE_PAGE) {
			/* data records on the page: the log lines */
			const uint8_t *pg = p->ftrace_page->page.data;
			size_t len = p->ftrace_page->page.len;
			uint64_t commit;
			memcpy(&commit, pg + 8, 8);
			size_t size = (size_t)(commit & ((1u << 27) - 1)), off = 16;
			while (len >= 16 && off + 4 <= 16 + size && off + 4 <= len) {
				uint32_t h;
				memcpy(&h, pg + off, 4);
				uint32_t tl = h & 31;
				if (tl == 0) {
					uint32_t l;
					memcpy(&l, pg + off + 4, 4);
					off += 8 + ((l - 4 + 3) & ~3u);
					t->log_records++;
				} else if (tl <= 28) {
					off += 4 + 4 * tl;
					t->log_records++;
				} else if (tl == 29) {
					break;
				} else {
					off += 8;
				}
			}
		} else if (p->body_case == ORBIT__PACKET__BODY_END) {
			t->ended = 1;
			for (size_t i = 0; i < p->end->n_claimed_per_ring; i++)
				t->claimed += p->end->claimed_per_ring[i];
			for (size_t i = 0; i < p->end->n_reserved_per_page_ring; i++)
				t->log_reserved += p->end->reserved_per_page_ring[i];
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(r);
	for (int i = 0; i < (int)ORBIT_MAX_RINGS; i++)
		t->lost += lost[i];
	for (int i = 0; i < (int)ORBIT_MAX_PAGE_RINGS; i++)
		t->log_lost += plost[i];
	return 0;
}

/* The one capture file in dir (the collector writes one per connection). */
static int newest_capture(const char *dir, char *path, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	time_t best = 0;
	int found = -ENOENT;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (strstr(e->d_name, ".orbit.zst") == NULL)
			continue;
		char p[600];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (stat(p, &st) == 0 && st.st_mtime >= best) {
			best = st.st_mtime;
			snprintf(path, len, "%s", p);
			found = 0;
		}
	}
	if (d)
		closedir(d);
	return found;
}

static void clear_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char p[600];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
}

/* ---- the collector ---- */

#define MAX_COLLECTOR_ARGS 16

static pid_t start_collector(const char *exe, const char *dir, char *const *extra, int nextra,
                             int want_ui, char *addr, int *ui_port)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	const char *args[8 + MAX_COLLECTOR_ARGS] = {exe,     "--listen", "127.0.0.1:0",
	                                            "--dir", dir,        "--quiet"};
	int n = 6;
	for (int i = 0; i < nextra; i++)
		args[n++] = extra[i];
	args[n] = NULL;
	pid_t pid = fork();
	if (pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		execv(exe, (char *const *)args);
		_exit(127);
	}
	close(fds[1]);
	FILE *f = fdopen(fds[0], "r");
	char line[256];
	if (f == NULL || fgets(line, sizeof line, f) == NULL ||
	    sscanf(line, "listening on %255s", addr) != 1) {
		fprintf(stderr, "orbit-bench-pipeline: %s did not start\n", exe);
		kill(pid, SIGKILL);
		return -1;
	}
	*ui_port = 0;
	if (want_ui && (fgets(line, sizeof line, f) == NULL ||
	                sscanf(line, "live view: http://127.0.0.1:%d/", ui_port) != 1)) {
		fprintf(stderr,
		        "orbit-bench-pipeline: %s has no live view (--viewers needs --ui)\n", exe);
		kill(pid, SIGKILL);
		return -1;
	}
	return pid; /* f stays open: the collector's stdout */
}

/* ---- viewers of the live view ---- */

struct viewer {
	pthread_t thread;
	int port;
	unsigned stream;
	atomic_int *stop;
	uint64_t bytes;
	int fd;
};

/* Asks for the stream's blocks until the collector has the stream, then
 * reads everything it sends until stop. */
static void *viewer_main(void *arg)
{
	struct viewer *v = arg;
	char req[128], buf[1 << 16];
	snprintf(req, sizeof req, "GET /events?stream=%u HTTP/1.1\r\nHost: x\r\n\r\n", v->stream);
	while (!atomic_load(v->stop)) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = {.sin_family = AF_INET,
		                        .sin_port = htons((uint16_t)v->port)};
		a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
		    write(fd, req, strlen(req)) != (ssize_t)strlen(req)) {
			if (fd >= 0)
				close(fd);
			sleep_ns(20000000);
			continue;
		}
		ssize_t n = read(fd, buf, sizeof buf);
		if (n < 12 || memcmp(buf, "HTTP/1.1 200", 12) != 0) { /* not there yet */
			close(fd);
			sleep_ns(20000000);
			continue;
		}
		v->bytes += (uint64_t)n;
		v->fd = fd;
		while (!atomic_load(v->stop) && (n = read(fd, buf, sizeof buf)) > 0)
			v->bytes += (uint64_t)n;
		close(fd);
		break;
	}
	return NULL;
}

/* CPU time of every thread of pid, in ns: the sum of their schedstat run
 * times (ns resolution; /proc/PID/stat counts clock ticks of 10 ms, too
 * coarse for a 5 % comparison), else the ticks. */
static uint64_t process_cpu_ticks_ns(pid_t pid);
static uint64_t process_cpu_ns(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	uint64_t sum = 0;
	int any = 0;
	for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.')
			continue;
		char p[320];
		snprintf(p, sizeof p, "/proc/%d/task/%s/schedstat", (int)pid, e->d_name);
		FILE *f = fopen(p, "re");
		unsigned long long run = 0;
		if (f != NULL && fscanf(f, "%llu", &run) == 1) {
			sum += run;
			any = 1;
		}
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
	return any ? sum : process_cpu_ticks_ns(pid);
}

static uint64_t process_cpu_ticks_ns(pid_t pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (f == NULL)
		return 0;
	char *ok = fgets(buf, sizeof buf, f);
	fclose(f);
	unsigned long long ut = 0, st = 0;
	char *p = ok ? strrchr(buf, ')') : NULL;
	if (p == NULL ||
	    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
		return 0;
	return (ut + st) * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* ---- one run ---- */

struct result {
	int ok;
	int threads;
	struct report rep;
	struct tally t;
	uint64_t coll_cpu_ns;
	uint64_t viewer_bytes; /* read by the live view's viewers, together */
};

static struct {
	const char *exe;
	char dir[64];
	char addr[256];
	pid_t coll;
	char *args[MAX_COLLECTOR_ARGS];
	int nargs;
	int viewers, ui_port;
	unsigned streams; /* the collector's streams so far: the run's is the next */
	uint64_t viewer_bytes;
} B;

static void run_one(const struct producer *tmpl, int threads, struct result *res)
{
	memset(res, 0, sizeof *res);
	res->threads = threads;
	clear_dir(B.dir);
	int fds[2];
	if (pipe(fds) != 0)
		return;
	uint64_t coll0 = process_cpu_ns(B.coll);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], tmpl, threads);
	}
	close(fds[1]);
	B.streams++;
	atomic_int stop = 0;
	struct viewer views[64];
	int nviews = B.viewers < 64 ? B.viewers : 64;
	for (int i = 0; i < nviews; i++) {
		views[i] = (struct viewer){
		    .port = B.ui_port, .stream = B.streams, .stop = &stop, .fd = -1};
		pthread_create(&views[i].thread, NULL, viewer_main, &views[i]);
	}
	ssize_t got = read(fds[0], &res->rep, sizeof res->rep);
	close(fds[0]);
	int status;
	waitpid(pid, &status, 0);
	char path[700];
	/* The collector writes what it has received: wait for the end. */
	for (int i = 0; i < 100; i++) {
		usleep(50000);
		if (newest_capture(B.dir, path, sizeof path) == 0 &&
		    tally_capture(path, &res->t) == 0 && res->t.ended)
			break;
	}
	res->coll_cpu_ns = process_cpu_ns(B.coll) - coll0;
	atomic_store(&stop, 1);
	for (int i = 0; i < nviews; i++) {
		if (views[i].fd >= 0)
			shutdown(views[i].fd, SHUT_RDWR);
		pthread_join(views[i].thread, NULL);
		res->viewer_bytes += views[i].bytes;
	}
	if (got != sizeof res->rep || newest_capture(B.dir, path, sizeof path) != 0 ||
	    tally_capture(path, &res->t) != 0)
		return;
	const char *keep = getenv("ORBIT_BENCH_KEEP"); /* a directory */
	if (keep != NULL) {
		char cmd[1600];
		snprintf(cmd, sizeof cmd, "cp '%s' '%s/' 2>/dev/null", path, keep);
		if (system(cmd) != 0)
			fprintf(stderr, "could not keep %s in %s\n", path, keep);
	}
	res->ok = 1;
}

static const char *equation(const struct result *r)
{
	if (!r->t.ended)
		return "no end";
	/* An agent that writes thread-end records claims one more per producer
	 * thread than the producers count. */
	uint64_t c = r->t.claimed, e = r->rep.emitted;
	return c == r->t.delivered + r->t.lost && (c == e || c == e + (uint64_t)r->threads)
	           ? "exact"
	           : "BROKEN";
}

static void print_row(const char *label, const struct result *r)
{
	if (!r->ok) {
		printf("%12s  run failed\n", label);
		return;
	}
	uint64_t e = r->rep.emitted;
	printf("%12s %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %9.3f%% %8.2f %11.2f %15.2f %9s\n",
	       label, e, r->t.delivered, r->t.lost, e ? 100.0 * (double)r->t.lost / (double)e : 0.0,
	       r->t.delivered ? (double)r->t.bytes / (double)r->t.delivered : 0.0,
	       e ? (double)r->rep.agent_cpu_ns / (double)e : 0.0,
	       e ? (double)r->coll_cpu_ns / (double)e : 0.0, equation(r));
	if (B.viewers > 0)
		printf("%12s %d viewers read %.1f MB of live blocks\n", "", B.viewers,
		       (double)r->viewer_bytes / 1e6);
	fflush(stdout);
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

/* The median of every column over the runs (each column on its own). */
static void print_median(const char *label, const struct result *r, int n)
{
	double loss[MAX_RUNS], bpe[MAX_RUNS], ans[MAX_RUNS], cns[MAX_RUNS], em[MAX_RUNS],
	    de[MAX_RUNS], lo[MAX_RUNS];
	int k = 0, exact = 0;
	for (int i = 0; i < n; i++) {
		if (!r[i].ok)
			continue;
		double e = (double)r[i].rep.emitted;
		em[k] = e;
		de[k] = (double)r[i].t.delivered;
		lo[k] = (double)r[i].t.lost;
		loss[k] = e ? 100.0 * (double)r[i].t.lost / e : 0;
		bpe[k] = r[i].t.delivered ? (double)r[i].t.bytes / (double)r[i].t.delivered : 0;
		ans[k] = e ? (double)r[i].rep.agent_cpu_ns / e : 0;
		cns[k] = e ? (double)r[i].coll_cpu_ns / e : 0;
		exact += strcmp(equation(&r[i]), "exact") == 0;
		k++;
	}
	if (k == 0)
		return;
	char lab[32];
	snprintf(lab, sizeof lab, "median %s", label);
	char eq[32];
	snprintf(eq, sizeof eq, "%d/%d exact", exact, n);
	printf("%12s %12.0f %12.0f %12.0f %9.3f%% %8.2f %11.2f %15.2f %9s\n", lab, median(em, k),
	       median(de, k), median(lo, k), median(loss, k), median(bpe, k), median(ans, k),
	       median(cns, k), eq);
	fflush(stdout);
}

static void header(void)
{
	printf("%12s %12s %12s %12s %10s %8s %11s %15s %9s\n", "rate ev/s", "emitted", "delivered",
	       "lost", "loss %", "B/event", "agent ns/ev", "collector ns/ev", "equation");
}

int main(int argc, char **argv)
{
	B.exe = ORBIT_COLLECTOR_PATH;
	double seconds = 10;
	int threads = 1, runs = 1, spin = 0;
	const char *rates = "1000000,5000000,10000000,max", *burst = NULL, *rss = NULL;
	uint64_t hot = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--collector") == 0 && i + 1 < argc)
			B.exe = argv[++i];
		else if (strcmp(argv[i], "--collector-arg") == 0 && i + 1 < argc &&
		         B.nargs < MAX_COLLECTOR_ARGS)
			B.args[B.nargs++] = argv[++i];
		else if (strcmp(argv[i], "--viewers") == 0 && i + 1 < argc)
			B.viewers = atoi(argv[++i]);
		else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (strcmp(argv[i], "--rates") == 0 && i + 1 < argc)
			rates = argv[++i];
		else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
			runs = atoi(argv[++i]);
		else if (strcmp(argv[i], "--spin") == 0)
			spin = 1;
		else if (strcmp(argv[i], "--burst") == 0 && i + 1 < argc)
			burst = argv[++i];
		else if (strcmp(argv[i], "--hot") == 0 && i + 1 < argc)
			hot = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--rss") == 0 && i + 1 < argc)
			rss = argv[++i];
		else {
			printf(
			    "usage: %s [--collector PATH] [--collector-arg ARG]... [--viewers N] "
			    "[--runs K] [--seconds S] [--threads N] "
			    "[--spin] [--rates R1,R2,...|max] [--burst T,N] [--hot N] "
			    "[--rss T1,T2,...]\n",
			    argv[0]);
			return strcmp(argv[i], "--help") == 0 ? 0 : 1;
		}
	}
	if (threads < 1 || threads > MAX_THREADS || seconds <= 0 || runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr,
		        "orbit-bench-pipeline: --threads 1..64, --seconds > 0, --runs 1..15\n");
		return 1;
	}
	snprintf(B.dir, sizeof B.dir, "/tmp/orbit-bench-pipeline.XXXXXX");
	if (mkdtemp(B.dir) == NULL)
		return 1;
	B.coll = start_collector(B.exe, B.dir, B.args, B.nargs, B.viewers > 0, B.addr, &B.ui_port);
	if (B.coll < 0)
		return 1;
	setenv("ORBIT_COLLECTOR", B.addr, 1);
	const char *budget = getenv("ORBIT_RING_BUDGET"), *level = getenv("ORBIT_ZSTD_LEVEL");
	printf("orbit-bench-pipeline: collector %s, ORBIT_RING_BUDGET=%s ORBIT_ZSTD_LEVEL=%s\n",
	       B.addr, budget ? budget : "(default)", level ? level : "(default)");
	struct result res[MAX_RUNS];
	struct producer tmpl = {.seconds_ns = (uint64_t)(seconds * 1e9), .spin = spin};
	if (burst != NULL) {
		int t = 4;
		uint64_t n = 20000;
		sscanf(burst, "%d,%" SCNu64, &t, &n);
		tmpl.mode = BURST;
		tmpl.count = n;
		printf("burst: %d threads x %" PRIu64 " records, as fast as they can\n", t, n);
		header();
		for (int k = 0; k < runs; k++) {
			run_one(&tmpl, t, &res[k]);
			print_row("burst", &res[k]);
			printf("%12s log records: reserved %" PRIu64 " delivered %" PRIu64
			       " lost %" PRIu64 "\n",
			       "", res[k].t.log_reserved, res[k].t.log_records, res[k].t.log_lost);
		}
		if (runs > 1)
			print_median("burst", res, runs);
	} else if (hot > 0) {
		tmpl.mode = HOT;
		tmpl.count = hot;
		printf("hot loop: 1 thread, %" PRIu64 " ORBIT_SCOPEs flat out\n", hot);
		header();
		for (int k = 0; k < runs; k++) {
			run_one(&tmpl, 1, &res[k]);
			print_row("hot", &res[k]);
			const struct result *r = &res[k];
			printf("%12s delivered %.1f%%; agent CPU %.3f s; process peak RSS %" PRIu64
			       " KiB (segment %" PRIu64 ", anon %" PRIu64 " at the end)\n",
			       "",
			       r->rep.emitted
			           ? 100.0 * (double)r->t.delivered / (double)r->rep.emitted
			           : 0.0,
			       (double)r->rep.agent_cpu_ns / 1e9, r->rep.hwm_kb, r->rep.shmem_kb,
			       r->rep.anon_kb);
		}
		if (runs > 1)
			print_median("hot", res, runs);
	} else if (rss != NULL) {
		tmpl.mode = RSS;
		tmpl.seconds_ns = 2000000000ull;
		printf("%8s %12s %12s %12s %12s\n", "threads", "VmRSS KiB", "VmHWM KiB",
		       "segment KiB", "anon KiB");
		char *list = strdup(rss);
		for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
			int t = atoi(tok);
			if (t < 1 || t > MAX_THREADS)
				continue;
			tmpl.rate = 1e6 * t;
			tmpl.mode = RATES; /* per-thread rate: rate / threads */
			run_one(&tmpl, t, &res[0]);
			printf("%8d %12" PRIu64 " %12" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", t,
			       res[0].rep.rss_kb, res[0].rep.hwm_kb, res[0].rep.shmem_kb,
			       res[0].rep.anon_kb);
			fflush(stdout);
		}
		free(list);
	} else {
		printf("%d producer thread(s), %.1f s per rate, %s pacing\n", threads, seconds,
		       spin ? "busy-wait" : "sleep");
		header();
		char *list = strdup(rates);
		for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
			tmpl.mode = RATES;
			tmpl.rate = strcmp(tok, "max") == 0 ? 0 : atof(tok);
			for (int k = 0; k < runs; k++) {
				run_one(&tmpl, threads, &res[k]);
				print_row(tok, &res[k]);
				/* A producer that was not scheduled for a while catches
				 * up at full speed: a burst the rate does not show. */
				if (res[k].ok && res[k].rep.behind_ns >= 1000000 && tmpl.rate > 0)
					printf("%12s producer up to %.1f ms behind its pace (then "
					       "caught up "
					       "flat out)\n",
					       "", (double)res[k].rep.behind_ns / 1e6);
			}
			if (runs > 1)
				print_median(tok, res, runs);
		}
		free(list);
	}
	kill(B.coll, SIGTERM);
	waitpid(B.coll, NULL, 0);
	clear_dir(B.dir);
	rmdir(B.dir);
	return 0;
}
