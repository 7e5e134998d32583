/*
 * stream_writer_up_front.c — what format/stream_writer.h guarantees of a
 * stream of protocol version 3 (its guarantees 5 and 6, docs/format.md
 * 4.13): the frames it hands its sink, read back with the capture reader.
 *
 *   stream_writer_up_front CASE
 *   CASE: names   a thread's ThreadName before the first batch or log page
 *                 with its records, once; again after a rename; again after
 *                 a frame the sink refused, or forget_names
 *         first   first_ns: the earliest head record or log line of the
 *                 frames taken, not of a frame refused; the Handshake's time
 *                 when there is none
 *         mark    a KernelMark packet as given
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "frame.h"
#include "harness.h"
#include "record.h"
#include "stream_writer.h"

static int capture_fd = -1;
static int refuse_next; /* the sink refuses the next frame */

static int on_frame(void *ctx, const struct orbit__sw_frame *f)
{
	(void)ctx;
	if (refuse_next) {
		refuse_next = 0;
		return -EIO;
	}
	CHECK(write(capture_fd, f->bytes, f->len) == (ssize_t)f->len);
	return 0;
}

static int on_name(void *ctx, uint32_t tid, char name[ORBIT_SW_NAME])
{
	(void)ctx;
	if (tid == 99)
		return 0; /* gone: no name */
	snprintf(name, ORBIT_SW_NAME, "thread-%u", tid);
	return 1;
}

static struct orbit__sw *writer(void)
{
	capture_fd = memfd_create("stream_writer_up_front", MFD_CLOEXEC);
	CHECK(capture_fd >= 0);
	const struct orbit__sw_sink sink = {.frame = on_frame, .name = on_name};
	struct orbit__sw *w = orbit__sw_new(1, ORBIT_SW_NO_CUT, &sink);
	CHECK(w != NULL);
	uint64_t start[1] = {0};
	Orbit__Handshake h = ORBIT__HANDSHAKE__INIT;
	h.protocol_version = ORBIT_PROTOCOL_UP_FRONT;
	h.monotonic_ns = 5000;
	h.ring_count = 1;
	h.record_size = ORBIT_RECORD_SIZE;
	h.n_ring_start = 1;
	h.ring_start = start;
	CHECK(orbit__sw_handshake(w, &h, NULL, 0) == 0);
	return w;
}

static uint64_t claim;

/* A scope start and stop of each thread of tids, at t. */
static void records(struct orbit__sw *w, const uint32_t *tids, size_t n, uint64_t t)
{
	uint8_t b[16 * ORBIT_RECORD_SIZE];
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct orbit_record a = {t + i, 1, tids[i], ORBIT_REC_SCOPE_START, 0, 1, "s"};
		struct orbit_record z = {t + 100, 1, tids[i], ORBIT_REC_SCOPE_STOP, 0, 0, {0}};
		orbit__record_encode(&a, b + k++ * ORBIT_RECORD_SIZE);
		orbit__record_encode(&z, b + k++ * ORBIT_RECORD_SIZE);
	}
	CHECK(orbit__sw_records(w, 0, claim, b, (uint32_t)k) == k);
	claim += k;
}

/* A log page of one line of thread tid at t (format.md 5.1, 5.3). */
static void log_page(struct orbit__sw *w, uint32_t tid, uint64_t t)
{
	uint8_t page[4096] = {0};
	orbit__put_le64(page, t);
	orbit__put_le64(page + 8, 4 + 12);
	orbit__put_le32(page + 16, 3); /* type_len 3: a 12-byte payload, delta 0 */
	orbit__put_le16(page + 20, 1); /* a log line */
	orbit__put_le32(page + 24, tid);
	memcpy(page + 28, "hi!", 4);
	CHECK(orbit__sw_log_page(w, 0, page, sizeof page) == 0);
}

/* The packets of the capture, as one letter each: H handshake, N thread
 * name (its tid after it), B batch, L log page, K kernel mark, E end. */
static char seen[256];
static uint32_t seen_tid[256];
static size_t nseen;
static uint64_t end_first;
static Orbit__KernelMark mark;

