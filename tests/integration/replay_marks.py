"""replay_marks.py — every output of orbit-replay marks what is uncertain
on replay_synth's marks capture, whose contents are known, the
CSV's marks column, Chrome JSON's args and the summary say exactly which
scope, span and value has an untrusted time, an incomplete name or no stop,
and a scope never stopped (its thread's end record came first) costs
nothing but itself: it is open until the next scope began, and the scopes
after it are where they would be without it. (replay_chrome_marks and
replay_perfetto_marks check that Chrome JSON and Perfetto agree with the
CSV, row for row.)

    python3 replay_marks.py ORBIT_REPLAY MARKS_CAPTURE
"""
import json
import sys
from decimal import Decimal

sys.path.insert(0, __import__("os").path.dirname(__file__))
from replay_common import Replay, check, read_csv  # noqa: E402

T0 = 5000000000
# name: (kind, depth, start, end, marks)
WANT = {
    "start untrusted": ("scope", 0, 100, 200, {"time_untrusted"}),
    "stop untrusted": ("scope", 0, 300, 400, {"time_untrusted"}),
    "never stopped": ("scope", 0, 500, 600, {"unfinished"}),  # until "child" began
    "child": ("scope", 0, 600, 700, set()),
    "a name of forty bytes, cut at 32": ("scope", 0, 800, 900, {"name_incomplete"}),
    "span": ("async", None, 1000, 1100, {"time_untrusted"}),
}


def ns(v):
    return int(Decimal(v) * 1000)


def main():
    rp = Replay(sys.argv[1])
    capture = sys.argv[2]
    try:
        csv_path, chrome, js = rp.path("m.csv"), rp.path("m.json"), rp.path("s.json")
        rp.run(capture, "--csv", csv_path, "--chrome", chrome, "--json", js, "-q")
        rows = read_csv(csv_path)
        got = {r["name"]: (r["kind"], r["depth"], r["start_ns"] - T0, r["end_ns"] - T0,
                           r["marks"]) for r in rows}
        check(got == WANT, "CSV rows %r\nwant %r" % (got, WANT))

        with open(chrome) as f:
            events = json.load(f, parse_float=Decimal)["traceEvents"]
        marks = {}
        for e in events:
            if e["ph"] in ("X", "b"):
                args = e.get("args", {})
                marks[e["name"]] = {k for k in args if args[k] is True}
                if e["ph"] == "X":
                    check(ns(e["ts"]) - T0 == WANT[e["name"]][2] and
                          ns(e["ts"]) + ns(e["dur"]) - T0 == WANT[e["name"]][3],
                          "Chrome extent of %r" % e)
        check(marks == {k: v[4] for k, v in WANT.items()}, "Chrome args %r" % marks)
        counters = [e for e in events if e["ph"] == "C"]
        check(len(counters) == 1 and counters[0]["args"] == {"value": 7},
              "a counter's args are its series, nothing else: %r" % counters)

        with open(js) as f:
            summary = json.load(f)
        rebuilt = summary["captures"][0]["streams"][0]["rebuilt"]
        want = {"unfinished": 1, "incomplete_names": 1, "time_untrusted": 4, "thread_ends": 1,
                "reused_tids": 0, "agent_untrusted_times": 4, "agent_clock_resets": 1,
                "depth_assumed": 0, "depth_misplaced": 0}
        for k, v in want.items():
            check(rebuilt.get(k) == v, "summary rebuilt.%s = %r, want %r (%r)" %
                  (k, rebuilt.get(k), v, rebuilt))
        text = rp.run(capture).stdout.decode()
        check("4 events with a time not trusted (4 records, 1 counter resets" in text,
              "the summary does not say the clock trouble:\n" + text)
    finally:
        rp.cleanup()
    print("ok: %d rows" % len(rows))


main()
