#!/usr/bin/env bash
# build.sh [release|asan|fuzz] [TARGET]...: configure and build one flavour into build/, build-asan/,
# build-fuzz/. With no TARGET it builds everything the flavour tests (scripts/test.sh relies on
# that); with TARGETs, only those and what they need (scripts/quickstart.sh builds just its tools).
# If ccache is installed it is the compiler launcher, with CCACHE_BASEDIR at the repository root so
# that another clone of the repository (a fresh one, as the quickstart CI check makes) hits the
# cache too.
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-release}
(($#)) && shift
jobs=${MSC_JOBS:-$(nproc)}
case "$flavour" in
  release) dir=build;      args=(-DCMAKE_BUILD_TYPE=Release) ;;
  asan)    dir=build-asan; args=(-DCMAKE_BUILD_TYPE=Debug -DMSC_SANITIZE=ON -DMSC_BUILD_BENCH=OFF) ;;
  fuzz)    dir=build-fuzz; args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSC_FUZZ=ON -DMSC_BUILD_BENCH=OFF
                                 -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16) ;;
  *) echo "usage: build.sh [release|asan|fuzz] [TARGET]..." >&2; exit 2 ;;
esac
if command -v ccache >/dev/null; then
  export CCACHE_BASEDIR=$PWD
  # Debug info names the build directory; without this a clone elsewhere (the CI check, the
  # quickstart's fresh clone) misses the cache for every -g object (the asan flavour).
  export CCACHE_NOHASHDIR=true
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [[ ! -f $dir/build.ninja ]]; then
  cmake -S . -B "$dir" -G Ninja "${args[@]}" >/dev/null
fi
targets=("$@")
[[ $flavour == fuzz && ${#targets[@]} -eq 0 ]] && targets=(fuzzers)
cmake --build "$dir" -j "$jobs" ${targets[@]+--target "${targets[@]}"}
