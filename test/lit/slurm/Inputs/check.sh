# --mscale-contract-check: the plan is printed per node, nothing is applied, the task runs as usual.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_check/ "$(dirname "$0")/one-cpu.msc" >"$d/check.msc"
# The task writes to a file: srun interleaves its output with the plugin's lines in no set order.
srun -n1 --mscale-contract-check --mscale-contract="$d/check.msc" bash -c "echo task MSCALE_CONTRACT=\${MSCALE_CONTRACT:-unset} > $d/task.out"
echo "srun exit $?"
cat "$d/task.out"
echo "held after the step: $(held "$d")"
