/*
 * segment_hostile.c — the segment reader assumes the writer is hostile
 * (seed 000): every header field is validated against the mapped
 * length before one event is read, and each kind of damage gets its own clear
 * error. Images are built in memory (by hand, or copied from a segment made
 * by orbit__segment_create); the open cases use real shm objects.
 *
 * Usage: segment_hostile CASE (one ctest entry per case).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "orbit.h"
#include "segment_create.h"

#define PAGE 4096u

/* An in-memory segment image, 8-aligned (magic is an _Atomic u64). */
struct image {
	uint8_t *bytes;
	size_t len; /* bytes allocated and "mapped" */
	struct orbit__seg_header *h;
};

/* The layout orbit__segment_plan gives for these dimensions (no page rings,
 * no flight ring unless a case adds them). */
static struct orbit__seg_layout plan_of(uint32_t page, uint32_t rings, uint32_t slots)
{
	struct orbit__seg_geometry g = {
	    .page_size = page, .ring_count = rings, .slots_per_ring = slots};
	struct orbit__seg_layout l;
	memset(&l, 0, sizeof l);
	if (orbit__segment_plan(&g, &l) != 0) {
		page = page ? page : 1;
		/* Outside the format's ranges: a layout of the same shape, so that
		 * only the bad dimension differs. */
		l.state_offset = 2ull * page;
		l.state_size = (sizeof(struct orbit__seg_state) + page - 1) / page * page;
		l.rings_offset = l.state_offset + l.state_size;
		l.ring_stride = ORBIT__RING_HEADER + (uint64_t)slots * ORBIT__SLOT_SIZE;
		l.pages_offset =
		    (l.rings_offset + (uint64_t)rings * l.ring_stride + page - 1) / page * page;
		l.flight_offset = l.pages_offset;
		l.total_size = l.flight_offset;
	}
	return l;
}

static uint64_t layout_total(uint32_t page, uint32_t rings, uint32_t slots)
{
	return plan_of(page, rings, slots).total_size;
}

/* A header as orbit__segment_create writes it, for the given dimensions. */
static void fill_header(struct orbit__seg_header *h, uint32_t page, uint32_t rings, uint32_t slots)
{
	struct orbit__seg_layout l = plan_of(page, rings, slots);
	memset(h, 0, sizeof *h);
	h->version = ORBIT__SEG_VERSION;
	h->header_size = sizeof *h;
	h->page_size = page;
	h->record_size = ORBIT_RECORD_SIZE;
	h->slot_size = ORBIT__SLOT_SIZE;
	h->ring_header_size = ORBIT__RING_HEADER;
	h->ring_count = rings;
	h->slots_per_ring = slots;
	h->control_offset = page;
	h->rings_offset = l.rings_offset;
	h->ring_stride = l.ring_stride;
	h->total_size = l.total_size;
	h->pid = (uint32_t)getpid();
	h->clock_source = ORBIT__CLOCK_MONOTONIC;
	h->start_time = 12345;
	h->state_offset = l.state_offset;
	h->state_size = l.state_size;
	h->pages_offset = l.pages_offset;
	h->flight_offset = l.flight_offset;
	atomic_store_explicit(&h->magic, ORBIT__SEG_MAGIC, memory_order_relaxed);
}

static struct image image_new(uint32_t rings, uint32_t slots)
{
	struct image im;
	im.len = (size_t)layout_total(PAGE, rings, slots);
	im.bytes = aligned_alloc(64, (im.len + 63) & ~(size_t)63);
	CHECK(im.bytes != NULL);
	memset(im.bytes, 0, im.len);
	im.h = (struct orbit__seg_header *)im.bytes;
	fill_header(im.h, PAGE, rings, slots);
	return im;
}

static int validate(const struct image *im)
{
	struct orbit__seg_layout l;
	return orbit__segment_validate(im->bytes, im->len, &l, NULL);
}

