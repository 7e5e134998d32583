"""replay_clickhouse.py — orbit-replay --clickhouse against real ClickHouse
servers (Debian's clickhouse-server 18.16, clickhouse_harness.py), one
case per run:

  captures OUT DEMO HOSTILE SYNTH VICTIM DUMP   the fixture: captures of
            examples/demo (two runs), of the hostile-name program
            (ORBIT_CAPTURE), synthetic ones (hostile names, two streams, no
            end, the kernel's scheduling), and a killed flight_victim's cut
            capture beside orbit-dump's of it
  load      per-name counts, totals, self times, min, max and exact
            quantiles from SQL equal orbit-replay --json on the same
            captures, one by one and all together; so do threads, values,
            log lines and every captures row's figures
  twice     loading again loads nothing and changes nothing
  refused   ClickHouse refuses a batch in the middle of a load (a quota):
            ClickHouse's text on stderr, exit 3, no captures row, the rows
            sent count nowhere; a second run loads it whole; the cleanup
            query of docs/operations.md removes what the failed load left
  errors    unreachable server (retried with backoff), no schema, unknown
            database, a column of another type, a bad URL
  cluster   a 2-shard Distributed table (two servers): the same answers as
            orbit-replay, asked from either server
  shard_down  one shard stopped: a clear error naming it, nothing
            committed; restarted, the next run loads everything
  shard_midway  the link to a shard cut in the middle of the loads
            (tests/tools/tcp_proxy): a clear error, every capture that
            looks loaded is whole, the rest count nowhere; the link back,
            the next run loads them
  queries   every query of docs/operations.md's fleet section runs on
            18.16, and the ones with a known answer give it
  trickle   a server that trickles its reply, and one that never answers:
            each request fails at --clickhouse-timeout (no ClickHouse)
  dump      a dump and the cut capture it continues load side by side:
            distinct capture ids, the dump's continues naming the cut one,
            the dump's extra scopes all there; captures.sched set for the
            capture with the kernel's scheduling only; tables without the
            columns added since: the load says so, --clickhouse-create adds
            them

    python3 replay_clickhouse.py CASE ORBIT_REPLAY CAPTURES DOCS [TCP_PROXY]

Exits 0 (pass), 1 (fail) or 77 (skip: no clickhouse-server).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import clickhouse_harness as ch  # noqa: E402
from replay_common import as_utf8, check, fail, read_csv, skip  # noqa: E402

# Loaded in every case; noend has no EndOfStream (replay exits 2).
CAPTURES = ["demo.orbit.zst", "demo2.orbit.zst", "hostile.orbit.zst", "names.orbit.zst",
            "streams.orbit.zst", "noend.orbit.zst"]
COMMITTED = "load_id GLOBAL IN (SELECT load_id FROM captures)"


# ---- the fixture ----

def make_dump_pair(out, victim, dump):
    """A process traced with ORBIT_CAPTURE and ORBIT_FLIGHT, killed: its cut
    capture (cut.orbit.zst) and orbit-dump's (dumped.orbit.zst), which
    continues it with 400 scopes the agent never wrote."""
    cut, dumped = os.path.join(out, "cut.orbit.zst"), os.path.join(out, "dumped.orbit.zst")
    for f in (cut, dumped):
        if os.path.exists(f):
            os.unlink(f)
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORBIT_")}
    env.update(ORBIT_CAPTURE=cut, ORBIT_FLIGHT="4M", ORBIT_DRAIN_MS="60000",
               ASAN_OPTIONS="handle_segv=0:detect_leaks=0")
    v = subprocess.Popen([victim, "undrained", "2000", "400"], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = v.communicate()[1]
    check(v.returncode < 0, "the victim exited %d: %s" % (v.returncode, err))
    segs = [f for f in os.listdir("/dev/shm") if f.startswith("orbit-%d-" % v.pid)]
    check(len(segs) == 1, "the victim's segments: %s" % segs)
    seg = "/dev/shm/" + segs[0]
    p = subprocess.run([dump, "-o", dumped, seg], capture_output=True)
    check(p.returncode == 0, "orbit-dump: %d %s" % (p.returncode, p.stderr))
    os.unlink(seg)


def make_captures(out, demo, hostile, synth, victim=None, dump=None):
    os.makedirs(out, exist_ok=True)
    env = dict(os.environ)
    env.pop("ORBIT_COLLECTOR", None)
    build2 = os.path.join(out, "build2", "demo")  # "another build": another path
    os.makedirs(os.path.dirname(build2), exist_ok=True)
    shutil.copy(demo, build2)
    runs = [("demo.orbit.zst", [demo, "--threads", "3", "--frames", "150"]),
            ("demo2.orbit.zst", [build2, "--threads", "2", "--frames", "100"]),
            ("hostile.orbit.zst", [hostile, "10"])]
    for name, argv in runs:
        path = os.path.join(out, name)
        if os.path.exists(path):
            os.unlink(path)
        p = subprocess.run(argv, env=dict(env, ORBIT_CAPTURE=path), capture_output=True)
        check(p.returncode == 0 and os.path.exists(path),
              "%s: exit %d %s" % (argv[0], p.returncode, p.stderr))
    for name in ("names", "streams", "noend", "sched2"):
        shutil.copy(os.path.join(synth, name + ".orbit.zst"), out)
    if victim:
        make_dump_pair(out, victim, dump)


# ---- running orbit-replay ----

class Run:
    def __init__(self, exe, captures):
        self.exe = exe
        self.dir = captures
        self.files = [os.path.join(captures, c) for c in CAPTURES]

    def replay(self, *args, want=None):
        p = subprocess.run([self.exe] + [str(a) for a in args], capture_output=True)
        if want is not None and p.returncode != want:
            fail("orbit-replay %s: exit %d, want %d\nstdout: %s\nstderr: %s" % (
                " ".join(map(str, args)), p.returncode, want, p.stdout.decode(errors="replace"),
                p.stderr.decode(errors="replace")))
        return p

    def load(self, server, files=None, want=2, create=False, **params):
        """--clickhouse on files (default: all, noend among them: exit 2)."""
        args = ["--clickhouse", server.url(**params), "--no-progress"]
        if create:
            args.append("--clickhouse-create")
        return self.replay(*args, *(files if files is not None else self.files), want=want)

    def summary(self, files, *args):
        p = self.replay("--json", "-", "--top", "0", *args, *files)
        check(p.returncode in (0, 2), "orbit-replay --json: exit %d" % p.returncode)
        return json.loads(p.stdout)

    def summary_window(self, f, lo, hi):
        return self.summary([f], "--from", "@%s" % lo, "--to", "@%s" % hi)


# ---- what replay computes, from exact values ----

def bucket_mid(v):
    """replay_hist.c: the midpoint of v's log bucket."""
    if v < 64:
        return v
    shift = v.bit_length() - 1 - 6
    sub = (v >> shift) & 63
    lo = (64 | sub) << shift
    hi = lo + (1 << shift) - 1
    return lo + (hi - lo) // 2


