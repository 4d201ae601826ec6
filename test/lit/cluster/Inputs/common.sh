# Sourced by the cluster tests' scripts: what they all say to etcd and how they wait.
#   ectl ARGS...             etcdctl on the test's cluster ($ETCD_ENDPOINTS)
#   until_ok SECONDS CMD...  runs CMD every 0.2 s until it succeeds, for at most SECONDS
#   status_of CONTRACT       the first line of the leader's decision on CONTRACT
#   decided CONTRACT         whether the leader placed or refused CONTRACT
#   node_of CONTRACT         the first node CONTRACT is placed on
#   cluster_contract NAME NODES [FILE]  a contract for the cluster (NODES nodes, one GPU and its HCA
#                            each), written to FILE (default: stdout)
#   register_nodes FIXTURE NODE...      registers each NODE as the recorded machine FIXTURE, as an
#                            agent would (without one: placement only)
#   fail MESSAGE             prints FAIL and the last lines of $fail_logs (a glob), exits 1
set -uo pipefail
ectl() { etcdctl --endpoints="$ETCD_ENDPOINTS" "$@"; }
until_ok() { local end=$((SECONDS + $1)); shift; until "$@"; do ((SECONDS < end)) || return 1; sleep 0.2; done; }
status_of() { ectl get --print-value-only "/mscale/contract-status/$1" | head -1; }
decided() { [[ $(status_of "$1") == placed* || $(status_of "$1") == refused* ]]; }
node_of() { status_of "$1" | sed -n 's/^placed \([^ ,]*\)[ ,].*/\1/p'; }
cluster_contract() {
  printf 'import "profiles/mlvm.msc";\ncontract %s uses profile mlvm_light {\n  nodes = %s;\n  io_topology { r0 { gpu = any; rdma_port = nearest; } }\n}\n' \
    "$1" "$2" > "${3:-/dev/stdout}"
}
register_nodes() {
  local fixture=$1 yaml n
  shift
  yaml=$(mscale-cli topology export --format=yaml --topology "$fixture") || fail "topology export of $fixture"
  for n in "$@"; do
    printf '# mscale node registration; agent test\n%s\n' "$yaml" | ectl put "/mscale/nodes/$n" > /dev/null
  done
}
fail_logs=${fail_logs:-}
fail() {
  local log
  echo "FAIL: $*"
  for log in $fail_logs; do
    [[ -e $log ]] && { echo "--- $log"; tail -8 "$log"; }
  done
  exit 1
}
