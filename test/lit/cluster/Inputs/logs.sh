#!/usr/bin/env bash
# logs.sh WORK FIXTURE: worker output read through the cluster from the agents of $CLUSTER_DIR
# (two nodes). Prints one line per fact for FileCheck.
work=$1
fail_logs="$CLUSTER_DIR/controllers/*.log $CLUSTER_DIR/agents/*/agent.log"
source "$(dirname "$0")/common.sh"
mkdir -p "$work"
exited() { [[ $(ectl get --print-value-only "/mscale/status/$1/$2" | sed -n 's/^worker //p') == exited ]]; }
running() { [[ $(ectl get --print-value-only "/mscale/status/$1/$2" | sed -n 's/^worker //p') == running ]]; }
ports() { sed -E 's/127\.0\.0\.1:[0-9]+/127.0.0.1:PORT/g'; }
logs() { mscale-cli cluster logs "$@" 2>&1 | ports; echo "exit ${PIPESTATUS[0]}"; }

echo "--- every node advertises its endpoint"
mscale-cli cluster nodes --json | /usr/bin/python3 -c '
import json, sys
for n in json.load(sys.stdin)["nodes"]:
    print(n["name"], "http", n.get("http", "none"))' | ports

echo "--- each rank from its own node"
cluster_contract pair 2 "$work/pair.msc"
mscale-cli cluster submit "$work/pair.msc" -- /bin/sh -c \
  'echo "rank $RANK of $WORLD_SIZE, master $MASTER_ADDR"; echo "rank $RANK says this on stderr" >&2' > /dev/null \
  || fail "submit pair"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/pair) == placed* ]]" \
  || fail "pair not placed: $(status_of pair)"
nodes=$(status_of pair | sed -n 's/^placed \([^ ]*\) .*/\1/p')
for n in ${nodes//,/ }; do until_ok 30 exited "$n" pair || fail "the worker of pair on $n did not finish"; done
mscale-cli cluster logs pair || fail "logs of rank 0"
mscale-cli cluster logs pair --rank 1 || fail "logs of rank 1"

echo "--- follow a running worker to its end"
cluster_contract ticker 1 "$work/ticker.msc"
mscale-cli cluster submit "$work/ticker.msc" -- /bin/sh -c \
  'sleep 0.5; for i in 1 2 3; do echo "tick $i"; sleep 0.3; done; echo done' > /dev/null || fail "submit ticker"
until_ok 30 bash -c "[[ -n \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/ticker | sed -n 's/^placed \([^ ,]*\).*/\1/p') ]]" \
  || fail "ticker not placed: $(status_of ticker)"
until_ok 30 running "$(node_of ticker)" ticker || fail "the ticker does not run"
mscale-cli cluster logs ticker -f
echo "follow exit $?"

echo "--- a plain GET, as curl would"
second=${nodes#*,}
http=$(mscale-cli cluster nodes --json | /usr/bin/python3 -c "
import json, sys
print(next(n['http'] for n in json.load(sys.stdin)['nodes'] if n['name'] == '$second'))")
get() {
  /usr/bin/python3 - "http://$http$1" <<'PY'
import sys, urllib.request, urllib.error
try:
    r = urllib.request.urlopen(sys.argv[1], timeout=10)
    print(r.status, r.headers["Content-Type"])
    print(r.read().decode(), end="")
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode(), end="")
PY
}
get "/logs/pair?rank=0"
get "/logs/pair?rank=3"
get "/logs/pair?tail=5"

echo "--- nothing to read, and why"
logs pair --rank 2
logs nosuch
cluster_contract big 3 "$work/big.msc"
mscale-cli cluster submit "$work/big.msc" -- /bin/true > /dev/null || fail "submit big"
until_ok 30 decided big || fail "big not decided"
logs big
logs pair --rank 1 --attempt 4
logs pair --attempt=-3
