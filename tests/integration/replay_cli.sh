#!/bin/sh
# replay_cli.sh — orbit-replay's command line: options, filters, several
# captures at once, exit statuses (0 clean, 1 usage, 2 damaged or
# incomplete input, 3 output failure, 4 a window that selects nothing, 5 a
# stream made by a newer Orbit) and the one-line-per-problem rule.
# usage: replay_cli.sh ORBIT_REPLAY DATA_DIR SYNTH_DIR CASE
set -u
replay=$1 data=$2 synth=$3 case=$4
emit=$data/replay/emit-2x50.orbit.zst
emit3=$data/replay/emit-3x20.orbit.zst
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# status WANT ARGS...: runs orbit-replay, stdout in $tmp/out, stderr in $tmp/err
status() {
	want=$1
	shift
	"$replay" "$@" > "$tmp/out" 2> "$tmp/err"
	st=$?
	[ $st -eq "$want" ] || fail "orbit-replay $*: exit $st, want $want; stderr: $(cat "$tmp/err")"
}
rows() { tail -n +2 "$1" | wc -l; }

case $case in
help)
	status 0 --help
	grep -q '^usage: orbit-replay' "$tmp/out" || fail "no usage text"
	for o in --top --sort --json --csv --chrome --perfetto --log --follow --pages --thread \
		--name --from --to; do
		grep -q -- "$o" "$tmp/out" || fail "--help does not mention $o"
	done
	[ ! -s "$tmp/err" ] || fail "--help wrote to stderr"
	status 0 --version
	grep -q '^orbit-replay ' "$tmp/out" || fail "--version"
	;;
usage)
	for args in "" "--sort bogus $emit" "--top x $emit" "--from abc $emit" "--bogus $emit" \
		"--thread" "--page-size 0 --pages x" "--from 10 --to 5 $emit" \
		"--chrom $tmp/c.json $emit" "--jso=- $emit" "--follow $emit $emit" "--follow --log $emit" \
		"--follow --json - $emit"; do
		# shellcheck disable=SC2086
		status 1 $args
		[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "'$args': want one line on stderr"
		grep -q -- '--help' "$tmp/err" || fail "'$args': no pointer to --help"
		[ ! -s "$tmp/out" ] || fail "'$args': wrote to stdout"
	done
	# A long option is taken by its whole name only (getopt_long would take
	# "--chrom" for "--chrome"); as the value of another, any word is a value.
	status 1 --chrom "$tmp/c.json" "$emit"
	grep -q "'--chrom' is not an option" "$tmp/err" || fail "--chrom: $(cat "$tmp/err")"
	[ ! -e "$tmp/c.json" ] || fail "--chrom wrote a Chrome trace"
	status 0 --name --chrom --json - "$emit"
	grep -q '"captures"' "$tmp/out" || fail "--name --chrom --json -: no JSON"
	;;
missing)
	# A missing file, or a directory, is not damage: one line saying what.
	status 2 "$tmp/nope.zst"
	[ "$(cat "$tmp/err")" = "orbit-replay: $tmp/nope.zst: no such file" ] ||
		fail "missing file: $(cat "$tmp/err")"
	grep -q '^  not read   no such file$' "$tmp/out" || fail "summary of a missing file"
	grep -q 'DAMAGED' "$tmp/out" && fail "a missing file called damaged"
	status 2 "$tmp/nope.zst" --json -
	grep -q '"error":"no such file"' "$tmp/out" || fail "JSON of a missing file"
	status 2 "$tmp"
	[ "$(cat "$tmp/err")" = "orbit-replay: $tmp: is a directory" ] ||
		fail "directory: $(cat "$tmp/err")"
	: > "$tmp/empty.zst"
	status 2 "$tmp/empty.zst"
	grep -q "empty.zst: no stream could be read" "$tmp/err" || fail "empty capture"
	status 2 "$emit" "$tmp/nope.zst"
	grep -q '^capture .*emit-2x50' "$tmp/out" || fail "the good capture is not summarized"
	;;
