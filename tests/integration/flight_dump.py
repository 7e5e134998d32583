"""flight_dump.py — ORBIT_FLIGHT and orbit-dump with real processes, and the segment
as a guest (its size, limits, names and liveness).

usage: flight_dump.py CASE VICTIM ORBIT_DUMP ORBIT_REPLAY

  crash        a SIGSEGV inside three nested ORBIT_STARTs: the dump of the
               dead pid shows them open on the main thread, and the
               program's completed scopes before them; the equation holds
  kill         SIGKILL while a thread spins: the dump holds that thread's
               scopes of the last 50 ms before the kill (the flight ring's
               and the scope rings'), none ending after it was reaped
  live         a dump while the process runs; it then finishes normally
  undrained    scopes in the flight ring's frames, then scopes the agent never
               framed, then SIGKILL: the dump has each of them exactly once
               (the second kind from the scope rings), the equation holds
  no_flight    the same without a flight ring (ORBIT_CAPTURE only): the dump
               is the scope rings' newest claims, the undrained scopes all
               there, the equation holds
  truncated    a segment cut to 4096 bytes, filled with garbage, every header
               field made garbage, the flight ring's indices anywhere, a
               segment shrunk while it is read: exit 2 and one line, or a
               clean dump; never a signal
  leader_exit  the main thread calls pthread_exit while 3 threads go on: it
               waits for them, asleep (docs/operations.md, the process's
               end); another traced process starting meanwhile leaves the
               segment, and a dump of it is a snapshot of the live process
  busy_page    a killed process's log pages, one of them with a writer
               inside (its state line patched, as a writer killed in its
               record leaves it): the dump leaves that page out and says
               so; the other pages' lines all come out
  damaged_live a live process's segment with its header damaged: the dump
               writes nothing, says the process is alive, never "gone"
  small_shm    a 1 MiB /dev/shm (a tmpfs mounted by the test): a smaller
               segment, one line, the program exits as untraced; 32 KiB:
               tracing off, one line
  fsize        ulimit -f below the segment: a smaller segment, one line,
               no SIGXFSZ
  squat        another user made files named for the victim's pid in
               /dev/shm: its tracing works, and orbit-dump PID reads its
               real segment
  noproc       a traced process that cannot see /proc starts: the live
               segment of another process, and a dead one, stay
  keep_bounded nine crashed processes' segments, then a traced start (a
               /dev/shm of its own): the eight youngest stay, and one line
               names the one removed
  planted      another user's segment renamed to a dead process's name:
               root's orbit-dump PID refuses it (its header names another)
  fifo         a FIFO as the segment, for --remove and as -o: refused at once
  output       the default output name planted by another user, a named one
               too: refused; the caller's own file replaced, its inode kept
  lying        a 48 KB segment whose header declares 2^24 slots, or 2^19-page
               log rings: orbit-dump's peak RSS stays under 64 MiB
  list_escapes a command name with terminal escapes: --list prints it tamed
  list         --list shows pid, command, alive/dead, size; --remove removes
               a dead one and refuses a live one
Exits 0 (pass), 1 (fail) or 77 (skip)."""
import glob
import json
import mmap
import os
import random
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from replay_common import check, fail, read_csv, skip

CASE, VICTIM, DUMP, REPLAY = sys.argv[1:5]
TMP = tempfile.mkdtemp(prefix="orbit-flight-test-")
LEFT = []  # processes to kill at the end
PIDS = []  # processes whose segments are removed at the end


def env(**kw):
    e = {k: v for k, v in os.environ.items() if not k.startswith("ORBIT_")}
    # Under AddressSanitizer a fault is the kernel's, not the sanitizer's.
    e["ASAN_OPTIONS"] = "handle_segv=0:handle_sigbus=0:detect_leaks=0"
    e.update({k: str(v) for k, v in kw.items()})
    return e


def segments(pid):
    if pid not in PIDS:
        PIDS.append(pid)
    return sorted(glob.glob("/dev/shm/orbit-%d-*" % pid))


def dump(target, out, want=0):
    p = subprocess.run([DUMP, "-o", out, str(target)], capture_output=True)
    err = p.stderr.decode(errors="replace")
    check(p.returncode >= 0, "orbit-dump died of signal %d\n%s" % (-p.returncode, err))
    if want is not None and p.returncode != want:
        fail("orbit-dump %s exited %d, want %d\n%s" % (target, p.returncode, want, err))
    return p.returncode, err


