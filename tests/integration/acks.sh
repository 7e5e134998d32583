#!/bin/sh
# acks.sh BUILD_DIR CASE — delivery the agent can count: the agent reads the
# collector's acknowledgements, through a bad link made by tcp_proxy, against
# a real orbit-collector. In every case the
# account is exact: over the captures the collector wrote (capture_chain:
# complete streams by their equation, streams that died by the account the
# next stream carries, the last one by the agent's end-of-run line),
# claimed == what examples/emit emitted == delivered + lost. And the program
# is never held beyond its flush timeout: it exits within
# ORBIT_FLUSH_TIMEOUT_MS + 3 s of its untraced time (a loose bound, not a
# measurement).
#   clean       straight to the collector: one complete stream, nothing lost,
#               nothing said
#   throttle    a 100 KB/s link: the send buffer holds the drain back, the exit
#               gives up on what is not acknowledged and counts it
#   blackhole   the link stops passing data after 300 KB: the agent drops the
#               connection after ORBIT_ACK_TIMEOUT_MS without progress and
#               reconnects (again and again)
#   drop        every connection is reset after 200 KB: a chain of streams,
#               each died one's account in the next one's Handshake, which
#               orbit-replay uses to check each of them
#   stop        the collector stops (SIGTERM) mid-stream and starts again: its
#               last Ack says exactly which frames it kept
#   silent      a link that passes nothing from the start: no answer, one line,
#               every event counted not delivered, no capture
#   lost_unread no collector, one small ring, and a program that writes ten
#               times the ring at once, then waits 1.5 s: the loss is said
#               once, before the end-of-run line, and no more than that line
#               says was not delivered
#   calibrate   a link that passes nothing, with the counter as the clock: the
#               agent goes on taking calibration pairs while it cannot send
#               (the segment's clock block, which orbit-dump converts with,
#               keeps up with the run)
#   peer_close  a listener that accepts and closes: a 3 s run prints at most 3
#               lines, naming the address and what it did, and backs off
#   peer_http   a web server: the line says it sent HTTP
#   disk_full   the collector's directory is full: each stream's empty file is
#               removed, no Ack says frames 0, and the agent retries (it does
#               not call it "not an Orbit collector"); nothing is left behind
#   repeat      a peer that repeats one valid Ack as fast as it can: a protocol
#               violation, one line, a reconnect; the program's CPU stays
#               under 10 % of a core
set -eu
build=$1
case_=$2
test_name=acks
. "$(dirname "$0")/collector_harness.sh"
emit=$build/examples/emit
host=$build/tests/guest_host
chain=$build/tests/capture_chain
proxy=$build/tests/tcp_proxy
peer=$build/tests/fake_peer
replay=$build/replay/orbit-replay

