"""html_page.py — orbit-replay --html pages in Debian's headless Chromium
(html_cdp.py: the DevTools protocol over a pipe, network cut off). Skips
(77) without /usr/bin/chromium. Never asserts a time: the figures it
measures are printed (docs/performance.md records them).

    python3 html_page.py CASE BUILD_DIR SOURCE_DIR [OUT_DIR]

    demo         examples/demo.sh (the demo streaming to a real
                 orbit-collector) writes the page; it renders a drawn
                 timeline (many colours in the lane area, light and dark),
                 fetches nothing, throws nothing, holds the CSV's spans
    zoom         W/S, A/D, the wheel, dragging, a range by shift+drag, the
                 URL fragment's range (#t=FROM,TO) both ways
    search       the search box finds by name and steps through the
                 instances in time order; a statistics row highlights its
                 name; the selection panel shows the instance
    hostile      names that are HTML and script (html_hostile.c) run
                 nothing, fetch nothing, open no dialog and stay text, with
                 the page's Content-Security-Policy and without it
    loss         a capture with lost records: the notice, red on the timeline
    states       the thread-state track: a page given
                 THST rows by the test draws them under the thread's lane
    colours      two threads of one name get colours of their own on the CPU
                 tracks (their LANE rows given one name by the test); the
                 first keeps its name's colour
    sched        a real capture with the kernel's scheduling (ORBIT_SCHED=1,
                 root and tracefs, else skip): a state track under each
                 thread's lane (the spinner running, the sleeper blocked),
                 CPU tracks naming the threads, a scope's on-CPU time in the
                 selection panel
    million      1 M scopes: the page's size (<= 64 MiB, asserted) and the
                 time to the first frame (printed), with the default cap and
                 with --html-max-scopes 0
    screenshots  writes the README's screenshots into OUT_DIR
"""
import faulthandler
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import check, fail, read_csv, skip  # noqa: E402
import html_cdp  # noqa: E402
from html_cdp import Chrome, colours  # noqa: E402

PAGE_MAX = 64 << 20


class Env:
    def __init__(self, build, src):
        self.build = os.path.abspath(build)
        self.src = os.path.abspath(src)
        self.replay = os.path.join(self.build, "replay", "orbit-replay")
        self.tmp = tempfile.mkdtemp(prefix="orbit-html-test-")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run(self, args, env=None, want=0):
        p = subprocess.run(args, capture_output=True, env=env)
        if want is not None and p.returncode != want:
            fail("%s exited %d\n%s" % (" ".join(args), p.returncode, p.stderr.decode(errors="replace")))
        return p

    def page(self, capture, name, *opts):
        out = self.path(name)
        self.run([self.replay, "-q", "--html", out] + list(opts) + [capture], want=None)
        check(os.path.exists(out), "no page written")
        return out

    def demo(self):
        """examples/demo.sh: orbit-collector, the demo streaming to it, the page."""
        d = self.path("demo")
        env = dict(os.environ, ORBIT_DEMO_DIR=d)
        p = self.run(["sh", os.path.join(self.src, "examples", "demo.sh"), self.build], env=env)
        out = p.stdout.decode()
        page = os.path.join(d, "demo.html")
        check(os.path.exists(page), "demo.sh wrote no page")
        check(page in out and "Open the page" in out, "demo.sh says to open the page:\n" + out)
        caps = [f for f in os.listdir(d) if f.endswith(".orbit.zst")]
        check(len(caps) == 1, "one capture from the collector: %r" % caps)
        return page, os.path.join(d, caps[0])

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def browser(width=1400, height=860):
    try:
        return Chrome(width, height, timeout=300)
    except FileNotFoundError:
        skip("no chromium at " + html_cdp.CHROMIUM)


def load(c, page, frag="", timeout=300):
    """Opens the page; the seconds to its first frame, as the test sees them."""
    c.navigate("about:blank")  # so that a new fragment loads the page again
    t = time.monotonic()
    c.navigate("file://" + page + frag, timeout=timeout)
    state = c.wait_for("document.documentElement.dataset.ready", timeout=timeout, what="the first frame")
    took = time.monotonic() - t
    if state != "1":
        fail("the page could not be shown: " + str(c.eval("document.getElementById('notices').textContent")))
    c.frames(2)
    return took


