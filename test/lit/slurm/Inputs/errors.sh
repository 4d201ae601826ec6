# The plugin's own refusals, each with its code in srun's output and a nonzero exit code, no task
# run and nothing held: one cluster, plugstack.conf rewritten between the cases (srun and slurmstepd
# read it anew for each step).
set -uo pipefail
d=$1 spank=$2 bindir=$3 stdlib=$4
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_errors/ "$(dirname "$0")/one-cpu.msc" >"$d/ok.msc"
plugstack() { echo "required $spank $*" >"$SLURM_DIR/plugstack.conf"; }
case_() { # case_ LABEL SRUN-ARGS...
  echo "== $1"
  shift
  srun -n1 "$@" bash -c 'echo TASK RAN'
  echo "srun exit $?"
  echo "held: $(held "$d")"
}
good="bindir=$bindir socket=$d/agent.sock stdlib=$stdlib"

plugstack "$good" "sokcet=$d/agent.sock"
case_ "misspelt plugin argument" --mscale-contract="$d/ok.msc"

plugstack "$good"
case_ "empty option" --mscale-contract=
MSCALE_CONTRACT=$'a\nb.msc' case_ "control character in MSCALE_CONTRACT"
case_ "missing file" --mscale-contract="$d/nothere.msc"

plugstack "bindir=$d/nobin socket=$d/agent.sock stdlib=$stdlib"
case_ "no tools in bindir" --mscale-contract="$d/ok.msc"

# A mscale-cli whose attach answers what the plugin must not put into a task's environment.
mkdir -p "$d/fakebin"
ln -sf "$bindir/mscalec" "$bindir/mscale-plan" "$d/fakebin/"
printf '#!/bin/sh\n[ "$2" = attach ] && { echo PATH=/tmp/evil; exit 0; }\nexec %s/mscale-cli "$@"\n' "$bindir" >"$d/fakebin/mscale-cli"
chmod +x "$d/fakebin/mscale-cli"
plugstack "bindir=$d/fakebin socket=$d/agent.sock stdlib=$stdlib"
case_ "an attach answer that is not MSCALE_ variables" --mscale-contract="$d/ok.msc"
