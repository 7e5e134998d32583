/*
 * orbit.h — liborbit, the Orbit tracing agent: the whole API.
 *
 * Mark code with the macros below and link liborbit (`pkg-config orbit`, or
 * CMake's find_package(orbit) and orbit::orbit). Nothing is recorded until a
 * capture runs: call orbit_init(), or start the program with
 * ORBIT_COLLECTOR=host:port or ORBIT_CAPTURE=file in its environment, which
 * starts the agent when the library loads and flushes at exit. docs/api.md
 * is the manual; docs/operations.md lists the environment.
 *
 *     #include <orbit.h>
 *
 *     void parse(const char *text, size_t len)
 *     {
 *             ORBIT_SCOPE("parse");        // a slice until the block ends
 *             ORBIT_UINT64("bytes", len);  // a value on the track "bytes"
 *             ORBIT_LOG("parsing %.*s", (int)len, text);
 *     }
 *
 * Cost. With no capture running, every macro is one relaxed load and a
 * branch not taken, and evaluates none of its arguments (ORBIT_STOP: one
 * thread-local load). With a capture, an
 * event whose name fits its record (up to 24 bytes; 32 for a thread name)
 * is written inline: one clock read, one relaxed fetch_add on a ring
 * cursor, plain stores of a 56-byte record and one release store that
 * publishes it, with no lock, allocation or syscall (about 10 ns on x86-64,
 * docs/performance.md). A longer name, or a color or group id, takes an
 * out-of-line call and one more ring slot per further 32 bytes of name. A
 * thread's first event costs one gettid syscall.
 *
 * No-op. Define ORBIT_API_ENABLED to 0 before including this header and
 * every macro compiles to an empty statement that evaluates none of its
 * arguments; the functions stay declared.
 *
 * Names are string literals or runtime strings of any bytes, up to their
 * first NUL, copied when the macro runs (the pointer is not kept); NULL is
 * the empty name. Colors are 0xRRGGBBAA, group ids any 64-bit value: both
 * travel with the event to the viewers. Every macro and function may run on
 * any thread at any time, concurrently with orbit_init(), orbit_flush() and
 * orbit_shutdown(). Arguments with side effects are evaluated only while a
 * capture runs.
 *
 * The inline write path behind the macros is in orbit/internal.h, included
 * at the end of this file: it is not API, and everything named orbit__* or
 * ORBIT__* may change in any release.
 */
#ifndef ORBIT_H
#define ORBIT_H

#include <stddef.h>
#include <stdint.h>

#ifndef ORBIT_API_ENABLED
#define ORBIT_API_ENABLED 1
#endif

#if defined(__GNUC__)
#define ORBIT_EXPORT __attribute__((visibility("default")))
#else
#define ORBIT_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- starting and stopping a capture ------------------------------------ */

/*
 * Starts tracing: creates this process's shared-memory segment, starts the
 * agent thread and turns the capture on. Safe to call more than once and from
 * any thread. Returns 0, or a negative error (orbit_strerror()); on failure
 * tracing stays off and the program is not otherwise affected.
 */
ORBIT_EXPORT int orbit_init(void);

/* Drains everything recorded so far and hands it to the sink, waiting at most
 * ORBIT_FLUSH_TIMEOUT_MS. Returns 0 or a negative error. */
ORBIT_EXPORT int orbit_flush(void);

/* Turns the capture off, flushes, and stops the agent thread. Macros running
 * concurrently stay safe: the segment stays mapped for the life of the
 * process. orbit_init() may start a new capture afterwards. */
ORBIT_EXPORT void orbit_shutdown(void);

/* ---- scopes: slices on a thread, spans across threads ------------------- */

/*
 * A slice from here to the end of the enclosing block, on the calling
 * thread: a declaration (C: a variable with a cleanup attribute, so two on
 * one line do not compile; C++: an RAII object, which also ends the slice
 * when an exception leaves the block). Two events, start and stop; the stop
 * is written even if the capture stopped meanwhile.
 */
#define ORBIT_SCOPE(name) ORBIT__DO_SCOPE(name)
/* The same with a color; out of line. */
#define ORBIT_SCOPE_WITH_COLOR(name, color) ORBIT__DO_SCOPE_WITH_COLOR(name, color)
/* The same with a 64-bit group id and a color; out of line. */
#define ORBIT_SCOPE_WITH_GROUP_AND_COLOR(name, group_id, color)                                    \
	ORBIT__DO_SCOPE_WITH_GROUP_AND_COLOR(name, group_id, color)

/*
 * Opens a slice on the calling thread, closed by ORBIT_STOP(); slices nest.
 * A thread keeps the ids of its innermost 64 open slices: deeper nesting
 * gives the outer ones wrong stops, which readers report as unmatched.
 */
#define ORBIT_START(name) ORBIT__DO_START(name)
#define ORBIT_START_WITH_COLOR(name, color) ORBIT__DO_START_WITH_COLOR(name, color)
#define ORBIT_START_WITH_GROUP_AND_COLOR(name, group_id, color)                                    \
	ORBIT__DO_START_WITH_GROUP_AND_COLOR(name, group_id, color)
/*
 * Closes the innermost slice ORBIT_START opened on this thread; nothing if
 * none is open. It does not test the capture flag: a slice started while the
 * capture ran gets its stop even if the capture stopped meanwhile (the cost
 * with nothing open is one thread-local load and a branch).
 */
#define ORBIT_STOP() ORBIT__DO_STOP()

/*
 * A span that may stop on another thread: readers pair the start and the
 * stop by the 64-bit id alone, across threads and rings.
 */