def clean(c, page):
    """Nothing thrown, no console error, no dialog, nothing fetched."""
    for t in c.troubles():
        fail(t)
    want = "file://" + page
    for url in c.requests():
        check(url.split("#")[0] == want, "the page fetched %r" % url)


def lane_shot(c):
    a = c.eval("orbit.laneArea()")
    b = a["box"]
    clip = {"x": b["x"] + a["x"], "y": b["y"] + a["y"], "width": a["w"], "height": max(40, a["h"])}
    return c.screenshot(clip)


def drawn(png, what, min_colours=12):
    """A drawn timeline: many distinct colours, none taking nearly all of it."""
    seen = colours(png)
    total = sum(seen.values())
    common = [k for k, v in seen.items() if v >= 30]
    top = max(seen.values()) / total
    check(len(common) >= min_colours, "%s: %d colours with 30 pixels or more (blank?)" % (what, len(common)))
    check(top < 0.9, "%s: one colour covers %.0f%% (blank?)" % (what, top * 100))
    return len(common), top


def view(c):
    return c.eval("orbit.view()")


def centre(c):
    a = c.eval("orbit.laneArea()")
    return a["box"]["x"] + a["x"] + a["w"] / 2, a["box"]["y"] + a["y"] + 60


# ---- cases ----

def case_demo(env):
    page, capture = env.demo()
    csvp = env.path("demo.csv")
    env.run([env.replay, "-q", "--csv", csvp, capture])
    rows = read_csv(csvp)
    c = browser()
    try:
        c.open("light")
        took = load(c, page)
        clean(c, page)
        counts = c.eval("orbit.counts()")
        check(counts["spans"] == len(rows), "page spans %d, CSV rows %d" % (counts["spans"], len(rows)))
        n, top = drawn(lane_shot(c), "light")
        frames = sum(r["end_ns"] - r["start_ns"] for r in rows if r["depth"] == 0 and r["kind"] == "scope")
        c.wait_for("orbit.flame()", what="the flame graph")
        fl = c.eval("orbit.flame()")
        check(fl["nodes"] >= 5 and abs(fl["total"] - frames) < 1, "flame graph total %r vs %r" % (fl, frames))
        c.scheme("dark")
        c.frames(3)
        dark = c.eval("getComputedStyle(document.documentElement).getPropertyValue('--dark').trim()")
        check(dark == "1", "the dark theme follows the system's")
        n2, top2 = drawn(lane_shot(c), "dark")
        clean(c, page)
        print("ok: %d spans; %d / %d colours (light / dark); first frame after %.2f s" % (counts["spans"], n, n2, took))
    finally:
        c.close()


