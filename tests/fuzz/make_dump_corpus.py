#!/usr/bin/env python3
"""Writes the seed corpus of dump_fuzz (tests/fuzz/corpus/dump/) from real
segments: small traced victims (tests/integration/flight_victim.c) that
crash or are killed, their segments turned into dump_fuzz's input, patches
over zeros (see dump_fuzz.c).

Run from the repository root after a build:
    python3 tests/fuzz/make_dump_corpus.py build/dev
"""
import glob
import os
import signal
import struct
import subprocess
import sys
import time

build = sys.argv[1]
victim = os.path.join(build, "tests", "flight_victim")
out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "dump")
os.makedirs(out, exist_ok=True)
small = {"ORBIT_FLIGHT": "1M", "ORBIT_RINGS": "2", "ORBIT_RING_BUDGET": "2K",
         "ORBIT_PAGE_RING_PAGES": "2", "ASAN_OPTIONS": "handle_segv=0"}


def segment_of(pid):
    seg = glob.glob("/dev/shm/orbit-%d-*" % pid)
    assert len(seg) == 1, seg
    data = open(seg[0], "rb").read()
    os.unlink(seg[0])
    return data


def patches(data):
    """dump_fuzz's input: size in KiB, then the non-zero runs."""
    blob = bytearray(struct.pack("<I", (len(data) + 1023) // 1024))
    i = 0
    while i < len(data):
        if data[i] == 0:
            i += 1
            continue
        j = i
        while j < len(data) and j - i < 65535 and (data[j] != 0 or data[j:j + 16].strip(b"\0")):
            j += 1
        blob += struct.pack("<IH", i, j - i) + data[i:j]
        i = j
    return bytes(blob)


def write(name, data):
    with open(os.path.join(out, name), "wb") as f:
        f.write(patches(data))


env = dict(os.environ, **small)
p = subprocess.Popen([victim, "crash"], env=env)
p.wait()
crash = segment_of(p.pid)
write("crash", crash)
write("crash_header_only", crash[:4096])
write("crash_cut", crash[:len(crash) // 2])

beat = "/tmp/make_dump_corpus.beat"
p = subprocess.Popen([victim, "spin", beat], env=env)
time.sleep(0.5)
p.send_signal(signal.SIGKILL)
p.wait()
os.unlink(beat)
spin = segment_of(p.pid)
write("killed", spin)
flight = struct.unpack_from("<Q", spin, 136)[0]
bad = bytearray(spin)
bad[flight + 56:flight + 64] = b"\xff" * 8  # meta[0].head anywhere
write("killed_bad_head", bytes(bad))
noflight = bytearray(spin)
noflight[flight:flight + 8] = bytes(8)  # no stream began on it
write("killed_no_flight", bytes(noflight))
