#!/usr/bin/env bash
# lemon.sh WORK: a training job whose worker is SIGKILLed three times on its node, under the cluster
# config's health.lemon; the leading controller is SIGKILLed between the second and the third fault.
# Prints one line per fact for FileCheck.
source "$(dirname "$0")/train-job.sh"
work=$1
mkdir -p "$work"
steps=100000 # the job runs while its node is judged: it is not to end on its own
printf '# mscale cluster config; written by test\ncluster: lab\nhealth:\n  lemon: { faults: 3, within: 24h }\n' |
  ectl put /mscale/config > /dev/null
mscale-train-sim --gen-data "$shared/data" --samples 240 --files 6 > /dev/null || fail "gen-data"
submit_job "$work" train
until_ok 30 decided train || fail "train not decided"
node=$(node_of train)
[[ -n $node ]] || fail "train not placed: $(status_of train)"
echo "train placed on one node"

field() { ectl get --print-value-only "/mscale/status/$node/train" | sed -n "s/^$1 //p"; }
history() { ectl get --print-value-only "/mscale/faults/$node" | grep .; }
cordon() { ectl get --print-value-only "/mscale/cordons/$node"; }
# Waits until the worker has a pid and has trained past the step its last restart resumed from (a
# worker killed again at the same step is a crash loop, which its supervisor does not restart).
trained_on() { local since=$1; until_ok 60 bash -c "(( \$(grep -c '^step ' '$shared/train.log' 2>/dev/null || echo 0) >= $since + 25 ))" \
  && [[ $(field worker) == running && -n $(field pid) ]]; }
killed=0
kill_worker() {
  local lines pid
  lines=$(grep -c '^step ' "$shared/train.log" 2>/dev/null || echo 0)
  trained_on "$lines" || fail "the worker does not train (worker $(field worker))"
  pid=$(field pid)
  kill -9 "$pid" || fail "no worker $pid"
  killed=$((killed + 1))
  until_ok 30 bash -c "(( \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/faults/$node | grep -c .) >= $killed ))" \
    || fail "fault $killed not recorded: status $(field faults) faults, history: $(history)"
  echo "fault $killed recorded: $(history | tail -1 | cut -d' ' -f2- | sed 's/ (SIGKILL).*//')"
}

kill_worker
echo "cordoned after 1: $([[ -n $(cordon) ]] && echo yes || echo no)"
kill_worker
echo "cordoned after 2: $([[ -n $(cordon) ]] && echo yes || echo no)"

leader() { mscale-controller leader 2> /dev/null | cut -d' ' -f1; }
first=$(leader)
[[ -n $first ]] || fail "no leader"
kill -9 "$(cat "$CLUSTER_DIR/controllers/$first.pid")"
until_ok 30 bash -c '[[ -n $(mscale-controller leader 2> /dev/null) && $(mscale-controller leader 2> /dev/null | cut -d" " -f1) != '"$first"' ]]' \
  || fail "no standby leads"
echo "leader SIGKILLed; the standby leads"

kill_worker
until_ok 20 bash -c "[[ -n \$(etcdctl --endpoints=$ETCD_ENDPOINTS get --print-value-only /mscale/cordons/$node) ]]" \
  || fail "$node not cordoned; history: $(history)"
ids=$(history | cut -d' ' -f2)
echo "history: $(echo "$ids" | grep -c .) faults, $([[ $(echo "$ids" | sort -u | grep -c .) == $(echo "$ids" | grep -c .) ]] && echo each once || echo "some twice: $ids")"
echo "$(cordon | sed -n 's/^by //p' | sed 's/^/cordoned by /'): $(cordon | sed -n 's/^reason //p')"
sleep 1
echo "train still on its node: $([[ $(node_of train) == "$node" ]] && echo yes || echo no), worker $(field worker)"

cluster_contract next 1 "$work/next.msc"
mscale-cli cluster submit "$work/next.msc" > /dev/null || fail "submit next"
until_ok 30 decided next || fail "next not decided"
echo "next job on the other node: $([[ -n $(node_of next) && $(node_of next) != "$node" ]] && echo yes || echo "no: $(status_of next)")"

# Repaired and uncordoned: the history is marked, and the rule counts from there (not at once again).
mscale-cli cluster uncordon "$node" > /dev/null || fail "uncordon"
echo "uncordoned; history marked: $(history | tail -1 | cut -d' ' -f2 | cut -d: -f1)"
cluster_contract after 1 "$work/after.msc"
mscale-cli cluster submit "$work/after.msc" > /dev/null || fail "submit after"
until_ok 30 decided after || fail "after not decided"
echo "cordoned again at the next round: $([[ -n $(cordon) ]] && echo yes || echo no)"
exit 0
