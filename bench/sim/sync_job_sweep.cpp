// ETTR of a synchronous whole-cluster job (sim/SyncJob.h) under Llama 3's interruption rates
// (sim/FaultCauses.def), scaled to 16,384, 98,304 and 131,072 GPUs, over a grid of snapshot
// intervals T (taken in the background) and costs D of an interruption (detection + restart; every
// lost node replaced at once by a spare): the mean and 95% interval of `--seeds` runs of `--days`
// each, as a Markdown table, and the wall time of the whole grid.
//   build/bench/sync_job_sweep [--seeds 30] [--days 54]
#include "sim/Estimate.h"
#include "sim/SyncJob.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace msc::sim;

namespace {
constexpr uint64_t kMinNs = 60'000'000'000ull;

int usage() {
  std::fprintf(stderr, "usage: sync_job_sweep [--seeds N (>= 2)] [--days N (>= 1)]\n");
  return 2;
}
} // namespace

int main(int argc, char **argv) {
  unsigned long seeds = 30, days = 54;
  for (int i = 1; i < argc; ++i) {
    unsigned long *into = !std::strcmp(argv[i], "--seeds") ? &seeds : !std::strcmp(argv[i], "--days") ? &days : nullptr;
    if (!into || i + 1 >= argc)
      return usage();
    char *end = nullptr;
    *into = std::strtoul(argv[++i], &end, 10);
    if (!end || *end)
      return usage();
  }
  if (seeds < 2 || days < 1)
    return usage();
  const unsigned sizes[] = {2048, 12288, 16384}; // nodes of 8 GPUs
  const unsigned snapshotMinutes[] = {5, 15, 30, 60};
  const unsigned costMinutes[] = {1, 3, 10};
  auto started = std::chrono::steady_clock::now();
  uint64_t simulatedDays = 0;
  std::printf("| GPUs | interruptions / day | T (min) | D = 1 min | D = 3 min | D = 10 min |\n");
  std::printf("|---|---|---|---|---|---|\n");
  for (unsigned nodes : sizes) {
    FaultModel model(faultCauses(RateTable::Llama3), {nodes, 8});
    for (unsigned t : snapshotMinutes) {
      std::printf("| %u | %.1f | %u |", nodes * 8, model.perHour() * 24, t);
      for (unsigned d : costMinutes) {
        SyncJobCosts c;
        c.snapshotEveryNs = t * kMinNs;
        c.restartNs = d * kMinNs;
        c.repairNs = 2 * 24 * 60 * kMinNs;
        c.spareNodes = 1'000'000; // a spare for every lost node: D alone
        std::vector<double> ettr;
        for (uint64_t seed = 1; seed <= seeds; ++seed) {
          ettr.push_back(runSyncJob(model, c, days * 24 * 60 * kMinNs, seed).ettr());
          simulatedDays += days;
        }
        Estimate e = estimate(ettr);
        std::printf(" %.3f +- %.3f |", e.mean, e.halfWidth);
      }
      std::printf("\n");
    }
  }
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("\n%lu seeds of %lu days per cell; %llu job-days simulated in %.2f s\n", seeds, days,
              (unsigned long long)simulatedDays, wall);
  return 0;
}
