#!/bin/sh
# transport_spool.sh BUILD_DIR CASE — the spool beside a collector (ORBIT_SPOOL,
# output_composite.c) and orbit-collector --ingest, with real agents and a real
# collector on loopback:
#   closed       ORBIT_COLLECTOR names a port nobody listens on: one line naming
#                the spool file, no wait at exit, and the spool is a capture of
#                the whole trace (every record where it was emitted, the
#                equation exact; orbit-replay reads it)
#   default_dir  without ORBIT_SPOOL the file goes to $XDG_STATE_HOME/orbit/spool,
#                else $HOME/.local/state/orbit/spool, mode 0600
#   off          ORBIT_SPOOL=off: no file, and a refused connection ends the
#                wait at exit at once (the end-of-run line says what was lost)
#   killed       the collector is SIGKILLed mid-run: what it never acknowledged
#                and the rest of the run are in the spool; ingested, the
#                collector's directory holds every event once (capture_chain:
#                claimed == emitted == delivered + found in unacknowledged
#                frames + overwritten), and ingesting again adds nothing
#   overlap      a collector's capture that holds more than the spool's start
#                (frames it wrote and never acknowledged) and ends torn: ingest
#                makes it the complete capture, byte for byte
#   hostile      a damaged spool, a file that is no capture: refused, one line
#                each, the directory unchanged
#   planted      a spool directory made by another user, a symbolic link in its
#                place, one others may write: refused, one line, nothing
#                written there, and the run ends as without a spool
#   older        a collector older than the agent refuses its protocol version
#                (the previous release's refusal, byte for byte: fake_peer
#                --older): one line, and the trace is in the spool, or in the
#                local copy (ORBIT_CAPTURE), or with neither tracing is off
set -eu
build=$1
case_=$2
test_name=transport_spool
. "$(dirname "$0")/collector_harness.sh"
emit=$build/examples/emit
dump=$build/tests/capture_dump
chain=$build/tests/capture_chain
replay=$build/replay/orbit-replay
frames="python3 $(dirname "$0")/../tools/zstd_frames.py"
unset ORBIT_SPOOL
mkdir -p "$dir/captures"

# elapsed COMMAND...: runs it, its wall time in ms in $ms
elapsed() {
	t0=$(date +%s%N)
	"$@"
	ms=$((($(date +%s%N) - t0) / 1000000))
}

case $case_ in
closed)
	# A wait at exit would last until ORBIT_FLUSH_TIMEOUT_MS, 20 s.
	elapsed env ORBIT_COLLECTOR=127.0.0.1:1 ORBIT_SPOOL="$dir/spool" \
		ORBIT_FLUSH_TIMEOUT_MS=20000 "$emit" --threads 2 --iterations 20000 \
		--rate 500000 2>"$dir/agent.err" || fail "emit failed"
	[ "$ms" -lt 10000 ] || fail "the agent waited at exit: $ms ms"
	[ "$(wc -l <"$dir/agent.err")" -eq 1 ] || fail "want one line: $(cat "$dir/agent.err")"
	f=$(ls "$dir/spool"/emit-*.orbit.zst)
	[ "$(echo "$f" | wc -l)" -eq 1 ] || fail "want one spool file: $f"
	grep -q "^orbit: collector 127.0.0.1:1 is not answering (connection refused); the trace goes to the spool $f " \
		"$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	"$dump" --emit 2 20000 "$f" >"$dir/out" || fail "the spool does not hold the trace: $(cat "$dir/out")"
	grep -q "lost 0," "$dir/out" || fail "records lost: $(cat "$dir/out")"
	"$replay" "$f" >"$dir/summary" 2>&1 || fail "orbit-replay: $(cat "$dir/summary")"
	grep -q "^  equation .*: holds$" "$dir/summary" || fail "$(cat "$dir/summary")"
	;;
default_dir)
	env ORBIT_COLLECTOR=127.0.0.1:1 XDG_STATE_HOME="$dir/state" "$emit" --threads 1 \
		--iterations 100 2>"$dir/agent.err" || fail "emit failed"
	f=$(ls "$dir/state/orbit/spool"/emit-*.orbit.zst) || fail "not in XDG_STATE_HOME"
	[ "$(stat -c %a "$f")" = 600 ] || fail "$f is mode $(stat -c %a "$f")"
	[ "$(stat -c %a "$dir/state/orbit/spool")" = 700 ] || fail "the directory is not 0700"
	env -u XDG_STATE_HOME ORBIT_COLLECTOR=127.0.0.1:1 HOME="$dir/home" "$emit" --threads 1 \
		--iterations 100 2>"$dir/agent.err" || fail "emit failed"
	f=$(ls "$dir/home/.local/state/orbit/spool"/emit-*.orbit.zst) || fail "not under HOME"
	"$dump" --emit 1 100 "$f" >/dev/null || fail "$f does not hold the trace"
	;;
