# The agent's descriptors reach a Slurm task (its control page, the role's hugepage pool), the agent
# sees its beats, and a task that falls silent is killed so that the step ends instead of hanging.
set -uo pipefail
d=$1
python=$2 # env PYTHONPATH=... /usr/bin/python3: the mscale package from the source tree
. "$(dirname "$0")/common.sh"
start_agent "$d"
cp "$(dirname "$0")/pages.msc" "$d/pages.msc"
task=$(dirname "$0")/beating-task.py
srun -n1 --mscale-contract="$d/pages.msc" $python "$task" status "$d/agent.sock"
echo "srun exit $?"
echo "held after the step: $(held "$d")"
start=$(date +%s)
srun -n1 --mscale-contract="$d/pages.msc" $python "$task" hang
echo "hung srun exit $? after $(($(date +%s) - start)) s"
grep -o "attached process [0-9]* hung: no heartbeat for .*" "$d/agent.log" | sed 's/[0-9][0-9.]* ms (/N ms (/; s/process [0-9]*/process P/'
echo "held after the hung step: $(held "$d")"
