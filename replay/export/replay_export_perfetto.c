/*
 * replay_export_perfetto.c — --perfetto: Perfetto's native protobuf trace,
 * written with our own copy of the schema's field numbers
 * (perfetto_subset.proto, compiled by protoc-c at build time).
 *
 * The file is a Trace: TracePackets, each as field 1, all on packet
 * sequence 1 so that interned names are valid everywhere:
 *  - first a ClockSnapshot that makes CLOCK_MONOTONIC (builtin clock 3) the
 *    trace's clock and ties it to CLOCK_REALTIME with the handshake's pair;
 *    every timestamped packet says timestamp_clock_id 3 as well;
 *  - a process track descriptor per stream (pid, name, command line);
 *  - a thread track descriptor before a thread's first event, again when
 *    its name changes;
 *  - scopes: TYPE_SLICE_BEGIN / TYPE_SLICE_END on the thread track, in the
 *    tie order of replay_order.c; names interned (InternedData.event_names,
 *    iid = name id + 1) the first time they are used; debug annotations
 *    unfinished (the slice ends where it is last known open),
 *    name_incomplete, time_untrusted, and color ("#rrggbbaa") and group
 *    when the scope was given them; the source location where the capture
 *    has one (InternedData.source_locations, iid = location id + 1, and
 *    TrackEvent.source_location_iid); and
 *    when the scope was given them, and oncpu_ns, runnable_ns and
 *    blocked_ns when the run has the kernel's split of the scope (another
 *    output asked for it: Perfetto has the kernel's events themselves);
 *  - async spans: a track per (pid, id) under the process track;
 *  - values: TYPE_COUNTER on a counter track per (pid, name);
 *  - log lines: TYPE_INSTANT on the thread track, the text as the name;
 *  - the kernel's scheduling (ORBIT_SCHED): an FtraceEventBundle per
 *    kernel page, Perfetto's own encoding of sched_switch, sched_waking,
 *    sched_wakeup_new, sched_process_fork, sched_process_exit and
 *    task_rename, so that its UI draws CPU tracks and thread states; their
 *    timestamps are CLOCK_BOOTTIME, as traced_probes writes them (the
 *    capture's CLOCK_MONOTONIC times moved by the boottime - monotonic pair
 *    of the stream's KernelSched, which the stream's ClockSnapshot states
 *    too), and a SystemInfo packet gives the kernel's release, which says
 *    what prev_state's bits mean.
 * Descriptors of counter and async tracks are remembered in a small cache
 * and written again when it forgets them: repeating a descriptor is
 * allowed, and the memory stays bounded.
 */
#include <stdlib.h>
#include <string.h>

#include "frame.h" /* orbit__put_varint */
#include "perfetto_subset.pb-c.h"
#include "replay_export.h"

#define SEQ_ID 1u
#define SEQ_CLEARED 1u
#define SEQ_NEEDS_STATE 2u
#define CLOCK_MONOTONIC_ID 3u
#define CLOCK_REALTIME_ID 1u
#define CLOCK_BOOTTIME_ID 6u
#define CACHE 4096u

struct perfetto {
	uint8_t *buf; /* one packed packet */
	size_t cap;
	char *text[3]; /* strings made valid UTF-8 without NULs: a name, a file, a function */
	size_t text_cap[3];
	uint8_t *interned; /* by name id: emitted on the sequence */
	uint32_t ninterned;
	uint8_t *loc_interned; /* by location id: emitted on the sequence */
	uint32_t nloc_interned;
	int started;
	int system_info;    /* the SystemInfo packet is written */
	struct kevent *kev; /* one bundle's events */
	size_t kev_cap;
	uint64_t cache[CACHE];
};

typedef Perfetto__Protos__FtraceEvent Fevent;

/* One FtraceEvent with room for its body and its strings. */
struct kevent {
	Fevent e;
	union {
		Perfetto__Protos__SchedSwitchFtraceEvent sw;
		Perfetto__Protos__SchedWakingFtraceEvent wk;
		Perfetto__Protos__SchedWakeupNewFtraceEvent wn;
		Perfetto__Protos__SchedProcessForkFtraceEvent fk;
		Perfetto__Protos__SchedProcessExitFtraceEvent ex;
		Perfetto__Protos__TaskRenameFtraceEvent rn;
	} u;
	char a[3 * ORBIT__RP_SCHED_COMM + 1], b[3 * ORBIT__RP_SCHED_COMM + 1];
};

