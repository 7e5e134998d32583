/* sched_tep_compare.h — the interop check of the kernel-sched decoder: the
 * same pages decoded by replay_sched_decode.c and, independently, by
 * libtraceevent itself (a tep handle of the test's own, kbuffer to walk the
 * pages, tep_get_field_val / tep_get_field_raw for every field, and
 * tep_print_event's text against ours for the events whose print format we
 * reproduce). Also checks the page parser (format/ftrace_page.c, behind
 * --pages) against kbuffer on every record: time, offset, length.
 * Used by sched_decode (stored pages) and sched_record (live pages). */
#ifndef ORBIT_TEST_SCHED_TEP_COMPARE_H
#define ORBIT_TEST_SCHED_TEP_COMPARE_H

#include <event-parse.h>
#include <kbuffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <trace-seq.h>

#include "check.h"
#include "ftrace_page.h"
#include "replay_sched.h"

struct cmp_format {
	const char *system;
	const char *text;
	size_t len;
};

struct cmp_page {
	uint32_t cpu;
	const uint8_t *bytes;
	size_t len;
};

struct cmp_result {
	uint64_t records; /* data records on the pages */
	uint64_t events;  /* of them, events compared */
	uint64_t by_kind[ORBIT__RP_SCHED_KINDS];
	uint64_t printed; /* compared as tep_print_event text too */
	uint64_t flagged_pages;
};

#define CMP_MAX_EVENTS 4096

struct cmp_collect {
	struct orbit__rp_sched_event ev[CMP_MAX_EVENTS];
	int n;
};

static int cmp_collect_cb(void *ctx, const struct orbit__rp_sched_event *ev)
{
	struct cmp_collect *c = ctx;

	CHECK(c->n < CMP_MAX_EVENTS);
	c->ev[c->n++] = *ev;
	return 0;
}

/* The kernel's prev_state text, as sched_switch's print fmt gives it. */
static void cmp_state_text(int64_t state, char *out, size_t n)
{
	static const char letters[] = "SDTtXZPI";
	size_t len = 0;

	out[0] = '\0';
	if ((state & 0xff) == 0) {
		len += (size_t)snprintf(out + len, n - len, "R");
	} else {
		for (int b = 0; b < 8; b++)
			if (state & (1 << b))
				len += (size_t)snprintf(out + len, n - len, "%s%c", len ? "|" : "",
				                        letters[b]);
	}
	if (state & 0x100)
		snprintf(out + len, n - len, "+");
}

static char *cmp_copy(const char *text, size_t len)
{
	char *c = malloc(len + 1);

	CHECK(c != NULL);
	memcpy(c, text, len);
	c[len] = '\0';
	return c;
}

static void cmp_num(struct tep_event *tev, struct tep_record *rec, const char *name, int64_t ours,
                    int size)
{
	unsigned long long v;
	int64_t theirs;

	if (tep_find_field(tev, name) == NULL)
		return;
	CHECK(tep_get_field_val(NULL, tev, name, rec, &v, 0) == 0);
	theirs = size == 4 ? (int64_t)(int32_t)v : (int64_t)v;
	if (theirs != ours) {
		fprintf(stderr, "%s: field %s: libtraceevent %lld, ours %lld\n", tev->name, name,
		        (long long)theirs, (long long)ours);
		exit(1);
	}
}

static void cmp_str(struct tep_event *tev, struct tep_record *rec, const char *name,
                    const char *ours)
{
	int len = 0;
	const char *raw;
	char theirs[ORBIT__RP_SCHED_COMM];
	int i;

	if (tep_find_field(tev, name) == NULL)
		return;
	raw = tep_get_field_raw(NULL, tev, name, rec, &len, 0);
	CHECK(raw != NULL);
	for (i = 0; i < len && i < ORBIT__RP_SCHED_COMM - 1 && raw[i] != '\0'; i++)
		theirs[i] = raw[i];
	theirs[i] = '\0';
	if (strcmp(theirs, ours) != 0) {
		fprintf(stderr, "%s: field %s: libtraceevent \"%s\", ours \"%s\"\n", tev->name,
		        name, theirs, ours);
		exit(1);
	}
}

/* Our event in the kernel's print format, for the kinds we reproduce;
 * 0 if we do not. */
