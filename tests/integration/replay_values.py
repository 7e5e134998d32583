"""replay_values.py — values in every text output, from a real traced
program (replay_values.c, run here with ORBIT_CAPTURE): the summary's values
table, --json's value_series and --values-csv, with the statistics the
program's known samples give (count, min, mean, p50, p95 by nearest rank,
max, last, per name and thread), and --name selecting values. A series of
more than 256 samples has its percentiles from log buckets: within 1/128
of the exact ones, and marked approximate (~ in the table).

    python3 replay_values.py ORBIT_REPLAY TRACED_PROGRAM
"""
import csv
import io
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import Replay, check  # noqa: E402

T = [-0.5, 0.25, 1.75, 1e300, 2.5]
# (name, thread): count, min, mean, p50, p95, max, last, integers; the
# percentiles of a series past 256 samples within 1/128 (APPROX)
APPROX = {("write bytes", "main")}
WANT = {
    ("write bytes", "main"): (1000, 1, 500.5, 500, 950, 1000, 1000, True),
    ("write bytes", "worker"): (2, 7, 2503.5, 7, 5000, 5000, 7, True),
    ("temperature", "main"): (5, -0.5, sum(T) / 5, 1.75, 1e300, 1e300, 2.5, False),
    ("delta", "main"): (7, -3, 0.0, 0, 3, 3, 3, True),
}
# the summary's cells for them ("%.6g", integers whole)
CELLS = {
    ("write bytes", "main"): "1000 1 500.5 ~ 502 ~ 948 1000 1000",
    ("write bytes", "worker"): "2 7 2503.5 7 5000 5000 7",
    ("temperature", "main"): "5 -0.5 2e+299 1.75 1e+300 1e+300 2.5",
    ("delta", "main"): "7 -3 0 0 3 3 3",
}


def main():
    exe, prog = sys.argv[1], sys.argv[2]
    rp = Replay(exe)
    cap = rp.path("values.orbit.zst")
    subprocess.run([prog], check=True, env=dict(os.environ, ORBIT_CAPTURE=cap))
    js = rp.path("out.json")
    vcsv = rp.path("values.csv")
    out = rp.run("--json", js, "--values-csv", vcsv, cap).stdout.decode()
    summary = json.load(open(js))
    tids = {t["name"]: t["tid"] for t in summary["threads"]}
    tids.setdefault("worker", None)
    names = {v: k for k, v in tids.items()}

    # --json
    got = {(s["name"], names.get(s["tid"])): s for s in summary["value_series"]}
    check(set(got) == set(WANT), "value series %s" % sorted(got))
    for key, w in WANT.items():
        s = got[key]
        g = (s["count"], s["min"], s["mean"], s["p50"], s["p95"], s["max"], s["last"],
             s["integers"])
        approx = key in APPROX
        if approx:  # the percentiles from buckets: within 1/128, whole numbers
            for i in (3, 4):
                check(abs(g[i] - w[i]) <= w[i] / 128 and g[i] == int(g[i]),
                      "%s: json p%s %s, want %s within 1/128" % (key, (50, 95)[i - 3], g[i],
                                                                 w[i]))
            g, w = g[:3] + g[5:], w[:3] + w[5:]
        check(g == w, "%s: json %s, want %s" % (key, g, w))
        check(s["percentiles_approximate"] == approx, "%s: approximate %s" %
              (key, s["percentiles_approximate"]))

    # the summary's table
    lines = out.split("\n")
    start = [i for i, l in enumerate(lines) if l.startswith("values by name")]
    check(len(start) == 1, "no values table:\n" + out)
    check("(4 of 4 series" in lines[start[0]], lines[start[0]])
    rows = {}
    for l in lines[start[0] + 2:]:
        if not l.strip():
            break
        f = l.split()
        k = 7 + f[:9].count("~")  # the marks of approximate percentiles
        rows[(" ".join(f[k + 2:]), names.get(int(f[k + 1])))] = " ".join(f[:k])
    check(rows == CELLS, "summary values table %s, want %s" % (rows, CELLS))

    # --values-csv: every sample, in each thread's order, exact
    text = open(vcsv, newline="").read()
    check(text.split("\r\n", 1)[0] == "pid,tid,thread_name,name,time_ns,value,type,color,"
          "group_id,marks,file,line,function", "values CSV header")
    vrows = list(csv.DictReader(io.StringIO(text, newline="")))
    series = {}
    for r in vrows:
        series.setdefault((r["name"], r["thread_name"]), []).append(r)
    check([int(r["value"]) for r in series[("write bytes", "main")]] == list(range(1, 1001)),
          "write bytes on main")
    check([int(r["value"]) for r in series[("write bytes", "worker")]] == [5000, 7],
          "write bytes on worker")
    check([float(r["value"]) for r in series[("temperature", "main")]] == T, "temperature")
    check({r["type"] for r in series[("temperature", "main")]} == {"double"}, "double type")
    check([int(r["value"]) for r in series[("delta", "main")]] == list(range(-3, 4)), "delta")
    check({r["type"] for r in series[("delta", "main")]} == {"int"}, "int type")
    for rs in series.values():
        times = [int(r["time_ns"]) for r in rs]
        check(times == sorted(times), "values out of their thread's order")
        check(all(r["file"].endswith("replay_values.c") and r["function"] in ("main", "worker")
                  for r in rs), "values without their source location")

    # --name selects values: the two series of "write bytes", nothing else
    js2 = rp.path("name.json")
    vcsv2 = rp.path("name.csv")
    out = rp.run("--name", "write bytes", "--json", js2, "--values-csv", vcsv2, cap).stdout
    out = out.decode()
    s2 = json.load(open(js2))
    check(sorted((v["name"], v["count"]) for v in s2["value_series"]) ==
          [("write bytes", 2), ("write bytes", 1000)], "--name: %s" % s2["value_series"])
    check(s2["scopes"] == [], "--name write bytes kept scopes")
    check("(2 of 2 series" in out, "--name: the summary's values table:\n" + out)
    n2 = len(list(csv.DictReader(open(vcsv2, newline=""))))
    check(n2 == 1002, "--name: %d value rows, want 1002" % n2)
    rp.cleanup()
    print("ok: values in the summary, --json and --values-csv; --name selects them")


main()
