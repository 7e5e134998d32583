#!/bin/sh
# pipeline_acceptance.sh NEW_BUILD BASE_BUILD [RUNS] — the pipeline's acceptance figures:
# orbit-bench-pipeline of this tree and of a baseline tree, run after run
# interleaved (the machine is shared: each figure beside a baseline measured
# in the same session), every row printed, the medians by pipeline_median.py.
#
#   cmake --build build/dev --target orbit-bench-pipeline orbit-collector
#   (the baseline: the same bench source built in a worktree of the older
#   commit, so both print the same columns)
#   sh bench/pipeline_acceptance.sh build/dev ../base/build/dev 3 | tee acc.log
#   python3 bench/pipeline_median.py acc.log
set -u
new=$1/bench/orbit-bench-pipeline
base=$2/bench/orbit-bench-pipeline
runs=${3:-3}
pair() { # label args...
	label=$1
	shift
	k=1
	while [ "$k" -le "$runs" ]; do
		for which in new base; do
			eval exe=\$$which
			echo "### $label $which run $k"
			"$exe" "$@" 2>&1 | grep -v '^orbit: '
		done
		k=$((k + 1))
	done
}
pair rates --seconds 10 --rates 1000000,5000000,10000000
pair spin1 --spin --seconds 5 --rates 4000000
pair spin2 --spin --threads 2 --seconds 5 --rates 4000000
pair burst --burst 4,20000
pair hot --hot 20000000
pair rss --rss 1,4,16
