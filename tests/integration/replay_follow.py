"""replay_follow.py — orbit-replay --follow on a capture a real traced
program is still writing (ORBIT_CAPTURE): a table naming the program's
scopes is printed before the program ends, the run ends by itself when the
stream ends, and what it prints last is exactly the summary orbit-replay
gives of the finished file. Then Ctrl-C: a --follow of a program that runs
on ends at SIGINT with the summary of what it read.

    replay_follow.py ORBIT_REPLAY DEMO
"""
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from replay_common import Replay, check, fail  # noqa: E402

SCOPES = ("frame", "update physics", "render", "render pass")


class Lines:
    """Every line of a process's stdout, with the time it arrived."""

    def __init__(self, proc):
        self.got = []
        self.raw = bytearray()
        self.t = threading.Thread(target=self._read, args=(proc.stdout,))
        self.t.start()

    def _read(self, f):
        for line in iter(f.readline, b""):
            self.got.append((time.monotonic(), line.decode(errors="replace")))
            self.raw += line

    def first_table_with(self, names):
        """When a table naming every one of names was complete, or None."""
        seen, table = set(), False
        for t, line in self.got:
            if line.startswith("--- follow"):
                seen, table = set(), True
                continue
            if table:
                for n in names:
                    if line.rstrip("\n").endswith("  " + n):
                        seen.add(n)
                if seen == set(names):
                    return t
        return None


def start_demo(demo, capture, frames):
    env = dict(os.environ, ORBIT_CAPTURE=capture)
    env.pop("ORBIT_COLLECTOR", None)
    return subprocess.Popen([demo, "--frames", str(frames)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def wait_for_file(path, proc):
    deadline = time.monotonic() + 30
    while not os.path.exists(path) or os.path.getsize(path) == 0:
        if proc.poll() is not None or time.monotonic() > deadline:
            fail("%s never appeared (the program exited %s)" % (path, proc.poll()))
        time.sleep(0.01)


def follows_to_the_end(rp, exe, demo):
    cap = rp.path("live.orbit.zst")
    prog = start_demo(demo, cap, 60000)
    wait_for_file(cap, prog)
    follow = subprocess.Popen([exe, "--follow", cap], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    lines = Lines(follow)
    prog.wait(timeout=300)
    ended = time.monotonic()
    check(prog.returncode == 0, "the traced program exited %d: %s" %
          (prog.returncode, prog.stderr.read().decode(errors="replace")))
    try:
        follow.wait(timeout=60)
    except subprocess.TimeoutExpired:
        follow.kill()
        fail("--follow did not end after the stream ended")
    lines.t.join()
    err = follow.stderr.read().decode(errors="replace")
    check(follow.returncode == 0, "--follow exited %d: %s" % (follow.returncode, err))
    first = lines.first_table_with(SCOPES)
    check(first is not None, "no table named the program's scopes:\n" +
          "".join(l for _, l in lines.got[:40]))
    check(first < ended, "the first table naming the scopes came %.3f s after the "
          "program ended" % (first - ended))
    tables = sum(1 for _, l in lines.got if l.startswith("--- follow"))
    whole = rp.run(cap).stdout
    check(len(whole) > 0 and bytes(lines.raw).endswith(whole),
          "--follow's last output is not the summary of the finished file:\n%s\n---\n%s" %
          (bytes(lines.raw)[-len(whole):].decode(errors="replace"),
           whole.decode(errors="replace")))
    print("follow: %d tables; the first naming the scopes %.2f s before the program "
          "ended" % (tables, ended - first))


def ends_at_ctrl_c(rp, exe, demo):
    cap = rp.path("long.orbit.zst")
    prog = start_demo(demo, cap, 100000000)  # runs until it is killed
    try:
        wait_for_file(cap, prog)
        follow = subprocess.Popen([exe, "--follow", cap], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        lines = Lines(follow)
        deadline = time.monotonic() + 60
        while lines.first_table_with(SCOPES[:1]) is None:
            if follow.poll() is not None or time.monotonic() > deadline:
                fail("no table while the program runs (--follow exited %s)" % follow.poll())
            time.sleep(0.05)
        check(prog.poll() is None, "the traced program ended before the test's Ctrl-C")
        follow.send_signal(signal.SIGINT)
        try:
            follow.wait(timeout=30)
        except subprocess.TimeoutExpired:
            follow.kill()
            fail("--follow did not end at SIGINT")
        lines.t.join()
        out = bytes(lines.raw).decode(errors="replace")
        # The stream never ended: the capture so far is incomplete (status 2),
        # and its summary is printed all the same.
        check(follow.returncode == 2, "--follow at SIGINT exited %d" % follow.returncode)
        check("scopes by total time" in out and "frame" in out.split("scopes by total time")[-1],
              "no summary after SIGINT:\n" + out[-2000:])
    finally:
        prog.kill()
        prog.wait()
    print("follow: SIGINT ended the read with the summary of what was read")


def main():
    if len(sys.argv) != 3:
        fail(__doc__)
    exe, demo = sys.argv[1], sys.argv[2]
    rp = Replay(exe)
    try:
        follows_to_the_end(rp, exe, demo)
        ends_at_ctrl_c(rp, exe, demo)
    finally:
        rp.cleanup()


if __name__ == "__main__":
    main()