# start_proxy ARGS: sets ppid_ and paddr
start_proxy() {
	rm -f "$dir/pfifo"
	mkfifo "$dir/pfifo"
	"$proxy" --to "$addr" "$@" >"$dir/pfifo" 2>>"$dir/proxy.log" &
	ppid_=$!
	read -r line <"$dir/pfifo" || fail "the proxy did not start"
	paddr=${line#listening on }
	cat "$dir/pfifo" >/dev/null &
}

# newest_pair PID: the CLOCK_MONOTONIC ns of the newest calibration point in
# the segment's clock block (struct orbit__seg_clock, format/segment.h), or
# "skip: ..." when the producers do not read a counter
newest_pair() {
	python3 - "$1" <<'EOF'
import glob, struct, sys, time
for _ in range(200):  # the process may still be starting (10 s at most)
    seg = glob.glob("/dev/shm/orbit-%s-*" % sys.argv[1])
    if seg:
        break
    time.sleep(0.05)
if len(seg) != 1:
    sys.exit("segments of %s: %r" % (sys.argv[1], seg))
data = open(seg[0], "rb").read()
source, = struct.unpack_from("<I", data, 76)
if source == 0:
    print("skip: no invariant counter here (producers read CLOCK_MONOTONIC)")
    sys.exit(0)
state, = struct.unpack_from("<Q", data, 88)
best = 0
for k in range(2):  # two blocks of 40 + 256 * 16 + 8 bytes, by generation
    at = state + k * 4144
    gen_begin, _, count = struct.unpack_from("<QII", data, at)
    gen_end, = struct.unpack_from("<Q", data, at + 40 + 256 * 16)
    if gen_begin == gen_end and 0 < count <= 256:
        best = max(best, struct.unpack_from("<QQ", data, at + 40 + 16 * (count - 1))[1])
print(best)
EOF
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# run_emit THREADS ITERATIONS RATE ENV...: emit against $target, stderr in
# agent.err; sets elapsed_ms and emitted
run_emit() {
	t=$1 n=$2 r=$3
	shift 3
	t0=$(now_ms)
	env ORBIT_COLLECTOR="$target" ORBIT_FLUSH_TIMEOUT_MS=1000 "$@" \
		"$emit" --threads "$t" --iterations "$n" --rate "$r" 2>"$dir/agent.err" ||
		fail "emit failed"
	elapsed_ms=$(($(now_ms) - t0))
	emitted=$((t * (5 * n + 2)))
}

# untraced_ms THREADS ITERATIONS RATE
untraced_ms() {
	t0=$(now_ms)
	env -u ORBIT_COLLECTOR -u ORBIT_CAPTURE "$emit" --threads "$1" --iterations "$2" --rate "$3" ||
		fail "emit failed untraced"
	echo $(($(now_ms) - t0))
}

# never_held UNTRACED_MS: within the flush timeout (1 s, the whole stop's
# budget) + 3 s of untraced
never_held() {
	[ "$elapsed_ms" -le $(($1 + 4000)) ] ||
		fail "the program took $elapsed_ms ms, $1 ms untraced"
}

# said_while_lost: the loss was said while the program ran (the agent's
# loss line, once in a run this short), before the end-of-run lines
said_while_lost() {
	[ "$(grep -c "^orbit: events are being lost: [0-9]* so far" "$dir/agent.err")" -eq 1 ] ||
		fail "loss not said once while it happened"
	first=$(grep -n "events are being lost" "$dir/agent.err" | cut -d: -f1)
	end=$(grep -n "were not delivered\|were overwritten before" "$dir/agent.err" | head -n 1 | cut -d: -f1)
	[ -z "$end" ] || [ "$first" -lt "$end" ] || fail "the loss line came after the end-of-run lines"
}

# account: the captures and the end-of-run line account for every event
account() {
	line=$(grep "event(s) were not delivered" "$dir/agent.err" || true)
	args=
	if [ -n "$line" ]; then
		n=$(echo "$line" | sed 's/^orbit: \([0-9]*\) event(s) were not delivered.*/\1/')
		f=$(echo "$line" | sed -n 's/.*acknowledged \([0-9]*\) of [0-9]* frames of the last stream.*/\1/p')
		if [ -n "$f" ]; then args="--tail $f $n"; else args="--unstreamed $n"; fi
	fi
	[ -n "$(captures)" ] || fail "no capture"
	# shellcheck disable=SC2046,SC2086
	"$chain" $args --emitted "$emitted" $(captures) >"$dir/chain.out" 2>&1 ||
		fail "the account does not hold: $(cat "$dir/chain.out")"
	tail -n 1 "$dir/chain.out"
}

lines() {
	if [ -s "$1" ]; then wc -l <"$1"; else echo 0; fi
}

case $case_ in
clean)
	start_collector 127.0.0.1:0
	target=$addr
	run_emit 2 20000 500000 ORBIT_RING_BUDGET=64M
	stop_collector
	[ ! -s "$dir/agent.err" ] || fail "the agent said something"
	[ "$(captures | wc -l)" -eq 1 ] || fail "want one capture: $(captures)"
	account
	grep -q "^process [0-9]*: streams 1, claimed $emitted, delivered $emitted, lost 0," "$dir/chain.out" ||
		fail "not all delivered: $(cat "$dir/chain.out")"
	;;
throttle)
	start_collector 127.0.0.1:0
	start_proxy --rate 100000
	target=$paddr
	base=$(untraced_ms 2 100000 250000)
	run_emit 2 100000 250000 ORBIT_SEND_BUFFER=1M
	never_held "$base"
	stop_collector
	account
	grep -q "acknowledged [0-9]* of [0-9]* frames of the last stream within 750 ms" "$dir/agent.err" ||
		fail "no count of what was not acknowledged"
	[ "$(lines "$dir/agent.err")" -le 3 ] || fail "more than three lines"
	echo "elapsed $elapsed_ms ms, untraced $base ms"
	;;
