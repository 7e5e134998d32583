#!/usr/bin/env python3
"""bench_replay_reads.py — one read per capture against the reads before
(docs/format.md 4.13, docs/replay.md "Reading a capture once"): two
orbit-replay binaries, each on its own capture of the same events, run one
after the other (A B A B ...), mode by mode; the medians of wall and CPU
time (user + system of the child), the range, and the ratio. Prints a
table; passes or fails nothing.

    python3 bench/bench_replay_reads.py [--runs N] \\
        BASE_REPLAY BASE_CAPTURE NEW_REPLAY NEW_CAPTURE

Made for orbit-bench-replay --sched captures: --version 2 for the previous
release's orbit-replay (which reads it as it must: kernel pages before the
run, names from its tail, times before the run for the origin), --version
3 for this one (read once). The modes are what asks for those reads: the
summary (kernel states), + CSV (names too), --log (the origin), a CSV of a
relative window (origin, states, names)."""
import os
import statistics
import sys
import time

MODES = [
    ("summary", []),
    ("summary + csv", ["--csv", "/dev/null"]),
    ("--log", ["--log"]),
    ("csv, relative window", ["-q", "--csv", "/dev/null", "--from", "+1ms", "--to", "+1s"]),
]


def run(exe, args, capture):
    t = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open("/dev/null", os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(exe, [exe] + args + [capture])
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("%s %s exited %d" % (exe, " ".join(args), os.waitstatus_to_exitcode(status)))
    return wall, ru.ru_utime + ru.ru_stime


def main():
    argv = sys.argv[1:]
    runs = 5
    if argv[:1] == ["--runs"]:
        runs, argv = int(argv[1]), argv[2:]
    if len(argv) != 4:
        sys.exit(__doc__)
    base, base_cap, new, new_cap = argv
    print("%-22s %18s %18s %18s %18s %7s %7s" % ("mode", "base wall s", "new wall s",
                                                 "base cpu s", "new cpu s", "wall x", "cpu x"))
    for name, args in MODES:
        got = {"base": [], "new": []}
        for _ in range(runs):
            got["base"].append(run(base, args, base_cap))
            got["new"].append(run(new, args, new_cap))

        def cell(who, k):
            v = [r[k] for r in got[who]]
            return "%.2f (%.2f-%.2f)" % (statistics.median(v), min(v), max(v))

        bw = statistics.median(r[0] for r in got["base"])
        nw = statistics.median(r[0] for r in got["new"])
        bc = statistics.median(r[1] for r in got["base"])
        nc = statistics.median(r[1] for r in got["new"])
        print("%-22s %18s %18s %18s %18s %7.2f %7.2f" % (name, cell("base", 0), cell("new", 0),
                                                         cell("base", 1), cell("new", 1),
                                                         bw / nw, bc / nc))


main()