def replay_pct(exact, count, lo, hi):
    """What --json reports given the exact nearest-rank value: the value
    itself while a name has at most 4 values, else its bucket's midpoint
    clamped to [min, max]."""
    if count <= 4:
        return exact
    return min(max(bucket_mid(exact), lo), hi)


def text(hexed):
    """A name from SQL's hex(), as --json writes it (invalid UTF-8 as U+FFFD)."""
    return as_utf8(bytes.fromhex(hexed).decode("utf-8", errors="surrogateescape"))


def rank(p):
    """SQL for the exact nearest-rank p-quantile of the finished durations:
    the ceil(p * n)-th smallest, as replay_hist.c ranks."""
    return ("arrayElement(arraySort(groupArrayIf(duration_ns, unfinished = 0)), "
            "toUInt64(greatest(1, ceil(%s * countIf(unfinished = 0)))))" % p)


def span_stats(server, table, where):
    rows = server.rows(
        "SELECT hex(name), countIf(unfinished = 0), sumIf(duration_ns, unfinished = 0), %s, "
        "minIf(duration_ns, unfinished = 0), maxIf(duration_ns, unfinished = 0), "
        "countIf(unfinished = 1), %s, %s, %s FROM %s WHERE %s AND %s GROUP BY name" % (
            "sumIf(self_ns, unfinished = 0)" if table == "scopes" else "0",
            rank("0.5"), rank("0.95"), rank("0.99"), table, COMMITTED, where))
    got = {}
    for r in rows:
        n = [int(x) for x in r[1:]]
        count, total, self_ns, lo, hi, unfinished, p50, p95, p99 = n
        name = text(r[0])
        check(name not in got, "%s: two names read as %r" % (table, name))
        got[name] = {"count": count, "total_ns": total, "self_ns": self_ns,
                     "min_ns": lo if count else 0, "max_ns": hi, "unfinished": unfinished,
                     "p50_ns": replay_pct(p50, count, lo, hi) if count else 0,
                     "p95_ns": replay_pct(p95, count, lo, hi) if count else 0,
                     "p99_ns": replay_pct(p99, count, lo, hi) if count else 0,
                     "mean_ns": total // count if count else 0}
    return got


def compare_spans(server, summary, where, what):
    for table, key in (("scopes", "scopes"), ("async_spans", "async_spans")):
        got = span_stats(server, table, where)
        want = {r["name"]: r for r in summary[key]}
        check(set(got) == set(want), "%s %s: names from SQL %s, from replay %s" % (
            what, table, sorted(set(got) - set(want)), sorted(set(want) - set(got))))
        for name, w in want.items():
            check(not w["percentiles_approximate"], "%s: %r approximate" % (what, name))
            for k, v in got[name].items():
                if table == "async_spans" and k == "self_ns":
                    continue
                check(v == w[k], "%s %s %r: %s is %d in SQL, %d in replay" % (
                    what, table, name, k, v, w[k]))


def compare_threads(server, summary, where):
    rows = server.rows(
        "SELECT pid, tid, countIf(unfinished = 0), sumIf(duration_ns, depth = 0 AND "
        "unfinished = 0) FROM scopes GLOBAL ANY INNER JOIN (SELECT load_id, pid FROM captures) "
        "USING load_id WHERE %s GROUP BY pid, tid" % where)
    busy = {(int(r[0]), int(r[1])): (int(r[2]), int(r[3])) for r in rows}
    names = {(int(r[0]), int(r[1])): text(r[2]) for r in server.rows(
        "SELECT pid, tid, hex(name) FROM threads WHERE %s AND %s" % (COMMITTED, where))}
    for t in summary["threads"]:
        key = (t["pid"], t["tid"])
        check(busy.get(key, (0, 0)) == (t["scopes"], t["busy_ns"]),
              "thread %s: scopes, busy %s in SQL, %s in replay" % (
                  key, busy.get(key), (t["scopes"], t["busy_ns"])))
        check(names.get(key, "") == t["name"], "thread %s: name %r in SQL, %r in replay" % (
            key, names.get(key), t["name"]))


CAPTURE_FIELDS = ["pid", "start_ns", "end_ns", "duration_ns", "records", "scopes",
                  "async_spans", "values", "thread_names", "log_lines", "markers", "threads",
                  "claimed", "delivered", "lost"]


def compare_captures(server, summary, where):
    cols = ", ".join(CAPTURE_FIELDS)
    rows = server.rows(
        "SELECT capture_file, stream, %s, handshake_monotonic_ns, equation, log_equation, "
        "complete, hex(host), hex(process), lost_lapped, lost_writer_gone, lost_backstop, "
        "lost_at_end, unsent, log_records_lost, log_pages_lost, unfinished, gaps, "
        "time_untrusted, thread_ends, reused_tids, agent_untrusted_times, agent_clock_resets, "
        "start_wall_ns FROM captures WHERE %s" % (cols, where))
    got = {(r[0], int(r[1])): r[2:] for r in rows}
    check(len(got) == len(rows), "two captures rows for one stream")
    n = 0
    for c in summary["captures"]:
        for i, s in enumerate(c["streams"]):
            n += 1
            r = got.get((c["file"], i))
            check(r is not None, "no captures row for %s stream %d" % (c["file"], i))
            k = len(CAPTURE_FIELDS)
            for f, v in zip(CAPTURE_FIELDS, r[:k]):
                check(int(v) == s[f], "%s: captures.%s %s, replay %s" % (c["file"], f, v, s[f]))
            (hs, eq, leq, complete, host, process, lapped, gone, backstop, at_end, unsent,
             lrec, lpages, unfinished, gaps, untrusted, ends, reused, agent_untrusted, resets,
             wall) = r[k:]
            loss = s["loss"]
            check([int(hs), eq, leq, int(complete)] ==
                  [s["handshake_ns"], s["equation"], s["log_equation"], int(s["complete"])],
                  "%s: handshake, equations, complete" % c["file"])
            check(text(host) == s["host"] and text(process) == s["process"],
                  "%s: host %r process %r" % (c["file"], text(host), text(process)))
            check([int(x) for x in (lapped, gone, backstop, at_end, unsent, lrec, lpages)] ==
                  [loss[k] for k in ("lapped", "writer_gone", "backstop", "at_end", "unsent",
                                     "log_records", "log_pages")], "%s: loss" % c["file"])
            rebuilt = s["rebuilt"]
            check([int(x) for x in (unfinished, gaps, untrusted, ends, reused, agent_untrusted,
                                    resets)] ==
                  [rebuilt[k] for k in ("unfinished", "gaps", "time_untrusted", "thread_ends",
                                        "reused_tids", "agent_untrusted_times",
                                        "agent_clock_resets")], "%s: rebuilt" % c["file"])
            if s["start_utc"] != "unknown":
                w = int(wall)
                utc = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(w // 10**9))
                check(s["start_utc"] == "%s.%09dZ" % (utc, w % 10**9),
                      "%s: start_wall_ns %d, replay %s" % (c["file"], w, s["start_utc"]))
    check(n == len(got), "%d captures rows, replay has %d streams" % (len(got), n))


def where_files(files):
    """(for the captures table, for the row tables): the streams of files."""
    names = "capture_file IN (%s)" % ", ".join(
        "'%s'" % f.replace("\\", "\\\\").replace("'", "\\'") for f in files)
    return names, "capture_id GLOBAL IN (SELECT capture_id FROM captures WHERE %s)" % names


def compare_locations(run, server, files, where, what):
    """The scopes' source locations are the CSV's."""
    import collections
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "l.csv")
        run.replay("--csv", path, "-q", *files)
        want = collections.Counter((r["file"], int(r["line"] or 0), r["function"])
                                   for r in read_csv(path) if r["kind"] == "scope")
    got = collections.Counter()
    for r in server.rows("SELECT hex(src_file), src_line, hex(src_function), count() FROM scopes "
                         "WHERE %s AND %s GROUP BY src_file, src_line, src_function"
                         % (COMMITTED, where)):
        got[(text(r[0]), int(r[1]), text(r[2]))] += int(r[3])
    check(got == want, "%s: scope locations in SQL %s, in the CSV %s" % (
        what, sorted(got.items())[:5], sorted(want.items())[:5]))


def compare(run, server, files, what):
    """Everything SQL says of files equals orbit-replay --json on them."""
    summary = run.summary(files)
    in_captures, where = where_files(files)
    compare_locations(run, server, files, where, what)
    compare_spans(server, summary, where, what)
    compare_threads(server, summary, where)
    compare_captures(server, summary, in_captures)
    values = server.rows("SELECT count() FROM value_samples WHERE %s AND %s" % (COMMITTED, where))
    logs = server.rows("SELECT count() FROM log_lines WHERE %s AND %s" % (COMMITTED, where))
    check(int(values[0][0]) == summary["values"], "%s: values %s, replay %d" % (
        what, values[0][0], summary["values"]))
    check(int(logs[0][0]) == summary["log_lines"], "%s: log lines %s, replay %d" % (
        what, logs[0][0], summary["log_lines"]))


def compare_all(run, server, what):
    for f in run.files:
        compare(run, server, [f], "%s %s" % (what, os.path.basename(f)))
    compare(run, server, run.files, what + " all captures")


def totals(server):
    return {t: int(server.rows("SELECT count() FROM %s" % t)[0][0])
            for t in ("scopes", "async_spans", "value_samples", "log_lines", "threads",
                      "captures")}


# ---- cases ----

def case_load(run):
    with ch.Servers(1) as (s,):
        p = run.load(s, create=True)
        out = p.stdout.decode(errors="replace")
        check("7 streams loaded, 0 already loaded, 0 files not loaded" in out, out)
        check("without an end of stream (complete = 0)" in out, out)
        compare_all(run, s, "load")
        parts = s.rows("SELECT DISTINCT partition FROM system.parts WHERE database = 'orbit' "
                       "AND table = 'scopes' AND active")
        check(len(parts) >= 1, "partitions %s" % parts)


def case_twice(run):
    with ch.Servers(1) as (s,):
        run.load(s, create=True)
        before = totals(s)
        p = run.load(s, files=run.files + run.files[:1])
        out = p.stdout.decode(errors="replace")
        check("0 streams loaded, 8 already loaded" in out, out)
        check(out.count("already loaded (capture ") == len(run.files) + 1, out)
        check(totals(s) == before, "loading twice changed %s into %s" % (before, totals(s)))
        compare_all(run, s, "twice")


def case_refused(run):
    demo = run.files[0]
    with ch.Servers(1, quota=12) as (s,):
        run.replay("--clickhouse", s.url(), "--clickhouse-create", want=0)
        # The schema check, the captures check and a few batches of 200
        # rows pass the quota; a later batch of the demo is refused.
        p = run.replay("--clickhouse", s.url(user="limited"), "--clickhouse-batch", "200",
                       "--no-progress", demo, run.files[1], want=3)
        err = p.stderr.decode(errors="replace")
        check("INSERT INTO" in err and "refused" in err and "Quota for user" in err and
              "(HTTP 500)" in err and "not loaded" in err, err)
        check(len(s.rows("SELECT * FROM captures")) == 0, "a captures row after a refusal")
        left = int(s.rows("SELECT count() FROM scopes")[0][0])
        check(left > 0, "the refused load sent no rows: not a refusal in the middle")
        check(s.rows("SELECT count() FROM scopes WHERE %s" % COMMITTED) == [["0"]],
              "rows of the refused load count")
        p = run.load(s, files=[demo], want=0)
        check("loaded 1 stream" in p.stdout.decode(), p.stdout)
        compare(run, s, [demo], "after the refusal")
        cleanup(s, docs_query(run.docs, "cleanup"))
        check(int(s.rows("SELECT count() FROM scopes")[0][0]) ==
              int(s.rows("SELECT scopes FROM captures")[0][0]), "the cleanup left orphans")
        compare(run, s, [demo], "after the cleanup")


def cleanup(server, sql, local=False):
    """Runs the cleanup of docs/operations.md for loads begun before the
    next second (instead of a day ago), and waits for its mutations."""
    sql = sql.replace("- 86400", "+ 1")
    if local:
        sql = re.sub(r"ALTER TABLE (\w+) ", r"ALTER TABLE \1_local ", sql)
        sql = sql.replace("FROM captures)", "FROM captures_local)")
    for stmt in sql.split(";"):
        if stmt.strip():
            server.query(stmt)
    for _ in range(400):
        if server.rows("SELECT count() FROM system.mutations WHERE is_done = 0") == [["0"]]:
            return
        time.sleep(0.05)
    fail("the cleanup's mutations did not finish")


def case_errors(run):
    demo = run.files[0]
    port = ch._spare_ports(1)[0]
    t = time.monotonic()
    p = run.replay("--clickhouse", "http://127.0.0.1:%d/?database=orbit" % port,
                   "--clickhouse-retries", "1", demo, run.files[1], want=3)
    err = p.stderr.decode(errors="replace")
    check("cannot reach ClickHouse at 127.0.0.1:%d" % port in err, err)
    check("retrying in 0.5 s (attempt 2 of 2)" in err, err)
    check("%s: not loaded: not tried" % run.files[1] in err, err)
    check(time.monotonic() - t >= 0.5, "no wait before the retry")
    check("database=" not in err, "the URL was printed: " + err)

    p = run.replay("--clickhouse", "ftp://x/", demo, want=1)
    check("http:// or https:// URL" in p.stderr.decode(), p.stderr)
    p = run.replay("--clickhouse", "http://127.0.0.1:1/", "--csv", "x.csv", demo, want=1)
    check("no other output" in p.stderr.decode(), p.stderr)

    with ch.Servers(1) as (s,):
        p = run.replay("--clickhouse", s.url(), demo, want=3)
        err = p.stderr.decode(errors="replace")
        check("Database orbit doesn't exist" in err and "--clickhouse-create" in err, err)
        s.query("CREATE DATABASE orbit", database=None)
        p = run.replay("--clickhouse", s.url(), demo, want=3)
        err = p.stderr.decode(errors="replace")
        check("has no table" in err and "--clickhouse-create" in err, err)
        run.replay("--clickhouse", s.url(), "--clickhouse-create", want=0)
        s.query("ALTER TABLE scopes MODIFY COLUMN depth UInt16")
        p = run.replay("--clickhouse", s.url(), demo, want=3)
        err = p.stderr.decode(errors="replace")
        check("column scopes.depth is UInt16, orbit-replay writes UInt32" in err, err)
        check(len(s.rows("SELECT * FROM captures")) == 0, "loaded into a wrong schema")


def case_trickle(run):
    # A server that trickles its reply (2 bytes a second, which the stall
    # rule alone takes as alive) and one that never answers: each request
    # fails at --clickhouse-timeout, and the load ends.
    import socket
    import threading
    demo = run.files[0]
    for mode in ("trickle", "silent"):
        lsock = socket.socket()
        lsock.bind(("127.0.0.1", 0))
        lsock.listen(8)
        stop = threading.Event()

        def serve():
            lsock.settimeout(0.2)
            conns = []
            heads = set()
            while not stop.is_set():
                try:
                    c, _ = lsock.accept()
                    c.settimeout(0.2)
                    conns.append(c)
                except OSError:
                    pass
                for i, c in enumerate(conns):
                    try:
                        c.recv(65536)
                    except OSError:
                        pass
                    if mode == "trickle":
                        try:  # a valid head once, then the body 2 bytes at a time
                            c.send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n"
                                   if i not in heads else b"ok")
                            heads.add(i)
                        except OSError:
                            pass
                time.sleep(0.8 if mode == "trickle" else 0.2)
            for c in conns:
                c.close()
        t = threading.Thread(target=serve)
        t.start()
        try:
            t0 = time.monotonic()
            p = run.replay("--clickhouse",
                           "http://127.0.0.1:%d/?database=orbit" % lsock.getsockname()[1],
                           "--clickhouse-timeout", "2", "--clickhouse-retries", "1",
                           "--no-progress", demo, want=3)
            took = time.monotonic() - t0
        finally:
            stop.set()
            t.join()
            lsock.close()
        err = p.stderr.decode(errors="replace")
        check("cannot reach ClickHouse at 127.0.0.1:" in err and "timed out" in err.lower(),
              "%s: %s" % (mode, err))
        check(took < 30, "%s: the load took %.1f s with a 2 s timeout" % (mode, took))
        print("%s: ended after %.1f s: %s" % (mode, took, err.strip().splitlines()[0]))