typedef Perfetto__Protos__TracePacket Packet;
typedef Perfetto__Protos__TrackEvent Event;
typedef Perfetto__Protos__TrackDescriptor Track;

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static uint64_t track_uuid(uint64_t kind, uint64_t a, uint64_t b)
{
	return mix64(kind * 0x9e3779b97f4a7c15ull ^ mix64(a << 32 ^ b)) | 1;
}

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static void put_packet(struct orbit_rp_export *x, Packet *pk)
{
	struct perfetto *p = x->state;
	pk->has_trusted_packet_sequence_id = 1;
	pk->trusted_packet_sequence_id = SEQ_ID;
	size_t n = perfetto__protos__trace_packet__get_packed_size(pk);
	if (n + 16 > p->cap) {
		size_t cap = (n + 16) * 2;
		uint8_t *b = realloc(p->buf, cap);
		if (b == NULL) {
			if (x->out->err == 0)
				x->out->err = 12; /* ENOMEM */
			return;
		}
		p->buf = b;
		p->cap = cap;
	}
	size_t h = 0;
	p->buf[h++] = 0x0A; /* Trace.packet, length-delimited */
	h += orbit__put_varint(p->buf + h, n);
	perfetto__protos__trace_packet__pack(pk, p->buf + h);
	orbit__rp_out_write(x->out, p->buf, h + n);
}

/* A NUL-terminated, valid UTF-8 copy of s: protobuf-c strings are C
 * strings, and a viewer expects UTF-8. NUL becomes U+FFFD too. In buffer
 * k (0: names, 1 and 2: a location's file and function), valid until the
 * next call for k. */
static char *text_in(struct orbit_rp_export *x, int k, const char *s, size_t n)
{
	struct perfetto *p = x->state;
	if (3 * n + 1 > p->text_cap[k]) {
		size_t cap = 3 * n + 1 > 256 ? 3 * n + 1 : 256;
		char *t = realloc(p->text[k], cap);
		if (t == NULL)
			return (char *)"";
		p->text[k] = t;
		p->text_cap[k] = cap;
	}
	char *text = p->text[k];
	size_t w = 0;
	for (size_t i = 0; i < n;) {
		size_t m = 0;
		while (i + m < n && s[i + m] != '\0')
			m++;
		w += orbit__rp_utf8_fix(s + i, m, text + w);
		i += m;
		if (i < n) {
			memcpy(text + w, "\xEF\xBF\xBD", 3);
			w += 3;
			i++;
		}
	}
	text[w] = '\0';
	return text;
}

static char *text_of(struct orbit_rp_export *x, const char *s, size_t n)
{
	return text_in(x, 0, s, n);
}

static void timestamp(Packet *pk, uint64_t t)
{
	pk->has_timestamp = 1;
	pk->timestamp = t;
	pk->has_timestamp_clock_id = 1;
	pk->timestamp_clock_id = CLOCK_MONOTONIC_ID;
}

static void put_track(struct orbit_rp_export *x, Track *t)
{
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
	pk.track_descriptor = t;
	put_packet(x, &pk);
}

/* ---- the start: clock snapshot ---- */

/* CLOCK_BOOTTIME - CLOCK_MONOTONIC on the stream's host, from its
 * KernelSched (0 without: the two agree until the host first suspends). */
static uint64_t boot_offset(const struct orbit_rp_stream *s)
{
	const struct orbit_rp_kernel *k = &s->kernel;
	return k->boottime_ns && k->boottime_ns >= k->monotonic_ns
	           ? k->boottime_ns - k->monotonic_ns
	           : 0;
}