def replay_json(capture):
    p = subprocess.run([REPLAY, "--json", "-", capture], capture_output=True)
    check(p.returncode in (0, 2), "orbit-replay exited %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)["captures"][0]["streams"][0]


def replay_rows(capture):
    path = os.path.join(TMP, "rows.csv")
    subprocess.run([REPLAY, "-q", "--csv", path, capture], check=False)
    return read_csv(path)


def replay_text(capture):
    return subprocess.run([REPLAY, capture], capture_output=True).stdout.decode(errors="replace")


def check_stream(s, ended):
    check(s["complete"], "the dump has no end of stream")
    check(s["equation"] == "holds", "claimed %d != delivered %d + lost %d" %
          (s["claimed"], s["delivered"], s["lost"]))
    check(s.get("ended") == ended, "ended %r, want %r" % (s.get("ended"), ended))


def one_line(err, what):
    lines = [l for l in err.splitlines() if l.strip()]
    check(len(lines) == 1, "%s: %d stderr lines, want 1:\n%s" % (what, len(lines), err))
    return lines[0]


def run(args, **kw):
    """Runs a process to its end; returns (exit status, pid)."""
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    err = p.communicate()[1]
    segments(p.pid)
    return p.returncode, p.pid, err


def segment_lines(err):
    """The stderr lines about the segment (not, say, the lapped line)."""
    return [l for l in err.decode(errors="replace").splitlines()
            if "/dev/shm" in l or "file size limit" in l]


def now_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


# ---- the flight recorder -------------------------------------------------


def case_crash():
    rc, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="16M"))
    check(rc == -signal.SIGSEGV, "the victim exited %d, not by SIGSEGV" % rc)
    check(segments(pid), "the crashed process left no segment")
    out = os.path.join(TMP, "crash.orbit.zst")
    dump(pid, out)
    s = replay_json(out)
    check_stream(s, "gone")
    stacks = {o["tid"]: o["stack"] for o in s["open_at_end"]}
    check(stacks.get(pid) == ["crash-outer", "crash-middle", "crash-inner"],
          "open at the end on the main thread: %r" % stacks)
    text = replay_text(out)
    check("main: crash-outer > crash-middle > crash-inner" in text,
          "the summary does not show the stack:\n" + text)
    rows = replay_rows(out)
    steps = [r for r in rows if r["name"] == "step" and r["tid"] == pid]
    check(len(steps) == 1000, "%d step scopes, want the 1000 before the crash" % len(steps))
    check(all("unfinished" not in r["marks"] for r in steps), "a step scope is unfinished")
    outer = [r for r in rows if r["name"] == "crash-outer"]
    check(len(outer) == 1 and "unfinished" in outer[0]["marks"], "crash-outer: %r" % outer)
    check(max(int(r["end_ns"]) for r in steps) <= int(outer[0]["start_ns"]),
          "the last step ends after crash-outer began")
    # The main thread died inside crash-outer: busy in it up to the last
    # time it was known open, beside its finished steps.
    p = subprocess.run([REPLAY, "--json", "-", "--top", "0", out], capture_output=True)
    main = [t for t in json.loads(p.stdout)["threads"] if t["tid"] == pid]
    step_ns = sum(int(r["end_ns"]) - int(r["start_ns"]) for r in steps)
    outer_ns = int(outer[0]["end_ns"]) - int(outer[0]["start_ns"])
    check(outer_ns > 0, "crash-outer was open for no time")
    check(len(main) == 1 and main[0]["busy_ns"] >= step_ns + outer_ns,
          "the main thread's busy time %r leaves out the scopes it died in (steps %d ns, "
          "crash-outer %d ns)" % (main, step_ns, outer_ns))
    print("crash: %d steps, main: %s" % (len(steps), " > ".join(stacks[pid])))


def case_kill():
    beat_file = os.path.join(TMP, "beat")
    v = subprocess.Popen([VICTIM, "spin", beat_file], env=env(ORBIT_FLIGHT="16M"))
    LEFT.append(v)
    deadline = time.time() + 20
    while not os.path.exists(beat_file) or os.path.getsize(beat_file) < 8:
        check(time.time() < deadline, "the victim never started")
        time.sleep(0.01)
    with open(beat_file, "r+b") as f:
        m = mmap.mmap(f.fileno(), 8)
        beat = lambda: int.from_bytes(m[:8], "little")
        while beat() < 20000:
            check(time.time() < deadline, "the spinner is not spinning")
            time.sleep(0.01)
        time.sleep(0.5)
        # Kill right after a beat the spinner has just recorded.
        b0 = beat()
        while beat() == b0:
            pass
        seen = beat()
        t_kill = now_ns()
        os.kill(v.pid, signal.SIGKILL)
        v.wait()
        # The spinner ran on until the signal landed: its last scopes (from
        # the rings) may end after t_kill, never after it was reaped.
        t_dead = now_ns()
        m.close()
    out = os.path.join(TMP, "kill.orbit.zst")
    dump(v.pid, out)
    s = replay_json(out)
    check_stream(s, "gone")
    rows = replay_rows(out)
    spin = [r for r in rows if r["thread_name"] == "spinner" and r["name"] == "spin"]
    check(spin, "no scope of the spinner thread")
    last = max(int(r["end_ns"]) for r in spin)
    recent = [r for r in spin if int(r["end_ns"]) >= t_kill - 50000000]
    check(recent, "the spinner's last scope ends %.1f ms before the kill" %
          ((t_kill - last) / 1e6))
    check(last <= t_dead, "a scope ends %.3f ms after the process was dead" %
          ((last - t_dead) / 1e6))
    print("kill: beat %d seen; %d spinner scopes in the last 50 ms before the kill, the last "
          "ending %+.3f ms from it (%.3f ms before the process was reaped); %d records from "
          "the rings" % (seen, len(recent), (last - t_kill) / 1e6, (t_dead - last) / 1e6,
                         s.get("dump", {}).get("ring_records", 0)))