def cluster_create(run, servers):
    for s in servers:
        p = run.replay("--clickhouse", s.url(), "--clickhouse-create", "--clickhouse-cluster",
                       "orbit_test", want=0)
        check("Distributed over cluster orbit_test" in p.stdout.decode(), p.stdout)


def case_cluster(run):
    with ch.Servers(2, cluster="orbit_test") as servers:
        cluster_create(run, servers)
        run.load(servers[0])
        local = [totals_local(s) for s in servers]
        check(all(n > 0 for n in local), "a shard holds no rows: %s" % local)
        check(sum(local) == totals(servers[0])["scopes"], "shards %s" % local)
        for s in servers:
            compare_all(run, s, "cluster via %s" % s.name)
        p = run.load(servers[1], want=0, files=run.files[:3])
        check("0 streams loaded, 3 already loaded" in p.stdout.decode(), p.stdout)


def totals_local(s):
    return int(s.rows("SELECT count() FROM scopes_local")[0][0])


def case_shard_down(run):
    with ch.Servers(2, cluster="orbit_test") as (a, b):
        cluster_create(run, (a, b))
        b.stop()
        p = run.replay("--clickhouse", a.url(), "--clickhouse-retries", "1", "--no-progress",
                       *run.files, want=3)
        err = p.stderr.decode(errors="replace")
        check("127.0.0.1:%d" % b.tcp in err and "a shard, is down or unreachable" in err, err)
        check("retrying in 0.5 s" in err and "not loaded: not tried" in err, err)
        check(a.rows("SELECT count() FROM captures_local") == [["0"]], "committed on a")
        b.start()
        run.load(a)
        compare_all(run, a, "after the shard came back")
        compare_all(run, b, "asking the restarted shard")


