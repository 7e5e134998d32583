#!/bin/sh
# loss_agree.sh BUILD_DIR CASE — orbit-collector and orbit-replay say the
# same loss for the same capture (docs/format.md section 6: one account,
# format/loss.h). Real traced processes stream to a real collector on
# loopback; for every capture it wrote, the three numbers of its line
# ("N events lost (R records of the scope rings, L log records, K kernel
# events)") must be those of orbit-replay's summary of that file alone
# ("loss R records: ...", "log records lost L", "kernel ... lost K"). And
# the numbers must be the true ones: where the stream is complete, its
# equation holds (claimed == delivered + lost), and claimed is what the
# program says it emitted. Each case makes one kind of loss, and fails if
# that loss is not in the stream:
#   lapped     one 16-slot ring (ORBIT_RING_BUDGET=1K), two threads flat
#              out: producers lap the drain
#   dead_link  the link passes nothing after 300 KB (tcp_proxy): the agent
#              drops the connection, reconnects, and the next streams' Loss
#              packets carry `unsent` (records of frames never acknowledged),
#              which is no loss of theirs
#   flight     ORBIT_FLIGHT=1M, a spinner killed after its flight ring
#              overwrote frames, orbit-dump's capture of its segment sent to
#              the collector as a stream: Loss.flight_dropped
#   at_end     a program that exits with a claim it never published:
#              Loss.at_end
set -eu
build=$1
case_=$2
test_name=loss_agree
. "$(dirname "$0")/collector_harness.sh"
replay=$build/replay/orbit-replay
producer=$build/tests/pipeline_producer
unpublished=$build/tests/loss_unpublished
victim=$build/tests/flight_victim
dumper=$build/dump/orbit-dump
proxy=$build/tests/tcp_proxy
chain=$build/tests/capture_chain
emit=$build/examples/emit

# collector_says FILE: "R L K", the collector's numbers for capture FILE
collector_says() {
	name=$(basename "$1")
	line=$(grep -F "/$name: " "$dir/collector.log" | grep " events lost" | tail -n 1)
	[ -n "$line" ] || fail "no collector line for $name"
	if echo "$line" | grep -q "bytes, 0 events lost"; then
		echo "0 0 0"
		return
	fi
	says=$(echo "$line" | sed -n 's/.* \([0-9]*\) events lost (\([0-9]*\) records of the scope rings, \([0-9]*\) log records, \([0-9]*\) kernel events).*/\1 \2 \3 \4/p')
	[ -n "$says" ] || fail "the collector's line does not say its loss: $line"
	set -- $says
	[ "$1" -eq $(($2 + $3 + $4)) ] || fail "the collector's total is not its parts: $line"
	echo "$2 $3 $4"
}

# replay_says FILE: "R L K", orbit-replay's summary of FILE alone (kept in
# $dir/replay.out)
replay_says() {
	"$replay" "$1" >"$dir/replay.out" 2>"$dir/replay.err" || true
	loss=$(grep '^  loss ' "$dir/replay.out") || fail "orbit-replay says no loss line for $1: $(cat "$dir/replay.err")"
	case $loss in
	*none) r=0 ;;
	*) r=$(echo "$loss" | sed -n 's/^  loss *\([0-9]*\) records:.*/\1/p') ;;
	esac
	[ -n "$r" ] || fail "orbit-replay's loss line: $loss"
	l=$(sed -n 's/^ *log records lost \([0-9]*\),.*/\1/p' "$dir/replay.out")
	k=$(sed -n 's/^  kernel .*; lost \([0-9]*\) (.*/\1/p' "$dir/replay.out")
	echo "$r ${l:-0} ${k:-0}"
}

# agree FILE: both say the same; prints them
agree() {
	c=$(collector_says "$1")
	r=$(replay_says "$1")
	[ "$c" = "$r" ] ||
		fail "$(basename "$1"): the collector says $c, orbit-replay says $r (records, log records, kernel events)"
	echo "$(basename "$1"): both say $c"
}

# field NAME: the number after NAME in orbit-replay's loss line
field() {
	grep '^  loss ' "$dir/replay.out" | sed -n "s/.*[:,] $1 \([0-9]*\).*/\1/p"
}

# holds [CLAIMED]: the last summary's equation holds (with that claimed)
holds() {
	eq=$(grep '^  equation ' "$dir/replay.out") || fail "no equation line"
	case $eq in
	*": holds"*) ;;
	*) fail "the equation: $eq" ;;
	esac
	if [ $# -gt 0 ]; then
		claimed=$(echo "$eq" | sed -n 's/.*claimed \([0-9]*\) ==.*/\1/p')
		[ "$claimed" -eq "$1" ] || fail "claimed $claimed, the program emitted $1: $eq"
	fi
	echo "$eq" | sed 's/^  //'
}

