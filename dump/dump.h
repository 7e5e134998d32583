/*
 * dump.h — orbit-dump: a segment (format/segment.h) to a capture that
 * orbit-replay reads (docs/replay.md, "orbit-dump"; docs/format.md 1 and
 * 4.11). The parts:
 *
 *   dump_main.c     the command line: a pid or a segment, -o, --list,
 *                   --remove
 *   dump_find.c     segments in /dev/shm: by pid, listed, removed
 *   dump_read.c     the segment through its file descriptor with pread
 *                   only: never a mapping, so a segment cut or shrunk while
 *                   it is read costs a short read and one line, never a
 *                   SIGBUS; every byte checked before it is used
 *   dump_rings.c    what the scope rings hold that no frame did
 *   dump_write.c    the capture file: the flight ring's frames as they are,
 *                   then frames of its own for what no frame held, both
 *                   through format/stream_writer.h
 *
 * Exit statuses: 0 a complete dump; 1 usage, or no such segment, or not
 * ours to read; 2 the segment is damaged (one line says where: the dump
 * then holds what could be read); 3 the capture could not be written.
 */
#ifndef ORBIT_REPLAY_DUMP_H
#define ORBIT_REPLAY_DUMP_H

#include <stdint.h>
#include <stdio.h>

#include "capture.h"
#include "flight.h"
#include "frame.h"
#include "segment.h"
#include "segment_clock.h"
#include "stream_writer.h"

enum orbit_dump_status {
	ORBIT_DUMP_OK = 0,
	ORBIT_DUMP_USAGE = 1,
	ORBIT_DUMP_DAMAGED = 2,
	ORBIT_DUMP_OUTPUT = 3,
};

/* Where the capture goes: the stream writer's frames (the flight ring's
 * copied as they are, then its own), written to fd as they are made. */
struct orbit_dump_out {
	int fd;
	const char *path;
	const char *who; /* what its lines begin with: "orbit-dump", or "orbit" in the agent */
	int failed;      /* a write failed: said once */
	uint64_t bytes;
	struct orbit__sw *sw;
};

/* One dump of one segment. */
struct orbit_dump {
	const char *name; /* as given, for messages */
	const char *who;  /* what its lines begin with; NULL: "orbit-dump" */
	int out_replace;  /* the output was named (-o): a file of the caller's there is replaced */
	int fd;
	uint64_t file_size;
	uint64_t held; /* bytes the file holds (its blocks): what a copy may cost */
	FILE *err;
	int damaged;       /* a problem was said: exit 2 */
	char problem[260]; /* the first one, for the Dump packet */
	struct orbit__seg_layout l;
	int life; /* enum orbit__seg_life */
	uint64_t now_mono, now_real;
	struct orbit__seg_point earlier; /* a calibration pair taken as the dump began */
	int completing;                  /* orbit__dump_complete: the frames are the capture's */
	uint64_t capture_frames;         /* ... and how many it kept */

	/* the calibration and the names (state area) */
	struct orbit__seg_conv conv;
	int conv_ok;
	struct orbit__seg_names names;
	int names_ok;

	/* the flight ring */
	int flight; /* it had a stream */
	struct orbit__flight_meta meta;
	uint64_t kept_frames, damaged_frames, kept_records[ORBIT_MAX_RINGS];
	int ended;            /* the stream's end frame was among them */
	Orbit__Handshake *hs; /* the stream's handshake, decoded (NULL: made up) */
	uint64_t ring_start[ORBIT_MAX_RINGS];
	uint64_t from[ORBIT_MAX_RINGS]; /* where the rings are read from */

	/* what the dump itself took */
	uint64_t ring_records, log_pages, untrusted;
	uint64_t busy_pages; /* log pages left out: a writer was inside */
	struct orbit_frame_scratch scratch;
	struct orbit_dump_out out;
};

/* What d's lines begin with. */
const char *orbit__dump_who(const struct orbit_dump *d);

/* Says one line "orbit-dump: NAME: offset N: what" and marks the dump
 * damaged (the first one is kept for the Dump packet). */
