#!/usr/bin/env python3
"""zstd_frames.py — a test tool: cuts a capture into its zstd frames.

    zstd_frames.py FILE              prints each frame's offset and length
    zstd_frames.py FILE OUT A B      writes frame 0 (the Handshake) then frames
                                     A..B-1 (B may be 'end') to OUT
    zstd_frames.py FILE OUT A B CUT  ... then the first CUT bytes of frame B

Frames are walked by their headers alone (RFC 8878, 3.1.1): magic, frame
header, blocks, optional checksum. Used to build a collector's capture and
the spool of its tail from one complete capture.
"""
import sys


def frames(b):
    out, i = [], 0
    while i < len(b):
        start = i
        if int.from_bytes(b[i:i + 4], "little") != 0xFD2FB528:
            raise SystemExit(f"no zstd frame at offset {i}")
        fhd = b[i + 4]
        i += 5
        single, did, fcs, checksum = (fhd >> 5) & 1, fhd & 3, fhd >> 6, (fhd >> 2) & 1
        if not single:
            i += 1  # window descriptor
        i += (0, 1, 2, 4)[did]
        i += ((1 if single else 0), 2, 4, 8)[fcs]
        while True:
            bh = int.from_bytes(b[i:i + 3], "little")
            i += 3
            i += 1 if (bh >> 1) & 3 == 1 else bh >> 3  # an RLE block holds one byte
            if bh & 1:
                break
        i += 4 if checksum else 0
        out.append(b[start:i])
    return out


def main():
    data = open(sys.argv[1], "rb").read()
    fr = frames(data)
    if len(sys.argv) == 2:
        off = 0
        for f in fr:
            print(off, len(f))
            off += len(f)
        return
    a = int(sys.argv[3])
    b = len(fr) if sys.argv[4] == "end" else int(sys.argv[4])
    with open(sys.argv[2], "wb") as out:
        out.write(fr[0])
        for f in fr[max(a, 1):b]:
            out.write(f)
        if len(sys.argv) > 5:
            out.write(fr[b][: int(sys.argv[5])])


main()