def case_live():
    v = subprocess.Popen([VICTIM, "live", "3"], env=env(ORBIT_FLIGHT="16M"),
                         stdout=subprocess.PIPE)
    LEFT.append(v)
    time.sleep(1.0)
    out = os.path.join(TMP, "live.orbit.zst")
    dump(v.pid, out)
    o, _ = v.communicate(timeout=60)
    check(v.returncode == 0 and o == b"done\n", "the victim exited %d (%r)" % (v.returncode, o))
    s = replay_json(out)
    check_stream(s, "snapshot")
    check(s["scopes"] > 1000, "only %d scopes in the snapshot" % s["scopes"])
    print("live: %d scopes in the snapshot; the process then finished normally" % s["scopes"])


def case_undrained():
    n, m = 3000, 500
    # A long drain interval: the agent's own passes stay out of the way
    # (what the test checks holds whatever they do).
    rc, pid, err = run([VICTIM, "undrained", str(n), str(m)],
                       env=env(ORBIT_FLIGHT="4M", ORBIT_DRAIN_MS="60000"))
    check(rc == -signal.SIGKILL, "the victim exited %d (%r)" % (rc, err))
    out = os.path.join(TMP, "undrained.orbit.zst")
    dump(pid, out)
    s = replay_json(out)
    check_stream(s, "gone")
    d = s.get("dump", {})
    check(d.get("flight_frames", 0) >= 1, "no frame from the flight ring: %r" % d)
    # Each undrained scope is three records (start, value, stop) in no
    # frame: they can only have come from the rings.
    check(d.get("ring_records", 0) >= 3 * m, "%r records from the rings, want >= %d" %
          (d.get("ring_records"), 3 * m))
    rows = replay_rows(out)
    framed = [r for r in rows if r["name"] == "framed"]
    undrained = [r for r in rows if r["name"] == "undrained"]
    check(len(framed) == n, "%d framed scopes, want %d (each once)" % (len(framed), n))
    check(len(undrained) == m, "%d undrained scopes, want %d (each once)" % (len(undrained), m))
    check(not any(r["unfinished"] for r in framed + undrained), "an unfinished scope")
    check(max(r["end_ns"] for r in framed) <= min(r["start_ns"] for r in undrained),
          "the rings' scopes are not after the frames' on the timeline")
    print("undrained: %d scopes from the flight ring's %d frames, %d from the rings "
          "(%d records); claimed %d == delivered %d + lost %d" %
          (n, d["flight_frames"], m, d["ring_records"], s["claimed"], s["delivered"], s["lost"]))


def case_no_flight():
    n, m = 3000, 500
    cap = os.path.join(TMP, "own.orbit.zst")
    rc, pid, err = run([VICTIM, "undrained", str(n), str(m)],
                       env=env(ORBIT_CAPTURE=cap, ORBIT_DRAIN_MS="60000"))
    check(rc == -signal.SIGKILL, "the victim exited %d (%r)" % (rc, err))
    out = os.path.join(TMP, "no_flight.orbit.zst")
    dump(pid, out)
    s = replay_json(out)
    check_stream(s, "gone")
    d = s.get("dump", {})
    check(d.get("flight_frames") == 0, "frames from a flight ring there is not: %r" % d)
    rows = replay_rows(out)
    undrained = [r for r in rows if r["name"] == "undrained"]
    framed = [r for r in rows if r["name"] == "framed"]
    check(len(undrained) == m, "%d undrained scopes, want %d" % (len(undrained), m))
    check(0 < len(framed) <= n, "%d framed scopes, want some of the %d" % (len(framed), n))
    print("no_flight: %d records from the rings (%d of the %d framed scopes, all %d "
          "undrained); claimed %d == delivered %d + lost %d" %
          (d["ring_records"], len(framed), n, m, s["claimed"], s["delivered"], s["lost"]))


def dead_segment(flight="4M"):
    """A copy of the segment of a killed process (the original removed):
    small rings, so that the hundreds of damaged copies are quick to write."""
    beat = os.path.join(TMP, "beat-dead")
    v = subprocess.Popen([VICTIM, "spin", beat],
                         env=env(ORBIT_FLIGHT=flight, ORBIT_RING_BUDGET="256K"))
    deadline = time.time() + 20
    while not os.path.exists(beat) or os.path.getsize(beat) < 8:
        check(time.time() < deadline, "the victim never started")
        time.sleep(0.01)
    time.sleep(0.5)
    v.kill()
    v.wait()
    seg = segments(v.pid)
    check(len(seg) == 1, "segments: %r" % seg)
    copy = os.path.join(TMP, "segment")
    shutil.copyfile(seg[0], copy)
    os.unlink(seg[0])
    return copy


