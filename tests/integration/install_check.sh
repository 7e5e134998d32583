#!/bin/sh
# install_check.sh SOURCE_DIR BUILD_DIR — installs the build into a temporary
# prefix with `cmake --install`, then builds and runs a consumer against it
# twice, as users would:
#   1. tests/integration/install_consumer with find_package(orbit), linking
#      orbit::orbit (and orbit::orbit_static, and from C++);
#   2. main.c compiled with the line docs/api.md gives for a prefix install,
#      `pkg-config --cflags --libs orbit` plus an rpath to its libdir, and
#      run with no LD_LIBRARY_PATH;
#   3. main.c compiled with `pkg-config --cflags --libs orbit-static`: the
#      binary must not depend on liborbit.so at all (ldd), nor must the
#      find_package consumer linked with orbit::orbit_static.
# The shared consumers must load liborbit from the prefix, not the build tree.
# Source paths: the find_package consumer (its ORBIT_SOURCE_ROOT property) and
# the pkg-config one (source_root_flag) store main.c, not the absolute path.
# Exits 77 when pkg-config or a C compiler is missing, and for a sanitizer
# build (ORBIT_SANITIZED=1): its libraries need the sanitizer runtime, which a
# plain consumer does not link.
set -eu
src=${1:?usage: install_check.sh SOURCE_DIR BUILD_DIR}
build=${2:?usage: install_check.sh SOURCE_DIR BUILD_DIR}
cc=${CC:-cc}
[ "${ORBIT_SANITIZED:-0}" = 1 ] && { echo "skip: sanitizer build" >&2; exit 77; }
command -v pkg-config >/dev/null 2>&1 || { echo "skip: pkg-config not found" >&2; exit 77; }
command -v "$cc" >/dev/null 2>&1 || { echo "skip: no C compiler ($cc)" >&2; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/orbit-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
tmp=$(cd "$tmp" && pwd -P)
prefix=$tmp/prefix

fail() {
	echo "install_check: $*" >&2
	exit 1
}

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "cmake --install $build failed"; }

[ -f "$prefix/include/orbit.h" ] || fail "orbit.h not installed in $prefix/include"
[ -f "$prefix/include/orbit/internal.h" ] ||
	fail "orbit/internal.h (included by orbit.h) not installed in $prefix/include"
pc=$(find "$prefix" -name orbit.pc | head -n 1)
[ -n "$pc" ] || fail "orbit.pc not installed under $prefix"
libdir=$(dirname "$(dirname "$pc")")
for f in liborbit.so liborbit.a cmake/orbit/orbitConfig.cmake pkgconfig/orbit-static.pc; do
	[ -e "$libdir/$f" ] || fail "$libdir/$f not installed"
done

