"""html_data.py — orbit-replay --html without a browser: the page's data
block decoded in Python carries exactly the CSV's scopes and async spans
(threads, depths, names as bytes, times to the nanosecond, unfinished,
colours, group ids), the summary's statistics, values and log lines; the
page fetches nothing and its data cannot end its <script>; the cap keeps
the longest spans; the page's sources never turn text into HTML; the
options' errors.

    python3 html_data.py data   ORBIT_REPLAY CAPTURE...
    python3 html_data.py cap    ORBIT_REPLAY N CAPTURE
    python3 html_data.py sources REPLAY_SOURCE_DIR
    python3 html_data.py cli    ORBIT_REPLAY CAPTURE
"""
import json
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import Replay, as_utf8, check, fail, read_csv  # noqa: E402
from html_common import F_ASYNC, F_UNFINISHED, Page  # noqa: E402


def page_text(path):
    with open(path, "rb") as f:
        raw = f.read()
    return raw.decode("utf-8")  # the page itself is UTF-8 whatever the names held


def structure(html):
    """What every page must be: self-contained, its data inert."""
    low = html.lower()
    check("http://" not in low and "https://" not in low, "a URL with a scheme in the page")
    check(low.count("<script") == 2 and low.count("</script") == 2,
          "the page has %d <script and %d </script" % (low.count("<script"), low.count("</script")))
    block = re.search(r'type="application/x-orbit-data">\n(.*?)</script>', html, re.S).group(1)
    check(re.fullmatch(r"[A-Za-z0-9+/=\n]*", block) is not None, "the data block is not plain base64")
    check("Content-Security-Policy" in html and "default-src 'none'" in html, "no CSP")
    nonces = set(re.findall(r"nonce-([A-Za-z0-9+/]+)", html)) | set(re.findall(r'nonce="([^"]+)"', html))
    check(len(nonces) == 1, "one nonce for the CSP, the style and the script: %r" % nonces)


def csv_key(r, pid_of_tid):
    name = r["name"].encode("utf-8", errors="surrogateescape")
    if r["kind"] == "async":
        return ("async", r["pid"], r["tid"], None, name, r["start_ns"],
                None if r["unfinished"] else r["end_ns"] - r["start_ns"])
    return ("scope", r["pid"], r["tid"], r["depth"], name, r["start_ns"],
            None if r["unfinished"] else r["end_ns"] - r["start_ns"])


def page_key(p, s):
    lane = s["lane"]
    pid = p.procs[lane["proc"]]["pid"]
    unf = s["flag"] & F_UNFINISHED
    if s["flag"] & F_ASYNC:
        return ("async", pid, s["extra"]["tid"], None, s["name"], s["start"], None if unf else s["dur"])
    return ("scope", pid, lane["tid"], s["depth"], s["name"], s["start"], None if unf else s["dur"])