notorbit)
	# Files that are no Orbit capture: one line each, naming the file.
	command -v zstd > /dev/null 2>&1 || { echo "skip: zstd not found"; exit 77; }
	printf 'hello, not a capture\n' > "$tmp/text.txt"
	zstd -q "$tmp/text.txt" -o "$tmp/text.zst" || fail "zstd"
	zstd -q -c < "$tmp/text.txt" > "$tmp/stream.zst" || fail "zstd"
	zstd -q -c --no-check "$tmp/text.txt" > "$tmp/nocheck.zst" || fail "zstd"
	for f in text.zst stream.zst nocheck.zst; do
		status 2 "$tmp/$f"
		[ "$(cat "$tmp/err")" = \
			"orbit-replay: $tmp/$f: not an Orbit capture (no handshake frame)" ] ||
			fail "$f: $(cat "$tmp/err")"
		grep -q '^  not read   not an Orbit capture (no handshake frame)$' "$tmp/out" ||
			fail "$f: summary"
	done
	status 2 "$tmp/text.txt"
	[ "$(cat "$tmp/err")" = "orbit-replay: $tmp/text.txt: not an Orbit capture (not zstd)" ] ||
		fail "text: $(cat "$tmp/err")"
	# A capture cut inside its first frame is damage, not a stranger.
	head -c 100 "$emit" > "$tmp/cut.zst"
	status 2 "$tmp/cut.zst"
	grep -q 'not an Orbit capture' "$tmp/err" && fail "a cut capture called a stranger"
	grep -q 'cut.zst: offset 0: ' "$tmp/err" || fail "cut capture: $(cat "$tmp/err")"
	# Real captures beside them are still read.
	status 2 "$tmp/text.zst" "$emit"
	grep -q '^capture .*emit-2x50' "$tmp/out" || fail "the good capture is not summarized"
	;;
output)
	status 3 "$emit" --csv "$tmp/no/such/dir.csv"
	grep -q "dir.csv" "$tmp/err" || fail "unwritable CSV not named"
	if [ -w /dev/full ]; then
		status 3 "$emit" --chrome /dev/full
		grep -q "/dev/full: write error" "$tmp/err" || fail "write error not said"
		"$replay" "$emit" > /dev/full 2> "$tmp/err"
		[ $? -eq 3 ] || fail "stdout on /dev/full: want 3"
	fi
	;;
incomplete)
	status 2 "$synth/noend.orbit.zst" --csv "$tmp/x.csv"
	grep -q 'noend.orbit.zst: incomplete capture: no end of stream' "$tmp/err" ||
		fail "incomplete capture not reported: $(cat "$tmp/err")"
	grep -q 'INCOMPLETE' "$tmp/out" || fail "summary does not say incomplete"
	# (no source location, no kernel scheduling: their six columns empty)
	grep -q "$(printf ',done,5000000100,5000000200,100,scope,,,,,,,,,\r$')" "$tmp/x.csv" ||
		fail "finished scope lost (or marked)"
	# Open until its thread's last record: its own start.
	grep -q ',open,5000000300,5000000300,0,scope,,,unfinished' "$tmp/x.csv" ||
		fail "open scope not unfinished"
	;;
equation)
	status 2 "$synth/badeq.orbit.zst"
	grep -q 'ring 0: claimed 7 != delivered 2 + lost 0' "$tmp/err" || fail "$(cat "$tmp/err")"
	grep -q 'DOES NOT HOLD' "$tmp/out" || fail "summary does not say it fails"
	status 0 "$synth/loss.orbit.zst" --csv "$tmp/x.csv"
	grep -q 'lapped 2' "$tmp/out" || fail "loss by cause"
	grep -q 'ORBIT_RING_BUDGET in the traced process gives the rings more room' "$tmp/out" ||
		fail "lapping does not name the knob"
	grep -q 'claimed 5 == delivered 3 + lost 2: holds' "$tmp/out" || fail "equation with loss"
	grep -q '^777,41,,0,Z,' "$tmp/x.csv" || fail "Z not at depth 0 after the gap"
	# Its stop may be in the gap: open until its thread's last record before.
	grep -q '^777,41,,0,X,5000000100,5000000100,0,scope,,,unfinished' "$tmp/x.csv" ||
		fail "X not unfinished"
	;;
top)
	status 0 "$emit" --top 3 --sort count
	grep -q '^scopes by count (3 of 102 names)' "$tmp/out" || fail "table title"
	status 0 "$emit" --json - --top 2 --sort max
	head -c 1 "$tmp/out" | grep -q '{' || fail "--json - is not JSON on stdout"
	grep -q '"sort":"max"' "$tmp/out" || fail "sort key"
	[ "$(grep -c '"p99_ns"' "$tmp/out")" -eq 2 ] || fail "--top 2 rows in JSON"
	status 0 "$emit" --top 0
	grep -q '^scopes by total time (102 of 102 names)' "$tmp/out" || fail "--top 0"
	;;
