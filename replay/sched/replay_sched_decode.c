/*
 * replay_sched_decode.c — kernel sched pages to events, with the formats the
 * capture carries (replay_sched.h says how; docs/format.md 4.10 what the
 * stream holds).
 *
 * Everything here reads outside bytes. libtraceevent parses the format text
 * (given only a kernel-shaped copy, rebuilt line by line, without its print
 * fmt: see kernel_shaped);
 * what it reports for each field is checked once in ready (numbers 1, 2, 4
 * or 8 bytes, strings a char array or a 4-byte __data_loc/__rel_loc word,
 * offsets inside a page), and every field read checks offset + size against
 * the record's payload, because libtraceevent's readers do not. Pages are
 * walked by orbit__ftrace_next, which never reads outside the page.
 */
#include <errno.h>
#include <event-parse.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ftrace_page.h"
#include "replay_sched.h"

#define MAX_FIELD_END ORBIT_PAGE_BYTES_MAX /* no record payload is longer than a page */

enum field_type { NUM, STR };

/* A field the decoder reads into struct orbit__rp_sched_event. */
struct field_spec {
	const char *name;
	uint8_t type;
	uint8_t required;
	uint16_t dst;      /* offsetof in the event */
	uint16_t dst_size; /* NUM: 4 or 8 */
};

#define EV_OFF(member) ((uint16_t)offsetof(struct orbit__rp_sched_event, member))
#define NUM32(name, member, req)                                                                   \
	{                                                                                          \
		name, NUM, req, EV_OFF(member), 4                                                  \
	}
#define NUM64(name, member, req)                                                                   \
	{                                                                                          \
		name, NUM, req, EV_OFF(member), 8                                                  \
	}
#define STRF(name, member, req)                                                                    \
	{                                                                                          \
		name, STR, req, EV_OFF(member), ORBIT__RP_SCHED_COMM                               \
	}

#define MAX_SPECS 8

struct kind_spec {
	const char *system, *name;
	struct field_spec fields[MAX_SPECS];
};

static const struct kind_spec KINDS[ORBIT__RP_SCHED_KINDS] = {
    [ORBIT__RP_SCHED_SWITCH] =
        {"sched",
         "sched_switch",
         {NUM32("prev_pid", u.sw.prev_pid, 1), NUM64("prev_state", u.sw.prev_state, 1),
          NUM32("next_pid", u.sw.next_pid, 1), NUM32("prev_prio", u.sw.prev_prio, 0),
          NUM32("next_prio", u.sw.next_prio, 0), STRF("prev_comm", u.sw.prev_comm, 0),
          STRF("next_comm", u.sw.next_comm, 0)}},
    [ORBIT__RP_SCHED_WAKING] = {"sched",
                                "sched_waking",
                                {NUM32("pid", u.wake.pid, 1), NUM32("prio", u.wake.prio, 0),
                                 NUM32("target_cpu", u.wake.target_cpu, 0),
                                 STRF("comm", u.wake.comm, 0)}},
    [ORBIT__RP_SCHED_WAKEUP_NEW] = {"sched",
                                    "sched_wakeup_new",
                                    {NUM32("pid", u.wake.pid, 1), NUM32("prio", u.wake.prio, 0),
                                     NUM32("target_cpu", u.wake.target_cpu, 0),
                                     STRF("comm", u.wake.comm, 0)}},
    [ORBIT__RP_SCHED_FORK] = {"sched",
                              "sched_process_fork",
                              {NUM32("parent_pid", u.fork.parent_pid, 1),
                               NUM32("child_pid", u.fork.child_pid, 1),
                               STRF("parent_comm", u.fork.parent_comm, 0),
                               STRF("child_comm", u.fork.child_comm, 0)}},
    [ORBIT__RP_SCHED_EXIT] = {"sched",
                              "sched_process_exit",
                              {NUM32("pid", u.exit.pid, 1), NUM32("prio", u.exit.prio, 0),
                               STRF("comm", u.exit.comm, 0)}},
    [ORBIT__RP_SCHED_RENAME] = {"task",
                                "task_rename",
                                {NUM32("pid", u.rename.pid, 1),
                                 STRF("oldcomm", u.rename.oldcomm, 0),
                                 STRF("newcomm", u.rename.newcomm, 1)}},
};