def case_truncated():
    seg = dead_segment()
    size = os.path.getsize(seg)
    base = os.path.join(TMP, "base.orbit.zst")
    dump(seg, base)
    data = open(seg, "rb").read()
    work = os.path.join(TMP, "work")
    out = os.path.join(TMP, "out.orbit.zst")

    def attempt(blob, what, want=(2,)):
        with open(work, "wb") as f:
            f.write(blob)
        rc, err = dump(work, out, want=None)
        check(rc in want, "%s: exit %d, want %r\n%s" % (what, rc, want, err))
        if rc == 2:
            line = one_line(err, what)
            check("offset" in line, "%s: the line names no offset: %s" % (what, line))
        return rc, err

    # Cut short, as in the issue: truncate -s 4096.
    shutil.copyfile(seg, work)
    subprocess.run(["truncate", "-s", "4096", work], check=True)
    rc, err = dump(work, out, want=2)
    print("truncated: " + one_line(err, "truncate -s 4096"))
    for cut in (0, 8, 100, 183, 4096 * 3, size // 2, size - 8):
        attempt(data[:cut], "cut at %d" % cut)
    rnd = random.Random(14)
    attempt(bytes(rnd.getrandbits(8) for _ in range(65536)) * (size // 65536 + 1),
            "all garbage")
    # Every header word garbage, one at a time (a few values each).
    for off in range(0, 184, 4):
        for value in (0, 1, 0xFFFFFFFF, rnd.getrandbits(32)):
            blob = bytearray(data)
            blob[off:off + 4] = value.to_bytes(4, "little")
            attempt(bytes(blob), "header word at %d = %#x" % (off, value), want=(0, 2))
    # The flight ring's header and metadata anywhere: every word of the
    # header and of each block's fields, and of its per-ring arrays those
    # of the rings the segment has and one past them.
    flight = int.from_bytes(data[136:144], "little")
    rings = int.from_bytes(data[32:36], "little")
    words = list(range(0, 48, 8))
    for block in (48, 48 + 2136):
        words += [block + o for o in range(0, 80, 8)]  # gen_begin .. stream
        for array in (80, 80 + 1024):  # ring_end[], ring_framed[]
            words += [block + array + 8 * r for r in range(rings + 1)]
        words.append(block + 2128)  # gen_end
    for off in words:
        for value in (0, rnd.getrandbits(64), (1 << 64) - 8, 1 << 40):
            blob = bytearray(data)
            blob[flight + off:flight + off + 8] = value.to_bytes(8, "little")
            attempt(bytes(blob), "flight word at %d = %#x" % (off, value), want=(0, 2))
    # Garbage in the ring's entries and the state area.
    for region, span in ((flight + 80 * 1024, 1 << 20), (2 * 4096, 32768)):
        blob = bytearray(data)
        for _ in range(200):
            at = region + rnd.randrange(span)
            blob[at] = rnd.getrandbits(8)
        attempt(bytes(blob), "bytes scrambled at %d" % region, want=(0, 2))
    # Shrunk (and grown back) while orbit-dump reads it.
    stop = threading.Event()

    def shrinker():
        while not stop.is_set():
            for n in (size // 3, 4096, size):
                try:
                    os.truncate(work, n)
                except OSError:
                    pass
    shutil.copyfile(seg, work)
    t = threading.Thread(target=shrinker)
    t.start()
    codes = {}
    try:
        for _ in range(40):
            rc, err = dump(work, out, want=None)
            codes[rc] = codes.get(rc, 0) + 1
            check(rc in (0, 2), "shrinking: exit %d\n%s" % (rc, err))
            if rc == 2:
                one_line(err, "shrinking")
    finally:
        stop.set()
        t.join()
    print("shrunk while read: exit statuses %r, never a signal" % codes)


def case_leader_exit():
    v = subprocess.Popen([VICTIM, "leader_exit", "6"], env=env(ORBIT_FLIGHT="8M"),
                         stdout=subprocess.PIPE)
    LEFT.append(v)
    check(v.stdout.readline() == b"ready\n", "the victim did not start")
    # The leader stays alive, waiting for the others in its thread-key
    # destructor (sleeping, running while it looks, or in the kernel for a
    # moment on a loaded machine): never a zombie, which is what a leader
    # that returned from pthread_exit would be.
    states = set()
    for _ in range(30):
        time.sleep(0.01)
        states.add(open("/proc/%d/stat" % v.pid).read().rsplit(")", 1)[1].split()[0])
    check(not states & {"Z", "X"}, "the leader's states are %r: it ended (a zombie), it "
          "should wait for the others" % sorted(states))
    seg = segments(v.pid)
    check(len(seg) == 1, "segments: %r" % seg)
    # Another traced process starts (its orbit_init looks at /dev/shm).
    o = subprocess.run([VICTIM, "emit", "100"], env=env(ORBIT_FLIGHT="1M"), capture_output=True)
    check(o.returncode == 0, "the other process exited %d" % o.returncode)
    check(os.path.exists(seg[0]), "the other process removed the live segment")
    out = os.path.join(TMP, "leader.orbit.zst")
    dump(v.pid, out)
    s = replay_json(out)
    check_stream(s, "snapshot")
    rows = replay_rows(out)
    workers = {r["tid"] for r in rows if r["name"] == "work"}
    check(len(workers) == 3, "work scopes from %d threads, want 3" % len(workers))
    v.kill()
    v.wait()
    print("leader_exit: the segment stayed; the dump has %d work scopes of 3 threads" %
          sum(1 for r in rows if r["name"] == "work"))


# ---- the segment as a guest ----------------------------------------------


def in_namespace(script, **kw):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        skip("needs root and unshare(1) for a mount namespace")
    p = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                       env=env(**kw), capture_output=True)
    if p.returncode != 0 and b"unshare failed" in p.stderr:
        skip("no mount namespace here: %s" % p.stderr)
    return p


# struct orbit__seg_header (format/segment.h): the fields up to the flight
# ring's offset.
SEG_HEADER = struct.Struct("<Q8I4Q2IQ3Q4IQ")


def log_lines(capture):
    p = subprocess.run([REPLAY, "-q", "--log", "-", capture], capture_output=True)
    text = p.stdout.decode(errors="replace")
    return [l[l.index("line "):] for l in text.splitlines() if "line " in l]


def case_busy_page():
    n = 300  # a few pages, well within the page rings: none is lost
    rc, pid, err = run([VICTIM, "logs", str(n)], env=env(ORBIT_FLIGHT="4M", ORBIT_DRAIN_MS="60000"))
    check(rc == -signal.SIGKILL, "the victim exited %d (%r)" % (rc, err))
    seg = segments(pid)
    check(len(seg) == 1, "segments: %r" % seg)
    whole = os.path.join(TMP, "logs.orbit.zst")
    code, err = dump(pid, whole)
    check("writer inside" not in err, "a page with no writer left out: %s" % err)
    lines = log_lines(whole)
    check(len(lines) == n, "%d log lines from the pages, want %d" % (len(lines), n))
    h = SEG_HEADER.unpack(open(seg[0], "rb").read(SEG_HEADER.size))
    pages_at, rings, pages, page_size, stride = h[18], h[19], h[20], h[21], h[23]
    check(rings >= 1 and pages >= 2, "no log pages in the segment: %r" % (h,))
    # The first page that holds lines (in the thread's page ring): a writer
    # inside it.
    with open(seg[0], "r+b") as f:
        m = mmap.mmap(f.fileno(), 0)
        busy = None
        for r in range(rings):
            states = pages_at + r * stride + pages * page_size
            for i in range(pages):
                if struct.unpack_from("<Q", m, states + 64 * i)[0] & ((1 << 17) - 1):
                    busy = (r, i)
                    break
            if busy is not None:
                break
        check(busy is not None, "no page holds records")
        at = states + 64 * busy[1] + 16
        struct.pack_into("<I", m, at, struct.unpack_from("<I", m, at)[0] | 1)
        m.close()
    out = os.path.join(TMP, "busy.orbit.zst")
    code, err = dump(pid, out)
    check("1 log page(s) had a writer inside" in err, "not said: %s" % err)
    left = log_lines(out)
    check(0 < len(left) < n, "%d of %d lines with one page left out" % (len(left), n))
    check(set(left) <= set(lines), "a line the process never wrote: %r" % (set(left) - set(lines)))
    print("busy_page: %d lines, %d with page %d of ring %d (a writer inside) left out" %
          (n, len(left), busy[1], busy[0]))


def case_damaged_live():
    v = subprocess.Popen([VICTIM, "live", "10"], env=env(ORBIT_FLIGHT="4M"),
                         stdout=subprocess.DEVNULL)
    LEFT.append(v)
    deadline = time.time() + 10
    while not segments(v.pid):
        check(time.time() < deadline, "the victim made no segment")
        time.sleep(0.01)
    seg = segments(v.pid)[0]
    time.sleep(0.2)
    with open(seg, "r+b") as f:  # the version: what the reader checks first
        f.seek(8)
        f.write(struct.pack("<I", 99))
    out = os.path.join(TMP, "damaged.orbit.zst")
    p = subprocess.run([DUMP, "-o", out, seg], capture_output=True)
    text = (p.stdout + p.stderr).decode(errors="replace")
    check(p.returncode == 2, "orbit-dump exited %d, want 2 (damaged):\n%s" % (p.returncode, text))
    check("gone" not in text, "a live process said to be gone:\n%s" % text)
    check("(no capture written; its process is alive)" in text, "not said:\n%s" % text)
    check(not os.path.exists(out), "a capture was written")
    v.kill()
    v.wait()
    print("damaged_live: %s" % text.strip().replace("\n", " | "))


def case_small_shm():
    cap = os.path.join(TMP, "small.orbit.zst")
    p = in_namespace("mount -t tmpfs -o size=1M tmpfs /dev/shm && exec %s emit 100000" % VICTIM,
                     ORBIT_CAPTURE=cap)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, "exit %d on a 1 MiB /dev/shm\n%s" % (p.returncode, err))
    line = one_line("\n".join(segment_lines(p.stderr)), "1 MiB /dev/shm")
    check("has no room" in line and "using" in line, "the line: " + line)
    s = replay_json(cap)
    check(s["equation"] == "holds" and s["scopes"] + s["lost"] // 2 >= 1,
          "the smaller segment traced nothing: %r" % s)
    print("small_shm 1M: " + line)
    p = in_namespace("mount -t tmpfs -o size=32K tmpfs /dev/shm && exec %s emit 1000" % VICTIM,
                     ORBIT_CAPTURE=cap)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, "exit %d on a 32 KiB /dev/shm\n%s" % (p.returncode, err))
    line = one_line("\n".join(segment_lines(p.stderr)), "32 KiB /dev/shm")
    check("tracing is off" in line, "the line: " + line)
    print("small_shm 32K: " + line)


