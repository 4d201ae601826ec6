#!/usr/bin/env bash
# filter.sh FAKECUDA PATTERN TMP: traces one process by pid and one by cgroup while another process
# calls the same library; prints the counted lines prefixed by the mode.
set -euo pipefail
fake=$1 pattern=$2 tmp=$3
lib=$fake/plain/libcuda.so.1
"$pattern" --lib "$lib" --pattern launches --seconds 30 &
other=$!
trap 'kill $other 2>/dev/null || true; rmdir "$cg" 2>/dev/null || true' EXIT
sleep 0.2
mscale-trace --lib "$lib" -- "$pattern" --lib "$lib" --pattern counts --iterations 10 | grep '^cuLaunchKernel ' \
  | sed 's/^/pid: /'
mount=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
cg=$mount/msc-lit-trace-$$
mkdir "$cg"
mscale-trace --cgroup "$cg" --lib "$lib" -- "$pattern" --lib "$lib" --pattern counts --iterations 15 --join-cgroup "$cg" \
  | grep -E '^(cuLaunchKernel|cuCtxSynchronize) ' | sed 's/^/cgroup: /'
