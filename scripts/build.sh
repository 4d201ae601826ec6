#!/usr/bin/env bash
# build.sh [release|asan|fuzz]: configure and build one flavour into build/, build-asan/, build-fuzz/.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
jobs=${MSC_JOBS:-$(nproc)}
case "$flavour" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DMSC_SANITIZE=ON -DMSC_BUILD_BENCH=OFF) ;;
  fuzz)    dir=build-fuzz; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSC_FUZZ=ON -DMSC_BUILD_BENCH=OFF
                                 -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16) ;;
  *) echo "usage: build.sh [release|asan|fuzz]" >&2; exit 2 ;;
esac
if [[ ! -f $dir/build.ninja ]]; then
  cmake -S . -B "$dir" -G Ninja "${args[@]}" >/dev/null
fi
targets=()
[[ $flavour == fuzz ]] && targets=(fuzzers)
cmake --build "$dir" -j "$jobs" ${targets:+--target "${targets[@]}"}
