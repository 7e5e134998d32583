"""replay_origin.py — one time origin for every output of orbit-replay
(docs/replay.md, "The time origin"): the earliest start of the captures.

 - --json says origin_ns, the earliest stream start_ns;
 - --log never prints a negative time, and its times are the Chrome log
   instants' times minus the origin, line for line;
 - every CSV row starts at or after the origin;
 - a relative --from/--to window is the absolute window shifted by the
   origin: the same CSV rows and the same log lines;
 - with --expect-early: some log line is older than its stream's
   handshake (the capture where --log used to print negative times).

    python3 replay_origin.py ORBIT_REPLAY [--expect-early] CAPTURE...
"""
import json
import re
import sys
from collections import Counter
from decimal import Decimal

sys.path.insert(0, __import__("os").path.dirname(__file__))
from replay_common import Replay, check, read_csv  # noqa: E402

LOG = re.compile(r"(\d+)\.(\d{9}) \[(\d+)/(\d+)[ \]]")


def log_times(out):
    """(pid, tid, ns since the origin) of every --log line."""
    got = []
    for line in out.decode("utf-8", errors="replace").splitlines():
        check(not line.startswith("-"), "--log printed a negative time: %r" % line)
        m = LOG.match(line)
        check(m is not None, "--log line %r" % line)
        got.append((int(m.group(3)), int(m.group(4)),
                    int(m.group(1)) * 1000000000 + int(m.group(2))))
    return got


def main():
    rp = Replay(sys.argv[1])
    args = sys.argv[2:]
    early = "--expect-early" in args
    captures = [a for a in args if a != "--expect-early"]
    try:
        js, chrome, csv_path = rp.path("s.json"), rp.path("c.json"), rp.path("c.csv")
        rp.run(*captures, "--json", js, "--chrome", chrome, "--csv", csv_path, "-q")
        with open(js) as f:
            summary = json.load(f)
        streams = [s for c in summary["captures"] for s in c["streams"]]
        origin = summary["origin_ns"]
        check(origin == min(s["start_ns"] for s in streams),
              "origin_ns %d is not the earliest start %d" %
              (origin, min(s["start_ns"] for s in streams)))
        lines = log_times(rp.run(*captures, "--log").stdout)
        check(len(lines) == summary["log_lines"], "%d --log lines, %d log lines" %
              (len(lines), summary["log_lines"]))
        with open(chrome) as f:
            events = json.load(f, parse_float=Decimal)["traceEvents"]
        instants = Counter((e["pid"], e["tid"], int(Decimal(e["ts"]) * 1000) - origin)
                           for e in events if e["ph"] == "i")
        want = Counter(lines)
        check(want == instants, "--log times are not the Chrome instants minus the origin: "
              "%s" % list(((want - instants) + (instants - want)).items())[:4])
        rows = read_csv(csv_path)
        check(all(r["start_ns"] >= origin for r in rows), "a CSV row starts before the origin")
        if early:
            hs = {s["pid"]: s["handshake_ns"] for s in streams}
            check(any(origin + t < hs[pid] for pid, _, t in lines),
                  "no log line before its handshake: the capture does not show the case")
        # The middle third of the timeline, relative and absolute.
        last = max(s["end_ns"] for s in streams)
        a, b = (last - origin) // 3, 2 * (last - origin) // 3
        rel, ab = rp.path("rel.csv"), rp.path("abs.csv")
        rp.run(*captures, "--csv", rel, "--from", "+%dns" % a, "--to", "+%dns" % b, "-q")
        rp.run(*captures, "--csv", ab, "--from", "@%d" % (origin + a), "--to", "@%d" % (origin + b), "-q")
        with open(rel, "rb") as f1, open(ab, "rb") as f2:
            check(f1.read() == f2.read(), "--from/--to +T is not the absolute window")
        log_rel = rp.run(*captures, "--log", "--from", "+%dns" % a, "--to", "+%dns" % b).stdout
        log_abs = rp.run(*captures, "--log", "--from", "@%d" % (origin + a),
                         "--to", "@%d" % (origin + b)).stdout
        check(log_rel == log_abs, "--log with +T is not the absolute window")
        check(all(a <= t <= b for _, _, t in log_times(log_rel)), "--log window")
    finally:
        rp.cleanup()
    print("ok: origin %d, %d log lines" % (origin, len(lines)))


main()
