/*
 * capture_chain.c — a test tool: the account of one process across the
 * captures a collector wrote of it, one per connection, through outages
 * (docs/format.md 7.4):
 *
 *   capture_chain [--tail ACKED UNDELIVERED] [--unstreamed N] [--emitted N] FILE...
 *
 * The streams are ordered by their Handshake's monotonic_ns. Each is one of:
 *
 *   complete     it has its EndOfStream: per ring, claimed == delivered +
 *                the Loss's sum (format/loss.h, section 6);
 *   reported     it ended early and a later stream's Handshake carries its
 *                PreviousStream: per ring, claimed == acknowledged +
 *                unacknowledged + lost, the records in its first
 *                frames_acknowledged frames are exactly `acknowledged`, and
 *                its claimed is the next stream's ring_start minus its own;
 *   unanswered   no records and no report (the agent never had its answer):
 *                it claims nothing, the next stream starts where it did;
 *   the tail     the last stream, ended early with no later stream to carry
 *                its account: --tail gives what the agent's end-of-run line
 *                said (ACKED frames acknowledged, UNDELIVERED records not
 *                delivered), its delivered records are those in its first
 *                ACKED frames and its claimed is delivered + UNDELIVERED.
 *
 * --unstreamed N: the end-of-run line's count when it names no stream: claims
 * the agent never drained into any stream (no collector answered), lost.
 *
 * Prints one line per stream and "process PID: streams S, claimed C,
 * delivered D, lost L", delivered counting records in acknowledged frames
 * only (records found in unacknowledged frames are shown apart); with
 * --emitted, C must be N. Exit: 0 the account holds, 1 it does not, 2 a
 * capture is damaged or not one stream, 3 usage.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "frame.h"
#include "loss.h"

#define MAX_STREAMS 256

struct stream {
	const char *file;
	uint32_t pid, rings;
	uint64_t mono;
	uint64_t start[ORBIT_MAX_RINGS];
	int ended;
	uint64_t claimed[ORBIT_MAX_RINGS]; /* EndOfStream */
	uint64_t lost[ORBIT_MAX_RINGS];    /* the last Loss packets */
	uint64_t found[ORBIT_MAX_RINGS];   /* records in the whole file */
	uint64_t found_acked[ORBIT_MAX_RINGS];
	uint64_t frames;
	Orbit__PreviousStream *prev;         /* the report its Handshake carries */
	const Orbit__PreviousStream *report; /* the report on it, from a later stream */
	uint64_t acked_frames;               /* how many of its frames count */
};

static struct stream St[MAX_STREAMS];
static int Ns;
static int Bad;

__attribute__((format(printf, 1, 2))) static void bad(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "capture_chain: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	Bad++;
}

/* Reads one file; with counting, the records of its first acked_frames
 * frames too. Returns 0, or 2 when damaged. */
