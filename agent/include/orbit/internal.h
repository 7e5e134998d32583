/*
 * orbit/internal.h — the inline write path behind orbit.h's macros.
 *
 * Not API: orbit.h includes this file, and nothing here is for a program
 * to use or rely on. Every name is orbit__* or ORBIT__*, and any of them
 * may change in any release, as may the layout of the records the macros
 * write (docs/format.md is the contract for readers). The exported symbols
 * named here (orbit__capture_flag, orbit__clock_kind, orbit__thread_self,
 * orbit__thread_attach, orbit__emit_named, orbit__log_at,
 * orbit__monotonic_ns) exist for these inline functions only.
 *
 * It stands alone as an installed header: the record kinds, flags and sizes
 * below restate docs/format.md section 2 rather than include format/, and
 * agent/src/segment_create.c asserts that the two agree.
 *
 * The macros ORBIT__DO_<X> are what orbit.h's ORBIT_<X> expand to: the
 * write path with ORBIT_API_ENABLED 1, nothing with 0.
 */
#ifndef ORBIT_INTERNAL_H
#define ORBIT_INTERNAL_H

#ifndef ORBIT_H
#error "orbit/internal.h is part of orbit.h: include <orbit.h>"
#endif

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the record (docs/format.md 2; format/record.h for readers) --------- */

#define ORBIT__INLINE_NAME 32u /* name bytes in one record */
#define ORBIT__ATTR_BYTES 12u  /* color (4) + group id (8), when present */

/* Record kinds: format/record.h's enum orbit_rec_kind, value for value. */
enum orbit__kind {
	ORBIT__SCOPE_START = 1,
	ORBIT__SCOPE_STOP = 2,
	ORBIT__ASYNC_START = 3,
	ORBIT__ASYNC_STOP = 4,
	ORBIT__VALUE_INT = 5,
	ORBIT__VALUE_INT64 = 6,
	ORBIT__VALUE_UINT = 7,
	ORBIT__VALUE_UINT64 = 8,
	ORBIT__VALUE_FLOAT = 9,
	ORBIT__VALUE_DOUBLE = 10,
	ORBIT__THREAD_NAME = 11,
	ORBIT__NAME_CONT = 12,
	ORBIT__THREAD_END = 13, /* the thread's destructor ran (orbit.c) */
};
#define ORBIT__FLAG_ATTRS 1u          /* name area has color and group id */
#define ORBIT__FLAG_TIME_UNTRUSTED 2u /* set by the agent only (clock.h, guarantee 4) */
#define ORBIT__FLAG_SITE 4u           /* name area starts with a struct orbit__site's address */
#define ORBIT__SITE_BYTES 8u          /* the call site's address, when flagged */

/* ---- atomics: <stdatomic.h> in C, <atomic> in C++, one layout ----------- */

