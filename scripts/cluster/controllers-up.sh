#!/usr/bin/env bash
# Starts N controllers on the etcd that scripts/cluster-up.sh started in DIR (DIR/endpoints):
#   scripts/cluster/controllers-up.sh DIR N
# Controller K is named cK; its log is DIR/controllers/cK.log, its pid DIR/controllers/cK.pid. Each
# serves the cluster's writes on a free loopback port (it proclaims the address in the election).
# Waits, bounded, until one of them leads; exit 1 (with the logs' last lines) if none does.
# scripts/cluster-down.sh DIR stops them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/tools.sh"
dir=${1:?usage: controllers-up.sh DIR N}
count=${2:?usage: controllers-up.sh DIR N}
lead_wait_s=${MSC_CLUSTER_LEAD_WAIT_S:-20}
endpoints=$(cat "$dir/endpoints")
controller=$(msc_tool mscale-controller)
mkdir -p "$dir/controllers"
for ((k = 1; k <= count; k++)); do
  setsid "$controller" run --endpoints "$endpoints" --name "c$k" --listen 127.0.0.1:0 \
    </dev/null >/dev/null 2>"$dir/controllers/c$k.log" &
  echo $! >"$dir/controllers/c$k.pid"
done
deadline=$((SECONDS + lead_wait_s))
until "$controller" leader --endpoints "$endpoints" >/dev/null 2>&1; do
  if ((SECONDS >= deadline)); then
    echo "controllers-up: no controller leads after ${lead_wait_s}s" >&2
    tail -n 3 "$dir"/controllers/c*.log >&2 || true
    exit 1
  fi
  sleep 0.2
done
