#!/usr/bin/env python3
"""bench_clickhouse.py — orbit-replay --clickhouse on a large capture against
a real ClickHouse server (Debian's clickhouse-server 18.16, started on spare
loopback ports by tests/integration/clickhouse_harness.py): scopes inserted
per second, the loader's and the server's CPU, bytes per scope on disk
(system.parts), and the time of the queries of docs/operations.md beside
orbit-replay's own summary of the same capture. Prints tables; never passes
or fails.

    python3 bench/bench_clickhouse.py [--build build/release] [--records N]
        [--capture FILE] [--runs N] [--batches 65536,262144,1048576]

The capture is written by orbit-bench-replay (--records records, default
14 M: about 5 M scopes over 16 threads) and kept in --capture for the next
run. Times are medians of --runs runs (default 5); a query's time is its
HTTP round trip, result included.
"""
import argparse
import os
import re
import resource
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
import clickhouse_harness as ch  # noqa: E402


def child_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid):
    """CPU seconds of process pid so far (its threads included)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(argv, **kw):
    """(wall s, cpu s, CompletedProcess) of one run of argv."""
    c0, w0 = child_cpu(), time.monotonic()
    p = subprocess.run(argv, **kw)
    return time.monotonic() - w0, child_cpu() - c0, p


def docs_queries():
    with open(os.path.join(HERE, "..", "docs", "operations.md")) as f:
        doc = f.read()
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", doc, re.S):
        m = re.match(r"-- query: (\S+)\n", block)
        if m:
            out[m.group(1)] = block[m.end():].strip()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build/release")
    ap.add_argument("--records", type=int, default=14000000)
    ap.add_argument("--capture", default="/tmp/orbit-bench-clickhouse.orbit.zst")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--batches", default="65536,262144,1048576")
    a = ap.parse_args()
    if not ch.available():
        print("bench_clickhouse: %s not found (Debian clickhouse-server)" % ch.SERVER)
        return 0
    replay = os.path.join(a.build, "replay", "orbit-replay")
    if not os.path.exists(a.capture):
        subprocess.run([os.path.join(a.build, "bench", "orbit-bench-replay"), "--records",
                        str(a.records), "--capture", a.capture, "--runs", "0"],
                       check=True, stdout=subprocess.DEVNULL)
    size = os.path.getsize(a.capture)

    # orbit-replay's own summary of the capture: the baseline.
    base = []
    for _ in range(a.runs):
        w, c, p = timed([replay, "--top", "0", a.capture], stdout=subprocess.DEVNULL)
        base.append((w, c))
    summary = subprocess.run([replay, "--json", "-", "--top", "0", a.capture], capture_output=True)
    import json
    js = json.loads(summary.stdout)
    stream = js["captures"][0]["streams"][0]
    scopes = stream["scopes"]
    print("capture %s: %.1f MiB, %d records, %d scopes, %d names\n" % (
        a.capture, size / 1048576, stream["records"], scopes, len(js["scopes"])))
    bw = statistics.median(x[0] for x in base)
    bc = statistics.median(x[1] for x in base)
    print("orbit-replay summary (--top 0): %.2f s wall, %.2f s cpu, %.1f M scopes/s\n" % (
        bw, bc, scopes / bw / 1e6))

    qs = docs_queries()
    with ch.Servers(1) as (s,):
        print("%-10s %8s %8s %10s %9s %11s %11s %9s %9s" % (
            "batch", "inserts", "wall s", "M scopes/s", "M rows/s", "loader cpu", "server cpu",
            "B/scope", "merged"))
        last = None
        for batch in [int(x) for x in a.batches.split(",")]:
            db = "orbit_%d" % batch
            url = s.url(database=db)
            got = []
            for _ in range(a.runs):
                s.query("DROP DATABASE IF EXISTS %s" % db, database=None)
                subprocess.run([replay, "--clickhouse", url, "--clickhouse-create"],
                               check=True, stdout=subprocess.DEVNULL)
                s0 = proc_cpu(s.proc.pid)
                w, c, p = timed([replay, "--clickhouse", url, "--clickhouse-batch",
                                 str(batch), "--no-progress", a.capture], capture_output=True)
                sc = proc_cpu(s.proc.pid) - s0
                if p.returncode != 0:
                    print(p.stderr.decode(errors="replace"))
                    return 1
                got.append((w, c, sc))
            w = statistics.median(x[0] for x in got)
            c = statistics.median(x[1] for x in got)
            sc = statistics.median(x[2] for x in got)
            inserts = int(re.search(rb"in (\d+) insert", p.stdout).group(1))
            rows = sum(int(x) for x in re.search(
                rb": (\d+) scopes, (\d+) async spans, (\d+) values, (\d+) log lines, "
                rb"(\d+) threads", p.stdout).groups())
            disk = s.rows("SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE "
                          "database = '%s' AND table = 'scopes' AND active" % db, database=db)[0]
            before = int(disk[0]) / int(disk[1])
            s.query("OPTIMIZE TABLE scopes FINAL", database=db)
            disk = s.rows("SELECT sum(bytes_on_disk), sum(rows) FROM system.parts WHERE "
                          "database = '%s' AND table = 'scopes' AND active" % db, database=db)[0]
            after = int(disk[0]) / int(disk[1])
            print("%-10d %8d %8.2f %10.2f %9.2f %9.2f s %9.2f s %9.2f %9.2f" % (
                batch, inserts, w, scopes / w / 1e6, rows / w / 1e6, c, sc, before, after))
            last = db

        # The same 5 M scope rows given to the server as RowBinary and as
        # Native: what the format costs ClickHouse.
        print("\n%-10s %10s %12s %12s" % ("format", "MiB", "server cpu", "wall s"))
        for fmt in ("RowBinary", "Native"):
            data = s.query("SELECT * FROM scopes FORMAT %s" % fmt, database=last)
            got = []
            for _ in range(a.runs):
                s.query("DROP TABLE IF EXISTS scopes_copy", database=last)
                s.query("CREATE TABLE scopes_copy AS scopes", database=last)
                s0, w0 = proc_cpu(s.proc.pid), time.monotonic()
                s.query("INSERT INTO scopes_copy FORMAT %s" % fmt, data=data, database=last)
                got.append((proc_cpu(s.proc.pid) - s0, time.monotonic() - w0))
            print("%-10s %10.1f %10.2f s %12.2f" % (
                fmt, len(data) / 1048576, statistics.median(x[0] for x in got),
                statistics.median(x[1] for x in got)))
            del data
        s.query("DROP TABLE IF EXISTS scopes_copy", database=last)

        cols = s.rows("SELECT name, sum(data_compressed_bytes), sum(data_uncompressed_bytes) "
                      "FROM system.columns WHERE database = '%s' AND table = 'scopes' "
                      "GROUP BY name ORDER BY sum(data_compressed_bytes) DESC" % last, database=last)
        print("\nscopes, per column after the merge (bytes per scope on disk, compressed "
              "from):")
        for name, comp, raw in cols:
            print("  %-14s %7.2f  %7.2f" % (name, int(comp) / scopes, int(raw) / scopes))

        # The queries of docs/operations.md on this capture's names and times.
        top = s.rows("SELECT name FROM scopes GROUP BY name ORDER BY count() DESC LIMIT 2",
                     database=last)
        cap = s.rows("SELECT capture_id, start_ns, start_wall_ns, process, day FROM captures",
                     database=last)[0]
        cid, t0, wall, process, day = int(cap[0]), int(cap[1]), int(cap[2]), cap[3], cap[4]
        name1, name2 = top[0][0], top[1][0]
        w0 = wall // 10**9
        subst = {
            "percentiles": [("day >= today() - 1", "1")],
            "slowest": [("'frame'", "'%s'" % name1)],
            "window": [("2026-11-29 13:05:00", time.strftime("%Y-%m-%d %H:%M:%S",
                                                             time.gmtime(w0))),
                       ("2026-11-29 13:05:10", time.strftime("%Y-%m-%d %H:%M:%S",
                                                             time.gmtime(w0 + 1))),
                       ("2026-11-29", day)],
            "capture_window": [("10422744813834421048", str(cid)),
                               ("2938034408591", str(t0 + 10**9 + 10**7)),
                               ("2938024408591", str(t0 + 10**9))],
            "builds": [("'demo'", "'%s'" % process),
                       ("('frame', 'render')", "('%s', '%s')" % (name1, name2))],
        }
        print("\n%-16s %10s %8s  %s" % ("query", "median ms", "rows", "vs the summary"))
        for tag in ("percentiles", "busiest_threads", "slowest", "window", "capture_window",
                    "builds", "loss", "disk"):
            sql = qs[tag]
            for old, new in subst.get(tag, []):
                sql = sql.replace(old, new)
            times = []
            for _ in range(a.runs):
                t = time.monotonic()
                rows = s.rows(sql, database=last)
                times.append(time.monotonic() - t)
            m = statistics.median(times)
            print("%-16s %10.1f %8d  %5.1f %%" % (tag, m * 1e3, len(rows), 100 * m / bw))
    return 0


if __name__ == "__main__":
    sys.exit(main())