/* A field as libtraceevent described it, checked. */
struct field {
	uint8_t present;
	uint8_t dynamic;  /* __data_loc / __rel_loc */
	uint8_t relative; /* __rel_loc */
	uint8_t is_signed;
	uint32_t offset, size;
};

struct kind {
	int ok;
	int id;
	struct field common_pid, common_flags;
	struct field fields[MAX_SPECS];
};

struct orbit__rp_sched_decoder {
	struct tep_handle *tep;
	int have_header;
	int ready;
	uint32_t formats;
	struct field common_type;
	struct kind kinds[ORBIT__RP_SCHED_KINDS];
};

struct orbit__rp_sched_decoder *orbit__rp_sched_decoder_new(void)
{
	struct orbit__rp_sched_decoder *d = calloc(1, sizeof *d);

	if (d == NULL)
		return NULL;
	d->tep = tep_alloc();
	if (d->tep == NULL) {
		free(d);
		return NULL;
	}
	/* libtraceevent reports parse problems on stderr unless told not to;
	 * replay reports them itself, once, from our return values. */
	tep_set_loglevel(TEP_LOG_NONE);
	tep_set_file_bigendian(d->tep, TEP_LITTLE_ENDIAN);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	tep_set_local_bigendian(d->tep, TEP_BIG_ENDIAN);
#else
	tep_set_local_bigendian(d->tep, TEP_LITTLE_ENDIAN);
#endif
	tep_set_long_size(d->tep, 8);
	return d;
}

void orbit__rp_sched_decoder_free(struct orbit__rp_sched_decoder *d)
{
	if (d == NULL)
		return;
	tep_free(d->tep);
	free(d);
}

struct tep_handle *orbit__rp_sched_tep(const struct orbit__rp_sched_decoder *d)
{
	return d->tep;
}

/* ---- what libtraceevent is given ----
 *
 * libtraceevent's parser trusts its input: fuzzing found it dereferencing
 * NULL on a NUL byte inside a field line and on a cut print-fmt
 * expression (tests/fuzz/corpus/sched_decode/found-*). So it is only ever
 * given text of the shape tracefs writes, line by line, rebuilt here:
 *
 *	name: <letters, digits, _>
 *	ID: <decimal>
 *	format:
 *	\tfield:<declaration>;\toffset:<decimal>;\tsize:<decimal>;[\tsigned:<decimal>;]
 *	(empty lines between the common fields and the others)
 *	print fmt: ""
 *
 * A declaration is letters, digits, '_', ' ', '*', '[' and ']'. The print
 * fmt is always replaced by an empty one: the decoder reads fields only, so
 * the expression parser has nothing to do. header_page is field lines only.
 * This checks shapes and copies; what the fields mean is still
 * libtraceevent's to say. */

struct line {
	const char *p;
	size_t n;
};

static int eat(struct line *l, const char *lit)
{
	size_t k = strlen(lit);

	if (l->n < k || memcmp(l->p, lit, k) != 0)
		return 0;
	l->p += k;
	l->n -= k;
	return 1;
}

static int eat_digits(struct line *l, size_t max)
{
	size_t k = 0;

	while (k < l->n && l->p[k] >= '0' && l->p[k] <= '9')
		k++;
	if (k == 0 || k > max)
		return 0;
	l->p += k;
	l->n -= k;
	return 1;
}

static int decl_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == ' ' || c == '*' || c == '[' || c == ']';
}

/* "\tfield:<declaration>;\toffset:N;\tsize:N;" and maybe "\tsigned:N;" (in
 * header_page the declaration starts with a space) */
static int field_line(struct line l)
{
	size_t k = 0;

	if (!eat(&l, "\tfield:"))
		return 0;
	while (k < l.n && decl_char(l.p[k]))
		k++;
	if (k == 0 || k == l.n || l.p[k] != ';')
		return 0;
	l.p += k + 1;
	l.n -= k + 1;
	if (!eat(&l, "\toffset:") || !eat_digits(&l, 7) || !eat(&l, ";") || !eat(&l, "\tsize:") ||
	    !eat_digits(&l, 7) || !eat(&l, ";"))
		return 0;
	if (eat(&l, "\tsigned:") && (!eat_digits(&l, 1) || !eat(&l, ";")))
		return 0;
	return l.n == 0;
}

static int name_line(struct line l)
{
	size_t k = 0;

	if (!eat(&l, "name: "))
		return 0;
	while (k < l.n && (decl_char(l.p[k]) && l.p[k] != ' ' && l.p[k] != '*' && l.p[k] != '[' &&
	                   l.p[k] != ']'))
		k++;
	return k > 0 && k <= 64 && k == l.n;
}

