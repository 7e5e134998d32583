/* sched_decode.c — replay_sched_decode.c on real kernel pages (data/sched,
 * see data/README.md) and on hostile formats and pages.
 *
 *   kernel         every record of the stored pages, decoded by us and by
 *                  libtraceevent (sched_tep_compare.h): same events, fields
 *                  and print text; the flagged page's lost count
 *   no_header      no header_page: -ENOENT
 *   no_switch      no sched_switch format: -ENOENT
 *   garbage        formats libtraceevent rejects: -EINVAL, and the decoder
 *                  still works with the good ones
 *   too_big        a format over the limit: -E2BIG
 *   too_many       formats past ORBIT__RP_SCHED_MAX_FORMATS: -ENOSPC
 *   field_size     a number field of 3 bytes: sched_switch refused
 *                  (-EPROTO); in an optional event, that event only dropped
 *   field_outside  fields past the end of the record: records skipped and
 *                  counted, never read
 *   data_loc       __data_loc strings pointing outside the record: empty
 *   not_ready      pages before ready: -EINVAL
 *   header_32      a 32-bit page header: -EPROTO
 *   cut_page       a page cut short: the events before the cut, then the
 *                  page parser's error
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "replay_sched.h"
#include "unit/sched_tep_compare.h"

#define DATA ORBIT_TEST_DATA "/sched"

struct blob {
	char *bytes;
	size_t len;
};

static struct blob load(const char *name)
{
	char path[512];
	struct blob b;

	snprintf(path, sizeof path, "%s/%s", DATA, name);
	b.bytes = test_read_file(path, &b.len);
	return b;
}

static const char *const FORMAT_FILES[][2] = {
    {"sched", "sched.sched_switch.format"},       {"sched", "sched.sched_waking.format"},
    {"sched", "sched.sched_wakeup_new.format"},   {"sched", "sched.sched_process_fork.format"},
    {"sched", "sched.sched_process_exit.format"}, {"task", "task.task_rename.format"},
};
#define NFORMATS 6

static struct blob formats[NFORMATS], header;

static void load_formats(void)
{
	header = load("header_page");
	for (int i = 0; i < NFORMATS; i++)
		formats[i] = load(FORMAT_FILES[i][1]);
}

/* A decoder with the header and the formats, format `replace` (if >= 0)
 * swapped for text. */
static struct orbit__rp_sched_decoder *decoder(int replace, const char *text)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();

	CHECK(d != NULL);
	CHECK(orbit__rp_sched_header_page(d, header.bytes, header.len) == 0);
	for (int i = 0; i < NFORMATS; i++) {
		const char *t = i == replace ? text : formats[i].bytes;

		if (t != NULL)
			CHECK(orbit__rp_sched_format(d, FORMAT_FILES[i][0], t,
			                             i == replace ? strlen(t) : formats[i].len) ==
			      0);
	}
	return d;
}

/* The text of format i with `from` replaced by `to` (first occurrence). */
static char *edit(int i, const char *from, const char *to)
{
	const char *at = strstr(formats[i].bytes, from);
	char *out;

	CHECK(at != NULL);
	out = malloc(formats[i].len + strlen(to) + 1);
	CHECK(out != NULL);
	memcpy(out, formats[i].bytes, (size_t)(at - formats[i].bytes));
	strcpy(out + (at - formats[i].bytes), to);
	strcat(out, at + strlen(from));
	return out;
}

struct count {
	int n, kinds[ORBIT__RP_SCHED_KINDS];
	struct orbit__rp_sched_event last;
	int empty_child_comm;
};

static int count_cb(void *ctx, const struct orbit__rp_sched_event *e)
{
	struct count *c = ctx;

	c->n++;
	c->kinds[e->kind]++;
	c->last = *e;
	if (e->kind == ORBIT__RP_SCHED_FORK && e->u.fork.child_comm[0] == '\0')
		c->empty_child_comm++;
	return 0;
}

