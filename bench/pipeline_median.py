#!/usr/bin/env python3
"""pipeline_median.py LOG — medians of pipeline_acceptance.sh's rows.

Rows of orbit-bench-pipeline are grouped by section (### LABEL WHICH run K),
build (new, base) and row key (the rate, "burst", "hot", a thread count);
each numeric column's median is printed, with every run's value beside it,
and the equation column as how many runs were exact.
"""
import re
import statistics
import sys

COLS = ["emitted", "delivered", "lost", "loss %", "B/event", "agent ns/ev", "collector ns/ev"]


def num(s):
    return float(s.rstrip("%"))


def main(path):
    groups = {}
    order = []
    label = which = None
    for line in open(path, encoding="utf-8", errors="replace"):
        m = re.match(r"### (\S+) (new|base) run (\d+)", line)
        if m:
            label, which = m.group(1), m.group(2)
            continue
        f = line.split()
        if label is None or not f:
            continue
        key = None
        vals = None
        if label == "rss" and len(f) == 5 and f[0].isdigit():
            key, vals = f[0] + " threads", [num(x) for x in f[1:]]
            cols = ["VmRSS KiB", "VmHWM KiB", "segment KiB", "anon KiB"]
        elif len(f) == 9 and (f[0] in ("burst", "hot") or f[0].isdigit()):
            try:
                vals = [num(x) for x in f[1:8]]
            except ValueError:
                continue
            key, cols = f[0], COLS + ["exact"]
            vals.append(1.0 if f[8] == "exact" else 0.0)
        elif label == "hot" and line.strip().startswith("delivered"):
            m = re.search(r"delivered ([\d.]+)%; agent CPU ([\d.]+) s; process peak RSS (\d+)", line)
            if m:
                key = "hot share"
                vals = [float(m.group(1)), float(m.group(2)), float(m.group(3))]
                cols = ["delivered %", "agent CPU s", "peak RSS KiB"]
        if key is None or vals is None:
            continue
        g = (label, key, which)
        if g not in groups:
            groups[g] = (cols, [])
            if (label, key) not in order:
                order.append((label, key))
        groups[g][1].append(vals)
    for label, key in order:
        print(f"== {label} {key}")
        for which in ("new", "base"):
            g = groups.get((label, key, which))
            if g is None:
                continue
            cols, rows = g
            parts = []
            for i, c in enumerate(cols):
                v = [r[i] for r in rows]
                if c == "exact":
                    parts.append(f"equation exact {int(sum(v))}/{len(v)}")
                    continue
                med = statistics.median(v)
                runs = " ".join(f"{x:g}" for x in v)
                parts.append(f"{c} {med:g} [{runs}]")
            print(f"  {which:4} " + "; ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1])