filters)
	status 0 "$emit" --csv "$tmp/all.csv" -q
	tid=$(sed -n 2p "$tmp/all.csv" | cut -d, -f2)
	status 0 "$emit" --csv "$tmp/t.csv" --thread "$tid" -q
	[ "$(rows "$tmp/t.csv")" -eq 100 ] || fail "--thread: $(rows "$tmp/t.csv") rows"
	[ "$(tail -n +2 "$tmp/t.csv" | cut -d, -f2 | sort -u)" = "$tid" ] || fail "--thread tids"
	status 0 "$emit" --csv "$tmp/n.csv" --name inner -q
	[ "$(rows "$tmp/n.csv")" -eq 100 ] || fail "--name: $(rows "$tmp/n.csv") rows"
	tail -n +2 "$tmp/n.csv" | cut -d, -f5 | grep -v inner && fail "--name let others through"
	# a window around one inner scope of the middle
	mid=$(grep ',t0 inner 25,' "$tmp/all.csv" | cut -d, -f6,7)
	from=${mid%,*} to=${mid#*,}
	status 0 "$emit" --csv "$tmp/w.csv" --from "@$from" --to "@$to" -q
	tail -n +2 "$tmp/w.csv" | awk -F, -v f="$from" -v t="$to" \
		'$7 < f || $6 > t { bad = 1 } END { exit bad }' || fail "--from/--to overlap"
	grep -q ',t0 inner 25,' "$tmp/w.csv" || fail "window lost its scope"
	[ "$(rows "$tmp/w.csv")" -lt 10 ] || fail "window too wide: $(rows "$tmp/w.csv")"
	status 0 "$emit" --csv "$tmp/r.csv" --from +0 --to +1s -q
	[ "$(rows "$tmp/r.csv")" -eq 200 ] || fail "relative window"
	# Without '+' a time still counts from the start: only '@' is absolute.
	status 0 "$emit" --csv "$tmp/r2.csv" --from 0 --to 1s -q
	cmp -s "$tmp/r.csv" "$tmp/r2.csv" || fail "--from 0 --to 1s is not +0 to +1s"
	# A window that selects nothing says so, with the captures' range: exit 4.
	status 4 "$emit" --from @10 --to @20 -q
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "empty window: want one line: $(cat "$tmp/err")"
	grep -q 'select nothing: the captures hold +0 to +' "$tmp/err" ||
		fail "empty window: $(cat "$tmp/err")"
	status 4 "$emit" --from 1000s -q
	status 0 "$emit" --to @$to -q
	;;
newer)
	# A stream of a newer protocol is not damage: one line saying so, its
	# own status, and the other captures read as ever.
	status 5 "$synth/newer.orbit.zst"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "newer: want one line: $(cat "$tmp/err")"
	grep -q 'made by a newer Orbit (protocol 4); this orbit-replay reads protocols 1 to 3' \
		"$tmp/err" || fail "newer: $(cat "$tmp/err")"
	grep -q '^  NEWER ' "$tmp/out" || fail "newer: the summary does not say so"
	grep -q 'DAMAGED' "$tmp/out" "$tmp/err" && fail "a newer capture called damaged"
	status 5 "$synth/newer.orbit.zst" "$emit" --csv "$tmp/n.csv"
	[ "$(rows "$tmp/n.csv")" -eq 200 ] || fail "newer beside emit: $(rows "$tmp/n.csv") rows"
	status 0 "$emit" --json "$tmp/e.json" -q
	status 5 "$synth/newer.orbit.zst" --json - -q
	grep -q '"newer_protocol":4' "$tmp/out" || fail "newer: --json: $(cat "$tmp/out")"
	;;
multi)
	status 0 "$emit" "$emit3" --csv "$tmp/m.csv"
	[ "$(rows "$tmp/m.csv")" -eq 320 ] || fail "$(rows "$tmp/m.csv") rows, want 320"
	[ "$(tail -n +2 "$tmp/m.csv" | cut -d, -f1 | sort -u | wc -l)" -eq 2 ] || fail "pids"
	[ "$(grep -c '^capture ' "$tmp/out")" -eq 2 ] || fail "two capture sections"
	grep -q '^threads by busy time (5 of 5)' "$tmp/out" || fail "threads of both"
	status 0 "$synth/streams.orbit.zst" --csv "$tmp/s.csv"
	grep -q '^ stream 2' "$tmp/out" || fail "second stream"
	grep -q '^778,72,,0,two,' "$tmp/s.csv" || fail "second stream's pid"
	;;
log)
	status 0 "$synth/logs.orbit.zst" --log
	cat > "$tmp/want" <<'END'
0.000000010 [777/31 logger one] first line
0.000000020 [777/32 logger two] second line
0.000000030 [777/31 logger one] third line
0.000000040 [777/32 logger two] fourth line
0.000000050 [777/31 logger one] marker (4 bytes): 01 02 03 04
END
	diff -u "$tmp/want" "$tmp/out" || fail "--log"
	status 0 "$synth/logs.orbit.zst" --log --thread 32
	[ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "--log --thread"
	;;
progress)
	status 0 "$emit" --progress
	cp "$tmp/out" "$tmp/with"
	grep -q '%' "$tmp/err" || fail "no progress on stderr"
	status 0 "$emit"
	cmp -s "$tmp/out" "$tmp/with" || fail "progress changed stdout"
	[ ! -s "$tmp/err" ] || fail "progress without --progress on a small pipe"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo ok