blackhole)
	start_collector 127.0.0.1:0
	start_proxy --blackhole-after 300000
	target=$paddr
	base=$(untraced_ms 2 400000 500000)
	run_emit 2 400000 500000 ORBIT_SEND_BUFFER=1M ORBIT_ACK_TIMEOUT_MS=700
	never_held "$base"
	stop_collector
	account
	grep -q "lost (nothing acknowledged or taken for 700 ms); reconnecting" "$dir/agent.err" ||
		fail "the stalled connection was not dropped"
	[ "$(captures | wc -l)" -ge 2 ] || fail "no reconnection: $(captures)"
	echo "elapsed $elapsed_ms ms, untraced $base ms, $(captures | wc -l) captures"
	;;
drop)
	start_collector 127.0.0.1:0
	start_proxy --drop-after 200000
	target=$paddr
	base=$(untraced_ms 2 100000 250000)
	run_emit 2 100000 250000
	never_held "$base"
	stop_collector
	account
	[ "$(captures | wc -l)" -ge 3 ] || fail "want several streams: $(captures)"
	# the flapping link is said once; the end line (what the last stream
	# could not deliver, when the stop came before a reconnection) is
	# another problem and may follow it
	[ "$(grep -c "connection to collector .* lost" "$dir/agent.err")" -le 1 ] ||
		fail "the same lost connection said more than once"
	reported=$(grep -c reported "$dir/chain.out")
	# orbit-replay checks each died stream by the account the next one gave
	# shellcheck disable=SC2046
	"$replay" $(captures) >"$dir/replay.out" 2>"$dir/replay.err" || true
	[ "$(grep -c "holds (by the account a later stream gave of it)" "$dir/replay.out")" -eq "$reported" ] ||
		fail "orbit-replay: $(grep equation "$dir/replay.out")"
	! grep -q "DOES NOT HOLD" "$dir/replay.out" || fail "orbit-replay: an equation fails"
	echo "reported streams: $reported, each checked by orbit-replay"
	;;
stop)
	start_collector 127.0.0.1:0
	port=${addr##*:}
	target=$addr
	(
		sleep 0.8
		kill -TERM "$cpid"
	) &
	killer=$!
	env ORBIT_COLLECTOR="$target" ORBIT_FLUSH_TIMEOUT_MS=3000 \
		"$emit" --threads 2 --iterations 150000 --rate 250000 2>"$dir/agent.err" &
	epid=$!
	wait "$killer"
	wait "$cpid" || fail "the collector did not exit 0"
	cpid=
	sleep 0.5
	start_collector "127.0.0.1:$port"
	wait "$epid" || fail "emit failed"
	emitted=$((2 * (5 * 150000 + 2)))
	stop_collector
	[ "$(captures | wc -l)" -ge 2 ] || fail "want two captures: $(captures)"
	grep -q "the collector ended the stream: it is stopping" "$dir/agent.err" ||
		fail "the stopping collector's last Ack was not read"
	account
	grep -q reported "$dir/chain.out" || fail "the first stream is not reported"
	;;
silent)
	start_collector 127.0.0.1:0
	start_proxy --blackhole-after 0
	target=$paddr
	run_emit 2 20000 500000 ORBIT_ACK_TIMEOUT_MS=500
	stop_collector
	[ -z "$(captures)" ] || fail "a capture: $(captures)"
	grep -q "^orbit: $target did not answer the handshake within 500 ms; retrying in the background$" \
		"$dir/agent.err" || fail "no line for the silent peer"
	# the wait at exit ends with the hurried attempt's failure, or at the
	# stop's deadline (750 ms) if that comes first
	grep -Eq "^orbit: $emitted event\(s\) were not delivered: collector $target not reached( within 750 ms)? \(no answer within 500 ms\)$" \
		"$dir/agent.err" || fail "the end line does not count everything"
	[ "$(lines "$dir/agent.err")" -eq 2 ] || fail "want two lines"
	;;
