#!/usr/bin/env bash
# Stops everything scripts/cluster-up.sh DIR started, always, in the order that loses nothing: the
# node agents first (SIGTERM: each stops its workers and revokes its registration; a partitioned one
# is healed first so it can), their relays and network namespaces, the controllers, then every etcd
# member (DIR/m*.pid). SIGTERM, then SIGKILL after a bounded wait; a pid whose process is gone, or is
# no longer what was started (the pid was reused), is only forgotten. Leaves data and logs in DIR.
# Exits 0 unless DIR is missing, so it can run from any trap.
set -uo pipefail
dir=${1:?usage: cluster-down.sh DIR}
[[ -d $dir ]] || { echo "cluster-down: no directory $dir" >&2; exit 1; }
stop_wait_s=${MSC_ETCD_STOP_WAIT_S:-5}
agent_stop_wait_s=${MSC_AGENT_STOP_WAIT_S:-5}

# stop_pids COMM SECONDS PIDFILE...: SIGTERM (and SIGCONT, for a stopped one) to each live process
# named COMM, SIGKILL to those still there after SECONDS; the pid files go.
# The kernel keeps the first 15 characters of a command's name ("mscale-controll").
running() { [[ $(cat "/proc/$1/comm" 2>/dev/null) == "${2:0:15}" ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }
stop_pids() {
  local comm=$1 wait_s=$2 pid pidfile live=()
  shift 2
  for pidfile in "$@"; do
    [[ -e $pidfile ]] || continue
    pid=$(cat "$pidfile")
    if [[ $pid =~ ^[0-9]+$ ]] && running "$pid" "$comm"; then
      kill -TERM "$pid" 2>/dev/null && kill -CONT "$pid" 2>/dev/null && live+=("$pid")
    fi
    rm -f "$pidfile"
  done
  local deadline=$((SECONDS + wait_s))
  for pid in "${live[@]}"; do
    while running "$pid" "$comm" && ((SECONDS < deadline)); do sleep 0.1; done
    running "$pid" "$comm" && kill -KILL "$pid" 2>/dev/null
  done
  return 0
}

if [[ -d $dir/agents ]]; then
  for ad in "$dir"/agents/*/; do
    [[ -f $ad/netns ]] && ip netns exec "$(cat "$ad/netns")" ip link set lo up 2>/dev/null
    [[ -f $ad/relay.pid ]] && kill -CONT "$(cat "$ad/relay.pid")" 2>/dev/null
  done
  stop_pids mscale-exec "$agent_stop_wait_s" "$dir"/agents/*/agent.pid
  stop_pids python3 1 "$dir"/agents/*/relay.pid "$dir"/agents/*/inner-relay.pid
  for ns in "$dir"/agents/*/netns; do
    [[ -e $ns ]] && ip netns del "$(cat "$ns")" 2>/dev/null && rm -f "$ns"
  done
  # The nodes' network (agents-up --netns): its veths went with their namespaces.
  [[ -f $dir/agents/bridge ]] && ip link del "$(cat "$dir/agents/bridge")" 2>/dev/null
  rm -f "$dir/agents/bridge"
fi
[[ -d $dir/controllers ]] && stop_pids mscale-controller 5 "$dir"/controllers/*.pid

# A running etcd: a zombie (killed, not yet reaped by whoever inherited it) keeps its name but is
# already stopped, and waiting for it to go would only wait for the reaper.
is_etcd() {
  local stat
  [[ $(cat "/proc/$1/comm" 2>/dev/null) == etcd ]] || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

pids=()
for pidfile in "$dir"/m*.pid; do
  [[ -e $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if [[ $pid =~ ^[0-9]+$ ]] && is_etcd "$pid"; then
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  fi
  rm -f "$pidfile"
done
deadline=$((SECONDS + stop_wait_s))
for pid in "${pids[@]}"; do
  while is_etcd "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if is_etcd "$pid"; then
    kill -KILL "$pid" 2>/dev/null
  fi
done
exit 0
