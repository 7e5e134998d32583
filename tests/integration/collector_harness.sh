# collector_harness.sh — sourced by the shell tests that run a real
# orbit-collector (pipeline.sh, transport_collector.sh, guest.sh, acks.sh):
# their temporary directory, the cleanup at exit, fail, the collector's start
# and stop and the captures it wrote. The shell twin of collector_harness.c.
#
# Before sourcing, the test sets: build (the build directory), case_ and
# test_name (for fail's first line). It may set ppid_ later (a tcp_proxy's
# pid: killed at exit with the collector). KEEP=1 keeps the directory.
dir=$(mktemp -d)
collector=$build/collector/orbit-collector
cpid=
ppid_=
cleanup() {
	[ -n "$cpid" ] && kill -9 "$cpid" 2>/dev/null
	[ -n "$ppid_" ] && kill -9 "$ppid_" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap "" EXIT

# fail WHY: one line, then the logs the run left, and exit 1
fail() {
	echo "$test_name $case_: $*" >&2
	for log in agent.err collector.log proxy.log; do
		[ -f "$dir/$log" ] && sed "s/^/  ${log%.*}: /" "$dir/$log" >&2
	done
	exit 1
}

# start_collector [LISTEN [options]]: sets cpid and addr (LISTEN defaults to
# 127.0.0.1:0, a free port); the collector's stdout is kept drained
start_collector() {
	listen=${1:-127.0.0.1:0}
	[ $# -gt 0 ] && shift
	rm -f "$dir/cfifo"
	mkfifo "$dir/cfifo"
	"$collector" --listen "$listen" --dir "$dir/captures" "$@" >"$dir/cfifo" 2>>"$dir/collector.log" &
	cpid=$!
	read -r line <"$dir/cfifo" || fail "the collector did not start"
	addr=${line#listening on }
	cat "$dir/cfifo" >/dev/null &
}

# stop_collector: SIGTERM, and it must exit 0
stop_collector() {
	kill -TERM "$cpid"
	wait "$cpid" || fail "the collector did not exit 0"
	cpid=
}

# captures: the capture files written so far, one per line
captures() {
	ls "$dir/captures"/*.orbit.zst 2>/dev/null || true
}
