#!/usr/bin/env bash
# controllers.sh WORK FIXTURE: three controllers on the etcd of $ETCD_ENDPOINTS, four registered
# nodes of one recorded machine; contracts submitted while the leader is SIGKILLed and SIGSTOPped,
# a node lost. Prints one line per fact for FileCheck. Every controller is stopped on exit.
work=$1 fixture=$2
mkdir -p "$work"
declare -A pid
trap 'for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; kill -CONT "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT
source "$(dirname "$0")/common.sh"
fail_logs="$work/A.log $work/B.log $work/C.log"
count_assignments() { ectl get --prefix /mscale/assignments/ --keys-only | grep -c "/$1\$"; }
leader() { mscale-controller leader | cut -d' ' -f1; }
submit() {
  cluster_contract "$1" "$2" "$work/$1.msc"
  mscale-cli cluster submit "$work/$1.msc" > /dev/null || fail "submit $1"
}

register_nodes "$fixture" n1 n2 n3 n4
for n in A B C; do
  mscale-controller run --name "$n" 2> "$work/$n.log" &
  pid[$n]=$!
done
until_ok 20 leader > /dev/null 2>&1 || fail "no controller leads"
first=$(leader)
echo "leader: one of three"

submit c1 2
until_ok 20 decided c1 || fail "c1 not placed"
echo "c1: $(status_of c1 | cut -d' ' -f1), $(count_assignments c1) assignments"

# The leader is killed while a contract is submitted: a standby leads, places it, once.
kill -9 "${pid[$first]}"
submit c2 2
until_ok 30 decided c2 || fail "c2 not placed after the leader was killed"
second=$(leader)
[[ $second != "$first" ]] && echo "after SIGKILL: another controller leads"
echo "c2: $(status_of c2 | cut -d' ' -f1), $(count_assignments c2) assignments; c1 still $(count_assignments c1)"

# The new leader hangs: a third leads; when the hung one wakes up, its writes are refused.
kill -STOP "${pid[$second]}"
# Reads never touch a controller: they are answered while the leader hangs.
mscale-cli cluster nodes | awk 'NR > 1 {print $1 ": " $2 ", " $4 " GPU(s), " $8 " RDMA, " $9 " NVMe, " $6 " core(s) on " $10 " NUMA node(s)"}'
mscale-cli cluster status c1 | head -1 | sed -e 's/placed .* leader-rev/placed (2 nodes) leader-rev/; s/leader-rev [0-9]*/leader-rev N/' 
until_ok 30 bash -c "[[ \$(mscale-controller leader | cut -d' ' -f1) != $second ]]" 2>/dev/null || fail "no new leader after SIGSTOP"
third=$(leader)
submit c3 1
until_ok 30 decided c3 || fail "c3 not placed"
kill -CONT "${pid[$second]}"
third_rev=$(mscale-controller leader | cut -d' ' -f2)
until_ok 15 grep -q "stopped leading" "$work/$second.log" || fail "the woken leader did not stop"
echo "woken old leader: $(grep -o 'stopped leading: error\[ERR_[A-Z]*_[0-9]*\]' "$work/$second.log" | head -1)"
[[ $(status_of c3) == *"leader-rev $third_rev" ]] && echo "c3: placed by the current leader"

# A node is lost (its registration's lease expired): its contracts are placed again, whole.
lost=$(status_of c1 | sed -e 's/placed \([^,]*\),.*/\1/')
ectl del "/mscale/nodes/$lost" > /dev/null
until_ok 20 bash -c "! etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/c1 | head -1 | grep -q '$lost'" \
  || fail "c1 not placed again after $lost was lost"
echo "c1 after losing a node: $(status_of c1 | cut -d' ' -f1), $(count_assignments c1) assignments, none on the lost node: $(ectl get --prefix "/mscale/assignments/$lost/" --keys-only | grep -c c1)"

# A job larger than the cluster: refused, with the code.
submit c4 9
until_ok 20 decided c4 || fail "c4 not decided"
echo "c4: $(ectl get --print-value-only /mscale/contract-status/c4 | grep -o 'refused\|error\[ERR_[A-Z]*_[0-9]*\]' | tr '\n' ' ')"

# Nodes lost until the job no longer fits: it is refused, and its assignment on the node left goes
# too (a job runs whole or not at all).
left=$(ectl get --prefix /mscale/nodes/ --keys-only | grep . | sed 's|/mscale/nodes/||' | tail -n +2)
for n in $left; do ectl del "/mscale/nodes/$n" > /dev/null; done
until_ok 20 bash -c "etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/c1 | head -1 | grep -q '^refused'" \
  || fail "c1 not refused with one node left"
echo "c1 with one node left: $(status_of c1 | cut -d' ' -f1), $(count_assignments c1) assignments; $(cat "$work"/[ABC].log | grep -c 'released c1: it cannot be placed whole again') release logged"