/* Decodes every stored page with d; returns the totals. */
static struct count decode_stored(struct orbit__rp_sched_decoder *d, uint64_t *short_records)
{
	static const char *const files[][2] = {
	    {"0", "cpu0.pages"}, {"1", "cpu1.pages"}, {"1", "lost.cpu1.pages"}};
	struct count c;

	memset(&c, 0, sizeof c);
	*short_records = 0;
	for (int f = 0; f < 3; f++) {
		struct blob b = load(files[f][1]);

		for (size_t off = 0; off + 4096 <= b.len; off += 4096) {
			struct orbit__rp_sched_page info;

			CHECK(orbit__rp_sched_decode_page(d, (uint32_t)atoi(files[f][0]),
			                                  (const uint8_t *)b.bytes + off, 4096,
			                                  count_cb, &c, &info) >= 0);
			*short_records += info.short_records;
		}
		free(b.bytes);
	}
	return c;
}

static void case_kernel(void)
{
	static const char *const files[][2] = {
	    {"0", "cpu0.pages"}, {"1", "cpu1.pages"}, {"1", "lost.cpu1.pages"}};
	struct cmp_format fm[NFORMATS];
	struct cmp_page pages[64];
	struct blob b[3];
	struct cmp_result res;
	size_t n = 0;

	for (int i = 0; i < NFORMATS; i++)
		fm[i] = (struct cmp_format){FORMAT_FILES[i][0], formats[i].bytes, formats[i].len};
	for (int f = 0; f < 3; f++) {
		b[f] = load(files[f][1]);
		for (size_t off = 0; off + 4096 <= b[f].len; off += 4096) {
			CHECK(n < 64);
			pages[n++] = (struct cmp_page){(uint32_t)atoi(files[f][0]),
			                               (const uint8_t *)b[f].bytes + off, 4096};
		}
	}
	sched_compare(header.bytes, header.len, fm, NFORMATS, pages, n, &res);
	printf("%llu records on %zu stored pages: %llu events agree with libtraceevent (%llu as "
	       "printed text), %llu flagged page\n",
	       (unsigned long long)res.records, n, (unsigned long long)res.events,
	       (unsigned long long)res.printed, (unsigned long long)res.flagged_pages);
	for (int k = 1; k < ORBIT__RP_SCHED_KINDS; k++)
		CHECK(res.by_kind[k] > 0);
	CHECK_EQ_U64(res.flagged_pages, 1);
	CHECK_EQ_U64(res.records, res.events); /* the instance records only these */
	for (int f = 0; f < 3; f++)
		free(b[f].bytes);
}

static void case_no_header(void)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();

	for (int i = 0; i < NFORMATS; i++)
		CHECK(orbit__rp_sched_format(d, FORMAT_FILES[i][0], formats[i].bytes,
		                             formats[i].len) == 0);
	CHECK(orbit__rp_sched_ready(d) == -ENOENT);
	CHECK(orbit__rp_sched_header_page(d, "", 0) == -EINVAL);
	CHECK(orbit__rp_sched_header_page(d, "nonsense", 8) == 0 || orbit__rp_sched_ready(d) < 0);
	orbit__rp_sched_decoder_free(d);
}

static void case_no_switch(void)
{
	struct orbit__rp_sched_decoder *d = decoder(0, NULL);

	CHECK(orbit__rp_sched_ready(d) == -ENOENT);
	orbit__rp_sched_decoder_free(d);
}

static void case_garbage(void)
{
	static const char *const bad[] = {
	    "",
	    "name: x\n",
	    "name: sched_switch\nID: 99999999999999999999\nformat:\n",
	    "name: y\nID: 7\nformat:\n\tfield:int a;\toffset:-5;\tsize:-1;\tsigned:1;\n",
	    "\xff\xfe\x00\x01garbage",
	    "name: z\nID: 8\nformat:\n\tfield:char "
	    "s[100000000];\toffset:0;\tsize:100000000;\tsigned:0;"
	    "\n\nprint fmt: \"%s\", REC->s\n",
	};
	struct orbit__rp_sched_decoder *d = decoder(-1, NULL);
	uint64_t shorts;
	struct count c;

	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		int r = orbit__rp_sched_format(d, "sched", bad[i], i == 4 ? 11 : strlen(bad[i]));

		printf("garbage %zu: %d\n", i, r);
		CHECK(r == 0 || r == -EINVAL);
	}
	CHECK(orbit__rp_sched_ready(d) == 0);
	c = decode_stored(d, &shorts);
	CHECK(c.kinds[ORBIT__RP_SCHED_SWITCH] > 0);
	orbit__rp_sched_decoder_free(d);
}

