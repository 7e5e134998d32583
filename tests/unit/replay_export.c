/*
 * replay_export.c — the exporter interface (replay/export/replay_export.h), seen
 * from an exporter: a recording exporter is the only one offered to a run
 * of the replay core on real and synthetic captures, and the calls it gets
 * are checked: their order (begin, a stream before its events, stream_end
 * after them, end, free), scopes as they end (children first), slices that
 * nest in viewer order, the flags, colours and group ids, loss marks where
 * the claims are missing, log lines with their threads, and the filters.
 *
 *   replay_export CASE SYNTH_DIR (replay_synth's captures)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_export.h"

#define MAX_CALLS 16384

static const char *synth; /* replay_synth's captures */

enum call_kind { BEGIN, STREAM, STREAM_END, SCOPE, SLICE, ASYNC, VALUE, LINE, LOSS, END, FREE };

struct call {
	enum call_kind kind;
	uint32_t pid, tid, depth, flags, color, ring;
	uint64_t group, start, end, id, count;
	int slice_end;
	char name[64];
	char thread[32];
};

static struct call calls[MAX_CALLS];
static size_t ncalls;

static struct call *add(enum call_kind kind)
{
	CHECK(ncalls < MAX_CALLS);
	struct call *c = &calls[ncalls++];
	memset(c, 0, sizeof *c);
	c->kind = kind;
	return c;
}

static void copy_name(char *dst, size_t cap, const char *s, size_t n)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static void span_call(enum call_kind kind, const struct orbit_rp_span *s, int end)
{
	struct call *c = add(kind);
	c->pid = s->pid;
	c->tid = s->tid;
	c->depth = s->depth;
	c->flags = s->flags;
	c->color = s->color;
	c->group = s->group;
	c->start = s->start;
	c->end = s->end;
	c->id = s->id;
	c->slice_end = end;
	copy_name(c->name, sizeof c->name, s->name, s->name_len);
	CHECK(s->stream != NULL && s->stream->pid == s->pid);
	CHECK(s->loc == NULL && s->sched == NULL);
}

static int rec_begin(struct orbit_rp_export *x)
{
	CHECK(x->view != NULL && x->out != NULL && x->state != NULL);
	add(BEGIN);
	return 0;
}

static void rec_stream(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	(void)x;
	add(STREAM)->pid = s->pid;
}

static void rec_stream_end(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	(void)x;
	add(STREAM_END)->pid = s->pid;
}

static void rec_scope(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	(void)x;
	CHECK(!(s->flags & ORBIT_RP_ASYNC));
	span_call(SCOPE, s, 0);
}

static void rec_async(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	(void)x;
	CHECK(s->flags & ORBIT_RP_ASYNC);
	span_call(ASYNC, s, 0);
}

static void rec_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	(void)x;
	struct call *c = add(VALUE);
	c->pid = v->pid;
	c->tid = v->tid;
	c->flags = v->flags;
	c->color = v->color;
	c->start = v->time;
	copy_name(c->name, sizeof c->name, v->name, v->name_len);
}

static void rec_line(struct orbit_rp_export *x, const struct orbit_rp_line *l)
{
	(void)x;
	struct call *c = add(LINE);
	c->pid = l->pid;
	c->tid = l->tid;
	c->flags = l->flags;
	c->start = l->time;
	copy_name(c->name, sizeof c->name, l->text, l->len);
	CHECK(l->thread != NULL && l->thread->tid == l->tid);
	if (l->thread->name)
		copy_name(c->thread, sizeof c->thread, l->thread->name, l->thread->name_len);
}

static void rec_loss(struct orbit_rp_export *x, const struct orbit_rp_loss_mark *m)
{
	(void)x;
	struct call *c = add(LOSS);
	c->pid = m->stream->pid;
	c->ring = m->ring;
	c->flags = m->flags;
	c->start = m->from;
	c->end = m->to;
	c->count = m->count;
}

static void rec_end(struct orbit_rp_export *x)
{
	CHECK(x->view->ncaps == 1 && x->view->caps[0].streams != NULL);
	add(END);
}

static void rec_free(struct orbit_rp_export *x)
{
	(void)x;
	add(FREE);
}

static const char *rec_wanted(const struct orbit_replay_options *o)
{
	(void)o;
	return "stdout";
}

static struct orbit_rp_exporter recorder = {
    .name = "recorder",
    .wanted = rec_wanted,
    .needs = ORBIT_RP_NEED_STDOUT,
    .state_size = 8,
    .begin = rec_begin,
    .stream = rec_stream,
    .stream_end = rec_stream_end,
    .scope = rec_scope,
    .async = rec_async,
    .value = rec_value,
    .line = rec_line,
    .loss = rec_loss,
    .end = rec_end,
    .free = rec_free,
};

static const struct orbit_rp_exporter *const only_recorder[] = {&recorder, NULL};

