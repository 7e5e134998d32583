#!/bin/sh
# readme_runs.sh README BUILD_DIR — what the README says of a glob of
# captures holds: orbit-replay merges every run's scopes into one set of
# counts, and the README's recipe for the newest run selects that one run.
# Two real runs of examples/emit, 30 and then 50 iterations on one thread.
set -eu
readme=$1
build=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
	echo "readme_runs: $*" >&2
	exit 1
}
grep -q "its tables merge" "$readme" && grep -q "every run's scopes into one set of counts and percentiles" "$readme" ||
	fail "the README no longer says that a glob merges runs"
grep -q '"$(ls -t captures/app-\*.orbit.zst | head -1)"' "$readme" ||
	fail "the README no longer gives the recipe for the newest run"
mkdir "$dir/captures"
cd "$dir"
ORBIT_CAPTURE=captures/app-%p-1.orbit.zst "$build/examples/emit" --threads 1 --iterations 30
sleep 1.1 # ls -t orders by whole seconds on some file systems
ORBIT_CAPTURE=captures/app-%p-2.orbit.zst "$build/examples/emit" --threads 1 --iterations 50
count() { # the count of scope "t0 outer" in orbit-replay --json of the files given
	"$build/replay/orbit-replay" -q --json - "$@" |
		python3 -c 'import json,sys; print([s["count"] for s in json.load(sys.stdin)["scopes"] if s["name"] == "t0 outer"][0])'
}
[ "$(count captures/app-*.orbit.zst)" -eq 80 ] || fail "the glob does not merge the runs"
[ "$(count "$(ls -t captures/app-*.orbit.zst | head -1)")" -eq 50 ] ||
	fail "the README's recipe does not select the newest run"
echo "ok: a glob merges the runs (80 scopes), the recipe selects the newest (50)"
