# srun --export=NONE --mscale-contract: the file's hand-over to the nodes is not in the step's
# environment, so the step fails before its task runs rather than running without its contract.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_noexport/ "$(dirname "$0")/one-cpu.msc" >"$d/ok.msc"
srun -n1 --export=NONE --mscale-contract="$d/ok.msc" /bin/sh -c 'echo TASK RAN'
echo "srun exit $?"
echo "held after the step: $(held "$d")"
