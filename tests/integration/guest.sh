#!/bin/sh
# guest.sh BUILD_DIR CASE — the agent is a guest in its host's process: the
# host exits as it would untraced (same output, same status), with at most
# one stderr line per problem, whatever the limits, signals and files around
# it:
#   capture_symlink     ORBIT_CAPTURE names a symbolic link planted at the path,
#                       pointing at a victim file: the victim is untouched, the
#                       link too, one line says why (run as root when the tests are)
#   capture_other_user  the path is a regular file of another user (root only):
#                       untouched, one line says why
#   capture_rerun       a second run with the same path replaces the first capture
#                       without truncating it: another name of the first file still
#                       holds it byte for byte, and the new capture is complete
#   capture_busy        a live lock holder has the path: this process writes
#                       PATH.PID, says so in one line, and leaves PATH alone
#   capture_fsize       under ulimit -f the capture stops at the limit with one
#                       line, tracing off, every frame in it complete (no SIGXFSZ)
#   fds_N               N file descriptors free (RLIMIT_NOFILE): the program runs
#                       as untraced, at most one line; with enough, a complete
#                       capture
#   fds_sweep           the same for every N from 0 to 16
#   signals             a process-directed signal storm that only the agent's
#                       thread could take: no handler ever runs on it
#   threads             a traced process has exactly the threads docs/operations.md
#                       lists (the program's and orbit-agent), also with a host
#                       name to resolve
#   capture_long        ORBIT_CAPTURE longer than PATH_MAX: one line, tracing off,
#                       the untraced output and status, and no file at a cut-short
#                       path (alone and beside ORBIT_COLLECTOR)
#   pthread_exit        main ends with pthread_exit, two workers after it: the
#                       process ends when they do, status 0, with ORBIT_CAPTURE
#                       and with ORBIT_COLLECTOR, each capture complete
#   pthread_exit_term   the same with workers that never end, and SIGTERM: the
#                       process dies of it, as untraced
#   close_closefrom     daemon-style: after its first scopes the program closes
#                       every descriptor it did not open (closefrom(3)), opens
#                       its own in their numbers and writes to them, then more
#                       scopes: with ORBIT_CAPTURE, ORBIT_COLLECTOR and
#                       ORBIT_FLIGHT it exits 0 as untraced, its files hold
#                       exactly what it wrote, nothing is said, and each capture
#                       holds every record, before the closes and after
#   close_loop          the same with close() of 3 to 1023
#   memory              a segment holds memory for the rings its threads use:
#                       with 1 and with 6 writing threads, its blocks in
#                       /dev/shm are the parts reserved at once plus the rings
#                       used (by their cursors), not the whole segment; with
#                       a 64 MiB flight ring, what was written of it
#   shm_full            /dev/shm fills (another file takes every free byte)
#                       after the segment is made: the first write finds no room
#                       for its ring: one line, tracing off, the program runs
#                       on as untraced, no SIGBUS (a tmpfs of its own, root)
#   shm_small_logs      a 16 MiB /dev/shm and log page rings bigger than it: the
#                       log pages leave the segment before the scope rings
#                       shrink below 1024 slots (one line says what it got), and
#                       the capture is complete
#   sched_exec          ORBIT_SCHED=1, then an exec into an untraced program: the
#                       instance stops recording at the exec, and the next
#                       traced start (without ORBIT_SCHED) removes it
#   exec_chain          ORBIT_CAPTURE=X, a traced program execs itself before its
#                       agent drained (20000 scopes), that image execs itself
#                       again, the third one execs another traced program
#                       (examples/demo): X, X.exec1, X.exec2 and X.exec3, each
#                       complete, each holding exactly its image's scopes with
#                       nothing lost, each naming the one before (generation,
#                       command, capture); nothing said, no segment left;
#                       and with "%p" in ORBIT_CAPTURE
#   exec_untraced       the same into an untraced program (/bin/true): X is cut,
#                       the segment is left; orbit-dump --complete X PID
#                       completes it with every record, a second --complete
#                       changes nothing
#   sched_killed        ORBIT_SCHED=1 and SIGKILL: orbit-dump --remove PID, and
#                       (for another) the next traced start without
#                       ORBIT_SCHED, remove the instance left recording
set -eu
build=$1
case_=$2
test_name=guest
. "$(dirname "$0")/collector_harness.sh"
docs=${3:-}
host=$build/tests/guest_host
dump=$build/tests/capture_dump