one_capture() {
	[ "$(captures | wc -l)" -eq 1 ] || fail "want one capture: $(captures)"
	captures
}

case $case_ in
lapped)
	start_collector
	env ORBIT_COLLECTOR="$addr" ORBIT_RINGS=1 ORBIT_RING_BUDGET=1K \
		"$producer" burst 2 100000 >"$dir/emitted" 2>"$dir/agent.err" || fail "the producer failed"
	stop_collector
	f=$(one_capture)
	agree "$f"
	lapped=$(field lapped)
	[ "${lapped:-0}" -gt 0 ] || fail "nothing lapped: $(grep '^  loss ' "$dir/replay.out")"
	holds $(($(cat "$dir/emitted") + 2)) # and each thread's end record
	;;
dead_link)
	start_collector
	rm -f "$dir/pfifo"
	mkfifo "$dir/pfifo"
	"$proxy" --to "$addr" --blackhole-after 300000 >"$dir/pfifo" 2>>"$dir/proxy.log" &
	ppid_=$!
	read -r line <"$dir/pfifo" || fail "the proxy did not start"
	cat "$dir/pfifo" >/dev/null &
	env ORBIT_COLLECTOR="${line#listening on }" ORBIT_FLUSH_TIMEOUT_MS=1000 \
		ORBIT_SEND_BUFFER=1M ORBIT_ACK_TIMEOUT_MS=700 \
		"$emit" --threads 2 --iterations 400000 --rate 500000 2>"$dir/agent.err" ||
		fail "emit failed"
	stop_collector
	[ "$(captures | wc -l)" -ge 2 ] || fail "no reconnection: $(captures)"
	unsent=0
	for f in $(captures); do
		agree "$f"
		if grep -q "records of an earlier stream never sent" "$dir/replay.out"; then
			unsent=$((unsent + 1))
		fi
		# a stream that ended has its equation; one that died has none
		if ! grep -q '^  equation   unknown' "$dir/replay.out"; then holds; fi
	done
	[ "$unsent" -gt 0 ] || fail "no stream carries unsent records"
	echo "$unsent of $(captures | wc -l) streams carry unsent records"
	;;
flight)
	command -v python3 >/dev/null 2>&1 || {
		echo "skip: python3 not found (it sends the dump to the collector)"
		exit 77
	}
	start_collector
	env ORBIT_FLIGHT=1M "$victim" spin "$dir/beat" 2>"$dir/agent.err" &
	vpid=$!
	# A dump of the live spinner (a snapshot) says when its ring has
	# overwritten frames.
	tries=0
	until [ -s "$dir/beat" ] && { "$dumper" -o "$dir/probe.orbit.zst" "$vpid" 2>/dev/null || true; } &&
		"$replay" "$dir/probe.orbit.zst" 2>/dev/null | grep -q '^  loss .*, flight ring [1-9]'; do
		tries=$((tries + 1))
		[ "$tries" -lt 60 ] || {
			kill -9 "$vpid"
			rm -f /dev/shm/orbit-"$vpid"-*
			fail "the flight ring overwrote nothing in 30 s"
		}
		sleep 0.5
	done
	kill -9 "$vpid"
	wait "$vpid" || true
	"$dumper" -o "$dir/dump.orbit.zst" "$vpid" 2>"$dir/dump.err" || fail "orbit-dump: $(cat "$dir/dump.err")"
	rm -f /dev/shm/orbit-"$vpid"-*
	# The dump's capture, sent to the collector as an agent sends a stream.
	python3 - "$addr" "$dir/dump.orbit.zst" <<'EOF' || fail "could not send the dump"
import socket, sys
host, port = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((host, int(port)))
with open(sys.argv[2], "rb") as f:
    s.sendall(f.read())
s.shutdown(socket.SHUT_WR)
while s.recv(65536):
    pass
EOF
	stop_collector
	f=$(one_capture)
	cmp -s "$f" "$dir/dump.orbit.zst" || fail "the collector's file is not the dump"
	agree "$f"
	dropped=$(grep '^  loss ' "$dir/replay.out" | sed -n 's/.*, flight ring \([0-9]*\).*/\1/p')
	[ "${dropped:-0}" -gt 0 ] || fail "no flight_dropped: $(grep '^  loss ' "$dir/replay.out")"
	holds
	;;
at_end)
	start_collector
	env ORBIT_COLLECTOR="$addr" "$unpublished" 1000 >"$dir/emitted" 2>"$dir/agent.err" ||
		fail "the program failed"
	stop_collector
	f=$(one_capture)
	agree "$f"
	[ "$(field "at end")" = 1 ] || fail "at end: $(grep '^  loss ' "$dir/replay.out")"
	holds "$(cat "$dir/emitted")"
	;;
*)
	fail "unknown case"
	;;
esac
echo "loss_agree $case_: ok"
