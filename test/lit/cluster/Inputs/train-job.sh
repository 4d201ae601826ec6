# Sourced by the cluster's end-to-end tests (node-loss.sh, agent-partition.sh), which run under
# `scripts/with-etcd.sh --controllers N --agents N ... --`: CLUSTER_DIR is the cluster, its agents
# serve recorded nodes, DIR/shared is the storage the nodes share. Helpers to submit a training job
# (mscale-train-sim, snapshots every 10 steps on the shared disk) and follow it.
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fail_logs="$CLUSTER_DIR/controllers/*.log $CLUSTER_DIR/agents/*/agent.log"
worker_exit() { ectl get --print-value-only "/mscale/status/$1/$2" | sed -n 's/^exit //p'; }

shared=$CLUSTER_DIR/shared
recovery=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../../scripts/recovery" && pwd)
steps=${STEPS:-120}

# prepare_job WORK: the data set on the shared storage and the uninterrupted run's log.
prepare_job() {
  mscale-train-sim --gen-data "$shared/data" --samples 240 --files 6 > /dev/null || fail "gen-data"
  mscale-train-sim --data "$shared/data" --steps "$steps" --snapshot-every 0 --log "$1/ref.log" --quiet \
    > /dev/null || fail "the reference run"
}

# submit_job WORK NAME: a one-node job whose worker trains, snapshotting to the shared disk.
submit_job() {
  cluster_contract "$2" 1 "$1/$2.msc"
  mscale-cli cluster submit "$1/$2.msc" -- "$(command -v mscale-train-sim)" --data "$shared/data" \
    --steps "$steps" --snapshot-dir "$shared/$2.snap" --snapshot-every 10 --no-memory-tier \
    --step-delay-ms 60 --log "$shared/$2.log" --quiet > /dev/null || fail "submit $2"
}