lines() {
	if [ -s "$1" ]; then wc -l <"$1"; else echo 0; fi
}

# untraced MODE ARGS: the program's stdout and status without the agent
untraced() {
	set +e
	env -u ORBIT_CAPTURE -u ORBIT_COLLECTOR -u GUEST_CAPTURE "$host" "$@" >"$dir/want.out" 2>/dev/null
	echo $? >"$dir/want.rc"
	set -e
	[ "$(cat "$dir/want.rc")" -eq 0 ] || fail "the program fails untraced: $*"
}

# traced ENV... -- ARGS: runs it with the variables, compares with untraced
traced() {
	set +e
	env "$@" >"$dir/got.out" 2>"$dir/got.err"
	echo $? >"$dir/got.rc"
	set -e
	cmp -s "$dir/want.out" "$dir/got.out" || fail "stdout differs from untraced: $(cat "$dir/got.out")"
	cmp -s "$dir/want.rc" "$dir/got.rc" || fail "exit status $(cat "$dir/got.rc"), untraced $(cat "$dir/want.rc"); stderr: $(cat "$dir/got.err")"
}

# in_small_shm SIZE ENV... PROGRAM ARGS: runs it with a tmpfs of SIZE of its
# own at /dev/shm (a mount namespace), stdout and stderr in got.out, got.err;
# fails unless it exits 0, skips without root or namespaces
in_small_shm() {
	{ [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; } ||
		{ echo "needs root and unshare(1) for a tmpfs of its own"; exit 77; }
	size=$1
	shift
	set +e
	unshare -m --propagation private sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm &&
		exec env "$@"' "$size" "$@" >"$dir/got.out" 2>"$dir/got.err"
	rc=$?
	set -e
	if [ "$rc" -ne 0 ] && grep -q "unshare failed" "$dir/got.err"; then
		echo "no mount namespace here"
		exit 77
	fi
	[ "$rc" -eq 0 ] || fail "exit status $rc: $(cat "$dir/got.err")"
}

# need_tracefs: root and a tracefs with instances, or skip
need_tracefs() {
	tracefs=/sys/kernel/tracing
	{ [ "$(id -u)" -eq 0 ] && [ -d "$tracefs/instances" ]; } ||
		{ echo "needs root and tracefs at $tracefs"; exit 77; }
}

# instance_of PID: waits (10 s at most) for PID's instance to record; sets inst
instance_of() {
	inst=
	for _ in $(seq 200); do
		inst=$(ls -d "$tracefs/instances/orbit-$1-"* 2>/dev/null | head -n 1)
		[ -n "$inst" ] && [ "$(cat "$inst/tracing_on" 2>/dev/null)" = 1 ] && return 0
		sleep 0.05
	done
	fail "no recording instance of $1: $(ls "$tracefs/instances")"
}

# seg_memory PID THREADS: checks the segment's blocks against its rings used
seg_memory() {
	python3 - "$1" "$2" <<'EOF'
import glob, os, struct, sys
pid, threads = sys.argv[1], int(sys.argv[2])
seg = glob.glob("/dev/shm/orbit-%s-*" % pid)
if len(seg) != 1:
    sys.exit("segments of %s: %r" % (pid, seg))
with open(seg[0], "rb") as f:
    data = f.read(184)
    page, = struct.unpack_from("<I", data, 16)
    rings, slots = struct.unpack_from("<II", data, 32)
    rings_off, stride, total = struct.unpack_from("<QQQ", data, 48)
    pages_off, = struct.unpack_from("<Q", data, 104)
    flight_off, flight_size = struct.unpack_from("<QQ", data, 136)
    used = 0
    for i in range(rings):
        f.seek(rings_off + i * stride)
        used += struct.unpack("<Q", f.read(8))[0] > 0
    held = os.fstat(f.fileno()).st_blocks * 512
# the flight ring: its header and handshake area (80 KiB) at once, its
# entries as they are written (a few frames here) and 1 MiB ahead
flight = 80 * 1024 + (3 << 20) if flight_size else 0
at_once = rings_off + rings * page + (flight_off - pages_off)
most = at_once + used * (stride + page) + flight
least = used * slots * 64
print("%d thread(s): %d of %d rings used, %d bytes held of %d (at most %d)" %
      (threads, used, rings, held, total, most))
if used < 1 or not least <= held <= most:
    sys.exit("the segment holds %d bytes, want %d to %d for %d rings used" %
             (held, least, most, used))
EOF
}

# chain_check FILE SCOPES GEN PREV COMPLETED: FILE is a complete capture of
# SCOPES scopes, nothing lost, of image GEN + 1 (GEN 0: the first; else after
# the exec of the image whose capture was PREV); COMPLETED 1 when it was
# completed after its image exec'd
chain_check() {
	"$build/replay/orbit-replay" --json - "$1" >"$dir/c.json" 2>"$dir/c.err" ||
		fail "orbit-replay $1: $(cat "$dir/c.err")"
	python3 - "$dir/c.json" "$@" <<'EOF'
import json, sys
doc, path, scopes, gen, prev, completed = sys.argv[1:7]
s = json.load(open(doc))["captures"][0]["streams"][0]
want = {"complete": True, "equation": "holds", "lost": 0, "scopes": int(scopes)}
got = {k: s.get(k) for k in want}
if got != want:
    sys.exit("%s: %r, want %r" % (path, got, want))
x = s.get("exec_of")
if int(gen) == 0:
    if x is not None:
        sys.exit("%s: the first image names an earlier one: %r" % (path, x))
elif x != {"generation": int(gen), "process": "guest_host", "capture": prev}:
    sys.exit("%s: exec_of %r, want generation %s after %s" % (path, x, gen, prev))
c = s.get("dump", {}).get("completed", 0)
if c != int(completed):
    sys.exit("%s: completed %r, want %s" % (path, c, completed))
print("%s: %s scopes, complete, nothing lost, image %d%s" %
      (path, scopes, int(gen) + 1, ", completed after its exec" if c else ""))
EOF
}

case $case_ in
exec_chain)
	x=$dir/x.orbit.zst
	env ORBIT_CAPTURE="$x" "$host" exec 20000 0 "$host" exec 3000 0 "$host" exec 1000 0 \
		"$build/examples/demo" --threads 2 --frames 20 >"$dir/got.out" 2>"$dir/got.err" &
	hpid=$!
	wait "$hpid" || fail "the program failed: $(cat "$dir/got.err")"
	[ ! -s "$dir/got.err" ] || fail "said: $(cat "$dir/got.err")"
	chain_check "$x" 20000 0 "" 1 || fail "the first image"
	chain_check "$x.exec1" 3000 1 "$x" 1 || fail "the second image"
	chain_check "$x.exec2" 1000 2 "$x.exec1" 1 || fail "the third image"
	"$build/replay/orbit-replay" --json - "$x.exec3" >"$dir/c.json" || fail "the demo's capture"
	python3 - "$dir/c.json" "$x.exec2" <<'EOF' || fail "the demo's capture"