calibrate)
	start_collector 127.0.0.1:0
	start_proxy --blackhole-after 0
	target=$paddr
	env ORBIT_COLLECTOR="$target" ORBIT_CLOCK=tsc ORBIT_FLUSH_TIMEOUT_MS=500 \
		ORBIT_ACK_TIMEOUT_MS=500 "$host" wait 4000 1000 >"$dir/out" 2>"$dir/agent.err" &
	hpid=$!
	sleep 0.3
	a=$(newest_pair "$hpid")
	sleep 1.5
	b=$(newest_pair "$hpid")
	wait "$hpid" || fail "the program failed: $(cat "$dir/agent.err")"
	stop_collector
	case $a in skip*) echo "$a" && exit 77 ;; esac
	# 1.5 s apart, the agent's passes every few ms: the newest pair moved
	# by more than a second (frozen, it would not move at all)
	[ $((b - a)) -gt 1000000000 ] ||
		fail "the newest calibration pair moved $((b - a)) ns in 1.5 s without a collector"
	echo "without a collector the newest calibration pair moved $((b - a)) ns in 1.5 s"
	;;
lost_unread)
	env ORBIT_COLLECTOR=127.0.0.1:1 ORBIT_FLUSH_TIMEOUT_MS=500 ORBIT_RINGS=1 ORBIT_RING_BUDGET=256K \
		"$host" wait 1500 20000 >"$dir/out" 2>"$dir/agent.err" || fail "the program failed"
	grep -q "^done 20000$" "$dir/out" || fail "the program's output: $(cat "$dir/out")"
	said_while_lost
	n=$(sed -n 's/^orbit: events are being lost: \([0-9]*\) so far.*/\1/p' "$dir/agent.err")
	all=$(sed -n 's/^orbit: \([0-9]*\) event(s) were not delivered.*/\1/p' "$dir/agent.err")
	# 40000 records into 4096 slots: the line comes at the agent's first
	# look after the loss began, with what was lost by then (a slow
	# producer may still be writing)
	[ "$n" -gt 0 ] && [ "$n" -le "$all" ] ||
		fail "the loss line says $n, the end line $all: $(cat "$dir/agent.err")"
	echo "said while it waited: $n lost; at the end: $all not delivered"
	;;