#ifdef __cplusplus
} /* extern "C" */
#include <atomic>
#define ORBIT__ATOMIC(T) std::atomic<T>
#define ORBIT__LOAD_RELAXED(p) (p)->load(std::memory_order_relaxed)
#define ORBIT__FETCH_ADD_RELAXED(p, v) (p)->fetch_add((v), std::memory_order_relaxed)
#define ORBIT__STORE_RELAXED(p, v) (p)->store((v), std::memory_order_relaxed)
#define ORBIT__STORE_RELEASE(p, v) (p)->store((v), std::memory_order_release)
#define ORBIT__THREAD_LOCAL __thread /* no C++ TLS wrapper */
extern "C" {
#else
#include <stdatomic.h>
#define ORBIT__ATOMIC(T) _Atomic(T)
#define ORBIT__LOAD_RELAXED(p) atomic_load_explicit((p), memory_order_relaxed)
#define ORBIT__FETCH_ADD_RELAXED(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)
#define ORBIT__STORE_RELAXED(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define ORBIT__STORE_RELEASE(p, v) atomic_store_explicit((p), (v), memory_order_release)
#define ORBIT__THREAD_LOCAL __thread
#endif

/* ---- the shared layout and the process's state -------------------------- */

/*
 * One 64-byte slot: the stamp, then the 56-byte record as seven 64-bit words.
 * The stamp says what the slot holds (docs/format.md 1.5, scope_ring.c):
 *
 *   0                    never written
 *   claim + 1            claimed, the record being written (the marker)
 *   claim + 1 + check    the record of that claim, complete; check is
 *                        orbit__check() of its seven words: low 32 bits 0,
 *                        bit 32 set, bits 33-63 a hash of the record
 *
 * so a reader tells a record from what a producer of another lap wrote over
 * part of it by the check, whatever the order in which the stores became
 * visible. The record words are atomics accessed with relaxed order: on
 * x86-64 and arm64 these are plain loads and stores, and a reader racing a
 * lapping writer is then well defined.
 */
struct orbit__slot {
	ORBIT__ATOMIC(uint64_t) seq;  /* the stamp: marker relaxed, then release */
	ORBIT__ATOMIC(uint64_t) time; /* clock ticks (the segment's clock) */
	ORBIT__ATOMIC(uint64_t) id;   /* scope id, async id, or value bits */
	ORBIT__ATOMIC(uint64_t) meta; /* tid | kind << 32 | flags << 40 | len << 48 */
	ORBIT__ATOMIC(uint64_t) name[ORBIT__INLINE_NAME / 8];
};

/* A ring: its cursor on a line of its own, then the slots. */
struct orbit__ring {
	ORBIT__ATOMIC(uint64_t) cursor; /* next claim; only ever increases */
	char pad[120];
	struct orbit__slot slots[];
};

/* What a thread keeps to write without a syscall. Zero until first use. */
struct orbit__thread {
	struct orbit__ring *ring; /* chosen once from the tid */
	uint64_t mask;            /* slots per ring - 1 */
	uint64_t next_id;         /* scope ids of this thread */
	uint32_t tid;
	uint32_t depth;    /* open ORBIT_START slices */
	uint64_t open[64]; /* ids of the innermost 64 of them */
};

/* Clock the producers read (set before the capture flag turns on). */
enum orbit__clock { ORBIT__CLOCK_MONOTONIC = 0, ORBIT__CLOCK_TSC = 1, ORBIT__CLOCK_CNTVCT = 2 };

ORBIT_EXPORT extern ORBIT__ATOMIC(uint32_t) orbit__capture_flag;
ORBIT_EXPORT extern uint32_t orbit__clock_kind;
ORBIT_EXPORT extern ORBIT__THREAD_LOCAL struct orbit__thread orbit__thread_self;

/*
 * Where a macro is written: one static descriptor per use of a macro, fixed
 * at compile time, in read-only data. A record points at it (flag bit 2:
 * the first 8 bytes of its name area are the descriptor's address) and the
 * agent, in this process, reads it and sends its contents once per stream
 * (docs/format.md 4.12). Nothing is registered: a call site is known when a
 * record naming it is first drained. The agent reads descriptors as bytes
 * it cannot trust (a record may be corrupt): only a descriptor with this
 * magic is used.
 */
struct orbit__site {
	uint64_t magic;       /* ORBIT__SITE_MAGIC */
	const char *file;     /* __FILE__ */
	const char *function; /* __func__ */
	uint32_t line;        /* __LINE__ */
	uint32_t zero;
};
#define ORBIT__SITE_MAGIC 0x314554495342524full /* "ORBSITE1" */
#define ORBIT__SITE_INIT                                                                           \
	{                                                                                          \
		ORBIT__SITE_MAGIC, __FILE__, __func__, __LINE__, 0                                 \
	}

/* Slow paths, out of line. */
ORBIT_EXPORT struct orbit__thread *orbit__thread_attach(void);
/* An event whose name does not fit its record, or with color and group;
 * site may be NULL. */
ORBIT_EXPORT void orbit__emit_named(uint8_t kind, uint64_t id, const struct orbit__site *site,
                                    const char *name, size_t len, uint32_t color, uint64_t group,
                                    int attrs);
/* ORBIT_LOG's: orbit_log with the call site in the record. */
ORBIT_EXPORT int orbit__log_at(const struct orbit__site *site, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
ORBIT_EXPORT uint64_t orbit__monotonic_ns(void);

#if ORBIT_API_ENABLED

/* ---- the inline write path ---------------------------------------------- */

#define ORBIT__HOT static inline __attribute__((always_inline))

ORBIT__HOT int orbit__on(void)
{
	return __builtin_expect(ORBIT__LOAD_RELAXED(&orbit__capture_flag) != 0, 0);
}

ORBIT__HOT uint64_t orbit__ticks(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_expect(orbit__clock_kind == ORBIT__CLOCK_TSC, 1))
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
	if (__builtin_expect(orbit__clock_kind == ORBIT__CLOCK_CNTVCT, 1)) {
		uint64_t v;
		__asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
		return v;
	}
#endif
	return orbit__monotonic_ns();
}

ORBIT__HOT struct orbit__thread *orbit__self(void)
{
	struct orbit__thread *t = &orbit__thread_self;
	if (__builtin_expect(t->ring == NULL, 0))
		t = orbit__thread_attach(); /* NULL when no segment exists */
	return t;
}

/* The stamp format is this one (docs/format.md 1.5); readers check it. */
#define ORBIT__STAMP_CHECKED 1
#define ORBIT__CHECK_BIT (1ull << 32)

/*
 * Claim: the one atomic read-modify-write of the write path, then the marker
 * (claim + 1) in the slot's stamp, a plain store: from here on the slot
 * says "claim being written", so a drain waits for it rather than taking
 * the slot's older record for a lost one (scope_ring.c, guarantee 7). No
 * ordering is needed: the record's validity rests on the check, not on the
 * order in which stores become visible.
 */
ORBIT__HOT struct orbit__slot *orbit__claim(struct orbit__thread *t, uint64_t *claim)
{
#ifdef ORBIT_TEST_PLAIN_CLAIM
	/* Test-only: the race the sharing test must catch. */
	*claim = ORBIT__LOAD_RELAXED(&t->ring->cursor);
	ORBIT__STORE_RELAXED(&t->ring->cursor, *claim + 1);
#else
	*claim = ORBIT__FETCH_ADD_RELAXED(&t->ring->cursor, 1);
#endif
	struct orbit__slot *s = &t->ring->slots[*claim & t->mask];
	ORBIT__STORE_RELAXED(&s->seq, *claim + 1);
	return s;
}

/*
 * The check of a record's seven words: bits 33-63 of a weighted sum modulo
 * 2^64, each word with an odd 64-bit weight of its own, bit 32 set, low 32
 * bits zero. A copy in which any words differ from the record it was
 * published with fails it except with probability about 2^-31, whichever
 * words they are and whatever record they came from: no two words share a
 * weight, so no difference in one is undone by the same difference in
 * another (a call site's address, name[0] with flag bit 2, has its own
 * weight as any name word). Computed from the values in registers, so with
 * a literal name the other name words fold into one constant.
 */
ORBIT__HOT uint64_t orbit__check(uint64_t time, uint64_t id, uint64_t meta,
                                 const uint64_t name[ORBIT__INLINE_NAME / 8])
{
	uint64_t m = time * 0x9e3779b97f4a7c15ull + id * 0xbf58476d1ce4e5b9ull +
	             meta * 0x94d049bb133111ebull + name[0] * 0xff51afd7ed558ccdull +
	             name[1] * 0xc4ceb9fe1a85ec53ull + name[2] * 0xd6e8feb86659fd93ull +
	             name[3] * 0xa0761d6478bd642full;
	return (m & ~0xffffffffull) | ORBIT__CHECK_BIT;
}

/* Publish: the release store of claim + 1 + check. It pairs with the drain's
 * acquire load of the stamp (format/scope_slot.c, orbit__slots_copy): a drain that
 * sees it sees this producer's payload stores, and the check tells whether
 * anything stored later replaced part of them. */
ORBIT__HOT void orbit__publish(struct orbit__slot *s, uint64_t claim, uint64_t check)
{
	ORBIT__STORE_RELEASE(&s->seq, claim + 1 + check);
}

ORBIT__HOT uint64_t orbit__meta(uint32_t tid, uint8_t kind, uint8_t flags, uint16_t len)
{
	return (uint64_t)tid | (uint64_t)kind << 32 | (uint64_t)flags << 40 | (uint64_t)len << 48;
}

/* The payload: plain (relaxed) stores of the record's seven words; returns
 * their check, for orbit__publish. */
ORBIT__HOT uint64_t orbit__store(struct orbit__slot *s, uint64_t time, uint64_t id, uint64_t meta,
                                 const uint64_t name[ORBIT__INLINE_NAME / 8])
{
	ORBIT__STORE_RELAXED(&s->time, time);
	ORBIT__STORE_RELAXED(&s->id, id);
	ORBIT__STORE_RELAXED(&s->meta, meta);
	/* Unrolled: with a literal name the words are constants. */
	ORBIT__STORE_RELAXED(&s->name[0], name[0]);
	ORBIT__STORE_RELAXED(&s->name[1], name[1]);
	ORBIT__STORE_RELAXED(&s->name[2], name[2]);
	ORBIT__STORE_RELAXED(&s->name[3], name[3]);
	return orbit__check(time, id, meta, name);
}

/* Bytes off .. off + 7 of a name of len bytes as a little-endian word, zero
 * past the end. With a literal name and its constant length this folds to an
 * immediate. */
ORBIT__HOT uint64_t orbit__byte(const char *name, size_t len, size_t at)
{
	return at < len ? (uint64_t)(unsigned char)name[at] << (8 * (at % 8)) : 0;
}

ORBIT__HOT uint64_t orbit__word(const char *name, size_t len, size_t off)
{
	uint64_t w = 0;
	if (__builtin_constant_p(len)) { /* byte by byte: constant-folded */
		w = orbit__byte(name, len, off) | orbit__byte(name, len, off + 1) |
		    orbit__byte(name, len, off + 2) | orbit__byte(name, len, off + 3) |
		    orbit__byte(name, len, off + 4) | orbit__byte(name, len, off + 5) |
		    orbit__byte(name, len, off + 6) | orbit__byte(name, len, off + 7);
	} else if (len > off) {
		const char *p = name + off;
		__asm__("" : "+r"(p)); /* no object-size guesses: len bounds it */
		__builtin_memcpy(&w, p, len - off < 8 ? len - off : 8);
	}
	return w;
}

/* The payload of an event whose name fits in its record; returns its check. */
ORBIT__HOT uint64_t orbit__fill(struct orbit__slot *s, uint64_t time, uint8_t kind, uint64_t id,
                                uint32_t tid, const char *name, size_t len)
{
	const uint64_t w[ORBIT__INLINE_NAME / 8] = {
	    orbit__word(name, len, 0), orbit__word(name, len, 8), orbit__word(name, len, 16),
	    orbit__word(name, len, 24)};
	return orbit__store(s, time, id, orbit__meta(tid, kind, 0, (uint16_t)len), w);
}

/* The payload of an event with its call site: the site's address, then the
 * name's first 24 bytes (flag bit 2); returns its check. The address is a
 * link-time constant, one instruction where a name word's immediate was. */
ORBIT__HOT uint64_t orbit__fill_at(struct orbit__slot *s, uint64_t time, uint8_t kind, uint64_t id,
                                   uint32_t tid, const struct orbit__site *site, const char *name,
                                   size_t len)
{
	const uint64_t w[ORBIT__INLINE_NAME / 8] = {
	    (uint64_t)(uintptr_t)site, orbit__word(name, len, 0), orbit__word(name, len, 8),
	    orbit__word(name, len, 16)};
	return orbit__store(s, time, id, orbit__meta(tid, kind, ORBIT__FLAG_SITE, (uint16_t)len),
	                    w);
}

/* One event with a call site whose name fits in its record; anything else
 * goes out of line. */
ORBIT__HOT void orbit__emit_at(struct orbit__thread *t, uint8_t kind, uint64_t id,
                               const struct orbit__site *site, const char *name, size_t len)
{
	if (len > ORBIT__INLINE_NAME - ORBIT__SITE_BYTES) {
		orbit__emit_named(kind, id, site, name, len, 0, 0, 0);
		return;
	}
	uint64_t time = orbit__ticks();
	uint64_t claim;
	struct orbit__slot *s = orbit__claim(t, &claim);
	orbit__publish(s, claim, orbit__fill_at(s, time, kind, id, t->tid, site, name, len));
}

/* One event without a call site (stops, thread names) whose name fits in
 * its record; anything else goes out of line. */
ORBIT__HOT void orbit__emit_on(struct orbit__thread *t, uint8_t kind, uint64_t id, const char *name,
                               size_t len)
{
	if (len > ORBIT__INLINE_NAME) {
		orbit__emit_named(kind, id, NULL, name, len, 0, 0, 0);
		return;
	}
	uint64_t time = orbit__ticks();
	uint64_t claim;
	struct orbit__slot *s = orbit__claim(t, &claim);
	orbit__publish(s, claim, orbit__fill(s, time, kind, id, t->tid, name, len));
}

ORBIT__HOT void orbit__emit(uint8_t kind, uint64_t id, const char *name, size_t len)
{
	struct orbit__thread *t = orbit__self();
	if (t != NULL)
		orbit__emit_on(t, kind, id, name, len);
}

ORBIT__HOT void orbit__emit_site(uint8_t kind, uint64_t id, const struct orbit__site *site,
                                 const char *name, size_t len)
{
	struct orbit__thread *t = orbit__self();
	if (t != NULL)
		orbit__emit_at(t, kind, id, site, name, len);
}

ORBIT__HOT size_t orbit__strlen(const char *s)
{
	return s ? __builtin_strlen(s) : 0;
}

ORBIT__HOT uint64_t orbit__scope_begin(const struct orbit__site *site, const char *name)
{
	struct orbit__thread *t = orbit__self();
	if (t == NULL)
		return 0;
	uint64_t id = ++t->next_id;
	orbit__emit_at(t, ORBIT__SCOPE_START, id, site, name, orbit__strlen(name));
	return id;
}

static inline uint64_t orbit__scope_begin_attrs(const struct orbit__site *site, const char *name,
                                                uint32_t color, uint64_t group)
{
	struct orbit__thread *t = orbit__self();
	if (t == NULL)
		return 0;
	uint64_t id = ++t->next_id;
	orbit__emit_named(ORBIT__SCOPE_START, id, site, name, orbit__strlen(name), color, group, 1);
	return id;
}

ORBIT__HOT void orbit__scope_end(uint64_t id)
{
	if (id != 0)
		orbit__emit(ORBIT__SCOPE_STOP, id, "", 0);
}

/* ORBIT_START keeps the ids of the innermost 64 open slices: with deeper
 * nesting the outer slices' stops carry wrong ids, and replay reports them as
 * unmatched and unfinished rather than guess. */
ORBIT__HOT void orbit__start(uint64_t id)
{
	if (id != 0) {
		struct orbit__thread *t = &orbit__thread_self;
		t->open[t->depth++ & 63] = id;
	}
}

ORBIT__HOT void orbit__stop(void)
{
	struct orbit__thread *t = &orbit__thread_self;
	if (t->depth == 0)
		return; /* started while the capture was off */
	orbit__scope_end(t->open[--t->depth & 63]);
}

ORBIT__HOT void orbit__value(uint8_t kind, const struct orbit__site *site, const char *name,
                             uint64_t bits)
{
	orbit__emit_site(kind, bits, site, name, orbit__strlen(name));
}

static inline uint64_t orbit__bits_i64(int64_t v)
{
	return (uint64_t)v;
}
static inline uint64_t orbit__bits_f64(double v)
{
	uint64_t b;
	__builtin_memcpy(&b, &v, sizeof b);
	return b;
}

/* ORBIT_SCOPE's variable: its cleanup (C) or destructor (C++) writes the
 * stop of the scope it started, 0 when none was. */
#define ORBIT__CAT2(a, b) a##b
#define ORBIT__CAT(a, b) ORBIT__CAT2(a, b)
#ifndef __cplusplus
static inline void orbit__scope_cleanup(uint64_t *id)
{
	orbit__scope_end(*id);
}
#define ORBIT__SCOPE_VAR(expr)                                                                     \
	uint64_t ORBIT__CAT(orbit__scope_, __LINE__)                                               \
	    __attribute__((cleanup(orbit__scope_cleanup), unused)) = orbit__on() ? (expr) : 0
#else
} /* extern "C" */
struct orbit__scope_guard {
	uint64_t id;
	explicit orbit__scope_guard(uint64_t i) : id(i) {}
	~orbit__scope_guard()
	{
		orbit__scope_end(id);
	}
	orbit__scope_guard(const orbit__scope_guard &) = delete;
	orbit__scope_guard &operator=(const orbit__scope_guard &) = delete;
};
#define ORBIT__SCOPE_VAR(expr)                                                                     \
	orbit__scope_guard ORBIT__CAT(orbit__scope_, __LINE__)(orbit__on() ? (expr) : 0)