static int id_line(struct line l)
{
	return eat(&l, "ID: ") && eat_digits(&l, 10) && l.n == 0;
}

/* Next line of [*pos, end): without its '\n'. 0 at the end. */
static int next_line(const char *text, size_t len, size_t *pos, struct line *l)
{
	const char *nl;

	if (*pos >= len)
		return 0;
	l->p = text + *pos;
	nl = memchr(l->p, '\n', len - *pos);
	l->n = nl != NULL ? (size_t)(nl - l->p) : len - *pos;
	*pos += l->n + (nl != NULL);
	return 1;
}

/* The kernel-shaped copy of a format (header_page: is_header) text, or NULL
 * if a line has another shape (*bad set) or memory is out. */
static char *kernel_shaped(const char *text, size_t len, int is_header, size_t *out_len, int *bad)
{
	static const char tail[] = "\nprint fmt: \"\"\n";
	char *c = malloc(len + sizeof tail + 1);
	size_t pos = 0, at = 0;
	struct line l;
	int n = 0;

	*bad = 0;
	if (c == NULL)
		return NULL;
	while (next_line(text, len, &pos, &l)) {
		int ok;

		if (!is_header && l.n >= 10 && memcmp(l.p, "print fmt:", 10) == 0)
			break;
		if (is_header)
			ok = l.n == 0 || field_line(l);
		else if (n == 0)
			ok = name_line(l);
		else if (n == 1)
			ok = id_line(l);
		else if (n == 2)
			ok = l.n == 7 && memcmp(l.p, "format:", 7) == 0;
		else
			ok = l.n == 0 || field_line(l);
		if (!ok) {
			free(c);
			*bad = 1;
			return NULL;
		}
		memcpy(c + at, l.p, l.n);
		at += l.n;
		c[at++] = '\n';
		n++;
	}
	if (!is_header && n < 3) {
		free(c);
		*bad = 1;
		return NULL;
	}
	if (!is_header) {
		memcpy(c + at, tail + 1, sizeof tail - 1); /* NUL included */
		at += sizeof tail - 2;
	} else {
		c[at] = '\0';
	}
	*out_len = at;
	return c;
}

int orbit__rp_sched_header_page(struct orbit__rp_sched_decoder *d, const char *text, size_t len)
{
	char *c;
	size_t clen;
	int r, bad;

	if (len > ORBIT__RP_SCHED_MAX_TEXT)
		return -E2BIG;
	if (len == 0)
		return -EINVAL; /* libtraceevent would guess an old layout */
	c = kernel_shaped(text, len, 1, &clen, &bad);
	if (c == NULL)
		return bad ? -EINVAL : -ENOMEM;
	r = clen > 0 ? tep_parse_header_page(d->tep, c, clen, 8) : -1;
	free(c);
	if (r != 0)
		return -EINVAL;
	d->have_header = 1;
	d->ready = 0;
	return 0;
}

int orbit__rp_sched_format(struct orbit__rp_sched_decoder *d, const char *system, const char *text,
                           size_t len)
{
	char *c;
	size_t clen;
	int bad;
	enum tep_errno r;

	if (len > ORBIT__RP_SCHED_MAX_TEXT || system == NULL || strlen(system) > 64)
		return -E2BIG;
	if (d->formats >= ORBIT__RP_SCHED_MAX_FORMATS)
		return -ENOSPC;
	c = kernel_shaped(text, len, 0, &clen, &bad);
	if (c == NULL)
		return bad ? -EINVAL : -ENOMEM;
	r = tep_parse_event(d->tep, c, clen, system[0] != '\0' ? system : "unknown");
	free(c);
	/* libtraceevent says MEM_ALLOC_FAILED for a text without a name too,
	 * so its errors are all "rejected". */
	if (r != 0)
		return -EINVAL;
	d->formats++;
	d->ready = 0;
	return 0;
}

