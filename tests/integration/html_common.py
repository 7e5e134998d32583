"""html_common.py — what the --html tests share: the page's data block
decoded in Python (the format is in replay/html/replay_export_html_data.c and
its tables in replay/html/replay_export_html.c), independently of the page's
own decoder, so a test can compare the page with the CSV."""
import base64
import re
import struct

SIZES = {"B": 1, "H": 2, "I": 4, "d": 8}
NO_STR = 0xffffffff
BIG = 0xffffffff
F_ASYNC, F_UNFINISHED = 1, 2


def data_block(html):
    """The base64 text of the page's data block."""
    m = re.search(r'<script id="orbit-data" type="application/x-orbit-data">\n(.*?)</script>',
                  html, re.S)
    if not m:
        raise ValueError("no data block")
    return m.group(1)


def typed_tables(html):
    """[(tag, rows, [(column, type, values)])], in the block's order."""
    b = base64.b64decode(data_block(html), validate=False)
    if b[:8] != b"ORBITPG1":
        raise ValueError("bad magic")
    n, = struct.unpack_from("<I", b, 8)
    at, out = 16, []
    for _ in range(n):
        tag, rows, cols, zero = struct.unpack_from("<4sIII", b, at)
        at += 16
        t = []
        for _ in range(cols):
            name, typ = struct.unpack_from("<4sc", b, at)
            at += 8
            typ = typ.decode()
            t.append((name.decode(), typ, list(struct.unpack_from("<%d%s" % (rows, typ), b, at))))
            at += (rows * SIZES[typ] + 7) // 8 * 8
        out.append((tag.decode(), rows, t))
    if at != len(b):
        raise ValueError("%d bytes after the last table" % (len(b) - at))
    return out


def tables(html):
    """{TAG: (rows, {column: values})}"""
    return {tag.strip(): (rows, {c.strip(): v for c, _, v in cols}) for tag, rows, cols in typed_tables(html)}


def with_tables(html, typed):
    """The page with its data block made from typed tables (a test's own
    data: what orbit-replay does not write yet)."""
    out = bytearray(b"ORBITPG1" + struct.pack("<II", len(typed), 0))
    for tag, rows, cols in typed:
        out += tag.encode() + struct.pack("<III", rows, len(cols), 0)
        for name, typ, values in cols:
            out += name.encode() + typ.encode() + b"\0\0\0"
            body = struct.pack("<%d%s" % (rows, typ), *values)
            out += body + b"\0" * ((8 - len(body) % 8) % 8)
    text = base64.b64encode(bytes(out)).decode()
    text = "\n".join(text[i:i + 1024] for i in range(0, len(text), 1024)) + "\n"
    old = data_block(html)
    return html.replace(old, text, 1)


class Page:
    """The page's events, as absolute CLOCK_MONOTONIC ns like the CSV."""

    def __init__(self, html):
        self.html = html
        T = self.T = tables(html)
        off, raw = T["STRO"][1]["off"], bytes(T["STRB"][1]["byte"])
        self.raw = [raw[off[i]:off[i + 1]] for i in range(len(off) - 1)]
        self.meta = {}
        m = T["META"][1]
        for k, s, v in zip(m["k"], m["s"], m["v"]):
            self.meta[self.s(k)] = (self.s(s), v)
        self.origin = int(self.meta["origin_ns"][0])
        self.procs = [dict(pid=p, name=self.s(n)) for p, n in zip(*(T["PROC"][1][c] for c in ("pid", "name")))]
        L = T["LANE"][1]
        self.lanes = [dict(kind=L["kind"][i], proc=L["proc"][i], tid=L["tid"][i], name=self.s(L["name"][i]),
                           merged=L["mrgd"][i]) for i in range(T["LANE"][0])]
        S = T["SITE"][1]
        self.sites = [dict(name=self.b(S["name"][i]), color=S["colr"][i], attr=S["attr"][i],
                           file=self.s(S["file"][i]), func=self.s(S["func"][i]), line=S["line"][i])
                      for i in range(T["SITE"][0])]
        self.spans = self._spans()

    def s(self, i):
        return None if i == NO_STR else self.raw[i].decode("utf-8", errors="replace")

    def b(self, i):
        return None if i == NO_STR else self.raw[i]

    def _spans(self):
        T = self.T
        R, SP = T["ROWS"][1], T["SPAN"][1]
        sovr = dict(zip(T["SOVR"][1]["idx"], T["SOVR"][1]["t"]))
        dovr = {i: (d, s) for i, d, s in zip(T["DOVR"][1]["idx"], T["DOVR"][1]["dur"], T["DOVR"][1]["self"])}
        ext = {}
        X = T["SEXT"][1]
        for k in range(T["SEXT"][0]):
            ext[X["idx"][k]] = dict(group=X["gphi"][k] << 32 | X["gplo"][k], tid=X["stid"][k],
                                    end_tid=X["etid"][k])
        out = []
        for r in range(T["ROWS"][0]):
            lane = self.lanes[R["lane"][r]]
            t = R["t0"][r]
            first, cnt = R["frst"][r], R["cnt"][r]
            for i in range(first, first + cnt):
                dt = SP["dt"][i]
                t = sovr[i] if dt == BIG else t + dt
                dur, self_ = (dovr[i] if SP["dur"][i] == BIG else (SP["dur"][i], SP["self"][i]))
                site = self.sites[SP["site"][i]]
                out.append(dict(index=i, lane=lane, depth=R["dpth"][r], start=int(t) + self.origin,
                                dur=int(dur), self=int(self_), name=site["name"], flag=SP["flag"][i],
                                site=site, extra=ext.get(i)))
        return out