/* Expects err from validating im, with a readable report if not. */
#define EXPECT(im, want)                                                                           \
	do {                                                                                       \
		int got_ = validate(im);                                                           \
		if (got_ != (want)) {                                                              \
			fprintf(stderr, "%s:%d: validate gave %d (%s), want %d (%s)\n", __FILE__,  \
			        __LINE__, got_, orbit_strerror(got_), (want),                      \
			        orbit_strerror(want));                                             \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static void check_layout(const struct orbit__seg_layout *l, uint32_t page, uint32_t rings,
                         uint32_t slots, uint32_t pid, uint32_t clock)
{
	CHECK_EQ_U64(l->page_size, page);
	CHECK_EQ_U64(l->ring_count, rings);
	CHECK_EQ_U64(l->slots_per_ring, slots);
	CHECK_EQ_U64(l->pid, pid);
	CHECK_EQ_U64(l->clock_source, clock);
	CHECK_EQ_U64(l->rings_offset, plan_of(page, rings, slots).rings_offset);
	CHECK_EQ_U64(l->ring_stride, ORBIT__RING_HEADER + (uint64_t)slots * ORBIT__SLOT_SIZE);
	CHECK_EQ_U64(l->total_size, layout_total(page, rings, slots));
}

/* Field by field: the struct has padding. */
static int layout_eq(const struct orbit__seg_layout *a, const struct orbit__seg_layout *b)
{
	return a->page_size == b->page_size && a->ring_count == b->ring_count &&
	       a->slots_per_ring == b->slots_per_ring && a->pid == b->pid &&
	       a->clock_source == b->clock_source && a->start_time == b->start_time &&
	       a->rings_offset == b->rings_offset && a->ring_stride == b->ring_stride &&
	       a->total_size == b->total_size;
}

/* ---- cases ------------------------------------------------------------- */

/* A real segment, copied, validates with the layout it was created with; so
 * does the hand-built image the other cases damage. */
static void case_valid(void)
{
	struct orbit__seg_params p = {
	    .ring_count = 3, .slots_per_ring = 64, .clock_source = ORBIT__CLOCK_MONOTONIC};
	struct orbit__segment seg;
	CHECK_EQ_U64(orbit__segment_create(&p, &seg), 0);
	uint32_t page = (uint32_t)sysconf(_SC_PAGESIZE);
	CHECK_EQ_U64(seg.size, layout_total(page, 3, 64));
	uint8_t *copy = aligned_alloc(64, (seg.size + 63) & ~(size_t)63);
	CHECK(copy != NULL);
	memcpy(copy, seg.base, seg.size);
	orbit__segment_unlink(&seg);
	orbit__segment_close(&seg);

	struct orbit__seg_layout l;
	memset(&l, 0xa5, sizeof l);
	CHECK_EQ_U64(orbit__segment_validate(copy, seg.size, &l, NULL), 0);
	check_layout(&l, page, 3, 64, (uint32_t)getpid(), ORBIT__CLOCK_MONOTONIC);
	CHECK_EQ_U64(l.start_time, orbit__process_start_time(getpid()));
	/* The creator's own layout says the same. */
	CHECK(layout_eq(&l, &seg.layout));
	free(copy);

	struct image im = image_new(1, 16);
	memset(&l, 0, sizeof l);
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, im.len, &l, NULL), 0);
	check_layout(&l, PAGE, 1, 16, (uint32_t)getpid(), ORBIT__CLOCK_MONOTONIC);
	CHECK_EQ_U64(l.start_time, 12345);
	/* A file longer than its layout is fine: the layout is what counts. */
	struct image big = image_new(2, 16);
	fill_header(big.h, PAGE, 1, 16);
	CHECK_EQ_U64(orbit__segment_validate(big.bytes, big.len, &l, NULL), 0);
	CHECK_EQ_U64(l.total_size, layout_total(PAGE, 1, 16));
	free(big.bytes);
	/* The extremes of every range pass. */
	free(im.bytes);
	im = image_new(128, 16);
	EXPECT(&im, 0);
	free(im.bytes);
	im.len = (size_t)layout_total(65536, 1, 16);
	im.bytes = aligned_alloc(64, im.len);
	CHECK(im.bytes != NULL);
	memset(im.bytes, 0, im.len);
	im.h = (struct orbit__seg_header *)im.bytes;
	fill_header(im.h, 65536, 1, 16);
	EXPECT(&im, 0);
	for (uint32_t c = ORBIT__CLOCK_MONOTONIC; c <= ORBIT__CLOCK_CNTVCT; c++) {
		im.h->clock_source = c;
		EXPECT(&im, 0);
	}
	free(im.bytes);
}

