/*
 * log_record.h — the payload of one log page record (docs/format.md 5.3 is
 * normative): what ORBIT_LOG, orbit_log and orbit_marker write into the
 * agent's page rings (agent/src/logs.c) and what readers take apart
 * (replay). Little-endian, like the kernel's common event fields:
 *
 *   bytes 0..2   u16 type (enum orbit__logs_type)
 *   byte  2      u8 flags, 0
 *   byte  3      u8 preempt count, 0
 *   bytes 4..8   s32 tid of the writer
 *   bytes 8..    ORBIT__LOGS_LINE: the text, without its NUL;
 *                ORBIT__LOGS_MARKER: the marker's bytes;
 *                ORBIT__LOGS_LINE_AT: the u64 address of the line's call
 *                site (struct orbit__site), then the text
 *
 * A page record's length is a multiple of 4 and its pad bytes are zero, so
 * a line's text ends at the first NUL of the payload or at its end.
 */
#ifndef ORBIT_FORMAT_LOG_RECORD_H
#define ORBIT_FORMAT_LOG_RECORD_H

enum orbit__logs_type {
	ORBIT__LOGS_LINE = 1,
	ORBIT__LOGS_MARKER = 2,
	ORBIT__LOGS_LINE_AT = 3, /* a line with its call site */
};

#define ORBIT__LOGS_HEADER 8u /* type, flags, preempt count, tid */

#endif
