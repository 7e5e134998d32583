#!/bin/sh
# demo.sh [BUILD_DIR] — the README's demo: an orbit-collector on a free
# loopback port, the instrumented examples/demo streaming to it, then
# orbit-replay printing the summary of the capture and writing the HTML page
# (timeline, flame graph, statistics; opens offline in any browser) and
# Chrome JSON beside it.
set -eu
build=${1:-build/release}
out=${ORBIT_DEMO_DIR:-$(mktemp -d /tmp/orbit-demo.XXXXXX)}
mkdir -p "$out"

"$build/collector/orbit-collector" --listen 127.0.0.1:0 --dir "$out" \
	>"$out/collector.out" 2>"$out/collector.log" &
collector=$!
addr=
for _ in $(seq 100); do
	addr=$(sed -n 's/^listening on //p' "$out/collector.out" 2>/dev/null || true)
	[ -n "$addr" ] && break
	sleep 0.05
done
if [ -z "$addr" ]; then
	echo "demo: orbit-collector did not start:" >&2
	cat "$out/collector.log" >&2
	exit 1
fi
echo "orbit-collector listening on $addr, captures in $out"
live=$(sed -n 's/^live view: //p' "$out/collector.out" 2>/dev/null || true)
if [ -n "$live" ]; then echo "its live view, while the demo runs: $live"; fi

echo "running examples/demo with ORBIT_COLLECTOR=$addr"
ORBIT_COLLECTOR=$addr "$build/examples/demo" --threads 4 --frames 500

kill -TERM "$collector"
wait "$collector"
echo
"$build/replay/orbit-replay" "$out"/*.orbit.zst --html "$out/demo.html" --chrome "$out/demo.json"
echo
echo "Open the page in a browser (one self-contained file, works offline):"
echo "  $out/demo.html"
echo "Chrome trace JSON beside it, for Perfetto UI: $out/demo.json"
