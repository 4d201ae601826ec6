#!/usr/bin/env bash
# elastic-shrink.sh WORK: an elastic job (nodes = 2..3, a global batch of 96 samples in micro-batches
# of 16) on a cluster of three agents. It is placed at 3; the agent of rank 2's node is SIGKILLed and,
# with no spare node, the job is placed again on the two left, each rank told the new world size and
# its share of the same global batch; a second node lost leaves fewer than its fewest: refused, its
# worker on the last node stopped. What each worker was told goes to a file on the shared storage.
# Prints one line per fact for FileCheck.
source "$(dirname "$0")/common.sh"
fail_logs="$CLUSTER_DIR/controllers/*.log $CLUSTER_DIR/agents/*/agent.log"
work=$1
mkdir -p "$work"
told=$CLUSTER_DIR/shared/told
contract() { # contract NAME NODES [MORE FIELDS]
  printf 'import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = %s;\n  %s\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' \
    "$1" "$2" "${3:-}" > "$work/$1.msc"
}
placed_on() { ectl get --print-value-only "/mscale/contract-status/$1" | sed -n '1s/^placed \([^ ]*\) .*/\1/p'; }

# Bad input first: a range that runs backwards and a global batch no size splits are the compiler's to
# refuse (nothing is written); a fewest larger than the cluster is the leader's.
contract backwards 3..2
mscale-cli cluster submit "$work/backwards.msc" 2>&1 | grep -o 'error\[[A-Z_0-9]*\]: .*' | head -1
contract odd 3..3 "global_batch = 100 samples;"
mscale-cli cluster submit "$work/odd.msc" 2>&1 | grep -o 'error\[[A-Z_0-9]*\]: .*' | head -1
echo "nothing written: $(ectl get --prefix /mscale/contracts/ --keys-only | grep -c -e backwards -e odd)"
contract huge 4..6
mscale-cli cluster submit "$work/huge.msc" > /dev/null || fail "submit huge"
until_ok 20 decided huge || fail "huge not decided"
ectl get --print-value-only /mscale/contract-status/huge | grep -o 'error\[ERR_PLACE_002\]: .*'
mscale-cli cluster withdraw huge > /dev/null || fail "withdraw huge"

contract elastic 2..3 "global_batch = 96 samples; micro_batch = 16 samples;"
mscale-cli cluster submit "$work/elastic.msc" -- /bin/sh -c \
  'echo "rank $RANK of $WORLD_SIZE: $MSCALE_RANK_BATCH of $MSCALE_GLOBAL_BATCH samples, $MSCALE_ACCUMULATION_STEPS micro-batches of $MSCALE_MICRO_BATCH" >> '"$told"'; exec sleep 300' \
  > /dev/null || fail "submit elastic"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1) == placed* ]]" \
  || fail "elastic not placed: $(status_of elastic)"
nodes=$(placed_on elastic)
echo "placed on $(tr ',' '\n' <<< "$nodes" | sort -u | wc -l) nodes; status: $(ectl get --print-value-only /mscale/contract-status/elastic | sed -n 2p)"
until_ok 30 bash -c "(( \$(wc -l < '$told' 2>/dev/null || echo 0) >= 3 ))" || fail "the ranks did not start"
sort "$told"
last=${nodes##*,}
leader=$(mscale-controller leader | cut -d' ' -f1)
kill -9 "$(cat "$CLUSTER_DIR/agents/$last/agent.pid")" "$(cat "$CLUSTER_DIR/controllers/$leader.pid")"
echo "agent of rank 2's node SIGKILLed, and the leading controller"
until_ok 40 bash -c "s=\$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1); [[ \$s == placed* && \$s != *'$last'* ]]" \
  || fail "elastic not placed again: $(status_of elastic)"
again=$(placed_on elastic)
echo "placed again on the $(tr ',' '\n' <<< "$again" | wc -l) nodes left: $([[ $again == "${nodes%,*}" ]] && echo yes)"
until_ok 30 bash -c "(( \$(wc -l < '$told') >= 5 ))" || fail "the ranks of the new size did not start"
tail -n 2 "$told" | sort
# From the other side: the job's workers that run, by what their environment says (never two of a rank).
running_ranks() {
  local p
  for p in $(pgrep -x sleep); do
    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -q "^MSCALE_GLOBAL_BATCH=96$" || continue
    echo "rank $(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^RANK=//p') of $(tr '\0' '\n' < "/proc/$p/environ" | sed -n 's/^WORLD_SIZE=//p')"
  done | sort | tr '\n' ';' | sed 's/;/; /g; s/ $//'
}
# The old placement's workers are stopped within their grace (2 s); then the new ones alone run.
for _ in $(seq 50); do [[ $(running_ranks) == "rank 0 of 2; rank 1 of 2;" ]] && break; sleep 0.2; done
echo "workers running: $(running_ranks)"
mscale-cli cluster status elastic | grep -o 'placed again on .*world size.*' | sed "s/$again/NODES/"
first=${again%%,*}
second=${again#*,}
kill -9 "$(cat "$CLUSTER_DIR/agents/$second/agent.pid")"
echo "agent of rank 1's node SIGKILLed"
until_ok 40 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/elastic | head -1) == refused* ]]" \
  || fail "elastic not refused: $(status_of elastic)"
ectl get --print-value-only /mscale/contract-status/elastic | grep -o 'error\[ERR_PLACE_002\]: .*'
until_ok 30 bash -c "[[ -z \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --prefix /mscale/assignments/$first/ --keys-only) ]]" \
  || fail "the job's assignment on $first stayed"
echo "its worker on the last node: stopped"
