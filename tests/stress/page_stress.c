/* page_stress.c — after the kernel's ring-buffer self-test: N writer threads
 * with varying record sizes and one reader hammer one page ring for a
 * bounded time. Checks invariants, never timings:
 *   - every delivered payload byte for byte (writer id + sequence + checksum)
 *     and every page's layout (guarantees 1, 3, 7, 8 via page_walk);
 *   - each writer's sequences strictly increase in delivery order, so no
 *     record is delivered twice or out of ring order (guarantee 5);
 *   - reserve attempts == records read + records counted lost, exactly
 *     (guarantee 6), summed over every enable period.
 * Usage: page_stress MODE [SECONDS]
 *   MODE: plain | overwrite | paused | paused_overwrite | cycles
 *   paused*: writers pause (test hook and between reserve and commit) and
 *   the reader pauses while owning the head, while the others wrap the ring.
 *   cycles: a controller disables and re-enables the ring under load. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit/page_util.h"

#define WRITERS 3
#define PAGES 8
#define PAGE_SIZE 512u

static struct orbit__page_ring *ring;
static int paused_mode, cycles_mode;
static _Atomic int stop_writers, stop_controller, drain_reader;
static _Atomic uint64_t lost_total; /* from every disable */

struct writer {
	pthread_t thread;
	uint16_t id;
	uint64_t attempts, reserved, full, dropped, disabled;
};

static struct writer writers[WRITERS];
static uint64_t last_seq[WRITERS + 1];
static int seen_any[WRITERS + 1];
static uint64_t delivered, pages_read, missed_pages;

static _Thread_local uint64_t rng_state;

static void maybe_pause(unsigned one_in, unsigned ms)
{
	if (paused_mode && rng_state != 0 && test_rand(&rng_state) % one_in == 0)
		test_sleep_ms(ms);
}

static void hook(void *arg, enum orbit__page_hook_point point)
{
	(void)arg;
	switch (point) {
	case ORBIT__PAGE_HOOK_JOINED:
	case ORBIT__PAGE_HOOK_STAMPED:
		maybe_pause(2048, 2);
		break;
	case ORBIT__PAGE_HOOK_CLAIMED:
		maybe_pause(1024, 3);
		break;
	case ORBIT__PAGE_HOOK_READING:
		maybe_pause(64, 1);
		break;
	}
	if (rng_state != 0 && test_rand(&rng_state) % 4096 == 0)
		test_clock_jump(150000000); /* TIME_EXTENDs under load */
}

static void *writer_main(void *p)
{
	struct writer *w = p;
	struct orbit__page_reservation res;
	uint64_t seq = 0;

	rng_state = 0x9e3779b97f4a7c15ull * (w->id + 1);
	while (!atomic_load_explicit(&stop_writers, memory_order_relaxed)) {
		uint32_t len = PAYLOAD_MIN + (uint32_t)(test_rand(&rng_state) % 200);
		int r = orbit__page_reserve(ring, len, &res);

		if (r == -ESHUTDOWN) {
			w->disabled++;
			sched_yield();
			continue;
		}
		w->attempts++;
		seq++;
		if (r == -ENOSPC) {
			w->full++;
			sched_yield();
			continue;
		}
		if (r == -ENOBUFS) {
			w->dropped++;
			sched_yield(); /* let a paused owner or writer run */
			continue;
		}
		CHECK(r == 0);
		CHECK(res.len == len);
		payload_fill(res.data, w->id, len, seq);
		maybe_pause(512, 2); /* paused between reserve and commit */
		orbit__page_commit(ring, &res);
		w->reserved++;
	}
	return NULL;
}

static void on_record(void *arg, const struct orbit__ftrace_record *rec)
{
	uint16_t writer;
	uint64_t seq;
	int r = payload_check(rec->data, rec->len, &writer, &seq);

	(void)arg;
	if (r != 0) {
		fprintf(stderr, "bad payload (%d) at offset %u\n", r, rec->offset);
		exit(1);
	}
	CHECK(writer >= 1 && writer <= WRITERS);
	if (seen_any[writer])
		CHECK(seq > last_seq[writer]); /* guarantee 5 */
	seen_any[writer] = 1;
	last_seq[writer] = seq;
	delivered++;
}