static int replay(const char *path, const char *name)
{
	const char *inputs[] = {path};
	struct orbit_replay_options o;
	orbit__replay_defaults(&o);
	FILE *null = fopen("/dev/null", "w");
	CHECK(null != NULL);
	o.inputs = inputs;
	o.ninputs = 1;
	o.out = null;
	o.err = null;
	o.progress = 0;
	o.name = name;
	o.exporters = only_recorder;
	ncalls = 0;
	int status = orbit__replay_run(&o);
	fclose(null);
	return status;
}

static size_t count(enum call_kind kind, const char *name)
{
	size_t n = 0;
	for (size_t i = 0; i < ncalls; i++)
		n += calls[i].kind == kind && (name == NULL || strcmp(calls[i].name, name) == 0);
	return n;
}

static const char *golden(void)
{
	static char path[512];
	snprintf(path, sizeof path, "%s/replay/demo-drain-2x100.orbit.zst", ORBIT_TEST_DATA);
	return path;
}

/* begin, stream, events, stream_end, end, free; every scope after the
 * scopes inside it. */
static void check_order(void)
{
	CHECK_EQ_U64(replay(golden(), NULL), ORBIT_REPLAY_OK);
	CHECK(ncalls > 4);
	CHECK_EQ_U64(calls[0].kind, BEGIN);
	CHECK_EQ_U64(calls[1].kind, STREAM);
	CHECK_EQ_U64(calls[ncalls - 3].kind, STREAM_END);
	CHECK_EQ_U64(calls[ncalls - 2].kind, END);
	CHECK_EQ_U64(calls[ncalls - 1].kind, FREE);
	CHECK_EQ_U64(count(SCOPE, NULL), 600);
	CHECK_EQ_U64(count(SCOPE, "frame"), 200);
	CHECK_EQ_U64(count(ASYNC, "upload batch"), 2);
	CHECK_EQ_U64(count(VALUE, NULL), 200);
	CHECK_EQ_U64(count(LOSS, NULL), 0);
	/* A frame's two children (depth 1, inside it) come before it. */
	for (size_t i = 0; i < ncalls; i++) {
		if (calls[i].kind != SCOPE || strcmp(calls[i].name, "frame") != 0)
			continue;
		CHECK(calls[i].depth == 0);
		size_t inside = 0;
		for (size_t j = i; j-- > 0 && inside < 2;)
			if (calls[j].kind == SCOPE && calls[j].tid == calls[i].tid) {
				CHECK(calls[j].depth == 1);
				CHECK(calls[j].start >= calls[i].start &&
				      calls[j].end <= calls[i].end);
				inside++;
			}
		CHECK_EQ_U64(inside, 2);
	}
}

/* Slices: begin and end of every scope; sorted by time, keeping the call
 * order of equal times (as viewers do), they nest per thread into exactly
 * the scopes' depths. */
static void rec_slice(struct orbit_rp_export *x, const struct orbit_rp_span *s, int end)
{
	(void)x;
	span_call(SLICE, s, end);
}

static uint64_t slice_ts(const struct call *c)
{
	return c->slice_end ? c->end : c->start;
}

static int by_time(const void *a, const void *b)
{
	const struct call *x = *(const struct call *const *)a, *y = *(const struct call *const *)b;
	if (slice_ts(x) != slice_ts(y))
		return slice_ts(x) < slice_ts(y) ? -1 : 1;
	return x < y ? -1 : x > y; /* the call order */
}

static void check_slices(void)
{
	static const struct call *sorted[MAX_CALLS];
	recorder.scope = NULL;
	recorder.slice = rec_slice;
	CHECK_EQ_U64(replay(golden(), NULL), ORBIT_REPLAY_OK);
	CHECK_EQ_U64(count(SLICE, NULL), 1200);
	CHECK_EQ_U64(count(SCOPE, NULL), 0);
	size_t n = 0;
	for (size_t i = 0; i < ncalls; i++)
		if (calls[i].kind == SLICE)
			sorted[n++] = &calls[i];
	qsort(sorted, n, sizeof *sorted, by_time);
	uint32_t tids[8] = {0}, depth[8] = {0};
	uint64_t stack[8][16];
	for (size_t i = 0; i < n; i++) {
		const struct call *c = sorted[i];
		uint32_t t = 0;
		while (tids[t] != 0 && tids[t] != c->tid)
			t++;
		CHECK(t < 8);
		tids[t] = c->tid;
		if (!c->slice_end) {
			CHECK_EQ_U64(depth[t], c->depth);
			stack[t][depth[t]++] = c->id;
		} else {
			CHECK(depth[t] > 0);
			CHECK_EQ_U64(stack[t][--depth[t]], c->id);
		}
	}
	for (size_t t = 0; t < 8; t++)
		CHECK_EQ_U64(depth[t], 0);
}

/* ORBIT_SCOPE_WITH_COLOR("update physics", 0x3366ccff) in
 * examples/demo_drain.c: colour given, group 0; the others have none. */