static void case_too_big(void)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	size_t n = ORBIT__RP_SCHED_MAX_TEXT + 1;
	char *big = calloc(1, n);

	CHECK(big != NULL);
	CHECK(orbit__rp_sched_format(d, "sched", big, n) == -E2BIG);
	CHECK(orbit__rp_sched_header_page(d, big, n) == -E2BIG);
	free(big);
	orbit__rp_sched_decoder_free(d);
}

static void case_too_many(void)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	char text[256];
	int r = 0;
	unsigned i;

	for (i = 0; i <= ORBIT__RP_SCHED_MAX_FORMATS && r == 0; i++) {
		snprintf(
		    text, sizeof text,
		    "name: e%u\nID: %u\nformat:\n\tfield:unsigned short common_type;\toffset:0;"
		    "\tsize:2;\tsigned:0;\n\nprint fmt: \"x\"\n",
		    i, 1000 + i);
		r = orbit__rp_sched_format(d, "many", text, strlen(text));
	}
	CHECK(r == -ENOSPC);
	CHECK_EQ_U64(i, ORBIT__RP_SCHED_MAX_FORMATS + 1);
	orbit__rp_sched_decoder_free(d);
}

static void case_field_size(void)
{
	char *sw = edit(0, "field:pid_t prev_pid;\toffset:24;\tsize:4;",
	                "field:pid_t prev_pid;\toffset:24;\tsize:3;");
	char *wk = edit(1, "field:pid_t pid;\toffset:24;\tsize:4;",
	                "field:pid_t pid;\toffset:24;\tsize:3;");
	struct orbit__rp_sched_decoder *d = decoder(0, sw);
	uint64_t shorts;
	struct count c;

	CHECK(orbit__rp_sched_ready(d) == -EPROTO);
	orbit__rp_sched_decoder_free(d);
	d = decoder(1, wk);
	CHECK(orbit__rp_sched_ready(d) == 0);
	CHECK(!orbit__rp_sched_decodes(d, ORBIT__RP_SCHED_WAKING));
	CHECK(orbit__rp_sched_decodes(d, ORBIT__RP_SCHED_SWITCH));
	c = decode_stored(d, &shorts);
	CHECK(c.kinds[ORBIT__RP_SCHED_WAKING] == 0 && c.kinds[ORBIT__RP_SCHED_SWITCH] > 0);
	orbit__rp_sched_decoder_free(d);
	free(sw);
	free(wk);
}

static void case_field_outside(void)
{
	/* next_pid far past the 64-byte record: required, so every switch is
	 * skipped as short; a far optional field just reads as 0. */
	char *sw =
	    edit(0, "field:pid_t next_pid;\toffset:56;", "field:pid_t next_pid;\toffset:4000;");
	char *ex = edit(4, "field:int prio;\toffset:28;", "field:int prio;\toffset:60000;");
	struct orbit__rp_sched_decoder *d = decoder(0, sw);
	uint64_t shorts;
	struct count c;

	CHECK(orbit__rp_sched_ready(d) == 0);
	c = decode_stored(d, &shorts);
	printf("%llu short records\n", (unsigned long long)shorts);
	CHECK(c.kinds[ORBIT__RP_SCHED_SWITCH] == 0 && shorts > 0);
	CHECK(c.kinds[ORBIT__RP_SCHED_WAKING] > 0);
	orbit__rp_sched_decoder_free(d);
	d = decoder(4, ex);
	CHECK(orbit__rp_sched_ready(d) == 0);
	c = decode_stored(d, &shorts);
	CHECK(c.kinds[ORBIT__RP_SCHED_EXIT] > 0 && shorts == 0);
	orbit__rp_sched_decoder_free(d);
	free(sw);
	free(ex);
}

