#!/usr/bin/env bash
# elastic-ddp.sh WORK: an elastic data-parallel PyTorch job (nodes = 2..4, gloo, the worker
# elastic_worker.py) on the four node agents of scripts/with-etcd.sh (network namespaces, each node
# its own address; recorded nodes, sim backends) and its controller. It is placed at 4; two agents are
# SIGKILLed one after the other (4 -> 3 -> 2, each a lost node with no spare); both are started again
# in their namespaces (DIR/agents/NODE/serve.sh) and the job grows back to 4 at a snapshot boundary.
# Its history is then checked against the same job run uninterrupted at 4 ranks on this machine
# (elastic_history.py). Prints one line per fact for FileCheck (the timings on stderr); the job's
# processes are stopped on exit, the cluster by with-etcd.sh.
work=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
mkdir -p "$work/ref"
cleanup() {
  pkill -f "$work/train.log" 2>/dev/null
  wait 2>/dev/null
}
trap cleanup EXIT
source "$here/common.sh"
agents=$CLUSTER_DIR/agents
fail_logs="$CLUSTER_DIR/controllers/*.log $agents/*/agent.log"
py=(env PYTHONPATH="$root/python" MSCALE_BIN="$(dirname "$(command -v mscale-exec)")" /usr/bin/python3)
steps=${STEPS:-800}
worker=(--log "$work/train.log" --snapshot-dir "$work/snaps" --steps "$steps" --every 5)
registered() { [[ $(ectl get --prefix /mscale/nodes/ --keys-only | grep -c .) == "$1" ]]; }
placed_on() { status_of elastic | sed -n 's/^placed \([^ ]*\) .*/\1/p'; }
size_now() { placed_on | tr ',' '\n' | grep -c .; }
steps_at() { # WORLD: the steps rank 0 logged at that world size
  grep -c " world $1 rank 0 " "$work/train.log" 2>/dev/null || echo 0; }

# The uninterrupted run: four ranks on this machine, told by hand what the cluster would tell them.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for r in 0 1 2 3; do
  RANK=$r WORLD_SIZE=4 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MSCALE_GLOBAL_BATCH=24 "${py[@]}" "$here/elastic_worker.py" \
    --log "$work/ref/train.log" --snapshot-dir "$work/ref/snaps" --steps "$steps" 2> "$work/ref/rank$r.err" &
done
wait || fail "the reference run: $(tail -3 "$work"/ref/rank*.err)"

until_ok 30 registered 4 || fail "the agents did not register"
printf 'import "profiles/mlvm.msc";\ncontract elastic uses profile mlvm_light {\n  nodes = 2..4;\n  global_batch = 24 samples;\n  micro_batch = 2 samples;\n  deterministic_reduction = true;\n  fault_tolerance { heartbeat = 2s; }\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' \
  > "$work/elastic.msc"
# gloo finds its own address through the interface that holds the node's: eth0 in a namespace.
mscale-cli cluster submit "$work/elastic.msc" --env GLOO_SOCKET_IFNAME=eth0 -- "${py[@]}" "$here/elastic_worker.py" "${worker[@]}" --delay 0.05 \
  > /dev/null || fail "submit"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1) == placed* ]]" \
  || fail "not placed: $(status_of elastic)"
echo "placed at $(size_now) nodes"

shrink() { # the agent of the job's last node is SIGKILLed; the job is placed again one smaller
  local before victim
  before=$(size_now) victim=$(placed_on | tr ',' '\n' | tail -1)
  kill -9 "$(cat "$agents/$victim/agent.pid")"
  echo "kill $(date +%s.%N)" >> "$work/timings"
  echo "$victim" >> "$work/killed"
  until_ok 60 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1) == placed* && \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1) != *$victim* ]]" \
    || fail "not placed again without $victim: $(status_of elastic)"
  echo "agent of a node SIGKILLed: placed again at $(size_now) nodes (from $before)"
}
until_ok 90 bash -c "(( \$(grep -c ' world 4 rank 0 ' '$work/train.log' 2>/dev/null || echo 0) >= 20 ))" || fail "the job does not train at 4"
shrink
until_ok 90 bash -c "(( \$(grep -c ' world 3 rank 0 ' '$work/train.log' 2>/dev/null || echo 0) >= 20 ))" || fail "the job does not train at 3"
shrink
until_ok 90 bash -c "(( \$(grep -c ' world 2 rank 0 ' '$work/train.log' 2>/dev/null || echo 0) >= 20 ))" || fail "the job does not train at 2"

# Capacity returns: both agents start again; the job grows at a snapshot boundary.
echo "grow $(date +%s.%N)" >> "$work/timings"
for n in $(cat "$work/killed"); do bash "$agents/$n/serve.sh"; done
until_ok 30 registered 4 || fail "the agents did not register again"
until_ok 90 bash -c "(( \$(grep -c ' world 4 rank 0 ' '$work/train.log') > $(steps_at 4) ))" \
  || fail "the job did not grow back to 4: $(status_of elastic); $(ectl get --print-value-only /mscale/contract-events/elastic | tail -3)"
echo "agents back: $(ectl get --print-value-only /mscale/contract-events/elastic | grep -o 'grow from 2 nodes: stopped after step [0-9]*: placed again on [^ ]* (world size [0-9] of 2..4)' \
  | sed -e 's/step [0-9]*/step S/' -e 's/on [^ ]* (/on NODES (/' | tr '\n' ';')"
until_ok 180 bash -c "[[ -s '$work/train.log.final' ]]" || fail "the job did not finish: $(status_of elastic)"
# A node kept across a size change keeps its memory tier: rank 0, kept every time, resumes from it.
echo "resumed from a kept memory tier after a size change: $(cat "$agents"/node*/state/logs/elastic/*.log 2>/dev/null | grep -c 'resumed at step [0-9]* from memory')"
echo "ranks told deterministic_reduction at each size: $(sort -u "$work/train.log.deterministic" | cut -d' ' -f2 | sort -u | tr '\n' ' ')"
"${py[@]}" "$here/elastic_history.py" "$work/train.log" "$work/ref/train.log" --timings "$work/timings"
