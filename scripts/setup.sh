#!/usr/bin/env bash
# Installs the Debian packages the project builds and tests with; does nothing if all are present.
set -euo pipefail
packages=(
  libantlr4-runtime-dev antlr4 uuid-dev llvm-16-dev llvm-16-tools libzstd-dev clang-16
  libclang-rt-16-dev libbpf-dev libelf-dev bpftool liburing-dev libhwloc-dev libudev-dev hwloc libboost-graph-dev
  libprotobuf-dev protobuf-compiler libibverbs-dev libgtest-dev libbenchmark-dev
  libboost-dev cmake ninja-build pkg-config python3 ccache
  # XXH3 (runtime-dispatched to AVX2/AVX-512) and XXH64: the snapshot checksums (worker/snapshot/Hash.h).
  libxxhash-dev
  # The baseline reader_bench measures the io_uring reader against.
  fio
  # The mscale Python package and its tests run on Debian's interpreter (/usr/bin/python3).
  python3-torch python3-numpy python3-pil
  # The cluster (cluster/): a real etcd 3.4 for its members and etcdctl, gRPC C++ and its protoc
  # plugin for the client, and etcd's own .proto files (cluster/etcd generates from them).
  etcd-server etcd-client libgrpc++-dev protobuf-compiler-grpc golang-etcd-server-dev
  # Visualising (docs/visualising.md): a headless browser proves the flame graph SVG renders and
  # zooms; promtool (from prometheus) checks the agent's metric names.
  chromium prometheus
  # The plots of the cluster in virtual time (bench/sim/plot_goodput.py: PNG and SVG).
  python3-matplotlib
  # The executor logs to the journal under systemd (sd_journal_send).
  libsystemd-dev
  # The SPANK plugin (slurm/) builds against slurm/spank.h; its tests run a one-node Slurm on
  # loopback (scripts/with-slurm.sh: slurmctld, slurmd, munged).
  slurm-wlm libslurm-dev munge
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
