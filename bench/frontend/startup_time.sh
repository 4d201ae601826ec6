#!/usr/bin/env bash
# Whole-process wall time of the tools against lstopo reading the same hwloc XML (the same hwloc
# library parses it), all in one interleaved loop so that the machine's load hits every command
# alike: RUNS rounds, each running every command once; prints each command's median in ms and its
# ratio to the lstopo of the same file (issue 15: "Start-up and compile", docs/PERFORMANCE.md).
# The tools run with the content cache off (MSCALE_NO_CACHE=1) and with a warm one (a fresh
# directory filled by one run first). A cached mscalec also runs writing a plan where none is yet
# (new-file) and to stdout: replacing an existing plan costs a file system flush (docs/PERFORMANCE.md).
# Usage: bench/frontend/startup_time.sh BUILD_DIR [RUNS] [FIXTURES_DIR]
set -euo pipefail
build=${1:?usage: startup_time.sh BUILD_DIR [RUNS] [FIXTURES_DIR]}
runs=${2:-30}
fixtures=${3:-$(dirname "$0")/../../../shared/fixtures/topologies}
jureca=$fixtures/hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml
numa24=$fixtures/hwloc-xml/hwloc-192em64t-24n8c2t.xml
contract=$(dirname "$0")/../../examples/contracts/jureca-a100.msc
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
export MSCALE_CACHE_DIR=$out/cache

names=(true lstopo-jureca mscalec-nocache mscalec-cached mscalec-new-file mscalec-stdout lstopo-24numa
  cli-show-nocache cli-show-cached)
run() { # run NAME: one run of the command NAME stands for
  case $1 in
  true) /bin/true ;;
  lstopo-jureca) lstopo-no-graphics -i "$jureca" --of console ;;
  mscalec-nocache) MSCALE_NO_CACHE=1 "$build/bin/mscalec" --topology "$jureca" "$contract" -o "$out/p.msp" ;;
  mscalec-cached) "$build/bin/mscalec" --topology "$jureca" "$contract" -o "$out/p.msp" ;;
  mscalec-new-file) "$build/bin/mscalec" --topology "$jureca" "$contract" -o "$out/new.msp" ;;
  mscalec-stdout) "$build/bin/mscalec" --topology "$jureca" "$contract" --emit=plan -o - ;;
  lstopo-24numa) lstopo-no-graphics -i "$numa24" --of console ;;
  cli-show-nocache) MSCALE_NO_CACHE=1 "$build/bin/mscale-cli" topology show --topology "$numa24" ;;
  cli-show-cached) "$build/bin/mscale-cli" topology show --topology "$numa24" ;;
  esac
}
for n in "${names[@]}"; do run "$n" >/dev/null 2>&1 || true; done # warm the page cache and the content cache
for ((i = 0; i < runs; i++)); do
  for n in "${names[@]}"; do
    rm -f "$out/new.msp"
    start=$(date +%s%N)
    run "$n" >/dev/null 2>&1 || true
    end=$(date +%s%N)
    echo "$n $(( (end - start) / 1000 ))" >>"$out/times"
  done
done
median() { awk -v n="$1" '$1 == n {print $2}' "$out/times" | sort -n |
  awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "%.2f", m / 1000}'; }
declare -A med
for n in "${names[@]}"; do med[$n]=$(median "$n"); done
echo "runs: $runs (interleaved), load average: $(cut -d' ' -f1-3 /proc/loadavg)"
for n in "${names[@]}"; do
  base=${med[lstopo-jureca]}
  [[ $n == lstopo-24numa || $n == cli-show-* ]] && base=${med[lstopo-24numa]}
  awk -v n="$n" -v t="${med[$n]}" -v b="$base" 'BEGIN {printf "%-18s %8.2f ms  %5.2fx lstopo of the same file\n", n, t, t / b}'
done