static void *reader_main(void *p)
{
	static uint8_t page[PAGE_SIZE];
	struct orbit__ftrace_header hdr;
	unsigned idle = 0;

	(void)p;
	rng_state = 12345;
	for (;;) {
		int r = orbit__page_read(ring, page, sizeof(page));

		if (r > 0) {
			CHECK(r == PAGE_SIZE);
			page_walk(page, PAGE_SIZE, on_record, NULL, &hdr);
			missed_pages += hdr.missed;
			pages_read++;
			idle = 0;
			continue;
		}
		CHECK(r == -EAGAIN || r == -ESHUTDOWN);
		if (r == -EAGAIN && orbit__page_flush(ring, ++idle % 4 ? 2000 : 0) == 1)
			continue;
		/* Writers are done: -EAGAIN with nothing left to flush means
		 * empty (no writer can hold a page or the head any more). */
		if (atomic_load(&drain_reader) && r == -EAGAIN && orbit__page_flush(ring, 0) == 0)
			break;
		sched_yield();
	}
	return NULL;
}

static void *controller_main(void *p)
{
	struct orbit__page_loss loss;

	(void)p;
	while (!atomic_load(&stop_controller)) {
		test_sleep_ms(20);
		CHECK(orbit__page_disable(ring, &loss) == 0);
		atomic_fetch_add(&lost_total, loss.records);
		test_sleep_ms(2);
		CHECK(orbit__page_enable(ring) == 0);
	}
	return NULL;
}

/* The modes: the ring overwrites or not, its users pause, or a controller
 * disables and re-enables it. */
static const struct mode {
	const char *name;
	int overwrite, paused, cycles;
} modes[] = {
    {"plain", 0, 0, 0},  {"overwrite", 1, 0, 0}, {"paused", 0, 1, 0}, {"paused_overwrite", 1, 1, 0},
    {"cycles", 1, 0, 1},
};

static const char *seconds; /* to run for; 2 when not given */

static void run_mode(const void *entry)
{
	const struct mode *m = entry;
	const char *mode = m->name;
	struct orbit__page_config cfg = {.pages = PAGES,
	                                 .page_size = PAGE_SIZE,
	                                 .overwrite = m->overwrite,
	                                 .clock = test_clock,
	                                 .hook = hook};
	struct orbit__page_loss loss;
	pthread_t reader, controller;
	uint64_t attempts = 0, reserved = 0, full = 0, dropped = 0;

	paused_mode = m->paused;
	cycles_mode = m->cycles;
	CHECK(orbit__page_create(&ring, &cfg) == 0);
	CHECK(orbit__page_enable(ring) == 0);
	CHECK(pthread_create(&reader, NULL, reader_main, NULL) == 0);
	for (int i = 0; i < WRITERS; i++) {
		writers[i].id = (uint16_t)(i + 1);
		CHECK(pthread_create(&writers[i].thread, NULL, writer_main, &writers[i]) == 0);
	}
	if (cycles_mode)
		CHECK(pthread_create(&controller, NULL, controller_main, NULL) == 0);

	test_sleep_ms((unsigned)((seconds ? atof(seconds) : 2.0) * 1000));
	if (cycles_mode) {
		atomic_store(&stop_controller, 1);
		CHECK(pthread_join(controller, NULL) == 0);
	}
	atomic_store(&stop_writers, 1);
	for (int i = 0; i < WRITERS; i++) {
		CHECK(pthread_join(writers[i].thread, NULL) == 0);
		attempts += writers[i].attempts;
		reserved += writers[i].reserved;
		full += writers[i].full;
		dropped += writers[i].dropped;
	}
	atomic_store(&drain_reader, 1);
	CHECK(pthread_join(reader, NULL) == 0);
	CHECK(orbit__page_disable(ring, &loss) == 0);
	lost_total += loss.records;

	printf("%s: attempts %" PRIu64 " reserved %" PRIu64 " full %" PRIu64 " dropped %" PRIu64
	       " read %" PRIu64 " lost %" PRIu64 " pages %" PRIu64 " (lost-flag %" PRIu64 ")\n",
	       mode, attempts, reserved, full, dropped, delivered, (uint64_t)lost_total, pages_read,
	       missed_pages);
	CHECK_EQ_U64(attempts, delivered + lost_total); /* guarantee 6 */
	CHECK(delivered > 0);
	if (!cycles_mode)
		CHECK_EQ_U64(reserved + full + dropped, attempts);
	if (full + dropped > 0 && pages_read > 0 && !cycles_mode)
		CHECK(missed_pages > 0);
	orbit__page_destroy(ring);
}

TEST_MAIN_SUITE(.family = TEST_FAMILY(modes, run_mode), .args = "[SECONDS]", .arg = &seconds)