extern "C" {
#endif

/* ---- what orbit.h's macros expand to ------------------------------------ */

/* The call site's descriptor, defined where the macro is written. */
#define ORBIT__SITE ORBIT__CAT(orbit__site_, __LINE__)
#define ORBIT__SITE_DEF static const struct orbit__site ORBIT__SITE = ORBIT__SITE_INIT

#define ORBIT__DO_SCOPE(name)                                                                      \
	ORBIT__SITE_DEF;                                                                           \
	ORBIT__SCOPE_VAR(orbit__scope_begin(&ORBIT__SITE, (name)))
#define ORBIT__DO_SCOPE_WITH_COLOR(name, color)                                                    \
	ORBIT__SITE_DEF;                                                                           \
	ORBIT__SCOPE_VAR(orbit__scope_begin_attrs(&ORBIT__SITE, (name), (color), 0))
#define ORBIT__DO_SCOPE_WITH_GROUP_AND_COLOR(name, group_id, color)                                \
	ORBIT__SITE_DEF;                                                                           \
	ORBIT__SCOPE_VAR(orbit__scope_begin_attrs(&ORBIT__SITE, (name), (color), (group_id)))

#define ORBIT__DO_START(name)                                                                      \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on())                                                                   \
			orbit__start(orbit__scope_begin(&ORBIT__SITE, (name)));                    \
	} while (0)