static int read_file(struct stream *s, int counting)
{
	int err;
	struct orbit_capture_reader *rd = orbit__capture_open(s->file, &err);
	if (rd == NULL) {
		fprintf(stderr, "%s: %s\n", s->file, orbit__frame_strerror(err));
		return 2;
	}
	Orbit__Packet *p;
	struct orbit_capture_problem prob;
	int handshakes = 0;
	while ((err = orbit__capture_next(rd, &p, &prob)) != 0) {
		if (err < 0) {
			fprintf(stderr, "%s: offset %" PRIu64 ": %s\n", s->file, prob.offset,
			        orbit__frame_strerror(prob.error));
			orbit__capture_close(rd);
			return 2;
		}
		uint64_t frame = orbit__capture_frames(rd);
		if (orbit__packet_validate(p) != 0) {
			bad("%s: an invalid packet", s->file);
		} else if (p->body_case == ORBIT__PACKET__BODY_HANDSHAKE && !counting) {
			const Orbit__Handshake *h = p->handshake;
			handshakes++;
			s->pid = h->pid;
			s->mono = h->monotonic_ns;
			s->rings = h->ring_count;
			for (uint32_t r = 0; r < h->ring_count; r++)
				s->start[r] = h->ring_start[r];
			if (h->previous_stream != NULL) {
				/* Kept: packed again and unpacked, to outlive p. */
				size_t n =
				    orbit__previous_stream__get_packed_size(h->previous_stream);
				uint8_t *b = malloc(n);
				orbit__previous_stream__pack(h->previous_stream, b);
				s->prev = orbit__previous_stream__unpack(NULL, n, b);
				free(b);
			}
		} else if (p->body_case == ORBIT__PACKET__BODY_RING_BATCH && counting) {
			uint32_t r = p->ring_batch->ring;
			s->found[r] += p->ring_batch->count;
			if (frame <= s->acked_frames)
				s->found_acked[r] += p->ring_batch->count;
		} else if (p->body_case == ORBIT__PACKET__BODY_LOSS && counting) {
			struct orbit__loss l;
			orbit__loss_of(&l, p->loss);
			s->lost[p->loss->ring] = orbit__loss_sum(&l);
		} else if (p->body_case == ORBIT__PACKET__BODY_END && counting) {
			s->ended = 1;
			for (size_t r = 0; r < p->end->n_claimed_per_ring && r < ORBIT_MAX_RINGS;
			     r++)
				s->claimed[r] = p->end->claimed_per_ring[r];
		}
		orbit__packet__free_unpacked(p, NULL);
	}
	s->frames = orbit__capture_frames(rd);
	orbit__capture_close(rd);
	if (!counting && handshakes != 1) {
		fprintf(stderr, "%s: %d handshakes, not one stream\n", s->file, handshakes);
		return 2;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct stream *x = a, *y = b;
	return x->mono < y->mono ? -1 : x->mono > y->mono;
}

int main(int argc, char **argv)
{
	int a = 1, tail = 0, emitted_set = 0;
	uint64_t tail_acked = 0, tail_undelivered = 0, emitted = 0, unstreamed = 0;
	for (; a < argc && argv[a][0] == '-'; a++) {
		if (strcmp(argv[a], "--tail") == 0 && a + 2 < argc) {
			tail = 1;
			tail_acked = strtoull(argv[++a], NULL, 10);
			tail_undelivered = strtoull(argv[++a], NULL, 10);
		} else if (strcmp(argv[a], "--unstreamed") == 0 && a + 1 < argc) {
			unstreamed = strtoull(argv[++a], NULL, 10);
		} else if (strcmp(argv[a], "--emitted") == 0 && a + 1 < argc) {
			emitted_set = 1;
			emitted = strtoull(argv[++a], NULL, 10);
		} else {
			break;
		}
	}
	if (a >= argc || argc - a > MAX_STREAMS) {
		fprintf(stderr, "usage: capture_chain [--tail ACKED UNDELIVERED] [--unstreamed N] "
		                "[--emitted N] FILE...\n");
		return 3;
	}
	for (; a < argc; a++) {
		St[Ns].file = argv[a];
		if (read_file(&St[Ns], 0) != 0)
			return 2;
		Ns++;
	}
	qsort(St, (size_t)Ns, sizeof St[0], by_time);
	for (int i = 0; i < Ns; i++) {
		if (St[i].pid != St[0].pid)
			bad("%s: pid %u, not %u: another process", St[i].file, St[i].pid,
			    St[0].pid);
		/* Which stream a report is about: by its Handshake's time. */
		const Orbit__PreviousStream *ps = St[i].prev;
		for (int j = 0; ps != NULL && j < i; j++)
			if (St[j].mono == ps->monotonic_ns)
				St[j].report = ps; /* a later report repeats an earlier one */
		if (ps != NULL && ps->monotonic_ns >= St[i].mono)
			bad("%s: reports on a stream not before it", St[i].file);
	}
	for (int i = 0; i < Ns; i++) {
		struct stream *s = &St[i];
		s->acked_frames = s->report             ? s->report->frames_acknowledged
		                  : i == Ns - 1 && tail ? tail_acked
		                                        : UINT64_MAX;
		if (read_file(s, 1) != 0)
			return 2;
	}

	uint64_t claimed = 0, delivered = 0, lost = 0, extra = 0;
	for (int i = 0; i < Ns; i++) {
		struct stream *s = &St[i];
		uint64_t c = 0, d = 0, l = 0, found = 0;
		const char *what;
		for (uint32_t r = 0; r < s->rings; r++)
			found += s->found[r];
		if (s->ended) {
			what = "complete";
			for (uint32_t r = 0; r < s->rings; r++) {
				if (s->claimed[r] != s->found[r] + s->lost[r])
					bad("%s: ring %u: claimed %" PRIu64 " != delivered %" PRIu64
					    " + lost %" PRIu64,
					    s->file, r, s->claimed[r], s->found[r], s->lost[r]);
				c += s->claimed[r];
				d += s->found[r];
				l += s->lost[r];
			}
		} else if (s->report != NULL) {
			const Orbit__PreviousStream *ps = s->report;
			what = "reported";
			for (uint32_t r = 0; r < s->rings && r < ps->n_claimed; r++) {
				if (ps->claimed[r] !=
				    ps->acknowledged[r] + ps->unacknowledged[r] + ps->lost[r])
					bad("%s: ring %u: its account: claimed %" PRIu64
					    " != acknowledged %" PRIu64 " + unacknowledged %" PRIu64
					    " + lost %" PRIu64,
					    s->file, r, ps->claimed[r], ps->acknowledged[r],
					    ps->unacknowledged[r], ps->lost[r]);
				if (s->found_acked[r] != ps->acknowledged[r])
					bad("%s: ring %u: %" PRIu64 " records in its first %" PRIu64
					    " frames, its account says %" PRIu64,
					    s->file, r, s->found_acked[r], ps->frames_acknowledged,
					    ps->acknowledged[r]);
				if (s->found[r] > ps->acknowledged[r] + ps->unacknowledged[r])
					bad("%s: ring %u: more records found than were sent",
					    s->file, r);
				if (i + 1 < Ns &&
				    St[i + 1].start[r] - s->start[r] != ps->claimed[r])
					bad("%s: ring %u: the next stream starts %" PRIu64
					    " claims later, the account claims %" PRIu64,
					    s->file, r, St[i + 1].start[r] - s->start[r],
					    ps->claimed[r]);
				c += ps->claimed[r];
				d += ps->acknowledged[r];
				l += ps->unacknowledged[r] + ps->lost[r];
			}
			if (s->frames < ps->frames_acknowledged)
				bad("%s: %" PRIu64 " frames, %" PRIu64 " were acknowledged",
				    s->file, s->frames, ps->frames_acknowledged);
		} else if (i == Ns - 1 && tail) {
			what = "the tail";
			for (uint32_t r = 0; r < s->rings; r++)
				d += s->found_acked[r];
			l = tail_undelivered;
			c = d + l;
			if (s->frames < tail_acked)
				bad("%s: %" PRIu64 " frames, %" PRIu64 " were acknowledged",
				    s->file, s->frames, tail_acked);
		} else if (found == 0) {
			what = "unanswered";
			for (uint32_t r = 0; i + 1 < Ns && r < s->rings; r++)
				if (St[i + 1].start[r] != s->start[r])
					bad("%s: ring %u: claims nothing, yet the next stream "
					    "starts "
					    "%" PRIu64 " claims later",
					    s->file, r, St[i + 1].start[r] - s->start[r]);
		} else {
			what = "unaccounted";
			bad("%s: ended early and no later stream accounts for it", s->file);
		}
		printf("stream %" PRIu64 " %s: %s, claimed %" PRIu64 ", delivered %" PRIu64
		       ", lost %" PRIu64 ", %" PRIu64 " frames, %" PRIu64 " records found\n",
		       s->mono, s->file, what, c, d, l, s->frames, found);
		claimed += c;
		delivered += d;
		lost += l;
		extra += found > d ? found - d : 0;
	}
	claimed += unstreamed;
	lost += unstreamed;
	printf("process %u: streams %d, claimed %" PRIu64 ", delivered %" PRIu64 ", lost %" PRIu64
	       ", found in unacknowledged frames %" PRIu64 "\n",
	       St[0].pid, Ns, claimed, delivered, lost, extra);
	if (claimed != delivered + lost)
		bad("claimed %" PRIu64 " != delivered %" PRIu64 " + lost %" PRIu64, claimed,
		    delivered, lost);
	if (emitted_set && claimed != emitted)
		bad("claimed %" PRIu64 ", emitted %" PRIu64, claimed, emitted);
	return Bad ? 1 : 0;
}
