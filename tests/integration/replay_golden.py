"""replay_golden.py — orbit-replay on the golden captures of real runs
(tests/data/replay/README.md): exact scopes from the CSV (count, names,
depths, order per thread), the JSON summary (counts, loss equation), and
the log lines.

    python3 replay_golden.py ORBIT_REPLAY DATA_DIR CASE
    CASE: emit-2x50 | emit-3x20 | demo-drain-2x100
"""
import json
import re
import sys
from collections import defaultdict

sys.path.insert(0, __import__("os").path.dirname(__file__))
from replay_common import Replay, check, fail, read_csv  # noqa: E402


def by_thread(rows):
    threads = defaultdict(list)
    for r in rows:
        threads[r["tid"]].append(r)
    for rs in threads.values():
        rs.sort(key=lambda r: (r["start_ns"], r["depth"] if r["depth"] is not None else 0))
    return threads


def check_summary(rp, capture, records, scopes, spans, values, names, logs):
    js = rp.path("summary.json")
    rp.run(capture, "--json", js, "-q")
    with open(js) as f:
        summary = json.load(f)
    s = summary["captures"][0]["streams"][0]
    got = (s["records"], s["scopes"], s["async_spans"], s["values"], s["thread_names"],
           s["log_lines"])
    want = (records, scopes, spans, values, names, logs)
    check(got == want, "summary counts %s, want %s" % (got, want))
    check(s["equation"] == "holds", "equation " + s["equation"])
    check(s["claimed"] == records and s["lost"] == 0, "claimed %d lost %d" %
          (s["claimed"], s["lost"]))
    check(summary["captures"][0]["complete"], "capture not complete")
    check(s["rebuilt"]["unfinished"] == 0 and s["rebuilt"]["unmatched_stops"] == 0,
          "rebuilt " + repr(s["rebuilt"]))
    return summary


def check_emit(rp, capture, threads, iterations):
    csv_path = rp.path("emit.csv")
    rp.run(capture, "--csv", csv_path, "-q")
    rows = read_csv(csv_path)
    check(len(rows) == threads * iterations * 2, "%d rows" % len(rows))
    per = by_thread(rows)
    check(len(per) == threads, "%d threads" % len(per))
    seen = set()
    for tid, rs in per.items():
        m = re.fullmatch(r"emitter (\d+)", rs[0]["thread_name"])
        check(m is not None, "thread name %r" % rs[0]["thread_name"])
        t = int(m.group(1))
        seen.add(t)
        for i in range(iterations):
            outer, inner = rs[2 * i], rs[2 * i + 1]
            check(outer["name"] == "t%d outer" % t and outer["depth"] == 0,
                  "tid %d row %d: %r" % (tid, 2 * i, outer))
            check(inner["name"] == "t%d inner %d" % (t, i) and inner["depth"] == 1,
                  "tid %d row %d: %r" % (tid, 2 * i + 1, inner))
            check(outer["start_ns"] <= inner["start_ns"] <= inner["end_ns"] <= outer["end_ns"],
                  "inner %d not inside its outer" % i)
            check(not outer["unfinished"] and not inner["unfinished"], "unfinished scope")
            check(outer["kind"] == "scope" and inner["kind"] == "scope", "kind")
            check(int(outer["duration_ns"]) == outer["end_ns"] - outer["start_ns"], "duration")
            if i:
                check(rs[2 * i - 2]["end_ns"] <= outer["start_ns"], "outers overlap")
    check(seen == set(range(threads)), "emitters %s" % sorted(seen))
    logs = threads * (2 + (iterations - 1) // 1000)
    summary = check_summary(rp, capture, threads * (5 * iterations + 1), 2 * threads * iterations,
                            0, threads * iterations, threads, logs)
    names = {r["name"]: r for r in summary["scopes"]}
    check(names["t0 outer"]["count"] == iterations, "t0 outer count")
    check_log(rp, capture, threads, iterations)


def check_log(rp, capture, threads, iterations):
    out = rp.run(capture, "--log").stdout.decode()
    lines = out.splitlines()
    check(len(lines) == threads * (2 + (iterations - 1) // 1000), "%d log lines" % len(lines))
    times = []
    for line in lines:
        m = re.fullmatch(r"(-?\d+\.\d{9}) \[(\d+)/(\d+) emitter (\d+)\] t(\d+) (at \d+|done)",
                         line)
        check(m is not None, "log line %r" % line)
        check(m.group(4) == m.group(5), "line of t%s on emitter %s" % (m.group(5), m.group(4)))
        times.append(float(m.group(1)))
    check(times == sorted(times), "log lines out of time order")


def check_demo(rp, capture, threads, iterations):
    csv_path = rp.path("demo.csv")
    rp.run(capture, "--csv", csv_path, "-q")
    rows = read_csv(csv_path)
    scopes = [r for r in rows if r["kind"] == "scope"]
    spans = [r for r in rows if r["kind"] == "async"]
    check(len(scopes) == 3 * threads * iterations, "%d scopes" % len(scopes))
    per = by_thread(scopes)
    check(len(per) == threads, "%d threads" % len(per))
    for tid, rs in per.items():
        check(re.fullmatch(r"worker \d+", rs[0]["thread_name"]) is not None,
              "thread name %r" % rs[0]["thread_name"])
        for i in range(iterations):
            frame, phys, render = rs[3 * i:3 * i + 3]
            got = [(r["name"], r["depth"]) for r in (frame, phys, render)]
            check(got == [("frame", 0), ("update physics", 1), ("render", 1)],
                  "tid %d frame %d: %s" % (tid, i, got))
            # ORBIT_SCOPE_WITH_COLOR("update physics", 0x3366ccff): group 0
            got = [(r["color"], r["group_id"]) for r in (frame, phys, render)]
            check(got == [("", ""), ("#3366ccff", "0"), ("", "")],
                  "tid %d frame %d colours: %s" % (tid, i, got))
            check(frame["start_ns"] <= phys["start_ns"] and phys["end_ns"] <= render["start_ns"]
                  and render["end_ns"] <= frame["end_ns"], "frame %d nesting" % i)
    want_spans = threads * ((iterations + 49) // 100)
    check(len(spans) == want_spans, "%d async spans, want %d" % (len(spans), want_spans))
    for s in spans:
        check(s["name"] == "upload batch" and s["depth"] is None and not s["unfinished"],
              "span %r" % s)
    js = rp.path("demo.json")
    rp.run(capture, "--json", js, "-q")
    with open(js) as f:
        s = json.load(f)["captures"][0]["streams"][0]
    check(s["scopes"] == 3 * threads * iterations and s["async_spans"] == want_spans and
          s["values"] == threads * iterations and s["thread_names"] == threads,
          "demo summary %r" % s)
    check(s["equation"] == "holds", "equation")


def main():
    rp = Replay(sys.argv[1])
    data, case = sys.argv[2], sys.argv[3]
    capture = "%s/replay/%s.orbit.zst" % (data, case)
    try:
        m = re.fullmatch(r"(emit|demo-drain)-(\d+)x(\d+)", case)
        if m is None:
            fail("unknown case " + case)
        threads, iterations = int(m.group(2)), int(m.group(3))
        if m.group(1) == "emit":
            check_emit(rp, capture, threads, iterations)
        else:
            check_demo(rp, capture, threads, iterations)
    finally:
        rp.cleanup()
    print("ok")


main()
