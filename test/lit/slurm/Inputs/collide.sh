# Two steps whose contracts want the same core: the second is refused naming the first, which keeps
# running untouched.
set -uo pipefail
d=$1
. "$(dirname "$0")/common.sh"
start_agent "$d"
sed s/NAME/lit_slurm_first/ "$(dirname "$0")/one-cpu.msc" >"$d/first.msc"
sed s/NAME/lit_slurm_second/ "$(dirname "$0")/one-cpu.msc" >"$d/second.msc"
srun -n1 -J lit_slurm_first --mscale-contract="$d/first.msc" sleep 300 >"$d/first.out" 2>&1 &
first=$!
wait_for "the first contract's admission" sh -c "mscale-cli contract list --socket $d/agent.sock | grep -q lit_slurm_first"
srun -n1 --mscale-contract="$d/second.msc" bash -c 'echo SECOND TASK RAN'
echo "second srun exit $?"
echo "held: $(held "$d")"
kill -0 $first && echo "first still running"
scancel -n lit_slurm_first
wait $first
echo "held at the end: $(held "$d")"