def case_fsize():
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (8 << 20, 8 << 20))
    p = subprocess.run([VICTIM, "emit", "100000"], env=env(ORBIT_FLIGHT="4M"),
                       preexec_fn=limit, capture_output=True)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, "exit %d under ulimit -f 8M (SIGXFSZ is %d)\n%s" %
          (p.returncode, signal.SIGXFSZ, err))
    line = one_line("\n".join(segment_lines(p.stderr)), "ulimit -f")
    check("file size limit" in line and "using" in line, "the line: " + line)
    print("fsize 8M: " + line)

    def tiny():
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 10, 64 << 10))
    p = subprocess.run([VICTIM, "emit", "1000"], env=env(ORBIT_FLIGHT="4M"),
                       preexec_fn=tiny, capture_output=True)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, "exit %d under ulimit -f 64K\n%s" % (p.returncode, err))
    line = one_line("\n".join(segment_lines(p.stderr)), "ulimit -f 64K")
    check("tracing is off" in line, "the line: " + line)
    print("fsize 64K: " + line)


def as_user(uid):
    def become():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return become


def case_squat():
    if os.geteuid() != 0:
        skip("needs root to act as two other users")
    victim_uid, squatter_uid = 65534, 65533
    # The victim runs as nobody: its binary and libraries must be readable.
    v = subprocess.Popen([VICTIM, "late"], env=env(), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, preexec_fn=as_user(victim_uid), cwd="/")
    LEFT.append(v)
    start = open("/proc/%d/stat" % v.pid).read().rsplit(")", 1)[1].split()[19]
    names = ["orbit-%d-%s" % (v.pid, start), "orbit-%d-%s-%016x" % (v.pid, start, 0),
             "orbit-%d-%s-%016x" % (v.pid, start, 0xdeadbeef)]
    script = "; ".join("printf squatted > /dev/shm/%s" % n for n in names)
    s = subprocess.run(["sh", "-c", script], preexec_fn=as_user(squatter_uid), cwd="/")
    check(s.returncode == 0, "the squatter could not create its files")
    v.stdin.write(b"go\n")
    v.stdin.flush()
    line = v.stdout.readline()
    check(line == b"init 0\n", "orbit_init in the victim: %r" % line)
    check(v.stdout.readline() == b"emitted\n", "the victim did not emit")
    out = os.path.join(TMP, "squat.orbit.zst")
    rc, err = dump(v.pid, out)
    s = replay_json(out)
    check_stream(s, "snapshot")
    check(s["scopes"] >= 1000, "%d scopes in the victim's dump" % s["scopes"])
    v.stdin.write(b"end\n")
    v.stdin.flush()
    v.wait(timeout=30)
    check(v.returncode == 0, "the victim exited %d" % v.returncode)
    for n in names:
        check(os.path.exists("/dev/shm/" + n), "someone removed the squatter's %s" % n)
        os.unlink("/dev/shm/" + n)
    print("squat: tracing on despite %d squatted names; the dump read the real segment" %
          len(names))


