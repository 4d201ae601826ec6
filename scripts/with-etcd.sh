#!/usr/bin/env bash
# Runs a command against a fresh 3-member etcd cluster on loopback and stops the cluster afterwards,
# whatever happens (the command fails, crashes, or this script is interrupted):
#   scripts/with-etcd.sh [CLUSTER-UP OPTIONS... --] CMD [ARGS...]
# With options (those of scripts/cluster-up.sh: --controllers N --agents N --netns ...), the cluster
# has controllers and node agents too, and the command also sees CLUSTER_DIR (= ETCD_CLUSTER_DIR).
# The command sees ETCD_ENDPOINTS (host:port,...) and ETCD_CLUSTER_DIR (the members' pid files,
# endpoints and logs: tests that kill a member read mN.pid there). The cluster lives in a fresh
# temporary directory, removed at the end; with MSC_ETCD_KEEP=1 it is kept (and named) for a post mortem.
# Exit status: the command's; 1 when the cluster cannot be started.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
up_options=()
if [[ ${1:-} == --* ]]; then
  while (($#)) && [[ $1 != -- ]]; do up_options+=("$1"); shift; done
  (($#)) && shift
fi
(($#)) || { echo "usage: with-etcd.sh [CLUSTER-UP OPTIONS... --] CMD [ARGS...]" >&2; exit 2; }
cluster_dir=$(mktemp -d "${TMPDIR:-/tmp}/msc-etcd.XXXXXX") || exit 1
rc=1
# A trap cannot run when this script is SIGKILLed (ctest does that on a timeout), and the members
# are not our children once cluster-up.sh returns. A guard in a session of its own outlives us:
# it polls for this script and stops the cluster when it is gone without cleaning up.
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
                [[ -d $3 ]] && { "$2/cluster-down.sh" "$3"; rm -rf "$3"; }' \
  with-etcd-guard $$ "$here" "$cluster_dir" </dev/null >/dev/null 2>&1 &
guard_pid=$!
cleanup() {
  kill "$guard_pid" 2>/dev/null
  # The members' last words before they are stopped (afterwards they are only about stopping).
  if ((rc != 0)); then
    for log in "$cluster_dir"/m*.log "$cluster_dir"/controllers/*.log "$cluster_dir"/agents/*/agent.log; do
      [[ -e $log ]] && { echo "--- ${log#"$cluster_dir"/} (last lines)"; tail -5 "$log"; } >&2
    done
  fi
  # The data is thrown away: no graceful stop (a member stopping with SIGTERM hands over leadership
  # and waits for peers that are stopping too: ~4 s per cluster, for nothing).
  MSC_ETCD_STOP_WAIT_S=${MSC_ETCD_STOP_WAIT_S:-0} "$here/cluster-down.sh" "$cluster_dir"
  if [[ ${MSC_ETCD_KEEP:-0} == 1 ]]; then
    echo "with-etcd: kept $cluster_dir" >&2
  else
    rm -rf "$cluster_dir"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
"$here/cluster-up.sh" "$cluster_dir" ${up_options[@]+"${up_options[@]}"} >/dev/null || exit 1
export ETCD_ENDPOINTS ETCD_CLUSTER_DIR=$cluster_dir CLUSTER_DIR=$cluster_dir
ETCD_ENDPOINTS=$(cat "$cluster_dir/endpoints")
"$@"
rc=$?
exit $rc