static void case_data_loc(void)
{
	/* child_comm's __data_loc word read from child_pid (offset 20): a pid
	 * as offset | length << 16 points past the 40-byte record, so the
	 * string comes out empty, never read from outside. */
	char *fk = edit(3, "field:__data_loc char[] child_comm;\toffset:16;",
	                "field:__data_loc char[] child_comm;\toffset:20;");
	struct orbit__rp_sched_decoder *d = decoder(3, fk);
	uint64_t shorts;
	struct count c;

	CHECK(orbit__rp_sched_ready(d) == 0);
	c = decode_stored(d, &shorts);
	printf("%d forks, %d with an empty child_comm\n", c.kinds[ORBIT__RP_SCHED_FORK],
	       c.empty_child_comm);
	CHECK(c.kinds[ORBIT__RP_SCHED_FORK] > 0);
	CHECK(c.empty_child_comm == c.kinds[ORBIT__RP_SCHED_FORK]);
	orbit__rp_sched_decoder_free(d);
	free(fk);
}

static void case_not_ready(void)
{
	struct orbit__rp_sched_decoder *d = decoder(-1, NULL);
	struct blob b = load("cpu0.pages");
	struct count c;

	memset(&c, 0, sizeof c);
	CHECK(orbit__rp_sched_decode_page(d, 0, (const uint8_t *)b.bytes, 4096, count_cb, &c,
	                                  NULL) == -EINVAL);
	CHECK(c.n == 0);
	free(b.bytes);
	orbit__rp_sched_decoder_free(d);
}

static void case_header_32(void)
{
	static const char h32[] = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
	                          "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
	                          "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
	                          "\tfield: char data;\toffset:12;\tsize:4084;\tsigned:0;\n";
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();

	CHECK(orbit__rp_sched_header_page(d, h32, strlen(h32)) == 0);
	for (int i = 0; i < NFORMATS; i++)
		CHECK(orbit__rp_sched_format(d, FORMAT_FILES[i][0], formats[i].bytes,
		                             formats[i].len) == 0);
	CHECK(orbit__rp_sched_ready(d) == -EPROTO);
	orbit__rp_sched_decoder_free(d);
}

static void case_cut_page(void)
{
	struct orbit__rp_sched_decoder *d = decoder(-1, NULL);
	struct blob b = load("cpu0.pages");
	struct orbit__rp_sched_page info;
	struct count c, whole;
	int r;

	CHECK(orbit__rp_sched_ready(d) == 0);
	memset(&whole, 0, sizeof whole);
	CHECK(orbit__rp_sched_decode_page(d, 0, (const uint8_t *)b.bytes, 4096, count_cb, &whole,
	                                  &info) > 2);
	for (size_t cut = 0; cut <= 4096; cut += 7) {
		memset(&c, 0, sizeof c);
		r = orbit__rp_sched_decode_page(d, 0, (const uint8_t *)b.bytes, cut, count_cb, &c,
		                                &info);
		CHECK(r < 0 ? orbit__ftrace_strerror(r) != NULL && info.err == r : r == c.n);
		CHECK(c.n <= whole.n);
	}
	free(b.bytes);
	orbit__rp_sched_decoder_free(d);
}

static const struct test_case cases[] = {
    {"kernel", case_kernel},         {"no_header", case_no_header},
    {"no_switch", case_no_switch},   {"garbage", case_garbage},
    {"too_big", case_too_big},       {"too_many", case_too_many},
    {"field_size", case_field_size}, {"field_outside", case_field_outside},
    {"data_loc", case_data_loc},     {"not_ready", case_not_ready},
    {"header_32", case_header_32},   {"cut_page", case_cut_page},
};

TEST_MAIN_WITH(cases, .begin = load_formats)