/* Shorter than the header: ETRUNC, and not one byte read past the mapping
 * (each length gets an allocation of exactly that size, for ASan). */
static void case_truncated(void)
{
	struct image im = image_new(1, 16);
	struct orbit__seg_layout l;
	for (size_t len = 0; len < sizeof(struct orbit__seg_header); len++) {
		uint8_t *b = malloc(len); /* 16-aligned, exactly len bytes */
		CHECK(b != NULL || len == 0);
		memcpy(b, im.bytes, len);
		int err = orbit__segment_validate(b, len, &l, NULL);
		if (err != ORBIT_ETRUNC) {
			fprintf(stderr, "mapped_len %zu: got %d, want ORBIT_ETRUNC\n", len, err);
			exit(1);
		}
		free(b);
	}
	/* Header complete, rings cut: every length short of the layout. */
	const size_t total = im.len;
	const size_t cuts[] = {sizeof(struct orbit__seg_header),
	                       PAGE - 1,
	                       PAGE,
	                       2 * PAGE,
	                       2 * PAGE + ORBIT__RING_HEADER,
	                       total - ORBIT__SLOT_SIZE,
	                       total - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		int err = orbit__segment_validate(im.bytes, cuts[i], &l, NULL);
		if (err != ORBIT_ETRUNC) {
			fprintf(stderr, "mapped_len %zu of %zu: got %d, want ORBIT_ETRUNC\n",
			        cuts[i], total, err);
			exit(1);
		}
	}
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, total, &l, NULL), 0);
	free(im.bytes);
}

/* Magic not there yet: "not initialised", whatever else the page holds. */
static void case_magic_zero(void)
{
	struct image im = image_new(1, 16);
	atomic_store_explicit(&im.h->magic, 0, memory_order_relaxed);
	EXPECT(&im, ORBIT_ENOTINIT);
	/* A page of zeros (ftruncate done, nothing written yet). */
	memset(im.bytes, 0, im.len);
	EXPECT(&im, ORBIT_ENOTINIT);
	/* Half-written: the rest of the header is garbage. */
	memset(im.bytes, 0xff, sizeof(struct orbit__seg_header));
	atomic_store_explicit(&im.h->magic, 0, memory_order_relaxed);
	EXPECT(&im, ORBIT_ENOTINIT);
	free(im.bytes);
}

static void case_magic_wrong(void)
{
	struct image im = image_new(1, 16);
	const uint64_t bad[] = {
	    __builtin_bswap64(ORBIT__SEG_MAGIC), /* the other endianness */
	    ORBIT__SEG_MAGIC + 1,
	    ORBIT__SEG_MAGIC ^ (1ull << 63),
	    0x324745535442524full, /* "ORBTSEG2" */
	    UINT64_MAX,
	    1,
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		atomic_store_explicit(&im.h->magic, bad[i], memory_order_relaxed);
		EXPECT(&im, ORBIT_EBADSEG);
	}
	free(im.bytes);
}

static void case_version(void)
{
	struct image im = image_new(1, 16);
	const uint32_t bad[] = {0, ORBIT__SEG_VERSION + 1, 0x01000000u, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		im.h->version = bad[i];
		EXPECT(&im, ORBIT_EVERSION);
	}
	/* Not initialised wins over a version not written yet. */
	atomic_store_explicit(&im.h->magic, 0, memory_order_relaxed);
	EXPECT(&im, ORBIT_ENOTINIT);
	free(im.bytes);
}

