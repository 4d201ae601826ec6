#!/usr/bin/env bash
# cordon.sh WORK FIXTURE: cordon and uncordon through the leading controller, on the etcd of
# $ETCD_ENDPOINTS. One controller, two registered nodes of one recorded machine. Prints one line per
# fact for FileCheck; the controller is stopped on exit.
work=$1 fixture=$2
mkdir -p "$work"
declare -A pid
trap 'for p in "${pid[@]}"; do kill -9 "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT
source "$(dirname "$0")/common.sh"
fail_logs="$work/A.log"
job() { cluster_contract "$1" 1 "$work/$1.msc"; } # a one-node job NAME
written() { sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'; }
placed_on() { status_of "$1" | awk '{print $1, $2}'; }
# Each cordon key and its mod revision: what "nothing changed" compares.
cordons() { ectl get --prefix /mscale/cordons/ -w json | /usr/bin/python3 -c '
import json, sys, base64
d = json.load(sys.stdin)
print(" ".join("%s@%s" % (base64.b64decode(kv["key"]).decode().split("/")[-1], kv["mod_revision"]) for kv in d.get("kvs", [])))'; }

register_nodes "$fixture" n1 n2
mscale-controller run --name A 2> "$work/A.log" & pid[A]=$!
until_ok 20 mscale-controller leader > /dev/null 2>&1 || fail "A does not lead"

job c1
mscale-cli cluster submit "$work/c1.msc" > /dev/null || fail "submit c1"
until_ok 20 decided c1 || fail "c1 not decided"
echo "c1: $(placed_on c1)"

# Cordoned: the node stays Ready (what runs there stays), takes nothing new.
mscale-cli cluster cordon n1 --reason "PSU swap, ticket 4711" | written
mscale-cli cluster cordon n1 --reason "PSU swap, ticket 4711" | written
mscale-cli cluster nodes | awk 'NR > 1 {r = ""; if (match($0, /\(cordoned.*\)/)) r = " " substr($0, RSTART, RLENGTH); print $1, $2, $3 r}'
mscale-cli cluster nodes --json | /usr/bin/python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    if n["cordoned"]:
        print("json: %s cordoned by %s: %s" % (n["name"], n["cordon"]["by"], n["cordon"]["reason"]))'
job c2
mscale-cli cluster submit "$work/c2.msc" > /dev/null || fail "submit c2"
until_ok 20 decided c2 || fail "c2 not decided"
echo "c2: $(placed_on c2)"
echo "c1: $(placed_on c1)"

# Nothing else fits: the refusal names the cordon.
mscale-cli cluster cordon n2 --reason "PSU swap, ticket 4711" > /dev/null || fail "cordon n2"
job c3
mscale-cli cluster submit "$work/c3.msc" > /dev/null || fail "submit c3"
until_ok 20 decided c3 || fail "c3 not decided"
echo "c3: $(status_of c3 | awk '{print $1}')"
ectl get --print-value-only /mscale/contract-status/c3 | grep -o 'note: [0-9]* nodes with no new placement.*'

# Bad input: coded, and nothing written.
before=$(cordons)
mscale-cli cluster cordon n9 --reason "typo" 2>&1
mscale-cli cluster cordon n2 2>&1
mscale-cli cluster cordon a/b --reason "x" 2>&1
mscale-cli cluster uncordon n9 2>&1
after=$(cordons)
echo "nothing changed: cordons $(sed 's/@[0-9]*//g' <<<"$after"), same revisions: $([[ $before == "$after" ]] && echo yes || echo "no ($before / $after)")"

# Uncordoned: c3 (refused, tried again on every change) lands there. Again: no error.
mscale-cli cluster uncordon n1 | written
mscale-cli cluster uncordon n1 | written
until_ok 20 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/c3 | head -1) == placed* ]]" \
  || fail "c3 not placed after the uncordon"
echo "c3: $(placed_on c3)"

# A health record that does not read (written around an agent): coded in the leader's log, once;
# the node reads as registered, its health as unreadable (and it takes nothing new: DecideTest).
yaml=$(mscale-cli topology export --format=yaml --topology "$fixture") || fail "topology export"
printf '# mscale node registration; agent test\n# health overheated\n%s\n' "$yaml" | ectl put /mscale/nodes/n3 > /dev/null
until_ok 20 grep -q ERR_CLUSTER_016 "$work/A.log" || fail "the leader did not report n3's health record"
grep -o "placing nothing more on a node: error\[ERR_CLUSTER_016\].*" "$work/A.log" | sort -u | sed 's/^/leader: /'
mscale-cli cluster nodes | awk '$1 == "n3" {print $1, $2, $3}'
# A verdict written by hand, under no lease: no agent stands behind it. Coded, and it changes
# nothing but that the node takes no new placement on its word: no cordon, even if a policy asked.
printf '# mscale node registration; agent test\n# health failed\n# health-reason ERR_HEALTH_001 made up\n%s\n' "$yaml" |
  ectl put /mscale/nodes/n4 > /dev/null
until_ok 20 grep -q "node 'n4'" "$work/A.log" || fail "the leader did not report n4's verdict"
grep -o "placing nothing more on a node: error\[ERR_CLUSTER_016\]: the health record of node 'n4'.*" "$work/A.log" | sort -u | sed 's/^/leader: /'
mscale-cli cluster nodes | awk '$1 == "n4" {print $1, $2, $3}'
echo "n4 cordoned: $([[ -n $(ectl get --print-value-only /mscale/cordons/n4) ]] && echo yes || echo no)"
exit 0 # the refusals above are expected; fail() exits 1 on what is not
