#!/usr/bin/env bash
# etcd-member-loss.sh WORK follower|leader FIXTURE: controllers on a 3-member etcd; one member
# SIGKILLed (a follower, or the raft leader), and the cluster keeps serving with two of three: a
# contract submitted through the leading controller is placed, the reads answer, the controllers'
# leadership holds or moves to a live controller. Prints one line per fact for FileCheck.
work=$1 which=$2 fixture=$3
mkdir -p "$work"
source "$(dirname "$0")/common.sh"
fail_logs="$CLUSTER_DIR/controllers/*.log"
register_nodes "$fixture" n1 n2
# The raft leader: the member whose status says it leads.
leader_member=-1
for i in 0 1 2; do
  status=$(etcdctl --endpoints="$(cat "$CLUSTER_DIR/m$i.endpoint")" endpoint status --write-out=fields 2>/dev/null)
  id=$(sed -n 's/^"MemberID" : //p' <<<"$status"); lead=$(sed -n 's/^"Leader" : //p' <<<"$status")
  [[ -n $id && $id == "$lead" ]] && leader_member=$i
done
((leader_member >= 0)) || fail "no raft leader found"
victim=$leader_member
[[ $which == follower ]] && victim=$(((leader_member + 1) % 3))
kill -9 "$(cat "$CLUSTER_DIR/m$victim.pid")"
echo "killed the etcd $which"
cluster_contract c1 2 "$work/c1.msc"
mscale-cli cluster submit "$work/c1.msc" --timeout-ms 20000 | sed -e 's/ at revision.*//'
until_ok 30 decided c1 || fail "c1 not decided"
echo "c1: $(ectl get --print-value-only /mscale/contract-status/c1 | head -1 | cut -d' ' -f1)"
echo "nodes read: $(mscale-cli cluster nodes | grep -c ' Ready ')"
# A controller whose lease lived on the killed member leads again once its session is renewed.
controller_leads() { mscale-controller leader > /dev/null 2>&1; }
echo "a controller leads: $(until_ok 20 controller_leads && echo yes)"