/* Record, slot, header and ring-header sizes are fixed by the format. */
static void case_sizes(void)
{
	struct image im = image_new(1, 16);
	const uint32_t bad_record[] = {0, 48, 55, 57, 64, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad_record / sizeof bad_record[0]; i++) {
		fill_header(im.h, PAGE, 1, 16);
		im.h->record_size = bad_record[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	const uint32_t bad_slot[] = {0, 32, 56, 63, 65, 128, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad_slot / sizeof bad_slot[0]; i++) {
		fill_header(im.h, PAGE, 1, 16);
		im.h->slot_size = bad_slot[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	const uint32_t bad_header[] = {0, sizeof(struct orbit__seg_header) - 8,
	                               sizeof(struct orbit__seg_header) + 8, PAGE, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad_header / sizeof bad_header[0]; i++) {
		fill_header(im.h, PAGE, 1, 16);
		im.h->header_size = bad_header[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	const uint32_t bad_ring_header[] = {0, 64, 127, 129, 256};
	for (size_t i = 0; i < sizeof bad_ring_header / sizeof bad_ring_header[0]; i++) {
		fill_header(im.h, PAGE, 1, 16);
		im.h->ring_header_size = bad_ring_header[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	const uint32_t bad_page[] = {0, 1, 1000, 2048, 4095, 4097, 6144, 1u << 17, 1u << 31};
	for (size_t i = 0; i < sizeof bad_page / sizeof bad_page[0]; i++) {
		/* Offsets consistent with the bad page size: only it is wrong. */
		fill_header(im.h, bad_page[i], 1, 16);
		EXPECT(&im, ORBIT_EBADSEG);
	}
	free(im.bytes);
}

/* Ring count 1..128. The rest of the header is consistent with the bad
 * count, so the count itself must be what is refused. */
static void case_ring_count(void)
{
	struct image im = image_new(130, 16); /* long enough for 129 rings */
	const uint32_t bad[] = {0, 129, 256, 1u << 16, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fill_header(im.h, PAGE, bad[i], 16);
		EXPECT(&im, ORBIT_EBADSEG);
	}
	fill_header(im.h, PAGE, 1, 16);
	EXPECT(&im, 0);
	fill_header(im.h, PAGE, 128, 16);
	EXPECT(&im, 0);
	free(im.bytes);
}

/* Slots per ring: a power of two from 16 to 2^24. */
static void case_slots_pow2(void)
{
	struct image im = image_new(1, 1024);
	const uint32_t bad[] = {0, 1, 3, 8, 15, 17, 24, 48, 100, 1000, 1023};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fill_header(im.h, PAGE, 1, bad[i]);
		EXPECT(&im, ORBIT_EBADSEG);
	}
	for (uint32_t s = 16; s <= 1024; s *= 2) {
		fill_header(im.h, PAGE, 1, s);
		EXPECT(&im, 0);
	}
	free(im.bytes);
}

/* Slot counts past the limit are refused as bad headers, even when the rest
 * of the header agrees with them and the mapping claims to be long enough
 * (mapped_len is only a number here: nothing past the image is read). */
static void case_slots_huge(void)
{
	struct image im = image_new(1, 16);
	struct orbit__seg_layout l;
	const uint32_t bad[] = {
	    ORBIT__SEG_MAX_SLOTS * 2u, 1u << 30, 1u << 31, UINT32_MAX, ORBIT__SEG_MAX_SLOTS + 1u,
	    ORBIT__SEG_MAX_SLOTS - 1u};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		fill_header(im.h, PAGE, 1, bad[i]);
		int err = orbit__segment_validate(im.bytes, SIZE_MAX, &l, NULL);
		if (err != ORBIT_EBADSEG) {
			fprintf(stderr, "slots %u: got %d, want ORBIT_EBADSEG\n", bad[i], err);
			exit(1);
		}
	}
	/* 2^24 is allowed, and then it is the file that is too short. */
	fill_header(im.h, PAGE, 1, ORBIT__SEG_MAX_SLOTS);
	EXPECT(&im, ORBIT_ETRUNC);
	free(im.bytes);
}

/* A consistent header whose layout does not fit in the file. */
static void case_layout_larger(void)
{
	struct image im = image_new(1, 64); /* rings of more than a page */
	struct orbit__seg_layout l;
	/* The largest layout there is: 128 rings of 2^24 slots (128 GiB). */
	fill_header(im.h, 65536, ORBIT_MAX_RINGS, ORBIT__SEG_MAX_SLOTS);
	EXPECT(&im, ORBIT_ETRUNC);
	uint64_t total = layout_total(65536, ORBIT_MAX_RINGS, ORBIT__SEG_MAX_SLOTS);
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, (size_t)total - 1, &l, NULL), ORBIT_ETRUNC);
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, (size_t)total, &l, NULL), 0);
	CHECK_EQ_U64(l.total_size, total);
	/* One ring too many for the bytes there are. */
	fill_header(im.h, PAGE, 2, 64);
	EXPECT(&im, ORBIT_ETRUNC);
	/* Twice the slots. */
	fill_header(im.h, PAGE, 1, 128);
	EXPECT(&im, ORBIT_ETRUNC);
	/* Bigger pages push the rings past the end. */
	fill_header(im.h, 8192, 1, 64);
	EXPECT(&im, ORBIT_ETRUNC);
	free(im.bytes);
}

/* Offsets and sizes that disagree with the dimensions. */
static void case_offsets(void)
{
	struct image im = image_new(2, 16);
	const uint64_t stride = ORBIT__RING_HEADER + 16ull * ORBIT__SLOT_SIZE;
	const uint64_t total = layout_total(PAGE, 2, 16);
	const uint64_t bad_control[] = {0, 64, PAGE - 1, PAGE + 1, 2ull * PAGE, UINT64_MAX};
	for (size_t i = 0; i < sizeof bad_control / sizeof bad_control[0]; i++) {
		fill_header(im.h, PAGE, 2, 16);
		im.h->control_offset = bad_control[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	/* Rings over the header or the control page, or past them. */
	const uint64_t bad_rings[] = {
	    0, PAGE, 2ull * PAGE - 8, 2ull * PAGE + 64, 3ull * PAGE, UINT64_MAX - PAGE};
	for (size_t i = 0; i < sizeof bad_rings / sizeof bad_rings[0]; i++) {
		fill_header(im.h, PAGE, 2, 16);
		im.h->rings_offset = bad_rings[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	/* Rings overlapping each other, or spread past the end. */
	const uint64_t bad_stride[] = {0, 64, stride - 64, stride + 64, 2 * stride, 1ull << 63};
	for (size_t i = 0; i < sizeof bad_stride / sizeof bad_stride[0]; i++) {
		fill_header(im.h, PAGE, 2, 16);
		im.h->ring_stride = bad_stride[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	/* total_size must be exactly the layout: shorter would let a reader
	 * trust a file smaller than its rings, longer is a lie about it. */
	const uint64_t bad_total[] = {0,         total - 1, total + 1, total - stride,
	                              2 * total, UINT64_MAX};
	for (size_t i = 0; i < sizeof bad_total / sizeof bad_total[0]; i++) {
		fill_header(im.h, PAGE, 2, 16);
		im.h->total_size = bad_total[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	fill_header(im.h, PAGE, 2, 16);
	EXPECT(&im, 0);
	free(im.bytes);
}

static void case_clock(void)
{
	struct image im = image_new(1, 16);
	const uint32_t bad[] = {ORBIT__CLOCK_CNTVCT + 1, 7, 255, 1u << 16, UINT32_MAX};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		im.h->clock_source = bad[i];
		EXPECT(&im, ORBIT_EBADSEG);
	}
	im.h->clock_source = ORBIT__CLOCK_TSC;
	EXPECT(&im, 0);
	free(im.bytes);
}

/* Version 2's areas: the state area, the log page rings, the flight ring.
 * Every offset must be the plan's, every dimension in range, and the
 * reader's one line names the field at fault. */
static void case_areas(void)
{
	struct orbit__seg_geometry g = {.page_size = PAGE,
	                                .ring_count = 2,
	                                .slots_per_ring = 64,
	                                .page_ring_count = 3,
	                                .page_ring_pages = 4,
	                                .page_ring_page_size = PAGE,
	                                .flight_size = 1u << 20};
	struct orbit__seg_layout want, l;
	CHECK_EQ_U64(orbit__segment_plan(&g, &want), 0);
	CHECK_EQ_U64(want.pages_offset % PAGE, 0);
	CHECK_EQ_U64(want.page_ring_stride, 5 * PAGE); /* 4 × (4096 + 64), rounded up */
	CHECK_EQ_U64(want.flight_offset, want.pages_offset + 3 * want.page_ring_stride);
	CHECK_EQ_U64(want.total_size, want.flight_offset + (1u << 20));
	struct image im;
	im.len = (size_t)want.total_size;
	im.bytes = aligned_alloc(64, im.len);
	CHECK(im.bytes != NULL);
	memset(im.bytes, 0, im.len);
	im.h = (struct orbit__seg_header *)im.bytes;
#define FILL()                                                                                     \
	do {                                                                                       \
		fill_header(im.h, PAGE, 2, 64);                                                    \
		im.h->pages_offset = want.pages_offset;                                            \
		im.h->page_ring_count = 3;                                                         \
		im.h->page_ring_pages = 4;                                                         \
		im.h->page_ring_page_size = PAGE;                                                  \
		im.h->page_ring_stride = want.page_ring_stride;                                    \
		im.h->flight_offset = want.flight_offset;                                          \
		im.h->flight_size = 1u << 20;                                                      \
		im.h->total_size = want.total_size;                                                \
	} while (0)
	FILL();
	EXPECT(&im, 0);
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, im.len, &l, NULL), 0);
	CHECK_EQ_U64(l.flight_offset, want.flight_offset);
	CHECK_EQ_U64(l.page_ring_stride, want.page_ring_stride);
	/* One field at a time, each refused with its own offset. */
	struct {
		size_t at, width;
		uint64_t value;
		int err;
	} bad[] = {
	    {offsetof(struct orbit__seg_header, state_offset), 8, 3 * PAGE, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, state_size), 8, PAGE, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, pages_offset), 8, 0, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_count), 4, 4097, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_pages), 4, 1, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_pages), 4, (1u << 20) + 1, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_page_size), 4, 2 * PAGE, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_page_size), 4, 100, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, page_ring_stride), 8, 0, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_offset), 8, 0, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_size), 8, (1u << 20) + 8, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_size), 8, 1u << 19, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_size), 8, 8ull << 30, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_size), 8, UINT64_MAX, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, flight_size), 8, 2u << 20, ORBIT_EBADSEG},
	    {offsetof(struct orbit__seg_header, total_size), 8, 0, ORBIT_EBADSEG},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		FILL();
		memcpy(im.bytes + bad[i].at, &bad[i].value, bad[i].width);
		struct orbit__seg_problem why;
		memset(&why, 0, sizeof why);
		int err = orbit__segment_validate(im.bytes, im.len, &l, &why);
		if (err != bad[i].err || why.what[0] == '\0') {
			fprintf(stderr, "field at %zu = %llu: got %d (%s), want %d\n", bad[i].at,
			        (unsigned long long)bad[i].value, err, why.what, bad[i].err);
			exit(1);
		}
		/* The line names a field of the header (or the end of the file). */
		CHECK(why.offset < sizeof(struct orbit__seg_header) || why.offset == im.len);
	}
	/* A flight ring past the file's end: the file is too short. */
	FILL();
	struct orbit__seg_problem why;
	CHECK_EQ_U64(orbit__segment_validate(im.bytes, im.len - 1, &l, &why),
	             (uint64_t)(int64_t)ORBIT_ETRUNC);
	CHECK_EQ_U64(why.offset, im.len - 1);