class Proxy:
    """tests/tools/tcp_proxy on a fixed loopback port, in front of a shard."""

    def __init__(self, exe, port, to, *faults):
        self.proc = subprocess.Popen(
            [exe, "--to", "127.0.0.1:%d" % to, "--listen", "127.0.0.1:%d" % port] +
            list(faults), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            preexec_fn=ch._die_with_parent)
        line = self.proc.stdout.readline().decode()
        check(line.startswith("listening on"), "tcp_proxy: %r" % line)

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def committed_whole(server):
    """Every committed stream has every row its captures row counts; the
    number of committed streams, and of rows no captures row names."""
    caps = server.rows("SELECT load_id, scopes, async_spans, values, log_lines + markers "
                       "FROM captures")
    for load_id, *want in caps:
        got = [server.rows("SELECT count() FROM %s WHERE load_id = %s" % (t, load_id))[0][0]
               for t in ("scopes", "async_spans", "value_samples", "log_lines")]
        check(got == want, "load %s looks complete with %s rows of %s" % (load_id, got, want))
    orphans = int(server.rows("SELECT count() FROM scopes WHERE load_id GLOBAL NOT IN "
                              "(SELECT load_id FROM captures)")[0][0])
    return len(caps), orphans


def case_shard_midway(run):
    """The link to shard 2 is cut in the middle of the loads (tcp_proxy
    --drop-after): a clear error, the captures committed before are whole,
    the others count nowhere; with the link back, the next run loads them."""
    port = ch._spare_ports(1)[0]
    servers = ch.Servers(2, cluster="orbit_test")
    a, b = servers.servers
    servers.shard_addrs = ["127.0.0.1:%d" % a.tcp, "127.0.0.1:%d" % port]
    proxy = Proxy(run.proxy, port, b.tcp, "--drop-after", "40000")
    try:
        with servers:
            cluster_create(run, (a, b))
            # The small captures first: they are loaded before the cut. In
            # batches of 10 rows, every INSERT sends at least its query and
            # block header to shard 2, whichever shard holds the capture:
            # the hostile capture needs more than 40000 bytes on any one
            # connection, so neither of its attempts gets through.
            p = run.replay("--clickhouse", a.url(), "--clickhouse-batch", "10",
                           "--clickhouse-retries", "1", "--no-progress", *run.files[::-1],
                           want=3)
            err = p.stderr.decode(errors="replace")
            check("127.0.0.1:%d" % port in err and "a shard, is down or unreachable" in err and
                  "not loaded" in err, err)
            n, orphans = committed_whole(a)
            check(0 < n < 7 and orphans > 0, "%d streams committed, %d rows of failed loads: "
                  "the link was not cut in the middle" % (n, orphans))
            proxy.stop()
            proxy = Proxy(run.proxy, port, b.tcp)
            run.load(a)
            check(committed_whole(a)[0] == 7, "not every stream committed")
            compare_all(run, a, "after the link came back")
            # The cleanup of docs/operations.md on each shard, with the
            # _local names: the failed loads' rows go, nothing else.
            for srv in (a, b):
                cleanup(srv, docs_query(run.docs, "cleanup"), local=True)
            check(committed_whole(a) == (7, 0), "the cleanup on the shards left %s" %
                  (committed_whole(a),))
            compare_all(run, a, "after the cleanup on the shards")
    finally:
        proxy.stop()