import json, sys
s = json.load(open(sys.argv[1]))["captures"][0]["streams"][0]
x = s.get("exec_of")
if not (s["complete"] and s["equation"] == "holds" and s["scopes"] > 0 and x is not None and
        x["generation"] == 3 and x["capture"] == sys.argv[2] and "dump" not in s):
    sys.exit("the demo's capture: %r" % {k: s.get(k) for k in
             ("complete", "equation", "scopes", "exec_of")})
print("the demo after three execs: %d scopes, image 4, after %s" % (s["scopes"], sys.argv[2]))
EOF
	! ls /dev/shm/orbit-"$hpid"-* 2>/dev/null | grep -q . || fail "segments left: $(ls /dev/shm)"
	# "%p" in the path: the same chain under the pid's name
	env ORBIT_CAPTURE="$dir/p-%p.orbit.zst" "$host" exec 2000 0 "$host" plain 500 \
		>"$dir/got.out" 2>"$dir/got.err" &
	hpid=$!
	wait "$hpid" || fail "the program failed: $(cat "$dir/got.err")"
	[ ! -s "$dir/got.err" ] || fail "said: $(cat "$dir/got.err")"
	chain_check "$dir/p-$hpid.orbit.zst" 2000 0 "" 1 || fail "%p: the first image"
	chain_check "$dir/p-$hpid.orbit.zst.exec1" 500 1 "$dir/p-$hpid.orbit.zst" 0 ||
		fail "%p: the second image"
	;;
