# Sourced by the cluster's end-to-end tests (node-loss.sh, partition.sh), which run under
# `scripts/with-etcd.sh --controllers N --agents N ... --`: CLUSTER_DIR is the cluster, its agents
# serve recorded nodes, DIR/shared is the storage the nodes share. Helpers to submit a training job
# (mscale-train-sim, snapshots every 10 steps on the shared disk) and follow it.
set -uo pipefail
ectl() { etcdctl --endpoints="$ETCD_ENDPOINTS" "$@"; }
fail() {
  echo "FAIL: $*"
  for log in "$CLUSTER_DIR"/controllers/*.log "$CLUSTER_DIR"/agents/*/agent.log; do
    echo "--- ${log#"$CLUSTER_DIR"/}"; tail -8 "$log"
  done
  exit 1
}
until_ok() { local end=$((SECONDS + $1)); shift; until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done; }
status_of() { ectl get --print-value-only "/mscale/contract-status/$1" | head -1; }
node_of() { status_of "$1" | sed -n 's/^placed \([^ ,]*\) .*/\1/p'; }
steps_logged() { grep -c '^step ' "$1" 2>/dev/null || echo 0; }
worker_state() { ectl get --print-value-only "/mscale/status/$1/$2" | sed -n 's/^worker //p'; }
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
  printf 'import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = 1;\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' \
    "$2" > "$1/$2.msc"
  mscale-cli cluster submit "$1/$2.msc" -- "$(command -v mscale-train-sim)" --data "$shared/data" \
    --steps "$steps" --snapshot-dir "$shared/$2.snap" --snapshot-every 10 --no-memory-tier \
    --step-delay-ms 60 --log "$shared/$2.log" --quiet > /dev/null || fail "submit $2"
}
