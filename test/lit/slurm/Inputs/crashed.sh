# Two tasks on the node, both in the contract; one crashes (SIGSEGV): the step fails and the contract
# is released all the same, by the time srun returns.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_crash/ "$(dirname "$0")/one-cpu.msc" >"$d/crash.msc"
srun -n2 -l --mscale-contract="$d/crash.msc" bash -c 'grep Cpus_allowed_list /proc/self/status; [ "$SLURM_PROCID" = 1 ] && kill -SEGV $$; exit 0' 2>&1 | sort
echo "srun exit ${PIPESTATUS[0]}"
echo "held after the step: $(held "$d")"
[[ -e /sys/fs/cgroup/cpuset/mscale/lit_slurm_crash || -e /sys/fs/cgroup/unified/mscale/lit_slurm_crash ]] || echo "cgroups removed"
