#!/usr/bin/env bash
# elastic_rendezvous.sh WORK: the ways a rendezvous of elastic mscale-train-sim ranks fails, one line
# of exit statuses and one of rank 0's (or the rank's) error each.
work=$1
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
rank() { # rank R of W: trains 20 steps of 12 samples in micro-batches of 2
  env RANK=$1 WORLD_SIZE=$2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port mscale-train-sim --data "$work/data" --elastic \
    --batch 12 --micro-batch 2 --steps 20 --rendezvous-timeout-ms 300 --log "$work/$3.log" --quiet 2> "$work/$3.err.$1"
}
rank 0 2 alone; echo "alone of 2: exit $?"
cat "$work/alone.err.0"
echo "steps trained: $(grep -c '^step ' "$work/alone.log")"

rank 0 2 wide & zero=$!
rank 1 3 wide; one=$?
wait $zero; echo "another world size: rank 0 exit $?, rank 1 exit $one"
cat "$work/wide.err.0"

rank 1 2 orphan; echo "no rank 0: exit $?"
cat "$work/orphan.err.1"