def case_data(exe, captures):
    rp = Replay(exe)
    html, csvp, js = rp.path("p.html"), rp.path("p.csv"), rp.path("p.json")
    r = rp.run("-q", "--html", html, "--csv", csvp, "--json", js, "--top", "0", *captures, want=None)
    check(r.returncode in (0, 2), "orbit-replay exited %d" % r.returncode)
    text = page_text(html)
    structure(text)
    p = Page(text)
    rows = read_csv(csvp)
    summary = json.load(open(js))
    check(p.meta["merged"][1] == 0, "nothing merged below the default cap")
    want = Counter(csv_key(r, None) for r in rows)
    got = Counter(page_key(p, s) for s in p.spans)
    if want != got:
        miss = list((want - got).elements())[:5]
        extra = list((got - want).elements())[:5]
        fail("page spans differ from the CSV: missing %r, extra %r" % (miss, extra))
    # colours and group ids, where given
    by_key = {}
    for s in p.spans:
        by_key.setdefault(page_key(p, s), []).append(s)
    for r in rows:
        if not r["color"]:
            continue
        s = by_key[csv_key(r, None)][0]
        check(s["site"]["attr"] == 1 and "#%08x" % s["site"]["color"] == r["color"],
              "colour of %r: %r vs %r" % (r["name"], s["site"], r["color"]))
        group = s["extra"]["group"] if s["extra"] else 0
        check(str(group) == r["group_id"], "group of %r: %d vs %s" % (r["name"], group, r["group_id"]))
    # thread names as the CSV has them
    names = {(r["pid"], r["tid"]): r["thread_name"] for r in rows if r["kind"] == "scope"}
    for lane in p.lanes:
        if lane["kind"] == 1 and (p.procs[lane["proc"]]["pid"], lane["tid"]) in names:
            want_name = names[(p.procs[lane["proc"]]["pid"], lane["tid"])]
            check((lane["name"] or "") == want_name.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace"),
                  "thread name %r vs %r" % (lane["name"], want_name))
    # statistics: the summary's, every name
    T = p.T
    st = T["STAT"][1]
    page_stats = {(st["kind"][i], p.b(st["name"][i])): (st["cnt"][i], st["totl"][i], st["max"][i], st["p95"][i])
                  for i in range(T["STAT"][0])}
    for kind, key in ((0, "scopes"), (1, "async_spans")):
        for row in summary[key]:
            k = (kind, row["name"].encode("utf-8", errors="surrogateescape"))
            got = page_stats.get(k)
            if got is None:
                # the JSON's names are made valid UTF-8; compare those loosely
                cand = [v for (kk, n), v in page_stats.items()
                        if kk == kind and as_utf8(n.decode("utf-8", "surrogateescape")) == row["name"]]
                check(len(cand) >= 1, "statistics of %r missing" % row["name"])
                got = cand[0]
            check(got == (row["count"], row["total_ns"], row["max_ns"], row["p95_ns"]),
                  "statistics of %r: %r vs %r" % (row["name"], got, row))
    values = sum(s["values"] for c in summary["captures"] for s in c["streams"])
    logs = sum(s["log_lines"] + s["markers"] for c in summary["captures"] for s in c["streams"])
    check(T["VALS"][0] == values, "values: page %d, summary %d" % (T["VALS"][0], values))
    check(T["LOGS"][0] == logs, "log lines: page %d, summary %d" % (T["LOGS"][0], logs))
    # the marks count the claims that never came: the loss when the equation holds
    missing = sum(s["claimed"] - s["delivered"] for c in summary["captures"] for s in c["streams"])
    L = T["LOSS"][1]
    marked = sum(c for c, f in zip(L["cnt"], L["flag"]) if not f & 32)
    ended = all(s["complete"] for c in summary["captures"] for s in c["streams"])
    check(marked == missing or not ended, "loss marks count %d records, the summary %d missing" % (marked, missing))
    rp.cleanup()
    print("ok: %d spans, %d values, %d log lines, %d loss marks, %d bytes" %
          (len(p.spans), values, logs, T["LOSS"][0], len(text)))


