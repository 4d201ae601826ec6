# A step on two nodes (two slurmd on this host, n1 and n2, each with an agent of its own on
# DIR/agent.<node>.sock, which the plugin finds through socket=...%h...): each node admits the contract
# and its task gets it; then n2 already holds a contract on the same core, so n2 refuses, the step
# fails with n2's reason in the user's terminal, n1's task is ended, and n1 is left holding nothing.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
agents=()
trap 'kill ${agents[@]+"${agents[@]}"} 2>/dev/null; wait 2>/dev/null' EXIT
# Each agent in a UTS namespace named after its node, as that node's slurmd is (with-slurm.sh --nodes),
# so that it sees the host name the node's plans are compiled for; host_backend sim: both nodes are
# this machine, whose cgroups and CPU affinity one agent alone may own.
start_node_agent() { # start_node_agent NODE
  printf 'state_dir: %s/state.%s\nhost_backend: sim\n' "$d" "$1" >"$d/node.$1.yaml"
  unshare --uts sh -c 'hostname "$1" && exec mscale-exec serve --socket "$2/agent.$1.sock" --config "$2/node.$1.yaml"' \
    sh "$1" "$d" </dev/null >/dev/null 2>"$d/agent.$1.log" &
  agents+=($!)
  wait_for "the agent of node $1" test -S "$d/agent.$1.sock"
}
held_on() { # held_on NODE
  local out
  out=$(mscale-cli contract list --socket "$d/agent.$1.sock" | awk -F'\t' 'NF > 1 {print $1}' | paste -sd, -)
  echo "${out:-none}"
}
start_node_agent n1
start_node_agent n2
sed s/NAME/lit_slurm_nodes/ "$(dirname "$0")/one-cpu.msc" >"$d/nodes.msc"
sed s/NAME/lit_slurm_blocker/ "$(dirname "$0")/one-cpu.msc" >"$d/blocker.msc"

echo "== both nodes honour it"
srun -N2 -n2 --mscale-contract="$d/nodes.msc" bash -c \
  'echo "task $SLURM_PROCID on $SLURMD_NODENAME: $MSCALE_CONTRACT, CPUs $MSCALE_CPUS, control page $(readlink /proc/self/fd/$MSCALE_CONTROL_FD)"' |
  sort
echo "srun exit ${PIPESTATUS[0]}"
echo "held: n1 $(held_on n1), n2 $(held_on n2)"
grep -ho "info: process [0-9]* attached" "$d/agent.n1.log" "$d/agent.n2.log" | sed 's/[0-9][0-9]*/P/' | sort | uniq -c | sed 's/^ *//'

echo "== n2 cannot honour it"
unshare --uts sh -c 'hostname n2 && exec mscalec --topology live -o "$1/blocker.msp" "$1/blocker.msc"' sh "$d" 2>/dev/null &&
  mscale-cli contract submit --socket "$d/agent.n2.sock" "$d/blocker.msp" >/dev/null
# n1's task may start before n2's refusal reaches srun; --kill-on-bad-exit ends it then (docs/slurm.md).
# The sleep holds none of the task's output: proctrack/linuxproc can miss a child that is being forked
# when the step is killed, and an orphaned sleep holding the task's stdout kept srun waiting for its
# end (seen once under load: the task was killed at once, srun returned 60 s later).
start=$(date +%s)
srun -N2 -n2 --kill-on-bad-exit=1 --mscale-contract="$d/nodes.msc" \
  bash -c '[[ $SLURMD_NODENAME == n2 ]] && echo "TASK RAN on n2"; sleep 60 </dev/null >/dev/null 2>&1
           echo "TASK FINISHED on $SLURMD_NODENAME"'
echo "refused srun exit $? after $(($(date +%s) - start)) s"
echo "held: n1 $(held_on n1), n2 $(held_on n2)"
