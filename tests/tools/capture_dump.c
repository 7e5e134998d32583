/*
 * capture_dump.c — a test tool: reads a capture with the format library's
 * streaming reader and checks it.
 *
 *   capture_dump FILE                  summary; the loss equation per stream
 *   capture_dump --records FILE        also every record, one per line
 *   capture_dump --emit THREADS ITERATIONS FILE
 *                                      checks the capture holds what
 *                                      examples/emit.c emitted: every record
 *                                      delivered is the one emitted at its
 *                                      place, in each thread's order, names
 *                                      intact; claimed == delivered + lost
 *                                      exactly, with claimed all that was
 *                                      emitted (loss is allowed, and counted;
 *                                      without any, nothing may be missing),
 *                                      each thread's end record last
 *   capture_dump --spread K FILE       also checks that each of K equal
 *                                      slices of the time from the first
 *                                      record to the last holds records
 * Every form also prints how many threads the busiest ring carried.
 * Exit: 0 good, 1 check failed, 2 damaged capture, 3 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "frame.h"
#include "ftrace_page.h"
#include "loss.h"
#include "record.h"

#define MAX_TIDS 1024

struct thread_check {
	uint32_t tid;
	uint32_t ring; /* where its records were */
	int t;         /* emitter index, from the names; -1 unknown */
	int64_t last;  /* place of the last record: 0 name, 1 + 5i + step,
	                  1 + 5n its thread-end record; -1 none */
	uint64_t records;
};

#define SPREAD_MS 65536 /* records per ms since the first, for --spread */

static struct {
	int records, emit, spread;
	uint64_t first_time, last_time;
	uint32_t per_ms[SPREAD_MS];
	long threads, iterations;
	uint64_t delivered[ORBIT_MAX_RINGS];
	uint64_t claimed[ORBIT_MAX_RINGS];
	struct orbit__loss_account loss; /* the format's account: what every reader says */
	uint32_t rings;
	int ended, handshakes, bad;
	uint64_t log_records, log_lost, log_reserved, log_bad;
	struct thread_check th[MAX_TIDS];
	int nth;
	uint64_t decoded;
	uint64_t untrusted; /* records with flag bit 1 */
	uint64_t end_untrusted, end_resets;
} S;

static struct thread_check *thread_of(uint32_t tid)
{
	for (int i = 0; i < S.nth; i++)
		if (S.th[i].tid == tid)
			return &S.th[i];
	if (S.nth == MAX_TIDS)
		return NULL;
	struct thread_check *t = &S.th[S.nth++];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	t->t = -1;
	t->last = -1;
	return t;
}

/* A head record's inline name (after its call site and attributes), as a
 * C string. */
static const char *head_name(const struct orbit_record *r, char buf[ORBIT_RECORD_NAME + 1])
{
	const uint8_t *p;
	size_t n = orbit__record_head_name(r, &p);
	memcpy(buf, p, n);
	buf[n] = '\0';
	return buf;
}

static int fail(const char *what, const struct orbit_record *r)
{
	char b[ORBIT_RECORD_NAME + 1];
	if (S.bad < 20) /* the first ones say it */
		fprintf(stderr, "emit check: %s (tid %u kind %u id %" PRIu64 " name \"%s\")\n",
		        what, r->tid, r->kind, r->id, head_name(r, b));
	S.bad++;
	return -1;
}

static int name_is(const struct orbit_record *r, const char *want)
{
	char b[ORBIT_RECORD_NAME + 1];
	size_t n = strlen(want);
	return r->len == n && strcmp(head_name(r, b), want) == 0;
}

/* The emitter index a name says, checking it against the thread's. */
static int name_index(struct thread_check *t, const struct orbit_record *r, const char *fmt,
                      long want_i)
{
	char want[64];
	int idx;
	char b[ORBIT_RECORD_NAME + 1];
	if (r->len > 24 || sscanf(head_name(r, b), fmt, &idx) != 1)
		return fail("unexpected name", r);
	if (t->t >= 0 && idx != t->t)
		return fail("another emitter's name on this thread", r);
	t->t = idx;
	if (want_i >= 0)
		snprintf(want, sizeof want, "t%d inner %ld", idx, want_i);
	else
		snprintf(want, sizeof want, fmt, idx);
	if (!name_is(r, want))
		return fail("the name is not the one emitted", r);
	return 0;
}

/*
 * The emit pattern per thread: its name; then per iteration i: outer start
 * (scope id 2i+1), inner start (id 2i+2, "inner i"), the value (id i),
 * inner stop, outer stop; last, its thread-end record. Each record therefore
 * says its place in the thread's sequence: 0 for the name, 1 + 5i + step,
 * 1 + 5n for the thread's end (n iterations). Places must increase
 * (records are delivered in the thread's order); with no loss in the
 * capture they must follow one another.
 */