def case_zoom(env):
    page = env.page(os.path.join(env.src, "tests/data/replay/demo-collector-4x500.orbit.zst"), "z.html")
    c = browser()
    try:
        c.open()
        load(c, page)
        x, y = centre(c)
        c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
        v0 = view(c)
        span = lambda v: v[1] - v[0]
        for _ in range(3):
            c.key("w")
        c.frames()
        v1 = view(c)
        check(span(v1) < span(v0) * 0.6, "W zooms in: %r -> %r" % (v0, v1))
        for _ in range(3):
            c.key("s")
        c.frames()
        v2 = view(c)
        check(abs(span(v2) - span(v0)) < span(v0) * 0.02, "S zooms back out: %r -> %r" % (v1, v2))
        for _ in range(4):
            c.key("w")
        v3 = view(c)
        c.key("d")
        v4 = view(c)
        check(v4[0] > v3[0] and abs(span(v4) - span(v3)) < 1, "D pans right: %r -> %r" % (v3, v4))
        c.key("a")
        c.key("a")
        v5 = view(c)
        check(v5[0] < v3[0], "A pans left: %r -> %r" % (v4, v5))
        # the wheel zooms at the mouse: the time under it stays there
        t_at = "(() => { const v = orbit.view(), a = orbit.laneArea(); return v[0] + (%f - a.box.x - a.x) / a.w * (v[1] - v[0]); })()" % x
        before = c.eval(t_at)
        c.wheel(x, y, -400)
        c.frames()
        v6 = view(c)
        after = c.eval(t_at)
        px = span(v6) / c.eval("orbit.laneArea().w")
        check(span(v6) < span(v5) * 0.7, "the wheel zooms in: %r -> %r" % (v5, v6))
        check(abs(after - before) <= 2 * px, "the wheel keeps the time under the mouse: %r -> %r" % (before, after))
        # a drag pans by what it moved
        c.drag(x, y, x - 200, y)
        v7 = view(c)
        check(abs((v7[0] - v6[0]) - 200 * px) <= 3 * px, "a drag of 200 px pans 200 px: %r -> %r" % (v6, v7))
        # the fragment follows the view
        c.wait_for("location.hash.startsWith('#t=') && location.hash === '#t=' + orbit.view().map(Math.round).join(',')", timeout=30, what="the fragment")
        frag = c.eval("location.hash")
        took = load(c, page, frag)
        v8 = view(c)
        a, b = [int(t) for t in frag[3:].split(",")]
        check(abs(v8[0] - a) <= 1 and abs(v8[1] - b) <= 1, "the fragment %s opens %r" % (frag, v8))
        load(c, page, "#t=1ms,3ms")
        check(view(c) == [1e6, 3e6], "#t=1ms,3ms opens %r" % view(c))
        drawn(lane_shot(c), "zoomed", 8)
        # a range: shift+drag, then the flame graph of it, Esc clears it
        x, y = centre(c)
        c.drag(x - 100, y, x + 100, y, shift=True)
        r = c.eval("orbit.range()")
        check(r is not None and r[1] > r[0], "shift+drag selects a range")
        c.wait_for("orbit.flame() && orbit.flame().range", what="the flame graph of the range")
        fr = c.eval("orbit.flame().range")
        check(fr == r, "the flame graph follows the range: %r vs %r" % (fr, r))
        c.key("Escape", code="Escape", vk=27)
        c.frames()
        check(c.eval("orbit.range()") is None, "Esc clears the range")
        c.wait_for("orbit.flame() && orbit.flame().range === null", what="the whole flame graph")
        c.key("0", code="Digit0", vk=48)
        v9 = view(c)
        check(v9[0] <= 0 and v9[1] >= c.eval("orbit.end()"), "0 shows everything: %r" % v9)
        clean(c, page)
        print("ok (reload with a fragment: %.2f s)" % took)
    finally:
        c.close()


