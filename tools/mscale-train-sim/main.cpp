// mscale-train-sim: the deterministic training worker of the recovery proof (issue 7). Thin main:
// the workload is the library beside it (msc_workload), the snapshots worker/snapshot.
#include "tools/mscale-train-sim/Dataset.h"
#include "tools/mscale-train-sim/Trainer.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char *kUsage =
    "usage: mscale-train-sim --data DIR [options]\n"
    "       mscale-train-sim --gen-data DIR [--samples N] [--files F]\n"
    "  --steps N              train N steps (default 100)\n"
    "  --batch N              samples per step (default 8)\n"
    "  --seed N               shuffle/init seed (default 42)\n"
    "  --snapshot-dir DIR     disk tier of the snapshots\n"
    "  --snapshot-every N     snapshot after every N-th step (default 10; 0 = never)\n"
    "  --keep N               disk snapshots kept (default 3)\n"
    "  --mem-name NAME        shm name of the memory tier (default: derived from --snapshot-dir;\n"
    "                         MSCALE_SNAPSHOT_MEMFD=FD takes precedence)\n"
    "  --no-memory-tier       disk tier only\n"
    "  --memory-slots N       memory-tier slots (default 2; 1 halves its memory, but a crash while a\n"
    "                         snapshot is written leaves only the disk tier)\n"
    "  --resume               this is a restart: no valid snapshot is an error (exit 3)\n"
    "  --log FILE             append one line per step: step, epoch, sample ids, loss, lr, loss scale\n"
    "  --fail-at-step K       abort() after step K (a crash; before K's snapshot)\n"
    "  --eio-at-step K        data reads of step K fail with EIO (exit 74, fault nvme-io-error)\n"
    "  --crash-in-snapshot-at-step K  die half-way through writing step K's disk snapshot\n"
    "                         (each fault as K@A fires only in attempt A: MSCALE_ATTEMPT, set by mscale-exec)\n"
    "  --step-delay-ms N      sleep after each step (lets a supervisor kill mid-run)\n"
    "  --state-mib N          add an N MiB optimizer blob to every snapshot (benchmarks)\n"
    "  --reader io_uring|pread  how data files are read (default io_uring)\n"
    "  --quiet                no progress on stderr\n"
    "  --elastic              one rank of a job whose world size may change between attempts: RANK and\n"
    "                         WORLD_SIZE say which, the ranks meet at MASTER_ADDR:MASTER_PORT (rank 0\n"
    "                         listens), --batch is the global batch, computed in micro-batches that the\n"
    "                         ranks share out and sum in one order each step (the history is the same\n"
    "                         at any size); rank 0 alone keeps the snapshots, in --snapshot-dir on the\n"
    "                         storage the ranks share (disk tier only), and the others resume the step it\n"
    "                         resumes. A rank lost or missing ends the attempt: exit 75\n"
    "  --micro-batch N        samples of a micro-batch (--elastic; default MSCALE_MICRO_BATCH)\n"
    "  --rendezvous-timeout-ms N  how long the ranks wait for each other (--elastic; default 30000)\n"
    "Under mscale-exec: MSCALE_SNAPSHOT_DIR/_EVERY/_KEEP/_MEMFD (from the plan) stand in for the snapshot\n"
    "options not given; MSCALE_RESUME=1 means --resume; heartbeats go to the control page. A warm standby\n"
    "(MSCALE_STANDBY=1) allocates its state, then waits for the executor to hand it the job. Asked on the\n"
    "page to stop after step S (a drain), it writes S's snapshot to the disk tier, logs '# stopped after\n"
    "step S: planned move' and exits 0 without the final line.\n"
    "With WORLD_SIZE > 1 and RANK=r > 0 the log is <log>.rank<r>, the snapshots <dir>/rank<r> (and\n"
    "--mem-name NAME-rank<r>); each rank resumes from its own newest snapshot.\n";

bool number(const char *s, uint64_t &out) {
  char *end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-')
    return false;
  out = v;
  return true;
}