def case_cap(exe, n, capture):
    rp = Replay(exe)
    html, csvp = rp.path("p.html"), rp.path("p.csv")
    rp.run("-q", "--html", html, "--csv", csvp, "--html-max-scopes", n, capture, want=None)
    n = int(n)
    p = Page(page_text(html))
    rows = read_csv(csvp)
    check(len(rows) > n, "the capture has %d spans: no more than the cap %d" % (len(rows), n))
    dur = lambda r: float("inf") if r["unfinished"] else r["end_ns"] - r["start_ns"]
    durs = sorted((dur(r) for r in rows), reverse=True)
    kept = sorted((float("inf") if s["flag"] & F_UNFINISHED else s["dur"] for s in p.spans), reverse=True)
    check(len(kept) == n, "kept %d spans, cap %d" % (len(kept), n))
    check(kept == durs[:n], "the kept spans are not the %d longest" % n)
    merged = p.meta["merged"][1]
    check(merged == len(rows) - n, "merged %d, want %d" % (merged, len(rows) - n))
    check(p.meta["merged_max_ns"][1] == max(durs[n:]), "longest merged %r vs %r" % (p.meta["merged_max_ns"][1], max(durs[n:])))
    check(sum(l["merged"] for l in p.lanes) == merged, "merged per lane adds up")
    # every kept scope's enclosing scope is kept too (they are longer), but for ties
    T = p.T
    dens = sum(T["DBIN"][1]["c"])
    check(dens == merged, "the density strips count %d of %d merged" % (dens, merged))
    # values past n / 2 are thinned evenly: what is kept still spans the capture
    js = rp.path("p.json")
    rp.run("-q", "--json", js, capture, want=None)
    summary = json.load(open(js))
    values = sum(st["values"] for c in summary["captures"] for st in c["streams"])
    kept_v = T["VALS"][0]
    check(kept_v <= (n + 1) // 2 and kept_v + p.meta["values_dropped"][1] == values,
          "values: %d kept + %d left out of %d (limit %d)" % (kept_v, p.meta["values_dropped"][1], values, (n + 1) // 2))
    if values > (n + 1) // 2:
        t = sorted(T["VALS"][1]["t"])
        first = min(st["start_ns"] for c in summary["captures"] for st in c["streams"]) - p.origin
        last = max(st["end_ns"] for c in summary["captures"] for st in c["streams"]) - p.origin
        check(t[0] - first < (last - first) * 0.1 and last - t[-1] < (last - first) * 0.1,
              "thinned values still cover the capture: %r .. %r of %r .. %r" % (t[0], t[-1], first, last))
    rp.cleanup()
    print("ok: kept %d of %d, merged %d; %d of %d values" % (n, len(rows), merged, kept_v, values))


def case_sources(src):
    d = os.path.join(src, "html")
    bad = [r"\.innerHTML", r"\.outerHTML", r"insertAdjacentHTML", r"document\.write", r"\beval\s*\(",
           r"new\s+Function", r"setAttribute\s*\(\s*['\"]on", r"\.srcdoc", r"createContextualFragment",
           r"DOMParser", r"https?:", r"\bfetch\s*\(", r"XMLHttpRequest", r"import\s*\(",
           r"EventSource", r"WebSocket"]
    files = [f for f in os.listdir(d) if f.endswith((".js", ".css", ".html"))]
    check(len(files) >= 3, "no page sources in " + d)
    for f in files:
        text = open(os.path.join(d, f), encoding="utf-8").read()
        if f == "live.js":
            # The live view asks the server it came from, by relative
            # paths only (its CSP: connect-src 'self'), and nothing else.
            asks = re.findall(r"\bfetch\s*\(([^,)]*)|new\s+EventSource\s*\(([^)]*)\)", text)
            check(sorted(a or b for a, b in asks) == ['"events?stream=" + id', '"streams"'],
                  "live.js asks for %r" % asks)
            text = re.sub(r"\bfetch\s*\(\s*\"streams\"", "", text)
            text = re.sub(r"new\s+EventSource\s*\(\s*\"events\?stream=\" \+ id\)", "", text)
        for pat in bad:
            if f == "page.html" and pat == r"https?:":
                continue
            m = re.search(pat, text)
            if m:
                fail("%s: %r at %d (text must stay text, nothing fetched)" % (f, m.group(0), m.start()))
    print("ok: %d sources" % len(files))


def case_cli(exe, capture):
    rp = Replay(exe)
    r = rp.run("--html-max-scopes", "many", capture, want=1)
    check(b"--html-max-scopes" in r.stderr, "usage names the option")
    rp.run("-q", "--html", "/dev/full", capture, want=3)
    rp.run("-q", "--html", rp.path("no/such/dir/p.html"), capture, want=3)
    r = rp.run("-q", "--html", "-", capture, want=0)
    check(r.stdout.startswith(b"<!DOCTYPE html>") and r.stdout.rstrip().endswith(b"</html>"), "--html - writes the page on stdout")
    r = rp.run("--help", want=0)
    check(b"--html FILE" in r.stdout and b"--html-max-scopes" in r.stdout, "--help lists --html")
    rp.cleanup()
    print("ok")


def main():
    case = sys.argv[1]
    if case == "data":
        case_data(sys.argv[2], sys.argv[3:])
    elif case == "cap":
        case_cap(sys.argv[2], sys.argv[3], sys.argv[4])
    elif case == "sources":
        case_sources(sys.argv[2])
    elif case == "cli":
        case_cli(sys.argv[2], sys.argv[3])
    else:
        fail("unknown case " + case)


main()
