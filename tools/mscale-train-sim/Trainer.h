// A small deterministic training job (tiny MLP, SGD with momentum, warmup-cosine LR, dynamic loss
// scaling, a noise RNG) that snapshots through worker/snapshot and resumes exactly: the proof
// workload of issue 7, run by main.cpp beside it.
#pragma once

#include <cstdint>
#include <string>

namespace msc::workload {

struct TrainerOptions {
  std::string dataDir;
  std::string snapshotDir;  // empty: no disk tier
  std::string memoryName;   // shm name of the memory tier (empty: derived from snapshotDir)
  bool memoryTier = true;
  uint32_t memorySlots = 2;  // StoreOptions::memorySlots (1: half the memory, no tier while a save runs)
  uint32_t keep = 3;
  std::string logPath;      // one line per step; appended
  uint64_t steps = 100;
  uint64_t snapshotEvery = 10; // 0: never
  uint32_t batch = 8;
  uint64_t seed = 42;
  bool resume = false;       // a restart: a missing snapshot is an error, not a fresh start
  uint64_t failAtStep = 0;   // abort() after this step (before its snapshot)
  uint64_t eioAtStep = 0;    // the data reads of this step fail with EIO
  uint64_t crashInSnapshotAtStep = 0; // _exit half-way through writing this step's snapshot
  uint32_t stepDelayMs = 0;
  uint64_t stateMiB = 0;     // an extra optimizer-like blob, to make snapshots heavier (benchmarks)
  bool backgroundDisk = false; // StoreOptions::backgroundDisk (benchmarks; a disk-full error then
                               // comes back one snapshot later)
  bool quiet = false;
  std::string restartReason; // why this attempt is a restart (logged with the resume line); else MSCALE_RESTART_REASON
  std::string reader = "io_uring"; // or "pread"
  // --elastic: one rank of a job whose world size may change between attempts (Collective.h).
  // `batch` is the global batch, computed in micro-batches of `microBatch` samples; each rank
  // computes its run of them and the ranks sum every step's in index order. Rank 0 alone keeps the
  // snapshots, in `snapshotDir` on the storage the ranks share; the others restore the step it
  // restored from there. The history is the same at any world size.
  bool elastic = false;
  uint32_t rank = 0, world = 1, microBatch = 0;
  std::string masterAddress = "127.0.0.1";
  uint16_t masterPort = 0;
  uint32_t rendezvousTimeoutMs = 30000;
};

// Exit statuses of the worker; the supervisor maps them to fault classes.
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitNoSnapshot = 3; // ERR_SNAP_003 on a restart, or ERR_SNAP_004
constexpr int kExitDiskFull = 73;  // a snapshot write found the disk full: fault class disk-full
constexpr int kExitIoError = 74;   // EX_IOERR: fault class nvme-io-error
constexpr int kExitPeerLost = 75;  // EX_TEMPFAIL: a rank of an elastic job went away, or never came

int runTrainer(const TrainerOptions &options);

} // namespace msc::workload