#define ORBIT__DO_START_WITH_COLOR(name, color)                                                    \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on())                                                                   \
			orbit__start(orbit__scope_begin_attrs(&ORBIT__SITE, (name), (color), 0));  \
	} while (0)
#define ORBIT__DO_START_WITH_GROUP_AND_COLOR(name, group_id, color)                                \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on())                                                                   \
			orbit__start(                                                              \
			    orbit__scope_begin_attrs(&ORBIT__SITE, (name), (color), (group_id)));  \
	} while (0)
/* No capture check: a slice started while the capture ran gets its stop even
 * if the capture stopped meanwhile (the open-slice count is the one load). */
#define ORBIT__DO_STOP() orbit__stop()

#define ORBIT__DO_START_ASYNC(name, id)                                                            \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on()) {                                                                 \
			const char *orbit__n = (name);                                             \
			orbit__emit_site(ORBIT__ASYNC_START, (uint64_t)(id), &ORBIT__SITE,         \
			                 orbit__n, orbit__strlen(orbit__n));                       \
		}                                                                                  \
	} while (0)
#define ORBIT__DO_START_ASYNC_WITH_COLOR(name, id, color)                                          \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on()) {                                                                 \
			const char *orbit__n = (name);                                             \
			orbit__emit_named(ORBIT__ASYNC_START, (uint64_t)(id), &ORBIT__SITE,        \
			                  orbit__n, orbit__strlen(orbit__n), (color), 0, 1);       \
		}                                                                                  \
	} while (0)