def case_noproc():
    if os.environ.get("ORBIT_SANITIZED"):
        # AddressSanitizer's runtime reads its options and the threads from
        # /proc; hidden, it stops the victim itself. The plain build runs it.
        skip("a sanitized victim cannot run without /proc")
    live = subprocess.Popen([VICTIM, "live", "6"], env=env(ORBIT_FLIGHT="2M"),
                            stdout=subprocess.PIPE)
    LEFT.append(live)
    time.sleep(0.5)
    live_seg = segments(live.pid)
    check(len(live_seg) == 1, "segments of the live process: %r" % live_seg)
    _, dead_pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="2M"))
    dead_seg = segments(dead_pid)
    check(len(dead_seg) == 1, "segments of the crashed process: %r" % dead_seg)
    p = in_namespace("mount -t tmpfs tmpfs /proc && exec %s emit 1000" % VICTIM,
                     ORBIT_FLIGHT="1M")
    check(p.returncode == 0, "the process without /proc exited %d: %s" % (p.returncode, p.stderr))
    check(os.path.exists(live_seg[0]), "a process without /proc removed a live segment")
    check(os.path.exists(dead_seg[0]), "a process without /proc removed a segment it could "
          "not prove dead")
    out = os.path.join(TMP, "noproc.orbit.zst")
    dump(live.pid, out)
    check_stream(replay_json(out), "snapshot")
    os.unlink(dead_seg[0])
    live.kill()
    live.wait()
    print("noproc: the live and the dead segment stayed")


def case_keep_bounded():
    # Nine crashed processes in a /dev/shm of the test's own, then a tenth
    # traced process: it keeps the eight youngest and says which it removed.
    script = ("mount -t tmpfs tmpfs /dev/shm && for i in 1 2 3 4 5 6 7 8 9; do "
              "%s crash >/dev/null 2>&1 & wait $!; echo crashed $!; done; "
              "%s emit 100 && ls /dev/shm" % (VICTIM, VICTIM))
    p = in_namespace(script, ORBIT_FLIGHT="1M")
    out = p.stdout.decode().split()
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 0, "exit %d: %s" % (p.returncode, err))
    crashed = [int(out[i + 1]) for i, w in enumerate(out) if w == "crashed"]
    left = [w for w in out if w.startswith("orbit-")]
    check(len(crashed) == 9, "crashed: %r" % out)
    said = [l for l in err.splitlines() if l.startswith("orbit: removed ")]
    check(len(said) == 1, "want one line for the one removed: %r" % err)
    check(re.match(r"orbit: removed /dev/shm/orbit-%d-\S+, the segment of dead process %d "
                   r"\(flight_victim, [0-9.]+ MiB held\), which orbit-dump could still read: "
                   r"the 8 younger ones are kept$" % (crashed[0], crashed[0]), said[0]),
          "the line: %s" % said[0])
    check(sorted(int(f.split("-")[1]) for f in left) == sorted(crashed[1:]),
          "left: %r, crashed %r" % (left, crashed))
    print("keep_bounded: " + said[0])


NOBODY = 65534