static void clock_snapshot(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct perfetto *p = x->state;
	Perfetto__Protos__ClockSnapshot__Clock mono = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock real = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock boot = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
	Perfetto__Protos__ClockSnapshot__Clock *clocks[3] = {&mono, &real, &boot};
	Perfetto__Protos__ClockSnapshot cs = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	if (s->handshake && s->realtime_ns) {
		mono.has_clock_id = real.has_clock_id = 1;
		mono.clock_id = CLOCK_MONOTONIC_ID;
		real.clock_id = CLOCK_REALTIME_ID;
		mono.has_timestamp = real.has_timestamp = 1;
		mono.timestamp = s->monotonic_ns;
		real.timestamp = s->realtime_ns;
		cs.n_clocks = 2;
		cs.clocks = clocks;
		if (s->kernel.on) { /* the clock of its ftrace events */
			boot.has_clock_id = boot.has_timestamp = 1;
			boot.clock_id = CLOCK_BOOTTIME_ID;
			boot.timestamp = s->monotonic_ns + boot_offset(s);
			cs.n_clocks = 3;
		}
	}
	if (!p->started) {
		cs.has_primary_trace_clock = 1;
		cs.primary_trace_clock = PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_MONOTONIC;
		pk.has_sequence_flags = 1;
		pk.sequence_flags = SEQ_CLEARED;
		pk.has_first_packet_on_sequence = 1;
		pk.first_packet_on_sequence = 1;
		p->started = 1;
	} else if (cs.n_clocks == 0) {
		return;
	}
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	pk.clock_snapshot = &cs;
	put_packet(x, &pk);
}

static char *text_dup(struct orbit_rp_export *x, const char *s)
{
	return strdup(text_of(x, s, strlen(s)));
}

/* The kernel's release, once: trace processor reads prev_state by it. */
static void system_info(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	struct perfetto *p = x->state;
	if (p->system_info || s->kernel.release == NULL)
		return;
	Perfetto__Protos__Utsname u = PERFETTO__PROTOS__UTSNAME__INIT;
	Perfetto__Protos__SystemInfo si = PERFETTO__PROTOS__SYSTEM_INFO__INIT;
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	u.sysname = (char *)"Linux";
	u.release = text_dup(x, s->kernel.release);
	si.utsname = &u;
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_SYSTEM_INFO;
	pk.system_info = &si;
	if (u.release != NULL)
		put_packet(x, &pk);
	free(u.release);
	p->system_info = 1;
}

static uint64_t thread_track(struct orbit_rp_export *x, uint32_t pid, uint32_t tid,
                             struct orbit_rp_thread *th);

static void perfetto_process(struct orbit_rp_export *x, const struct orbit_rp_stream *s)
{
	clock_snapshot(x, s);
	system_info(x, s);
	Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
	pd.has_pid = 1;
	pd.pid = (int32_t)s->pid;
	char *name = s->process ? text_dup(x, s->process) : NULL;
	char **cmd = s->ncmd ? calloc(s->ncmd, sizeof *cmd) : NULL;
	size_t ncmd = 0;
	for (size_t i = 0; cmd && i < s->ncmd; i++)
		if ((cmd[ncmd] = text_dup(x, s->cmdline[i])) != NULL)
			ncmd++;
	pd.process_name = name;
	pd.n_cmdline = ncmd;
	pd.cmdline = cmd;
	Track t = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	t.has_uuid = 1;
	t.uuid = track_uuid(1, s->pid, 0);
	t.process = &pd;
	put_track(x, &t);
	for (size_t i = 0; i < ncmd; i++)
		free(cmd[i]);
	free(name);
	free(cmd);
	/* The threads the kernel's events name belong to this process: Perfetto
	 * learns it from their descriptors (those with scopes get theirs, with
	 * a name, before their first event). */
	for (size_t i = 0; i < s->kernel.ntids; i++)
		thread_track(x, s->pid, s->kernel.tids[i], NULL);
}

/* ---- tracks ---- */

static int cached(struct perfetto *p, uint64_t uuid)
{
	uint64_t *c = &p->cache[mix64(uuid) & (CACHE - 1)];
	if (*c == uuid)
		return 1;
	*c = uuid;
	return 0;
}

static uint64_t thread_track(struct orbit_rp_export *x, uint32_t pid, uint32_t tid,
                             struct orbit_rp_thread *th)
{
	uint64_t uuid = track_uuid(2, pid, tid);
	int own = th != NULL && th->pid == pid && th->tid == tid;
	/* The thread's word: 1 + the name version its descriptor carries. */
	if (own ? th->export[x->slot] == th->name_version + 1ull : cached(x->state, uuid))
		return uuid;
	Perfetto__Protos__ThreadDescriptor td = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
	td.has_pid = td.has_tid = 1;
	td.pid = (int32_t)pid;
	td.tid = (int32_t)tid;
	if (own && th->name)
		td.thread_name = text_of(x, th->name, th->name_len);
	Track t = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	t.has_uuid = 1;
	t.uuid = uuid;
	t.thread = &td;
	put_track(x, &t);
	if (own)
		th->export[x->slot] = th->name_version + 1ull;
	return uuid;
}