peer_close | peer_http)
	rm -f "$dir/pfifo"
	mkfifo "$dir/pfifo"
	mode=--close
	[ "$case_" = peer_http ] && mode=--http
	"$peer" $mode >"$dir/pfifo" &
	ppid_=$!
	exec 3<"$dir/pfifo"
	read -r line <&3 || fail "fake_peer did not start"
	target=${line#listening on }
	env ORBIT_COLLECTOR="$target" ORBIT_FLUSH_TIMEOUT_MS=200 "$host" wait 3000 1000 \
		>"$dir/out" 2>"$dir/agent.err" || fail "the program failed"
	kill -TERM "$ppid_"
	read -r count <&3 || fail "fake_peer said nothing"
	wait "$ppid_" || true
	ppid_=
	grep -q "^done 1000$" "$dir/out" || fail "the program's output: $(cat "$dir/out")"
	[ "$(lines "$dir/agent.err")" -le 3 ] || fail "more than 3 lines in a 3 s run"
	if [ "$case_" = peer_http ]; then
		grep -q "^orbit: $target is not an Orbit collector (it sent HTTP); retrying in the background$" \
			"$dir/agent.err" || fail "the line does not say it sent HTTP"
	else
		grep -q "^orbit: $target closed the connection without answering the handshake; retrying in the background$" \
			"$dir/agent.err" || fail "the line does not say what it did"
	fi
	# Backing off (100 ms doubling): about 6 connections in 3 s, and a few
	# more while the exit waits; never one every 100 ms (30 and more).
	n=${count#connections }
	[ "$n" -ge 3 ] && [ "$n" -le 12 ] || fail "$n connections in 3 s"
	echo "$n connections; $(cat "$dir/agent.err")"
	;;
disk_full)
	{ [ "$(id -u)" -eq 0 ] && command -v unshare >/dev/null; } ||
		{ echo "needs root and unshare(1) for a tmpfs of its own"; exit 77; }
	# A collector whose directory is a full 256 KiB tmpfs of its own (a
	# mount namespace); after it stops, what the directory holds
	rm -f "$dir/cfifo"
	mkfifo "$dir/cfifo"
	unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=256k tmpfs "$1" || exit 1
		head -c 1048576 /dev/zero >"$1/fill" 2>/dev/null
		"$2" --listen 127.0.0.1:0 --dir "$1" --max-dir-size 16M &
		c=$!
		trap "kill -TERM $c" TERM
		wait $c
		wait $c
		ls -A "$1" >"$3"' sh "$dir/full" "$collector" "$dir/left" \
		>"$dir/cfifo" 2>>"$dir/collector.log" &
	cpid=$!
	mkdir -p "$dir/full"
	read -r line <"$dir/cfifo" || fail "the collector did not start"
	addr=${line#listening on }
	cat "$dir/cfifo" >/dev/null &
	env ORBIT_COLLECTOR="$addr" ORBIT_FLUSH_TIMEOUT_MS=300 "$host" wait 2000 100 \
		>"$dir/out" 2>"$dir/agent.err" || fail "the program failed"
	kill -TERM "$cpid"
	wait "$cpid" || true
	cpid=
	grep -q "^done 100$" "$dir/out" || fail "the program's output: $(cat "$dir/out")"
	grep -q "^orbit: $addr closed the connection without answering the handshake; retrying in the background$" \
		"$dir/agent.err" || fail "the agent's line: $(cat "$dir/agent.err")"
	! grep -q "not an Orbit collector" "$dir/agent.err" || fail "called no collector"
	grep -q "the empty file removed" "$dir/collector.log" || fail "the collector said nothing"
	[ "$(cat "$dir/left")" = fill ] || fail "the full directory holds: $(cat "$dir/left")"
	echo "$(grep -c "the empty file removed" "$dir/collector.log") empty file(s) removed; $(head -n 1 "$dir/agent.err")"
	;;
repeat)
	rm -f "$dir/pfifo"
	mkfifo "$dir/pfifo"
	"$peer" --repeat >"$dir/pfifo" &
	ppid_=$!
	exec 3<"$dir/pfifo"
	read -r line <&3 || fail "fake_peer did not start"
	target=${line#listening on }
	# the program's CPU time (user + system, all its threads) over a 3 s run
	cpu=$(ERR="$dir/agent.err" python3 -c '
import os, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdout=open(os.devnull, "w"), stderr=open(os.environ["ERR"], "w"))
_, st, ru = os.wait4(p.pid, 0)
print("%d %.3f" % (os.waitstatus_to_exitcode(st), ru.ru_utime + ru.ru_stime))' \
		env ORBIT_COLLECTOR="$target" ORBIT_FLUSH_TIMEOUT_MS=200 "$host" wait 3000 1000)
	kill -TERM "$ppid_"
	read -r count <&3 || fail "fake_peer said nothing"
	wait "$ppid_" || true
	ppid_=
	[ "${cpu% *}" -eq 0 ] || fail "the program exited ${cpu% *}: $(cat "$dir/agent.err")"
	grep -q "^orbit: connection to collector $target lost (it repeated an acknowledgement (frames 1, 0 synced)); reconnecting$" \
		"$dir/agent.err" || fail "no line for the repeated Ack: $(cat "$dir/agent.err")"
	# Under 10 % of a core over the 3 s (a peer answered at every Ack would
	# hold the agent's thread at 100 %)
	python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) < 0.3 else 1)' "${cpu#* }" ||
		fail "the program used ${cpu#* } s of CPU in a 3 s run against a repeating peer"
	echo "${cpu#* } s of CPU in 3 s, ${count}; $(head -n 1 "$dir/agent.err")"
	;;
*)
	fail "unknown case"
	;;
esac
echo "acks $case_: ok"