#undef FILL
	free(im.bytes);
}

/* ---- real shm objects --------------------------------------------------- */

static char shm_name[64];

static void shm_cleanup(void)
{
	if (shm_name[0])
		shm_unlink(shm_name);
}

/* A shm object holding im's first len bytes, file length file_len. */
static void shm_write(const struct image *im, size_t len, off_t file_len)
{
	shm_unlink(shm_name);
	int fd = shm_open(shm_name, O_CREAT | O_EXCL | O_RDWR, 0600);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)len) == 0);
	if (len > 0)
		CHECK(pwrite(fd, im->bytes, len, 0) == (ssize_t)len);
	CHECK(ftruncate(fd, file_len) == 0);
	close(fd);
}

static int open_err(void)
{
	struct orbit__segment seg;
	int err = orbit__segment_open(shm_name, &seg);
	if (err == 0)
		orbit__segment_close(&seg);
	return err;
}

/* orbit__segment_open on shm objects cut short with ftruncate. */
static void case_open_truncated(void)
{
	snprintf(shm_name, sizeof shm_name, "/orbit-test-hostile-%d", (int)getpid());
	atexit(shm_cleanup);
	struct image im = image_new(2, 16);
	const off_t total = (off_t)im.len;

	CHECK_EQ_U64(open_err(), (uint64_t)(int64_t)-ENOENT);
	shm_write(&im, im.len, total);
	struct orbit__segment seg;
	CHECK_EQ_U64(orbit__segment_open(shm_name, &seg), 0);
	check_layout(&seg.layout, PAGE, 2, 16, (uint32_t)getpid(), ORBIT__CLOCK_MONOTONIC);
	CHECK_EQ_U64(seg.size, (uint64_t)total);
	CHECK(seg.owner == 0);
	CHECK(seg.control != NULL);
	orbit__segment_close(&seg);
	CHECK(seg.base == NULL);

	const off_t cuts[] = {0,
	                      8,
	                      100,
	                      (off_t)sizeof(struct orbit__seg_header) - 1,
	                      (off_t)sizeof(struct orbit__seg_header),
	                      PAGE,
	                      2 * PAGE,
	                      total - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
		size_t keep = (size_t)cuts[i] < im.len ? (size_t)cuts[i] : im.len;
		shm_write(&im, keep, cuts[i]);
		int err = open_err();
		if (err != ORBIT_ETRUNC) {
			fprintf(stderr, "file of %lld bytes: got %d (%s), want ORBIT_ETRUNC\n",
			        (long long)cuts[i], err, orbit_strerror(err));
			exit(1);
		}
	}
	/* Written, cut, then grown back with zeros: the layout no longer fits
	 * the bytes it had, but the file is long enough again. */
	shm_write(&im, 2 * PAGE, total);
	CHECK_EQ_U64(open_err(), 0);

	/* Created by the writer but magic not stored yet. */
	atomic_store_explicit(&im.h->magic, 0, memory_order_relaxed);
	shm_write(&im, im.len, total);
	CHECK_EQ_U64(open_err(), (uint64_t)(int64_t)ORBIT_ENOTINIT);
	fill_header(im.h, PAGE, 2, 16);
	im.h->version = 99;
	shm_write(&im, im.len, total);
	CHECK_EQ_U64(open_err(), (uint64_t)(int64_t)ORBIT_EVERSION);
	fill_header(im.h, PAGE, 0, 16);
	shm_write(&im, im.len, total);
	CHECK_EQ_U64(open_err(), (uint64_t)(int64_t)ORBIT_EBADSEG);

	/* A segment made by orbit__segment_create, cut by someone else. */
	struct orbit__seg_params p = {
	    .ring_count = 2, .slots_per_ring = 16, .clock_source = ORBIT__CLOCK_MONOTONIC};
	struct orbit__segment own;
	CHECK_EQ_U64(orbit__segment_create(&p, &own), 0);
	CHECK_EQ_U64(orbit__segment_open(own.name, &seg), 0);
	CHECK(layout_eq(&seg.layout, &own.layout));
	orbit__segment_close(&seg);
	int fd = shm_open(own.name, O_RDWR, 0);
	CHECK(fd >= 0);
	CHECK(ftruncate(fd, (off_t)own.size - 1) == 0);
	close(fd);
	CHECK_EQ_U64(orbit__segment_open(own.name, &seg), (uint64_t)(int64_t)ORBIT_ETRUNC);
	orbit__segment_unlink(&own);
	/* own's mapping now reaches past the end of the file: do not touch it. */
	munmap(own.base, own.size);
	free(im.bytes);
}

