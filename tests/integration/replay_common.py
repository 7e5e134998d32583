"""replay_common.py — what the orbit-replay Python tests share: running
orbit-replay, reading its CSV, decoding Perfetto output with protoc, and
the nesting a viewer rebuilds from an event stream.

Every test script takes: ORBIT_REPLAY DATA_DIR [more...] and exits 0 (pass),
1 (fail) or 77 (skip)."""
import csv
import io
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def skip(msg):
    print("skip: " + msg, file=sys.stderr)
    sys.exit(77)


def check(cond, msg):
    if not cond:
        fail(msg)


class Replay:
    def __init__(self, exe):
        self.exe = exe
        self.tmp = tempfile.mkdtemp(prefix="orbit-replay-test-")

    def path(self, name):
        return os.path.join(self.tmp, name)

    def run(self, *args, want=0):
        p = subprocess.run([self.exe] + [str(a) for a in args], capture_output=True)
        if want is not None and p.returncode != want:
            fail("%s exited %d, want %d\nstderr: %s" %
                 (" ".join(str(a) for a in args), p.returncode, want,
                  p.stderr.decode(errors="replace")))
        return p

    def cleanup(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


MARKS = {"unfinished", "name_incomplete", "time_untrusted"}


def read_csv(path):
    """Rows as dicts; names kept as the bytes orbit-replay wrote
    (surrogateescape), empty color/group_id for events written without them,
    marks as a set of words (an unfinished scope's end_ns is the latest time
    it is known open)."""
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        text = f.read()
    header = text.split("\r\n", 1)[0].split(",")
    base = ("pid,tid,thread_name,depth,name,start_ns,end_ns,duration_ns,kind,color,"
            "group_id,marks").split(",")
    sched = ["oncpu_ns", "runnable_ns", "blocked_ns"]
    # The column order: the location columns before the scheduler's, each
    # present or not.
    check(header in (base + sched, base + ["file", "line", "function"] + sched),
          "CSV header %r" % header)
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    for r in rows:
        for k in sched:  # empty without kernel scheduling for the scope
            r[k] = int(r[k]) if r[k] else None
        if r["oncpu_ns"] is not None:
            check(r["oncpu_ns"] + r["runnable_ns"] + r["blocked_ns"]
                  <= int(r["duration_ns"]), "scheduler split of %r" % r)
        r["pid"] = int(r["pid"])
        r["tid"] = int(r["tid"])
        r["start_ns"] = int(r["start_ns"])
        r["end_ns"] = int(r["end_ns"])
        check(int(r["duration_ns"]) == r["end_ns"] - r["start_ns"], "duration of %r" % r)
        r["marks"] = set(r["marks"].split())
        check(r["marks"] <= MARKS, "marks %r" % r["marks"])
        r["unfinished"] = "unfinished" in r["marks"]
        r["depth"] = int(r["depth"]) if r["depth"] else None
    return rows


def as_utf8(s):
    """What a valid-UTF-8 writer makes of a name: invalid bytes become
    U+FFFD, one per byte (as orbit-replay does)."""
    b = s.encode("utf-8", errors="surrogateescape")
    out, i = [], 0
    while i < len(b):
        for n in (4, 3, 2, 1):
            try:
                out.append(b[i:i + n].decode("utf-8"))
                i += n
                break
            except UnicodeDecodeError:
                continue
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def viewer_depths(events):
    """events: (ts, end, key) in file order. Sorts them as trace viewers do
    (by start, keeping file order on ties) and nests them: an event is the
    child of the innermost open one that has not ended by its start.
    Returns {key: depth}."""
    order = sorted(range(len(events)), key=lambda i: (events[i][0], i))
    stack, depth = [], {}
    for i in order:
        ts, end, key = events[i]
        while stack and stack[-1] <= ts:
            stack.pop()
        depth[key] = len(stack)
        stack.append(end)
    return depth


# ---- protoc text format ----

def parse_text(text):
    """protoc --decode output into nested dicts: key -> list of values
    (strings or dicts)."""
    root, stack = {}, []
    cur = root
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if line == "}":
            cur = stack.pop()
            continue
        if line.endswith("{"):
            key = line[:-1].strip()
            child = {}
            cur.setdefault(key, []).append(child)
            stack.append(cur)
            cur = child
            continue
        key, _, value = line.partition(":")
        value = value.strip()
        if value.startswith('"'):
            value = unquote(value[1:-1])
        cur.setdefault(key.strip(), []).append(value)
    return root


def unquote(s):
    """protoc's C-style escapes back to bytes, then UTF-8 text."""
    out, i = bytearray(), 0
    simple = {"n": 10, "t": 9, "r": 13, '"': 34, "'": 39, "\\": 92, "a": 7, "b": 8,
              "f": 12, "v": 11}
    while i < len(s):
        c = s[i]
        if c != "\\":
            out += c.encode("utf-8")
            i += 1
            continue
        n = s[i + 1]
        if n in simple:
            out.append(simple[n])
            i += 2
        elif n in "01234567":
            j = i + 1
            while j < len(s) and j < i + 4 and s[j] in "01234567":
                j += 1
            out.append(int(s[i + 1:j], 8))
            i = j
        elif n == "x":
            j = i + 2
            while j < len(s) and j < i + 4 and s[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(s[i + 2:j], 16))
            i = j
        else:
            out.append(ord(n))
            i += 2
    return out.decode("utf-8", errors="surrogateescape")


def protoc_decode(proto_dir, trace_path):
    protoc = shutil.which("protoc")
    if protoc is None:
        skip("protoc (Debian protobuf-compiler) not found")
    with open(trace_path, "rb") as f:
        p = subprocess.run([protoc, "-I" + proto_dir, "--decode=perfetto.protos.Trace",
                            "perfetto_subset.proto"], stdin=f, capture_output=True)
    if p.returncode != 0:
        fail("protoc --decode failed: " + p.stderr.decode(errors="replace"))
    return parse_text(p.stdout.decode("utf-8", errors="surrogateescape"))


def one(d, key, default=None):
    v = d.get(key)
    return v[0] if v else default