#define ORBIT__DO_STOP_ASYNC(id)                                                                   \
	do {                                                                                       \
		if (orbit__on())                                                                   \
			orbit__emit(ORBIT__ASYNC_STOP, (uint64_t)(id), "", 0);                     \
	} while (0)

#define ORBIT__VALUE(kind, name, bits)                                                             \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on())                                                                   \
			orbit__value((kind), &ORBIT__SITE, (name), (bits));                        \
	} while (0)
#define ORBIT__DO_INT(name, value)                                                                 \
	ORBIT__VALUE(ORBIT__VALUE_INT, name, orbit__bits_i64((int32_t)(value)))
#define ORBIT__DO_INT64(name, value)                                                               \
	ORBIT__VALUE(ORBIT__VALUE_INT64, name, orbit__bits_i64((int64_t)(value)))
#define ORBIT__DO_UINT(name, value)                                                                \
	ORBIT__VALUE(ORBIT__VALUE_UINT, name, (uint64_t)(uint32_t)(value))
#define ORBIT__DO_UINT64(name, value) ORBIT__VALUE(ORBIT__VALUE_UINT64, name, (uint64_t)(value))
#define ORBIT__DO_FLOAT(name, value)                                                               \
	ORBIT__VALUE(ORBIT__VALUE_FLOAT, name, orbit__bits_f64((float)(value)))
