"""collector_upgrade.py — a rolling upgrade: streams recorded from agents of
earlier protocols (a real one of the previous release, d9a2c15, protocol 2,
with the kernel's scheduling; the synthetic captures of protocol 2) sent
over TCP, as their agents sent them, to today's orbit-collector: each is
taken, written, and replays to exactly what the recording replays to (the
same CSV rows, the same summary but for the file's name and size).

    collector_upgrade.py ORBIT_COLLECTOR ORBIT_REPLAY CAPTURE...
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import check, fail  # noqa: E402


def replay(exe, capture, *args):
    p = subprocess.run([exe] + list(args) + [capture], capture_output=True)
    return p.returncode, p.stdout, p.stderr


def summary_body(text):
    """The summary without the lines naming the file and its size."""
    return b"\n".join(l for l in text.split(b"\n") if not l.startswith(b"capture "))


def send(port, data):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    try:  # the collector's Acks, if the stream asked, until it hangs up
        while s.recv(65536):
            pass
    except OSError:
        pass
    s.close()


def main():
    if len(sys.argv) < 4:
        fail(__doc__)
    collector, rp, captures = sys.argv[1], sys.argv[2], sys.argv[3:]
    tmp = tempfile.mkdtemp(prefix="orbit-upgrade-")
    try:
        d = os.path.join(tmp, "captures")
        c = subprocess.Popen([collector, "--listen", "127.0.0.1:0", "--dir", d, "--quiet"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = c.stdout.readline().decode()
        m = re.match(r"listening on 127\.0\.0\.1:(\d+)", line)
        check(m is not None, "the collector's first line: %r" % line)
        port = int(m.group(1))
        for cap in captures:
            before = set(os.listdir(d))
            with open(cap, "rb") as f:
                send(port, f.read())
            deadline = time.monotonic() + 30
            while True:
                new = set(os.listdir(d)) - before
                if new:
                    got = os.path.join(d, new.pop())
                    st, _, _ = replay(rp, got, "-q")
                    if st == 0:
                        break  # whole, its stream ended
                if time.monotonic() > deadline:
                    c.kill()
                    fail("%s: no complete capture from the collector (%s)" %
                         (cap, c.stderr.read().decode(errors="replace")))
                time.sleep(0.05)
            st0, out0, err0 = replay(rp, cap)
            st1, out1, err1 = replay(rp, got)
            check(st0 == 0 and st1 == 0, "%s: exit %d, through the collector %d: %s" %
                  (cap, st0, st1, err1.decode(errors="replace")))
            check(summary_body(out0) == summary_body(out1),
                  "%s: the summary differs through the collector:\n%s\n---\n%s" %
                  (cap, out0.decode(errors="replace"), out1.decode(errors="replace")))
            a, b = os.path.join(tmp, "a.csv"), os.path.join(tmp, "b.csv")
            replay(rp, cap, "-q", "--csv", a)
            replay(rp, got, "-q", "--csv", b)
            with open(a, "rb") as fa, open(b, "rb") as fb:
                ra, rb = fa.read(), fb.read()
            check(ra == rb and ra.count(b"\n") > 1, "%s: the CSV differs through the collector" % cap)
            print("upgrade: %s taken, %d rows, the same" % (os.path.basename(cap), ra.count(b"\n") - 1))
        c.send_signal(signal.SIGTERM)
        c.wait(timeout=30)
        err = c.stderr.read().decode(errors="replace")
        check("refused" not in err, "the collector refused a stream: %s" % err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
