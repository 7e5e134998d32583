"""live_view.py — orbit-collector's live view (--ui): a real collector on
loopback, real traced programs, the page in Debian's headless Chromium
(html_cdp.py; skips, 77, without it for the cases that need a browser).

    python3 live_view.py CASE BUILD_DIR

    marks      live_marker.c writes a marker scope every 100 ms while the
               page is open: the page sees the stream, its threads and its
               scopes grow while the program runs, it follows the newest
               time, and its newest event trails each of 100 markers (p50
               and p99 printed: docs/performance.md; each within 5 s, on
               a loaded or sanitized build too); the capture downloaded
               from the page while the program runs replays
    hostile    names that are HTML and script (html_hostile.c) stay text:
               nothing runs, no dialog, the names are there as bytes
    token      with --token-file every request needs the token (403
               without, a cookie after /login?token=, or a Bearer header);
               off loopback the collector refuses to start without one
    strangers  1000 idle connections, a slowloris, huge headers, malformed
               requests and paths outside the UI: a traced program's
               stream meanwhile arrives whole (claimed == delivered, 0
               lost), the collector's memory stays bounded, and the UI
               answers a real request once the strangers are gone
    slow       beside a viewer that reads, one that never reads while a
               program streams for its last 13 s (ORBIT_LIVE_SLOW_SECONDS):
               the collector's RSS grows by at most 16 MiB, the stream
               arrives whole
"""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import check, fail, skip  # noqa: E402
import html_cdp  # noqa: E402

# A sanitizer build (ORBIT_SANITIZED=1): memory figures are printed, not checked.
SANITIZED = os.environ.get("ORBIT_SANITIZED") == "1"


class Collector:
    def __init__(self, build, tmp, *args):
        self.build = build
        self.dir = os.path.join(tmp, "caps")
        self.err = open(os.path.join(tmp, "collector.err"), "w+")
        # Under LeakSanitizer: h2o keeps the buffers it frees in recycle
        # lists of its own, per thread, which end with the view's thread
        # still holding them: h2o's cache, the one report passed over.
        supp = os.path.join(tmp, "lsan.supp")
        with open(supp, "w") as f:
            f.write("leak:h2o_mem_alloc_recycle\n")
        env = dict(os.environ)
        env["LSAN_OPTIONS"] = ":".join(x for x in (env.get("LSAN_OPTIONS"), "suppressions=" + supp) if x)
        self.p = subprocess.Popen(
            [os.path.join(build, "collector", "orbit-collector"), "--listen", "127.0.0.1:0",
             "--dir", self.dir] + list(args),
            stdout=subprocess.PIPE, stderr=self.err, text=True, env=env)
        line = self.p.stdout.readline()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
        if not m:
            fail("the collector said %r" % line)
        self.port = int(m.group(1))
        line = self.p.stdout.readline()
        m = re.match(r"live view: (http://127\.0\.0\.1:(\d+)/)", line)
        if not m:
            fail("no live view line: %r" % line)
        self.url, self.ui_port = m.group(1), int(m.group(2))

    def env(self):
        e = dict(os.environ)
        e["ORBIT_COLLECTOR"] = "127.0.0.1:%d" % self.port
        e["ORBIT_SPOOL"] = "off"
        return e

    def rss_kib(self):
        with open("/proc/%d/status" % self.p.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    def stop(self):
        """SIGTERM: the collector ends cleanly (exit 0; in a sanitizer build
        that is also no leak and no report)."""
        self.p.terminate()
        rc = self.p.wait(timeout=60)
        self.err.seek(0)
        err = self.err.read()
        check(rc == 0 and "Sanitizer" not in err,
              "the collector ended with %d: %s" % (rc, err[-1500:]))
        return err


def get(url, headers=None):
    """(status, headers, body) of a GET, following no redirect."""
    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect, urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with opener.open(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def summary_json(build, capture):
    r = subprocess.run([os.path.join(build, "replay", "orbit-replay"), "--json", "-", "--quiet",
                        capture], capture_output=True, text=True)
    if r.returncode not in (0, 2):
        fail("orbit-replay %s: exit %d: %s" % (capture, r.returncode, r.stderr[-800:]))
    return json.loads(r.stdout), r.returncode


def captures(c):
    return sorted(os.path.join(c.dir, f) for f in os.listdir(c.dir) if f.endswith(".orbit.zst"))


def browser():
    try:
        return html_cdp.Chrome(1400, 900, timeout=120)
    except FileNotFoundError:
        skip("no chromium at " + html_cdp.CHROMIUM)


def page_clean(c):
    for t in c.troubles():
        fail(t)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(len(xs) * p / 100))]