#define ORBIT__DO_DOUBLE(name, value)                                                              \
	ORBIT__VALUE(ORBIT__VALUE_DOUBLE, name, orbit__bits_f64((double)(value)))

#define ORBIT__VALUE_COLOR(kind, name, bits, color)                                                \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on()) {                                                                 \
			const char *orbit__n = (name);                                             \
			orbit__emit_named((kind), (bits), &ORBIT__SITE, orbit__n,                  \
			                  orbit__strlen(orbit__n), (color), 0, 1);                 \
		}                                                                                  \
	} while (0)
#define ORBIT__DO_INT_WITH_COLOR(name, value, color)                                               \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_INT, name, orbit__bits_i64((int32_t)(value)), color)
#define ORBIT__DO_INT64_WITH_COLOR(name, value, color)                                             \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_INT64, name, orbit__bits_i64((int64_t)(value)), color)
#define ORBIT__DO_UINT_WITH_COLOR(name, value, color)                                              \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_UINT, name, (uint64_t)(uint32_t)(value), color)
#define ORBIT__DO_UINT64_WITH_COLOR(name, value, color)                                            \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_UINT64, name, (uint64_t)(value), color)
#define ORBIT__DO_FLOAT_WITH_COLOR(name, value, color)                                             \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_FLOAT, name, orbit__bits_f64((float)(value)), color)
#define ORBIT__DO_DOUBLE_WITH_COLOR(name, value, color)                                            \
	ORBIT__VALUE_COLOR(ORBIT__VALUE_DOUBLE, name, orbit__bits_f64((double)(value)), color)

