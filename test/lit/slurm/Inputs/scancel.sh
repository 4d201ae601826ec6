# A step cancelled with scancel while its task runs: the contract is released (the agent holds
# nothing, the cgroups are gone) and nothing of the task is left.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_cancel/ "$(dirname "$0")/one-cpu.msc" >"$d/cancel.msc"
srun -n1 -J lit_slurm_cancel --mscale-contract="$d/cancel.msc" sleep 307 >"$d/srun.out" 2>&1 &
srun_pid=$!
wait_for "the contract's admission" sh -c "mscale-cli contract list --socket $d/agent.sock | grep -q lit_slurm_cancel"
wait_for "the task" pgrep -f "sleep 307$"
echo "held while running: $(held "$d")"
scancel -n lit_slurm_cancel
wait $srun_pid
echo "srun exit $?"
echo "held after scancel: $(held "$d")"
pgrep -f "sleep 307$" >/dev/null || echo "task gone"
[[ -e /sys/fs/cgroup/cpuset/mscale/lit_slurm_cancel || -e /sys/fs/cgroup/unified/mscale/lit_slurm_cancel ]] || echo "cgroups removed"
