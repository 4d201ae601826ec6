#!/usr/bin/env bash
# submit.sh WORK FIXTURE: writes through the leading controller, on the etcd of $ETCD_ENDPOINTS.
# Two controllers (one leads, one stands by) and two registered nodes of one recorded machine.
# Prints one line per fact for FileCheck; every controller is stopped on exit.
work=$1 fixture=$2
mkdir -p "$work"
declare -A pid
trap 'for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT
source "$(dirname "$0")/common.sh"
fail_logs="$work/A.log $work/B.log"
contract() { cluster_contract "$1" "$2" "$work/$1.msc"; }

# No controller yet: a write finds no leader before its deadline.
contract c1 1
mscale-cli cluster submit "$work/c1.msc" --timeout-ms 600 2>&1 | sed -e 's/within [0-9]* ms/within N ms/'

register_nodes "$fixture" n1 n2
mscale-controller run --name A 2> "$work/A.log" & pid[A]=$!
until_ok 20 mscale-controller leader > /dev/null 2>&1 || fail "A does not lead"
mscale-controller run --name B 2> "$work/B.log" & pid[B]=$!
until_ok 10 grep -q "serving the cluster's writes at" "$work/B.log" || fail "B does not serve"
echo "leader: $(mscale-controller leader | awk '{print $1, ($3 ~ /^127\.0\.0\.1:[0-9]+$/ ? "at an address" : "no address")}')"

# Submitted with a worker command: the leader writes it, places it, and the assignment carries it.
mscale-cli cluster submit "$work/c1.msc" --env STEPS=40 -- /bin/echo hello | sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'
until_ok 20 decided c1 || fail "c1 not decided"
echo "c1: $(status_of c1 | cut -d' ' -f1)"
# Submitted again as it is: nothing changes. Changed under the same name: refused.
mscale-cli cluster submit "$work/c1.msc" --env STEPS=40 -- /bin/echo hello | sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'
mscale-cli cluster submit "$work/c1.msc" -- /bin/echo other 2>&1 | sed -e 's/revision [0-9]*/revision R/'
# A standby refuses, naming the leader.
standby=$(grep -o "serving the cluster's writes at .*" "$work/B.log" | awk '{print $NF}')
contract c2 1
mscale-cli cluster submit "$work/c2.msc" --controller "$standby" 2>&1 | sed -e 's/at 127[0-9.:]*/at ADDR/'
# Bad input: a name that is not one, a contract the file does not define, a source that does not compile.
mscale-cli cluster submit "$work/c2.msc" --contract 9lives 2>&1
mscale-cli cluster submit "$work/c2.msc" --contract c9 2>&1
printf 'contract broken {\n  cpu_cores = ;\n}\n' > "$work/broken.msc"
mscale-cli cluster submit "$work/broken.msc" 2>&1 | grep -o 'error\[[A-Z_0-9]*\]' | head -1
# A value written around the leader, not a submission: refused in the contract's status, with the code.
printf 'not a submission' | ectl put /mscale/contracts/handmade > /dev/null
until_ok 20 decided handmade || fail "handmade not decided"
echo "handmade: $(ectl get --print-value-only /mscale/contract-status/handmade | grep -o 'refused\|error\[ERR_[A-Z]*_[0-9]*\]' | tr '\n' ' ')"
# Malformed registrations (no header; a header and YAML that does not read): the leader ignores the
# nodes and says why once, the reads show them as unreadable, a job that would need them is refused.
printf 'just text' | ectl put /mscale/nodes/bad1 > /dev/null
printf '# mscale node registration; agent test\nname: [unclosed\n' | ectl put /mscale/nodes/bad2 > /dev/null
contract c3 3
mscale-cli cluster submit "$work/c3.msc" > /dev/null
until_ok 20 decided c3 || fail "c3 not decided"
until_ok 10 bash -c "(( \$(grep -c ERR_CLUSTER_012 '$work/A.log') >= 2 ))" || fail "the leader did not report bad registrations"
grep -o "ignoring a node: error\[ERR_CLUSTER_012\]: the registration of node '[a-z0-9]*' cannot be read: [a-z]*" "$work/A.log" | sort -u
mscale-cli cluster nodes | awk '$2 == "NotReady" && /registration does not read/ {print $1 ": unreadable registration"}'
echo "c3: $(ectl get --print-value-only /mscale/contract-status/c3 | grep -o 'refused\|error\[ERR_[A-Z]*_[0-9]*\]' | tr '\n' ' ')"
# Withdrawn: its assignments and status go; withdrawing it again is refused.
mscale-cli cluster withdraw c1 | sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'
until_ok 20 bash -c "[[ -z \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --prefix /mscale/assignments/ --keys-only | grep '/c1\$') ]]" \
  || fail "c1's assignments stayed"
echo "c1 withdrawn: $(ectl get --prefix /mscale/ --keys-only | grep -c '/c1$') keys left"
mscale-cli cluster withdraw c1 2>&1
exit 0 # the refusals above are expected; fail() exits 1 on what is not