check_run() { # name binary [env...]: runs it, checks where liborbit came from
	name=$1
	shift
	out=$("$@") || fail "$name: exited with $?"
	lib=$(printf '%s\n' "$out" | sed -n 's/^liborbit: //p')
	case "$lib" in
	static) ;;
	"$prefix"/*) ;;
	*) fail "$name loaded liborbit from '$lib', not from $prefix" ;;
	esac
	echo "$name: ok ($lib)"
}

# 1. find_package(orbit) -> orbit::orbit
cmake -S "$src/tests/integration/install_consumer" -B "$tmp/consumer" \
	-DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1 ||
	{ cat "$tmp/configure.log" >&2; fail "configuring the find_package consumer failed"; }
cmake --build "$tmp/consumer" >"$tmp/build.log" 2>&1 ||
	{ cat "$tmp/build.log" >&2; fail "building the find_package consumer failed"; }
check_run "find_package orbit::orbit" "$tmp/consumer/consumer"
check_run "find_package orbit::orbit_static" "$tmp/consumer/consumer_static"
check_run "find_package C++" "$tmp/consumer/consumer_cxx"

# the file a consumer's scopes name, from a capture of its run
stored_file() { # binary
	rm -f "$tmp/src.orbit.zst" "$tmp/src.csv"
	ORBIT_CAPTURE=$tmp/src.orbit.zst "$1" >/dev/null || fail "$1 with ORBIT_CAPTURE: exit $?"
	"$build/replay/orbit-replay" -q --csv "$tmp/src.csv" "$tmp/src.orbit.zst" ||
		fail "orbit-replay on $1's capture failed"
	python3 -c 'import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1])) if r["name"] == "work"]
print(sorted({r["file"] for r in rows}))' "$tmp/src.csv"
}
got=$(stored_file "$tmp/consumer/consumer")
[ "$got" = "['main.c']" ] || fail "ORBIT_SOURCE_ROOT: the consumer stored $got, not main.c"

# 2. pkg-config --cflags --libs orbit
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs orbit) || fail "pkg-config --cflags --libs orbit failed"
# The -I directory must be the installed one (orbit.pc relocatable, not
# the configure-time prefix).
incdir=
for w in $flags; do
	case "$w" in -I*) incdir=${w#-I} ;; esac
done
if [ -z "$incdir" ] || [ ! -d "$incdir" ] ||
	[ "$(cd "$incdir" && pwd -P)" != "$(cd "$prefix/include" && pwd -P)" ]; then
	fail "pkg-config --cflags orbit gives '$flags': its -I is not $prefix/include"
fi
rpath=$(pkg-config --variable=libdir orbit) || fail "pkg-config --variable=libdir orbit failed"
# shellcheck disable=SC2086 # flags are words
"$cc" -o "$tmp/consumer_pc" "$src/tests/integration/install_consumer/main.c" $flags \
	-Wl,-rpath,"$rpath" >"$tmp/pc.log" 2>&1 ||
	{ cat "$tmp/pc.log" >&2; fail "compiling with pkg-config flags '$flags' failed"; }
check_run "pkg-config (rpath, no LD_LIBRARY_PATH)" env -u LD_LIBRARY_PATH "$tmp/consumer_pc"
root_flag=$(pkg-config --variable=source_root_flag orbit) || fail "no source_root_flag in orbit.pc"
# shellcheck disable=SC2086 # flags are words
"$cc" -o "$tmp/consumer_pc_rel" "$src/tests/integration/install_consumer/main.c" $flags \
	"$root_flag$src/tests/integration/install_consumer/=" -Wl,-rpath,"$rpath" \
	>"$tmp/pcr.log" 2>&1 || { cat "$tmp/pcr.log" >&2; fail "compiling with $root_flag failed"; }
got=$(stored_file "$tmp/consumer_pc_rel")
[ "$got" = "['main.c']" ] || fail "source_root_flag: the consumer stored $got, not main.c"
got=$(stored_file "$tmp/consumer_pc")
case "$got" in "['/"*) ;; *) fail "without a root the stored path $got is not the absolute one" ;; esac

# 3. pkg-config --cflags --libs orbit-static: no liborbit.so at run time.
no_shared_orbit() { # name binary
	if ldd "$2" | grep -q 'liborbit\.so'; then
		ldd "$2" >&2
		fail "$1: depends on liborbit.so"
	fi
}
sflags=$(pkg-config --cflags --libs orbit-static) || fail "pkg-config --cflags --libs orbit-static failed"
# shellcheck disable=SC2086 # flags are words
"$cc" -o "$tmp/consumer_static_pc" -DCONSUMER_STATIC=1 \
	"$src/tests/integration/install_consumer/main.c" $sflags >"$tmp/spc.log" 2>&1 ||
	{ cat "$tmp/spc.log" >&2; fail "compiling with pkg-config flags '$sflags' failed"; }
no_shared_orbit "pkg-config orbit-static" "$tmp/consumer_static_pc"
check_run "pkg-config orbit-static" env -u LD_LIBRARY_PATH "$tmp/consumer_static_pc"
no_shared_orbit "find_package orbit::orbit_static" "$tmp/consumer/consumer_static"
