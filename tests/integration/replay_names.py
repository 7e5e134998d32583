"""replay_names.py — thread names from a real traced program
(replay_names.c, run here with ORBIT_CAPTURE), in a capture of protocol
version 3 (docs/format.md 4.5): every CSV row carries the name its thread
had when its records were framed, which the agent sends before them: the
worker's first scopes "before", its later ones "after", and the thread
that ended before the end of the stream still "brief" (a version-2 capture
names it nowhere: it was gone when the names went at the end).

    python3 replay_names.py ORBIT_REPLAY TRACED_PROGRAM
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(__file__))
from replay_common import Replay, check, read_csv  # noqa: E402


def main():
    rp = Replay(sys.argv[1])
    program = sys.argv[2]
    try:
        cap = rp.path("names.orbit.zst")
        env = dict(os.environ, ORBIT_CAPTURE=cap)
        env.pop("ORBIT_COLLECTOR", None)
        env.pop("ORBIT_SCHED", None)
        p = subprocess.run([program], env=env, capture_output=True)
        check(p.returncode == 0, "traced program: %d %s" % (p.returncode, p.stderr))
        csv_path = rp.path("n.csv")
        rp.run(cap, "--csv", csv_path, "-q")
        got = {}
        for r in read_csv(csv_path):
            got.setdefault(r["name"], set()).add(r["thread_name"])
        check(got.get("one") == {"before"}, "the first scopes' thread: %r" % got.get("one"))
        check(got.get("two") == {"after"}, "the later scopes' thread: %r" % got.get("two"))
        check(got.get("gone") == {"brief"}, "the ended thread: %r" % got.get("gone"))
        log = rp.run(cap)  # the summary's threads table: the last names
        out = log.stdout.decode()
        check(" after" in out and " brief" in out, "summary threads:\n" + out)
    finally:
        rp.cleanup()
    print("ok")


main()