/* A track under the process track: async spans, counters. */
static uint64_t child_track(struct orbit_rp_export *x, uint64_t kind, uint32_t pid, uint64_t key,
                            const char *name, size_t len)
{
	uint64_t uuid = track_uuid(kind, pid, key);
	if (cached(x->state, uuid))
		return uuid;
	Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
	Track t = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
	t.has_uuid = 1;
	t.uuid = uuid;
	t.has_parent_uuid = 1;
	t.parent_uuid = track_uuid(1, pid, 0);
	t.name = text_of(x, name, len);
	if (kind == 3)
		t.counter = &cd;
	put_track(x, &t);
	return uuid;
}

/* ---- events ---- */

/* Sets the event's name: interned when it has an id (adding it to the
 * packet's InternedData the first time). */
static void event_name(struct orbit_rp_export *x, Packet *pk, Event *ev,
                       Perfetto__Protos__InternedData *in, Perfetto__Protos__EventName *en,
                       Perfetto__Protos__EventName **ens, const struct orbit_rp_span *s)
{
	struct perfetto *p = x->state;
	uint32_t id = s->name_id;
	if (id == ORBIT_RP_NAME_NONE) {
		ev->name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
		ev->name = text_of(x, s->name, s->name_len);
		return;
	}
	if (id >= p->ninterned) {
		uint32_t n = p->ninterned ? p->ninterned : 1024;
		while (n <= id)
			n *= 2;
		uint8_t *b = realloc(p->interned, n);
		if (b == NULL) {
			ev->name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
			ev->name = text_of(x, s->name, s->name_len);
			return;
		}
		memset(b + p->ninterned, 0, n - p->ninterned);
		p->interned = b;
		p->ninterned = n;
	}
	ev->name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
	ev->name_iid = (uint64_t)id + 1;
	if (p->interned[id])
		return;
	p->interned[id] = 1;
	en->has_iid = 1;
	en->iid = (uint64_t)id + 1;
	en->name = text_of(x, s->name, s->name_len);
	ens[0] = en;
	in->n_event_names = 1;
	in->event_names = ens;
	pk->interned_data = in;
}

/* Sets the event's source location, interned (iid = location id + 1; the
 * SourceLocation goes in the packet's InternedData the first time). */
static void event_location(struct orbit_rp_export *x, Packet *pk, Event *ev,
                           Perfetto__Protos__InternedData *in, Perfetto__Protos__SourceLocation *sl,
                           Perfetto__Protos__SourceLocation **sls,
                           const struct orbit_rp_location *loc)
{
	struct perfetto *p = x->state;
	uint32_t id = loc->id;
	if (id >= p->nloc_interned) {
		uint32_t n = p->nloc_interned ? p->nloc_interned : 256;
		while (n <= id)
			n *= 2;
		uint8_t *b = realloc(p->loc_interned, n);
		if (b == NULL)
			return; /* no location rather than one not interned */
		memset(b + p->nloc_interned, 0, n - p->nloc_interned);
		p->loc_interned = b;
		p->nloc_interned = n;
	}
	ev->source_location_field_case =
	    PERFETTO__PROTOS__TRACK_EVENT__SOURCE_LOCATION_FIELD_SOURCE_LOCATION_IID;
	ev->source_location_iid = (uint64_t)id + 1;
	if (p->loc_interned[id])
		return;
	p->loc_interned[id] = 1;
	sl->has_iid = 1;
	sl->iid = (uint64_t)id + 1;
	sl->file_name = text_in(x, 1, loc->file, loc->file_len);
	sl->function_name = text_in(x, 2, loc->function, loc->function_len);
	sl->has_line_number = 1;
	sl->line_number = loc->line;
	sls[0] = sl;
	in->n_source_locations = 1;
	in->source_locations = sls;
	pk->interned_data = in;
}

static void put_event(struct orbit_rp_export *x, Packet *pk, Event *ev, uint64_t t)
{
	timestamp(pk, t);
	pk->has_sequence_flags = 1;
	pk->sequence_flags = SEQ_NEEDS_STATE;
	pk->data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	pk->track_event = ev;
	put_packet(x, pk);
}

/* A bool debug annotation. */
static Perfetto__Protos__DebugAnnotation *flag_arg(Perfetto__Protos__DebugAnnotation *a,
                                                   const char *name)
{
	a->name = (char *)name;
	a->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_BOOL_VALUE;
	a->bool_value = 1;
	return a;
}