exec_untraced)
	x=$dir/u.orbit.zst
	env ORBIT_CAPTURE="$x" "$host" exec 20000 0 /bin/true >"$dir/got.out" 2>"$dir/got.err" &
	hpid=$!
	wait "$hpid" || fail "the program failed: $(cat "$dir/got.err")"
	[ ! -s "$dir/got.err" ] || fail "said: $(cat "$dir/got.err")"
	seg=$(ls /dev/shm/orbit-"$hpid"-* 2>/dev/null) || fail "no segment left by $hpid"
	"$build/replay/orbit-replay" --json - "$x" >"$dir/c.json" 2>/dev/null || true # cut: says so
	python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["captures"][0]["streams"][0]
sys.exit(0 if not s["complete"] else "complete before --complete")' "$dir/c.json" ||
		fail "the capture of the image that exec'd into /bin/true"
	"$build/dump/orbit-dump" --complete "$x" "$hpid" >"$dir/d.out" 2>"$dir/d.err" ||
		fail "orbit-dump --complete: $(cat "$dir/d.err")"
	cat "$dir/d.out"
	chain_check "$x" 20000 0 "" 1 || fail "completed by orbit-dump"
	cp "$x" "$dir/once"
	"$build/dump/orbit-dump" --complete "$x" "$hpid" >/dev/null 2>"$dir/d.err" ||
		fail "a second --complete: $(cat "$dir/d.err")"
	cmp -s "$x" "$dir/once" || fail "a second --complete changed the capture"
	grep -q "nothing to complete" "$dir/d.err" || fail "a second --complete said: $(cat "$dir/d.err")"
	"$build/dump/orbit-dump" --remove "$hpid" >/dev/null || fail "orbit-dump --remove $hpid"
	[ ! -e "$seg" ] || fail "$seg left"
	;;
memory)
	for t in 1 6 flight; do
		flight=
		[ "$t" = flight ] && t=1 flight=ORBIT_FLIGHT=64M
		env ORBIT_CAPTURE="$dir/m$t.orbit.zst" $flight "$host" spread "$t" 3000 5000 \
			>"$dir/got.out" 2>"$dir/got.err" &
		hpid=$!
		sleep 0.7
		seg_memory "$hpid" "$t" || fail "$t thread(s)"
		wait "$hpid" || fail "the program failed: $(cat "$dir/got.err")"
		[ "$(cat "$dir/got.out")" = "done $((t * 5000))" ] || fail "$(cat "$dir/got.out")"
		# 5000 scopes a thread: even six threads on one ring cannot lap it,
		# so nothing is said
		[ ! -s "$dir/got.err" ] || fail "said: $(cat "$dir/got.err")"
	done
	;;
shm_full)
	in_small_shm 16M ORBIT_RING_BUDGET=8M ORBIT_CAPTURE="$dir/full.orbit.zst" "$host" fill_shm 1000
	[ "$(cat "$dir/got.out")" = "done 1000" ] || fail "stdout: $(cat "$dir/got.out")"
	grep -q "^orbit: cannot reserve the memory of ring [0-9]* ([0-9]* bytes) in /dev/shm: No space left on device; tracing is off$" \
		"$dir/got.err" || fail "no line for the full /dev/shm: $(cat "$dir/got.err")"
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	echo "$(cat "$dir/got.err")"
	;;
