#!/bin/sh
# replay_py.sh — runs one of the orbit-replay Python tests: skips (77)
# where python3 is missing.  usage: replay_py.sh SCRIPT ARGS...
command -v python3 >/dev/null 2>&1 || { echo "skip: python3 not found"; exit 77; }
script=$1
shift
exec python3 "$(dirname "$0")/$script" "$@"