def case_search(env):
    capture = os.path.join(env.src, "tests/data/replay/demo-collector-4x500.orbit.zst")
    page = env.page(capture, "s.html")
    csvp = env.path("s.csv")
    env.run([env.replay, "-q", "--csv", csvp, capture])
    rows = read_csv(csvp)
    passes = sorted((r["start_ns"], r["end_ns"]) for r in rows if r["name"] == "render pass")
    renders = [r for r in rows if r["name"] == "render"]
    c = browser()
    try:
        c.open()
        load(c, page)
        origin = int(c.eval("document.querySelector('#captures').textContent.match(/MONOTONIC (\\d+) ns/)[1]"))
        box = c.eval("document.getElementById('search').getBoundingClientRect().toJSON()")
        c.click(box["x"] + 20, box["y"] + box["height"] / 2)
        check(c.eval("document.activeElement.id") == "search", "a click focuses the search box")
        c.type_text("render pass")
        c.wait_for("orbit.found().count === %d" % len(passes), timeout=30, what="%d render passes" % len(passes))
        c.key("Enter", code="Enter", vk=13)
        s0 = c.eval("orbit.selected()")
        check(s0 and s0["name"] == "render pass", "Enter selects an instance: %r" % s0)
        check(c.eval("orbit.found().index") == 0, "the first instance from the view's start")
        check(s0["start"] + origin == passes[0][0], "the first instance is the earliest")
        v = view(c)
        check(v[0] <= s0["start"] and v[1] >= s0["end"], "the view shows the instance")
        c.key("Enter", code="Enter", vk=13)
        s1 = c.eval("orbit.selected()")
        check(s1["start"] + origin == passes[1][0], "Enter steps to the next one in time")
        c.key("Enter", code="Enter", vk=13, shift=True)
        s2 = c.eval("orbit.selected()")
        check(s2["start"] == s0["start"], "Shift+Enter steps back")
        check(c.eval("document.getElementById('found').textContent").replace("\u202f", "") == "1 / %d" % len(passes), "the counter says where we are")
        c.click(box["x"] + 20, box["y"] + box["height"] / 2)
        c.eval("document.getElementById('search').select()")
        c.type_text("=render")
        c.wait_for("orbit.found().count === %d" % len(renders), timeout=30, what="exactly 'render'")
        # a statistics row highlights its name
        tab = c.eval("(() => { const r = document.querySelector('#tabs button[data-tab=stats]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        c.click(*tab)
        row = c.eval("(() => { for (const tr of document.querySelectorAll('#stats tbody tr')) if (tr.firstChild.textContent === 'frame') { const r = tr.getBoundingClientRect(); return [r.x + 30, r.y + r.height / 2]; } return null; })()")
        check(row is not None, "a statistics row for 'frame'")
        c.click(*row)
        frames = sum(1 for r in rows if r["name"] == "frame")
        c.wait_for("orbit.found().count === %d" % frames, timeout=30, what="the frames highlighted")
        check(c.eval("document.getElementById('search').value") == "=frame", "the row puts its name in the search box")
        c.key("Enter", code="Enter", vk=13)
        check(c.eval("orbit.selected().name") == "frame", "Enter steps through the row's instances")
        tab = c.eval("(() => { const r = document.querySelector('#tabs button[data-tab=details]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        c.click(*tab)
        check(c.eval("document.querySelector('#details h2').textContent") == "frame", "the selection panel shows it")
        clean(c, page)
        print("ok")
    finally:
        c.close()


PAYLOADS = [
    "<img src=x onerror=\"window.__pwned='img';orbitPwned('img')\">",
    "</script><script>window.__pwned='script';orbitPwned('script')</script>",
    "<svg onload=\"window.__pwned='svg';orbitPwned('svg')\">",
    "\"><iframe srcdoc=\"<script>parent.orbitPwned('iframe')</script>\"></iframe>",
    "<style>*{background:url(x)}</style><b onmouseover=orbitPwned('hover')>hover</b>",
    "javascript:orbitPwned('url')",
]
ARGV = ["<img src=y onerror=orbitPwned('argv')>", "</script><script>orbitPwned('argv2')</script>"]


def case_hostile(env):
    prog = os.path.join(env.build, "tests", "html_hostile")
    capture = env.path("hostile.orbit.zst")
    env.run([prog] + ARGV, env=dict(os.environ, ORBIT_CAPTURE=capture))
    page = env.page(capture, "hostile.html")
    with open(page, encoding="utf-8") as f:
        text = f.read()
    check(text.lower().count("</script") == 2, "a name closed a <script>")
    for p in PAYLOADS + ARGV:
        check(p not in text, "a payload is in the page as it is")
    # the same page without its Content-Security-Policy: the names must stay
    # text by themselves, not because the policy stops them
    bare = env.path("hostile-no-csp.html")
    with open(bare, "w", encoding="utf-8") as f:
        f.write(re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", text))
    for which in (page, bare):
        c = browser()
        try:
            c.open(bindings=["orbitPwned"])
            load(c, which)
            names = c.eval("orbit.names()")
            for p in PAYLOADS:
                check(p in names["lanes"], "thread name %r shown as text" % p)
                check(p in names["sites"], "scope name %r shown as text" % p)
                check(p in names["logs"], "log line %r shown as text" % p)
            check(all(a in names["procs"][0]["cmd"] for a in ARGV), "the command line as text")
            # show every name everywhere: tooltips, search, selection, tabs
            a = c.eval("orbit.laneArea()")
            bx, by = a["box"]["x"] + a["x"], a["box"]["y"] + a["y"]
            for k in range(40):
                c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": bx + (k * 37) % a["w"], "y": by + (k * 23) % max(1, a["h"])})
            c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 60, "y": by + 40})
            sb = c.eval("document.getElementById('search').getBoundingClientRect().toJSON()")
            c.click(sb["x"] + 10, sb["y"] + 10)
            c.type_text("<")
            c.wait_for("orbit.found().count > 0", timeout=30, what="hostile names found")
            for _ in range(4):
                c.key("Enter", code="Enter", vk=13)
            for tab in ("stats", "details", "captures", "flame"):
                r = c.eval("(() => { const r = document.querySelector('#tabs button[data-tab=%s]').getBoundingClientRect(); return [r.x + 5, r.y + 5]; })()" % tab)
                c.click(*r)
                c.frames()
            c.click(bx + a["w"] / 2, by + 30)
            c.pump(1.0)
            check(not c.events_of("Runtime.bindingCalled"), "a payload called the binding: %r" % c.events_of("Runtime.bindingCalled"))
            check(c.eval("window.__pwned === undefined"), "a payload ran: window.__pwned = %r" % c.eval("String(window.__pwned)"))
            body = c.eval("document.body.textContent")
            for p in PAYLOADS[:3]:
                check(p in body, "the statistics show %r as text" % p)
            check(ARGV[0] in body, "the captures tab shows the command line as text")
            elems = c.eval("[...document.querySelectorAll('img,svg,iframe,object,embed,b,frame')].length")
            check(elems == 0, "%d elements from names" % elems)
            check(c.eval("document.querySelectorAll('script').length") == 2 and c.eval("document.querySelectorAll('style').length") == 1, "no script or style from names")
            clean(c, which)
        finally:
            c.close()
    print("ok: %d payloads, with and without the CSP" % (len(PAYLOADS) + len(ARGV)))


def case_loss(env):
    capture = os.path.join(env.build, "tests", "replay_synth_captures", "loss.orbit.zst")
    page = env.page(capture, "loss.html")
    c = browser()
    try:
        c.open()
        load(c, page)
        notes = c.eval("document.getElementById('notices').textContent")
        check("records lost" in notes, "the page says records were lost: %r" % notes)
        shot = c.screenshot()
        red = sum(v for k, v in colours(shot).items() if abs(k[0] - 0xd1) < 12 and abs(k[1] - 0x24) < 12 and abs(k[2] - 0x2f) < 12)
        check(red >= 20, "the loss is drawn in red (%d pixels)" % red)
        clean(c, page)
        print("ok: %d red pixels" % red)
    finally:
        c.close()


def case_colours(env):
    from html_common import typed_tables, with_tables
    page = env.page(os.path.join(env.src, "tests/data/replay/demo-collector-4x500.orbit.zst"), "co.html")
    with open(page, encoding="utf-8") as f:
        html = f.read()
    typed = typed_tables(html)
    tabs = {t[0]: t for t in typed}
    lanes = dict((c[0], c[2]) for c in tabs["LANE"][2])
    threads = [i for i, k in enumerate(lanes["kind"]) if k == 1]
    check(len(threads) >= 3, "thread lanes: %r" % threads)
    a, b, other = threads[0], threads[1], threads[2]
    c = browser()
    try:
        c.open("light")
        load(c, page)
        before = [c.eval("orbit.threadColor(%d)" % i) for i in (a, b, other)]
        names = c.eval("orbit.names()")["lanes"]
        check(names[a] != names[b] and len(set(before)) == 3,
              "distinct names, distinct colours: %r %r" % ([names[i] for i in (a, b, other)], before))
        clean(c, page)
        # b now has a's name: two threads of one name
        name_col = [col for col in tabs["LANE"][2] if col[0] == "name"][0]
        values = list(name_col[2])
        values[b] = values[a]
        cols = [(n, t, values if n == "name" else v) for n, t, v in tabs["LANE"][2]]
        typed = [(tag, rows, cols) if tag == "LANE" else (tag, rows, cs) for tag, rows, cs in typed]
        with open(page, "w", encoding="utf-8") as f:
            f.write(with_tables(html, typed))
        load(c, page)
        after = [c.eval("orbit.threadColor(%d)" % i) for i in (a, b, other)]
        names = c.eval("orbit.names()")["lanes"]
        check(names[a] == names[b], "the test gave both lanes one name: %r" % names)
        check(after[0] != after[1], "two threads named %r share the colour %s" % (names[a], after[0]))
        check(after[0] == before[0] and after[2] == before[2],
              "the first of the name and a thread of a name of its own keep their colours: "
              "%r -> %r" % (before, after))
        clean(c, page)
        print("ok: two threads named %r: %s and %s" % (names[a], after[0], after[1]))
    finally:
        c.close()


def case_states(env):
    from html_common import typed_tables, with_tables
    page = env.page(os.path.join(env.src, "tests/data/replay/demo-collector-4x500.orbit.zst"), "st.html")
    with open(page, encoding="utf-8") as f:
        html = f.read()
    typed = typed_tables(html)
    tabs = {t[0]: t for t in typed}
    lanes = dict((c[0], c[2]) for c in tabs["LANE"][2])
    lane = lanes["kind"].index(1)  # the first thread lane
    last = max(dict((c[0], c[2]) for c in tabs["STRM"][2])["last"])
    n = 60
    t = [last * k / n for k in range(n + 1)]
    state = [(1, 2, 3, 3)[k % 4] for k in range(n)]
    cols = [("lane", "I", [lane] * n), ("t0  ", "d", t[:-1]), ("t1  ", "d", t[1:]), ("stat", "B", state),
            ("cpu ", "H", [k % 2 if state[k] == 1 else 0xffff for k in range(n)]),
            ("kst ", "I", [2 if k % 4 == 3 else (1 if state[k] == 3 else 0) for k in range(n)]),
            ("wakr", "I", [4242 if state[k] == 2 else 0xffffffff for k in range(n)])]
    typed = [(tag, n, cols) if tag == "THST" else (tag, rows, c) for tag, rows, c in typed]
    with open(page, "w", encoding="utf-8") as f:
        f.write(with_tables(html, typed))
    c = browser()
    try:
        c.open()
        load(c, page)
        tracks = c.eval("orbit.tracks()")
        st = [tr for tr in tracks if tr["kind"] == "state"]
        check(len(st) == 1, "one state track: %r" % [tr["kind"] for tr in tracks])
        spans = [tr for tr in tracks if tr["kind"] == "spans" and tr["lane"] == st[0]["lane"]]
        check(spans and spans[0]["y"] < st[0]["y"], "the state track is under its thread's scopes")
        a = c.eval("orbit.laneArea()")
        y = a["box"]["y"] + st[0]["y"] + st[0]["h"] / 2 - c.eval("document.getElementById('timeline').scrollTop")
        x0, w = a["box"]["x"] + a["x"], a["w"]
        seen = set()
        for k in range(24):
            c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x0 + w * (k + 0.5) / 24, "y": y})
            seen.add(c.eval("document.getElementById('tip').textContent.split(/from/)[0]"))
        check({"on-CPU", "runnable", "blocked"} <= seen, "the tooltip names the states: %r" % seen)
        shot = c.screenshot()
        green = sum(v for k, v in colours(shot).items() if abs(k[0] - 0x2d) < 10 and abs(k[1] - 0xa4) < 10 and abs(k[2] - 0x4e) < 10)
        check(green > 100, "running is drawn green (%d pixels)" % green)
        clean(c, page)
        print("ok: %d state spans drawn, %r" % (n, sorted(seen)))
    finally:
        c.close()


