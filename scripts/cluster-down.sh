#!/usr/bin/env bash
# Stops every etcd member that scripts/cluster-up.sh DIR started (DIR/m*.pid), always: SIGTERM,
# then SIGKILL after a bounded wait; a pid whose process is gone, or is no longer etcd (the pid was
# reused), is only forgotten. Leaves the data directories and logs in DIR. Exits 0 unless DIR is
# missing, so it can run from any trap.
set -uo pipefail
dir=${1:?usage: cluster-down.sh DIR}
[[ -d $dir ]] || { echo "cluster-down: no directory $dir" >&2; exit 1; }
stop_wait_s=${MSC_ETCD_STOP_WAIT_S:-5}

# A running etcd: a zombie (killed, not yet reaped by whoever inherited it) keeps its name but is
# already stopped, and waiting for it to go would only wait for the reaper.
is_etcd() {
  local stat
  [[ $(cat "/proc/$1/comm" 2>/dev/null) == etcd ]] || return 1
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [[ ${stat%% *} != Z ]]
}

pids=()
for pidfile in "$dir"/m*.pid; do
  [[ -e $pidfile ]] || continue
  pid=$(cat "$pidfile")
  if [[ $pid =~ ^[0-9]+$ ]] && is_etcd "$pid"; then
    kill -TERM "$pid" 2>/dev/null && pids+=("$pid")
  fi
  rm -f "$pidfile"
done
deadline=$((SECONDS + stop_wait_s))
for pid in "${pids[@]}"; do
  while is_etcd "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
  if is_etcd "$pid"; then
    kill -KILL "$pid" 2>/dev/null
  fi
done
exit 0