void orbit__dump_problem(struct orbit_dump *d, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* pread exactly len bytes at off: 0, or -1 after saying that the segment
 * ends before (it shrank, or was cut) or that it could not be read. */
int orbit__dump_pread(struct orbit_dump *d, void *buf, uint64_t len, uint64_t off);
/* Whether a private copy of len bytes of the area at off (what: its name)
 * may be made: at most what the file holds, whatever its header declares
 * (a sparse file of a lying header would otherwise cost its declared size
 * in memory). 0, or -1 after saying so. */
int orbit__dump_affords(struct orbit_dump *d, uint64_t len, uint64_t off, const char *what);

/* Reads the segment open on d->fd and writes its capture to out_path ("-":
 * stdout). Returns an enum orbit_dump_status. */
int orbit__dump_run(struct orbit_dump *d, const char *out_path);

/* Completes the capture its agent could not end (capture, open on cfd for
 * reading and writing; the descriptor is the dump's from then on): the
 * stream of the segment's process whose image exec'd, or whose agent was
 * killed, checked to be that segment's (its handshake's pid, rings and
 * time); a torn last frame is cut off, then what the segment's rings and
 * log pages hold past the capture's frames, its threads' names, the final
 * Loss packets, a Dump packet (completed = 1) and EndOfStream are appended,
 * so that claimed == delivered + lost holds for the whole file. The
 * segment's lock must be free (no agent of its own). Returns an enum
 * orbit_dump_status; a capture that is not that stream's, already ended, or
 * damaged before its end is left as it is. */
int orbit__dump_complete(struct orbit_dump *d, int cfd, const char *capture);

/* ---- the scope rings (dump_rings.c) ---- */

/* What the dump read of one scope ring, from d->from[r] (where the flight
 * ring's frames leave off) to the cursor. */
struct orbit_dump_ring {
	uint64_t end;       /* the cursor read: claims below it were made */
	uint64_t next;      /* where the walk stopped (end, unless the segment was cut) */
	uint64_t delivered; /* records put in RingBatch packets */
	uint64_t lapped;    /* overwritten, torn, or a late producer's (Loss.lapped) */
	uint64_t gone;      /* claimed by the dead process, never published */
	uint64_t pending;   /* claimed, not published yet in a live process (at_end) */
};

/* Reads each scope ring's slots of claims d->from[r] .. cursor[r] (at most
 * one ring's worth, the newest) with pread into a private copy, checks them
 * with format/scope_slot.h's reader, and writes the records as RingBatch
 * packets, their times converted with d->conv. */
void orbit__dump_rings(struct orbit_dump *d, const uint64_t *cursor, struct orbit_dump_ring *res);

/* ---- the capture (dump_write.c) ---- */
/* Opens the file and the writer its frames come from (o->sw: frames cut
 * at ORBIT_FRAME_TARGET, as the agent's); 0, or -1 after one line. The file
 * is new (O_EXCL, never through a link); with replace, a path that is a
 * regular file of the caller's is replaced by a new file renamed over it
 * (its inode, and any other name it has, untouched); anything else there
 * (a FIFO, a link, another user's file) is refused. */
int orbit__dump_out_open(struct orbit_dump_out *o, const char *path, int replace, FILE *err);
/* The writer for frames appended to fd (open for writing at its end; closed
 * by orbit__dump_out_close), whose lines begin with who. 0, or -1. */
int orbit__dump_out_append(struct orbit_dump_out *o, int fd, const char *path, const char *who,
                           FILE *err);
/* Opens a capture to complete (orbit__dump_complete): a regular file of the
 * caller's, never through a link, that no live agent holds (its lock, taken
 * now and kept while the descriptor is open). The descriptor, or -1 after
 * one line. */
int orbit__dump_open_capture(const char *path, FILE *err);
/* The last frame out, then the file closed: 0, or -1 if anything failed. */
int orbit__dump_out_close(struct orbit_dump_out *o);

#endif