/* Checks what libtraceevent says about one field. */
static int check_field(const struct tep_format_field *tf, uint8_t type, struct field *out)
{
	memset(out, 0, sizeof *out);
	if (tf == NULL)
		return -ENOENT;
	if (tf->offset < 0 || tf->size <= 0 ||
	    (uint64_t)tf->offset + (uint64_t)tf->size > MAX_FIELD_END)
		return -EPROTO;
	out->offset = (uint32_t)tf->offset;
	out->size = (uint32_t)tf->size;
	out->is_signed = (tf->flags & TEP_FIELD_IS_SIGNED) != 0;
	if (tf->flags & TEP_FIELD_IS_DYNAMIC) {
		if (type != STR || tf->size != 4)
			return -EPROTO;
		out->dynamic = 1;
		out->relative = (tf->flags & TEP_FIELD_IS_RELATIVE) != 0;
	} else if (type == NUM) {
		if ((tf->flags & TEP_FIELD_IS_ARRAY) ||
		    (tf->size != 1 && tf->size != 2 && tf->size != 4 && tf->size != 8))
			return -EPROTO;
	} else if (!(tf->flags & TEP_FIELD_IS_ARRAY) || tf->elementsize > 1) {
		return -EPROTO; /* a string is a char array */
	}
	out->present = 1;
	return 0;
}

static int resolve_kind(struct orbit__rp_sched_decoder *d, int k)
{
	const struct kind_spec *ks = &KINDS[k];
	struct kind *kd = &d->kinds[k];
	struct tep_event *ev = tep_find_event_by_name(d->tep, ks->system, ks->name);
	int r;

	memset(kd, 0, sizeof *kd);
	if (ev == NULL)
		return -ENOENT;
	if (ev->id < 0 || ev->id > 0xffff)
		return -EPROTO;
	kd->id = ev->id;
	if (check_field(tep_find_common_field(ev, "common_pid"), NUM, &kd->common_pid) < 0)
		return -EPROTO;
	/* Flags are informational: without them, none. */
	check_field(tep_find_common_field(ev, "common_flags"), NUM, &kd->common_flags);
	for (int i = 0; i < MAX_SPECS && ks->fields[i].name != NULL; i++) {
		r = check_field(tep_find_field(ev, ks->fields[i].name), ks->fields[i].type,
		                &kd->fields[i]);
		if (r == -EPROTO || (r < 0 && ks->fields[i].required))
			return -EPROTO;
	}
	kd->ok = 1;
	return 0;
}

int orbit__rp_sched_ready(struct orbit__rp_sched_decoder *d)
{
	struct tep_event *sw;
	int r;

	d->ready = 0;
	if (!d->have_header)
		return -ENOENT;
	if (tep_get_header_page_size(d->tep) != 8 || tep_get_header_timestamp_size(d->tep) != 8)
		return -EPROTO; /* not the 64-bit page layout format/ftrace_page.c reads */
	sw = tep_find_event_by_name(d->tep, "sched", "sched_switch");
	if (sw == NULL)
		return -ENOENT;
	if (check_field(tep_find_common_field(sw, "common_type"), NUM, &d->common_type) < 0 ||
	    d->common_type.size > 4)
		return -EPROTO;
	for (int k = ORBIT__RP_SCHED_SWITCH; k < ORBIT__RP_SCHED_KINDS; k++) {
		r = resolve_kind(d, k);
		if (r < 0 && k == ORBIT__RP_SCHED_SWITCH)
			return r == -ENOENT ? -ENOENT : -EPROTO;
	}
	d->ready = 1;
	return 0;
}

int orbit__rp_sched_decodes(const struct orbit__rp_sched_decoder *d, enum orbit__rp_sched_kind k)
{
	return d->ready && k > 0 && k < ORBIT__RP_SCHED_KINDS && d->kinds[k].ok;
}

/* The number in f, if the record holds it. */
static int read_num(const struct orbit__rp_sched_decoder *d, const struct field *f,
                    const uint8_t *data, uint32_t len, int64_t *out)
{
	uint64_t tmp = 0, v;

	if (!f->present || f->offset > len || f->size > len - f->offset)
		return -1;
	memcpy(&tmp, data + f->offset, f->size); /* aligned, for tep_read_number */
	v = tep_read_number(d->tep, &tmp, (int)f->size);
	if (f->is_signed && f->size < 8 && (v >> (f->size * 8 - 1)) & 1)
		v |= ~0ull << (f->size * 8);
	*out = (int64_t)v;
	return 0;
}

/* The string in f, cut at the first NUL and at ORBIT__RP_SCHED_COMM - 1
 * bytes, if the record holds it. */