// "K" or "K@A": a fault at step K, only in attempt A when given (MSCALE_ATTEMPT, default 0).
bool faultStep(const char *s, uint64_t &out) {
  std::string text = s;
  size_t at = text.find('@');
  uint64_t step = 0, attempt = 0;
  if (!number(text.substr(0, at).c_str(), step))
    return false;
  if (at != std::string::npos) {
    if (!number(text.substr(at + 1).c_str(), attempt))
      return false;
    const char *now = std::getenv("MSCALE_ATTEMPT");
    uint64_t current = 0;
    if (now && !number(now, current))
      current = 0;
    if (current != attempt)
      step = 0;
  }
  out = step;
  return true;
}

const char *env(const char *name) {
  const char *v = std::getenv(name);
  return v && *v ? v : nullptr;
}

// An elastic rank (--elastic): who it is and where the ranks meet come from the environment, as a
// placement gives them. Rank r > 0 appends to <log>.rank<r>; the snapshots are the job's, in the
// directory as given, disk tier only (the ranks may be on other nodes).
int runElastic(msc::workload::TrainerOptions &o) {
  auto fail = [](const std::string &what) {
    std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: invalid option value: --elastic %s\n", what.c_str());
    return msc::workload::kExitUsage;
  };
  uint64_t rank = 0, world = 1, port = 0, micro = 0;
  if (env("WORLD_SIZE") && (!number(env("WORLD_SIZE"), world) || world == 0 || world > 65536))
    return fail("needs WORLD_SIZE from 1 to 65536");
  if (env("RANK") && (!number(env("RANK"), rank) || rank >= world))
    return fail("needs RANK below WORLD_SIZE");
  if (world > 1 && (!env("MASTER_PORT") || !number(env("MASTER_PORT"), port) || port == 0 || port > 65535))
    return fail("needs MASTER_PORT (1..65535) where ranks meet");
  if (!o.microBatch && env("MSCALE_MICRO_BATCH") && number(env("MSCALE_MICRO_BATCH"), micro) && micro <= UINT32_MAX)
    o.microBatch = static_cast<uint32_t>(micro);
  o.rank = static_cast<uint32_t>(rank);
  o.world = static_cast<uint32_t>(world);
  o.masterPort = static_cast<uint16_t>(port);
  if (env("MASTER_ADDR"))
    o.masterAddress = env("MASTER_ADDR");
  o.memoryTier = false;
  if (rank > 0 && !o.logPath.empty())
    o.logPath += ".rank" + std::to_string(rank);
  if (o.dataDir.empty()) {
    std::fputs(kUsage, stderr);
    return msc::workload::kExitUsage;
  }
  return msc::workload::runTrainer(o);
}

} // namespace

