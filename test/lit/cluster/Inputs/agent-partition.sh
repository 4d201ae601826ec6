#!/usr/bin/env bash
# agent-partition.sh WORK: a training job on a cluster of two recorded nodes whose agents run in
# network namespaces of their own; the job's node is cut off from etcd (its namespace's network goes
# down). Its agent, no longer able to renew its lease, stops the worker by its own clock; etcd
# expires the lease and the leader places the job on the other node, which resumes it from the shared
# disk. The job never runs on both nodes at once: the cut node's worker stopped before the other
# node admitted the job, and the training log is the uninterrupted run's. Healed, the node registers
# again and runs nothing of the job. Prints one line per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
partition=$(cd "$(dirname "$0")/../../../../scripts/cluster" && pwd)/partition.sh
prepare_job "$work"
submit_job "$work" part
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/part) == placed* ]]" \
  || fail "part not placed: $(status_of part)"
cut=$(node_of part)
echo "placed on one node"
until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/part.log' 2>/dev/null || echo 0) >= 35 ))" || fail "the job does not train"
"$partition" "$CLUSTER_DIR" "$cut" cut || fail "cannot cut $cut"
echo "its node cut off from etcd"
until_ok 30 grep -q "ERR_CLUSTER_005" "$CLUSTER_DIR/agents/$cut/agent.log" || fail "the cut agent did not stop its worker"
echo "cut agent: $(grep -o 'error\[ERR_CLUSTER_005\].*' "$CLUSTER_DIR/agents/$cut/agent.log" | sed -e 's/(lease [0-9]*)/(lease L)/; s/lost: .*; stopped/lost: ...; stopped/' | head -1)"
until_ok 30 bash -c "s=\$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/part | head -1); [[ \$s == placed* && \$s != *'$cut'* ]]" \
  || fail "part not placed again"
other=$(node_of part)
stopped_at=$(grep "ERR_CLUSTER_005" "$CLUSTER_DIR/agents/$cut/agent.log" | head -1 | cut -d' ' -f1)
until_ok 30 grep -q "contract=part.*admitting" "$CLUSTER_DIR/agents/$other/agent.log" || fail "$other does not admit part"
admitted_at=$(grep "contract=part.*admitting" "$CLUSTER_DIR/agents/$other/agent.log" | head -1 | cut -d' ' -f1)
[[ $stopped_at < $admitted_at ]] && echo "the cut node stopped the worker before the other node admitted the job"
until_ok 90 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$other/part | sed -n 's/^worker //p') == exited ]]" \
  || fail "the worker on $other did not finish"
echo "worker on the other node: exited $(worker_exit "$other" part)"
/usr/bin/python3 "$recovery/check_recovery.py" "$work/ref.log" "$shared/part.log" --every 10 | grep -E '^(steps|final|RESULT)'
"$partition" "$CLUSTER_DIR" "$cut" heal || fail "cannot heal $cut"
until_ok 30 bash -c "etcdctl --endpoints=$ETCD_ENDPOINTS get --keys-only /mscale/nodes/$cut | grep -q ." || fail "$cut did not register again"
sleep 1 # long enough for an assignment it wrongly kept to be admitted again
echo "healed node registered again; runs the job: $(ectl get --prefix "/mscale/assignments/$cut/" --keys-only | grep -c part) assignment(s), $(ectl get --prefix "/mscale/status/$cut/" --keys-only | grep -c part) status"