#define ORBIT_START_ASYNC(name, id) ORBIT__DO_START_ASYNC(name, id)
/* The same with a color; out of line. */
#define ORBIT_START_ASYNC_WITH_COLOR(name, id, color)                                              \
	ORBIT__DO_START_ASYNC_WITH_COLOR(name, id, color)
#define ORBIT_STOP_ASYNC(id) ORBIT__DO_STOP_ASYNC(id)

/* ---- values: a number on the track called name -------------------------- */

/*
 * One event each, holding the value's 64 bits: ORBIT_INT (int32_t,
 * sign-extended), ORBIT_INT64, ORBIT_UINT (uint32_t), ORBIT_UINT64,
 * ORBIT_FLOAT (float, widened to double) and ORBIT_DOUBLE (IEEE-754
 * binary64 bits). The _WITH_COLOR forms add a color and go out of line.
 */
#define ORBIT_INT(name, value) ORBIT__DO_INT(name, value)
#define ORBIT_INT64(name, value) ORBIT__DO_INT64(name, value)
#define ORBIT_UINT(name, value) ORBIT__DO_UINT(name, value)
#define ORBIT_UINT64(name, value) ORBIT__DO_UINT64(name, value)
#define ORBIT_FLOAT(name, value) ORBIT__DO_FLOAT(name, value)
#define ORBIT_DOUBLE(name, value) ORBIT__DO_DOUBLE(name, value)
#define ORBIT_INT_WITH_COLOR(name, value, color) ORBIT__DO_INT_WITH_COLOR(name, value, color)
#define ORBIT_INT64_WITH_COLOR(name, value, color) ORBIT__DO_INT64_WITH_COLOR(name, value, color)
#define ORBIT_UINT_WITH_COLOR(name, value, color) ORBIT__DO_UINT_WITH_COLOR(name, value, color)
#define ORBIT_UINT64_WITH_COLOR(name, value, color) ORBIT__DO_UINT64_WITH_COLOR(name, value, color)
#define ORBIT_FLOAT_WITH_COLOR(name, value, color) ORBIT__DO_FLOAT_WITH_COLOR(name, value, color)
#define ORBIT_DOUBLE_WITH_COLOR(name, value, color) ORBIT__DO_DOUBLE_WITH_COLOR(name, value, color)

/* ---- thread names ------------------------------------------------------- */

/* Names the calling thread in the capture: one event, inline up to 32
 * bytes. */
#define ORBIT_THREAD_NAME(name) ORBIT__DO_THREAD_NAME(name)

/* Names longer than this many bytes are cut to it (the record's 16-bit
 * length). */
#define ORBIT_NAME_MAX 65535u

/* ---- log lines and markers ---------------------------------------------- */

/*
 * A printf-style log line with the thread id, a CLOCK_MONOTONIC time and
 * the call site, formatted on the calling thread into a 4096-byte stack
 * buffer and cut, silently, at 4095 bytes or at what a record holds (4056
 * bytes with 4 KiB pages; 4064 for orbit_log, which has no call site). A
 * statement: with no capture running it evaluates nothing; otherwise it
 * writes the line as orbit_log does and discards the result. Costs the
 * formatting and about six atomic read-modify-writes on the page ring of the
 * CPU the thread runs on (80-120 ns on x86-64); never blocks.
 */
#define ORBIT_LOG(fmt, ...) ORBIT__DO_LOG(fmt, ##__VA_ARGS__)

/*
 * orbit_log writes one log line as ORBIT_LOG does, without the call site;
 * orbit_marker writes len bytes of binary data as one record (never cut).
 * They go to a page ring of the CPU the thread runs on, in the Linux ftrace
 * page format: ORBIT_PAGE_RING_PAGES pages (default 64) of the system page
 * size per CPU; ORBIT_PAGE_RING_OVERWRITE=1 discards the oldest page when a
 * ring is full instead of the new record. Readers see a marker padded with
 * zeros to a multiple of 4 bytes, as every ftrace record is.
 *
 * Never block. Return 0, or a negative error: -ENOSPC the ring is full,
 * -ENOBUFS the record was dropped (overwrite on, oldest page busy),
 * -EMSGSIZE a marker longer than a record holds, -EINVAL data NULL with
 * len > 0, ORBIT_EDISABLED no capture runs. Full and dropped records are
 * counted as lost in the capture.
 */
ORBIT_EXPORT int orbit_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
ORBIT_EXPORT int orbit_marker(const void *data, size_t len);

/* ---- errors ------------------------------------------------------------- */

/* Orbit's own error codes, beside negative errno values. */
#define ORBIT_ERRORS(X)                                                                            \
	X(ORBIT_EBADSEG, -1001, "segment header is invalid")                                       \
	X(ORBIT_ENOTINIT, -1002, "segment is not initialised yet")                                 \
	X(ORBIT_EVERSION, -1003, "segment version is not supported")                               \
	X(ORBIT_ETRUNC, -1004, "segment is shorter than its header describes")                     \
	X(ORBIT_EDISABLED, -1005, "tracing is disabled")
enum orbit_error {
#define ORBIT__ERR_ENUM(name, value, text) name = value,
	ORBIT_ERRORS(ORBIT__ERR_ENUM)
#undef ORBIT__ERR_ENUM
};

/* A description of an error returned by any orbit_* function: the text of
 * an ORBIT_E* code, strerror(-err) for a negative errno. */
ORBIT_EXPORT const char *orbit_strerror(int err);

#ifdef __cplusplus
} /* extern "C" */
#endif

#include "orbit/internal.h" /* not API */

#endif /* ORBIT_H */