int main(int argc, char **argv) {
  msc::workload::TrainerOptions o;
  std::string genDir;
  uint64_t samples = 240, files = 6;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const char *&out) {
      if (i + 1 >= argc)
        return false;
      out = argv[++i];
      return true;
    };
    const char *v = nullptr;
    uint64_t n = 0;
    auto num = [&](uint64_t &dst) { return value(v) && number(v, dst); };
    bool ok = true;
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--data") {
      ok = value(v), o.dataDir = v ? v : "";
    } else if (a == "--gen-data") {
      ok = value(v), genDir = v ? v : "";
    } else if (a == "--samples") {
      ok = num(samples);
    } else if (a == "--files") {
      ok = num(files) && files > 0;
    } else if (a == "--steps") {
      ok = num(o.steps);
    } else if (a == "--batch") {
      ok = num(n) && n > 0, o.batch = static_cast<uint32_t>(n);
    } else if (a == "--seed") {
      ok = num(o.seed);
    } else if (a == "--snapshot-dir") {
      ok = value(v), o.snapshotDir = v ? v : "";
    } else if (a == "--snapshot-every") {
      ok = num(o.snapshotEvery);
    } else if (a == "--keep") {
      ok = num(n) && n > 0, o.keep = static_cast<uint32_t>(n);
    } else if (a == "--mem-name") {
      ok = value(v), o.memoryName = v ? v : "";
    } else if (a == "--memory-slots") {
      ok = num(n) && n >= 1 && n <= 64, o.memorySlots = static_cast<uint32_t>(n);
    } else if (a == "--no-memory-tier") {
      o.memoryTier = false;
    } else if (a == "--resume") {
      o.resume = true;
    } else if (a == "--log") {
      ok = value(v), o.logPath = v ? v : "";
    } else if (a == "--fail-at-step") {
      ok = value(v) && faultStep(v, o.failAtStep);
    } else if (a == "--eio-at-step") {
      ok = value(v) && faultStep(v, o.eioAtStep);
    } else if (a == "--crash-in-snapshot-at-step") {
      ok = value(v) && faultStep(v, o.crashInSnapshotAtStep);
    } else if (a == "--step-delay-ms") {
      ok = num(n), o.stepDelayMs = static_cast<uint32_t>(n);
    } else if (a == "--state-mib") {
      ok = num(o.stateMiB);
    } else if (a == "--reader") {
      ok = value(v) && (std::string(v) == "io_uring" || std::string(v) == "pread"), o.reader = v ? v : "";
    } else if (a == "--quiet") {
      o.quiet = true;
    } else if (a == "--elastic") {
      o.elastic = true;
    } else if (a == "--micro-batch") {
      ok = num(n) && n > 0 && n <= UINT32_MAX, o.microBatch = static_cast<uint32_t>(n);
    } else if (a == "--rendezvous-timeout-ms") {
      ok = num(n) && n > 0 && n <= 3'600'000, o.rendezvousTimeoutMs = static_cast<uint32_t>(n);
    } else {
      std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: unknown option '%s'\n%s", a.c_str(), kUsage);
      return msc::workload::kExitUsage;
    }
    if (!ok) {
      std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: invalid option value: '%s' needs a valid value\n",
                   a.c_str());
      return msc::workload::kExitUsage;
    }
  }
  if (!genDir.empty()) {
    std::string err;
    if (!msc::workload::generateDataset(genDir, static_cast<uint32_t>(samples), static_cast<uint32_t>(files), err)) {
      std::fprintf(stderr, "mscale-train-sim: error: %s\n", err.c_str());
      return msc::workload::kExitError;
    }
    return 0;
  }
  // The plan's snapshot settings, as mscale-exec hands them over, fill what the command line left out.
  bool everyGiven = false;
  for (int i = 1; i < argc; ++i)
    everyGiven |= std::string(argv[i]) == "--snapshot-every";
  if (o.snapshotDir.empty() && env("MSCALE_SNAPSHOT_DIR"))
    o.snapshotDir = env("MSCALE_SNAPSHOT_DIR");
  if (!everyGiven && env("MSCALE_SNAPSHOT_EVERY"))
    number(env("MSCALE_SNAPSHOT_EVERY"), o.snapshotEvery);
  if (const char *keep = env("MSCALE_SNAPSHOT_KEEP"); keep && o.keep == 3) {
    uint64_t k = 0;
    if (number(keep, k) && k > 0)
      o.keep = static_cast<uint32_t>(k);
  }
  if (const char *r = env("MSCALE_RESUME"); r && std::string(r) == "1")
    o.resume = true;
  // One command runs every rank of a multi-node job (RANK, WORLD_SIZE from the placement): rank r > 0
  // appends to <log>.rank<r> (as ddp_job.py does) and keeps its snapshots in <dir>/rank<r>, its
  // memory tier named after that, so that ranks sharing a machine or a directory never mix. Rank 0
  // keeps the paths as given. The ranks do not talk: each resumes from its own newest snapshot.
  uint64_t rank = 0, worldSize = 1;
  if (o.elastic)
    return runElastic(o);
  if (env("WORLD_SIZE") && number(env("WORLD_SIZE"), worldSize) && worldSize > 1 && env("RANK") &&
      number(env("RANK"), rank) && rank > 0) {
    std::string suffix = "rank" + std::to_string(rank);
    if (!o.logPath.empty())
      o.logPath += "." + suffix;
    if (!o.snapshotDir.empty())
      o.snapshotDir += "/" + suffix;
    if (!o.memoryName.empty())
      o.memoryName += "-" + suffix;
  }
  if (o.dataDir.empty()) {
    std::fputs(kUsage, stderr);
    return msc::workload::kExitUsage;
  }
  return msc::workload::runTrainer(o);
}