def case_sched(env):
    if os.geteuid() != 0 or not os.path.isdir("/sys/kernel/tracing/instances"):
        skip("needs root and tracefs at /sys/kernel/tracing")
    prog = os.path.join(env.build, "tests", "sched_scopes")
    capture = env.path("sched.orbit.zst")
    p = env.run([prog, "scopes", "10"], env=dict(os.environ, ORBIT_SCHED="1", ORBIT_CAPTURE=capture))
    if b"kernel scheduling is off" in p.stderr:
        skip(p.stderr.decode(errors="replace").strip())
    page = env.page(capture, "sched.html")
    c = browser()
    try:
        c.open()
        load(c, page)
        tracks = c.eval("orbit.tracks()")
        st = dict((tr["lane"], tr) for tr in tracks if tr["kind"] == "state")
        check(set(st) == {"sleeper", "spinner"}, "a state track per thread: %r" % list(st))
        cpus = [tr for tr in tracks if tr["kind"] == "cpu"]
        check(cpus, "CPU tracks: %r" % [tr["kind"] for tr in tracks])
        check(cpus[0]["y"] < min(tr["y"] for tr in st.values()), "the CPU tracks come before the lanes")
        a = c.eval("orbit.laneArea()")
        x0, w = a["box"]["x"] + a["x"], a["w"]

        def tips(tr, n=40):
            y = a["box"]["y"] + tr["y"] + tr["h"] / 2 - c.eval("document.getElementById('timeline').scrollTop")
            seen = []
            for k in range(n):
                c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x0 + w * (k + 0.5) / n, "y": y})
                seen.append(c.eval("document.getElementById('tip').textContent"))
            return seen

        spin = [t.split("from")[0] for t in tips(st["spinner"])]
        sleep = [t.split("from")[0] for t in tips(st["sleeper"])]
        # The spinner never sleeps: while it lives it is running or waiting
        # for a CPU (how much of each depends on the machine's load, not on
        # the page), and it ran at least once. Unknown is allowed: a loaded
        # host's kernel loses events, and the page says so where it did.
        alive = [t for t in spin if t != "dead"]
        check(alive and "on-CPU" in alive and set(alive) <= {"on-CPU", "runnable", "unknown"},
              "the spinner runs: %r" % spin)
        check(sleep.count("blocked") >= len(sleep) // 2, "the sleeper sleeps: %r" % sleep)
        names = set()
        for tr in cpus:
            for t in tips(tr):
                names |= {n for n in ("spinner", "sleeper") if t.startswith(n)}
        check("spinner" in names, "a CPU track names the spinner: %r" % names)
        # A spin scope selected: the panel shows where its time went.
        box = c.eval("document.getElementById('search').getBoundingClientRect().toJSON()")
        c.click(box["x"] + 20, box["y"] + box["height"] / 2)
        c.type_text("=spin")
        c.wait_for("orbit.found().count === 10", timeout=30, what="10 spin scopes")
        c.key("Enter", code="Enter", vk=13)
        c.key("Enter", code="Enter", vk=13)  # the second: the first may predate the recording
        tab = c.eval("(() => { const r = document.querySelector('#tabs button[data-tab=details]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        c.click(*tab)
        details = c.eval("document.getElementById('details').textContent")
        check("on-CPU" in details and "blocked" in details and "unknown" in details,
              "the selection shows the split: %r" % details[:400])
        clean(c, page)
        print("ok: state tracks %s, %d CPU tracks naming %s" % (sorted(st), len(cpus), sorted(names)))
    finally:
        c.close()


def case_million(env):
    capture = env.path("million.orbit.zst")
    demo = os.path.join(env.build, "examples", "demo")
    env.run([demo, "--threads", "4", "--frames", "45000"], env=dict(os.environ, ORBIT_CAPTURE=capture))
    js = env.path("million.json")
    env.run([env.replay, "-q", "--json", js, capture], want=None)
    summary = json.load(open(js))
    scopes = sum(s["scopes"] for cap in summary["captures"] for s in cap["streams"])
    spans = scopes + sum(s["async_spans"] for cap in summary["captures"] for s in cap["streams"])
    check(scopes >= 1000000, "the capture holds %d scopes (loss?)" % scopes)
    results = []
    for name, opts in (("default cap", []), ("--html-max-scopes 0", ["--html-max-scopes", "0"])):
        t = time.monotonic()
        page = env.page(capture, "million.html", *opts)
        write = time.monotonic() - t
        size = os.path.getsize(page)
        check(size <= PAGE_MAX, "%s: the page is %d bytes, over 64 MiB" % (name, size))
        c = browser()
        try:
            c.open()
            took = load(c, page, timeout=600)
            timing = c.eval("orbit.timing()")
            counts = c.eval("orbit.counts()")
            want = min(spans, 1000000) if not opts else spans
            check(counts["spans"] == want, "%s: %d spans on the page, want %d" % (name, counts["spans"], want))
            if not opts and spans > 1000000:
                check("--html-max-scopes" in c.eval("document.getElementById('notices').textContent"), "the page says what it merged")
                check(counts["merged"] == spans - 1000000, "merged %d" % counts["merged"])
            drawn(lane_shot(c), name, 8)
            c.wait_for("orbit.flame()", timeout=600, what="the flame graph")
            timing = c.eval("orbit.timing()")
            end = c.eval("orbit.end()")
            draw_all = c.eval("orbit.drawCost(20)")
            draw_ms = c.eval("orbit.drawCost(20, %f, %f)" % (end * 0.5, end * 0.51))
            draw_us = c.eval("orbit.drawCost(20, %f, %f)" % (end * 0.5, end * 0.5 + 200e3))
            clean(c, page)
        finally:
            c.close()
        results.append((name, counts["spans"], size, write, took, timing, (draw_all, draw_ms, draw_us)))
    print("scopes in the capture: %d (%d spans with async)" % (scopes, spans))
    print("%-22s %10s %12s %9s %12s %10s %10s %10s %24s" % ("page", "spans", "bytes", "write s", "first frame", "decode ms", "model ms", "flame ms", "frame ms: all/1%/200us"))
    for name, n, size, write, took, t, d in results:
        print("%-22s %10d %12d %9.2f %10.2f s %10.0f %10.0f %10.0f %10.1f /%5.1f /%5.1f" %
              (name, n, size, write, took, t["decodeMs"], t["modelMs"], t.get("flameMs", 0) - t["firstDrawMs"], *d))


def case_screenshots(env, out):
    page, capture = env.demo()
    os.makedirs(out, exist_ok=True)
    c = browser(1280, 760)
    try:
        c.open("light")
        load(c, page)
        c.wait_for("orbit.flame()", what="the flame graph")
        c.frames(3)
        whole = os.path.join(out, "html-demo-whole.png")
        open(whole, "wb").write(c.screenshot())
        # zoomed into one frame of worker 0: the scopes inside it, named
        c.eval("(() => { const i = document.getElementById('search'); i.value = '=frame'; i.dispatchEvent(new Event('input')); })()")
        c.wait_for("orbit.found().count > 0", what="frames")
        c.eval("document.getElementById('search').blur()")
        # a typical frame (not one the machine preempted), a third of the way in
        for _ in range(150):
            c.key("Enter", code="Enter", vk=13)
        for _ in range(200):
            s = c.eval("orbit.selected()")
            if s["lane"] == "worker 0" and 30e3 <= s["end"] - s["start"] <= 60e3:
                break
            c.key("Enter", code="Enter", vk=13)
        d = s["end"] - s["start"]
        c.scheme("dark")
        load(c, page, "#t=%d,%d" % (s["start"] - d * 0.25, s["end"] + d * 1.35))
        tab = c.eval("(() => { const r = document.querySelector('#tabs button[data-tab=stats]').getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        c.click(*tab)
        c.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": 330, "y": 131})
        c.frames(3)
        zoom = os.path.join(out, "html-demo-zoom.png")
        open(zoom, "wb").write(c.screenshot())
        print("wrote", whole, zoom)
    finally:
        c.close()


def main():
    faulthandler.register(__import__("signal").SIGUSR1)  # kill -USR1: where a hung run waits
    if len(sys.argv) < 4:
        fail(__doc__)
    case, build, src = sys.argv[1:4]
    if not os.access(html_cdp.CHROMIUM, os.X_OK):
        skip("no chromium at " + html_cdp.CHROMIUM)
    env = Env(build, src)
    try:
        if case == "screenshots":
            case_screenshots(env, sys.argv[4])
        else:
            globals()["case_" + case](env)
    finally:
        env.cleanup()


main()
