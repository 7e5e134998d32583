#!/usr/bin/env python3
"""Writes the seed corpus of segment_fuzz (tests/fuzz/corpus/segment/).

Run once from the repository root: python3 tests/fuzz/make_segment_corpus.py
The layout is format/segment.h's (docs/format.md 1.1, 1.2); the records are
format/record.h's.
The corpus's found_* files are not made here: the fuzzer found them.
"""
import os
import struct

PAGE = 4096
MAGIC = 0x314745535442524F  # "ORBTSEG1"
# struct orbit__seg_header, 184 bytes: the version-1 fields, then the state,
# page-ring and flight areas, the creation time, comm and uid.
HEADER = struct.Struct("<Q8I4Q2IQ" "3Q4I4Q16s2I")
RING_HEADER = 128
SLOT = 64
STATE_SIZE = 32768  # sizeof(struct orbit__seg_state) = 28832, to whole pages
RINGS_AT = 2 * PAGE + STATE_SIZE
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "segment")

SCOPE_START, SCOPE_STOP, ASYNC_START, ASYNC_STOP = 1, 2, 3, 4
INT, DOUBLE, THREAD_NAME, NAME_CONT = 5, 10, 11, 12


# orbit__check (agent/include/orbit/internal.h, docs/format.md 1.5): bits
# 33-63 of a weighted sum of the record's seven words, bit 32 set, low 32
# bits zero.
CHECK_WEIGHTS = (0x9e3779b97f4a7c15, 0xbf58476d1ce4e5b9, 0x94d049bb133111eb,
                 0xff51afd7ed558ccd, 0xc4ceb9fe1a85ec53, 0xd6e8feb86659fd93,
                 0xa0761d6478bd642f)
M64 = (1 << 64) - 1


def check(record):
    words = struct.unpack("<7Q", record)
    m = sum(w * k for w, k in zip(words, CHECK_WEIGHTS)) & M64
    return (m & ~0xffffffff & M64) | (1 << 32)


def stamp(claim, record):
    """The stamp of claim's complete record."""
    return (claim + 1 + check(record)) & M64


def header(rings, slots, magic=MAGIC, version=3, clock=0):
    stride = RING_HEADER + slots * SLOT
    end = RINGS_AT + rings * stride
    pages = (end + PAGE - 1) // PAGE * PAGE  # no page rings, no flight ring
    return HEADER.pack(magic, version, HEADER.size, PAGE, 56, SLOT, RING_HEADER, rings,
                       slots, PAGE, RINGS_AT, stride, pages, 4242, clock, 1000,
                       2 * PAGE, STATE_SIZE, pages, 0, 0, 0, 0, 0, pages, 0,
                       1764590000000000000, b"fuzz", 0, 0)


def record(kind, ident=0, name=b"", flags=0, length=None, tid=7, time=100):
    if length is None:
        length = len(name)
    return struct.pack("<QQIBBH32s", time, ident, tid, kind, flags, length, name)


def slot(seq, kind, ident=0, name=b"", flags=0, length=None, tid=7, time=100):
    """A slot with stamp seq (None: the published stamp of claim seq - 1)."""
    rec = record(kind, ident, name, flags, length, tid, time)
    return struct.pack("<Q", seq) + rec


def named(kind, ident, name, color=None, group=0):
    """Head record and continuations of one event, as orbit_emit_named writes them."""
    if color is not None:
        inline = struct.pack("<IQ", color, group) + name[:20]
        out = [(kind, ident, inline, 1, len(name))]
        rest = name[20:]
    else:
        out = [(kind, ident, name[:32], 0, len(name))]
        rest = name[32:]
    part = 1
    while rest:
        out.append((NAME_CONT, ident, rest[:32], 0, part))
        rest = rest[32:]
        part += 1
    return out


def segment(rings, slots, ring_records, cursors=None, **kw):
    """ring_records[r]: {claim: record tuple or raw slot bytes}."""
    img = bytearray(header(rings, slots, **kw))
    img += bytes(PAGE - len(img))
    img += bytes(PAGE)  # control page
    img += bytes(STATE_SIZE)  # state area: no block complete
    for r in range(rings):
        recs = ring_records[r] if r < len(ring_records) else {}
        cursor = cursors[r] if cursors else (max(recs) + 1 if recs else 0)
        ring = bytearray(struct.pack("<Q", cursor) + bytes(RING_HEADER - 8))
        ring += bytes(slots * SLOT)
        for claim, rec in recs.items():
            if isinstance(rec, bytes):
                raw = rec
            else:
                body = record(*rec[:2], name=rec[2], flags=rec[3], length=rec[4])
                raw = struct.pack("<Q", stamp(claim, body)) + body
            off = RING_HEADER + (claim % slots) * SLOT
            ring[off:off + SLOT] = raw
        img += ring
    img += bytes(-len(img) % PAGE)
    return bytes(img)