def need_root():
    if os.geteuid() != 0:
        skip("needs root (files of another user)")


def dead_pid():
    """A pid whose process is gone (a child that has ended)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def case_planted():
    # Another user's killed segment, renamed to the name of a dead process
    # root asks for: not that process's segment.
    need_root()
    _, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="1M"))
    seg = segments(pid)
    check(len(seg) == 1, "segments: %r" % seg)
    other = dead_pid()
    start = os.path.basename(seg[0]).split("-")[2]
    planted = "/dev/shm/orbit-%d-%s-00000000deadbeef" % (other, start)
    PIDS.append(other)
    shutil.copyfile(seg[0], planted)
    os.chown(planted, NOBODY, NOBODY)
    out = os.path.join(TMP, "planted.orbit.zst")
    rc, err = dump(other, out, want=1)
    check("its header names another process: not its segment" in err, "said: %s" % err)
    check(not os.path.exists(out), "a capture was written")
    print("planted: %s" % err.strip())


def case_fifo():
    # A FIFO given as a segment, and as the output: refused at once.
    fifo = os.path.join(TMP, "segment.fifo")
    os.mkfifo(fifo)
    for args in ([DUMP, fifo], [DUMP, "--remove", fifo]):
        try:
            p = subprocess.run(args, capture_output=True, timeout=10)
        except subprocess.TimeoutExpired:
            fail("%s hung on a FIFO" % " ".join(args))
        err = p.stderr.decode(errors="replace")
        check(p.returncode == 1 and "not a regular file" in err,
              "%s: exit %d: %s" % (" ".join(args), p.returncode, err))
    _, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="1M"))
    try:
        p = subprocess.run([DUMP, "-o", fifo, str(pid)], capture_output=True, timeout=10)
    except subprocess.TimeoutExpired:
        fail("orbit-dump -o FIFO hung")
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 3 and "it is not a regular file; not written" in err,
          "-o FIFO: exit %d: %s" % (p.returncode, err))
    print("fifo: refused as a segment, by --remove and as the output")


def case_output():
    # Outputs planted by another user: the default name taken in advance,
    # and a named one; a file of the caller's is replaced, its inode kept.
    need_root()
    _, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="1M"))
    shared = os.path.join(TMP, "shared")
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    now = time.time()
    planted = []
    for s in range(-1, 6):
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now + s))
        f = os.path.join(shared, "orbit-dump-%d-%s.orbit.zst" % (pid, stamp))
        open(f, "w").close()
        os.chown(f, NOBODY, NOBODY)
        os.chmod(f, 0o666)
        planted.append(f)
    p = subprocess.run([DUMP, str(pid)], capture_output=True, cwd=shared)
    err = p.stderr.decode(errors="replace")
    check(p.returncode == 3 and "it exists (name one with -o); not written" in err,
          "the default name taken: exit %d: %s" % (p.returncode, err))
    check(all(os.path.getsize(f) == 0 for f in planted), "a planted file was written")
    rc, err = dump(pid, planted[0], want=3)
    check("it belongs to another user; not written" in err, "said: %s" % err)
    mine = os.path.join(TMP, "mine.orbit.zst")
    open(mine, "w").write("old")
    os.link(mine, mine + ".other")
    dump(pid, mine)
    check(open(mine + ".other").read() == "old", "the other name of the old file changed")
    check_stream(replay_json(mine), "gone")
    print("output: the planted names refused, the caller's own file replaced")


def case_list_escapes():
    # A segment whose command name holds terminal escapes: printed tamed.
    _, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="1M"))
    seg = segments(pid)
    check(len(seg) == 1, "segments: %r" % seg)
    blob = bytearray(open(seg[0], "rb").read(4096))
    blob[160:176] = b"\x1b]0;owned\x07\x1b[2J\x00\x00\x00"
    with open(seg[0], "r+b") as f:
        f.write(bytes(blob))
    p = subprocess.run([DUMP, "--list"], capture_output=True)
    check(p.returncode == 0, "--list exited %d" % p.returncode)
    line = [l for l in p.stdout.split(b"\n") if l.split()[:1] == [str(pid).encode()]]
    check(len(line) == 1, "--list: %r" % p.stdout)
    check(all(32 <= c < 127 for c in line[0]), "--list printed %r" % line[0])
    print("list_escapes: %s" % line[0].decode())


def case_lying():
    # A 48 KB segment whose header declares huge rings (a sparse file of the
    # size it declares): orbit-dump's memory stays bounded by what the file
    # holds, whatever the header says.
    _, pid, _ = run([VICTIM, "crash"], env=env(ORBIT_CAPTURE=os.path.join(TMP, "v.orbit.zst")))
    seg = segments(pid)
    check(len(seg) == 1, "segments: %r" % seg)
    head = bytearray(open(seg[0], "rb").read(49152))
    page, = struct.unpack_from("<I", head, 16)
    rings, = struct.unpack_from("<I", head, 32)
    rings_off, = struct.unpack_from("<Q", head, 48)
    count, pages, psize = struct.unpack_from("<III", head, 112)
    check(count > 0, "the victim's segment has no log page rings")
    up = lambda v: (v + page - 1) // page * page
    peaks = []
    for what, slots, npages in (("slots", 1 << 24, pages), ("pages", None, 1 << 19)):
        blob = bytearray(head)
        if slots is None:
            slots, = struct.unpack_from("<I", head, 36)
        stride = 128 + slots * 64
        pages_off = up(rings_off + rings * stride)
        pstride = up(npages * (psize + 64))
        total = pages_off + count * pstride
        struct.pack_into("<I", blob, 36, slots)
        struct.pack_into("<QQ", blob, 56, stride, total)
        struct.pack_into("<Q", blob, 104, pages_off)
        struct.pack_into("<I", blob, 116, npages)
        struct.pack_into("<QQ", blob, 128, pstride, total)
        struct.pack_into("<Q", blob, 144, 0)
        # ring 0 full of holes, or (pages) empty, so that the log pages are
        # what would be copied
        struct.pack_into("<Q", blob, rings_off, slots if what == "slots" else 0)
        lying = os.path.join(TMP, "lying-%s" % what)
        with open(lying, "wb") as f:  # 48 KB of data, the rest a hole
            f.write(bytes(blob))
            f.truncate(total)
        out = os.path.join(TMP, "lying-%s.orbit.zst" % what)
        p = subprocess.Popen([DUMP, "-o", out, lying], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        err = p.stderr.read().decode(errors="replace")
        _, status, use = os.wait4(p.pid, 0)
        rc = os.waitstatus_to_exitcode(status)
        peaks.append("%s %d MiB (exit %d)" % (what, use.ru_maxrss // 1024, rc))
        check(use.ru_maxrss < 64 * 1024, "%s: orbit-dump's peak RSS %d KiB on a 48 KB segment"
              % (what, use.ru_maxrss))
        check(rc == 2, "%s: exit %d, want 2 (damaged)\n%s" % (what, rc, err))
        one_line(err, what)
    print("lying: peak RSS %s; %s" % (", ".join(peaks), err.strip()))


def case_list():
    live = subprocess.Popen([VICTIM, "live", "4"], env=env(ORBIT_FLIGHT="2M"),
                            stdout=subprocess.PIPE)
    LEFT.append(live)
    _, dead_pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="2M"))
    time.sleep(0.3)
    p = subprocess.run([DUMP, "--list"], capture_output=True)
    check(p.returncode == 0, "--list exited %d" % p.returncode)
    rows = {}
    for line in p.stdout.decode().splitlines()[1:]:
        f = line.split()
        rows[int(f[0])] = f
    check(live.pid in rows and rows[live.pid][2] == "alive", "--list: %r" % rows.get(live.pid))
    check(dead_pid in rows and rows[dead_pid][2] == "dead", "--list: %r" % rows.get(dead_pid))
    check(rows[dead_pid][1] == "flight_victim", "--list command: %r" % rows[dead_pid])
    r = subprocess.run([DUMP, "--remove", str(live.pid)], capture_output=True)
    check(r.returncode == 1 and b"alive" in r.stderr, "--remove of a live one: %r" % (r,))
    check(segments(live.pid), "--remove removed a live segment")
    r = subprocess.run([DUMP, "--remove", str(dead_pid)], capture_output=True)
    check(r.returncode == 0 and not segments(dead_pid), "--remove of a dead one: %r" % (r,))
    live.kill()
    live.wait()
    print("list: %s" % " ".join(rows[dead_pid]))


def case_usage():
    """A usage error is one line that points to --help, never the whole
    help; a long option is taken by its whole name only."""
    _, dead_pid, _ = run([VICTIM, "crash"], env=env(ORBIT_FLIGHT="2M"))
    out = os.path.join(TMP, "u.orbit.zst")
    for args in (["--outp", out, str(dead_pid)], ["--lis"], ["--bogus"], [],
                 [str(dead_pid), str(dead_pid)], ["--list", str(dead_pid)],
                 ["--remove", "-o", out, str(dead_pid)], ["-o"]):
        p = subprocess.run([DUMP] + args, capture_output=True)
        what = "orbit-dump %s" % " ".join(args)
        check(p.returncode == 1, "%s: exit %d, want 1" % (what, p.returncode))
        line = one_line(p.stderr.decode(errors="replace"), what)
        check(line.startswith("orbit-dump: ") and line.endswith("see orbit-dump --help"),
              "%s: %r" % (what, line))
        check(not p.stdout, "%s wrote to stdout" % what)
        check(not os.path.exists(out), "%s wrote a capture" % what)
    p = subprocess.run([DUMP, "--outp", out, str(dead_pid)], capture_output=True)
    check(b"'--outp' is not an option" in p.stderr, "--outp: %r" % p.stderr)
    check(segments(dead_pid), "a usage error removed the segment")
    p = subprocess.run([DUMP, "--output", out, str(dead_pid)], capture_output=True)
    check(p.returncode == 0 and os.path.exists(out), "--output whole: %r" % (p,))
    p = subprocess.run([DUMP, "--help"], capture_output=True)
    check(p.returncode == 0 and p.stdout.startswith(b"usage: orbit-dump") and not p.stderr,
          "--help: %r" % (p,))


CASES = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}

try:
    if CASE not in CASES:
        fail("no case " + CASE)
    CASES[CASE]()
finally:
    for v in LEFT:
        if v.poll() is None:
            v.kill()
            v.wait()
        PIDS.append(v.pid)
    for pid in PIDS:
        for s in glob.glob("/dev/shm/orbit-%d-*" % pid):
            os.unlink(s)
    shutil.rmtree(TMP, ignore_errors=True)
