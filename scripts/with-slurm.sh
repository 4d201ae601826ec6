#!/usr/bin/env bash
# Runs a command against a Slurm on loopback (munged, slurmctld, slurmd as node 'localhost' with the
# CPUs `slurmd -C` reports) and stops it afterwards, whatever happens (the command fails, crashes, or
# this script is interrupted):
#   scripts/with-slurm.sh [--nodes N] [--plugstack 'LINE']... -- CMD [ARGS...]
# --nodes N (N > 1) runs N slurmd on this host as nodes n1..nN, each on a port, spool and log of its
# own (Slurm's several-slurmd-per-host set-up, %n in the paths) and in a UTS namespace of its own whose
# host name is the node's, as on N machines; steps then span several nodes.
# Each --plugstack line goes into the cluster's plugstack.conf (e.g. 'required /path/mscale_spank.so
# bindir=/path/bin socket=/path/agent.sock'). The cluster uses proctrack/linuxproc and task/none, so
# Slurm itself makes no cgroups and pins nothing: what a task's cgroup and CPUs are is the plugin's doing.
# The command sees SLURM_CONF (the cluster's slurm.conf) and SLURM_DIR (its directory: logs, spool).
# Needs root (slurmd runs jobs as their users), Debian's slurm-wlm and munge. With MSC_SLURM_KEEP=1
# the directory is kept (and named) for a post mortem. Exit status: the command's; 1 when the
# cluster cannot be started.
set -uo pipefail
plugstack=()
nodes=1
while (($#)) && [[ $1 != -- ]]; do
  case $1 in
    --plugstack) plugstack+=("$2"); shift 2 ;;
    --nodes) nodes=$2; shift 2
      [[ $nodes =~ ^[1-9][0-9]?$ ]] || { echo "with-slurm.sh: --nodes takes 1..99, not '$nodes'" >&2; exit 2; } ;;
    *) echo "with-slurm.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
(($#)) && shift
(($#)) || { echo "usage: with-slurm.sh [--nodes N] [--plugstack LINE]... -- CMD [ARGS...]" >&2; exit 2; }
for tool in munged mungekey slurmctld slurmd srun scontrol; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] || { echo "with-slurm: $tool not installed (scripts/setup.sh)" >&2; exit 1; }
done
export PATH=$PATH:/usr/sbin
dir=$(mktemp -d "${TMPDIR:-/tmp}/msc-slurm.XXXXXX") || exit 1
chmod 0755 "$dir" # slurmd reads its spool as root, jobs of other users read nothing here
rc=1
# Ports of our own, so that two of these (or a real Slurm) on one machine do not meet.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

stop_all() {
  local pidfile pid
  for pidfile in "$dir"/slurmd*.pid "$dir"/slurmctld.pid "$dir"/munged.pid; do
    [[ -s $pidfile ]] || continue
    pid=$(cat "$pidfile")
    kill "$pid" 2>/dev/null || continue
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  # slurmstepd of steps still running outlive slurmd: end them too (they carry our SLURM_CONF).
  for pid in $(pgrep -f "slurmstepd" 2>/dev/null); do
    grep -qs "$dir" "/proc/$pid/environ" "/proc/$pid/cmdline" && kill -9 "$pid" 2>/dev/null
  done
}
# A trap cannot run when this script is SIGKILLed (lit does that on a timeout): a guard in a
# session of its own polls for us and stops the daemons when we are gone without cleaning up.
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
                for f in "$2"/slurmd*.pid "$2"/slurmctld.pid "$2"/munged.pid; do [[ -s $f ]] && kill -9 "$(cat "$f")"; done
                [[ ${3:-0} == 1 ]] || rm -rf "$2"' \
  with-slurm-guard $$ "$dir" "${MSC_SLURM_KEEP:-0}" </dev/null >/dev/null 2>&1 &
guard_pid=$!
cleanup() {
  kill "$guard_pid" 2>/dev/null
  if ((rc != 0)); then
    for log in "$dir"/slurmctld.log "$dir"/slurmd*.log; do
      [[ -e $log ]] && { echo "--- ${log#"$dir"/} (last lines)"; tail -8 "$log"; } >&2
    done
  fi
  stop_all
  if [[ ${MSC_SLURM_KEEP:-0} == 1 ]]; then echo "with-slurm: kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# munge: a key of our own and a socket in our directory (--force: the directory is under /tmp).
mungekey --create --keyfile="$dir/munge.key" >/dev/null 2>&1 || { echo "with-slurm: mungekey failed" >&2; exit 1; }
munged --force --key-file="$dir/munge.key" --socket="$dir/munge.sock" --pid-file="$dir/munged.pid" \
  --log-file="$dir/munged.log" --seed-file="$dir/munged.seed" 2>"$dir/munged.err" ||
  { echo "with-slurm: munged did not start: $(cat "$dir/munged.err")" >&2; exit 1; }

read -r cpus memory < <(slurmd -C | sed -nE 's/.*CPUs=([0-9]+).*RealMemory=([0-9]+).*/\1 \2/p')
[[ -n ${cpus:-} ]] || { echo "with-slurm: slurmd -C reported no CPUs" >&2; exit 1; }
host=$(hostname -s)
if ((nodes == 1)); then
  names=(localhost)
  node_lines="NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$memory State=UNKNOWN"
  suffix=
else
  names=()
  node_lines=
  for i in $(seq "$nodes"); do
    names+=("n$i")
    node_lines+="NodeName=n$i NodeAddr=127.0.0.1 NodeHostname=n$i Port=$(free_port) CPUs=$cpus RealMemory=$memory State=UNKNOWN"$'\n'
  done
  suffix=.%n
fi
cat >"$dir/slurm.conf" <<CONF
ClusterName=msc-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge.sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool$suffix
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd$suffix.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd$suffix.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
PlugStackConfig=$dir/plugstack.conf
KillWait=2
$node_lines
PartitionName=debug Nodes=$(IFS=,; echo "${names[*]}") Default=YES MaxTime=INFINITE State=UP
CONF
printf '%s\n' ${plugstack[@]+"${plugstack[@]}"} >"$dir/plugstack.conf"
mkdir -p "$dir/state"
export SLURM_CONF=$dir/slurm.conf SLURM_DIR=$dir

slurmctld -i -f "$SLURM_CONF" 2>>"$dir/slurmctld.log" || { echo "with-slurm: slurmctld did not start" >&2; exit 1; }
for name in "${names[@]}"; do
  spool=$dir/spool${suffix:+.$name}
  mkdir -p "$spool"
  if ((nodes == 1)); then
    slurmd -N "$name" -f "$SLURM_CONF"
  else
    unshare --uts sh -c 'hostname "$1" && exec slurmd -N "$1" -f "$2"' sh "$name" "$SLURM_CONF"
  fi 2>>"$dir/slurmd${suffix:+.$name}.log" ||
    { echo "with-slurm: slurmd of node '$name' did not start" >&2; exit 1; }
done
# Up when every node is idle (bounded: 30 s).
state=
for _ in $(seq 150); do
  state=$(sinfo -h -o %T 2>/dev/null | sort -u | paste -sd, -)
  [[ $state == idle ]] && break
  sleep 0.2
done
[[ $state == idle ]] || { echo "with-slurm: nodes ${names[*]} are '${state:-unknown}', not all idle, after 30 s" >&2; exit 1; }
"$@"
rc=$?
exit $rc
