/*
 * segment_state.c — what a dump needs besides the rings, written into the
 * segment's state area by the agent thread (format/segment.h, struct
 * orbit__seg_state; docs/format.md 1.7): the clock conversion's points
 * after every calibration, so that ticks never converted in the process
 * can be, and the threads' names once a second, which /proc no longer has
 * once the process is gone.
 *
 * Each part is two blocks; a write goes to the older one: gen_begin, a
 * release fence (nothing below is visible before it), the contents, then
 * gen_end with a release store (the contents are visible before it). A
 * reader copies in address order and takes the complete block (gen_begin
 * == gen_end) with the larger generation, so a process that dies inside a
 * write leaves the other block whole. The agent thread is the only writer.
 */
#include "segment_state.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

_Static_assert(sizeof(struct orbit__clock_pair) == sizeof(struct orbit__seg_point),
               "a calibration pair is a segment point");

#define NAMES_EVERY_NS 1000000000ull

static void begin(_Atomic uint64_t *gen_begin, uint64_t g)
{
	atomic_store_explicit(gen_begin, g, memory_order_relaxed);
	/* Release fence: pairs with the reader's copy of gen_begin before
	 * the contents it copies next. GCC says ThreadSanitizer ignores fences
	 * (-Wtsan); the readers are other processes (orbit-dump), which it
	 * cannot see either, so no check it makes rests on this one. */
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wtsan"
#endif
	atomic_thread_fence(memory_order_release);
#if defined(__SANITIZE_THREAD__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

static void end(_Atomic uint64_t *gen_end, uint64_t g)
{
	/* Release: the contents are complete before gen_end says g. */
	atomic_store_explicit(gen_end, g, memory_order_release);
}

void orbit__segment_state_init(struct orbit__state_writer *w, struct orbit__seg_state *st)
{
	*w = (struct orbit__state_writer){.st = st};
}

void orbit__segment_state_clock(struct orbit__state_writer *w, const struct orbit__clock_conv *c)
{
	uint64_t g = ++w->clock_gen;
	struct orbit__seg_clock *b = &w->st->clock[g % 2];
	begin(&b->gen_begin, g);
	b->source = c->source;
	b->resets = orbit__clock_resets(c);
	b->amb_lo = c->amb_lo;
	b->amb_hi = c->amb_hi;
	b->count =
	    orbit__clock_points(c, (struct orbit__clock_pair *)b->point, ORBIT__SEG_CLOCK_POINTS);
	end(&b->gen_end, g);
}

static void read_comm(const char *tid, char name[16])
{
	char path[300];
	memset(name, 0, 16);
	snprintf(path, sizeof path, "/proc/self/task/%s/comm", tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	ssize_t n = read(fd, name, 15);
	close(fd);
	if (n > 0 && name[n - 1] == '\n')
		name[n - 1] = '\0';
}

void orbit__segment_state_names(struct orbit__state_writer *w, uint64_t now_ns)
{
	if (w->names_at != 0 && now_ns - w->names_at < NAMES_EVERY_NS)
		return;
	w->names_at = now_ns;
	DIR *d = opendir("/proc/self/task");
	if (d == NULL)
		return;
	uint64_t g = ++w->names_gen;
	struct orbit__seg_names *b = &w->st->names[g % 2];
	begin(&b->gen_begin, g);
	uint32_t n = 0;
	struct dirent *e;
	while (n < ORBIT__SEG_NAMES && (e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		b->entry[n].tid = (uint32_t)strtoul(e->d_name, NULL, 10);
		read_comm(e->d_name, b->entry[n].name);
		n++;
	}
	closedir(d);
	b->count = n;
	b->taken_ns = now_ns;
	end(&b->gen_end, g);
}