static void slice(struct orbit_rp_export *x, const struct orbit_rp_span *s, uint64_t track, int end)
{
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Event ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__InternedData in = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT, *ens[1];
	Perfetto__Protos__SourceLocation sl = PERFETTO__PROTOS__SOURCE_LOCATION__INIT, *sls[1];
	Perfetto__Protos__DebugAnnotation a[8], *ap[8];
	for (size_t i = 0; i < 8; i++)
		perfetto__protos__debug_annotation__init(&a[i]);
	char color[10];
	ev.has_type = 1;
	ev.type = end ? PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END
	              : PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;
	ev.has_track_uuid = 1;
	ev.track_uuid = track;
	if (!end) {
		event_name(x, &pk, &ev, &in, &en, ens, s);
		if (s->loc != NULL)
			event_location(x, &pk, &ev, &in, &sl, sls, s->loc);
		size_t na = 0;
		if (s->flags & ORBIT_RP_UNFINISHED)
			ap[na] = flag_arg(&a[na], "unfinished"), na++;
		if (s->flags & ORBIT_RP_NAME_INCOMPLETE)
			ap[na] = flag_arg(&a[na], "name_incomplete"), na++;
		if (s->flags & ORBIT_RP_TIME_UNTRUSTED)
			ap[na] = flag_arg(&a[na], "time_untrusted"), na++;
		if (s->flags & ORBIT_RP_ATTRS) { /* TrackEvent has no colour of its own */
			orbit__rp_color_text(s->color, color);
			a[na].name = (char *)"color";
			a[na].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
			a[na].string_value = color;
			ap[na] = &a[na], na++;
			a[na].name = (char *)"group";
			a[na].value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
			a[na].uint_value = s->group;
			ap[na] = &a[na], na++;
		}
		if (s->sched != NULL) { /* with a summary or --csv: the scan ran */
			static const char *const k[3] = {"oncpu_ns", "runnable_ns", "blocked_ns"};
			const uint64_t v[3] = {s->sched->oncpu_ns, s->sched->runnable_ns,
			                       s->sched->blocked_ns};
			for (int i = 0; i < 3; i++) {
				a[na].name = (char *)k[i];
				a[na].value_case =
				    PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
				a[na].uint_value = v[i];
				ap[na] = &a[na], na++;
			}
		}
		ev.n_debug_annotations = na;
		ev.debug_annotations = ap;
	}
	put_event(x, &pk, &ev, end ? s->end : s->start);
}

static void perfetto_slice(struct orbit_rp_export *x, const struct orbit_rp_span *s, int end)
{
	uint64_t track = thread_track(x, s->pid, s->tid, s->thread);
	slice(x, s, track, end);
}

static void perfetto_async(struct orbit_rp_export *x, const struct orbit_rp_span *s)
{
	uint64_t track = child_track(x, 4, s->pid, s->id, s->name, s->name_len);
	slice(x, s, track, 0);
	slice(x, s, track, 1);
}

static void perfetto_value(struct orbit_rp_export *x, const struct orbit_rp_value *v)
{
	uint64_t key = name_hash(v->name, v->name_len);
	uint64_t track = child_track(x, 3, v->pid, key, v->name, v->name_len);
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Event te = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	te.has_type = 1;
	te.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
	te.has_track_uuid = 1;
	te.track_uuid = track;
	uint64_t b = v->bits;
	double d;
	switch (v->kind) {
	case ORBIT_REC_INT:
	case ORBIT_REC_INT64:
		te.counter_value_field_case =
		    PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
		te.counter_value = (int64_t)b;
		break;
	case ORBIT_REC_UINT:
	case ORBIT_REC_UINT64:
		if (b <= INT64_MAX) {
			te.counter_value_field_case =
			    PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
			te.counter_value = (int64_t)b;
			break;
		}
		te.counter_value_field_case =
		    PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
		te.double_counter_value = (double)b;
		break;
	default:
		memcpy(&d, &b, sizeof d);
		te.counter_value_field_case =
		    PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_DOUBLE_COUNTER_VALUE;
		te.double_counter_value = d;
	}
	put_event(x, &pk, &te, v->time);
}

static char *hex_of(const char *p, size_t n)
{
	char *h = malloc(2 * n + 1);
	if (h == NULL)
		return NULL;
	orbit__rp_hex(h, p, n);
	h[2 * n] = '\0';
	return h;
}