static int cmp_print_ours(const struct orbit__rp_sched_event *e, char *out, size_t n)
{
	char st[64];

	switch (e->kind) {
	case ORBIT__RP_SCHED_SWITCH:
		cmp_state_text(e->u.sw.prev_state, st, sizeof st);
		snprintf(out, n,
		         "prev_comm=%s prev_pid=%d prev_prio=%d prev_state=%s ==> next_comm=%s "
		         "next_pid=%d next_prio=%d",
		         e->u.sw.prev_comm, e->u.sw.prev_pid, e->u.sw.prev_prio, st,
		         e->u.sw.next_comm, e->u.sw.next_pid, e->u.sw.next_prio);
		return 1;
	case ORBIT__RP_SCHED_WAKING:
	case ORBIT__RP_SCHED_WAKEUP_NEW:
		snprintf(out, n, "comm=%s pid=%d prio=%d target_cpu=%03d", e->u.wake.comm,
		         e->u.wake.pid, e->u.wake.prio, e->u.wake.target_cpu);
		return 1;
	case ORBIT__RP_SCHED_FORK:
		snprintf(out, n, "comm=%s pid=%d child_comm=%s child_pid=%d", e->u.fork.parent_comm,
		         e->u.fork.parent_pid, e->u.fork.child_comm, e->u.fork.child_pid);
		return 1;
	default:
		return 0;
	}
}

static const char *const CMP_NAMES[ORBIT__RP_SCHED_KINDS] = {
    [ORBIT__RP_SCHED_SWITCH] = "sched_switch",
    [ORBIT__RP_SCHED_WAKING] = "sched_waking",
    [ORBIT__RP_SCHED_WAKEUP_NEW] = "sched_wakeup_new",
    [ORBIT__RP_SCHED_FORK] = "sched_process_fork",
    [ORBIT__RP_SCHED_EXIT] = "sched_process_exit",
    [ORBIT__RP_SCHED_RENAME] = "task_rename",
};

static void cmp_event(struct tep_handle *tep, struct tep_event *tev, struct tep_record *rec,
                      const struct orbit__rp_sched_event *e, struct cmp_result *res)
{
	char ours[512];
	struct trace_seq s;

	CHECK(strcmp(CMP_NAMES[e->kind], tev->name) == 0);
	CHECK_EQ_U64(e->type, (uint64_t)tev->id);
	cmp_num(tev, rec, "common_pid", e->common_pid, 4);
	switch (e->kind) {
	case ORBIT__RP_SCHED_SWITCH:
		cmp_num(tev, rec, "prev_pid", e->u.sw.prev_pid, 4);
		cmp_num(tev, rec, "prev_prio", e->u.sw.prev_prio, 4);
		cmp_num(tev, rec, "prev_state", e->u.sw.prev_state, 8);
		cmp_num(tev, rec, "next_pid", e->u.sw.next_pid, 4);
		cmp_num(tev, rec, "next_prio", e->u.sw.next_prio, 4);
		cmp_str(tev, rec, "prev_comm", e->u.sw.prev_comm);
		cmp_str(tev, rec, "next_comm", e->u.sw.next_comm);
		break;
	case ORBIT__RP_SCHED_WAKING:
	case ORBIT__RP_SCHED_WAKEUP_NEW:
		cmp_num(tev, rec, "pid", e->u.wake.pid, 4);
		cmp_num(tev, rec, "prio", e->u.wake.prio, 4);
		cmp_num(tev, rec, "target_cpu", e->u.wake.target_cpu, 4);
		cmp_str(tev, rec, "comm", e->u.wake.comm);
		break;
	case ORBIT__RP_SCHED_FORK:
		cmp_num(tev, rec, "parent_pid", e->u.fork.parent_pid, 4);
		cmp_num(tev, rec, "child_pid", e->u.fork.child_pid, 4);
		cmp_str(tev, rec, "parent_comm", e->u.fork.parent_comm);
		cmp_str(tev, rec, "child_comm", e->u.fork.child_comm);
		break;
	case ORBIT__RP_SCHED_EXIT:
		cmp_num(tev, rec, "pid", e->u.exit.pid, 4);
		cmp_num(tev, rec, "prio", e->u.exit.prio, 4);
		cmp_str(tev, rec, "comm", e->u.exit.comm);
		break;
	case ORBIT__RP_SCHED_RENAME:
		cmp_num(tev, rec, "pid", e->u.rename.pid, 4);
		cmp_str(tev, rec, "oldcomm", e->u.rename.oldcomm);
		cmp_str(tev, rec, "newcomm", e->u.rename.newcomm);
		break;
	}
	if (cmp_print_ours(e, ours, sizeof ours)) {
		trace_seq_init(&s);
		tep_print_event(tep, &s, rec, "%s", TEP_PRINT_INFO);
		trace_seq_terminate(&s);
		if (strcmp(s.buffer, ours) != 0) {
			fprintf(
			    stderr,
			    "print differs at %llu:\n  libtraceevent: %s\n  ours:          %s\n",
			    (unsigned long long)e->time, s.buffer, ours);
			exit(1);
		}
		trace_seq_destroy(&s);
		res->printed++;
	}
}