def case_marks(build, tmp):
    c = Collector(build, tmp, "--ui", "127.0.0.1:0")
    ch = browser()
    try:
        ch.open(offline=False)
        ch.navigate(c.url)
        ch.wait_for("window.orbitLive !== undefined", what="the live view")
        n = 100
        # A light load (about 2000 events/s): a sanitized build reads it
        # within the live view's budget too (docs/collector.md).
        env = c.env()
        env["LIVE_MARKER_PAUSE_US"] = "1000"
        prog = subprocess.Popen([os.path.join(build, "tests", "live_marker"), str(n), "100"],
                                stdout=subprocess.PIPE, text=True, env=env)
        markers = []   # (index, end ns)
        seen = []      # (poll time ns, newest ns)
        names_during = set()
        threads_during = 0
        downloaded = None
        while True:
            v = ch.eval("[orbitLive.newest(), orbitLive.names().length, orbitLive.follow(),"
                        " orbitLive.streams().length]")
            now = time.monotonic_ns()
            if v[0] is not None:
                seen.append((now, v[0]))
            if prog.poll() is None and len(markers) == 50 and not names_during:
                names_during = set(ch.eval("orbitLive.names()"))
                threads_during = ch.eval("orbit.counts().lanes")
                st, _, body = get(c.url + "capture/1")
                check(st == 200, "the capture download: %d" % st)
                downloaded = os.path.join(tmp, "downloaded.orbit.zst")
                with open(downloaded, "wb") as f:
                    f.write(body)
            # the program's lines, without blocking
            import select
            while select.select([prog.stdout], [], [], 0)[0]:
                line = prog.stdout.readline()
                if not line:
                    break
                m = re.match(r"marker (\d+) (\d+)", line)
                if m:
                    markers.append((int(m.group(1)), int(m.group(2))))
            if prog.poll() is not None and len(markers) >= n:
                break
            if prog.poll() is not None and not select.select([prog.stdout], [], [], 0)[0]:
                break
            time.sleep(0.02)
        check(prog.wait() == 0, "live_marker failed")
        # a last look after the end: the final block
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            v = ch.eval("orbitLive.newest()")
            seen.append((time.monotonic_ns(), v))
            if v is not None and v >= markers[-1][1]:
                break
            time.sleep(0.05)
        check(len(markers) == n, "%d markers printed of %d" % (len(markers), n))
        lat = []
        for i, end in markers:
            t = next((p for p, newest in seen if newest >= end), None)
            check(t is not None, "marker %d (end %d) never reached the page" % (i, end))
            lat.append(max(0, t - end) / 1e6)
        p50, p99 = pct(lat, 50), pct(lat, 99)
        print("live view: the page's newest event behind each of %d markers: p50 %.0f ms, "
              "p99 %.0f ms, max %.0f ms" % (n, p50, p99, max(lat)))
        # The figure (docs/performance.md) is the benchmark's to keep; the
        # test holds every marker to 5 s, on a loaded or sanitized build too.
        check(max(lat) <= 5000, "a marker took %.0f ms to reach the page" % max(lat))
        check("work" in names_during and any(x.startswith("marker-") for x in names_during),
              "the page had no scopes while the program ran: %r" % sorted(names_during)[:10])
        check(threads_during >= 2, "threads while running: %d lanes" % threads_during)
        names = set(ch.eval("orbitLive.names()"))
        check("marker-%d" % (n - 1) in names, "the last marker is not on the page")
        check(ch.eval("orbitLive.follow()"), "not following")
        # The statistics are the view's: the markers drawn in it, each once.
        rows = ch.eval("Array.from(document.querySelectorAll('#stats tbody tr'), r => "
                       "[r.cells[0].textContent, r.cells[2].textContent])")
        v = ch.eval("orbitLive.view()")
        drawn = [r for r in rows if r[0].startswith("marker-")]
        check(drawn and all(r[1] == "1" for r in drawn) and len(drawn) < n,
              "the view's statistics: %r (view %r)" % (rows[:6], v))
        check(any(r[0] == "work" for r in rows), "no 'work' row: %r" % rows[:6])
        v = ch.eval("orbitLive.view()")
        check(v[1] >= v[2] >= v[0], "the view %r does not end at the newest time" % v)
        ch.wait_for("orbitLive.streams().length === 1 && orbitLive.streams()[0].state === 'ended'",
                    timeout=10, what="the stream listed as ended")
        s = ch.eval("orbitLive.streams()")
        check(len(s) == 1 and s[0]["process"] == "live_marker" and s[0]["state"] == "ended",
              "streams %r" % s)
        page_clean(ch)
        # following pauses on a pan and resumes with L
        ch.eval("document.getElementById('timeline').focus()")
        ch.key("a", "KeyA", vk=65)
        time.sleep(0.3)
        check(not ch.eval("orbitLive.follow()"), "a pan did not pause following")
        ch.key("l", "KeyL", vk=76)
        check(ch.eval("orbitLive.follow()"), "L did not resume following")
        j, rc = summary_json(build, downloaded)
        d = stream_of(j)
        check(d["records"] > 0 and d["scopes"] > 0 and not d["complete"],
              "the download mid-run: %r" % {k: d[k] for k in ("records", "scopes", "complete")})
        print("the capture downloaded mid-run replays as an incomplete capture (exit %d): "
              "%d records" % (rc, d["records"]))
    finally:
        ch.close()
        c.stop()
    whole, _ = summary_json(build, captures(c)[0])
    check_whole(whole, "the marker program's stream")


