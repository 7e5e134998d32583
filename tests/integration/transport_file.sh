#!/bin/sh
# transport_file.sh BUILD_DIR — ORBIT_CAPTURE: three instrumented processes at
# once, three threads each, each writing its own capture; every capture is a
# plain zstd stream in which every record delivered is the one emitted at its
# place, in each thread's order, names intact, and claimed == delivered + lost
# exactly (loss is allowed and counted: a slow machine, ASan, may lap rings;
# capture_dump --emit).
set -eu
build=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
emit=$build/examples/emit
dump=$build/tests/capture_dump
pids=
for n in 1 2 3; do
	ORBIT_CAPTURE=$dir/cap$n.orbit.zst ORBIT_RING_BUDGET=64M \
		"$emit" --threads 3 --iterations 20000 --rate 500000 &
	pids="$pids $!"
done
for p in $pids; do
	wait "$p"
done
for n in 1 2 3; do
	if command -v zstd >/dev/null; then
		zstd -q -t "$dir/cap$n.orbit.zst"
	fi
	"$dump" --emit 3 20000 "$dir/cap$n.orbit.zst"
done
echo "3 captures checked"
