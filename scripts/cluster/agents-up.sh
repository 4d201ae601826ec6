#!/usr/bin/env bash
# Starts N node agents on the etcd that scripts/cluster-up.sh started in DIR (DIR/endpoints), each
# serving a recorded node with the sim backends (GPU, RDMA, host), the way a user tries the cluster on
# one machine:
#   scripts/cluster/agents-up.sh DIR N [--netns] [--lease-ttl 5s] [TOPOLOGY...]
# Agent K serves node nodeK, recorded by the K-th TOPOLOGY (cycling; default: the JUWELS Booster
# 4xA100 node of ../shared/fixtures/topologies), and keeps in DIR/agents/nodeK/: node.yaml (its
# config), state/ (its state directory), agent.sock, agent.log, agent.pid, relay.pid, relay.ready,
# serve.sh (starts the agent again as it was started: a node that comes back after its agent died).
# Each agent reaches etcd through a relay of its own (scripts/cluster/relay.py), so that
# scripts/cluster/partition.sh can cut one node off. With --netns each agent runs in a network
# namespace of its own (msc-<id>-nodeK; DIR/agents/nodeK/netns), whose loopback holds the only way
# out to etcd: a relay to a Unix socket that the host-side relay forwards to etcd. The namespaces
# share one more network, the nodes' own: a bridge (DIR/agents/bridge) with one veth per namespace,
# its end `eth0` holding the node's address (10.233.S.K/24, DIR/agents/nodeK/address), which the
# agent advertises: the ranks of a multi-node job reach each other there (MASTER_ADDR). Without
# --netns every node is 127.0.0.1. Each agent serves its HTTP endpoint (metrics, worker output for
# `mscale-cli cluster logs`) on its address, a port the kernel picks, advertised in its registration. Workers share DIR/shared: the storage the nodes share (snapshots'
# disk tier). Waits, bounded, until every node is registered.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/tools.sh"
usage() { echo "usage: agents-up.sh DIR N [--netns] [--lease-ttl 5s] [TOPOLOGY...]" >&2; exit 2; }
dir=${1:-}; count=${2:-}
[[ -n $dir && $count =~ ^[0-9]+$ ]] || usage
shift 2
netns=0 lease_ttl=5s topologies=()
while (($#)); do
  case $1 in
    --netns) netns=1 ;;
    --lease-ttl) lease_ttl=${2:?}; shift ;;
    -*) usage ;;
    *) topologies+=("$(cd "$(dirname "$1")" && pwd)/$(basename "$1")") ;;
  esac
  shift