static void emit_check(const struct orbit_record *r)
{
	struct thread_check *t = thread_of(r->tid);
	if (t == NULL) {
		fail("too many threads", r);
		return;
	}
	t->records++;
	int64_t place, i;
	switch (r->kind) {
	case ORBIT_REC_THREAD_NAME:
		if (name_index(t, r, "emitter %d", -1) != 0)
			return;
		place = 0;
		break;
	case ORBIT_REC_SCOPE_START:
		if (r->id == 0)
			goto bad;
		i = (int64_t)(r->id - 1) / 2;
		if (name_index(t, r, r->id & 1 ? "t%d outer" : "t%d inner", r->id & 1 ? -1 : i))
			return;
		place = 1 + 5 * i + (r->id & 1 ? 0 : 1);
		break;
	case ORBIT_REC_UINT64:
		if (name_index(t, r, "t%d value", -1) != 0)
			return;
		place = 1 + 5 * (int64_t)r->id + 2;
		break;
	case ORBIT_REC_SCOPE_STOP:
		if (r->id == 0)
			goto bad;
		i = (int64_t)(r->id - 1) / 2;
		place = 1 + 5 * i + (r->id & 1 ? 4 : 3);
		break;
	case ORBIT_REC_THREAD_END:
		place = 1 + 5 * (int64_t)S.iterations;
		break;
	default:
	bad:
		fail("a record emit does not write", r);
		return;
	}
	if (place > 1 + 5 * (int64_t)S.iterations)
		fail("past the last iteration", r);
	else if (place <= t->last)
		fail("out of the thread's order", r);
	t->last = place;
}

static void on_batch(const Orbit__RingBatch *b)
{
	static uint8_t buf[ORBIT_BATCH_MAX * ORBIT_RECORD_SIZE];
	if (orbit__batch_decode(b, buf) != 0) {
		fprintf(stderr, "bad ring batch\n");
		S.bad++;
		return;
	}
	S.delivered[b->ring] += b->count;
	for (uint32_t i = 0; i < b->count; i++) {
		struct orbit_record r;
		if (orbit__record_decode(buf + (size_t)i * ORBIT_RECORD_SIZE, &r) != 0) {
			fprintf(stderr, "bad record\n");
			S.bad++;
			continue;
		}
		S.decoded++;
		struct thread_check *tc = thread_of(r.tid);
		if (tc != NULL)
			tc->ring = b->ring;
		if (S.decoded == 1)
			S.first_time = r.time;
		if (r.time > S.last_time)
			S.last_time = r.time;
		if (r.time >= S.first_time && (r.time - S.first_time) / 1000000 < SPREAD_MS)
			S.per_ms[(r.time - S.first_time) / 1000000]++;
		if (r.flags & ORBIT_REC_FLAG_TIME_UNTRUSTED)
			S.untrusted++;
		if (S.records) {
			printf("ring %u claim %" PRIu64 " time %" PRIu64
			       " tid %u kind %u id %" PRIu64 " len %u name ",
			       b->ring, b->first_claim + i, r.time, r.tid, r.kind, r.id, r.len);
			const uint8_t *name;
			size_t n = orbit__record_head_name(&r, &name);
			if (r.kind == ORBIT_REC_NAME_CONT)
				n = 32, name = r.name;
			for (size_t k = 0; k < n; k++)
				printf(name[k] >= 32 && name[k] < 127 && name[k] != '\\'
				           ? "%c"
				           : "\\x%02x",
				       name[k]);
			printf("\n");
		}
		if (S.emit)
			emit_check(&r);
	}
}

/* Log pages: every record decodes, lines follow examples/emit.c's text. */
static void on_page(const Orbit__FtracePage *f)
{
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	if (orbit__ftrace_open(&it, f->page.data, f->page.len, &h) != 0) {
		fprintf(stderr, "bad log page\n");
		S.bad++;
		return;
	}
	int err;
	while ((err = orbit__ftrace_next(&it, &rec)) == 1) {
		S.log_records++;
		if (rec.len < 8) {
			S.log_bad++;
			continue;
		}
		uint16_t type = (uint16_t)(rec.data[0] | rec.data[1] << 8);
		size_t at = type == 3 && rec.len >= 16 ? 16 : 8; /* ORBIT_LOG: its site first */
		const char *text = (const char *)rec.data + at;
		size_t n = strnlen(text, rec.len - at);
		if (S.records)
			printf("log ring %u time %" PRIu64 " type %u text %.*s\n", f->ring,
			       rec.time, type, (int)n, text);
		int t;
		long i;
		char tail;
		if (S.emit && ((type != 1 && type != 3) ||
		               (sscanf(text, "t%d at %ld%c", &t, &i, &tail) != 2 &&
		                !(sscanf(text, "t%d don%c", &t, &tail) == 2 && tail == 'e'))))
			S.log_bad++;
	}
	if (err < 0) {
		fprintf(stderr, "bad log record: %s\n", orbit__ftrace_strerror(err));
		S.bad++;
	}
}