off)
	elapsed env ORBIT_COLLECTOR=127.0.0.1:1 ORBIT_SPOOL=off HOME="$dir/home" \
		ORBIT_FLUSH_TIMEOUT_MS=20000 "$emit" --threads 2 --iterations 1000 \
		2>"$dir/agent.err" || fail "emit failed"
	[ "$ms" -lt 10000 ] || fail "the agent waited at exit for a refused collector: $ms ms"
	[ ! -e "$dir/home" ] || fail "a spool was made: $(find "$dir/home")"
	grep -q "^orbit: 10004 event(s) were not delivered: collector 127.0.0.1:1 not reached (connection refused)$" \
		"$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	;;
killed)
	start_collector 127.0.0.1:0
	# 2 threads x 25000 iterations/s x 5 records: the 64k slots of a ring
	# hold half a second of a thread's records
	ORBIT_COLLECTOR=$addr ORBIT_SPOOL="$dir/spool" "$emit" --threads 2 --iterations 40000 \
		--rate 25000 2>"$dir/agent.err" &
	epid=$!
	sleep 0.6
	kill -9 "$cpid"
	wait "$cpid" 2>/dev/null || true
	cpid=
	wait "$epid" || fail "emit failed"
	grep -q "^orbit: collector $addr is not answering (connection refused); the trace goes to the spool " \
		"$dir/agent.err" || fail "no spool line"
	[ "$(captures | wc -l)" -eq 1 ] || fail "want the collector's one capture: $(captures)"
	"$collector" --ingest --dir "$dir/captures" "$dir/spool"/*.orbit.zst >"$dir/ingest" \
		2>&1 || fail "ingest: $(cat "$dir/ingest")"
	sha256sum "$dir/captures"/* >"$dir/sums"
	# 2 x (1 + 5 x 40000) records and each thread's thread-end record
	"$chain" --emitted 400004 "$dir/captures"/*.orbit.zst >"$dir/chain" ||
		fail "the account does not hold: $(cat "$dir/chain")"
	over=$(sed -n 's/^orbit: \([0-9]*\) of [0-9]* event(s) .* overwritten .*/\1/p' "$dir/agent.err")
	line=$(grep "^process " "$dir/chain")
	d=$(echo "$line" | sed -n 's/.*delivered \([0-9]*\),.*/\1/p')
	u=$(echo "$line" | sed -n 's/.*found in unacknowledged frames \([0-9]*\).*/\1/p')
	[ $((d + ${u:-0} + ${over:-0})) -eq 400004 ] ||
		fail "not every event is there once: $line (overwritten ${over:-0})"
	"$collector" --ingest --dir "$dir/captures" "$dir/spool"/*.orbit.zst >"$dir/again" \
		2>&1 || fail "ingest again: $(cat "$dir/again")"
	[ "$(grep -c "nothing new" "$dir/again")" -eq "$(ls "$dir/spool" | wc -l)" ] ||
		fail "the second ingest took something: $(cat "$dir/again")"
	sha256sum -c --quiet "$dir/sums" || fail "the second ingest changed a capture"
	;;
overlap)
	ORBIT_CAPTURE="$dir/whole.orbit.zst" ORBIT_ZSTD_LEVEL=1 "$emit" --threads 2 \
		--iterations 60000 --rate 1000000 || fail "emit failed"
	n=$($frames "$dir/whole.orbit.zst" | wc -l)
	[ "$n" -ge 8 ] || fail "want 8 frames or more, have $n"
	half=$((n / 2))
	# the collector's: frames 0..half, then 9 bytes of the next; the spool:
	# the Handshake, then from three frames before the collector's end
	$frames "$dir/whole.orbit.zst" "$dir/captures/emit-1-20260101T000000Z.orbit.zst" 0 \
		$((half + 1)) 9
	$frames "$dir/whole.orbit.zst" "$dir/spool.orbit.zst" $((half - 2)) end
	"$collector" --ingest --dir "$dir/captures" "$dir/spool.orbit.zst" >"$dir/ingest" 2>&1 ||
		fail "ingest: $(cat "$dir/ingest")"
	grep -q "frame(s) appended to .* (3 were there)" "$dir/ingest" || fail "$(cat "$dir/ingest")"
	cmp "$dir/whole.orbit.zst" "$dir/captures/emit-1-20260101T000000Z.orbit.zst" ||
		fail "the ingested capture is not the whole stream"
	"$collector" --ingest --dir "$dir/captures" "$dir/spool.orbit.zst" >"$dir/again" 2>&1 ||
		fail "ingest again: $(cat "$dir/again")"
	grep -q "nothing new" "$dir/again" || fail "$(cat "$dir/again")"
	cmp "$dir/whole.orbit.zst" "$dir/captures/emit-1-20260101T000000Z.orbit.zst" ||
		fail "the second ingest changed the capture"
	# A spool of a stream the directory does not have: a new capture of its own
	"$collector" --ingest --dir "$dir/other" "$dir/whole.orbit.zst" >"$dir/new" 2>&1 ||
		fail "ingest: $(cat "$dir/new")"
	grep -q "a new capture $dir/other/emit-.*.orbit.zst, $((n - 1)) frame(s)" "$dir/new" ||
		fail "$(cat "$dir/new")"
	cmp "$dir/whole.orbit.zst" "$dir/other"/emit-*.orbit.zst || fail "the new capture differs"
	;;
hostile)
	ORBIT_CAPTURE="$dir/whole.orbit.zst" "$emit" --threads 1 --iterations 20000 ||
		fail "emit failed"
	cp "$dir/whole.orbit.zst" "$dir/bad.orbit.zst"
	size=$(stat -c %s "$dir/bad.orbit.zst")
	printf '\377\377\377\377' | dd of="$dir/bad.orbit.zst" bs=1 seek=$((size / 2)) \
		conv=notrunc 2>/dev/null
	head -c 4096 /dev/urandom >"$dir/noise"
	for f in "$dir/bad.orbit.zst" "$dir/noise" "$dir/missing"; do
		set +e
		"$collector" --ingest --dir "$dir/captures" "$f" >"$dir/out" 2>&1
		rc=$?
		set -e
		[ $rc -eq 1 ] || fail "ingest of $f: exit $rc"
		[ "$(wc -l <"$dir/out")" -eq 1 ] || fail "want one line: $(cat "$dir/out")"
		grep -q "^orbit-collector: $f" "$dir/out" || fail "the line names no file: $(cat "$dir/out")"
		[ -z "$(captures)" ] || fail "$f left a capture: $(captures)"
	done
	grep -q "nothing taken" "$dir/out" || true
	set +e
	"$collector" --ingest --dir "$dir/captures" >"$dir/out" 2>&1
	rc=$?
	set -e
	[ $rc -eq 1 ] && grep -q "needs the spool files" "$dir/out" || fail "--ingest alone: $(cat "$dir/out")"
	;;
planted)
	mkdir -p "$dir/target" "$dir/shared"
	chmod 777 "$dir/shared"
	ln -s "$dir/target" "$dir/link"
	set -- "$dir/link" "$dir/shared"
	if [ "$(id -u)" = 0 ]; then
		mkdir "$dir/theirs"
		chown nobody "$dir/theirs"
		set -- "$@" "$dir/theirs"
	fi
	for d in "$@"; do
		ORBIT_COLLECTOR=127.0.0.1:1 ORBIT_SPOOL=$d "$emit" --threads 1 --iterations 100 \
			2>"$dir/agent.err" || fail "emit failed"
		grep -q "^orbit: cannot make the spool directory $d: it is not .*; no spool$" \
			"$dir/agent.err" || fail "$d: $(cat "$dir/agent.err")"
		grep -q "^orbit: 502 event(s) were not delivered: collector 127.0.0.1:1 not reached (connection refused)$" \
			"$dir/agent.err" || fail "$d: $(cat "$dir/agent.err")"
	done
	left=$(find "$dir/target" "$dir/shared" "$dir/theirs" -mindepth 1 2>/dev/null)
	[ -z "$left" ] || fail "a file was written: $left"
	;;
older)
	mkfifo "$dir/pfifo"
	"$build/tests/fake_peer" --older >"$dir/pfifo" &
	ppid_=$!
	exec 3<"$dir/pfifo"
	read -r line <&3 || fail "fake_peer did not start"
	target=${line#listening on }
	older="^orbit: collector $target is older than this agent (protocol version 3, this collector speaks 2)"
	ORBIT_COLLECTOR=$target ORBIT_SPOOL="$dir/spool" "$emit" --threads 2 --iterations 5000 \
		2>"$dir/agent.err" || fail "emit failed"
	[ "$(wc -l <"$dir/agent.err")" -eq 1 ] || fail "want one line: $(cat "$dir/agent.err")"
	f=$(ls "$dir/spool"/emit-*.orbit.zst)
	grep -q "$older; the trace goes to the spool $f " "$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	"$dump" --emit 2 5000 "$f" >/dev/null || fail "the spool does not hold the trace"
	ORBIT_COLLECTOR=$target ORBIT_SPOOL=off ORBIT_CAPTURE="$dir/copy.orbit.zst" "$emit" \
		--threads 2 --iterations 5000 2>"$dir/agent.err" || fail "emit failed"
	[ "$(wc -l <"$dir/agent.err")" -eq 1 ] || fail "want one line: $(cat "$dir/agent.err")"
	grep -q "$older; the trace is in the local copy only$" "$dir/agent.err" ||
		fail "$(cat "$dir/agent.err")"
	"$dump" --emit 2 5000 "$dir/copy.orbit.zst" >/dev/null || fail "the copy does not hold the trace"
	ORBIT_COLLECTOR=$target ORBIT_SPOOL=off "$emit" --threads 2 --iterations 5000 \
		2>"$dir/agent.err" || fail "emit failed"
	[ "$(wc -l <"$dir/agent.err")" -eq 1 ] || fail "want one line: $(cat "$dir/agent.err")"
	grep -q "$older; tracing is off$" "$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	;;
*)
	fail "unknown case"
	;;
esac
