/*
 * capture_follow.c — a capture reader following a file still being written
 * (orbit__capture_follow, format/frame.h): the file is written a few bytes
 * at a time, and the reader, called after each piece, gives
 * ORBIT_CAPTURE_AGAIN until a whole frame is there, then its packets, each
 * once, in order; never a cut frame, never the end.
 *
 *   capture_follow CASE
 *   CASE: pieces   three frames written in pieces of 1, 7 and 4096 bytes
 *         damage   garbage between two frames, written in pieces: one
 *                  problem at the garbage's offset, then the next frame
 *         skippable a skippable frame written in pieces: skipped, not waited
 *                  on once whole
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "harness.h"

/* One frame of n ThreadName packets, tids from tid; its bytes in *out. */
static size_t frame_of(uint32_t tid, unsigned n, uint8_t **out)
{
	struct orbit_frame_writer w;
	CHECK(orbit__frame_writer_init(&w, 1) == 0);
	for (unsigned i = 0; i < n; i++) {
		Orbit__Packet p = ORBIT__PACKET__INIT;
		Orbit__ThreadName t = ORBIT__THREAD_NAME__INIT;
		t.tid = tid + i;
		t.name = (char *)"follow";
		p.body_case = ORBIT__PACKET__BODY_THREAD_NAME;
		p.thread_name = &t;
		CHECK(orbit__frame_add(&w, &p) == 0);
	}
	CHECK(orbit__frame_finish(&w) == 0 && w.out_len > 0);
	*out = malloc(w.out_len);
	CHECK(*out != NULL);
	memcpy(*out, w.out, w.out_len);
	size_t len = w.out_len;
	orbit__frame_writer_free(&w);
	return len;
}

struct follower {
	int wfd;
	struct orbit_capture_reader *r;
	uint32_t next_tid; /* the tid the next packet must carry */
	unsigned packets, problems;
	uint64_t problem_at;
};

static void follower_open(struct follower *f)
{
	char path[] = "/tmp/capture_follow.XXXXXX";
	int err = 0;
	f->wfd = mkstemp(path);
	CHECK(f->wfd >= 0);
	f->r = orbit__capture_open(path, &err);
	CHECK(f->r != NULL);
	unlink(path);
	orbit__capture_follow(f->r);
	f->next_tid = 100;
}

/* Everything the reader gives now, up to its ORBIT_CAPTURE_AGAIN. */
static void drain(struct follower *f)
{
	for (;;) {
		Orbit__Packet *p = NULL;
		struct orbit_capture_problem prob = {0, 0};
		int rc = orbit__capture_next(f->r, &p, &prob);
		if (rc == ORBIT_CAPTURE_AGAIN)
			return;
		CHECK(rc != 0); /* following, never the end */
		if (rc < 0) {
			CHECK(rc != ORBIT_FRAME_ETRUNC); /* never a cut frame */
			f->problems++;
			f->problem_at = prob.offset;
			continue;
		}
		CHECK(p->body_case == ORBIT__PACKET__BODY_THREAD_NAME);
		CHECK_EQ_U64(p->thread_name->tid, f->next_tid);
		f->next_tid++;
		f->packets++;
		orbit__packet__free_unpacked(p, NULL);
	}
}

/* Writes b in pieces of step bytes, the reader drained after each. */
static void write_in_pieces(struct follower *f, const uint8_t *b, size_t len, size_t step)
{
	for (size_t off = 0; off < len; off += step) {
		size_t n = len - off < step ? len - off : step;
		CHECK(write(f->wfd, b + off, n) == (ssize_t)n);
		drain(f);
	}
}

static void follower_close(struct follower *f)
{
	orbit__capture_close(f->r);
	close(f->wfd);
}

static void case_pieces(void)
{
	static const size_t steps[] = {1, 7, 4096};
	struct follower f;
	follower_open(&f);
	uint32_t tid = 100;
	for (size_t i = 0; i < 3; i++) {
		uint8_t *b;
		size_t len = frame_of(tid, 50, &b);
		unsigned before = f.packets;
		write_in_pieces(&f, b, len - 1, steps[i]);
		CHECK_EQ_U64(f.packets, before); /* one byte short: nothing yet */
		write_in_pieces(&f, b + len - 1, 1, 1);
		CHECK_EQ_U64(f.packets, before + 50);
		tid += 50;
		free(b);
	}
	CHECK_EQ_U64(f.problems, 0);
	CHECK_EQ_U64(orbit__capture_frames(f.r), 3);
	follower_close(&f);
}

static void case_damage(void)
{
	struct follower f;
	follower_open(&f);
	uint8_t *a, *b;
	size_t la = frame_of(100, 10, &a), lb = frame_of(110, 10, &b);
	static const uint8_t junk[] = "not a frame at all, written while the reader waits";
	write_in_pieces(&f, a, la, 5);
	CHECK_EQ_U64(f.packets, 10);
	write_in_pieces(&f, junk, sizeof junk, 3);
	write_in_pieces(&f, b, lb, 5);
	CHECK_EQ_U64(f.packets, 20);
	CHECK_EQ_U64(f.problems, 1); /* the garbage, once, however it came */
	CHECK_EQ_U64(f.problem_at, la);
	free(a);
	free(b);
	follower_close(&f);
}

static void case_skippable(void)
{
	struct follower f;
	follower_open(&f);
	uint8_t skip[8 + 300];
	memset(skip, 0xab, sizeof skip);
	skip[0] = 0x50; /* 0x184D2A50: a zstd skippable frame */
	skip[1] = 0x2A;
	skip[2] = 0x4D;
	skip[3] = 0x18;
	skip[4] = 44; /* 300 bytes: 0x012c */
	skip[5] = 1;
	skip[6] = skip[7] = 0;
	uint8_t *a;
	size_t la = frame_of(100, 10, &a);
	write_in_pieces(&f, skip, sizeof skip, 9);
	write_in_pieces(&f, a, la, 64);
	CHECK_EQ_U64(f.packets, 10);
	CHECK_EQ_U64(f.problems, 0);
	free(a);
	follower_close(&f);
}

static const struct test_case cases[] = {
    {"pieces", case_pieces},
    {"damage", case_damage},
    {"skippable", case_skippable},
};

TEST_MAIN(cases)
