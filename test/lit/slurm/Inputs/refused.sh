# A contract the node cannot honour: the step fails before its task runs, the compiler's code and the
# plugin's are in srun's output, srun's exit code is nonzero, and the agent holds nothing.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
srun -n1 --mscale-contract="$(dirname "$0")/missing-cpu.msc" bash -c 'echo TASK RAN'
echo "srun exit $?"
echo "held after the step: $(held "$d")"
[[ -e /sys/fs/cgroup/cpuset/mscale/lit_slurm_refused || -e /sys/fs/cgroup/unified/mscale/lit_slurm_refused ]] || echo "no cgroup made"
