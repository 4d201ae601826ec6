#!/usr/bin/env bash
# recovery_demo.sh BUILD_DIR WORK_DIR [STEPS]: the product's promise on this machine, in a minute.
# Compiles examples/python/train.msc for the live node, trains the example vision-language model
# under mscale-exec, kills the worker once (SIGKILL, at a random step), lets the supervisor recover it
# from the newest snapshot, and proves that every step's loss (bit for bit), LR and samples and the
# final parameters equal those of a run that never failed. Needs root (cgroups, affinity); without
# it, says so and exits 0 without running anything.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "$1" && pwd)
work=$2
steps=${3:-300}
python=/usr/bin/python3
export PYTHONPATH="$repo/python" MSCALE_BIN="$build/bin"

if [[ $(id -u) != 0 ]]; then
  echo "recovery demo: skipped: mscale-exec applies cgroups and CPU affinity, which needs root"
  exit 0
fi
rm -rf "$work" && mkdir -p "$work"
"$build/bin/mscalec" --topology live -o "$work/train.msp" "$here/train.msc" || {
  echo "recovery demo: this node cannot honour examples/python/train.msc (the diagnostics above say why)"
  exit 0
}
echo "== the data: 96 JPEG images with captions"
# Through a file, not `| head -1`: head would close the pipe after one line, and the script's second
# line would then fail on a broken pipe (it did, in a fresh clone's quickstart).
$python "$here/make_dataset.py" "$work/data" --samples 96 --seed 1 > "$work/dataset.txt" || exit 1
head -1 "$work/dataset.txt"

echo "== the uninterrupted run ($steps steps, no snapshots): the reference"
$python "$here/train.py" --data "$work/data" --steps "$steps" --log "$work/reference.log" --no-snapshots || exit 1
tail -1 "$work/reference.log"

echo "== the same job under mscale-exec, its worker killed with SIGKILL once"
$python "$repo/scripts/recovery/exec_faults.py" --exec "$build/bin/mscale-exec" --plan "$work/train.msp" \
  --topology live --work "$work/run" --steps "$steps" --every 10 --seed "$RANDOM" --faults kill9 -- \
  $python "$here/train.py" --data "$work/data" --steps "$steps" --log "$work/run/train.log" \
  --snapshot-dir "$work/run/snaps" || exit 1

echo "== the faulty run against the reference"
$python "$repo/scripts/recovery/check_recovery.py" "$work/reference.log" "$work/run/train.log" --every 10