def case_hostile(build, tmp):
    c = Collector(build, tmp, "--ui", "127.0.0.1:0")
    ch = browser()
    try:
        ch.open(offline=False, bindings=("orbitPwned",))
        ch.call("Page.addScriptToEvaluateOnNewDocument",
                {"source": "window.alert = window.confirm = window.prompt = () => orbitPwned('dialog');"})
        r = subprocess.run([os.path.join(build, "tests", "html_hostile"), "</script><b>x</b>"],
                           env=c.env(), capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "html_hostile failed: " + r.stderr[-400:])
        ch.navigate(c.url)
        names = ch.wait_for("window.orbitLive && orbitLive.names().length > 0 && orbitLive.names()",
                            what="the hostile stream's names")
        time.sleep(1.5)
        names = ch.eval("orbitLive.names()")
        check(any("<img src=x onerror" in x for x in names), "names: %r" % names[:8])
        check(any("</script><script>" in x for x in names), "names: %r" % names[:8])
        check(ch.eval("window.__pwned === undefined"), "a payload ran")
        for e in ch.events:
            if e.get("method") == "Runtime.bindingCalled":
                fail("a payload called orbitPwned: %r" % e["params"])
        text = ch.eval("document.getElementById('live').textContent")
        check("html_hostile" in text, "the stream list: %r" % text[:300])
        check(ch.eval("document.querySelectorAll('#live img, #live script, #live svg, #live b').length") == 0,
              "markup from names became elements")
        page_clean(ch)
    finally:
        ch.close()
        c.stop()