def sequence(events):
    recs = []
    for e in events:
        recs.extend(e)
    return {i: r for i, r in enumerate(recs)}


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


def main():
    os.makedirs(OUT, exist_ok=True)
    trace = sequence([
        named(THREAD_NAME, 0, b"main"),
        named(SCOPE_START, 1, b"parse"),
        named(INT, 42, b"frames"),
        named(SCOPE_START, 2, b"a name longer than one record: 33"),
        [(SCOPE_STOP, 2, b"", 0, 0)],
        named(SCOPE_START, 3, b"colored, with group id", color=0xFF0000FF, group=9),
        [(SCOPE_STOP, 3, b"", 0, 0)],
        [(SCOPE_STOP, 1, b"", 0, 0)],
        named(ASYNC_START, 77, b"load \xc3\xa9\"\\\n"),
        [(ASYNC_STOP, 77, b"", 0, 0)],
        named(DOUBLE, 0x400921FB54442D18, b"pi"),
    ])
    valid = segment(1, 16, [trace])
    write("valid_1x16", valid)
    # Lapped: the cursor is 40, the slots hold claims 24..39.
    lapped = {c: (SCOPE_START if c % 2 == 0 else SCOPE_STOP, c // 2, b"x", 0, 1)
              for c in range(24, 40)}
    write("lapped_1x16", segment(1, 16, [lapped]))
    # Two rings: ring 0 stalls on an unpublished claim 2, ring 1 flows.
    stalled = {0: (SCOPE_START, 1, b"a", 0, 1), 1: (SCOPE_START, 2, b"b", 0, 1),
               3: (SCOPE_STOP, 2, b"", 0, 0), 4: (SCOPE_STOP, 1, b"", 0, 0)}
    write("stalled_2x16", segment(2, 16, [stalled, sequence([named(INT, 5, b"v")])],
                                  cursors=[5, 1]))
    # A long name cut short: the continuations were never published.
    long_name = sequence([named(SCOPE_START, 1, bytes(range(32, 127)) * 3)])
    write("continuations_lost", segment(1, 16, [{k: v for k, v in long_name.items() if k < 4}],
                                        cursors=[10]))
    # Hostile: cursor near the top of u64. Claim 0 is published, slot 1's
    # stamp is a lap ahead (skip to cursor - 16), then some resident claims
    # are published and others not, with kinds, flags and lengths of every
    # shape.
    top = (1 << 64) - 3
    hostile = {}
    for i in range(16):
        claim = next(c for c in range(top - 16, top) if c % 16 == i)
        body = record(i % 14, i, bytes([0xFF - i]) * 32, flags=i % 3,
                      length=[0xFFFF, 0, 33, 20, 21][i % 5])
        seq = stamp(claim, body) if i % 3 != 2 else [0, 1 << 63][i % 2]
        if i == 0:
            seq = stamp(0, body)
        elif i == 1:
            seq = 1 << 63
        elif i == 4:
            seq = claim + 1  # a marker: claimed, being written
        hostile[i] = struct.pack("<Q", seq) + body
    write("hostile_cursor", segment(1, 16, [hostile], cursors=[top]))
    # ORBIT_SCOPE(""): a head record with an empty name.
    write("empty_name", segment(1, 16, [sequence([
        named(SCOPE_START, 1, b""), [(SCOPE_STOP, 1, b"", 0, 0)],
        named(THREAD_NAME, 0, b""), named(INT, 3, b"", color=0x01020304)])]))
    write("truncated", valid[:len(valid) - 1])
    write("header_only", valid[:HEADER.size])
    write("not_initialised", bytes(8) + valid[8:])
    write("version_4", segment(1, 16, [trace], version=4))
    # Version 2 (the site's address folded into the check's meta word): refused.
    write("version_2", segment(1, 16, [trace], version=2))
    # Version 1 (stamps were claim + 1, no check): refused.
    write("version_1", segment(1, 16, [trace], version=1))
    # Claim 16 was handed out, and its slot shows claim 0's record, which a
    # late producer published there after claims 1..15: the drain delivers
    # 0..15 and writes 16 off rather than wait (scope_ring.c, guarantee 7).
    late = {0: (SCOPE_START, 1, b"late", 0, 4)}
    late.update({c: (INT, c, b"v", 0, 1) for c in range(1, 16)})
    write("late_stamp_1x16", segment(1, 16, [late], cursors=[17]))
    # A torn copy: claim 5's stamp over words another record wrote.
    torn = sequence([named(INT, c, b"t") for c in range(10)])
    img = bytearray(segment(1, 16, [torn]))
    off = RINGS_AT + RING_HEADER + 5 * SLOT + 8
    img[off:off + 8] = struct.pack("<Q", 12345)  # time replaced
    write("torn_1x16", bytes(img))
    write("clock_tsc", segment(1, 16, [trace], clock=1))


if __name__ == "__main__":
    main()
