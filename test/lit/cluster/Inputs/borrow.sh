#!/usr/bin/env bash
# borrow.sh WORK: opportunistic work across a cluster of three recorded nodes. An owner whose phases
# lend its loader's CPUs runs on one node (the others cordoned meanwhile); its agent publishes what
# it lends; a borrower submitted with --class opportunistic (a training job, snapshots on the shared
# disk) is placed there, not on the idle nodes, and trains. A second owner starts on a second node;
# the first owner is withdrawn, so its loan is taken back for good: the borrower is placed again on
# the second owner's node and resumes from its own snapshot there, its work kept, every step of the
# uninterrupted run in its log. Prints one line per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
steps=${STEPS:-150}
prepare_job "$work"
root=$(cd "$(dirname "$0")/../../../.." && pwd)
py=(env PYTHONPATH="$root/python" MSCALE_BIN="$(dirname "$(command -v mscale-exec)")" /usr/bin/python3)
owner_contract() {
  printf 'contract %s {\n  io_topology { loader { cpu_cores = [2, 3]; } }\n  phases {\n    decode { loader = [cpu]; }\n    compute { loader = []; }\n  }\n  lending { reclaim_within = 5ms; lead = auto; }\n}\n' "$1" > "$2"
}
nodes=($(ls "$CLUSTER_DIR/agents"))
a=${nodes[0]} b=${nodes[1]} c=${nodes[2]}

# The borrower's source says no class: --class makes it one. Bad classes are refused, nothing written.
printf 'contract infer {\n  cpu_cores = 1;\n  memory = 256MiB;\n}\n' > "$work/infer.msc"
mscale-cli cluster submit "$work/infer.msc" --class borrower -- /bin/true 2>&1
printf 'contract guar {\n  class = guaranteed;\n  io_topology { r0 { cpu_cores = [1]; } }\n}\n' > "$work/guar.msc"
mscale-cli cluster submit "$work/guar.msc" --class opportunistic -- /bin/true 2>&1
echo "contracts written: $(ectl get --prefix --keys-only /mscale/contracts/ | grep -c .)"

for n in "$b" "$c"; do mscale-cli cluster cordon "$n" --reason "owner on A first" > /dev/null || fail "cordon $n"; done
owner_contract lender1 "$work/lender1.msc"
mscale-cli cluster submit "$work/lender1.msc" -- "${py[@]}" "$(dirname "$0")/phase_owner.py" 600 > /dev/null \
  || fail "submit lender1"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/lending/$a | sed -n 's/^owners //p') == 1 ]]" \
  || fail "$a publishes no lending: $(ectl get /mscale/lending/$a)"
for n in "$b" "$c"; do mscale-cli cluster uncordon "$n" > /dev/null || fail "uncordon $n"; done
echo "A lends: $(ectl get --print-value-only /mscale/lending/$a | sed -n 's/^cpus //p') CPUs"
until_ok 30 bash -c "(( \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/lending/$a | sed -n 's/^share-permille //p') > 0 ))" \
  || fail "$a lends no share of its time: $(ectl get /mscale/lending/$a)"
echo "A lends part of its time: yes"
mscale-cli cluster nodes | awk -v n="$a" '$1 == n { sub(/@[0-9]+%$/, "@N%", $13); print "cluster nodes: A lends " $13 }'

mscale-cli cluster submit "$work/infer.msc" --class opportunistic -- "$(command -v mscale-train-sim)" --data "$shared/data" \
  --steps "$steps" --snapshot-dir "$shared/infer.snap" --snapshot-every 10 --no-memory-tier \
  --step-delay-ms 60 --log "$shared/infer.log" --quiet || fail "submit infer"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/infer | head -1) == placed* ]]" \
  || fail "infer not placed: $(status_of infer)"
echo "borrower placed on the lending node: $([[ $(node_of infer) == "$a" ]] && echo yes)"
until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/infer.log' 2>/dev/null || echo 0) >= 25 ))" || fail "the borrower does not train"

# A second owner on B (A cordoned so that it lands elsewhere), then the first owner leaves A.
mscale-cli cluster cordon "$a" --reason "second owner elsewhere" > /dev/null || fail "cordon $a"
mscale-cli cluster cordon "$c" --reason "second owner on B" > /dev/null || fail "cordon $c"
owner_contract lender2 "$work/lender2.msc"
mscale-cli cluster submit "$work/lender2.msc" -- "${py[@]}" "$(dirname "$0")/phase_owner.py" 600 > /dev/null \
  || fail "submit lender2"
until_ok 30 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/lending/$b | sed -n 's/^owners //p') == 1 ]]" \
  || fail "$b publishes no lending: $(ectl get /mscale/lending/$b)"
echo "borrower still on A while A lends: $([[ $(node_of infer) == "$a" ]] && echo yes)"
mscale-cli cluster withdraw lender1 > /dev/null || fail "withdraw lender1"
until_ok 30 bash -c "s=\$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/contract-status/infer | head -1); [[ \$s == placed* && \$s != *'$a'* ]]" \
  || fail "infer not placed again: $(status_of infer)"
echo "borrower placed again on the second owner's node: $([[ $(node_of infer) == "$b" ]] && echo yes)"
ectl get --print-value-only /mscale/contract-events/infer | grep -o 'node [^ ]* lends no more what it asks ([^)]*): placed again on [^ ]*' \
  | sed -e "s/node $a /node A /" -e "s/on $b\$/on B/"
until_ok 120 bash -c "[[ \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/status/$b/infer | sed -n 's/^worker //p') == exited ]]" \
  || fail "the borrower on $b did not finish"
echo "borrower on B: exited $(worker_exit "$b" infer)"
/usr/bin/python3 "$recovery/check_recovery.py" "$work/ref.log" "$shared/infer.log" --every 10
mscale-cli cluster withdraw lender2 > /dev/null