/* Compares every page; fails (exit 1) at the first difference. */
static void sched_compare(const char *header_page, size_t hp_len, const struct cmp_format *f,
                          int nf, const struct cmp_page *pages, size_t np, struct cmp_result *res)
{
	struct orbit__rp_sched_decoder *d = orbit__rp_sched_decoder_new();
	struct tep_handle *tep = tep_alloc();
	struct kbuffer *kb = kbuffer_alloc(KBUFFER_LSIZE_8, KBUFFER_ENDIAN_LITTLE);
	static struct cmp_collect got;
	char *c;

	memset(res, 0, sizeof *res);
	CHECK(d != NULL && tep != NULL && kb != NULL);
	tep_set_file_bigendian(tep, TEP_LITTLE_ENDIAN);
	tep_set_long_size(tep, 8);
	c = cmp_copy(header_page, hp_len);
	CHECK(tep_parse_header_page(tep, c, hp_len, 8) == 0);
	free(c);
	CHECK(orbit__rp_sched_header_page(d, header_page, hp_len) == 0);
	for (int i = 0; i < nf; i++) {
		c = cmp_copy(f[i].text, f[i].len);
		CHECK(tep_parse_event(tep, c, f[i].len, f[i].system) == 0);
		free(c);
		CHECK(orbit__rp_sched_format(d, f[i].system, f[i].text, f[i].len) == 0);
	}
	CHECK(orbit__rp_sched_ready(d) == 0);
	for (size_t p = 0; p < np; p++) {
		struct orbit__ftrace_iter it;
		struct orbit__ftrace_header h;
		struct orbit__ftrace_record r;
		struct orbit__rp_sched_page info;
		unsigned long long ts;
		uint8_t *copy = malloc(pages[p].len);
		void *data;
		int j = 0, n;

		CHECK(copy != NULL);
		memcpy(copy, pages[p].bytes, pages[p].len);
		got.n = 0;
		n = orbit__rp_sched_decode_page(d, pages[p].cpu, copy, pages[p].len, cmp_collect_cb,
		                                &got, &info);
		CHECK(n >= 0);
		CHECK(info.err == 0);
		CHECK_EQ_U64(info.short_records, 0);
		res->flagged_pages += info.missed;
		CHECK(orbit__ftrace_open(&it, copy, pages[p].len, &h) == 0);
		CHECK(kbuffer_load_subbuffer(kb, copy) == 0);
		CHECK_EQ_U64(kbuffer_subbuffer_size(kb), h.size);
		data = kbuffer_read_event(kb, &ts);
		if (h.missed)
			CHECK(kbuffer_missed_events(kb) ==
			      (h.missed_stored ? (int)h.missed_count : -1));
		else
			CHECK(kbuffer_missed_events(kb) == 0);
		while (orbit__ftrace_next(&it, &r) == 1) {
			struct tep_record rec;
			struct tep_event *tev;

			/* The page parser, record for record, as kbuffer reads it. */
			CHECK(data != NULL);
			CHECK_EQ_U64(r.time, ts);
			CHECK_EQ_U64(r.offset, kbuffer_curr_offset(kb));
			CHECK_EQ_U64(r.len, kbuffer_event_size(kb));
			CHECK((const uint8_t *)data == r.data);
			res->records++;
			memset(&rec, 0, sizeof rec);
			rec.ts = ts;
			rec.data = data;
			rec.size = kbuffer_event_size(kb);
			rec.cpu = (int)pages[p].cpu;
			tev = tep_find_event(tep, tep_data_type(tep, &rec));
			for (int k = 1; tev != NULL && k < ORBIT__RP_SCHED_KINDS; k++) {
				if (strcmp(tev->name, CMP_NAMES[k]) != 0)
					continue;
				CHECK(j < got.n);
				CHECK_EQ_U64(got.ev[j].time, ts);
				CHECK_EQ_U64(got.ev[j].cpu, pages[p].cpu);
				cmp_event(tep, tev, &rec, &got.ev[j], res);
				res->by_kind[k]++;
				res->events++;
				j++;
			}
			data = kbuffer_next_event(kb, &ts);
		}
		CHECK(data == NULL);
		CHECK_EQ_U64(j, got.n);
		free(copy);
	}
	kbuffer_free(kb);
	tep_free(tep);
	orbit__rp_sched_decoder_free(d);
}

#endif
