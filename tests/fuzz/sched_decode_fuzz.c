/* sched_decode_fuzz.c — libFuzzer target for kernel-sched decoding
 * (replay/sched/replay_sched_decode.c, replay_sched_states.c): hostile formats
 * (through libtraceevent), hostile pages, then the timeline and its
 * queries. Also run over its corpus as a plain regression test
 * (sched_decode_fuzz_corpus); tests/fuzz/make_sched_corpus.py writes the
 * seeds from tests/data/sched.
 *
 * Input: chunks of [u8 tag][u16 length, little-endian][length bytes] (the
 * last one cut by the end of the input). tag & 7: 0 header_page, 1 a
 * "sched" format, 2 a "task" format, 3 a page of CPU tag >> 3, 4 a query
 * (u32 tid, u32 start, u32 length: times of [start, start + length) from
 * the first event's time), anything else ignored. Formats count once
 * ready is called, at the first page or query.
 *
 * Checked, besides ASan/UBSan: every event has a known kind, its page's
 * CPU and NUL-terminated strings; a thread's spans are sorted; every
 * query's four times add up to its length; errors are the documented ones.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "replay_sched.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const char *__lsan_default_suppressions(void);

/* libtraceevent 1.7.1 leaks a few bytes on some malformed format texts
 * (inside tep_parse_event, found by this target); that is its bug, not a
 * leak of ours, and LeakSanitizer would otherwise stop every run there. */
const char *__lsan_default_suppressions(void)
{
	return "leak:libtraceevent.so\n";
}

#define MAX_CHUNKS 512

struct fuzz_ctx {
	uint32_t cpu;
	uint64_t first;
	int have_first;
};

static void check_str(const char *s)
{
	if (memchr(s, '\0', ORBIT__RP_SCHED_COMM) == NULL)
		abort();
}

static int event_cb(void *ctx, const struct orbit__rp_sched_event *e)
{
	struct fuzz_ctx *c = ctx;

	if (e->kind < ORBIT__RP_SCHED_SWITCH || e->kind >= ORBIT__RP_SCHED_KINDS ||
	    e->cpu != c->cpu)
		abort();
	switch (e->kind) {
	case ORBIT__RP_SCHED_SWITCH:
		check_str(e->u.sw.prev_comm);
		check_str(e->u.sw.next_comm);
		break;
	case ORBIT__RP_SCHED_WAKING:
	case ORBIT__RP_SCHED_WAKEUP_NEW:
		check_str(e->u.wake.comm);
		break;
	case ORBIT__RP_SCHED_FORK:
		check_str(e->u.fork.parent_comm);
		check_str(e->u.fork.child_comm);
		break;
	case ORBIT__RP_SCHED_EXIT:
		check_str(e->u.exit.comm);
		break;
	default:
		check_str(e->u.rename.oldcomm);
		check_str(e->u.rename.newcomm);
		break;
	}
	if (!c->have_first) {
		c->first = e->time;
		c->have_first = 1;
	}
	return 0;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	struct orbit__rp_sched_timeline *tl = orbit__rp_sched_timeline_new();
	struct fuzz_ctx ctx = {0, 0, 0};
	const uint8_t *queries[MAX_CHUNKS];
	size_t off = 0, nq = 0;
	int chunks = 0, ready = 0, r;

	if (d == NULL || tl == NULL)
		abort();
	while (off + 3 <= size && chunks++ < MAX_CHUNKS) {
		uint8_t tag = data[off];
		size_t len = (size_t)data[off + 1] | (size_t)data[off + 2] << 8;
		const uint8_t *p = data + off + 3;

		off += 3;
		if (len > size - off)
			len = size - off;
		off += len;
		switch (tag & 7) {
		case 0:
			r = orbit__rp_sched_header_page(d, (const char *)p, len);
			if (r != 0 && r != -EINVAL && r != -E2BIG && r != -ENOMEM)
				abort();
			break;
		case 1:
		case 2:
			r = orbit__rp_sched_format(d, (tag & 7) == 1 ? "sched" : "task",
			                           (const char *)p, len);
			if (r != 0 && r != -EINVAL && r != -E2BIG && r != -ENOSPC && r != -ENOMEM)
				abort();
			break;
		case 3:
			if (!ready) {
				r = orbit__rp_sched_ready(d);
				if (r != 0 && r != -ENOENT && r != -EPROTO)
					abort();
				ready = 1;
			}
			ctx.cpu = tag >> 3;
			/* Once through the decoder alone (the callback checks every
			 * event), once into the timeline. */
			r = orbit__rp_sched_decode_page(d, ctx.cpu, p, len, event_cb, &ctx, NULL);
			if (r < 0 && r != -EINVAL && orbit__ftrace_strerror(r) == NULL)
				abort();
			r = orbit__rp_sched_add_page(tl, d, ctx.cpu, p, len);
			if (r < 0 && r != -EINVAL && orbit__ftrace_strerror(r) == NULL)
				abort();
			break;
		case 4:
			if (len >= 12)
				queries[nq++] = p;
			break;
		default:
			break;
		}
	}
	if (orbit__rp_sched_finish(tl, 0) != 0)
		abort();
	uint32_t count;
	const struct orbit__rp_sched_thread *const *th = orbit__rp_sched_threads(tl, &count);
	for (uint32_t k = 0; k < count; k++) {
		if (k > 0 && th[k]->tid <= th[k - 1]->tid)
			abort();
		for (uint32_t i = 1; i < th[k]->span_count; i++)
			if (th[k]->spans[i].start <= th[k]->spans[i - 1].start)
				abort();
	}
	for (size_t q = 0; q < nq; q++) {
		const struct orbit__rp_sched_thread *t =
		    orbit__rp_sched_thread(tl, (int32_t)le32(queries[q]));
		uint64_t a = ctx.first + le32(queries[q] + 4), b = a + le32(queries[q] + 8);
		struct orbit__rp_sched_times tm;

		if (t == NULL && count > 0)
			t = th[le32(queries[q]) % count];
		orbit__rp_sched_times(t, a, b, &tm);
		if (t != NULL && tm.oncpu_ns + tm.runnable_ns + tm.blocked_ns + tm.unknown_ns !=
		                     (b > a ? b - a : 0))
			abort();
		(void)orbit__rp_sched_span_at(t, a);
	}
	orbit__rp_sched_timeline_free(tl);
	orbit__rp_sched_decoder_free(d);
	return 0;
}
