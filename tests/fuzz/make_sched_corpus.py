#!/usr/bin/env python3
"""Writes the seed corpus of sched_decode_fuzz (tests/fuzz/corpus/sched_decode/)
from the real kernel pages and formats of tests/data/sched.

Run once from the repository root: python3 tests/fuzz/make_sched_corpus.py
The input layout is described at the top of tests/fuzz/sched_decode_fuzz.c.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data", "sched")
OUT = os.path.join(HERE, "corpus", "sched_decode")
PAGE = 4096

FORMATS = [
    ("sched", "sched.sched_switch.format"),
    ("sched", "sched.sched_waking.format"),
    ("sched", "sched.sched_wakeup_new.format"),
    ("sched", "sched.sched_process_fork.format"),
    ("sched", "sched.sched_process_exit.format"),
    ("task", "task.task_rename.format"),
]


def read(name):
    with open(os.path.join(DATA, name), "rb") as f:
        return f.read()


def chunk(tag, body):
    body = body[:0xFFFF]
    return struct.pack("<BH", tag, len(body)) + body


def header(text=None):
    return chunk(0, read("header_page") if text is None else text)


def formats(edit=None, skip=()):
    out = b""
    for i, (system, name) in enumerate(FORMATS):
        if i in skip:
            continue
        text = read(name)
        if edit is not None and edit[0] == i:
            text = text.replace(edit[1], edit[2], 1)
        out += chunk(1 if system == "sched" else 2, text)
    return out


def pages(name, cpu, count=None, cut=None):
    data = read(name)
    out = b""
    n = len(data) // PAGE if count is None else count
    for i in range(n):
        page = data[i * PAGE:(i + 1) * PAGE]
        if cut is not None:
            page = page[:cut]
        out += chunk(3 | cpu << 3, page)
    return out


def query(tid, start, length):
    return chunk(4, struct.pack("<III", tid, start, length))


def queries():
    return b"".join(query(t, s, l) for t, s, l in
                    [(0, 0, 10**9), (1, 1000, 5 * 10**6), (7, 10**7, 4 * 10**7),
                     (2**31, 0, 2**32 - 1)])


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = {
        "all": header() + formats() + pages("cpu0.pages", 0) + pages("cpu1.pages", 1)
        + pages("lost.cpu1.pages", 1) + queries(),
        "one-page": header() + formats() + pages("cpu0.pages", 0, 1) + queries(),
        "lost-page": header() + formats() + pages("lost.cpu1.pages", 1) + queries(),
        "switch-only": header() + formats(skip=(1, 2, 3, 4, 5)) + pages("cpu1.pages", 1, 1),
        "no-switch": header() + formats(skip=(0,)) + pages("cpu0.pages", 0, 1),
        "no-header": formats() + pages("cpu0.pages", 0, 1),
        "cut-pages": header() + formats() + pages("cpu0.pages", 0, cut=1000)
        + pages("cpu1.pages", 1, cut=17),
        "pid-size-3": header() + formats(edit=(0, b"prev_pid;\toffset:24;\tsize:4;",
                                               b"prev_pid;\toffset:24;\tsize:3;"))
        + pages("cpu0.pages", 0, 1),
        "next-pid-outside": header() + formats(edit=(0, b"next_pid;\toffset:56;",
                                                     b"next_pid;\toffset:4000;"))
        + pages("cpu0.pages", 0, 1),
        "data-loc-outside": header() + formats(edit=(3, b"child_comm;\toffset:16;",
                                                     b"child_comm;\toffset:20;"))
        + pages("cpu0.pages", 0) + pages("cpu1.pages", 1),
        "header-32": header(read("header_page").replace(b"commit;\toffset:8;\tsize:8;",
                                                        b"commit;\toffset:8;\tsize:4;"))
        + formats() + pages("cpu0.pages", 0, 1),
        "garbage-format": header() + chunk(1, b"name: sched_switch\nID: 7\nformat:\n\tfield:")
        + formats() + pages("cpu0.pages", 0, 1),
        "many-cpus": header() + formats() + pages("cpu0.pages", 31) + pages("cpu1.pages", 5)
        + queries(),
    }
    for name, body in seeds.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(body)


if __name__ == "__main__":
    main()
