#!/usr/bin/env bash
# Cuts one node agent of scripts/cluster-up.sh off from etcd, or heals the cut:
#   scripts/cluster/partition.sh DIR NODE cut|heal
# In a network namespace (agents-up --netns) the namespace's loopback and its link to the other
# nodes go down: the agent's connections to its relay see a dead network, and so do its workers'. Otherwise the agent's relay is stopped (SIGSTOP):
# connections stay open and nothing flows, a black hole. Either way etcd and every other agent are
# untouched; healing lets the agent reach etcd again.
set -euo pipefail
dir=${1:?usage: partition.sh DIR NODE cut|heal}
node=${2:?usage: partition.sh DIR NODE cut|heal}
what=${3:?usage: partition.sh DIR NODE cut|heal}
ad=$dir/agents/$node
[[ -d $ad ]] || { echo "partition: no agent '$node' in $dir" >&2; exit 1; }
case $what in
  cut)
    if [[ -f $ad/netns ]]; then
      ip netns exec "$(cat "$ad/netns")" ip link set lo down
      ip netns exec "$(cat "$ad/netns")" ip link set eth0 down 2>/dev/null || true
    else kill -STOP "$(cat "$ad/relay.pid")"; fi ;;
  heal)
    if [[ -f $ad/netns ]]; then
      ip netns exec "$(cat "$ad/netns")" ip link set lo up
      ip netns exec "$(cat "$ad/netns")" ip link set eth0 up 2>/dev/null || true
    else kill -CONT "$(cat "$ad/relay.pid")"; fi ;;
  *) echo "partition: expected cut or heal, got '$what'" >&2; exit 2 ;;
esac