/* A reader maps the rings read-only and only the control page writable. */
static void case_readonly(void)
{
	struct orbit__seg_params p = {
	    .ring_count = 2, .slots_per_ring = 16, .clock_source = ORBIT__CLOCK_MONOTONIC};
	struct orbit__segment own, rd;
	CHECK_EQ_U64(orbit__segment_create(&p, &own), 0);
	CHECK_EQ_U64(orbit__segment_open(own.name, &rd), 0);
	orbit__segment_unlink(&own);

	/* The control page is shared and writable. */
	atomic_store_explicit(&rd.control->capture, 1, memory_order_relaxed);
	CHECK_EQ_U64(atomic_load_explicit(&own.control->capture, memory_order_relaxed), 1);

	/* Writes through the reader's mapping of the header or a ring fault. */
	uint8_t *targets[] = {rd.base, (uint8_t *)orbit__segment_ring(&rd, 0),
	                      (uint8_t *)&orbit__segment_ring(&rd, 1)->slots[15]};
	for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
		pid_t pid = fork();
		CHECK(pid >= 0);
		if (pid == 0) {
			/* The kernel's verdict, not a sanitizer's handler. */
			signal(SIGSEGV, SIG_DFL);
			signal(SIGBUS, SIG_DFL);
			*(volatile uint8_t *)targets[i] = 0x5a;
			_exit(0);
		}
		int st;
		CHECK(waitpid(pid, &st, 0) == pid);
		if (!WIFSIGNALED(st) || (WTERMSIG(st) != SIGSEGV && WTERMSIG(st) != SIGBUS)) {
			fprintf(stderr, "write to reader mapping %zu did not fault (status %d)\n",
			        i, st);
			exit(1);
		}
	}
	/* Nothing reached the writer's copy. */
	CHECK_EQ_U64(
	    atomic_load_explicit(&orbit__segment_ring(&own, 0)->cursor, memory_order_relaxed), 0);
	const struct orbit__seg_header *h = (const struct orbit__seg_header *)own.base;
	CHECK_EQ_U64(atomic_load_explicit(&h->magic, memory_order_relaxed), ORBIT__SEG_MAGIC);
	CHECK_EQ_U64(atomic_load_explicit(&orbit__segment_ring(&own, 1)->slots[15].meta,
	                                  memory_order_relaxed),
	             0);
	orbit__segment_close(&rd);
	orbit__segment_close(&own);
}

