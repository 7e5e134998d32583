"""replay_locations.py — source locations from a real traced
program (replay_locations.c) into every output: the CSV's file, line and
function columns, Chrome's args.file/line/function, Perfetto's interned
SourceLocation (decoded with protoc against perfetto_subset.proto, whose
field numbers are Perfetto's), the --html page's sites (what its tooltip
and details show), and the summary's --by location table. The
lines are the ones the source marks with @NAME comments.

    python3 replay_locations.py ORBIT_REPLAY PROTO_DIR PROGRAM MODULE SRC_DIR CASE COLLECTOR
                                [PERFETTO_CHECKOUT]

With PERFETTO_CHECKOUT (ORBIT_PERFETTO_PROTOS: a directory holding
protos/perfetto/trace/trace.proto) the Perfetto export is decoded with
Perfetto's own schema, else with replay's subset; the test says which.

CASE: capture   ORBIT_CAPTURE
      collector a real orbit-collector on loopback (ORBIT_COLLECTOR)
      dlclose   ORBIT_CAPTURE, the module dlclosed before the agent drains
                its scope: that scope has no location, nothing else changes
      forged    ORBIT_CAPTURE, scopes whose records name addresses no macro
                made (heap, .bss, unmapped, code, misaligned, ...): the
                program runs to its end, none has a location, work()'s do
"""
import glob
import json
import os
import re
import signal
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import (Replay, check, fail, one, parse_text, protoc_decode,  # noqa: E402
                           read_csv)
from html_common import Page  # noqa: E402

SPANS = {"loc outer": "outer", "loc inner, a name longer than one record holds": "inner",
         "loc started": "started", "loc async": "async", "loc colored": "colored"}


def marks(path):
    """{mark: line} of the @NAME comments of a source file."""
    out = {}
    with open(path) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"/\* @(\w+) \*/", line)
            if m:
                out[m.group(1)] = i
    return out


