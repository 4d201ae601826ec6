#!/usr/bin/env bash
# Starts a cluster on this machine, for tests and for trying it out: a 3-member etcd on loopback,
# and optionally controllers and node agents serving recorded nodes with the sim backends.
#   scripts/cluster-up.sh DIR [MEMBERS] [--controllers N] [--agents N] [--netns] [--agent-lease-ttl 5s]
#                         [--node-topology FILE]...
# DIR receives, per member N (0, 1, 2): mN.etcd/ (its data), mN.log, mN.pid, mN.endpoint (its client
# host:port); and `endpoints` (every member's, comma-separated: ETCD_ENDPOINTS). Ports are chosen
# free at start, so several clusters (parallel test runs) coexist. Waits, bounded, until every member
# reports healthy (`etcdctl endpoint health`); if that does not happen it stops what it started,
# shows the members' logs and exits 1. Controllers: scripts/cluster/controllers-up.sh (DIR/controllers/);
# agents: scripts/cluster/agents-up.sh (DIR/agents/nodeK/, each agent in a network namespace of its
# own with --netns; DIR/shared is the storage the nodes share). scripts/cluster-down.sh DIR stops it
# all; scripts/cluster/partition.sh DIR NODE cut|heal cuts one agent off from etcd.
# etcd's default timings are kept (heartbeat 100 ms, election 1 s): the minimum lease TTL is then
# 2 s, the figure the cluster's failover times are measured against.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage() {
  echo "usage: cluster-up.sh DIR [MEMBERS] [--controllers N] [--agents N] [--netns] [--agent-lease-ttl 5s] [--node-topology FILE]..." >&2
  exit 2
}
dir=${1:-}
[[ -n $dir && $dir != -* ]] || usage
shift
members=3
if [[ ${1:-} =~ ^[0-9]+$ ]]; then members=$1; shift; fi
controllers=0 agents=0 agent_args=() topologies=()
while (($#)); do
  case $1 in
    --controllers) [[ ${2:-} =~ ^[0-9]+$ ]] || usage; controllers=$2; shift ;;
    --agents) [[ ${2:-} =~ ^[0-9]+$ ]] || usage; agents=$2; shift ;;
    --netns) agent_args+=(--netns) ;;
    # A duration with its unit, like every lease TTL; a bare number of seconds is the older spelling.
    --agent-lease-ttl) [[ ${2:-} =~ ^[0-9]+s?$ ]] || usage; agent_args+=(--lease-ttl "${2%s}s"); shift ;;
    --node-topology) [[ -n ${2:-} ]] || usage; topologies+=("$2"); shift ;;
    *) usage ;;
  esac
  shift
done
health_wait_s=${MSC_ETCD_HEALTH_WAIT_S:-20}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
for tool in etcd etcdctl python3; do
  command -v "$tool" >/dev/null || { echo "cluster-up: '$tool' not found (scripts/setup.sh installs it)" >&2; exit 1; }
done
if compgen -G "$dir/m*.pid" >/dev/null; then
  echo "cluster-up: $dir already holds a cluster's pid files; run scripts/cluster-down.sh $dir first" >&2
  exit 1
fi

# 2 ports per member, all bound at once (so none is handed out twice), then released for etcd.
# Another process could take one in between; the start is then retried with new ports.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

start_members() {
  local ports=($(free_ports $((2 * members))))
  local initial="" endpoints="" i
  # One token for the whole cluster (members with different tokens form different clusters), new
  # at each start so members of an earlier cluster on reused ports are refused.
  local token=msc-$$-$RANDOM
  for ((i = 0; i < members; i++)); do
    initial+="${initial:+,}m$i=http://127.0.0.1:${ports[2 * i + 1]}"
  done
  for ((i = 0; i < members; i++)); do
    local client=127.0.0.1:${ports[2 * i]} peer=127.0.0.1:${ports[2 * i + 1]}
    rm -rf "$dir/m$i.etcd"
    # setsid: the member is not in the caller's process group, so a Ctrl-C meant for a test does
    # not kill it behind cluster-down's back; cluster-down stops it by its pid file.
    setsid etcd --name "m$i" --data-dir "$dir/m$i.etcd" \
      --listen-client-urls "http://$client" --advertise-client-urls "http://$client" \
      --listen-peer-urls "http://$peer" --initial-advertise-peer-urls "http://$peer" \
      --initial-cluster "$initial" --initial-cluster-state new \
      --initial-cluster-token "$token" --logger zap --log-outputs stderr \
      </dev/null >"$dir/m$i.log" 2>&1 &
    echo $! >"$dir/m$i.pid"
    echo "$client" >"$dir/m$i.endpoint"
    endpoints+="${endpoints:+,}$client"
  done
  echo "$endpoints" >"$dir/endpoints"
}

wait_healthy() {
  local deadline=$((SECONDS + health_wait_s)) i
  while ((SECONDS < deadline)); do
    for ((i = 0; i < members; i++)); do
      kill -0 "$(cat "$dir/m$i.pid")" 2>/dev/null || { echo "cluster-up: member m$i exited" >&2; return 1; }
    done
    if etcdctl --endpoints="$(cat "$dir/endpoints")" --dial-timeout=1s --command-timeout=2s \
        endpoint health >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "cluster-up: not every member healthy after ${health_wait_s}s" >&2
  return 1
}

healthy=0
for attempt in 1 2; do
  start_members
  if wait_healthy; then
    healthy=1
    break
  fi
  for ((i = 0; i < members; i++)); do
    echo "--- m$i.log (last lines)" >&2
    tail -3 "$dir/m$i.log" >&2 || true
  done
  "$here/cluster-down.sh" "$dir"
  echo "cluster-up: attempt $attempt failed" >&2
done
((healthy)) || exit 1
if ((controllers)) && ! "$here/cluster/controllers-up.sh" "$dir" "$controllers"; then
  "$here/cluster-down.sh" "$dir"
  exit 1
fi
if ((agents)) && ! "$here/cluster/agents-up.sh" "$dir" "$agents" ${agent_args[@]+"${agent_args[@]}"} \
    ${topologies[@]+"${topologies[@]}"}; then
  "$here/cluster-down.sh" "$dir"
  exit 1
fi
cat "$dir/endpoints"