sched_exec)
	need_tracefs
	rm -f "$dir/pfifo"
	mkfifo "$dir/pfifo"
	env ORBIT_SCHED=1 ORBIT_CAPTURE="$dir/e.orbit.zst" "$host" exec 1000 1000 /bin/sleep 2 \
		>"$dir/pfifo" 2>"$dir/got.err" &
	hpid=$!
	exec 3<"$dir/pfifo"
	instance_of "$hpid"
	read -r line <&3 || fail "the program did not reach its exec"
	[ "$line" = exec ] || fail "the program said $line"
	off=
	for _ in $(seq 100); do
		[ "$(readlink "/proc/$hpid/exe")" = /usr/bin/sleep ] ||
			[ "$(readlink "/proc/$hpid/exe")" = /bin/sleep ] || { sleep 0.02; continue; }
		[ "$(cat "$inst/tracing_on")" = 0 ] && off=1 && break
		sleep 0.02
	done
	[ -n "$off" ] || fail "$inst still records the untraced image after the exec"
	wait "$hpid" || fail "the program failed: $(cat "$dir/got.err")"
	exec 3<&-
	rm -f /dev/shm/orbit-"$hpid"-* # the image before the exec left its segment
	[ -d "$inst" ] || fail "the instance went with its process (nothing removes it then)"
	env ORBIT_CAPTURE="$dir/n.orbit.zst" "$host" plain 10 >/dev/null 2>"$dir/next.err" ||
		fail "the next start failed"
	[ ! -d "$inst" ] || fail "the next traced start left $inst"
	echo "$inst stopped at the exec and went at the next start"
	;;
sched_killed)
	need_tracefs
	# killed: a leftover, still recording
	killed() {
		env ORBIT_SCHED=1 ORBIT_CAPTURE="$dir/k.orbit.zst" "$host" wait 10000 100 \
			>/dev/null 2>"$dir/got.err" &
		hpid=$!
		instance_of "$hpid"
		kill -KILL "$hpid"
		wait "$hpid" || true
		[ "$(cat "$inst/tracing_on")" = 1 ] ||
			fail "the killed process's instance stopped by itself"
	}
	killed
	"$build/dump/orbit-dump" --remove "$hpid" >"$dir/remove.out" 2>&1 ||
		fail "orbit-dump --remove: $(cat "$dir/remove.out")"
	grep -q "^removed 1 tracefs instance(s) of process $hpid$" "$dir/remove.out" ||
		fail "orbit-dump --remove said: $(cat "$dir/remove.out")"
	[ ! -d "$inst" ] || fail "orbit-dump --remove left $inst"
	echo "orbit-dump --remove $hpid removed $inst"
	killed
	rm -f /dev/shm/orbit-"$hpid"-* # its segment, evidence no test reads
	env ORBIT_CAPTURE="$dir/n.orbit.zst" "$host" plain 10 >/dev/null 2>"$dir/next.err" ||
		fail "the next start failed"
	[ ! -d "$inst" ] || fail "the next traced start, without ORBIT_SCHED, left $inst"
	echo "$inst left recording by SIGKILL went at the next start"
	;;
shm_small_logs)
	in_small_shm 16M ORBIT_PAGE_RING_PAGES=4096 ORBIT_CAPTURE="$dir/small.orbit.zst" \
		"$host" plain 5000
	[ "$(cat "$dir/got.out")" = "done 5000" ] || fail "stdout: $(cat "$dir/got.out")"
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	slots=$(sed -n 's/^orbit: \/dev\/shm has no room for a segment of [0-9]* bytes (No space left on device); using [0-9]* bytes: [0-9]* rings of \([0-9]*\) slots, log pages outside the segment$/\1/p' \
		"$dir/got.err")
	[ -n "$slots" ] || fail "the line: $(cat "$dir/got.err")"
	[ "$slots" -ge 1024 ] || fail "the rings shrank to $slots slots before the log pages left"
	"$dump" "$dir/small.orbit.zst" | grep -q "^records 10000, delivered 10000, lost 0" ||
		fail "the capture: $("$dump" "$dir/small.orbit.zst" | tail -n 2)"
	cat "$dir/got.err"
	;;
capture_symlink)
	printf 'precious bytes of another user\n' >"$dir/victim"
	cp "$dir/victim" "$dir/victim.orig"
	ln -s "$dir/victim" "$dir/app.orbit.zst"
	untraced plain 1000
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" "$host" plain 1000
	cmp "$dir/victim" "$dir/victim.orig" || fail "the victim was written"
	[ -L "$dir/app.orbit.zst" ] && [ "$(readlink "$dir/app.orbit.zst")" = "$dir/victim" ] ||
		fail "the link was replaced"
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	grep -q "^orbit: cannot create the capture $dir/app.orbit.zst: it is a symbolic link, which is not followed; tracing is off$" \
		"$dir/got.err" || fail "$(cat "$dir/got.err")"
	echo "as uid $(id -u): $(cat "$dir/got.err")"
	;;
