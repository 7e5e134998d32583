#!/bin/sh
# transport_collector.sh BUILD_DIR CASE — the agent streaming to a real
# orbit-collector on loopback, and the faults it must survive:
#   e2e           three instrumented processes at once, three threads each: in
#                 each capture every record delivered is the one emitted at its
#                 place, in each thread's order, and claimed == delivered + lost
#                 exactly (capture_dump --emit; loss is allowed, and counted)
#   copy          ORBIT_COLLECTOR and ORBIT_CAPTURE together: the local copy and
#                 the collector's file are the same bytes
#   agent_killed  the agent is SIGKILLed mid-stream: its capture keeps every
#                 complete frame (zstd -t passes), no end of stream
#   torn_tail     a capture whose last frame is torn reads up to it, and the
#                 damage is reported at that frame's offset only
#   collector_restart  the collector is SIGKILLed and restarted on its port: the
#                 agent reconnects, the new capture counts the loss exactly
#   no_collector  nobody listens: the program runs to the end, one stderr line
#                 for the failure and one at exit for what was not delivered
#   refused       a wrong token: one stderr line, tracing off, no file
set -eu
build=$1
case_=$2
test_name=transport_collector
. "$(dirname "$0")/collector_harness.sh"
emit=$build/examples/emit
dump=$build/tests/capture_dump

ztest() {
	if command -v zstd >/dev/null; then
		zstd -q -t "$1" || fail "zstd -t $1 failed"
	fi
}

case $case_ in
e2e)
	start_collector 127.0.0.1:0
	pids=
	for n in 1 2 3; do
		ORBIT_COLLECTOR=$addr ORBIT_RING_BUDGET=64M \
			"$emit" --threads 3 --iterations 20000 --rate 500000 &
		pids="$pids $!"
	done
	for p in $pids; do
		wait "$p" || fail "emit failed"
	done
	stop_collector
	[ "$(captures | wc -l)" -eq 3 ] || fail "want 3 captures, have: $(captures)"
	for f in $(captures); do
		ztest "$f"
		"$dump" --emit 3 20000 "$f" >/dev/null || fail "$f does not hold what was emitted"
	done
	;;
copy)
	start_collector 127.0.0.1:0
	ORBIT_COLLECTOR=$addr ORBIT_CAPTURE=$dir/copy.orbit.zst ORBIT_RING_BUDGET=64M \
		"$emit" --threads 2 --iterations 20000 --rate 500000 || fail "emit failed"
	stop_collector
	f=$(captures)
	[ -n "$f" ] || fail "no capture"
	cmp "$f" "$dir/copy.orbit.zst" || fail "the copy differs from what the collector received"
	"$dump" --emit 2 20000 "$f" >/dev/null || fail "$f does not hold what was emitted"
	;;
agent_killed)
	start_collector 127.0.0.1:0
	ORBIT_COLLECTOR=$addr "$emit" --threads 2 --iterations 10000000 --rate 400000 &
	epid=$!
	sleep 1
	kill -9 "$epid"
	wait "$epid" 2>/dev/null || true
	rm -f /dev/shm/orbit-"$epid"-* # the dead process's segment, kept as evidence
	sleep 0.3
	stop_collector
	f=$(captures)
	[ -n "$f" ] || fail "no capture"
	ztest "$f"
	set +e
	"$dump" "$f" >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
	[ $rc -eq 1 ] || fail "capture_dump exit $rc, want 1 (complete frames, no end of stream)"
	grep -q "no end of stream" "$dir/out" || fail "the capture should have no end of stream"
	grep -q "offset" "$dir/err" && fail "damage reported in a collector's capture"
	;;
