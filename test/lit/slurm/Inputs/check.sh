# --mscale-contract-check: the plan is printed per node, nothing is applied, the task runs as usual.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_check/ "$(dirname "$0")/one-cpu.msc" >"$d/check.msc"
srun -n1 --mscale-contract-check --mscale-contract="$d/check.msc" bash -c 'echo "task MSCALE_CONTRACT=${MSCALE_CONTRACT:-unset}"'
echo "srun exit $?"
echo "held after the step: $(held "$d")"