#define ORBIT__DO_THREAD_NAME(name)                                                                \
	do {                                                                                       \
		if (orbit__on()) {                                                                 \
			const char *orbit__n = (name);                                             \
			orbit__emit(ORBIT__THREAD_NAME, 0, orbit__n, orbit__strlen(orbit__n));     \
		}                                                                                  \
	} while (0)

#define ORBIT__DO_LOG(...)                                                                         \
	do {                                                                                       \
		ORBIT__SITE_DEF;                                                                   \
		if (orbit__on())                                                                   \
			orbit__log_at(&ORBIT__SITE, __VA_ARGS__);                                  \
	} while (0)

#else /* !ORBIT_API_ENABLED: every macro is an empty statement, its arguments unevaluated */

#define ORBIT__NOTHING                                                                             \
	do {                                                                                       \
	} while (0)
#define ORBIT__DO_SCOPE(...) ORBIT__NOTHING
#define ORBIT__DO_SCOPE_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_SCOPE_WITH_GROUP_AND_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_START(...) ORBIT__NOTHING
#define ORBIT__DO_START_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_START_WITH_GROUP_AND_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_STOP() ORBIT__NOTHING
#define ORBIT__DO_START_ASYNC(...) ORBIT__NOTHING
#define ORBIT__DO_START_ASYNC_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_STOP_ASYNC(...) ORBIT__NOTHING
#define ORBIT__DO_INT(...) ORBIT__NOTHING
#define ORBIT__DO_INT64(...) ORBIT__NOTHING
#define ORBIT__DO_UINT(...) ORBIT__NOTHING
#define ORBIT__DO_UINT64(...) ORBIT__NOTHING
#define ORBIT__DO_FLOAT(...) ORBIT__NOTHING
#define ORBIT__DO_DOUBLE(...) ORBIT__NOTHING
#define ORBIT__DO_INT_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_INT64_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_UINT_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_UINT64_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_FLOAT_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_DOUBLE_WITH_COLOR(...) ORBIT__NOTHING
#define ORBIT__DO_THREAD_NAME(...) ORBIT__NOTHING
#define ORBIT__DO_LOG(...) ORBIT__NOTHING

#endif /* ORBIT_API_ENABLED */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ORBIT_INTERNAL_H */
