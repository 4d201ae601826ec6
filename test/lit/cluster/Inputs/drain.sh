#!/usr/bin/env bash
# drain.sh WORK: a two-node training job (mscale-train-sim, one command for both ranks) on a
# cluster of three recorded nodes. A drain that would leave the job no two nodes is refused; the
# node is then drained for real: the leader asks both ranks to stop after one step it chooses
# ahead, both stop there with their snapshots on the shared disk, and the job is placed again,
# whole, off the drained node, where each rank resumes at the next step. Each rank's log is the
# uninterrupted run's step for step, with one planned move and no step run twice. Prints one line
# per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
steps=${STEPS:-150}
prepare_job "$work"

# Usage and names first: refused before the leader is asked, or by it, and nothing is written.
mscale-cli cluster drain n9 2>&1 | sed 's/registered nodes: .*/registered nodes: .../'
mscale-cli cluster drain "$(ls "$CLUSTER_DIR/agents" | head -1)" --deadline soon 2>&1
echo "drains written: $(ectl get --prefix --keys-only /mscale/drains/ | grep -c .)"

cluster_contract train 2 "$work/train.msc"
mscale-cli cluster submit "$work/train.msc" -- "$(command -v mscale-train-sim)" --data "$shared/data" \
  --steps "$steps" --snapshot-dir "$shared/train.snap" --snapshot-every 10 --no-memory-tier \
  --step-delay-ms 100 --log "$shared/train.log" --quiet > /dev/null || fail "submit train"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/train | head -1) == placed* ]]" \
  || fail "train not placed: $(status_of train)"
nodes=$(status_of train | sed -n 's/^placed \([^ ]*\) .*/\1/p')
first=${nodes%%,*} second=${nodes#*,}
spare=$(ls "$CLUSTER_DIR/agents" | grep -vx -e "$first" -e "$second")
echo "placed on two of three nodes: $([[ -n $second && $first != "$second" && -n $spare ]] && echo yes)"
until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/train.log' 2>/dev/null || echo 0) >= 15 ))" || fail "the job does not train"

# With the spare node cordoned the job has no two nodes without the drained one: refused, unforced.
mscale-cli cluster cordon "$spare" --reason "held back" > /dev/null || fail "cordon $spare"
mscale-cli cluster drain "$first" 2>&1 | sed -e "s/'$first'/'FIRST'/g"
echo "drains written: $(ectl get --prefix --keys-only /mscale/drains/ | grep -c .)"
mscale-cli cluster uncordon "$spare" > /dev/null || fail "uncordon $spare"

mscale-cli cluster drain "$first" --deadline 60s > "$work/drain.out" 2>&1 || fail "drain: $(cat "$work/drain.out")"
sed -e "s/'$first'/'FIRST'/g" -e "s/ $first:/ FIRST:/" -e 's/drain [0-9]* by .*leader-rev [0-9]*/drain ID by LEADER/' \
  -e "s/now [^ ]*$/now PLACED/" -e 's/moved in [0-9.]* s/moved in T s/' "$work/drain.out"
mscale-cli cluster nodes | awk -v n="$first" '$1 == n { print "drained node: " $2 }'
again=$(status_of train | sed -n 's/^placed \([^ ]*\) .*/\1/p')
echo "placed again off the drained node: $([[ $again != *"$first"* && $again == *"$spare"* ]] && echo yes)"
ectl get --print-value-only /mscale/contract-events/train | grep -o 'drain of [^:]*: stopped after step [0-9]*' \
  | sed "s/drain of $first/drain of FIRST/; s/step [0-9]*/step S/" | head -1
for n in ${again//,/ }; do
  until_ok 90 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$n/train | sed -n 's/^worker //p') == exited ]]" \
    || fail "the worker on $n did not finish"
done
echo "workers on the new nodes: exited $(worker_exit "${again%%,*}" train) $(worker_exit "${again#*,}" train)"
for log in train.log train.log.rank1; do
  echo "--- $log"
  /usr/bin/python3 "$recovery/check_recovery.py" "$work/ref.log" "$shared/$log" --every 10
done
# Uncordon ends the drain: the node takes placements again.
mscale-cli cluster uncordon "$first" > /dev/null || fail "uncordon $first"
echo "drains left: $(ectl get --prefix --keys-only /mscale/drains/ | grep -c .)"

# A job whose worker says no step (a plain command) cannot stop at a boundary: unforced, its node's
# drain times out at the deadline, the job runs on there, and the command says so, coded.
cluster_contract sleeper 1 "$work/sleeper.msc"
mscale-cli cluster submit "$work/sleeper.msc" -- /bin/sleep 600 > /dev/null || fail "submit sleeper"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/sleeper | head -1) == placed* ]]" \
  || fail "sleeper not placed: $(status_of sleeper)"
sleeper=$(status_of sleeper | sed -n 's/^placed \([^ ]*\) .*/\1/p')
mscale-cli cluster drain "$sleeper" --deadline 2s > "$work/timeout.out" 2>&1
echo "drain of a job that says no step: exit $?"
grep 'ERR_CLUSTER_024' "$work/timeout.out" | sed -e "s/'$sleeper'/'NODE'/g"
echo "still on the node: $([[ $(status_of sleeper | sed -n 's/^placed \([^ ]*\) .*/\1/p') == "$sleeper" ]] && echo yes)"
mscale-cli cluster withdraw sleeper > /dev/null || fail "withdraw sleeper"
mscale-cli cluster uncordon "$sleeper" > /dev/null || fail "uncordon $sleeper"
