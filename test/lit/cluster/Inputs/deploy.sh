#!/usr/bin/env bash
# deploy.sh WORK FIXTURE: mscale-deploy on the etcd of $ETCD_ENDPOINTS with the controllers of
# $CLUSTER_DIR; two registered nodes of one recorded machine (JUWELS Booster: GPU 0 and mlx5_0 under
# PCIe domain 0000:00, GPU 1 and mlx5_1 under 0000:40, ...). Bad configs and nodes are refused before
# anything is written; a good config is published through the leader, shown per node, and applied
# to the placements after it. Prints what it checks for FileCheck.
work=$1 fixture=$2
fail_logs="$CLUSTER_DIR/controllers/*.log"
source "$(dirname "$0")/common.sh"
mkdir -p "$work"
# The plan inside an assignment (assignment.proto, field 3), for mscale-plan.
plan_of() {
  ectl get "/mscale/assignments/$1/$2" -w json | python3 -c '
import base64, json, sys
kvs = json.load(sys.stdin).get("kvs", [])
data = base64.b64decode(kvs[0]["value"]) if kvs else b""
def varint(i):
    shift = value = 0
    while True:
        b = data[i]; i += 1
        value |= (b & 0x7f) << shift; shift += 7
        if b < 0x80: return value, i
i = 0
while i < len(data):
    key, i = varint(i)
    if key & 7 == 0: _, i = varint(i); continue
    length, i = varint(i)
    if key >> 3 == 3: sys.stdout.buffer.write(data[i:i + length])
    i += length
' > "$3"
}
contract() { # contract NAME ROLE-FIELDS
  printf 'import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  io_topology { r0 { %s } }\n}\n' \
    "$1" "$2" > "$work/$1.msc"
}
deploy() { mscale-deploy --nodes "$1" --config "$2" 2>&1 | sed -e "s#$work/##g"; echo "exit ${PIPESTATUS[0]}"; }

register_nodes "$fixture" n1 n2

cat > "$work/cluster-config.yaml" <<'YAML'
cluster: booster
scaling:
  affinity_policy: pcie_domain_first
  cross_domain_io: false
pcie_domains:
  reserved:
    - { node: "*", domain: "0000:00" }   # GPU 0 and mlx5_0: the system's own
    - { node: n2, domain: "0000:e0" }    # the management NICs
agents:
  contract_cache_ttl: 30s
YAML

echo "--- bad config"
sed -e 's/affinity_policy/afinity_policy/' "$work/cluster-config.yaml" > "$work/bad.yaml"
deploy n1,n2 "$work/bad.yaml"
echo "--- unknown node"
deploy n1,n3 "$work/cluster-config.yaml"
echo "--- reservation for a node that is not registered"
sed -e 's/node: n2,/node: n7,/' "$work/cluster-config.yaml" > "$work/nonode.yaml"
deploy n1,n2 "$work/nonode.yaml"
echo "--- reserved domain that does not exist"
sed -e 's/0000:e0/0000:20/' "$work/cluster-config.yaml" > "$work/nodomain.yaml"
deploy n1,n2 "$work/nodomain.yaml"
echo "--- unreadable registration"
printf 'not a registration' | ectl put /mscale/nodes/n9 > /dev/null
deploy n1,n9 "$work/cluster-config.yaml"
ectl del /mscale/nodes/n9 > /dev/null
echo "--- nothing published: $(ectl get /mscale/config --keys-only | wc -l) keys"

echo "--- deploy"
deploy n1,n2 "$work/cluster-config.yaml" | sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'
deploy n1,n2 "$work/cluster-config.yaml" | head -1 | sed -e 's/revision [0-9]*/revision R/; s/at 127[^,]*/at ADDR/; s/leader-rev [0-9]*/leader-rev N/'
echo "stored: $(ectl get --print-value-only /mscale/config | head -1 | sed -e 's/leader-rev [0-9]*/leader-rev N/')"

echo "--- the cluster view"
mscale-cli cluster topology n2 | sed -e 's/revision [0-9]*/revision R/; s/leader-rev [0-9]*/leader-rev N/'

echo "--- placement after the deploy"
# GPU 0 named: refused on both nodes, the reservation said.
contract c1 'gpu = 0000:03:00.0;'
mscale-cli cluster submit "$work/c1.msc" > /dev/null || fail "submit c1"
until_ok 20 decided c1 || fail "c1 not decided"
ectl get --print-value-only /mscale/contract-status/c1 | grep -o '^refused\|error\[ERR_[A-Z]*_[0-9]*\].*'
# Any GPU: placed on GPU 1, under the scaling defaults the config filled in.
contract c2 'gpu = any; rdma_port = nearest;'
mscale-cli cluster submit "$work/c2.msc" > /dev/null || fail "submit c2"
until_ok 20 decided c2 || fail "c2 not decided"
mscale-cli cluster status c2 | sed -e 's/leader-rev [0-9]*/leader-rev N/'
plan_of "$(node_of c2)" c2 "$work/c2.msp"
mscale-plan dump "$work/c2.msp" | grep -o 'GPU [0-9] 0000:[0-9a-f:.]* .*bound: [^)]*)\|mlx5_[0-9]:[0-9].*bound: [^)]*)'

echo "--- a config written around the leader"
printf 'not a config' | ectl put /mscale/config > /dev/null
contract c3 'gpu = any;'
mscale-cli cluster submit "$work/c3.msc" > /dev/null || fail "submit c3"
until_ok 20 decided c3 || fail "c3 not decided"
ectl get --print-value-only /mscale/contract-status/c3 | grep -o '^refused\|error\[ERR_[A-Z]*_[0-9]*\].*'
mscale-cli cluster topology n1 | head -1
exit 0 # the refusals above are expected; fail() exits 1 on what is not
