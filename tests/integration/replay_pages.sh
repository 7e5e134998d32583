#!/bin/sh
# replay_pages.sh — orbit-replay --pages.
#   kernel   on four real kernel ftrace pages it prints exactly the
#            reference dump made with libtraceevent's kbuffer
#            (data/sample-pages.expected.txt): page headers, the raw record
#            walk, lost events, every record (time, delta, offset, payload
#            length, first u16), the total
#   damaged  a cut page file and a page of garbage: an error line naming
#            the file and page, the pages before still printed, exit 2
#   sched    on real pages of kernel scheduling events (data/sched: the
#            tracefs instance of agent/src/sched_tracefs.c, a page with a
#            stored lost count among them) it prints what libtraceevent's
#            kbuffer reads, live (tools/kbuffer_dump.c): page headers, lost
#            events, every record
# usage: replay_pages.sh ORBIT_REPLAY DATA_DIR CASE [KBUFFER_DUMP]
set -u
replay=$1 data=$2 case=$3 kbdump=${4:-}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
pick() { grep -E '^(page [0-9]+: |  rec |total )' "$1"; }

case $case in
kernel)
	"$replay" --pages "$data/sample-pages.bin" > "$tmp/out" 2> "$tmp/err" ||
		fail "exit $?: $(cat "$tmp/err")"
	[ "$(grep -c '^  rec ' "$data/sample-pages.expected.txt")" -eq 153 ] ||
		fail "expected file changed"
	# The whole dump, line for line: headers, raw walk, lost events, records.
	diff -u "$data/sample-pages.expected.txt" "$tmp/out" ||
		fail "--pages differs from the kbuffer reference"
	;;
damaged)
	head -c 5000 "$data/sample-pages.bin" > "$tmp/cut.bin"
	"$replay" --pages "$tmp/cut.bin" > "$tmp/out" 2> "$tmp/err"
	st=$?
	[ $st -eq 2 ] || fail "cut file: exit $st, want 2"
	grep -q "^orbit-replay: $tmp/cut.bin: page 1 (file offset 4096): " "$tmp/err" ||
		fail "no error line naming the file and page: $(cat "$tmp/err")"
	[ "$(grep -c '^  rec ' "$tmp/out")" -eq 60 ] || fail "page 0 not printed whole"
	grep -q '^total pages=2 records=60$' "$tmp/out" || fail "total line"
	head -c 4096 /dev/urandom > "$tmp/garbage.bin"
	"$replay" --pages "$tmp/garbage.bin" > "$tmp/out" 2> "$tmp/err"
	st=$?
	[ $st -eq 0 ] || [ $st -eq 2 ] || fail "garbage page: exit $st"
	"$replay" --pages "$tmp/missing.bin" > "$tmp/out" 2> "$tmp/err"
	[ $? -eq 2 ] || fail "missing file: want exit 2"
	grep -q "missing.bin" "$tmp/err" || fail "missing file not named"
	;;
sched)
	[ -n "$kbdump" ] || fail "sched needs KBUFFER_DUMP"
	keep() { grep -E '^(page [0-9]+: |  kbuffer: |  rec |total )' "$1"; }
	for f in cpu0.pages cpu1.pages lost.cpu1.pages; do
		"$kbdump" "$data/sched/$f" > "$tmp/kb" || fail "kbuffer_dump $f: exit $?"
		"$replay" --pages "$data/sched/$f" > "$tmp/out" 2> "$tmp/err" ||
			fail "$f: exit $?: $(cat "$tmp/err")"
		keep "$tmp/kb" > "$tmp/kb.lines"
		keep "$tmp/out" > "$tmp/out.lines"
		[ "$(grep -c '^  rec ' "$tmp/kb.lines")" -gt 0 ] || fail "$f: no records"
		diff -u "$tmp/kb.lines" "$tmp/out.lines" || fail "$f: --pages differs from kbuffer"
	done
	grep -q 'missed_flag=1 stored_flag=1' "$tmp/out" || fail "the lost page is not flagged"
	;;
*)
	fail "unknown case $case"
	;;
esac
echo ok
