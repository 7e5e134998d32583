"""html_cdp.py — Debian's headless Chromium driven through the DevTools
protocol over --remote-debugging-pipe (fd 3: commands in, fd 4: replies
and events out, each message JSON ended by a NUL), from Python's standard
library alone: no npm, no websocket library, nothing downloaded.

The network is cut off for every page: a proxy that does not exist, the
protocol's offline emulation, and a record of every request the page
tried (requests()), which the tests require to be the page itself only.

Also here: a PNG decoder (zlib + the five row filters) so that a test can
count the colours of a screenshot."""
import base64
import fcntl
import json
import os
import select
import shutil
import struct
import subprocess
import tempfile
import time
import zlib

CHROMIUM = os.environ.get("ORBIT_CHROMIUM", "/usr/bin/chromium")


class CDPError(Exception):
    pass


class Chrome:
    def __init__(self, width=1400, height=900, timeout=120):
        if not os.access(CHROMIUM, os.X_OK):
            raise FileNotFoundError(CHROMIUM)
        self.timeout = timeout
        self.tmp = tempfile.mkdtemp(prefix="orbit-chromium-")
        self.log = open(os.path.join(self.tmp, "chromium.log"), "wb")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()

        def child():
            # Out of the way of 3 and 4 first, then exactly there.
            a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [
            CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
            "--no-first-run", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--disable-default-apps", "--disable-extensions",
            "--no-default-browser-check", "--mute-audio", "--hide-scrollbars",
            "--proxy-server=127.0.0.1:9", "--user-data-dir=" + os.path.join(self.tmp, "profile"),
            "--window-size=%d,%d" % (width, height), "--remote-debugging-pipe", "about:blank",
        ]
        self.proc = subprocess.Popen(args, preexec_fn=child, close_fds=False,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.wfd, self.rfd = to_chrome_w, from_chrome_r
        self.buf = b""
        self.next_id = 0
        self.events = []
        self.width, self.height = width, height
        self.session = None

    # ---- the pipe ----

    def _read_message(self, deadline):
        while True:
            at = self.buf.find(b"\0")
            if at >= 0:
                msg, self.buf = self.buf[:at], self.buf[at + 1:]
                return json.loads(msg)
            left = deadline - time.monotonic()
            if left <= 0:
                raise CDPError("no answer from chromium in time")
            r, _, _ = select.select([self.rfd], [], [], left)
            if r:
                chunk = os.read(self.rfd, 1 << 20)
                if not chunk:
                    raise CDPError("chromium closed the pipe (exit %s)" % self.proc.poll())
                self.buf += chunk

    def call(self, method, params=None, session=True, timeout=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        while data:
            n = os.write(self.wfd, data)
            data = data[n:]
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            m = self._read_message(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise CDPError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def pump(self, seconds):
        """Reads events for a while."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._read_message(deadline))
        except CDPError as e:
            if "in time" not in str(e):
                raise

    def wait_event(self, method, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        for e in self.events:
            if e.get("method") == method:
                self.events.remove(e)
                return e
        while True:
            m = self._read_message(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def events_of(self, method):
        return [e for e in self.events if e.get("method") == method]

    # ---- a page ----

    def open(self, color_scheme="light", bindings=(), offline=True):
        """A new page; offline=False lets it reach loopback servers (the
        collector's live view), the proxy still cutting off everything else."""
        t = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        a = self.call("Target.attachToTarget", {"targetId": t["targetId"], "flatten": True},
                      session=False)
        self.session = a["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Network.enable", "Log.enable"):
            self.call(m)
        self.call("Network.emulateNetworkConditions",
                  {"offline": offline, "latency": 0, "downloadThroughput": -1,
                   "uploadThroughput": -1})
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height, "deviceScaleFactor": 1,
                   "mobile": False})
        self.scheme(color_scheme)
        for b in bindings:
            self.call("Runtime.addBinding", {"name": b})

    def scheme(self, color_scheme):
        self.call("Emulation.setEmulatedMedia",
                  {"features": [{"name": "prefers-color-scheme", "value": color_scheme}]})

    def navigate(self, url, timeout=None):
        self.events = [e for e in self.events if e.get("method") != "Page.loadEventFired"]
        r = self.call("Page.navigate", {"url": url})
        if r.get("errorText"):
            raise CDPError("navigate %s: %s" % (url, r["errorText"]))
        self.wait_event("Page.loadEventFired", timeout)

    def eval(self, expr, timeout=None):
        r = self.call("Runtime.evaluate", {"expression": expr, "returnByValue": True,
                                           "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise CDPError("%s: %s" % (expr, json.dumps(r["exceptionDetails"])[:800]))
        return r["result"].get("value")

    def wait_for(self, expr, timeout=None, what=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            v = self.eval(expr)
            if v:
                return v
            if time.monotonic() > deadline:
                raise CDPError("timed out waiting for " + (what or expr))
            time.sleep(0.05)

    def frames(self, n=3):
        """Lets the page draw: n animation frames."""
        self.eval("new Promise(r => { let k = %d; const f = () => --k ? "
                  "requestAnimationFrame(f) : r(1); requestAnimationFrame(f); })" % n)

    def troubles(self):
        """What went wrong on the page so far: each exception thrown,
        console error and dialog opened, as a line."""
        out = []
        for e in self.events:
            m = e.get("method")
            if m == "Runtime.exceptionThrown":
                out.append("the page threw: " + json.dumps(e["params"])[:1500])
            if m == "Runtime.consoleAPICalled" and e["params"].get("type") == "error":
                out.append("console error: " + json.dumps(e["params"])[:800])
            if m == "Page.javascriptDialogOpening":
                out.append("a dialog opened: " + json.dumps(e["params"])[:400])
        return out

    def requests(self):
        return [e["params"]["request"]["url"] for e in self.events_of("Network.requestWillBeSent")]

    def screenshot(self, clip=None):
        p = {"format": "png"}
        if clip:
            p["clip"] = dict(clip, scale=1)
        return base64.b64decode(self.call("Page.captureScreenshot", p)["data"])

    # ---- input ----

    def key(self, key, code=None, shift=False, vk=None):
        code = code or ("Key" + key.upper() if len(key) == 1 and key.isalpha() else key)
        vk = vk or (ord(key.upper()) if len(key) == 1 else {"Enter": 13, "Escape": 27}.get(key, 0))
        mods = 8 if shift else 0
        base = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": mods}
        down = dict(base, type="keyDown")
        if len(key) == 1:
            down["text"] = key
        elif key == "Enter":
            down["text"] = "\r"
        self.call("Input.dispatchKeyEvent", down)
        self.call("Input.dispatchKeyEvent", dict(base, type="keyUp"))

    def click(self, x, y, shift=False):
        mods = 8 if shift else 0
        for t in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", {"type": t, "x": x, "y": y, "button": "left",
                                                   "clickCount": 1, "modifiers": mods})

    def wheel(self, x, y, dy, dx=0):
        self.call("Input.dispatchMouseEvent", {"type": "mouseWheel", "x": x, "y": y,
                                               "deltaX": dx, "deltaY": dy})

    def drag(self, x0, y0, x1, y1, shift=False, steps=8):
        mods = 8 if shift else 0
        self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x0, "y": y0})
        self.call("Input.dispatchMouseEvent", {"type": "mousePressed", "x": x0, "y": y0,
                                               "button": "left", "clickCount": 1,
                                               "modifiers": mods})
        for k in range(1, steps + 1):
            x = x0 + (x1 - x0) * k / steps
            y = y0 + (y1 - y0) * k / steps
            self.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y,
                                                   "button": "left", "buttons": 1,
                                                   "modifiers": mods})
        self.call("Input.dispatchMouseEvent", {"type": "mouseReleased", "x": x1, "y": y1,
                                               "button": "left", "clickCount": 1,
                                               "modifiers": mods})

    def type_text(self, text):
        self.call("Input.insertText", {"text": text})

    def close(self):
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", session=False, timeout=10)
                except Exception:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        finally:
            for fd in (self.wfd, self.rfd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self.log.close()
            shutil.rmtree(self.tmp, ignore_errors=True)


# ---- PNG ----

def png_decode(data):
    """(width, height, channels, bytes of rows) of an 8-bit RGB or RGBA PNG."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    at, idat, w = 8, [], None
    while at < len(data):
        n, kind = struct.unpack_from(">I4s", data, at)
        body = data[at + 8:at + 8 + n]
        at += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise ValueError("PNG kind not handled: depth %d type %d" % (depth, ctype))
            ch = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
    raw = zlib.decompress(b"".join(idat))
    stride = w * ch
    out = bytearray(h * stride)
    prev = bytearray(stride)
    pos = 0
    for y in range(h):
        f = raw[pos]
        line = bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        if f == 1:
            for i in range(ch, stride):
                line[i] = (line[i] + line[i - ch]) & 255
        elif f == 2:
            for i in range(stride):
                line[i] = (line[i] + prev[i]) & 255
        elif f == 3:
            for i in range(stride):
                left = line[i - ch] if i >= ch else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif f == 4:
            for i in range(stride):
                a = line[i - ch] if i >= ch else 0
                b = prev[i]
                c = prev[i - ch] if i >= ch else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pr) & 255
        out[y * stride:(y + 1) * stride] = line
        prev = line
    return w, h, ch, bytes(out)


def colours(png, step=1):
    """The distinct RGB colours of a PNG, and how many pixels have each."""
    w, h, ch, px = png_decode(png)
    seen = {}
    for y in range(0, h, step):
        row = px[y * w * ch:(y + 1) * w * ch]
        for x in range(0, w, step):
            c = row[x * ch:x * ch + 3]
            seen[c] = seen.get(c, 0) + 1
    return seen
