#!/usr/bin/env bash
# ddp-rendezvous.sh WORK: a two-node PyTorch DDP job (gloo) placed by the cluster on nodes in
# network namespaces, each rank on its own node, reaching rank 0 at the address and port its
# assignment gives. The agent of one of its nodes is SIGKILLed mid-run: the job is placed again,
# whole, on the nodes left with a fresh port, both ranks resume from the newest step both committed,
# and each rank's log is the uninterrupted two-rank run's. Prints one line per fact for FileCheck.
source "$(dirname "$0")/common.sh"
fail_logs="$CLUSTER_DIR/controllers/*.log $CLUSTER_DIR/agents/*/agent.log"
work=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
shared=$CLUSTER_DIR/shared
recovery=$root/scripts/recovery
py=(env PYTHONPATH="$root/python" MSCALE_BIN="$(dirname "$(command -v mscale-exec)")" /usr/bin/python3)
steps=60
mkdir -p "$work/ref"
"${py[@]}" "$root/examples/python/make_dataset.py" "$shared/data" --samples 64 --seed 4 > /dev/null || fail "dataset"

# The uninterrupted two-rank run on this machine, ranks told by hand what torchrun would tell them.
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "${py[@]}" "$here/ddp_job.py" --data "$shared/data" \
    --steps $steps --log "$work/ref/train.log" --no-snapshots 2> "$work/ref/rank$r.err" &
done
wait || fail "the reference run: $(tail -3 "$work"/ref/rank*.err)"

cluster_contract ddp 2 "$work/ddp.msc"
# A step of two ranks over gloo waits for the slower one, and on a loaded two-core machine (CI runs
# this beside etcd, three agents and another test) a rank can be off the CPU for longer than the
# default hang bound (3 heartbeats of 200 ms). A false hang restarts one rank, the other then
# hangs in its collective, and three of those in a row are a crash loop (ERR_EXEC_029): the bound
# a DDP job needs is its own, and this test is about rendezvous, not hang detection.
sed -i 's/^  io_topology/  fault_tolerance { heartbeat = 1s; }\n  io_topology/' "$work/ddp.msc"
# gloo finds its own address through the interface that holds the node's: eth0 in a namespace.
mscale-cli cluster submit "$work/ddp.msc" --env GLOO_SOCKET_IFNAME=eth0 -- "${py[@]}" "$here/ddp_job.py" \
  --data "$shared/data" --steps $steps --log "$shared/train.log" --snapshot-dir "$shared/snaps" --every 10 \
  > /dev/null || fail "submit"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/ddp | head -1) == placed* ]]" \
  || fail "ddp not placed: $(status_of ddp)"
nodes=$(status_of ddp | sed -n 's/^placed \([^ ]*\) .*/\1/p')
first=${nodes%%,*} second=${nodes#*,}
echo "placed on two nodes: $([[ $first != "$second" && -n $second ]] && echo yes)"
until_ok 60 bash -c "(( \$(wc -l 2>/dev/null < '$shared/train.log.rendezvous' || echo 0) >= 2 ))" || fail "the ranks did not start"
address=$(cat "$CLUSTER_DIR/agents/$first/address")
echo "ranks told: $(sort -u "$shared/train.log.rendezvous" | sed "s/$address/ADDRESS-OF-RANK-0-NODE/" | tr '\n' ';')"
until_ok 90 bash -c "(( \$(grep -c '^step ' '$shared/train.log' 2>/dev/null || echo 0) >= 25 ))" || fail "the job does not train"
kill -9 "$(cat "$CLUSTER_DIR/agents/$second/agent.pid")"
echo "agent of rank 1's node SIGKILLed mid-run"
until_ok 40 bash -c "s=\$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/ddp | head -1); [[ \$s == placed* && \$s != *'$second'* ]]" \
  || fail "ddp not placed again: $(status_of ddp)"
echo "placed again on the nodes left: yes"
again=$(status_of ddp | sed -n 's/^placed \([^ ]*\) .*/\1/p')
for n in ${again//,/ }; do
  until_ok 120 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$n/ddp | sed -n 's/^worker //p') == exited ]]" \
    || fail "the worker on $n did not finish"
done
echo "both workers exited"
# What each rank printed, read from its node's HTTP endpoint on the nodes' network.
echo "output read from the nodes: $(for r in 0 1; do mscale-cli cluster logs ddp --rank $r | grep '^rank' | sed 's/ at .*//'; done | tr '\n' ';')"
# The new placement: rank 0 on the first node left, on a port no worker of the old one held.
old_port=$(head -1 "$shared/train.log.rendezvous" | sed 's/.*://')
new=$(tail -n 2 "$shared/train.log.rendezvous" | sort -u)
new_port=$(tail -1 "$shared/train.log.rendezvous" | sed 's/.*://')
echo "placed again: $(echo "$new" | sed 's/ at .*//' | tr '\n' ';') fresh port: $([[ $new_port != "$old_port" ]] && echo yes)"
/usr/bin/python3 "$recovery/check_recovery.py" "$work/ref/train.log" "$shared/train.log" --every 10 --world 2 | grep -v '^fault' \
  | sed 's/^/rank 0: /'
/usr/bin/python3 "$recovery/check_recovery.py" "$work/ref/train.log.rank1" "$shared/train.log.rank1" --every 10 --world 2 \
  | grep -v '^fault' | sed 's/^/rank 1: /'