static void perfetto_line(struct orbit_rp_export *x, const struct orbit_rp_line *l)
{
	uint64_t track = thread_track(x, l->pid, l->tid, l->thread);
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Event ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__DebugAnnotation a = PERFETTO__PROTOS__DEBUG_ANNOTATION__INIT, *ap = &a;
	char *hex = NULL;
	ev.has_type = 1;
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
	ev.has_track_uuid = 1;
	ev.track_uuid = track;
	ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
	if (l->flags & ORBIT_RP_MARKER) {
		ev.name = (char *)"marker";
		hex = hex_of(l->text, l->len);
		a.name = (char *)"bytes";
		a.value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE;
		a.string_value = hex ? hex : (char *)"";
		ev.n_debug_annotations = 1;
		ev.debug_annotations = &ap;
	} else {
		ev.name = text_of(x, l->text, l->len);
	}
	put_event(x, &pk, &ev, l->time);
	free(hex);
}

/* ---- the kernel's events ---- */

/* A comm as a valid UTF-8 C string (a kernel comm is bytes). */
static char *comm_text(char *dst, const char *comm)
{
	dst[orbit__rp_utf8_fix(comm, strnlen(comm, ORBIT__RP_SCHED_COMM - 1), dst)] = '\0';
	return dst;
}

/* sched_waking and sched_wakeup_new have the same fields. */
#define WAKE_FIELDS(m, k, ev)                                                                      \
	do {                                                                                       \
		(m)->comm = comm_text((k)->a, (ev)->u.wake.comm);                                  \
		(m)->has_pid = (m)->has_prio = (m)->has_success = (m)->has_target_cpu = 1;         \
		(m)->pid = (ev)->u.wake.pid;                                                       \
		(m)->prio = (ev)->u.wake.prio;                                                     \
		(m)->success = 1;                                                                  \
		(m)->target_cpu = (ev)->u.wake.target_cpu;                                         \
	} while (0)

/* One decoded event as Perfetto's FtraceEvent; 0 for a kind it leaves out. */
static int kevent_of(struct kevent *k, const struct orbit__rp_sched_event *ev, uint64_t offset)
{
	Fevent *e = &k->e;
	perfetto__protos__ftrace_event__init(e);
	e->has_timestamp = e->has_pid = 1;
	e->timestamp = ev->time + offset;
	e->pid = ev->common_pid > 0 ? (uint32_t)ev->common_pid : 0;
	switch (ev->kind) {
	case ORBIT__RP_SCHED_SWITCH: {
		Perfetto__Protos__SchedSwitchFtraceEvent *m = &k->u.sw;
		perfetto__protos__sched_switch_ftrace_event__init(m);
		m->prev_comm = comm_text(k->a, ev->u.sw.prev_comm);
		m->next_comm = comm_text(k->b, ev->u.sw.next_comm);
		m->has_prev_pid = m->has_prev_prio = m->has_prev_state = 1;
		m->has_next_pid = m->has_next_prio = 1;
		m->prev_pid = ev->u.sw.prev_pid;
		m->prev_prio = ev->u.sw.prev_prio;
		m->prev_state = ev->u.sw.prev_state;
		m->next_pid = ev->u.sw.next_pid;
		m->next_prio = ev->u.sw.next_prio;
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_SWITCH;
		e->sched_switch = m;
		return 1;
	}
	case ORBIT__RP_SCHED_WAKING:
		perfetto__protos__sched_waking_ftrace_event__init(&k->u.wk);
		WAKE_FIELDS(&k->u.wk, k, ev);
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_WAKING;
		e->sched_waking = &k->u.wk;
		return 1;
	case ORBIT__RP_SCHED_WAKEUP_NEW:
		perfetto__protos__sched_wakeup_new_ftrace_event__init(&k->u.wn);
		WAKE_FIELDS(&k->u.wn, k, ev);
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_WAKEUP_NEW;
		e->sched_wakeup_new = &k->u.wn;
		return 1;
	case ORBIT__RP_SCHED_FORK: {
		Perfetto__Protos__SchedProcessForkFtraceEvent *m = &k->u.fk;
		perfetto__protos__sched_process_fork_ftrace_event__init(m);
		m->parent_comm = comm_text(k->a, ev->u.fork.parent_comm);
		m->child_comm = comm_text(k->b, ev->u.fork.child_comm);
		m->has_parent_pid = m->has_child_pid = 1;
		m->parent_pid = ev->u.fork.parent_pid;
		m->child_pid = ev->u.fork.child_pid;
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_PROCESS_FORK;
		e->sched_process_fork = m;
		return 1;
	}
	case ORBIT__RP_SCHED_EXIT: {
		Perfetto__Protos__SchedProcessExitFtraceEvent *m = &k->u.ex;
		perfetto__protos__sched_process_exit_ftrace_event__init(m);
		m->comm = comm_text(k->a, ev->u.exit.comm);
		m->has_pid = m->has_prio = 1;
		m->pid = ev->u.exit.pid;
		m->prio = ev->u.exit.prio;
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_SCHED_PROCESS_EXIT;
		e->sched_process_exit = m;
		return 1;
	}
	case ORBIT__RP_SCHED_RENAME: {
		Perfetto__Protos__TaskRenameFtraceEvent *m = &k->u.rn;
		perfetto__protos__task_rename_ftrace_event__init(m);
		m->oldcomm = comm_text(k->a, ev->u.rename.oldcomm);
		m->newcomm = comm_text(k->b, ev->u.rename.newcomm);
		m->has_pid = 1;
		m->pid = ev->u.rename.pid;
		e->event_case = PERFETTO__PROTOS__FTRACE_EVENT__EVENT_TASK_RENAME;
		e->task_rename = m;
		return 1;
	}
	default:
		return 0;
	}
}

