"""replay_chrome.py — orbit-replay --chrome, read back with Python's json:
valid JSON whatever the names hold, the same scopes and spans as the CSV
(names, threads, times to the nanosecond, colours and group ids), nesting a
viewer rebuilds equal
to the depths orbit-replay computed, values, log lines and names.

    python3 replay_chrome.py ORBIT_REPLAY CAPTURE
"""
import json
import re
import sys
from collections import Counter
from decimal import Decimal

sys.path.insert(0, __import__("os").path.dirname(__file__))
from replay_common import MARKS, Replay, as_utf8, check, read_csv, viewer_depths  # noqa: E402


def ns(v):
    """A ts or dur back to integer nanoseconds, exactly."""
    return int(Decimal(v) * 1000)


def no_constants(name):
    raise ValueError("JSON constant " + name)


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    text = raw.decode("utf-8")  # strict: the file must be valid UTF-8
    for m in re.finditer(r'"(ts|dur)":([^,}]*)', text):
        check(re.fullmatch(r"\d+\.\d{3}", m.group(2)) is not None,
              "%s %r is not microseconds with 3 decimals" % (m.group(1), m.group(2)))
    doc = json.loads(text, parse_constant=no_constants,
                     parse_float=Decimal)
    check(doc.get("displayTimeUnit") == "ns", "displayTimeUnit")
    return doc["traceEvents"]


def attrs_of(e):
    """(color, group) from an event's args, None without them."""
    args = e.get("args", {})
    return (args["color"], int(args["group"])) if "color" in args else None


def attrs_of_row(r):
    return (r["color"], int(r["group_id"])) if r["color"] else None


def marks_of(e):
    """What an event's args mark as uncertain."""
    args = e.get("args", {})
    for k in MARKS & set(args):
        check(args[k] is True, "mark %s is %r" % (k, args[k]))
    return frozenset(MARKS & set(args))


def check_scopes(events, rows):
    xs = [e for e in events if e["ph"] == "X"]
    want = Counter((r["tid"], as_utf8(r["name"]), r["start_ns"], r["end_ns"],
                    frozenset(r["marks"]), attrs_of_row(r)) for r in rows if r["kind"] == "scope")
    got = Counter((e["tid"], e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), marks_of(e),
                   attrs_of(e)) for e in xs)
    check(got == want, "X events differ from the CSV scopes:\n  extra %s\n  missing %s" %
          (list((got - want).items())[:5], list((want - got).items())[:5]))
    for e in xs:
        check(e["cat"] == "scope" and isinstance(e["pid"], int), "X event %r" % e)
    # The nesting a viewer rebuilds, per thread, must be orbit-replay's depth.
    for tid in {e["tid"] for e in xs}:
        evs = [(ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), i) for i, e in enumerate(xs)
               if e["tid"] == tid]
        depth = viewer_depths(evs)
        want_depth = Counter((as_utf8(r["name"]), r["start_ns"], r["depth"]) for r in rows
                             if r["kind"] == "scope" and r["tid"] == tid)
        got_depth = Counter((xs[i]["name"], ns(xs[i]["ts"]), d) for i, d in depth.items())
        check(got_depth == want_depth, "thread %d nests differently in a viewer: %s vs %s" %
              (tid, sorted(got_depth - want_depth)[:5], sorted(want_depth - got_depth)[:5]))


def check_spans(events, rows):
    begins = {}
    got = Counter()
    for e in events:
        if e["ph"] == "b":
            begins.setdefault(e["id"], []).append(e)
        elif e["ph"] == "e":
            check(e["id"] in begins and begins[e["id"]], "async end without begin %r" % e)
            b = begins[e["id"]].pop(0)
            check(b["name"] == e["name"] and b["cat"] == e["cat"] == "async", "async pair")
            got[(b["tid"], b["name"], ns(b["ts"]), ns(e["ts"]), marks_of(b), attrs_of(b))] += 1
    want = Counter((r["tid"], as_utf8(r["name"]), r["start_ns"], r["end_ns"],
                    frozenset(r["marks"]), attrs_of_row(r)) for r in rows if r["kind"] == "async")
    check(got == want, "async events %s, want %s" % (got, want))


def main():
    rp = Replay(sys.argv[1])
    capture = sys.argv[2]
    try:
        csv_path, chrome, js = rp.path("x.csv"), rp.path("x.json"), rp.path("s.json")
        rp.run(capture, "--csv", csv_path, "--chrome", chrome, "--json", js, "-q")
        rows = read_csv(csv_path)
        events = load(chrome)
        with open(js) as f:
            summary = json.load(f)
        check_scopes(events, rows)
        check_spans(events, rows)
        counters = [e for e in events if e["ph"] == "C"]
        check(len(counters) == summary["values"], "%d counters, %d values" %
              (len(counters), summary["values"]))
        for c in counters:
            check(isinstance(c["args"]["value"], (int, Decimal)) or c["args"]["value"] is None,
                  "counter %r" % c)
        instants = [e for e in events if e["ph"] == "i"]
        check(len(instants) == summary["log_lines"], "%d instants, %d log lines" %
              (len(instants), summary["log_lines"]))
        meta = [e for e in events if e["ph"] == "M"]
        pids = {s["pid"] for c in summary["captures"] for s in c["streams"]}
        check({e["pid"] for e in meta if e["name"] == "process_name"} == pids, "process names")
        named = {(r["pid"], r["tid"]): as_utf8(r["thread_name"]) for r in rows
                 if r["thread_name"]}
        tn = {(e["pid"], e["tid"]): e["args"]["name"] for e in meta
              if e["name"] == "thread_name"}
        for k, v in named.items():
            check(tn.get(k) == v, "thread name of %s: %r, want %r" % (k, tn.get(k), v))
    finally:
        rp.cleanup()
    print("ok: %d events" % len(events))


main()