def case_token(build, tmp):
    tok = os.path.join(tmp, "token")
    with open(tok, "w") as f:
        f.write("s3cret token/+&\n")
    c = Collector(build, tmp, "--ui", "127.0.0.1:0", "--token-file", tok)
    try:
        for path in ("", "streams", "events?stream=1", "capture/1"):
            st, _, _ = get(c.url + path)
            check(st == 403, "/%s without the token: %d" % (path, st))
        st, _, _ = get(c.url + "login?token=wrong")
        check(st == 403, "a wrong token: %d" % st)
        st, h, _ = get(c.url + "login?token=s3cret%20token%2F%2B%26")
        check(st == 303, "the right token: %d" % st)
        cookie = h.get("Set-Cookie", "")
        check(cookie.startswith("orbit_ui=") and "HttpOnly" in cookie, "cookie %r" % cookie)
        st, _, body = get(c.url + "streams", {"Cookie": cookie.split(";")[0]})
        check(st == 200 and b"streams" in body, "with the cookie: %d" % st)
        st, _, _ = get(c.url + "streams", {"Cookie": "orbit_ui=" + "0" * 64})
        check(st == 403, "a made-up cookie: %d" % st)
        st, _, _ = get(c.url + "streams", {"Authorization": "Bearer s3cret token/+&"})
        check(st == 200, "with the Bearer token: %d" % st)
        st, _, _ = get(c.url + "streams", {"Authorization": "Bearer s3cret"})
        check(st == 403, "a Bearer prefix of the token: %d" % st)
    finally:
        c.stop()
    coll = os.path.join(build, "collector", "orbit-collector")
    r = subprocess.run([coll, "--listen", "127.0.0.1:0", "--dir", os.path.join(tmp, "c2"), "--ui",
                        "0.0.0.0:0"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 1 and "loopback" in r.stderr and "token" in r.stderr,
          "off loopback without a token: exit %d, %r" % (r.returncode, r.stderr))
    p = subprocess.Popen([coll, "--listen", "127.0.0.1:0", "--dir", os.path.join(tmp, "c3"),
                          "--ui", "0.0.0.0:0", "--token-file", tok],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.readline()
    line = p.stdout.readline()
    p.terminate()
    p.wait(timeout=30)
    check(line.startswith("live view: http://0.0.0.0:"), "with a token, off loopback: %r" % line)


def whole_stream(build, c, run):
    """A traced emit run; its capture's loss equation and counts."""
    r = subprocess.run([os.path.join(build, "examples", "emit")] + run, env=c.env(),
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, "emit failed: " + r.stderr[-400:])
    time.sleep(0.5)
    files = captures(c)
    check(len(files) >= 1, "no capture")
    j, _ = summary_json(build, files[-1])
    return j


def stream_of(j):
    return j["captures"][0]["streams"][0]


def check_whole(j, what):
    """The stream arrived whole: complete, its equation holds. At a paced
    rate the pipeline keeps what it is given, but on 2 loaded vCPUs (the
    sanitizer builds run these too) a ring may still be lapped now and
    then: that loss is counted, and must stay under 1 %."""
    s = stream_of(j)
    claimed, delivered, lost = s["claimed"], s["delivered"], s["lost"]
    check(s["equation"] == "holds" and s["complete"] and claimed == delivered + lost,
          "%s: claimed %r, delivered %r, lost %r, equation %s" % (what, claimed, delivered, lost,
                                                                  s["equation"]))
    if not SANITIZED:  # a sanitized agent is many times slower: its rings lap
        check(lost * 100 <= claimed, "%s: %d of %d lost" % (what, lost, claimed))
    print("%s: claimed %d == delivered %d + lost %d" % (what, claimed, delivered, lost))
    return claimed


def case_strangers(build, tmp):
    c = Collector(build, tmp, "--ui", "127.0.0.1:0")
    try:
        rss0 = c.rss_kib()
        idle = []
        for _ in range(1000):
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", c.ui_port))
                idle.append(s)
            except OSError:
                s.close()
        slow = socket.create_connection(("127.0.0.1", c.ui_port))
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        bad = []
        for req in (b"GARBAGE\r\n\r\n", b"GET / HTTP/1.1\r\nX: " + b"a" * 200000 + b"\r\n\r\n",
                    b"\x00\xff\x16\x03\x01" * 100, b"GET /../../etc/passwd HTTP/1.1\r\nHost: x\r\n\r\n"):
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", c.ui_port))
                s.sendall(req)
            except OSError:
                pass
            bad.append(s)
        j = whole_stream(build, c, ["--threads", "2", "--iterations", "200000", "--rate",
                                    "1000000"])
        n = check_whole(j, "the stream beside the strangers")
        check(n >= 2000000, "claimed %r" % n)
        for s in slow, :
            try:
                for _ in range(3):
                    s.sendall(b"X-Slow: 1\r\n")
                    time.sleep(1)
            except OSError:
                pass
        rss1 = c.rss_kib()
        print("collector RSS: %d KiB at start, %d KiB with 1000 idle connections, a slowloris "
              "and hostile requests, after a 2 M event stream" % (rss0, rss1))
        if not SANITIZED:
            check(rss1 - rss0 < 128 * 1024, "RSS grew by %d KiB" % (rss1 - rss0))
        for s in idle + bad + [slow]:
            s.close()
        time.sleep(1)
        for path, want in (("", 200), ("streams", 200), ("../../etc/passwd", 404),
                           ("capture/999", 404), ("capture/../../x", 404), ("events?stream=x", 400),
                           ("events?stream=999", 404), ("nothing", 404)):
            st, _, _ = get(c.url + path)
            check(st == want, "/%s: %d, not %d" % (path, st, want))
    finally:
        c.stop()


def case_slow(build, tmp):
    import threading
    # A history of 5 s: full before the stalled viewer comes, so that what
    # grows after is the stalled viewer's (a 60 s history grows for 60 s).
    c = Collector(build, tmp, "--ui", "127.0.0.1:0", "--ui-history", "5")
    try:
        seconds = int(os.environ.get("ORBIT_LIVE_SLOW_SECONDS", "13"))
        env = c.env()
        env["LIVE_MARKER_ONE_NAME"] = "1"  # a name per marker would grow the reader's tables
        prog = subprocess.Popen([os.path.join(build, "tests", "live_marker"),
                                 str((seconds + 7) * 10), "100", "2", "20"], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1)
        # A viewer that reads starts the stream's feed; once its history
        # is full (its caps: 50 000 spans and their values), the feed's
        # memory is what it will be.
        got = {"bytes": 0, "meta": ""}
        reader = socket.create_connection(("127.0.0.1", c.ui_port))
        reader.sendall(b"GET /events?stream=1 HTTP/1.1\r\nHost: x\r\n\r\n")

        def read():
            while True:
                try:
                    b = reader.recv(1 << 20)
                except OSError:
                    return
                if not b:
                    return
                got["bytes"] += len(b)
                k = b.rfind(b"event: meta\ndata: ")
                if k >= 0:
                    got["meta"] = b[k + 18:k + 120].split(b"\n")[0].decode("utf-8", "replace")
        t = threading.Thread(target=read, daemon=True)
        t.start()
        time.sleep(6)
        rss0 = c.rss_kib()
        s = socket.create_connection(("127.0.0.1", c.ui_port))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.sendall(b"GET /events?stream=1 HTTP/1.1\r\nHost: x\r\n\r\n")
        peak = rss0
        while prog.poll() is None:
            time.sleep(0.25)
            peak = max(peak, c.rss_kib())
        check(prog.wait() == 0, "live_marker failed: " + prog.stderr.read()[-400:])
        st = json.loads(get(c.url + "streams")[2])
        print("collector RSS, a viewer reading: %d KiB; with a second that never reads for "
              "the rest of the run: %d KiB at most (+%d KiB)" % (rss0, peak, peak - rss0))
        print("the reading viewer got %d bytes, its last meta %s" % (got["bytes"], got["meta"]))
        if SANITIZED:
            print("(a sanitizer build: its quarantine holds freed memory; RSS not checked)")
        else:
            check(peak - rss0 <= 16 * 1024, "RSS grew by %d KiB" % (peak - rss0))
        check(got["bytes"] > 0 and '"seq"' in got["meta"], "the reading viewer got nothing")
        s.close()
        reader.close()
        time.sleep(0.5)
        files = captures(c)
        j, _ = summary_json(build, files[-1])
        check_whole(j, "the stream beside the slow viewer")
        check(st["streams"][0]["events"] > 0, "streams %r" % st)
    finally:
        c.stop()


def main():
    if len(sys.argv) != 3:
        fail("usage: live_view.py CASE BUILD_DIR")
    case, build = sys.argv[1], sys.argv[2]
    cases = {"marks": case_marks, "hostile": case_hostile, "token": case_token,
             "strangers": case_strangers, "slow": case_slow}
    if case not in cases:
        fail("unknown case " + case)
    with tempfile.TemporaryDirectory(prefix="orbit-live-") as tmp:
        cases[case](build, tmp)
    print("ok")


if __name__ == "__main__":
    main()
