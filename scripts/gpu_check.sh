#!/usr/bin/env bash
# Exercises the `cuda` GPU backend on a machine with an NVIDIA GPU and driver: builds msc-gpu-check
# and the backend unit tests, then creates two green-context slices on GPU 0 (stream priorities,
# 1 GiB memory pools), heartbeats, samples, resizes and destroys them, and lends half of an owner's
# slice to a borrower and takes it back as the node's lending does (issue 27, timed), printing each
# step.
#
#   scripts/gpu_check.sh [path/to/libcuda.so.1]
#
# Environment: BUILD (build folder, default build-gpu-check), REBUILD=1 to rebuild,
# MSC_ERROR_DOCS (passed to cmake when the error index is mid-edit).
# Exit status: 0 all steps passed, 1 a step failed, 2 no CUDA driver answered.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build-gpu-check}

if [ ! -x "$BUILD/bin/msc-gpu-check" ] || [ "${REBUILD:-0}" = 1 ]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMSC_BUILD_BENCH=OFF \
        ${MSC_ERROR_DOCS:+-DMSC_ERROR_DOCS=$MSC_ERROR_DOCS} >/dev/null || exit 1
  cmake --build "$BUILD" -j"$(nproc)" --target msc-gpu-check msc_exec_backends_tests || exit 1
fi

echo "== GPUs"
nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
echo "== msc-gpu-check"
"$BUILD/bin/msc-gpu-check" "$@"
check=$?
echo "== backend unit tests (the 'no driver' tests skip when a driver answers)"
"$BUILD/unittests/msc_exec_backends_tests" --gtest_brief=1
tests=$?
echo "msc-gpu-check exit $check, unit tests exit $tests"
[ $check -ne 0 ] && exit $check
exit $tests
