#!/bin/sh
# exports.sh LIB — liborbit.so exports only orbit_* names
# (ARCHITECTURE.md: "exported symbols only orbit_*"): the public API, and the
# few orbit__ internals that orbit.h's inline write path (orbit/internal.h)
# reaches (listed below, nothing else). The format codecs and protobuf-c's generated code stay
# hidden, and the public entry points are there. Exits 77 when nm is missing.
set -u
lib=${1:?usage: exports.sh path/to/liborbit.so}
command -v nm >/dev/null 2>&1 || { echo "skip: nm not found" >&2; exit 77; }
[ -f "$lib" ] || { echo "$lib: no such library" >&2; exit 1; }

syms=$(nm -D --defined-only "$lib") || { echo "nm -D $lib failed" >&2; exit 1; }
# Names a sanitizer build adds for instrumented globals are the toolchain's.
names=$(printf '%s\n' "$syms" | awk 'NF >= 2 { print $NF }' |
	grep -v -E '^(__odr_asan[._]|__odr_asan_gen_|__asan_|__ubsan_|__tsan_|__sancov_)' | sort -u)

status=0
inline_path='^orbit__(capture_flag|clock_kind|thread_self|thread_attach|emit_named|log_at|monotonic_ns)$'
bad=$(printf '%s\n' "$names" | grep -v -E '^orbit_[a-z0-9]' | grep -v -E "$inline_path" || true)
if [ -n "$bad" ]; then
	echo "$lib exports names outside orbit_* (or orbit__ names the header does not need):" >&2
	printf '%s\n' "$bad" | sed 's/^/  /' >&2
	status=1
fi
for want in orbit_init orbit_flush orbit_shutdown orbit_strerror orbit__capture_flag \
	orbit__emit_named orbit__log_at orbit__thread_attach orbit__thread_self; do
	if ! printf '%s\n' "$names" | grep -qx "$want"; then
		echo "$lib does not export $want" >&2
		status=1
	fi
done
[ $status -eq 0 ] && echo "$(printf '%s\n' "$names" | wc -l) symbols, all orbit_*"
exit $status