/* One kernel page: one FtraceEventBundle of its CPU. */
static void perfetto_kernel(struct orbit_rp_export *x, const struct orbit_rp_kernel_page *kp)
{
	struct perfetto *p = x->state;
	if (kp->n == 0 && !kp->info->missed)
		return;
	if (kp->n > p->kev_cap) {
		size_t cap = kp->n > 64 ? kp->n : 64;
		struct kevent *k = realloc(p->kev, cap * (sizeof *k + sizeof(Fevent *)));
		if (k == NULL) {
			if (x->out->err == 0)
				x->out->err = 12; /* ENOMEM */
			return;
		}
		p->kev = k;
		p->kev_cap = cap;
	}
	Fevent **pe = (Fevent **)(p->kev + p->kev_cap);
	uint64_t offset = boot_offset(kp->stream);
	size_t n = 0;
	for (size_t i = 0; i < kp->n; i++)
		if (kevent_of(&p->kev[n], &kp->events[i], offset)) {
			pe[n] = &p->kev[n].e;
			n++;
		}
	Perfetto__Protos__FtraceEventBundle b = PERFETTO__PROTOS__FTRACE_EVENT_BUNDLE__INIT;
	b.has_cpu = 1;
	b.cpu = kp->cpu;
	b.n_event = n;
	b.event = pe;
	if (kp->info->missed) {
		b.has_lost_events = 1;
		b.lost_events = 1;
	}
	Packet pk = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	pk.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_FTRACE_EVENTS;
	pk.ftrace_events = &b;
	put_packet(x, &pk);
}

static void perfetto_end(struct orbit_rp_export *x)
{
	/* Threads renamed after their last event get their final name. */
	const struct orbit_rp_threads *th = x->view->threads;
	for (uint32_t i = 0; i < th->n; i++) {
		struct orbit_rp_thread *t = th->all[i];
		uint64_t w = t->export[x->slot];
		if (w != 0 && w != t->name_version + 1ull)
			thread_track(x, t->pid, t->tid, t);
	}
}

static void perfetto_free(struct orbit_rp_export *x)
{
	struct perfetto *p = x->state;
	free(p->buf);
	for (int k = 0; k < 3; k++)
		free(p->text[k]);
	free(p->loc_interned);
	free(p->interned);
	free(p->kev);
}

static const char *perfetto_wanted(const struct orbit_replay_options *o)
{
	return o->perfetto_path;
}

const struct orbit_rp_exporter orbit__rp_export_perfetto = {
    .name = "perfetto",
    .wanted = perfetto_wanted,
    .state_size = sizeof(struct perfetto),
    .stream = perfetto_process,
    .slice = perfetto_slice,
    .async = perfetto_async,
    .value = perfetto_value,
    .line = perfetto_line,
    .kernel = perfetto_kernel,
    .end = perfetto_end,
    .free = perfetto_free,
};