capture_other_user)
	[ "$(id -u)" -eq 0 ] || { echo "needs root to make another user's file"; exit 77; }
	printf 'another user s capture\n' >"$dir/app.orbit.zst"
	cp "$dir/app.orbit.zst" "$dir/orig"
	chown 65534 "$dir/app.orbit.zst"
	untraced plain 1000
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" "$host" plain 1000
	cmp "$dir/app.orbit.zst" "$dir/orig" || fail "another user's file was written"
	[ "$(stat -c %u "$dir/app.orbit.zst")" -eq 65534 ] || fail "the file was replaced"
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	grep -q "it belongs to another user (uid 65534); tracing is off$" "$dir/got.err" ||
		fail "$(cat "$dir/got.err")"
	;;
capture_rerun)
	untraced plain 1000
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" "$host" plain 1000
	[ ! -s "$dir/got.err" ] || fail "the first run said: $(cat "$dir/got.err")"
	ln "$dir/app.orbit.zst" "$dir/first.orbit.zst"
	cp "$dir/app.orbit.zst" "$dir/first.copy"
	untraced plain 500
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" "$host" plain 500
	[ ! -s "$dir/got.err" ] || fail "the second run said: $(cat "$dir/got.err")"
	cmp "$dir/first.orbit.zst" "$dir/first.copy" || fail "the first capture was truncated or written"
	"$dump" "$dir/first.orbit.zst" | grep -q "^records 2000, delivered 2000, lost 0" ||
		fail "the first capture: $("$dump" "$dir/first.orbit.zst" | tail -n 2)"
	"$dump" "$dir/app.orbit.zst" | grep -q "^records 1000, delivered 1000, lost 0" ||
		fail "the second capture: $("$dump" "$dir/app.orbit.zst" | tail -n 2)"
	[ "$(ls "$dir" | grep -c tmp)" -eq 0 ] || fail "a temporary file was left: $(ls "$dir")"
	;;
capture_busy)
	: >"$dir/app.orbit.zst"
	untraced plain 1000
	flock "$dir/app.orbit.zst" sh -c "touch $dir/locked; sleep 3" &
	lpid=$!
	while [ ! -e "$dir/locked" ]; do sleep 0.05; done
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" "$host" plain 1000
	wait "$lpid"
	[ ! -s "$dir/app.orbit.zst" ] || fail "the locked file was written"
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	alt=$(sed -n "s|^orbit: the capture $dir/app.orbit.zst is being written by another process; writing \(.*\)$|\1|p" "$dir/got.err")
	[ -n "$alt" ] || fail "$(cat "$dir/got.err")"
	"$dump" "$alt" | grep -q "^records 2000, delivered 2000, lost 0" || fail "$alt: $("$dump" "$alt" | tail -n 2)"
	;;
capture_fsize)
	# 512-byte blocks (dash, POSIX): 256 KiB. One small ring and the
	# smallest log page rings keep the segment (its object in /dev/shm
	# counts too, with its state area and log pages) under it.
	limit=$((512 * 512))
	untraced plain 2000000 1000000
	(
		ulimit -f 512
		traced ORBIT_CAPTURE="$dir/app.orbit.zst" ORBIT_RINGS=1 ORBIT_RING_BUDGET=128K \
			ORBIT_PAGE_RING_PAGES=2 "$host" plain 2000000 1000000
	) || exit 1
	[ "$(lines "$dir/got.err")" -le 2 ] || fail "want at most two lines: $(cat "$dir/got.err")"
	grep -q "^orbit: cannot write the capture $dir/app.orbit.zst: File too large (the file size limit, RLIMIT_FSIZE, is $limit bytes); tracing is off$" \
		"$dir/got.err" || fail "$(cat "$dir/got.err")"
	size=$(stat -c %s "$dir/app.orbit.zst")
	[ "$size" -le "$limit" ] && [ "$size" -gt $((limit / 2)) ] || fail "size $size, limit $limit"
	if command -v zstd >/dev/null; then
		zstd -q -t "$dir/app.orbit.zst" || fail "a frame is not complete"
	fi
	set +e
	"$dump" "$dir/app.orbit.zst" >"$dir/out" 2>"$dir/dump.err"
	rc=$?
	set -e
	[ $rc -eq 1 ] && ! grep -q offset "$dir/dump.err" || fail "capture_dump $rc: $(cat "$dir/dump.err" "$dir/out")"
	echo "$size bytes of complete frames; $(cat "$dir/got.err")"
	;;
