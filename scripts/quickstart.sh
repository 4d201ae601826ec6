#!/usr/bin/env bash
# Sets everything up and runs the main job on this machine: compile the example contracts
# against the live topology and against a recorded 4xA100 node, print the diagnostics and the
# plans, and write the plans to build/plans/; then train the example PyTorch job under mscale-exec,
# kill its worker once, and show the recovery and that the result equals an uninterrupted run; then
# train it again under a node agent, alone and beside two borrowers that run on the CPU it lends while
# it computes, and show the utilisation either way and that its result is the same.
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh || exit 1
# A fresh clone has no build/ yet. Only the tools run below are built (the unit tests and benchmarks
# are scripts/test.sh's business).
mkdir -p build
echo "quickstart: building mscalec, mscale-plan, mscale-cli, mscale-exec and the worker runtime (log: build/quickstart-build.log)"
scripts/build.sh release mscalec mscale-plan mscale-cli mscale-exec mscale_snapshot mscale_worker \
  >build/quickstart-build.log 2>&1 || {
  tail -30 build/quickstart-build.log; echo "quickstart: build failed"; exit 1; }

bin=build/bin
plans=build/plans
mkdir -p "$plans/live" "$plans/jureca-a100"
fixture=../shared/fixtures/topologies/hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml

echo "== this machine"
$bin/mscale-cli topology show --topology live 2>/dev/null | head -25 || $bin/mscale-cli topology show | head -25

status=0
compile() { # compile TOPOLOGY OUTDIR CONTRACT
  local topo=$1 out=$2 contract=$3 name
  name=$(basename "$contract" .msc)
  echo
  echo "== mscalec --topology $topo $contract"
  if $bin/mscalec --topology "$topo" "$contract" -o "$out/$name.msp"; then
    $bin/mscale-plan dump "$out/$name.msp"
    echo "-> $out/$name.msp"
  else
    echo "(refused: the diagnostics above say why; nothing was written)"
  fi
}

echo
echo "== the live node: every example contract"
for contract in examples/contracts/*.msc; do
  compile live "$plans/live" "$contract"
done

if [[ -f $fixture ]]; then
  echo
  echo "== a recorded JURECA-DC node (4x A100, 4x ConnectX-6): $fixture"
  compile "$fixture" "$plans/jureca-a100" examples/contracts/jureca-a100.msc
  compile "$fixture" "$plans/jureca-a100" examples/contracts/qwen-vl-chat.msc
else
  echo "(recorded topologies not found at $fixture; skipped)"
fi

echo
echo "== the example PyTorch job: a fault, the recovery, the same result (examples/python/)"
examples/python/recovery_demo.sh build build/recovery-demo || status=1
echo
echo "== the example PyTorch job lends its loader's CPU while it computes: two borrowers run there (examples/python/)"
examples/python/lending_demo.sh build build/lending-demo || status=1
# Refused contracts are results, not failures of the quickstart; a failed recovery is.
exit $status
