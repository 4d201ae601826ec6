# srun --mscale-contract: the task runs in the contract's cpuset cgroup, pinned to its CPU, with the
# workers' variables; the contract is released when the step ends.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_ok/ "$(dirname "$0")/one-cpu.msc" >"$d/ok.msc"
cd "$d" # a relative file name, as users give it
srun -n1 --mscale-contract=ok.msc bash -c 'grep Cpus_allowed_list /proc/self/status; grep -E "^[0-9]+:(cpuset|):" /proc/self/cgroup | sort; env | grep -E "^MSCALE_(CONTRACT|CPUS|ROLES|ROLE_DATA_CPUS|PLAN)=" | sort'
echo "srun exit $?"
echo "held after the step: $(held "$d")"
[[ -e /sys/fs/cgroup/cpuset/mscale/lit_slurm_ok || -e /sys/fs/cgroup/unified/mscale/lit_slurm_ok ]] || echo "cgroups removed"
