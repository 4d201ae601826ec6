#include "tools/mscale-train-sim/Trainer.h"

#include "tools/mscale-train-sim/Collective.h"
#include "tools/mscale-train-sim/Dataset.h"
#include "tools/mscale-train-sim/StateBuffer.h"
#include "worker/WorkerApi.h"
#include "worker/snapshot/Hash.h"
#include "worker/snapshot/Snapshot.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <optional>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

namespace msc::workload {
namespace {

using snapshot::Status;

constexpr int kHidden = 16;
constexpr double kBaseLr = 0.2;
constexpr uint64_t kWarmup = 10;
constexpr double kMinLr = 0.01;
constexpr float kMomentum = 0.9f;
constexpr float kFp16Max = 65504.f;
constexpr uint64_t kGrowthInterval = 10;

// Parameters and optimizer state, flat so that each is one blob.
struct Model {
  // w1[kHidden][kFeatures], b1[kHidden], w2[kHidden], b2
  std::vector<float> params = std::vector<float>(kHidden * kFeatures + kHidden + kHidden + 1);
  std::vector<float> momentum = std::vector<float>(params.size());
  float *w1() { return params.data(); }
  float *b1() { return params.data() + kHidden * kFeatures; }
  float *w2() { return b1() + kHidden; }
  float *b2() { return w2() + kHidden; }
};

double lrAt(uint64_t step, uint64_t total) {
  if (step <= kWarmup)
    return kBaseLr * static_cast<double>(step) / kWarmup;
  double t = static_cast<double>(step - kWarmup) / static_cast<double>(std::max<uint64_t>(total - kWarmup, 1));
  return kMinLr + 0.5 * (kBaseLr - kMinLr) * (1 + std::cos(M_PI * std::min(t, 1.0)));
}

float noise(uint64_t &rng) {
  return (static_cast<float>(splitmix64(rng) >> 40) / static_cast<float>(1 << 24) - 0.5f) * 0.02f;
}

// Forward + backward on `n` samples from `batch` with the loss multiplied by `scale`, each sample's
// share 1/`of` of the mean; returns their share of the (unscaled) mean loss. Sample i's input noise
// is drawn from rngOf(i).
template <class RngOf>
float gradients(Model &m, const Sample *batch, size_t n, size_t of, RngOf rngOf, float scale, std::vector<float> &grad) {
  grad.assign(m.params.size(), 0.f);
  float *gw1 = grad.data(), *gb1 = gw1 + kHidden * kFeatures, *gw2 = gb1 + kHidden, *gb2 = gw2 + kHidden;
  float loss = 0;
  const float inv = 1.f / static_cast<float>(of);
  for (size_t i = 0; i < n; ++i) {
    const Sample &s = batch[i];
    uint64_t &rng = rngOf(i);
    float x[kFeatures], h[kHidden];
    for (int k = 0; k < kFeatures; ++k)
      x[k] = s.x[k] + noise(rng);
    float z = m.b2()[0];
    for (int j = 0; j < kHidden; ++j) {
      float a = m.b1()[j];
      for (int k = 0; k < kFeatures; ++k)
        a += m.w1()[j * kFeatures + k] * x[k];
      h[j] = std::tanh(a);
      z += m.w2()[j] * h[j];
    }
    float p = 1.f / (1.f + std::exp(-z));
    p = std::min(std::max(p, 1e-6f), 1.f - 1e-6f);
    loss += -(s.label * std::log(p) + (1 - s.label) * std::log(1 - p)) * inv;
    float dz = (p - s.label) * inv * scale;
    gb2[0] += dz;
    for (int j = 0; j < kHidden; ++j) {
      gw2[j] += dz * h[j];
      float da = dz * m.w2()[j] * (1 - h[j] * h[j]);
      gb1[j] += da;
      for (int k = 0; k < kFeatures; ++k)
        gw1[j * kFeatures + k] += da * x[k];
    }
  }
  return loss;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

class Log {
public:
  bool open(const std::string &path) {
    if (path.empty())
      return true;
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    return fd_ >= 0;
  }
  ~Log() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  // One write per line: a worker killed at any point leaves whole lines only.
  void line(const std::string &s) {
    if (fd_ < 0)
      return;
    std::string l = s + "\n";
    ssize_t n = ::write(fd_, l.data(), l.size());
    (void)n;
  }

private:
  int fd_ = -1;
};

// Heartbeats from a helper thread while a long operation (a snapshot write or restore of a large
// state) holds the training loop: it is progress, not a hang.
class BeatWhileBusy {
public:
  explicit BeatWhileBusy(uint64_t step) : step_(step) {
    if (mscale::worker::controlPage())
      thread_ = std::thread([this] {
        // Bounded: an operation stuck for longer (a hung file system) must read as a hang.
        auto until = std::chrono::steady_clock::now() + std::chrono::minutes(10);
        std::unique_lock lock(mu_);
        while (!done_ && std::chrono::steady_clock::now() < until) {
          mscale::worker::heartbeat(step_);
          cv_.wait_for(lock, std::chrono::milliseconds(50));
        }
      });
  }
  ~BeatWhileBusy() {
    {
      std::lock_guard lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
      thread_.join();
  }

private:
  uint64_t step_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

// One run of the simulated trainer: its state, and the phases runTrainer takes it through. A phase
// that ends the run returns the exit status; nullopt goes on.
class Run {
public:
  explicit Run(const TrainerOptions &o) : o(o) {}

  // The data, the log, the snapshot tiers asked for, the reader, the model, the optimizer state.
  std::optional<int> setUp() {
    std::vector<std::string> files = datasetFiles(o.dataDir);
    if (files.empty()) {
      std::fprintf(stderr, "mscale-train-sim: error: no shard-*.dat files in '%s'\n", o.dataDir.c_str());
      return kExitUsage;
    }
    if (!log.open(o.logPath)) {
      std::fprintf(stderr, "mscale-train-sim: error: cannot open log '%s': %s\n", o.logPath.c_str(),
                   std::strerror(errno));
      return kExitUsage;
    }
    so.diskDir = o.snapshotDir;
    so.memoryTier = o.memoryTier;
    so.memorySlots = o.memorySlots;
    so.memoryName = o.memoryName;
    so.keep = o.keep;
    so.backgroundDisk = o.backgroundDisk;
    const char *memfdEnv = std::getenv("MSCALE_SNAPSHOT_MEMFD");
    anyTier = !o.snapshotDir.empty() || (o.memoryTier && (!o.memoryName.empty() || (memfdEnv && *memfdEnv)));
    if (o.resume && !anyTier) {
      std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: invalid option value: --resume needs "
                           "--snapshot-dir, --mem-name or MSCALE_SNAPSHOT_MEMFD\n");
      return kExitUsage;
    }
    // Data reads go through io_uring; pread only where the kernel refuses it (said once on stderr).
    if (o.reader == "io_uring") {
      std::string why;
      uring = UringReader::create(8, scanRecords, why);
      if (!uring)
        std::fprintf(stderr, "mscale-train-sim: io_uring unavailable (%s); reading with pread\n", why.c_str());
    }
    if (o.elastic) {
      if (!o.microBatch || o.batch % o.microBatch) {
        std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: invalid option value: --elastic needs a "
                             "--micro-batch that divides --batch %u\n", o.batch);
        return kExitUsage;
      }
      microBatches = o.batch / o.microBatch;
      if (o.world > microBatches || o.rank >= o.world) {
        std::fprintf(stderr, "mscale-train-sim: error[ERR_DRV_005]: invalid option value: rank %u of %u, and a step "
                             "has %u micro-batches (one at least for each rank)\n", o.rank, o.world, microBatches);
        return kExitUsage;
      }
    }
    reader = std::make_unique<FaultInjectingReader>(uring ? static_cast<DataReader &>(*uring) : pread);
    loader = std::make_unique<Loader>(files, o.seed, *reader);
    uint64_t initRng = o.seed * 7919 + 1;
    for (float &p : model.params)
      p = (static_cast<float>(splitmix64(initRng) >> 40) / static_cast<float>(1 << 24) - 0.5f) * 0.5f;
    noiseRng = o.seed * 104729 + 3;
    ls.scale = 4096;
    ls.history.push_back({0, ls.scale});
    extra = std::make_unique<StateBuffer>(o.stateMiB << 20);
    if (!extra->ok()) {
      std::fprintf(stderr, "mscale-train-sim: error: cannot map %llu MiB of optimizer state: %s\n",
                   static_cast<unsigned long long>(o.stateMiB), std::strerror(errno));
      return kExitError;
    }
    for (size_t i = 0; i < extra->size(); i += 4096)
      extra->data()[i] = static_cast<uint8_t>(i >> 12);
    return std::nullopt;
  }

  // Resumes from the newest snapshot that holds this model, or starts at step 1 where that is allowed.
  std::optional<int> restore() {
    // A warm standby has started up and allocated its state: here it waits until the executor hands
    // it the job after a fault. Everything below touches what the running worker still owns.
    mscale::worker::takeOver();
    std::string restartReason = o.restartReason;
    if (const char *why = std::getenv("MSCALE_RESTART_REASON"); restartReason.empty() && why)
      restartReason = why;
    if (anyTier) {
      if (Status s = snapshot::Store::open(so, store); !s) {
        std::fprintf(stderr, "mscale-train-sim: %s\n", s.str().c_str());
        return kExitError;
      }
    }
    if (!restartReason.empty())
      log.line("# restart after fault " + restartReason);
    if (!store) {
      log.line("# start step 1 (snapshots off)");
      return std::nullopt;
    }
    snapshot::Restored r;
    std::optional<BeatWhileBusy> busy(std::in_place, mscale::worker::kStepRestoring);
    Status s = store->restoreLatest(r, destination());
    busy.reset();
    for (const auto &k : r.skipped) {
      log.line("# skipped " + std::string(snapshot::tierName(k.tier)) + " snapshot " + std::to_string(k.step) + ": " +
               k.reason.str());
      say("skipped " + std::string(snapshot::tierName(k.tier)) + " snapshot of step " + std::to_string(k.step) +
          ": " + k.reason.str());
    }
    if (s)
      return resumeFrom(r);
    if (s.code == snapshot::ErrorCode::ERR_SNAP_003 && !o.resume) {
      log.line("# start step 1 (no snapshot)");
      return std::nullopt;
    }
    std::fprintf(stderr, "mscale-train-sim: %s\n", s.str().c_str());
    log.line("# " + s.str());
    mscale::worker::nothingToResume();
    return kExitNoSnapshot;
  }

  // An elastic job's ranks meet (Collective.h) and resume from one step: rank 0 restores its newest
  // snapshot and tells the others, which restore that one from the storage they share.
  std::optional<int> start() {
    if (!o.elastic)
      return restore();
    if (o.rank == 0)
      if (std::optional<int> stop = restore())
        return stop;
    // Waiting for the other ranks is not being hung: beat meanwhile, so that the supervisor's
    // start_within finds the rank that never came, not the ones waiting for it.
    BeatWhileBusy waiting(mscale::worker::kStepRestoring);
    std::string error;
    collective = Collective::join(o.rank, o.world, o.masterAddress, o.masterPort, uint32_t(model.params.size()),
                                  microBatches, o.rendezvousTimeoutMs, error);
    uint64_t resumeStep = step;
    if (!collective || !collective->agreeOnResume(resumeStep, error))
      return lostTheJob(error);
    if (o.rank > 0)
      if (std::optional<int> stop = restoreAt(resumeStep))
        return stop;
    if (!collective->restored(error))
      return lostTheJob(error);
    log.line("# rank " + std::to_string(o.rank) + " of " + std::to_string(o.world) + " from step " +
             std::to_string(step + 1));
    return std::nullopt;
  }

  // One step: a batch, its gradients, the update with loss scaling, the log line; then the
  // snapshot it is due for, the heartbeat and any slice hand-over.
  std::optional<int> trainStep() {
    if (step == o.eioAtStep)
      reader->arm();
    if (int rc = loader->next(o.batch, batch); rc != 0) {
      Status s = Status::make(snapshot::ErrorCode::ERR_SNAP_012,
                              {loader->failedFile, std::to_string(loader->failedOffset), std::strerror(-rc)});
      std::fprintf(stderr, "mscale-train-sim: fault nvme-io-error at step %llu: %s\n",
                   static_cast<unsigned long long>(step), s.str().c_str());
      return kExitIoError;
    }
    float scale = static_cast<float>(ls.scale);
    float loss = 0;
    std::string ids;
    if (o.elastic) {
      if (std::optional<int> lost = reduceStep(scale, loss, ids))
        return lost;
    } else {
      loss = gradients(
          model, batch.data(), batch.size(), batch.size(), [&](size_t) -> uint64_t & { return noiseRng; }, scale, grad);
      for (const Sample &s : batch)
        ids += (ids.empty() ? "" : ",") + std::to_string(s.id);
    }
    float gmax = 0;
    for (float g : grad)
      gmax = std::max(gmax, std::fabs(g));
    double lr = lrAt(step, o.steps);
    bool overflow = !(gmax <= kFp16Max); // the scaled gradients would not fit fp16
    if (overflow) {
      ls.scale *= 0.5;
      ls.growthTracker = 0;
      ls.history.push_back({step, ls.scale});
    } else {
      float inv = 1.f / scale;
      for (size_t i = 0; i < model.params.size(); ++i) {
        model.momentum[i] = kMomentum * model.momentum[i] + grad[i] * inv;
        model.params[i] -= static_cast<float>(lr) * model.momentum[i];
      }
      if (++ls.growthTracker == kGrowthInterval) {
        ls.scale *= 2;
        ls.growthTracker = 0;
        ls.history.push_back({step, ls.scale});
      }
    }
    char tail[160];
    std::snprintf(tail, sizeof tail, " loss %a lr %a scale %g%s", static_cast<double>(loss), lr, scale,
                  overflow ? " overflow" : "");
    log.line("step " + std::to_string(step) + " epoch " + std::to_string(loader->state().epoch) + " ids " + ids +
             tail);
    if (std::string error; collective && !collective->logged(step, error))
      return lostTheJob(error);
    if (step == o.failAtStep) {
      say("failing at step " + std::to_string(step) + " (--fail-at-step)");
      struct rlimit none = {0, 0};
      ::setrlimit(RLIMIT_CORE, &none);
      std::abort();
    }
    bool saved = keepsSnapshots() && o.snapshotEvery && step % o.snapshotEvery == 0;
    if (saved)
      if (std::optional<int> stop = save(lr))
        return stop;
    mscale::worker::heartbeat(step);
    if (mscale::worker::stopAfter(step))
      if (std::optional<int> stop = stopForMove(lr, saved))
        return stop;
    uint64_t generation = 0;
    if (std::string slices; mscale::worker::pendingSliceUpdate(generation, slices)) {
      // A real worker moves its streams to the new green context here; the model runs on the CPU.
      std::fprintf(stderr, "mscale-train-sim: step %llu: GPU slices generation %llu: %s\n",
                   static_cast<unsigned long long>(step), static_cast<unsigned long long>(generation),
                   slices.c_str());
      mscale::worker::acknowledgeSlices(generation);
    }
    if (o.stepDelayMs)
      std::this_thread::sleep_for(std::chrono::milliseconds(o.stepDelayMs));
    return std::nullopt;
  }

  // The last step is done: flushes the snapshot tiers, prints the final line.
  int finish() {
    // A disk-tier write still running in the background (StoreOptions::backgroundDisk) must not fail
    // unseen after the last step: its error decides the exit status like a save's.
    if (store) {
      if (Status s = store->flush(); !s) {
        std::fprintf(stderr, "mscale-train-sim: %s\n", s.str().c_str());
        return s.str().find(std::strerror(ENOSPC)) != std::string::npos ? kExitDiskFull : kExitError;
      }
    }
    uint64_t h = snapshot::hash64(model.params.data(), model.params.size() * sizeof(float));
    h = snapshot::hash64(model.momentum.data(), model.momentum.size() * sizeof(float), h);
    std::string fin = "final step " + std::to_string(o.steps) + " params " + hex(h) + " scale " +
                      std::to_string(ls.scale) + " scale-changes " + std::to_string(ls.history.size());
    log.line(fin);
    std::printf("%s\n", fin.c_str());
    return kExitOk;
  }

  uint64_t step = 0;

private:
  void say(const std::string &s) const {
    if (!o.quiet)
      std::fprintf(stderr, "mscale-train-sim: %s\n", s.c_str());
  }

  // A snapshot restored: the loader's position, the RNG, the optimizer state, the loss scale and
  // the step, each checked to belong to this run.
  std::optional<int> resumeFrom(const snapshot::Restored &r) {
    std::string err;
    if (!loader->restore(r.meta.loader, err)) {
      std::fprintf(stderr, "mscale-train-sim: error: %s\n", err.c_str());
      return kExitError;
    }
    const snapshot::RestoredBlob *rng = r.find("rng.noise");
    const snapshot::RestoredBlob *p = r.find("model.params");
    const snapshot::RestoredBlob *mo = r.find("optimizer.momentum");
    if (!rng || rng->size != sizeof noiseRng || !p || p->data != model.params.data() || !mo ||
        mo->data != model.momentum.data()) {
      std::fprintf(stderr, "mscale-train-sim: error: snapshot of step %llu does not hold this model\n",
                   static_cast<unsigned long long>(r.meta.step));
      return kExitError;
    }
    std::memcpy(&noiseRng, rng->data, sizeof noiseRng);
    if (Status c = r.copyBlob("optimizer.extra", extra->data(), extra->size()); !c && o.stateMiB) {
      std::fprintf(stderr, "mscale-train-sim: %s\n", c.str().c_str());
      return kExitError;
    }
    ls = r.meta.lossScale;
    step = r.meta.step;
    if (r.meta.lr.lastStep != step || r.meta.lr.currentLr != lrAt(step, o.steps)) {
      std::fprintf(stderr, "mscale-train-sim: error: the snapshot's LR schedule does not continue this run's\n");
      return kExitError;
    }
    std::string line = "# resume step " + std::to_string(step + 1) + " from " + snapshot::tierName(r.tier) +
                       " snapshot " + std::to_string(step) + " epoch " + std::to_string(r.meta.loader.epoch) +
                       " file " + r.meta.loader.file.substr(r.meta.loader.file.rfind('/') + 1) + " offset " +
                       std::to_string(r.meta.loader.byteOffset);
    log.line(line);
    say(line.substr(2) + " (" + r.source + ")");
    return std::nullopt;
  }

  // A planned stop (a drain): the job moves to other nodes and resumes there at step + 1, so this
  // step's snapshot must be committed to the disk tier, on the cadence or not (the memory tier stays
  // behind). Exits 0 without the final line: the job is not done.
  std::optional<int> stopForMove(double lr, bool saved) {
    std::string at = std::to_string(step);
    if (o.elastic && o.rank > 0) { // rank 0 commits the step for the job
      log.line("# stopped after step " + at + ": planned move");
      mscale::worker::stoppedAt(step);
      return kExitOk;
    }
    if (!store || !store->hasDiskTier()) {
      // Nothing would carry the state to another node. Run on: the executor sees the step pass.
      say("not stopping after step " + at + " for a planned move: no disk tier (--snapshot-dir)");
      return std::nullopt;
    }
    if (!saved)
      if (std::optional<int> failed = save(lr))
        return failed;
    if (Status s = store->flush(); !s) { // a background disk write (StoreOptions::backgroundDisk)
      std::fprintf(stderr, "mscale-train-sim: %s\n", s.str().c_str());
      return s.str().find(std::strerror(ENOSPC)) != std::string::npos ? kExitDiskFull : kExitError;
    }
    // The line before the page: once the executor reads the stop it may start the next attempt,
    // whose lines must come after this one in a shared log.
    log.line("# stopped after step " + at + ": planned move");
    say("stopped after step " + at + ": planned move (snapshot on the disk tier)");
    mscale::worker::stoppedAt(step);
    return kExitOk;
  }

  std::optional<int> save(double lr) {
    snapshot::SnapshotMeta meta;
    meta.step = step;
    meta.loader = loader->state();
    meta.lr = {"warmup-cosine", kBaseLr, lr, step, {double(kWarmup), double(o.steps), kMinLr}};
    meta.lossScale = ls;
    std::vector<snapshot::BlobView> blobs = {
        {"model.params", snapshot::BlobKind::Model, model.params.data(), model.params.size() * sizeof(float)},
        {"optimizer.momentum", snapshot::BlobKind::Optimizer, model.momentum.data(),
         model.momentum.size() * sizeof(float)},
        {"rng.noise", snapshot::BlobKind::Rng, &noiseRng, sizeof noiseRng}};
    if (o.stateMiB)
      blobs.push_back({"optimizer.extra", snapshot::BlobKind::Optimizer, extra->data(), extra->size()});
    if (step == o.crashInSnapshotAtStep) {
      snapshot::StoreOptions crashing = so;
      crashing.crashAfterBytes = model.params.size() * sizeof(float) / 2;
      std::unique_ptr<snapshot::Store> c;
      if (Status s = snapshot::Store::open(crashing, c); s) {
        say("crashing half-way through the snapshot of step " + std::to_string(step));
        (void)c->save(meta, blobs, static_cast<uint32_t>(snapshot::Tier::Disk));
      }
    }
    BeatWhileBusy busy(step);
    if (Status s = store->save(meta, blobs); !s) {
      std::fprintf(stderr, "mscale-train-sim: %s\n", s.str().c_str());
      return s.str().find(std::strerror(ENOSPC)) != std::string::npos ? kExitDiskFull : kExitError;
    }
    return std::nullopt;
  }

  snapshot::BlobDestination destination() {
    return [this](const std::string &name, snapshot::BlobKind, uint64_t size) -> void * {
      if (name == "model.params" && size == model.params.size() * sizeof(float))
        return model.params.data();
      if (name == "optimizer.momentum" && size == model.momentum.size() * sizeof(float))
        return model.momentum.data();
      if (name == "optimizer.extra" && size == extra->size())
        return extra->data();
      return nullptr;
    };
  }

  // Of an elastic job, rank 0 alone writes snapshots: the others hold the same state.
  bool keepsSnapshots() const { return store && !(o.elastic && o.rank > 0); }

  // A rank > 0 of an elastic job: the step rank 0 resumes from (0: a fresh start), read from the
  // snapshots rank 0 keeps.
  std::optional<int> restoreAt(uint64_t resumeStep) {
    if (!resumeStep) {
      log.line("# start step 1 (rank 0 starts afresh)");
      return std::nullopt;
    }
    snapshot::Restored r;
    Status s = anyTier ? snapshot::Store::open(so, store) : Status::make(snapshot::ErrorCode::ERR_SNAP_003, {o.snapshotDir});
    if (s)
      s = store->restoreAtMost(resumeStep, r, destination());
    if (s && r.meta.step == resumeStep)
      return resumeFrom(r);
    std::string why = s ? "its newest readable snapshot is of step " + std::to_string(r.meta.step) : s.str();
    std::fprintf(stderr, "mscale-train-sim: rank %u: rank 0 resumes from step %llu, which this rank cannot restore: %s\n",
                 o.rank, static_cast<unsigned long long>(resumeStep), why.c_str());
    log.line("# cannot restore step " + std::to_string(resumeStep) + ": " + why);
    return kExitNoSnapshot;
  }

  // This rank's micro-batches of the step (each sample's input noise drawn from its own place in
  // the global batch, so that any rank computes it alike), then the step's sum over every rank's.
  std::optional<int> reduceStep(float scale, float &loss, std::string &ids) {
    auto [first, last] = microBatchesOf(o.rank, o.world, microBatches);
    std::vector<MicroBatchGradient> mine;
    for (uint32_t mb = first; mb < last; ++mb) {
      MicroBatchGradient g;
      g.index = mb;
      const size_t at = size_t(mb) * o.microBatch;
      uint64_t rng = 0;
      auto rngOf = [&](size_t i) -> uint64_t & {
        rng = noiseRng ^ (step * 0x9e3779b97f4a7c15ull) ^ ((at + i + 1) * 0xc2b2ae3d27d4eb4full);
        return rng;
      };
      g.loss = gradients(model, batch.data() + at, o.microBatch, batch.size(), rngOf, scale, g.grad);
      for (size_t i = at; i < at + o.microBatch; ++i)
        ids += (ids.empty() ? "" : ",") + std::to_string(batch[i].id);
      mine.push_back(std::move(g));
    }
    std::string error;
    if (!collective->reduce(step, mine, loss, grad, error))
      return lostTheJob(error);
    return std::nullopt;
  }

  // A peer of an elastic job is gone, or never came: this attempt of the job is over.
  int lostTheJob(const std::string &error) {
    std::fprintf(stderr, "mscale-train-sim: rank %u of %u: %s\n", o.rank, o.world, error.c_str());
    log.line("# rank " + std::to_string(o.rank) + " of " + std::to_string(o.world) + ": " + error);
    return kExitPeerLost;
  }

  const TrainerOptions &o;
  Log log;
  snapshot::StoreOptions so;
  bool anyTier = false;
  std::unique_ptr<snapshot::Store> store;
  PreadReader pread;
  std::unique_ptr<UringReader> uring;
  std::unique_ptr<FaultInjectingReader> reader;
  std::unique_ptr<Loader> loader;
  Model model;
  uint64_t noiseRng = 0;
  snapshot::LossScaleState ls;
  std::unique_ptr<StateBuffer> extra;
  std::unique_ptr<Collective> collective;
  uint32_t microBatches = 0;
  std::vector<Sample> batch;
  std::vector<float> grad;
};

} // namespace

int runTrainer(const TrainerOptions &o) {
  Run run(o);
  if (std::optional<int> stop = run.setUp())
    return *stop;
  if (std::optional<int> stop = run.start())
    return *stop;
  mscale::worker::heartbeat(run.step); // restored (or starting): the executor times the resume from here
  for (++run.step; run.step <= o.steps; ++run.step)
    if (std::optional<int> stop = run.trainStep())
      return *stop;
  return run.finish();
}

} // namespace msc::workload
