#!/usr/bin/env bash
# node-loss.sh WORK: a training job on a cluster of two recorded nodes; the agent of its node is
# SIGKILLed mid-run (the node is lost: its worker dies with it); the job is placed on the other
# node and its worker resumes from the shared disk tier. Prints one line per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
prepare_job "$work"
submit_job "$work" train
until_ok 30 bash -c "[[ -n \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/train) ]]" \
  || fail "train not decided"
first=$(node_of train)
[[ -n $first ]] || fail "train not placed: $(status_of train)"
echo "placed on one node"
until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/train.log' 2>/dev/null || echo 0) >= 35 ))" || fail "the job does not train"
kill -9 "$(cat "$CLUSTER_DIR/agents/$first/agent.pid")"
echo "agent of its node SIGKILLed mid-run"
until_ok 30 bash -c "s=\$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/train | head -1); [[ \$s == placed* && \$s != *'$first'* ]]" \
  || fail "train not placed again"
second=$(node_of train)
echo "placed again on the other node: $([[ $second != "$first" ]] && echo yes)"
until_ok 90 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$second/train | sed -n 's/^worker //p') == exited ]]" \
  || fail "the worker on $second did not finish"
echo "worker on the other node: exited $(worker_exit "$second" train)"
/usr/bin/python3 "$recovery/check_recovery.py" "$work/ref.log" "$shared/train.log" --every 10
