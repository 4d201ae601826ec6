#!/usr/bin/env bash
# elastic-grow.sh WORK: an elastic training job (nodes = 2..3, mscale-train-sim, one command for
# every rank) on a cluster of three recorded nodes, one of them cordoned: it is placed at 2. The
# cordon is lifted: the leader asks both ranks to stop after one step it chooses ahead, both stop
# there with their snapshots on the shared disk, and the job is placed again at 3. The two ranks it
# had resume at the next step, no step run twice; the new rank starts its own history. Prints one
# line per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
steps=${STEPS:-150}
prepare_job "$work"
placed_on() { ectl get --print-value-only /mscale/contract-status/train | sed -n '1s/^placed \([^ ]*\) .*/\1/p'; }

held=$(ls "$CLUSTER_DIR/agents" | tail -1)
mscale-cli cluster cordon "$held" --reason "held back" > /dev/null || fail "cordon $held"
cluster_contract train 2..3 "$work/train.msc"
mscale-cli cluster submit "$work/train.msc" -- "$(command -v mscale-train-sim)" --data "$shared/data" \
  --steps "$steps" --snapshot-dir "$shared/train.snap" --snapshot-every 10 --no-memory-tier \
  --step-delay-ms 100 --log "$shared/train.log" --quiet > /dev/null || fail "submit train"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/train | head -1) == placed* ]]" \
  || fail "train not placed: $(status_of train)"
nodes=$(placed_on)
echo "placed on $(tr ',' '\n' <<< "$nodes" | wc -l) nodes, not the cordoned one: $([[ $nodes != *"$held"* ]] && echo yes)"
until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/train.log' 2>/dev/null || echo 0) >= 15 ))" || fail "the job does not train"

# Capacity returns: the job grows at a snapshot boundary.
mscale-cli cluster uncordon "$held" > /dev/null || fail "uncordon $held"
until_ok 60 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/train | head -1) == *$held* ]]" \
  || fail "train did not grow: $(status_of train); events: $(ectl get --print-value-only /mscale/contract-events/train)"
again=$(placed_on)
echo "placed again on $(tr ',' '\n' <<< "$again" | wc -l) nodes; status: $(ectl get --print-value-only /mscale/contract-status/train | sed -n 2p)"
events=$(ectl get --print-value-only /mscale/contract-events/train)
grep -o 'grow from 2 to 3 nodes: asked to stop at a snapshot boundary' <<< "$events" | head -1
grep -o 'grow from 2 nodes: stopped after step [0-9]*: placed again on [^ ]* (world size 3 of 2..3)' <<< "$events" \
  | sed -e 's/step [0-9]*/step S/' -e "s/on $again/on NODES/" | head -1
for n in ${again//,/ }; do
  until_ok 90 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$n/train | sed -n 's/^worker //p') == exited ]]" \
    || fail "the worker on $n did not finish"
done
echo "workers exited: $(for n in ${again//,/ }; do worker_exit "$n" train; done | tr '\n' ' ')"
for log in train.log train.log.rank1 train.log.rank2; do
  echo "--- $log"
  /usr/bin/python3 "$recovery/check_recovery.py" "$work/ref.log" "$shared/$log" --every 10
done
