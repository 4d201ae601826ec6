#!/usr/bin/env bash
# What the SPANK plugin adds to a job step: `srun -n1 true` with and without --mscale-contract on the
# one-node Slurm of scripts/with-slurm.sh, alternating A/B so that load drifts hit both alike; medians
# and their ratio. The contract pins one role to CPU 1 (the agent applies and releases it each step).
#   bench/slurm/step_overhead.sh [RUNS]     (root; build: mscale_spank and the tools)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-20}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
sed s/NAME/bench_slurm_step/ "$root/test/lit/slurm/Inputs/one-cpu.msc" >"$work/bench.msc"
cat >"$work/inner.sh" <<INNER
set -euo pipefail
export PATH=$root/build/bin:\$PATH
. $root/test/lit/slurm/Inputs/common.sh
start_agent $work
ms() { local s e; s=\$(date +%s%N); "\$@" >/dev/null 2>&1; e=\$(date +%s%N); echo \$(( (e - s) / 1000000 )); }
srun -n1 true >/dev/null 2>&1 # warm: the first step pays slurmd's first-launch costs
for i in \$(seq $runs); do
  echo "plain \$(ms srun -n1 true)"
  echo "contract \$(ms srun -n1 --mscale-contract=$work/bench.msc true)"
done
INNER
"$root/scripts/with-slurm.sh" --plugstack "required $root/build/lib/mscale_spank.so bindir=$root/build/bin socket=$work/agent.sock stdlib=$root/stdlib" \
  -- bash "$work/inner.sh" >"$work/times"
median() { awk -v k="$1" '$1 == k {print $2}' "$work/times" | sort -n | awk '{a[NR]=$1} END {print (NR % 2 ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2)}'; }
plain=$(median plain)
contract=$(median contract)
echo "runs $runs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "srun -n1 true: median $plain ms"
echo "srun -n1 --mscale-contract=... true: median $contract ms $(awk -v a="$contract" -v b="$plain" 'BEGIN {printf "(ratio %.2f, +%.1f ms)", a / b, a - b}')"