fds_*)
	if [ "$case_" = fds_sweep ]; then counts="0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16"; else counts=${case_#fds_}; fi
	untraced fds 0 2000
	for k in $counts; do
		rm -f "$dir/app.orbit.zst"
		traced GUEST_CAPTURE="$dir/app.orbit.zst" "$host" fds "$k" 2000
		[ "$(lines "$dir/got.err")" -le 1 ] || fail "$k free: more than one line: $(cat "$dir/got.err")"
		if [ -s "$dir/got.err" ]; then
			echo "$k free: $(cat "$dir/got.err")"
		else
			"$dump" "$dir/app.orbit.zst" | grep -q "^records 4000, delivered 4000, lost 0" ||
				fail "$k free: no line and no complete capture"
			echo "$k free: traced, complete capture"
		fi
	done
	;;
signals)
	untraced signals 2000
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" GUEST_EXPECT_AGENT=1 "$host" signals 2000
	[ ! -s "$dir/got.err" ] || fail "$(cat "$dir/got.err")"
	cat "$dir/got.out"
	;;
threads)
	# A host name, so that the resolver runs; then, at a second and at 3 s
	# into the stream, the threads: the program's and the agent's.
	start_collector localhost:0
	port=${addr##*:}
	env ORBIT_COLLECTOR="localhost:$port" "$host" threads >"$dir/got.out" 2>"$dir/got.err" ||
		fail "the program failed: $(cat "$dir/got.err")"
	[ ! -s "$dir/got.err" ] || fail "the agent said: $(cat "$dir/got.err")"
	printf 'guest_host\norbit-agent\n--\nguest_host\norbit-agent\n' >"$dir/want"
	cmp -s "$dir/got.out" "$dir/want" || fail "threads: $(tr '\n' ' ' <"$dir/got.out")"
	# and they are the ones docs/operations.md lists
	for t in orbit-agent orbit-resolve; do
		grep -q "^| \`$t\` |" "$docs" || fail "docs/operations.md does not list $t"
	done
	kill -TERM "$cpid"
	wait "$cpid" || true
	cpid=
	ls "$dir/captures"/*.orbit.zst >/dev/null 2>&1 || fail "no capture: the name was not resolved"
	;;
capture_long)
	untraced plain 1000
	mkdir "$dir/long"
	# $dir/long/././.../trunc-capture.orbit.zst, 4107 bytes: cut at 4095 it
	# would name $dir/long/trunc-captu
	long=$(python3 -c '
import sys
pre = sys.argv[1] + "/"
k, r = divmod(4084 - len(pre), 2)
print(pre + "./" * k + "/" * r + "trunc-capture.orbit.zst")' "$dir/long")
	traced ORBIT_CAPTURE="$long" "$host" plain 1000
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "want one line: $(cat "$dir/got.err")"
	grep -q "^orbit: ORBIT_CAPTURE is 4107 bytes long, longer than a path can be" "$dir/got.err" ||
		fail "$(cat "$dir/got.err")"
	[ -z "$(ls -A "$dir/long")" ] || fail "a file at a cut-short path: $(ls "$dir/long")"
	start_collector
	traced ORBIT_CAPTURE="$long" ORBIT_COLLECTOR="$addr" "$host" plain 1000
	stop_collector
	[ "$(lines "$dir/got.err")" -eq 1 ] || fail "beside a collector, want one line: $(cat "$dir/got.err")"
	[ -z "$(ls -A "$dir/long")" ] || fail "a file at a cut-short path: $(ls "$dir/long")"
	;;
pthread_exit)
	untraced pthread_exit 4000
	# at most 30 s: the agent's thread alone must not keep the process alive
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" timeout -s KILL 30 "$host" pthread_exit 4000
	[ ! -s "$dir/got.err" ] || fail "the agent said: $(cat "$dir/got.err")"
	"$dump" "$dir/app.orbit.zst" >"$dir/dump" || fail "capture incomplete: $(cat "$dir/dump")"
	grep -q "^records \([0-9]*\), delivered \1, lost 0, claimed \1$" "$dir/dump" ||
		fail "capture: $(grep '^records' "$dir/dump")"
	n=$(sed -n 's/^records \([0-9]*\),.*/\1/p' "$dir/dump")
	[ "$n" -ge 16000 ] || fail "want the workers' 16000 records, have $n"
	start_collector
	traced ORBIT_COLLECTOR="$addr" timeout -s KILL 30 "$host" pthread_exit 4000
	stop_collector
	f=$(captures)
	[ -n "$f" ] || fail "the collector wrote no capture"
	"$dump" "$f" >"$dir/dump" || fail "collector's capture incomplete: $(cat "$dir/dump")"
	grep -q "^records \([0-9]*\), delivered \1, lost 0, claimed \1$" "$dir/dump" ||
		fail "collector's capture: $(grep '^records' "$dir/dump")"
	;;
close_closefrom | close_loop)
	how=${case_#close_}
	export GUEST_DIR="$dir"
	untraced close "$how" 20000
	grep -q "^files intact$" "$dir/want.out" || fail "untraced: $(cat "$dir/want.out")"
	# every record: 2 per scope, 40000 scopes
	whole() {
		"$dump" "$1" >"$dir/dump" || fail "$2: capture incomplete: $(cat "$dir/dump")"
		grep -q "^records 80000, delivered 80000, lost 0, claimed 80000$" "$dir/dump" ||
			fail "$2: $(grep '^records' "$dir/dump")"
	}
	traced ORBIT_CAPTURE="$dir/app.orbit.zst" timeout -s KILL 30 "$host" close "$how" 20000
	[ ! -s "$dir/got.err" ] || fail "the agent said: $(cat "$dir/got.err")"
	whole "$dir/app.orbit.zst" ORBIT_CAPTURE
	start_collector
	traced ORBIT_COLLECTOR="$addr" timeout -s KILL 30 "$host" close "$how" 20000
	stop_collector
	[ ! -s "$dir/got.err" ] || fail "beside a collector, the agent said: $(cat "$dir/got.err")"
	f=$(captures)
	[ -n "$f" ] || fail "the collector wrote no capture"
	whole "$f" ORBIT_COLLECTOR
	traced ORBIT_FLIGHT=8M timeout -s KILL 30 "$host" close "$how" 20000
	[ ! -s "$dir/got.err" ] || fail "with a flight ring, the agent said: $(cat "$dir/got.err")"
	echo "closefrom and reuse: $how, three outputs, every record"
	;;
pthread_exit_term)
	# status_of ENV...: started, SIGTERM after half a second, its exit status
	# (a watchdog kills it after 20 s: 137)
	status_of() {
		env "$@" "$host" pthread_exit_forever >/dev/null 2>"$dir/got.err" &
		pid=$!
		sleep 0.5
		kill -TERM "$pid"
		(sleep 20 && kill -KILL "$pid") >/dev/null 2>&1 &
		watchdog=$!
		set +e
		wait "$pid"
		rc=$?
		set -e
		kill "$watchdog" 2>/dev/null || true
		rm -f /dev/shm/orbit-"$pid"-* # its segment, evidence no test reads
		echo "$rc"
	}
	want=$(status_of -u ORBIT_CAPTURE -u ORBIT_COLLECTOR)
	[ "$want" -eq 143 ] || fail "untraced, SIGTERM gave status $want"
	got=$(status_of ORBIT_CAPTURE="$dir/app.orbit.zst")
	[ "$got" -eq "$want" ] || fail "traced, SIGTERM gave status $got, untraced $want"
	;;
*)
	fail "unknown case"
	;;
esac
echo "guest $case_: ok"