done
root=$(cd "$here/../.." && pwd)
((${#topologies[@]})) || topologies=("$root/../shared/fixtures/topologies/hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml")
for t in "${topologies[@]}"; do [[ -r $t ]] || { echo "agents-up: cannot read topology '$t'" >&2; exit 1; }; done
register_wait_s=${MSC_CLUSTER_REGISTER_WAIT_S:-30}
python=/usr/bin/python3
exec_tool=$(msc_tool mscale-exec)
IFS=, read -r -a members <"$dir/endpoints"
id=$(basename "$dir" | tr -c 'A-Za-z0-9\n' '-' | tail -c 12)
mkdir -p "$dir/shared" "$dir/agents"
if ((netns)); then
  # One /24 per cluster (one cluster at a time runs with namespaces; a collision only fails to start).
  subnet=$(( $(printf '%s' "$id" | cksum | cut -d' ' -f1) % 250 + 1 ))
  bridge=mb-$id
  ip link add "$bridge" type bridge
  echo "$bridge" >"$dir/agents/bridge"
  ip addr add "10.233.$subnet.254/24" dev "$bridge"
  ip link set "$bridge" up
fi

wait_file() { # wait_file PATH SECONDS
  local end=$((SECONDS + $2))
  until [[ -s $1 ]]; do ((SECONDS < end)) || return 1; sleep 0.05; done
}

for ((k = 1; k <= count; k++)); do
  node=node$k
  topo=${topologies[$(((k - 1) % ${#topologies[@]}))]}
  ad=$dir/agents/$node
  mkdir -p "$ad/state"
  cat >"$ad/node.yaml" <<YAML
# Agent $node of scripts/cluster-up.sh: a recorded node, served with the sim backends.
gpu_backend: sim
rdma: { enabled: true, backend: sim }
host_backend: sim
state_dir: $ad/state
# Its own ledger: the nodes on this machine are simulated, each holds only its own resources.
claims_dir: $ad/claims
YAML
  pairs=() inner=()
  for ((j = 0; j < ${#members[@]}; j++)); do
    if ((netns)); then
      pairs+=("unix:$ad/etcd-m$j.sock=tcp:${members[j]}")
      inner+=("tcp:${members[j]}=unix:$ad/etcd-m$j.sock")
    else
      pairs+=("tcp:127.0.0.1:0=tcp:${members[j]}")
    fi
  done
  rm -f "$ad/relay.ready" "$ad/inner.ready"
  setsid "$python" "$here/relay.py" --ready "$ad/relay.ready" "${pairs[@]}" </dev/null >/dev/null 2>"$ad/relay.log" &
  echo $! >"$ad/relay.pid"
  wait_file "$ad/relay.ready" 10 || { echo "agents-up: the relay of $node did not start" >&2; exit 1; }
  run=()
  if ((netns)); then
    ns=msc-$id-$node
    ip netns add "$ns"
    echo "$ns" >"$ad/netns"
    ip netns exec "$ns" ip link set lo up
    address=10.233.$subnet.$k
    ip link add "mv$subnet-$k" type veth peer name eth0 netns "$ns"
    ip link set "mv$subnet-$k" master "$bridge" up
    ip -n "$ns" addr add "$address/24" dev eth0
    ip -n "$ns" link set eth0 up
    # The namespace's loopback listens on the members' own addresses, so the agent inside uses the
    # cluster's endpoints as they are.
    setsid ip netns exec "$ns" "$python" "$here/relay.py" --ready "$ad/inner.ready" "${inner[@]}" \
      </dev/null >/dev/null 2>"$ad/inner-relay.log" &
    echo $! >"$ad/inner-relay.pid"
    wait_file "$ad/inner.ready" 10 || { echo "agents-up: the relay inside $ns did not start" >&2; exit 1; }
    endpoints=$(cat "$dir/endpoints")
    run=(ip netns exec "$ns")
  else
    endpoints=$(paste -sd, "$ad/relay.ready")
    address=127.0.0.1
  fi
  echo "$address" >"$ad/address"
  # The agent's start, kept as a script: a node that comes back (its agent killed) is started again
  # with it, in its namespace, as it was first.
  {
    echo '#!/usr/bin/env bash'
    echo "# Starts the agent of $node as scripts/cluster/agents-up.sh did; its pid goes to agent.pid."
    printf 'setsid'
    printf ' %q' "${run[@]}" "$exec_tool" serve --endpoints "$endpoints" --node "$node" --topology "$topo" \
      --config "$ad/node.yaml" --socket "$ad/agent.sock" --lease-ttl "$lease_ttl" --advertise-address "$address" \
      --metrics "$address:0"
    printf ' </dev/null >/dev/null 2>>%q &\n' "$ad/agent.log"
    printf 'echo $! >%q\n' "$ad/agent.pid"
  } >"$ad/serve.sh"
  : >"$ad/agent.log"
  bash "$ad/serve.sh"
done

deadline=$((SECONDS + register_wait_s))
while true; do
  registered=$(etcdctl --endpoints="$(cat "$dir/endpoints")" get --prefix /mscale/nodes/ --keys-only 2>/dev/null | grep -c . || true)
  ((registered >= count)) && break
  for ad in "$dir"/agents/node*/; do
    if ! kill -0 "$(cat "$ad/agent.pid")" 2>/dev/null; then
      echo "agents-up: the agent of $(basename "$ad") exited:" >&2
      tail -n 3 "$ad/agent.log" >&2
      exit 1
    fi
  done
  if ((SECONDS >= deadline)); then
    echo "agents-up: $registered of $count nodes registered after ${register_wait_s}s" >&2
    tail -n 3 "$dir"/agents/*/agent.log >&2 || true
    exit 1
  fi
  sleep 0.2
done
