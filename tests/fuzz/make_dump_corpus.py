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

# The scope rings past the flight ring's frames (dump/dump_rings.c):
# records no frame holds, then hostile rings.
p = subprocess.Popen([victim, "undrained", "300", "40"], env=dict(env, ORBIT_DRAIN_MS="60000"))
p.wait()
undrained = segment_of(p.pid)
write("undrained", undrained)
rings_at, stride = struct.unpack_from("<QQ", undrained, 48)
ring_count, slots = struct.unpack_from("<II", undrained, 32)
huge = bytearray(undrained)
huge[rings_at:rings_at + 8] = struct.pack("<Q", (1 << 64) - 3)  # ring 0's cursor
write("undrained_cursor_huge", bytes(huge))
torn = bytearray(undrained)
for r in range(ring_count):
    for i in range(0, slots, 3):  # every third slot's record word 1 changed
        at = rings_at + r * stride + 128 + 64 * i + 16
        torn[at] ^= 0x5a
write("undrained_torn", bytes(torn))
stamps = bytearray(undrained)
for r in range(ring_count):
    for i in range(slots):  # stamps of other laps, markers, nothing
        at = rings_at + r * stride + 128 + 64 * i
        s = struct.unpack_from("<Q", stamps, at)[0]
        s = [0, s & 0xffffffff, s + (slots << 1), s - slots][i % 4]
        stamps[at:at + 8] = struct.pack("<Q", s & ((1 << 64) - 1))
write("undrained_stamps", bytes(stamps))