/* Every Orbit error code has its own, non-empty message. */
static void case_strerror(void)
{
	const int codes[] = {ORBIT_EBADSEG, ORBIT_ENOTINIT, ORBIT_EVERSION, ORBIT_ETRUNC,
	                     ORBIT_EDISABLED};
	const size_t n = sizeof codes / sizeof codes[0];
	/* orbit_strerror() of an errno value is strerror()'s text, whose
	 * buffer the next call may reuse: keep a copy. */
	char unknown[256];
	snprintf(unknown, sizeof unknown, "%s", orbit_strerror(-999999));
	for (size_t i = 0; i < n; i++) {
		const char *m = orbit_strerror(codes[i]);
		CHECK(m != NULL);
		CHECK(m[0] != '\0');
		CHECK(strcmp(m, orbit_strerror(0)) != 0);
		CHECK(strcmp(m, unknown) != 0);
		for (size_t j = 0; j < i; j++)
			CHECK(strcmp(m, orbit_strerror(codes[j])) != 0);
		/* Not an errno's text either. */
		CHECK(strcmp(m, strerror(-codes[i])) != 0);
	}
	/* Negative errno values read as the system's message. */
	CHECK(strcmp(orbit_strerror(-ENOENT), strerror(ENOENT)) == 0);
	CHECK(strcmp(orbit_strerror(-EINVAL), strerror(EINVAL)) == 0);
}

static const struct test_case cases[] = {
    {"valid", case_valid},           {"truncated", case_truncated},
    {"magic_zero", case_magic_zero}, {"magic_wrong", case_magic_wrong},
    {"version", case_version},       {"sizes", case_sizes},
    {"ring_count", case_ring_count}, {"slots_pow2", case_slots_pow2},
    {"slots_huge", case_slots_huge}, {"layout_larger", case_layout_larger},
    {"offsets", case_offsets},       {"clock", case_clock},
    {"areas", case_areas},           {"open_truncated", case_open_truncated},
    {"readonly", case_readonly},     {"strerror", case_strerror},
};

TEST_MAIN(cases)
