"""replay_previous.py — captures of protocol version 2 (made before version
3 existed: the golden captures, a real one with the kernel's scheduling,
the synthetic ones) still give, byte for byte, the outputs the previous
release gave: the summary, --json, --csv, --chrome, --perfetto, --log, a
relative window and --by location, as SHA-256 digests recorded with that
release's orbit-replay (tests/data/replay/previous.sha256, the README there
says how, and which digests a change of the reconstructor's rules made
this tree's).

    python3 replay_previous.py ORBIT_REPLAY DIGESTS DIR...
    python3 replay_previous.py ORBIT_REPLAY --record DIGESTS DIR...

Every *.orbit.zst of each DIR whose name the digests list is replayed from
that DIR, by its file name (the outputs name it)."""
import hashlib
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import check, fail  # noqa: E402

# (name, arguments before the capture, which file holds the output: None
# for stdout)
RUNS = [
    ("summary", [], None),
    ("json", ["-q", "--json", "{out}"], "{out}"),
    ("csv", ["-q", "--csv", "{out}"], "{out}"),
    ("chrome", ["-q", "--chrome", "{out}"], "{out}"),
    ("perfetto", ["-q", "--perfetto", "{out}"], "{out}"),
    ("log", ["--log"], None),
    ("window", ["-q", "--csv", "{out}", "--from", "+1ms", "--to", "+50ms"], "{out}"),
    ("by-location", ["--by", "location", "--top", "0"], None),
]


def digests(exe, directory, capture, tmp):
    got = {}
    for name, args, where in RUNS:
        out = os.path.join(tmp, name)
        argv = [exe] + [a.format(out=out) for a in args] + [capture]
        p = subprocess.run(argv, cwd=directory, capture_output=True)
        data = p.stdout if where is None else open(out, "rb").read() if os.path.exists(out) else b""
        rc, err = p.returncode, p.stderr
        if name == "window" and rc == 4 and err.count(b"\n") == 1 and \
                b"--from/--to select nothing" in err:
            # The one change on purpose: the previous release exited 0 and
            # said nothing of a window past a capture's end; the outputs'
            # bytes must still be its own.
            rc, err = 0, b""
        h = hashlib.sha256(b"%d\n" % rc + data + b"\n" + err)
        got[name] = h.hexdigest()
        if os.path.exists(out):
            os.unlink(out)
    return got


def main():
    exe, args = sys.argv[1], sys.argv[2:]
    record = args[0] == "--record"
    if record:
        args = args[1:]
    table, dirs = args[0], args[1:]
    want = {}
    if not record:
        with open(table) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    cap, run, h = line.split()
                    want[(cap, run)] = h
    lines, compared = [], 0
    with tempfile.TemporaryDirectory(prefix="orbit-replay-previous-") as tmp:
        for d in dirs:
            for cap in sorted(os.listdir(d)):
                if not cap.endswith(".orbit.zst"):
                    continue
                if not record and (cap, "summary") not in want:
                    continue
                for run, h in digests(exe, d, cap, tmp).items():
                    lines.append("%s %s %s" % (cap, run, h))
                    if not record:
                        check(want.get((cap, run)) == h,
                              "%s %s: not what the previous release gave" % (cap, run))
                        compared += 1
    if record:
        with open(table, "w") as f:
            f.write("# capture output sha256 (tests/integration/replay_previous.py)\n")
            f.write("\n".join(lines) + "\n")
        print("recorded %d digests" % len(lines))
        return
    check(compared == len(want), "compared %d of the %d digests: captures missing" %
          (compared, len(want)))
    print("ok: %d outputs the same as the previous release's" % compared)


main()
