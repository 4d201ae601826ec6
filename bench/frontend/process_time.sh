#!/usr/bin/env bash
# Whole-process wall time of `mscalec CONTRACT` against a baseline process spawn (/bin/true), both
# run RUNS times in the same loop shape; prints the medians in milliseconds and their difference.
# Usage: bench/frontend/process_time.sh BUILD_DIR [CONTRACT] [RUNS]
set -euo pipefail
build=${1:?usage: process_time.sh BUILD_DIR [CONTRACT] [RUNS]}
contract=${2:-examples/contracts/qwen-vl-chat.msc}
runs=${3:-50}
median_ms() { # median_ms COMMAND...: RUNS wall times of COMMAND, median in ms
  local times=() i start end
  for ((i = 0; i < runs; i++)); do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.2f\n", m / 1000}'
}
"$build/bin/mscalec" "$contract" >/dev/null # warm the page cache
base=$(median_ms /bin/true)
tool=$(median_ms "$build/bin/mscalec" "$contract")
echo "runs: $runs"
echo "/bin/true median: $base ms"
echo "mscalec $contract median: $tool ms"
awk -v t="$tool" -v b="$base" 'BEGIN {printf "mscalec minus spawn: %.2f ms; ratio mscalec / spawn: %.1fx\n", t - b, t / b}'