# ---- the queries of docs/operations.md ----

def docs_queries(path):
    """{tag: sql} of the ```sql blocks whose first line is "-- query: TAG"."""
    with open(path) as f:
        doc = f.read()
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", doc, re.S):
        m = re.match(r"-- query: (\S+)\n", block)
        if m:
            out[m.group(1)] = block[m.end():].strip()
    return out


def docs_query(path, tag):
    q = docs_queries(path).get(tag)
    check(q is not None, "docs/operations.md has no query %s" % tag)
    return q


def quantile_exact(values, p):
    """ClickHouse's quantileExact: the value of rank floor(p * n) from 0."""
    v = sorted(values)
    return v[min(int(p * len(v)), len(v) - 1)]


def check_queries(run, s, qs):
    demo, demo2 = run.files[0], run.files[1]
    summary = run.summary(run.files)
    want = {r["name"]: r for r in run.summary([demo, demo2])["scopes"]}
    durations = {}
    for name, d in run_csv(run, [demo, demo2]):
        durations.setdefault(name, []).append(d)
    # p50/p95/p99 per name across hosts: examples/demo's names are only in
    # the two demo captures.
    got = {r[0]: r for r in s.rows(qs["percentiles"])}
    for name in ("frame", "render", "render pass", "update physics"):
        r = got.get(name)
        check(r is not None, "percentiles: no row for %s" % name)
        q = [quantile_exact(durations[name], p) for p in (0.5, 0.95, 0.99)]
        check([int(r[2]), int(r[3]), json.loads(r[4])] ==
              [want[name]["count"], want[name]["total_ns"], q],
              "percentiles %s: %s, want %s %s %s" % (name, r, want[name]["count"],
                                                    want[name]["total_ns"], q))
    top = max(summary["threads"], key=lambda t: t["busy_ns"])
    busiest = s.rows(qs["busiest_threads"])
    check([int(busiest[0][1]), int(busiest[0][2]), busiest[0][3], int(busiest[0][4])] ==
          [top["pid"], top["tid"], top["name"], top["busy_ns"]],
          "busiest %s, replay %s" % (busiest[0], top))
    slowest = s.rows(qs["slowest"])
    check(len(slowest) == 10 and int(slowest[0][1]) == max(durations["frame"]),
          "slowest %s, longest frame %d" % (slowest[:1], max(durations["frame"])))
    check(slowest[0][7] in (demo, demo2) and slowest[0][3] == "demo", "slowest %s" % slowest[0])
    # The window: the 10 s from the second the demo began in, as wall-clock
    # times; the same scopes as replay's --from/--to on each capture, moved
    # to its clock.
    cap = {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in s.rows(
        "SELECT capture_file, capture_id, start_ns, clock_offset_ns FROM captures")}
    w0 = (cap[demo][1] + cap[demo][2]) // 10**9
    sql = qs["window"]
    for old, sec in (("2026-11-29 13:05:00", w0), ("2026-11-29 13:05:10", w0 + 10)):
        sql = sql.replace(old, time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(sec)))
    sql = sql.replace("2026-11-29", time.strftime("%Y-%m-%d", time.gmtime(w0)))
    got = {as_utf8(r[1]): (int(r[2]), int(r[3])) for r in s.rows(sql.replace("LIMIT 20", ""))}
    expect = {}
    for f in run.files:
        lo, hi = w0 * 10**9 - cap[f][2], (w0 + 10) * 10**9 - cap[f][2]
        if hi < 0:
            continue
        for r in run.summary_window(f, max(lo, 0), hi)["scopes"]:
            c, t = expect.get(r["name"], (0, 0))
            expect[r["name"]] = (c + r["count"], t + r["total_ns"])
    expect = {k: v for k, v in expect.items() if v[0]}
    check(got == expect and "frame" in got, "window: SQL %s, replay %s" % (got, expect))
    # A window of one capture in its CLOCK_MONOTONIC ns.
    t0 = cap[demo][1] + 5 * 10**6
    sql = qs["capture_window"].replace("10422744813834421048", str(cap[demo][0]))
    sql = sql.replace("2938034408591", str(t0 + 10**7)).replace("2938024408591", str(t0))
    got = {r[0]: (int(r[1]), int(r[2])) for r in s.rows(sql)}
    expect = {r["name"]: (r["count"], r["total_ns"])
              for r in run.summary_window(demo, t0, t0 + 10**7)["scopes"] if r["count"]}
    check(got == expect and got, "capture window: SQL %s, replay %s" % (got, expect))
    # Two builds: the demo binary and its copy (build2/demo).
    builds = {(r[0], r[1]): int(r[2]) for r in s.rows(qs["builds"])}
    for f in (demo, demo2):
        counts = {r["name"]: r["count"] for r in run.summary([f])["scopes"]}
        exe = s.rows("SELECT command[1] FROM captures WHERE capture_file = '%s'" % f)[0][0]
        for name in ("frame", "render"):
            check(builds.get((name, exe)) == counts[name], "builds %s: %s" % (exe, builds))
    check(len(builds) == 4, "builds: %s" % builds)
    loss = s.rows(qs["loss"])
    streams = {(c["file"], i): st for c in summary["captures"]
               for i, st in enumerate(c["streams"])}
    check(len(loss) == len(streams), "loss: %s" % loss)
    for r in loss:
        check([int(r[4]), int(r[5]), int(r[6]), r[7]] in [
            [st["claimed"], st["delivered"], st["lost"], st["equation"]]
            for (f, _), st in streams.items() if f == r[3]], "loss row %s" % r)
    return sum(st["scopes"] for st in streams.values())


