#!/bin/sh
# test_cases.sh LIST — every case of every test program has its ctest entry,
# and a name that is not a case fails. LIST (written by tests/CMakeLists.txt):
# one line per program, its path then the cases orbit_add_test registered
# for it. Each program's --list (harness.h) must name exactly those, and
# `program no-such-case` must exit 2.
set -u
list=$1
status=0
while read -r program registered; do
	if ! listed=$("$program" --list); then
		echo "$program: --list failed" >&2
		status=1
		continue
	fi
	for c in $listed; do
		case " $registered " in
		*" $c "*) ;;
		*)
			echo "$program: case $c has no ctest entry (orbit_add_test ... ARGS $c)" >&2
			status=1
			;;
		esac
	done
	for c in $registered; do
		case " $(echo $listed) " in
		*" $c "*) ;;
		*)
			echo "$program: ctest runs case $c, which it does not have" >&2
			status=1
			;;
		esac
	done
	"$program" no-such-case 2>/dev/null
	rc=$?
	if [ $rc -ne 2 ]; then
		echo "$program no-such-case: exit status $rc, not 2" >&2
		status=1
	fi
	echo "$(basename "$program"): $(echo $listed | wc -w) cases"
done <"$list"
exit $status