static int read_str(const struct orbit__rp_sched_decoder *d, const struct field *f,
                    const uint8_t *data, uint32_t len, char *out)
{
	uint32_t off = f->offset, n = f->size;

	out[0] = '\0';
	if (!f->present || f->offset > len || f->size > len - f->offset)
		return -1;
	if (f->dynamic) {
		uint32_t word, tmp;

		memcpy(&tmp, data + f->offset, 4);
		word = (uint32_t)tep_read_number(d->tep, &tmp, 4);
		off = word & 0xffff;
		n = word >> 16;
		if (f->relative)
			off += f->offset + f->size;
		if (off > len || n > len - off)
			return -1;
	}
	if (n > ORBIT__RP_SCHED_COMM - 1)
		n = ORBIT__RP_SCHED_COMM - 1;
	for (uint32_t i = 0; i < n && data[off + i] != '\0'; i++) {
		out[i] = (char)data[off + i];
		out[i + 1] = '\0';
	}
	return 0;
}

/* Fills ev from one record of kind k; -1 if a required field is cut. */
static int decode_record(const struct orbit__rp_sched_decoder *d, int k, const uint8_t *data,
                         uint32_t len, struct orbit__rp_sched_event *ev)
{
	const struct kind *kd = &d->kinds[k];
	const struct kind_spec *ks = &KINDS[k];
	int64_t v;

	if (read_num(d, &kd->common_pid, data, len, &v) < 0)
		return -1;
	ev->common_pid = (int32_t)v;
	ev->common_flags = read_num(d, &kd->common_flags, data, len, &v) == 0 ? (uint8_t)v : 0;
	for (int i = 0; i < MAX_SPECS && ks->fields[i].name != NULL; i++) {
		const struct field_spec *fs = &ks->fields[i];
		uint8_t *dst = (uint8_t *)ev + fs->dst;
		int r;

		if (fs->type == STR) {
			r = read_str(d, &kd->fields[i], data, len, (char *)dst);
		} else {
			r = read_num(d, &kd->fields[i], data, len, &v);
			if (r == 0 && fs->dst_size == 4) {
				int32_t v32 = (int32_t)v;
				memcpy(dst, &v32, 4);
			} else if (r == 0) {
				memcpy(dst, &v, 8);
			}
		}
		if (r < 0 && fs->required)
			return -1;
	}
	return 0;
}

static int kind_of(const struct orbit__rp_sched_decoder *d, int64_t type)
{
	for (int k = ORBIT__RP_SCHED_SWITCH; k < ORBIT__RP_SCHED_KINDS; k++)
		if (d->kinds[k].ok && d->kinds[k].id == type)
			return k;
	return 0;
}

int orbit__rp_sched_decode_page(struct orbit__rp_sched_decoder *d, uint32_t cpu,
                                const uint8_t *page, size_t len, orbit__rp_sched_event_fn fn,
                                void *ctx, struct orbit__rp_sched_page *info)
{
	struct orbit__rp_sched_page local;
	struct orbit__ftrace_iter it;
	struct orbit__ftrace_header h;
	struct orbit__ftrace_record rec;
	int r;

	if (info == NULL)
		info = &local;
	memset(info, 0, sizeof *info);
	if (!d->ready)
		return -EINVAL;
	r = orbit__ftrace_open(&it, page, len, &h);
	if (r < 0) {
		info->err = r;
		info->err_off = it.err_off;
		return r;
	}
	info->timestamp = h.timestamp;
	info->missed = h.missed;
	info->missed_stored = h.missed_stored;
	info->missed_count = h.missed_count;
	while ((r = orbit__ftrace_next(&it, &rec)) == 1) {
		struct orbit__rp_sched_event ev;
		int64_t type;
		int k;

		if (info->records == 0)
			info->first = rec.time;
		info->last = rec.time;
		info->records++;
		if (read_num(d, &d->common_type, rec.data, rec.len, &type) < 0) {
			info->short_records++;
			continue;
		}
		k = kind_of(d, type);
		if (k == 0) {
			info->other++;
			continue;
		}
		memset(&ev, 0, sizeof ev);
		ev.time = rec.time;
		ev.cpu = cpu;
		ev.kind = (uint16_t)k;
		ev.type = (uint16_t)type;
		if (decode_record(d, k, rec.data, rec.len, &ev) < 0) {
			info->short_records++;
			continue;
		}
		info->events++;
		r = fn(ctx, &ev);
		if (r < 0)
			return r;
	}
	if (r < 0) {
		info->err = r;
		info->err_off = it.err_off;
		return r;
	}
	return (int)info->events;
}