def disk_scopes(s, qs):
    """The scopes the disk query finds on server s (its shard)."""
    disk = {r[0]: int(r[1]) for r in s.rows(qs["disk"])}
    return disk.get("scopes", 0) + disk.get("scopes_local", 0)


def case_queries(run):
    qs = docs_queries(run.docs)
    for tag in ("percentiles", "busiest_threads", "slowest", "window", "capture_window",
                "builds", "loss", "cleanup", "expire", "disk"):
        check(tag in qs, "docs/operations.md has no query %s" % tag)
    with ch.Servers(1) as (s,):
        run.load(s, create=True)
        n = check_queries(run, s, qs)
        check(disk_scopes(s, qs) == n, "disk: %d scopes, replay %d" % (disk_scopes(s, qs), n))
        # Expire the synthetic captures' day: nothing of it is left.
        day = s.rows("SELECT day FROM captures WHERE capture_file = '%s'" % run.files[3])[0][0]
        check(day != s.rows("SELECT day FROM captures WHERE capture_file = '%s'" %
                            run.files[0])[0][0], "the synthetic captures are of the demo's day")
        for stmt in qs["expire"].replace("2026-11-29", day).split(";"):
            if stmt.strip():
                s.query(stmt)
        for t in ("captures", "scopes", "async_spans", "value_samples", "log_lines", "threads"):
            check(s.rows("SELECT count() FROM %s WHERE day = '%s'" % (t, day)) == [["0"]],
                  "%s still holds %s" % (t, day))
        check(int(s.rows("SELECT count() FROM captures")[0][0]) > 0, "expired everything")
    with ch.Servers(2, cluster="orbit_test") as servers:
        cluster_create(run, servers)
        run.load(servers[0])
        for srv in servers:
            n = check_queries(run, srv, qs)
        on = [disk_scopes(srv, qs) for srv in servers]
        check(sum(on) == n, "disk: %s scopes on the shards, replay %d" % (on, n))