static void check_attrs(void)
{
	CHECK_EQ_U64(replay(golden(), NULL), ORBIT_REPLAY_OK);
	size_t colored = 0;
	for (size_t i = 0; i < ncalls; i++) {
		const struct call *c = &calls[i];
		if (c->kind != SCOPE && c->kind != ASYNC && c->kind != VALUE)
			continue;
		if (strcmp(c->name, "update physics") == 0) {
			CHECK(c->flags & ORBIT_RP_ATTRS);
			CHECK_EQ_U64(c->color, 0x3366ccffu);
			CHECK_EQ_U64(c->group, 0);
			colored++;
		} else {
			CHECK(!(c->flags & ORBIT_RP_ATTRS));
		}
		CHECK(!(c->flags & (ORBIT_RP_UNFINISHED | ORBIT_RP_NAME_INCOMPLETE)));
	}
	CHECK_EQ_U64(colored, 200);
}

/* The capture replay_synth wrote for a scenario. */
static void synth_capture(char *path, size_t size, const char *scenario)
{
	CHECK(synth != NULL); /* replay_export CASE SYNTH_DIR */
	snprintf(path, size, "%s/%s.orbit.zst", synth, scenario);
}

/* replay_synth's loss scenario: ring 0 claims 0 (X at T0+100), [1 and 2
 * lapped], 3..4 (Z at T0+400..500); the equation holds with lapped 2. */
static void check_loss(void)
{
	char path[512];
	const uint64_t t0 = 5000000000ull;
	synth_capture(path, sizeof path, "loss");
	CHECK_EQ_U64(replay(path, NULL), ORBIT_REPLAY_OK);
	CHECK_EQ_U64(count(LOSS, NULL), 1);
	size_t m = 0, z = 0;
	while (calls[m].kind != LOSS)
		m++;
	CHECK(calls[m].ring == 0 && calls[m].flags == 0 && calls[m].pid == 777);
	CHECK_EQ_U64(calls[m].count, 2);
	CHECK_EQ_U64(calls[m].start, t0 + 100);
	CHECK_EQ_U64(calls[m].end, t0 + 400);
	/* The mark comes before the scopes read after the gap. */
	while (z < ncalls && !(calls[z].kind == SCOPE && strcmp(calls[z].name, "Z") == 0))
		z++;
	CHECK(z < ncalls && m < z);
}

/* Two streams in one file: each one's events between its stream and
 * stream_end calls. */
static void check_streams(void)
{
	char path[512];
	synth_capture(path, sizeof path, "streams");
	CHECK_EQ_U64(replay(path, NULL), ORBIT_REPLAY_OK);
	CHECK_EQ_U64(count(STREAM, NULL), 2);
	CHECK_EQ_U64(count(STREAM_END, NULL), 2);
	uint32_t open = 0;
	for (size_t i = 0; i < ncalls; i++) {
		const struct call *c = &calls[i];
		if (c->kind == STREAM) {
			CHECK_EQ_U64(open, 0);
			open = c->pid;
		} else if (c->kind == STREAM_END) {
			CHECK_EQ_U64(c->pid, open);
			open = 0;
		} else if (c->kind == SCOPE) {
			CHECK_EQ_U64(c->pid, open);
			CHECK(strcmp(c->name, c->pid == 777 ? "one" : "two") == 0);
		}
	}
}

/* --name: only what matches reaches the exporter. */
static void check_filter(void)
{
	CHECK_EQ_U64(replay(golden(), "physics"), ORBIT_REPLAY_OK);
	CHECK_EQ_U64(count(SCOPE, NULL), 200);
	CHECK_EQ_U64(count(SCOPE, "update physics"), 200);
	CHECK_EQ_U64(count(VALUE, NULL) + count(ASYNC, NULL), 0);
	CHECK_EQ_U64(count(STREAM, NULL), 1);
}

/* replay_synth's logs scenario: five records on two page rings, out of
 * order between rings; each with its thread and its name. */
static void check_lines(void)
{
	char path[512];
	synth_capture(path, sizeof path, "logs");
	recorder.needs |= ORBIT_RP_NEED_EARLY_NAMES;
	CHECK_EQ_U64(replay(path, NULL), ORBIT_REPLAY_OK);
	CHECK_EQ_U64(count(LINE, NULL), 5);
	for (size_t i = 0; i < ncalls; i++) {
		const struct call *c = &calls[i];
		if (c->kind != LINE)
			continue;
		CHECK(strcmp(c->thread, c->tid == 31 ? "logger one" : "logger two") == 0);
		CHECK(((c->flags & ORBIT_RP_MARKER) != 0) ==
		      (strncmp(c->name, "\x01\x02", 2) == 0));
	}
}

static const struct test_case cases[] = {
    {"order", check_order}, {"slices", check_slices},   {"attrs", check_attrs},
    {"loss", check_loss},   {"streams", check_streams}, {"filter", check_filter},
    {"lines", check_lines},
};

TEST_MAIN_WITH(cases, .args = "SYNTH_DIR", .arg = &synth)
