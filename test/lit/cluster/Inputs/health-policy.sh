#!/usr/bin/env bash
# health-policy.sh WORK SYSFS_TARBALL: node agents that judge their health, a leader that cordons by
# policy, on the etcd of $ETCD_ENDPOINTS. Each agent serves its own copy of the recorded tree (so one
# can be heated alone) with the sim backends. Prints one line per fact for FileCheck; every process
# it started is stopped on exit.
work=$1 tarball=$2
mkdir -p "$work"
declare -A pid
trap 'for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null' EXIT
source "$(dirname "$0")/common.sh"
fail_logs="$work/A.log $work/node1.log $work/node2.log"
# A one-node job on core 0 of NUMA node 0, which the recorded machine has.
job() {
  printf 'import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = 1;\n  cpu_cores = 1;\n  gpu_sm_slices = 0;\n  io_topology { data { cpu_cores = [0]; numa_node = 0; io_depth = 32; threads = 1; } }\n}\n' \
    "$1" > "$work/$1.msc"
}
placed_on() { status_of "$1" | awk '{print $1, $2}'; }
zone() { echo "$work/$1/32em64t-2n8c+1mic/sys/class/thermal/thermal_zone0"; }
# NODE FIELD: one node's field from `cluster nodes --json` (health verdict, or the cordon's words).
node_json() { mscale-cli cluster nodes --json | /usr/bin/python3 -c '
import json, sys
node, field = sys.argv[1], sys.argv[2]
for n in json.load(sys.stdin)["nodes"]:
    if n["name"] != node:
        continue
    h = n.get("health", {})
    if field == "health":
        print(" ".join([h.get("verdict", "-")] + ["%s %s" % (r["code"], r["message"]) for r in h.get("reasons", [])]))
    elif field == "cordon" and n["cordoned"]:
        print("cordoned by %s: %s" % (n["cordon"]["by"], n["cordon"]["reason"]))' "$1" "$2"; }

# The cluster config first: the leader applies it from its first reconciliation.
printf '# mscale cluster config; written by test\ncluster: lab\nhealth:\n  cordon_on: [failed]\n' | ectl put /mscale/config > /dev/null
for n in node1 node2; do
  mkdir -p "$work/$n/state"
  tar -xjf "$tarball" -C "$work/$n" || fail "cannot extract $tarball"
  z=$(zone $n)
  mkdir -p "$z"
  echo x86_pkg_temp > "$z/type"
  echo critical > "$z/trip_point_0_type"
  echo 100000 > "$z/trip_point_0_temp"
  echo 45000 > "$z/temp"
  printf 'gpu_backend: sim\nrdma: { enabled: true, backend: sim }\nhost_backend: sim\nstate_dir: %s\nclaims_dir: %s\n' \
    "$work/$n/state" "$work/$n/claims" > "$work/$n/node.yaml"
  mscale-exec serve --endpoints "$ETCD_ENDPOINTS" --node "$n" --topology "$work/$n/32em64t-2n8c+1mic" \
    --config "$work/$n/node.yaml" --socket "$work/$n/agent.sock" --lease-ttl 2s --health-interval 200ms \
    2> "$work/$n.log" & pid[$n]=$!
done
mscale-controller run --name A 2> "$work/A.log" & pid[A]=$!
until_ok 20 mscale-controller leader > /dev/null 2>&1 || fail "A does not lead"
until_ok 20 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --prefix /mscale/nodes/ --keys-only | grep -c .) == 2 ]]" \
  || fail "the agents did not register"
mscale-cli cluster nodes | awk 'NR > 1 {print $1, $2, $3}'

job c1
mscale-cli cluster submit "$work/c1.msc" > /dev/null || fail "submit c1"
until_ok 20 decided c1 || fail "c1 not decided"
echo "c1: $(placed_on c1)"

# Heated at run time: the agent's next judgement publishes it, the leader cordons by policy.
echo 105000 > "$(zone node1)/temp"
until_ok 20 bash -c "[[ -n \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/cordons/node1) ]]" \
  || fail "node1 was not cordoned"
echo "node1: $(node_json node1 health)"
echo "node1 $(node_json node1 cordon)"
grep -o "cordoned by policy: node1: health failed: ERR_HEALTH_001" "$work/A.log" | head -1 | sed 's/^/leader: /'
job c2
mscale-cli cluster submit "$work/c2.msc" > /dev/null || fail "submit c2"
until_ok 20 decided c2 || fail "c2 not decided"
echo "c2: $(placed_on c2)"
echo "c1: $(placed_on c1)"

# Cooled: healthy again, but the policy's cordon waits for an operator.
echo 50000 > "$(zone node1)/temp"
until_ok 20 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/nodes/node1 | grep '^# health ') == '# health healthy' ]]" \
  || fail "node1 did not publish healthy"
echo "node1 cooled: $(node_json node1 health), still cordoned: $([[ -n $(node_json node1 cordon) ]] && echo yes || echo no)"
mscale-cli cluster nodes | awk '$1 == "node1" {print $1, $2, $3}'
exit 0