def run_csv(run, files):
    """(name, duration) of every finished scope, from --csv."""
    import csv
    import io
    path = os.path.join(run.dir, "queries.csv")
    run.replay("--csv", path, "-q", *files)
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        rows = list(csv.DictReader(io.StringIO(f.read(), newline="")))
    os.unlink(path)
    return [(r["name"], int(r["duration_ns"])) for r in rows
            if r["kind"] == "scope" and "unfinished" not in r["marks"].split()]


def case_dump(run):
    """A dump and the cut capture it continues load side by side, told
    apart, the relation recorded; the kernel's scheduling is in
    captures.sched; and tables of an earlier orbit-replay get the new
    columns from --clickhouse-create."""
    cut, dumped, sched = (os.path.join(run.dir, f + ".orbit.zst")
                          for f in ("cut", "dumped", "sched2"))
    with ch.Servers(1) as (s,):
        # tables of an earlier orbit-replay: without the columns added since
        run.load(s, files=[cut], want=None, create=True)
        s.query("ALTER TABLE captures DROP COLUMN sched")
        s.query("ALTER TABLE captures DROP COLUMN continues")
        p = run.load(s, files=[sched], want=3)
        err = p.stderr.decode(errors="replace")
        check("has no column sched (UInt8): it was created by an earlier orbit-replay; "
              "--clickhouse-create adds it" in err, err)
        run.load(s, files=[dumped, sched], want=0, create=True)
        rows = {os.path.basename(r[0]): (int(r[1]), int(r[2]), int(r[3]), int(r[4]))
                for r in s.rows("SELECT capture_file, capture_id, continues, sched, scopes "
                                "FROM captures")}
        check(set(rows) == {"cut.orbit.zst", "dumped.orbit.zst", "sched2.orbit.zst"},
              "captures rows %s" % rows)
        c, d = rows["cut.orbit.zst"], rows["dumped.orbit.zst"]
        check(c[0] != d[0], "the dump and the cut capture share the capture id %d" % c[0])
        check(d[1] == c[0], "the dump continues %d, the cut capture is %d" % (d[1], c[0]))
        check(c[1] == 0 and rows["sched2.orbit.zst"][1] == 0, "continues on others: %s" % rows)
        # (the cut capture was loaded before the columns were added: 0 in them)
        check([r[2] for r in (c, d, rows["sched2.orbit.zst"])] == [0, 0, 1],
              "captures.sched %s" % rows)
        check(d[3] >= c[3] + 400, "the dump has %d scopes, the cut capture %d" % (d[3], c[3]))
        # both counted by the loader, the dump's rows all there
        n = int(s.rows("SELECT count() FROM scopes WHERE capture_id = %d" % d[0])[0][0])
        check(n == d[3], "scopes of the dump: %d rows, captures says %d" % (n, d[3]))
        # the preference the docs give: the dump's rows, the cut capture's before it
        both = int(s.rows(
            "SELECT count() FROM scopes WHERE capture_id = %d OR (capture_id = %d AND "
            "start_ns < (SELECT start_ns FROM captures WHERE capture_id = %d))" %
            (d[0], c[0], d[0]))[0][0])
        check(d[3] <= both <= d[3] + c[3], "preferring the dump: %d rows" % both)


CASES = {"dump": case_dump, "load": case_load, "twice": case_twice, "refused": case_refused,
         "errors": case_errors, "cluster": case_cluster, "shard_down": case_shard_down,
         "shard_midway": case_shard_midway, "queries": case_queries, "trickle": case_trickle}


def main():
    case = sys.argv[1]
    if case == "captures":
        make_captures(*sys.argv[2:8])
        return
    if case != "trickle" and not ch.available():
        skip("%s not found (Debian clickhouse-server)" % ch.SERVER)
    run = Run(sys.argv[2], sys.argv[3])
    run.docs = sys.argv[4]
    run.proxy = sys.argv[5] if len(sys.argv) > 5 else None
    for f in run.files:
        check(os.path.exists(f), "%s missing: run the clickhouse_captures test" % f)
    CASES[case](run)


if __name__ == "__main__":
    main()