int main(int argc, char **argv)
{
	int a = 1;
	if (a < argc && strcmp(argv[a], "--records") == 0) {
		S.records = 1;
		a++;
	} else if (a + 1 < argc && strcmp(argv[a], "--spread") == 0) {
		S.spread = atoi(argv[a + 1]);
		a += 2;
	} else if (a + 2 < argc && strcmp(argv[a], "--emit") == 0) {
		S.emit = 1;
		S.threads = atol(argv[a + 1]);
		S.iterations = atol(argv[a + 2]);
		a += 3;
	}
	if (a + 1 != argc) {
		fprintf(stderr,
		        "usage: capture_dump [--records | --emit THREADS ITERATIONS | --spread K] "
		        "FILE\n");
		return 3;
	}
	int err;
	struct orbit_capture_reader *rd = orbit__capture_open(argv[a], &err);
	if (rd == NULL) {
		fprintf(stderr, "%s: %s\n", argv[a], orbit__frame_strerror(err));
		return 2;
	}
	int damaged = 0;
	Orbit__Packet *p;
	struct orbit_capture_problem prob;
	for (;;) {
		err = orbit__capture_next(rd, &p, &prob);
		if (err == 0)
			break;
		if (err < 0) {
			fprintf(stderr, "%s: offset %" PRIu64 ": %s\n", argv[a], prob.offset,
			        orbit__frame_strerror(prob.error));
			damaged = 1;
			if (prob.error != err) /* an I/O error, not a damaged frame */
				break;
			continue;
		}
		if (orbit__packet_validate(p) != 0) {
			fprintf(stderr, "%s: invalid packet (case %d)\n", argv[a], p->body_case);
			S.bad++;
		} else if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE) {
			S.handshakes++;
			S.rings = p->handshake->ring_count;
			printf("handshake: pid %u process %s host %s rings %u slots %u clock %u "
			       "(%" PRIu64 " ticks/s)\n",
			       p->handshake->pid, p->handshake->process_name,
			       p->handshake->host_name, p->handshake->ring_count,
			       p->handshake->slots_per_ring,
			       p->handshake->clock ? p->handshake->clock->source : 0,
			       p->handshake->clock ? p->handshake->clock->ticks_per_second : 0);
		} else if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH) {
			on_batch(p->ring_batch);
		} else if (p->body_case == ORBIT__PACKET__BODY_FTRACE_PAGE) {
			on_page(p->ftrace_page);
		} else if (orbit__loss_account_packet(&S.loss, p) != 0) {
			const Orbit__Loss *l = p->loss;
			if (S.records && p->body_case == ORBIT__PACKET__BODY_LOSS)
				printf("loss ring %u lapped %" PRIu64 " writer_gone %" PRIu64
				       " backstop %" PRIu64 " unsent %" PRIu64 " at_end %" PRIu64
				       " flight_dropped %" PRIu64 "\n",
				       l->ring, l->lapped, l->writer_gone, l->backstop, l->unsent,
				       l->at_end, l->flight_dropped);
		} else if (p->body_case == ORBIT__PACKET__BODY_END) {
			S.ended = 1;
			S.end_untrusted = p->end->untrusted_times;
			S.end_resets = p->end->clock_resets;
			for (size_t r = 0; r < p->end->n_claimed_per_ring; r++)
				S.claimed[r] = p->end->claimed_per_ring[r];
			for (size_t r = 0; r < p->end->n_reserved_per_page_ring; r++)
				S.log_reserved += p->end->reserved_per_page_ring[r];
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	orbit__capture_close(rd);

	uint64_t claimed = 0, delivered = 0, lost = 0;
	for (uint32_t r = 0; r < ORBIT_MAX_RINGS; r++) {
		struct orbit__loss l = orbit__loss_account_ring(&S.loss, r);
		claimed += S.claimed[r];
		delivered += S.delivered[r];
		lost += orbit__loss_sum(&l);
		if (S.ended && !orbit__loss_holds(S.claimed[r], S.delivered[r], &l)) {
			fprintf(stderr,
			        "ring %u: claimed %" PRIu64 " != delivered %" PRIu64
			        " + lost %" PRIu64 "\n",
			        r, S.claimed[r], S.delivered[r], orbit__loss_sum(&l));
			S.bad++;
		}
	}
	S.log_lost = S.loss.total.log_records;
	printf("log records %" PRIu64 ", lost %" PRIu64 ", reserved %" PRIu64 "\n", S.log_records,
	       S.log_lost, S.log_reserved);
	if (S.ended && !orbit__loss_page_holds(S.log_reserved, S.log_records, S.log_lost)) {
		fprintf(stderr,
		        "log records: reserved %" PRIu64 " != read %" PRIu64 " + lost %" PRIu64
		        "\n",
		        S.log_reserved, S.log_records, S.log_lost);
		S.bad++;
	}
	printf("records %" PRIu64 ", delivered %" PRIu64 ", lost %" PRIu64 ", claimed %" PRIu64
	       "%s\n",
	       S.decoded, delivered, lost, claimed, S.ended ? "" : " (no end of stream)");
	uint32_t per_ring[ORBIT_MAX_RINGS] = {0}, busiest = 0;
	for (int i = 0; i < S.nth; i++)
		if (S.th[i].ring < ORBIT_MAX_RINGS && ++per_ring[S.th[i].ring] > busiest)
			busiest = per_ring[S.th[i].ring];
	printf("threads %d, at most %u on one ring\n", S.nth, busiest);
	if (S.spread > 0) {
		uint64_t span_ms = (S.last_time - S.first_time) / 1000000 + 1, held = 0;
		for (int k = 0; k < S.spread; k++) {
			uint64_t from = span_ms * (uint64_t)k / (uint64_t)S.spread,
			         to = span_ms * (uint64_t)(k + 1) / (uint64_t)S.spread, n = 0;
			for (uint64_t m = from; m < to && m < SPREAD_MS; m++)
				n += S.per_ms[m];
			printf("slice %d: %" PRIu64 " records\n", k, n);
			held += n > 0;
		}
		printf("spread: %" PRIu64 " of %d slices of %" PRIu64 " ms hold records\n", held,
		       S.spread, span_ms);
		if (held != (uint64_t)S.spread)
			S.bad++;
	}
	if (S.untrusted || S.end_untrusted || S.end_resets)
		printf("times not trusted: %" PRIu64 " records flagged; end of stream: %" PRIu64
		       " untrusted, %" PRIu64 " clock resets\n",
		       S.untrusted, S.end_untrusted, S.end_resets);
	if (S.emit) {
		/* Every claim is accounted for: delivered (checked one by one
		 * above) or counted lost; without loss, nothing is missing. */
		uint64_t want = (uint64_t)S.threads * (5 * (uint64_t)S.iterations + 2);
		if (claimed != want || delivered + lost != want || S.nth != S.threads) {
			fprintf(stderr,
			        "emit check: claimed %" PRIu64 ", delivered %" PRIu64
			        " + lost %" PRIu64 " from %d threads, want %" PRIu64 " from %ld\n",
			        claimed, delivered, lost, S.nth, want, S.threads);
			S.bad++;
		}
		uint64_t lines = (uint64_t)S.threads * ((uint64_t)(S.iterations + 999) / 1000 + 1);
		if (S.log_records + S.log_lost != lines || S.log_bad) {
			fprintf(stderr,
			        "emit check: %" PRIu64 " log lines (%" PRIu64 " bad) + %" PRIu64
			        " lost, want %" PRIu64 "\n",
			        S.log_records, S.log_bad, S.log_lost, lines);
			S.bad++;
		}
		for (int i = 0; lost == 0 && i < S.nth; i++)
			if (S.th[i].last != 1 + 5 * S.iterations) {
				fprintf(stderr,
				        "emit check: thread %u stopped at place %" PRId64
				        " of %ld (its end), nothing lost\n",
				        S.th[i].tid, S.th[i].last, 1 + 5 * S.iterations);
				S.bad++;
			}
		printf("emit check: %" PRIu64 " of %" PRIu64 " records delivered, %" PRIu64
		       " lost; %" PRIu64 " of %" PRIu64 " log lines, %" PRIu64 " lost\n",
		       delivered, want, lost, S.log_records, lines, S.log_lost);
	}
	if (S.handshakes != 1 || !S.ended) {
		fprintf(stderr, "%s: %d handshakes, %s end of stream\n", argv[a], S.handshakes,
		        S.ended ? "an" : "no");
		S.bad++;
	}
	if (damaged)
		return 2;
	return S.bad ? 1 : 0;
}
