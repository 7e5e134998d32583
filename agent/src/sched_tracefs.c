/*
 * sched_tracefs.c — the tracefs instance behind kernel scheduling events;
 * sched_tracefs.h states what it does and the guarantees it keeps (numbered
 * there).
 *
 * Setting up, in this order, every write inside our own instance:
 *
 *   mkdir instances/orbit-<pid>-<start>-<n>   the kernel allocates buffers
 *   tracing_on 0                             nothing recorded while we set up
 *   trace_clock mono                         CLOCK_MONOTONIC ns
 *   buffer_size_kb N                         per CPU
 *   options/overwrite 1                      a full buffer drops its oldest
 *                                            page and flags the next one read
 *   options/event-fork 1                     before the pids, so a thread
 *                                            created meanwhile by a listed
 *                                            one is listed by the kernel
 *   set_event_pid                            every /proc/self/task entry,
 *                                            until a pass finds no new one
 *   events/<system>/<name>/enable 1          the events of ORBIT__SCHED_EVENTS
 *   events/sched/sched_process_exec/         filter "pid == 0" (never
 *     filter, trigger, enable                recorded), trigger "traceoff if
 *                                            pid == <pid>": off at our exec
 *   per_cpu/cpuN/trace_pipe_raw              opened O_NONBLOCK, kept open
 *   tracing_on 1
 *
 * With overwrite on, every gap shows on the first page read after it: the
 * kernel sets the commit word's lost-events bit and, when the page has room,
 * stores the count after the records (docs/format.md 5.1). Readers can thus
 * tell where each CPU's events stop being complete.
 *
 * trace_pipe_raw hands out one sub-buffer per read(): a full one when the
 * writer has moved on, otherwise a copy of the events so far (the page is
 * then partly filled; its length is still the sub-buffer size). Either way
 * the bytes are a page in the kernel's ring-buffer layout.
 */
#include "sched_tracefs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "ftrace_page.h"
#include "segment.h" /* orbit__process_start_time */
#include "tracefs_leftovers.h"
#include "wire_limits.h" /* ORBIT_KERNEL_MAX_CPUS: per_cpu/cpuN beyond are ignored */

#define MAX_TEXT (64u << 10) /* longest format file we keep */
#define MAX_TIDS (1u << 20)  /* threads written to set_event_pid */
#define TID_ROUNDS 16        /* /proc/self/task passes until stable */
#define PID_CHUNK 1024u      /* bytes of pids per write() */
#define NAME_TRIES 64

struct event_desc {
	const char *system, *name;
	int required;
};

static const struct event_desc EVENTS[] = {
#define ORBIT__SCHED_EVENT_DESC(sys, nm, req) {sys, nm, req},
    ORBIT__SCHED_EVENTS(ORBIT__SCHED_EVENT_DESC)
#undef ORBIT__SCHED_EVENT_DESC
};
#define EVENT_COUNT (sizeof EVENTS / sizeof EVENTS[0])

struct orbit__sched {
	pid_t owner;    /* the process that created the instance */
	char path[512]; /* <tracefs>/instances/<name> */
	int dirfd;      /* the instance directory */
	uint32_t cpu_count;
	int *cpu_fd; /* cpu_count entries; -1 where the CPU has no buffer */
	struct orbit__sched_cpu *cpu;
	uint32_t next_cpu; /* where the next read starts (round robin) */
	uint64_t read_ns;  /* when the last orbit__sched_read began */
	int read_whole;    /* ... and whether it read every CPU until it was empty */
	uint64_t reads;    /* orbit__sched_read calls */
	uint8_t *page;     /* page_size bytes */
	char name[96];
	char *texts[EVENT_COUNT + 2]; /* event formats, header_page, header_event */
	struct orbit__sched_format events[EVENT_COUNT];
	uint32_t *tids;
	uint32_t tid_count, tid_cap;
	struct orbit__sched_formats formats;
	struct orbit__sched_live *live; /* the opener's, or own */
	struct orbit__sched_live own;   /* for an opener without a list */
};

