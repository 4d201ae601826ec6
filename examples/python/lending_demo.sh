#!/usr/bin/env bash
# lending_demo.sh BUILD_DIR WORK_DIR [STEPS [NEXT_SAMPLES]]: issue 27 on this machine, in about a minute. The example
# job (train.msc: phases decode, compute, snapshot) trains STEPS steps (default 200) under a node
# agent alone, then again beside two borrowers (borrow_preprocess.msc, borrow_infer.msc, class =
# opportunistic) that run on the loader CPU it lends while it computes; prints the utilisation of its
# CPUs either way, the borrowers' work, the node's reclaims and missed deadlines, and that the
# owner's losses are the same bit for bit (lending_demo.py says how each is measured). Lending needs
# root and a cgroup cpuset and freezer; without them it says why and exits 0 without running anything.
# Every process it starts is ended on the way out, on failure or Ctrl-C too.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
steps=${3:-200}
next_samples=${4:-800}  # the next data set, which the borrowers preprocess and caption
python=/usr/bin/python3
export PYTHONPATH="$repo/python" MSCALE_BIN="$build/bin" PATH="$build/bin:$PATH"

skip() { echo "lending demo: skipped: $*"; exit 0; }
[[ $(id -u) == 0 ]] || skip "the agent lends through cgroups (cpuset, freezer) and affinity, which needs root"
if ! { [[ -d /sys/fs/cgroup/cpuset && -d /sys/fs/cgroup/freezer ]] ||
       grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null; }; then
  skip "no cgroup cpuset and freezer on this node (v1 hierarchies or the cgroup2 cpuset controller)"
fi
rm -rf "$work" && mkdir -p "$work"
for contract in train borrow_preprocess borrow_infer; do
  "$build/bin/mscalec" --topology live -o "$work/$contract.msp" "$here/$contract.msc" ||
    skip "this node cannot honour examples/python/$contract.msc (the diagnostics above say why)"
done

# The driver ends the agent (and with it every worker) in its `finally`; this is for a driver that
# could not: killed, or stopped before it got there. The driver runs in the background so that a
# signal to this script is handled at once, not after it.
driver=
cleanup() {
  local pid
  if [[ -n $driver ]] && kill -0 "$driver" 2>/dev/null; then
    kill -TERM "$driver" 2>/dev/null
    for _ in $(seq 300); do kill -0 "$driver" 2>/dev/null || break; sleep 0.1; done
  fi
  pid=$(cat "$work/agent.pid" 2>/dev/null) || return 0
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null && grep -q mscale-exec "/proc/$pid/cmdline" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
  fi
  return 0
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "== the data: 96 JPEG images to train on, and the next set ($next_samples images, 256x256) for the borrowers"
$python "$here/make_dataset.py" "$work/data" --samples 96 --seed 1 > "$work/dataset.txt" || exit 1
$python "$here/make_dataset.py" "$work/next" --samples "$next_samples" --seed 2 --image-size 256 > "$work/next.txt" || exit 1
$python "$here/lending_demo.py" --work "$work" --owner "$work/train.msp" --preprocess "$work/borrow_preprocess.msp" \
  --infer "$work/borrow_infer.msp" --data "$work/data" --next "$work/next" --steps "$steps" &
driver=$!
wait "$driver"
rc=$?
driver=
exit $rc