static void read_back(struct orbit__sw *w)
{
	orbit__sw_free(w);
	CHECK(lseek(capture_fd, 0, SEEK_SET) == 0);
	int err;
	struct orbit_capture_reader *r = orbit__capture_from_fd(capture_fd, &err);
	CHECK(r != NULL);
	nseen = 0;
	for (;;) {
		struct orbit_capture_problem prob;
		Orbit__Packet *p;
		int rc = orbit__capture_next(r, &p, &prob);
		if (rc == 0)
			break;
		CHECK(rc == 1 && nseen < sizeof seen);
		seen_tid[nseen] = 0;
		switch (p->body_case) {
		case ORBIT__PACKET__BODY_HANDSHAKE:
			seen[nseen] = 'H';
			break;
		case ORBIT__PACKET__BODY_THREAD_NAME: {
			char want[ORBIT_SW_NAME];
			snprintf(want, sizeof want, "thread-%u", p->thread_name->tid);
			CHECK(strcmp(p->thread_name->name, want) == 0 ||
			      strcmp(p->thread_name->name, "renamed") == 0);
			seen[nseen] = p->thread_name->name[0] == 'r' ? 'R' : 'N';
			seen_tid[nseen] = p->thread_name->tid;
			break;
		}
		case ORBIT__PACKET__BODY_RING_BATCH:
			seen[nseen] = 'B';
			break;
		case ORBIT__PACKET__BODY_FTRACE_PAGE:
			seen[nseen] = 'L';
			break;
		case ORBIT__PACKET__BODY_KERNEL_MARK:
			seen[nseen] = 'K';
			mark = *p->kernel_mark;
			break;
		case ORBIT__PACKET__BODY_END:
			seen[nseen] = 'E';
			end_first = p->end->first_ns;
			break;
		default:
			seen[nseen] = '?';
		}
		nseen++;
		orbit__packet__free_unpacked(p, NULL);
	}
	seen[nseen] = '\0';
	orbit__capture_close(r);
	close(capture_fd);
}

static void end(struct orbit__sw *w)
{
	Orbit__EndOfStream e = ORBIT__END_OF_STREAM__INIT;
	e.first_ns = orbit__sw_first_ns(w);
	CHECK(orbit__sw_end(w, &e) == 0);
}

static void case_names(void)
{
	struct orbit__sw *w = writer();
	static const uint32_t ab[] = {7, 8, 7}, b[] = {8}, gone[] = {99, 7};
	records(w, ab, 3, 1000);                       /* 7 and 8 named before it, once each */
	records(w, b, 1, 2000);                        /* known: nothing */
	log_page(w, 9, 2500);                          /* 9 named before its page */
	CHECK(orbit__sw_rename(w, 8, "renamed") == 0); /* again, with the new name */
	CHECK(orbit__sw_rename(w, 8, "renamed") == 0); /* the same: nothing */
	CHECK(orbit__sw_rename(w, 5, "unseen") == 0);  /* never named: nothing */
	records(w, gone, 2, 3000); /* 99 has no name: none sent, its records go */
	CHECK(orbit__sw_cut(w) == 0);
	refuse_next = 1; /* this frame never arrives: its names go again */
	records(w, b, 1, 4000);
	CHECK(orbit__sw_cut(w) != 0);
	records(w, b, 1, 5000);
	orbit__sw_forget_names(w);
	records(w, ab, 1, 6000);
	end(w);
	read_back(w);
	printf("%s\n", seen);
	CHECK(strcmp(seen, "HNNBBNLRBNBNBE") == 0);
	CHECK(seen_tid[1] == 7 && seen_tid[2] == 8 && seen_tid[5] == 9 && seen_tid[7] == 8);
	CHECK(seen_tid[9] == 8 && seen_tid[11] == 7);
}

static void case_first(void)
{
	struct orbit__sw *w = writer();
	CHECK_EQ_U64(orbit__sw_first_ns(w), 5000); /* nothing yet: the handshake */
	static const uint32_t a[] = {7};
	refuse_next = 1;
	records(w, a, 1, 100); /* refused: not in the capture, not its first */
	CHECK(orbit__sw_cut(w) != 0);
	records(w, a, 1, 3000);
	log_page(w, 7, 2000); /* a line older than every scope taken */
	CHECK(orbit__sw_cut(w) == 0);
	records(w, a, 1, 1500); /* in the frame being built: it counts */
	CHECK_EQ_U64(orbit__sw_first_ns(w), 1500);
	end(w);
	read_back(w);
	CHECK_EQ_U64(end_first, 1500);
}

static void case_mark(void)
{
	struct orbit__sw *w = writer();
	CHECK(orbit__sw_kernel_mark(w, 123456789) == 0);
	end(w);
	read_back(w);
	CHECK(strcmp(seen, "HKE") == 0);
	CHECK_EQ_U64(mark.complete_ns, 123456789);
	CHECK_EQ_U64(end_first, 5000);
}

static const struct test_case cases[] = {
    {"names", case_names},
    {"first", case_first},
    {"mark", case_mark},
};

TEST_MAIN(cases)