/* Under live->lock. */
static void live_add(struct orbit__sched_live *live, const char *path)
{
	for (int i = 0; i < ORBIT__SCHED_LIVE_MAX; i++)
		if (live->path[i][0] == '\0') {
			snprintf(live->path[i], sizeof live->path[i], "%s", path);
			return;
		}
}

/* Under live->lock. */
static void live_remove(struct orbit__sched_live *live, const char *path)
{
	for (int i = 0; i < ORBIT__SCHED_LIVE_MAX; i++)
		if (strcmp(live->path[i], path) == 0)
			live->path[i][0] = '\0';
}

static void say(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || n == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

const char *orbit__sched_tracefs(void)
{
	return orbit__tracefs_path();
}

/* Writes val to dirfd/rel in one write(). Returns 0 or -errno. */
static int put(int dirfd, const char *rel, const char *val, int trunc)
{
	int fd = openat(dirfd, rel, O_WRONLY | O_CLOEXEC | (trunc ? O_TRUNC : 0));
	size_t len = strlen(val);
	ssize_t n;
	int err = 0;

	if (fd < 0)
		return -errno;
	do
		n = write(fd, val, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

/* Reads dirfd/rel whole (at most MAX_TEXT bytes) into a new NUL-terminated
 * string. Returns 0 or -errno (-EFBIG when longer). */
static int slurp(int dirfd, const char *rel, char **out, size_t *out_len)
{
	int fd = openat(dirfd, rel, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *buf;
	int err = 0;

	*out = NULL;
	*out_len = 0;
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	while (buf != NULL) {
		ssize_t n;

		if (len == cap) {
			char *bigger;

			if (cap >= MAX_TEXT) {
				err = -EFBIG;
				break;
			}
			cap *= 2;
			bigger = realloc(buf, cap + 1);
			if (bigger == NULL) {
				err = -ENOMEM;
				break;
			}
			buf = bigger;
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			err = -errno;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf == NULL)
		return -ENOMEM;
	if (err < 0) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*out = buf;
	*out_len = len;
	return 0;
}

/* The thread ids of /proc/self/task are the kernel's only if this process
 * lives in the pid namespace tracefs records (NSpid has one entry). */
static int same_pid_namespace(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];
	int same = 1;

	if (f == NULL)
		return 1;
	while (fgets(line, sizeof line, f) != NULL) {
		if (strncmp(line, "NSpid:", 6) == 0) {
			unsigned fields = 0;
			char *save = NULL;

			for (char *t = strtok_r(line + 6, " \t\n", &save); t != NULL;
			     t = strtok_r(NULL, " \t\n", &save))
				fields++;
			same = fields <= 1;
			break;
		}
	}
	fclose(f);
	return same;
}

static int have_tid(const struct orbit__sched *s, uint32_t tid)
{
	for (uint32_t i = 0; i < s->tid_count; i++)
		if (s->tids[i] == tid)
			return 1;
	return 0;
}

/* Writes the pids of s->tids[from..] to set_event_pid, in writes of whole
 * pids (each write adds to the kernel's list). */
static int write_pids(struct orbit__sched *s, uint32_t from)
{
	char buf[PID_CHUNK + 16];
	size_t len = 0;
	int err;

	for (uint32_t i = from; i < s->tid_count; i++) {
		len += (size_t)snprintf(buf + len, sizeof buf - len, "%u ", s->tids[i]);
		if (len >= PID_CHUNK || i + 1 == s->tid_count) {
			buf[len] = '\0';
			err = put(s->dirfd, "set_event_pid", buf, 0);
			if (err < 0)
				return err;
			len = 0;
		}
	}
	return 0;
}

/* Lists every thread of the process in set_event_pid; passes over
 * /proc/self/task until one finds no new thread (event-fork is already on,
 * so threads that listed threads create from then on are the kernel's job). */
static int filter_threads(struct orbit__sched *s)
{
	int err = put(s->dirfd, "set_event_pid", "", 1); /* O_TRUNC clears it */

	if (err < 0)
		return err;
	for (int round = 0; round < TID_ROUNDS; round++) {
		uint32_t before = s->tid_count;
		DIR *d = opendir("/proc/self/task");
		struct dirent *e;

		if (d == NULL)
			return -errno;
		while ((e = readdir(d)) != NULL) {
			char *end;
			unsigned long tid = strtoul(e->d_name, &end, 10);

			if (e->d_name[0] < '0' || e->d_name[0] > '9' || *end != '\0' || tid == 0 ||
			    tid > UINT32_MAX || have_tid(s, (uint32_t)tid))
				continue;
			if (s->tid_count == s->tid_cap) {
				uint32_t cap = s->tid_cap ? s->tid_cap * 2 : 64;
				uint32_t *bigger;

				if (cap > MAX_TIDS) {
					closedir(d);
					return -E2BIG;
				}
				bigger = realloc(s->tids, cap * sizeof *bigger);
				if (bigger == NULL) {
					closedir(d);
					return -ENOMEM;
				}
				s->tids = bigger;
				s->tid_cap = cap;
			}
			s->tids[s->tid_count++] = (uint32_t)tid;
		}
		closedir(d);
		if (s->tid_count == before)
			return 0;
		err = write_pids(s, before);
		if (err < 0)
			return err;
	}
	return 0;
}

int orbit__sched_remove_stale(struct orbit__sched_live *live, const char *tracefs)
{
	int r;

	if (tracefs == NULL)
		tracefs = orbit__sched_tracefs();
	if (tracefs == NULL)
		return -ENOENT;
	if (live != NULL)
		pthread_mutex_lock(&live->lock);
	r = orbit__tracefs_remove_dead(tracefs, 0);
	if (live != NULL)
		pthread_mutex_unlock(&live->lock);
	return r;
}

/* Sub-buffer size of the instance: buffer_subbuf_size_kb (Linux 6.8+), else
 * the system page. */
static uint32_t subbuf_size(int dirfd)
{
	char *text;
	size_t len;
	uint32_t size = (uint32_t)sysconf(_SC_PAGESIZE);

	if (slurp(dirfd, "buffer_subbuf_size_kb", &text, &len) == 0) {
		unsigned long kb = strtoul(text, NULL, 10);

		if (kb >= 1 && kb <= 1024)
			size = (uint32_t)kb * 1024u;
		free(text);
	}
	return size;
}

/* Finds per_cpu/cpuN and opens each trace_pipe_raw. */
static int open_cpus(struct orbit__sched *s, char *why, size_t why_len)
{
	int pfd = openat(s->dirfd, "per_cpu", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	uint32_t count = 0;
	char rel[64];

	if (pfd < 0) {
		int err = -errno;

		say(why, why_len, "cannot open %s/per_cpu: %s", s->path, strerror(-err));
		return err;
	}
	d = fdopendir(pfd);
	if (d == NULL) {
		close(pfd);
		return -ENOMEM;
	}
	while ((e = readdir(d)) != NULL) {
		char *end;
		unsigned long n;

		if (strncmp(e->d_name, "cpu", 3) != 0)
			continue;
		n = strtoul(e->d_name + 3, &end, 10);
		if (end != e->d_name + 3 && *end == '\0' && n < ORBIT_KERNEL_MAX_CPUS &&
		    n + 1 > count)
			count = (uint32_t)n + 1;
	}
	closedir(d);
	if (count == 0) {
		say(why, why_len, "%s/per_cpu lists no CPU", s->path);
		return -ENODEV;
	}
	s->cpu_fd = malloc(count * sizeof *s->cpu_fd);
	s->cpu = calloc(count, sizeof *s->cpu);
	if (s->cpu_fd == NULL || s->cpu == NULL)
		return -ENOMEM;
	s->cpu_count = count;
	for (uint32_t i = 0; i < count; i++)
		s->cpu_fd[i] = -1;
	for (uint32_t i = 0; i < count; i++) {
		snprintf(rel, sizeof rel, "per_cpu/cpu%u/trace_pipe_raw", i);
		s->cpu_fd[i] = openat(s->dirfd, rel, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
		if (s->cpu_fd[i] >= 0 || errno == ENOENT || errno == ENODEV)
			continue; /* a gap in the numbering, or a CPU without buffer */
		int err = -errno;
		say(why, why_len, "cannot open %s/%s: %s (one descriptor per CPU: %u)", s->path,
		    rel, strerror(-err), count);
		return err;
	}
	return 0;
}

static int read_formats(struct orbit__sched *s, char *why, size_t why_len)
{
	char rel[128];
	uint32_t n = 0;
	int err;

	for (size_t i = 0; i < EVENT_COUNT; i++) {
		char *text;
		size_t len;

		snprintf(rel, sizeof rel, "events/%s/%s/format", EVENTS[i].system, EVENTS[i].name);
		err = slurp(s->dirfd, rel, &text, &len);
		if (err < 0) {
			if (!EVENTS[i].required && err == -ENOENT)
				continue;
			say(why, why_len, "cannot read %s/%s: %s", s->path, rel, strerror(-err));
			return err == -ENOENT ? -EOPNOTSUPP : err;
		}
		s->texts[n] = text;
		s->events[n] =
		    (struct orbit__sched_format){EVENTS[i].system, EVENTS[i].name, text, len};
		n++;
	}
	s->formats.events = s->events;
	s->formats.event_count = n;
	err = slurp(s->dirfd, "events/header_page", &s->texts[EVENT_COUNT],
	            &s->formats.header_page_len);
	if (err == 0)
		err = slurp(s->dirfd, "events/header_event", &s->texts[EVENT_COUNT + 1],
		            &s->formats.header_event_len);
	if (err < 0) {
		say(why, why_len, "cannot read %s/events/header_page or header_event: %s", s->path,
		    strerror(-err));
		return err;
	}
	s->formats.header_page = s->texts[EVENT_COUNT];
	s->formats.header_event = s->texts[EVENT_COUNT + 1];
	return 0;
}

static int enable_events(struct orbit__sched *s, char *why, size_t why_len)
{
	char rel[128];

	for (uint32_t i = 0; i < s->formats.event_count; i++) {
		int err;

		snprintf(rel, sizeof rel, "events/%s/%s/enable", s->events[i].system,
		         s->events[i].name);
		err = put(s->dirfd, rel, "1", 1);
		if (err < 0) {
			say(why, why_len, "cannot write %s/%s: %s", s->path, rel, strerror(-err));
			return err;
		}
	}
	return 0;
}

/* Guarantee 8: an exec of this process turns the instance off. The kernel
 * runs an event's triggers on the record before its filter discards it, so
 * the event is enabled with a filter no record passes. Best effort: an old
 * kernel without the event or triggers keeps recording until the next
 * start removes the instance. */
static void off_at_exec(struct orbit__sched *s)
{
	char trigger[64];
	snprintf(trigger, sizeof trigger, "traceoff if pid == %d", (int)s->owner);
	if (put(s->dirfd, "events/sched/sched_process_exec/filter", "pid == 0", 1) == 0 &&
	    put(s->dirfd, "events/sched/sched_process_exec/trigger", trigger, 1) == 0)
		put(s->dirfd, "events/sched/sched_process_exec/enable", "1", 1);
}

/* Undoes open, whatever part of it was done, but for the handle's memory.
 * Called with s->live->lock held. */
static void teardown_locked(struct orbit__sched *s)
{
	int mine = s->owner == getpid();

	if (s->dirfd >= 0 && mine) {
		put(s->dirfd, "tracing_on", "0", 1);
		put(s->dirfd, "events/enable", "0", 1);
	}
	for (uint32_t i = 0; s->cpu_fd != NULL && i < s->cpu_count; i++)
		if (s->cpu_fd[i] >= 0)
			close(s->cpu_fd[i]);
	if (s->dirfd >= 0)
		close(s->dirfd);
	/* Every descriptor of ours is closed, so nothing of ours holds the
	 * instance: the kernel removes it (EBUSY only if someone else holds
	 * one of its files; then the next start removes it). */
	if (s->path[0] != '\0' && mine) {
		rmdir(s->path);
		live_remove(s->live, s->path);
	}
	for (size_t i = 0; i < EVENT_COUNT + 2; i++)
		free(s->texts[i]);
	free(s->cpu_fd);
	free(s->cpu);
	free(s->page);
	free(s->tids);
}

/* Tears s down under its list's lock, then frees it (its own list with
 * it, when it has one). */
static void teardown(struct orbit__sched *s)
{
	struct orbit__sched_live *live = s->live;
	pthread_mutex_lock(&live->lock);
	teardown_locked(s);
	pthread_mutex_unlock(&live->lock);
	if (live == &s->own)
		pthread_mutex_destroy(&s->own.lock);
	free(s);
}

/* Makes the instance directory under a name nobody uses. */
static int make_instance(struct orbit__sched *s, const char *tracefs, char *why, size_t why_len)
{
	pid_t pid = getpid();
	unsigned long long start = (unsigned long long)orbit__process_start_time(pid);

	for (int i = 0; i < NAME_TRIES; i++) {
		snprintf(s->name, sizeof s->name, "orbit-%d-%llu-%u", (int)pid, start,
		         s->live->serial++);
		snprintf(s->path, sizeof s->path, "%s/instances/%s", tracefs, s->name);
		if (mkdir(s->path, 0700) == 0) {
			live_add(s->live, s->path);
			return 0;
		}
		if (errno != EEXIST) {
			int err = -errno;

			say(why, why_len, "cannot create %s: %s%s", s->path, strerror(-err),
			    err == -EACCES || err == -EPERM ? " (needs root or access to tracefs)"
			                                    : "");
			s->path[0] = '\0';
			return err;
		}
	}
	say(why, why_len, "cannot find a free instance name under %s/instances", tracefs);
	s->path[0] = '\0';
	return -EEXIST;
}

static int setup(struct orbit__sched *s, uint32_t kb, char *why, size_t why_len)
{
	char num[32];
	int err;

	s->dirfd = open(s->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s->dirfd < 0) {
		err = -errno;
		say(why, why_len, "cannot open %s: %s", s->path, strerror(-err));
		return err;
	}
	snprintf(num, sizeof num, "%u", kb);
	const struct {
		const char *rel, *val;
	} steps[] = {
	    {"tracing_on", "0"},        {"trace_clock", "mono"},     {"buffer_size_kb", num},
	    {"options/overwrite", "1"}, {"options/event-fork", "1"},
	};
	for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
		err = put(s->dirfd, steps[i].rel, steps[i].val, 1);
		if (err < 0) {
			say(why, why_len, "cannot write %s to %s/%s: %s", steps[i].val, s->path,
			    steps[i].rel, strerror(-err));
			return err;
		}
	}
	err = filter_threads(s);
	if (err < 0) {
		say(why, why_len, "cannot list the process's threads in %s/set_event_pid: %s",
		    s->path, strerror(-err));
		return err;
	}
	err = read_formats(s, why, why_len);
	if (err == 0)
		err = enable_events(s, why, why_len);
	if (err == 0)
		off_at_exec(s);
	if (err == 0)
		err = open_cpus(s, why, why_len);
	if (err < 0)
		return err;
	s->formats.page_size = subbuf_size(s->dirfd);
	s->page = malloc(s->formats.page_size);
	if (s->page == NULL)
		return -ENOMEM;
	err = put(s->dirfd, "tracing_on", "1", 1);
	if (err < 0) {
		say(why, why_len, "cannot write 1 to %s/tracing_on: %s", s->path, strerror(-err));
		return err;
	}
	struct timespec ts; /* recording since at latest now */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->formats.since_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	s->formats.cpu_count = s->cpu_count;
	s->formats.buffer_kb = kb;
	s->formats.clock = "mono";
	s->formats.instance = s->name;
	s->formats.tids = s->tids;
	s->formats.tid_count = s->tid_count;
	return 0;
}

int orbit__sched_open(const struct orbit__sched_params *p, struct orbit__sched **out, char *why,
                      size_t why_len)
{
	const char *tracefs = p != NULL ? p->tracefs : NULL;
	uint32_t kb = p != NULL && p->buffer_kb ? p->buffer_kb : ORBIT__SCHED_DEFAULT_BUFFER_KB;
	struct orbit__sched *s;
	int err;

	*out = NULL;
	say(why, why_len, "%s", "");
	if (kb < ORBIT__SCHED_MIN_BUFFER_KB || kb > ORBIT__SCHED_MAX_BUFFER_KB) {
		say(why, why_len, "a per-CPU buffer of %u KiB is outside %u..%u", kb,
		    ORBIT__SCHED_MIN_BUFFER_KB, ORBIT__SCHED_MAX_BUFFER_KB);
		return -EINVAL;
	}
	if (tracefs == NULL)
		tracefs = orbit__sched_tracefs();
	if (tracefs == NULL || !orbit__tracefs_is(tracefs)) {
		say(why, why_len, "no tracefs mounted at %s",
		    p != NULL && p->tracefs != NULL
		        ? p->tracefs
		        : "/sys/kernel/tracing or /sys/kernel/debug/tracing");
		return -ENOENT;
	}
	if (!same_pid_namespace()) {
		say(why, why_len,
		    "this process is in a pid namespace of its own, whose thread ids "
		    "the kernel's events do not use");
		return -EOPNOTSUPP;
	}
	s = calloc(1, sizeof *s);
	if (s == NULL) {
		say(why, why_len, "out of memory");
		return -ENOMEM;
	}
	s->owner = getpid();
	s->dirfd = -1;
	s->live = p != NULL && p->live != NULL ? p->live : &s->own;
	if (s->live == &s->own)
		pthread_mutex_init(&s->own.lock, NULL);
	pthread_mutex_lock(&s->live->lock);
	orbit__tracefs_remove_dead(tracefs, 0);
	err = make_instance(s, tracefs, why, why_len);
	if (err == 0)
		err = setup(s, kb, why, why_len);
	pthread_mutex_unlock(&s->live->lock);
	if (err < 0) {
		if (err == -ENOMEM && why != NULL && why[0] == '\0')
			say(why, why_len, "out of memory");
		teardown(s);
		return err;
	}
	*out = s;
	return 0;
}

static void account(struct orbit__sched_cpu *c, const uint8_t *page, size_t len)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;

	c->pages++;
	c->bytes += len;
	if (orbit__ftrace_open(&it, page, len, &h) < 0) {
		c->bad_pages++;
		return;
	}
	c->data_bytes += h.size;
	if (h.missed) {
		c->flagged_pages++;
		if (h.missed_stored)
			c->stored_lost += h.missed_count;
	}
}

int orbit__sched_read(struct orbit__sched *s, uint32_t max_pages, orbit__sched_page_fn fn,
                      void *ctx)
{
	uint32_t pages = 0;
	int whole = 1;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	s->read_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	s->read_whole = 0;
	s->reads++;
	for (uint32_t k = 0; k < s->cpu_count; k++) {
		uint32_t cpu = (s->next_cpu + k) % s->cpu_count;
		int fd = s->cpu_fd[cpu];

		while (fd >= 0 && (max_pages == 0 || pages < max_pages)) {
			ssize_t n = read(fd, s->page, s->formats.page_size);
			int r;

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break; /* guarantee 2: empty, next CPU */
			if (n < 0) {
				/* One CPU's trouble (it went offline, say) is not
				 * the others': counted, and its turn ends. */
				s->cpu[cpu].read_errors++;
				s->cpu[cpu].last_error = -errno;
				whole = 0;
				break;
			}
			if (n == 0)
				break;
			account(&s->cpu[cpu], s->page, (size_t)n);
			pages++;
			r = fn(ctx, cpu, s->page, (size_t)n);
			if (r < 0)
				return r;
		}
		if (max_pages != 0 && pages >= max_pages) {
			/* Start the next call on the CPU that was cut short. */
			s->next_cpu = cpu;
			return (int)pages;
		}
	}
	s->next_cpu = (s->next_cpu + 1) % s->cpu_count;
	s->read_whole = whole;
	return (int)pages;
}

void orbit__sched_last_read(const struct orbit__sched *s, uint64_t *began_ns, int *whole,
                            uint64_t *reads)
{
	*began_ns = s->read_ns;
	*whole = s->read_whole;
	*reads = s->reads;
}

int orbit__sched_stop(struct orbit__sched *s)
{
	return put(s->dirfd, "tracing_on", "0", 1);
}

const struct orbit__sched_formats *orbit__sched_formats(const struct orbit__sched *s)
{
	return &s->formats;
}

static uint64_t stat_value(const char *text, const char *key)
{
	size_t klen = strlen(key);

	for (const char *line = text; line != NULL && *line != '\0';) {
		if (strncmp(line, key, klen) == 0 && line[klen] == ':')
			return strtoull(line + klen + 1, NULL, 10);
		line = strchr(line, '\n');
		if (line != NULL)
			line++;
	}
	return 0;
}

int orbit__sched_stats(struct orbit__sched *s, uint32_t cpu, struct orbit__sched_cpu *out)
{
	char rel[64], *text;
	size_t len;
	int err;

	if (cpu >= s->cpu_count)
		return -EINVAL;
	*out = s->cpu[cpu];
	snprintf(rel, sizeof rel, "per_cpu/cpu%u/stats", cpu);
	err = slurp(s->dirfd, rel, &text, &len);
	if (err < 0)
		return err;
	out->entries = stat_value(text, "entries");
	out->overrun = stat_value(text, "overrun");
	out->commit_overrun = stat_value(text, "commit overrun");
	out->dropped = stat_value(text, "dropped events");
	out->read_events = stat_value(text, "read events");
	free(text);
	return 0;
}

int orbit__sched_pages(const struct orbit__sched *s, uint32_t cpu, struct orbit__sched_cpu *out)
{
	if (cpu >= s->cpu_count)
		return -EINVAL;
	*out = s->cpu[cpu];
	out->entries = out->overrun = out->commit_overrun = out->dropped = out->read_events = 0;
	return 0;
}

/* Whether link names a file of one of live's instances. */
static int on_live(const struct orbit__sched_live *live, const char *link)
{
	for (int i = 0; i < ORBIT__SCHED_LIVE_MAX; i++) {
		size_t n = strlen(live->path[i]);
		if (n > 0 && strncmp(link, live->path[i], n) == 0 &&
		    (link[n] == '/' || link[n] == '\0'))
			return 1;
	}
	return 0;
}

void orbit__sched_forget(struct orbit__sched_live *live, struct orbit__sched *s)
{
	/* The child is single-threaded here: no lock is needed, and the one
	 * copied from the parent may be held by a thread that no longer
	 * exists. The descriptors are found by where they point, not by the
	 * handle: the fork may have come in the middle of an open (the
	 * handle not yet the caller's) or of a write (a file open for a
	 * moment). */
	pthread_mutex_init(&live->lock, NULL);
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char path[300], link[600];
		int fd = atoi(e->d_name);
		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		snprintf(path, sizeof path, "/proc/self/fd/%s", e->d_name);
		ssize_t n = readlink(path, link, sizeof link - 1);
		if (n <= 0)
			continue;
		link[n] = '\0';
		if (on_live(live, link))
			close(fd);
	}
	if (d != NULL)
		closedir(d);
	memset(live->path, 0, sizeof live->path);
	if (s != NULL) { /* its descriptors are closed above: only the memory */
		s->dirfd = -1;
		for (uint32_t i = 0; s->cpu_fd != NULL && i < s->cpu_count; i++)
			s->cpu_fd[i] = -1;
		s->owner = 0; /* not ours: teardown removes nothing */
		s->live = live;
		teardown(s);
	}
}

void orbit__sched_close(struct orbit__sched *s)
{
	if (s != NULL)
		teardown(s);
}
