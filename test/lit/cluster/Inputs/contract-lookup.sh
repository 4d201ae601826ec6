#!/usr/bin/env bash
# contract-lookup.sh WORK FIXTURE: contract lookups through the node agent of node1 ($CLUSTER_DIR),
# cached for the cluster config's agents.contract_cache_ttl. Prints one line per fact for FileCheck.
work=$1 fixture=$2
fail_logs="$CLUSTER_DIR/controllers/*.log $CLUSTER_DIR/agents/*/agent.log"
source "$(dirname "$0")/common.sh"
mkdir -p "$work"
sock=$CLUSTER_DIR/agents/node1/agent.sock
lookup() { mscale-cli contract lookup --socket "$sock" "$1" 2>&1 | sed -e 's/ [0-9]* ms ago/ N ms ago/'; }
config() { # config TTL: publishes a cluster config with that cache TTL
  printf 'cluster: lookup\nagents:\n  contract_cache_ttl: %s\n' "$1" > "$work/config.yaml"
  mscale-deploy --nodes node1 --config "$work/config.yaml" > /dev/null || fail "deploy"
}
applied() { [[ $(ectl get --print-value-only "/mscale/status/node1/$1" | head -1) == "state applied" ]]; }
gone() { [[ -z $(ectl get --keys-only "/mscale/status/node1/$1") ]]; }

echo "--- not submitted"
lookup c1
lookup 9lives

echo "--- no config: nothing cached"
cluster_contract c1 1 "$work/c1.msc"
mscale-cli cluster submit "$work/c1.msc" -- /bin/sleep 600 > /dev/null || fail "submit c1"
until_ok 30 applied c1 || fail "c1 not applied"
lookup c1
lookup c1 | sed -n 2p

echo "--- 30 s"
config 30s
lookup c1 | sed -n 2p
lookup c1 | sed -n 2p

echo "--- submitted again with another source: the agent forgets what it cached"
mscale-cli cluster withdraw c1 > /dev/null || fail "withdraw c1"
until_ok 30 gone c1 || fail "c1 still held"
{ echo "// second version"; cat "$work/c1.msc"; } > "$work/c1b.msc"
mscale-cli cluster submit "$work/c1b.msc" > /dev/null || fail "submit c1 again"
until_ok 30 applied c1 || fail "c1 not applied again"
lookup c1 | sed -n '2p;/second version/p'
lookup c1 | sed -n 2p

echo "--- resize of the assigned contract compiles its looked-up source"
mscale-cli contract resize --socket "$sock" --topology "$fixture" --profile no_such c1 2>&1 | head -1

echo "--- 0 s: a miss reads the TTL, caching stops"
config 0s
cluster_contract c2 1 "$work/c2.msc"
mscale-cli cluster submit "$work/c2.msc" > /dev/null || fail "submit c2"
lookup c2 | sed -n 2p
lookup c1 | sed -n 2p
lookup c1 | sed -n 2p
