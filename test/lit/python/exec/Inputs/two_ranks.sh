#!/bin/sh
# two_ranks.sh STOP OUT COMMAND...: runs COMMAND as ranks 0 and 1 of a two-rank job on this machine
# (RANK, WORLD_SIZE=2, MASTER_ADDR, MASTER_PORT: a free port), each under control-page-run with a
# stop asked after step STOP (0: nothing asked), as the executor of each rank's node would ask it;
# OUT.<rank> gets what rank's output and its page said. Fails when either rank does.
stop=$1 out=$2
shift 2
port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
for rank in 0 1; do
  RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    control-page-run --stop-after "$stop" -- "$@" > "$out.$rank" 2>&1 &
  eval "pid$rank=\$!"
done
wait "$pid0" || { cat "$out.0"; exit 1; }
wait "$pid1" || { cat "$out.1"; exit 1; }