torn_tail)
	ORBIT_CAPTURE=$dir/whole.orbit.zst ORBIT_RING_BUDGET=64M \
		"$emit" --threads 2 --iterations 20000 --rate 1000000 || fail "emit failed"
	size=$(stat -c %s "$dir/whole.orbit.zst")
	head -c $((size - 7)) "$dir/whole.orbit.zst" >"$dir/torn.orbit.zst"
	if command -v zstd >/dev/null; then
		zstd -q -t "$dir/torn.orbit.zst" 2>/dev/null && fail "zstd -t passed a torn capture"
	fi
	set +e
	"$dump" "$dir/torn.orbit.zst" >"$dir/out" 2>"$dir/err"
	rc=$?
	set -e
	[ $rc -eq 2 ] || fail "capture_dump exit $rc on a torn capture, want 2"
	[ "$(grep -c offset "$dir/err")" -eq 1 ] || fail "want one problem: $(cat "$dir/err")"
	# everything but the last frame: the records of the whole capture minus
	# those of its last frame, which holds the end of stream
	grep -q "no end of stream" "$dir/out" || fail "the torn frame's end of stream was read"
	whole=$("$dump" "$dir/whole.orbit.zst" | sed -n 's/^records \([0-9]*\),.*/\1/p')
	torn=$(sed -n 's/^records \([0-9]*\),.*/\1/p' "$dir/out")
	[ "$torn" -gt 0 ] && [ "$torn" -le "$whole" ] || fail "read $torn of $whole records"
	;;
collector_restart)
	start_collector 127.0.0.1:0
	port=${addr##*:}
	ORBIT_COLLECTOR=$addr "$emit" --threads 2 --iterations 600000 --rate 1000000 \
		2>"$dir/agent.err" &
	epid=$!
	sleep 0.7
	kill -9 "$cpid"
	wait "$cpid" 2>/dev/null || true
	cpid=
	sleep 0.5
	start_collector "127.0.0.1:$port"
	wait "$epid" || fail "emit failed"
	stop_collector
	[ "$(captures | wc -l)" -eq 2 ] || fail "want 2 captures, have: $(captures)"
	second=$(ls -t "$dir/captures"/*.orbit.zst | head -n 1)
	"$dump" "$second" >"$dir/out" || fail "the second capture is not complete and exact"
	lost=$(sed -n 's/^records .*, lost \([0-9]*\),.*/\1/p' "$dir/out")
	[ "$lost" -gt 0 ] || fail "the outage's loss is not counted: $(cat "$dir/out")"
	[ "$(grep -c "connection to collector .* lost" "$dir/agent.err")" -le 1 ] ||
		fail "more than one line: $(cat "$dir/agent.err")"
	;;
no_collector)
	# a port nobody listens on: bind it and close it again
	# Two lines: the first failure, and at exit (the refused attempt made
	# then ends the wait at once) how much was not delivered; and, if the
	# agent looked while the rings overflowed, the loss line.
	ORBIT_COLLECTOR=127.0.0.1:1 ORBIT_FLUSH_TIMEOUT_MS=500 "$emit" --threads 2 \
		--iterations 200000 2>"$dir/agent.err" || fail "emit failed"
	[ "$(grep -vc "^orbit: events are being lost: " "$dir/agent.err")" -eq 2 ] ||
		fail "want two stderr lines: $(cat "$dir/agent.err")"
	[ "$(grep -c "^orbit: events are being lost: " "$dir/agent.err")" -le 1 ] ||
		fail "the loss said more than once: $(cat "$dir/agent.err")"
	grep -q "cannot reach collector 127.0.0.1:1" "$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	# 2 x (1 + 5 x 200000) records and each thread's thread-end record
	grep -q "^orbit: 2000004 event(s) were not delivered: collector 127.0.0.1:1 not reached (connection refused)$" \
		"$dir/agent.err" || fail "$(cat "$dir/agent.err")"
	;;
refused)
	printf 'right\n' >"$dir/token"
	start_collector 127.0.0.1:0 --token-file "$dir/token"
	ORBIT_COLLECTOR=$addr ORBIT_TOKEN=wrong "$emit" --threads 2 --iterations 100000 \
		2>"$dir/agent.err" || fail "emit failed"
	stop_collector
	# One line, the refusal; and, if the agent looked while the rings
	# overflowed before the answer came, the loss line before it. Nothing
	# after it: tracing is off.
	[ "$(grep -vc "^orbit: events are being lost: " "$dir/agent.err")" -eq 1 ] ||
		fail "want one stderr line: $(cat "$dir/agent.err")"
	[ "$(grep -c "^orbit: events are being lost: " "$dir/agent.err")" -le 1 ] ||
		fail "the loss said more than once: $(cat "$dir/agent.err")"
	tail -n 1 "$dir/agent.err" | grep -q "refused this process (wrong token); tracing is off" ||
		fail "a line after the refusal, or none: $(cat "$dir/agent.err")"
	[ -z "$(captures)" ] || fail "a file was created: $(captures)"
	;;
*)
	fail "unknown case"
	;;
esac
echo "transport_collector $case_: ok"