def run_traced(rp, program, module, case, collector):
    env = dict(os.environ)
    env.pop("ORBIT_COLLECTOR", None)
    env.pop("ORBIT_CAPTURE", None)
    args = [program] + (["forged"] if case == "forged" else [module])
    args += ["close"] if case == "dlclose" else []
    if case == "dlclose":
        env["ORBIT_DRAIN_MS"] = "60000"  # the first drain is at exit, after dlclose
    if case != "collector":
        cap = rp.path("loc.orbit.zst")
        env["ORBIT_CAPTURE"] = cap
        p = subprocess.run(args, env=env, capture_output=True)
        check(p.returncode == 0, "traced program: %d %s" % (p.returncode, p.stderr))
        return cap
    cdir = rp.path("captures")
    col = subprocess.Popen([collector, "--listen", "127.0.0.1:0", "--dir", cdir],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = col.stdout.readline()
        check(line.startswith("listening on "), "collector said %r" % line)
        env["ORBIT_COLLECTOR"] = line.split()[-1]
        p = subprocess.run(args, env=env, capture_output=True)
        check(p.returncode == 0, "traced program: %d %s" % (p.returncode, p.stderr))
    finally:
        col.send_signal(signal.SIGTERM)
        out, err = col.communicate(timeout=30)
    check(col.returncode == 0, "collector exited %d: %s" % (col.returncode, err))
    caps = glob.glob(os.path.join(cdir, "**", "*.orbit.zst"), recursive=True)
    check(len(caps) == 1, "one capture from the collector: %r" % caps)
    return caps[0]


def perfetto_decode(proto_dir, checkout, trace):
    if not checkout:
        print("Perfetto export decoded with replay/export/perfetto_subset.proto")
        return protoc_decode(proto_dir, trace)
    with open(trace, "rb") as f:
        p = subprocess.run(["protoc", "-I" + checkout, "--decode=perfetto.protos.Trace",
                            "protos/perfetto/trace/trace.proto"], stdin=f, capture_output=True)
    check(p.returncode == 0, "protoc with %s: %s" % (checkout, p.stderr.decode(errors="replace")))
    print("Perfetto export decoded with %s/protos/perfetto/trace/trace.proto" % checkout)
    return parse_text(p.stdout.decode("utf-8", errors="surrogateescape"))


def main():
    rp = Replay(sys.argv[1])
    proto_dir, program, module, src, case, collector = sys.argv[2:8]
    checkout = sys.argv[8] if len(sys.argv) > 8 else ""
    main_src = os.path.join(src, "tests/integration/replay_locations.c")
    mod_src = os.path.join(src, "tests/integration/replay_locations_module.c")
    lines, mod_line = marks(main_src), marks(mod_src)["module"]
    # name: (file suffix, line, function); None: no location
    want = {n: ("replay_locations.c", lines[m], "work") for n, m in SPANS.items()}
    want["loc module"] = (None if case == "dlclose" else
                          ("replay_locations_module.c", mod_line, "replay_locations_module"))
    if case == "forged":
        del want["loc module"]
        for i in range(8):
            want["forged %d" % i] = None
    try:
        cap = run_traced(rp, program, module, case, collector)
        csv_path, chrome, trace = rp.path("l.csv"), rp.path("l.json"), rp.path("l.pftrace")
        rp.run(cap, "--csv", csv_path, "--chrome", chrome, "--perfetto", trace, "-q")

        def same(got, name, what):
            w = want[name]
            if w is None:
                check(got is None, "%s: %s has location %r, want none" % (what, name, got))
                return
            check(got is not None, "%s: %s has no location" % (what, name))
            f, ln, fn = got
            check(f.endswith(w[0]) and ln == w[1] and fn == w[2],
                  "%s: %s at %r, want %s:%d %s" % (what, name, got, w[0], w[1], w[2]))

        rows = read_csv(csv_path)
        seen = set()
        for r in rows:
            if r["name"] in want:
                seen.add(r["name"])
                got = (r["file"], int(r["line"]), r["function"]) if r["file"] else None
                check(bool(r["file"]) == bool(r["line"]) == bool(r["function"]), "row %r" % r)
                same(got, r["name"], "CSV")
        check(seen == set(want), "CSV rows: %r" % seen)

        with open(chrome) as f:
            events = json.load(f)["traceEvents"]
        seen = set()
        for e in events:
            if e["ph"] in ("X", "b") and e["name"] in want:
                seen.add(e["name"])
                a = e.get("args", {})
                got = (a["file"], a["line"], a["function"]) if "file" in a else None
                same(got, e["name"], "Chrome")
        check(seen == set(want), "Chrome events: %r" % seen)
        logs = [e for e in events if e["ph"] == "i" and e["name"].startswith("loc log")]
        check(len(logs) == (1 if case == "forged" else 3),
              "Chrome: %d log instants" % len(logs))
        for e in logs:
            a = e.get("args", {})
            check(a.get("file", "").endswith("replay_locations.c") and
                  a.get("line") == lines["log"] and a.get("function") == "work",
                  "Chrome: log line %r" % e)

        packets = perfetto_decode(proto_dir, checkout, trace).get("packet", [])
        names, locs, seen = {}, {}, set()
        for pk in packets:
            for inter in pk.get("interned_data", []):
                for en in inter.get("event_names", []):
                    names[one(en, "iid")] = one(en, "name")
                for sl in inter.get("source_locations", []):
                    iid = one(sl, "iid")
                    check(iid not in locs, "SourceLocation %s interned twice" % iid)
                    locs[iid] = (one(sl, "file_name"), int(one(sl, "line_number")),
                                 one(sl, "function_name"))
            te = one(pk, "track_event")
            if te is None or one(te, "type") != "TYPE_SLICE_BEGIN":
                continue
            name = one(te, "name") or names.get(one(te, "name_iid"))
            if name not in want:
                continue
            seen.add(name)
            iid = one(te, "source_location_iid")
            check(iid is None or iid in locs, "%s: location iid %s before its interning"
                  % (name, iid))
            same(locs.get(iid) if iid is not None else None, name, "Perfetto")
        check(seen == set(want), "Perfetto slices: %r" % seen)

        page = rp.path("l.html")
        rp.run(cap, "--html", page, "-q")
        with open(page, "rb") as f:
            p = Page(f.read().decode("utf-8"))
        seen = set()
        for sp in p.spans:
            name = sp["name"].decode("utf-8", errors="replace") if sp["name"] else None
            if name in want:
                seen.add(name)
                site = sp["site"]
                got = (site["file"], site["line"], site["func"]) if site["file"] else None
                same(got, name, "HTML")
        check(seen == set(want), "HTML spans: %r" % seen)

        out = rp.run(cap, "--by", "location", "--top", "0").stdout.decode()
        table = out[out.index("scopes by location"):]
        for name, w in want.items():
            if w is None or name == "loc async":
                continue
            pat = r"%s:%d %s  %s" % (re.escape(w[0]), w[1], re.escape(w[2]), re.escape(name))
            check(re.search(pat, table), "summary --by location has no %r:\n%s" % (pat, table))
        check(re.search(r"replay_locations\.c:%d work  loc async" % lines["async"],
                        out[out.index("async spans by location"):]),
              "summary: async by location\n" + out)
        if case in ("dlclose", "forged"):
            check("[no location]" in table, "the module's scope: no location\n" + table)
        js = json.loads(rp.run(cap, "--by", "location", "--json", "-", "--top", "0").stdout)
        rows = {r["name"]: r for r in js["scope_locations"] + js["async_span_locations"]}
        for name, w in want.items():
            if w is None:
                continue
            r = rows.get(name)
            check(r is not None and r["file"].endswith(w[0]) and r["line"] == w[1] and
                  r["function"] == w[2] and r["count"] >= 1,
                  "--json --by location: %s is %r" % (name, r))
        bad = rp.run(cap, "--by", "file", want=1)
        check(b"--by takes name or location" in bad.stderr, "--by file: %r" % bad.stderr)
    finally:
        rp.cleanup()
    print("ok")


main()
