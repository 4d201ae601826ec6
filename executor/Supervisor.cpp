#include "executor/Supervisor.h"

#include "executor/WorkerVariables.h"
#include "executor/gpu/GpuBackend.h"
#include "executor/rdma/RdmaBackend.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <ctime>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace msc::exec {

const char *faultClassName(FaultClass c) {
  switch (c) {
  case FaultClass::GpuLost: return "gpu-lost";
  case FaultClass::NvmeIoError: return "nvme-io-error";
  case FaultClass::RdmaPortDown: return "rdma-port-down";
  case FaultClass::WorkerCrashed: return "worker-crashed";
  case FaultClass::WorkerHung: return "worker-hung";
  case FaultClass::DiskFull: return "disk-full";
  case FaultClass::NodeLost: return "node-lost";
  }
  return "?";
}

std::optional<Fault> classifyWorkerExit(int status) {
  if (WIFSIGNALED(status)) {
    return Fault{FaultClass::WorkerCrashed, signalName(WTERMSIG(status))};
  }
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 1;
  switch (code) {
  case 0: return std::nullopt;
  case kWorkerExitIoError: return Fault{FaultClass::NvmeIoError, "exit 74: a data read failed"};
  case kWorkerExitDiskFull: return Fault{FaultClass::DiskFull, "exit 73: a snapshot write found the disk full"};
  default: return Fault{FaultClass::WorkerCrashed, "exit " + std::to_string(code)};
  }
}

uint64_t Supervisor::monotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1'000'000'000 + uint64_t(ts.tv_nsec);
}

namespace {

constexpr uint64_t kRecoveryTimingLimitNs = 60'000'000'000;
// A worker's beats are sampled this many times per heartbeat interval. The silence of a hung worker
// is measured from the sample that first saw its last beat, so a hang is declared up to one sample
// period after `misses` heartbeats of silence: with one sample per heartbeat that was up to a whole
// heartbeat (200 ms) past the detection budget, with ten it is 20 ms. Reading the page is a load.
constexpr uint64_t kBeatSamplesPerHeartbeat = 10;

// Plan durations have no upper bound: a wrapped sum would put the next wake-up in the past.
uint64_t after(uint64_t now, uint64_t delta) { return delta > UINT64_MAX - now ? UINT64_MAX : now + delta; }

} // namespace

struct Supervisor::SliceWatch {
  size_t entry;               // index in plan.gpu_slices()
  ResizeController controller;
};

uint64_t heartbeatIntervalNs(const plan::FaultTolerance &ft) {
  return ft.heartbeat_ns() ? ft.heartbeat_ns() : 200'000'000;
}

uint32_t heartbeatMisses(const plan::FaultTolerance &ft) {
  return std::max(1u, ft.heartbeat_misses() ? ft.heartbeat_misses() : 3u);
}

uint64_t hangBudgetNs(const plan::FaultTolerance &ft) {
  uint64_t heartbeat = heartbeatIntervalNs(ft);
  uint32_t misses = heartbeatMisses(ft);
  return heartbeat > UINT64_MAX / misses ? UINT64_MAX : uint64_t(misses) * heartbeat;
}

uint64_t beatSampleIntervalNs(const plan::FaultTolerance &ft) {
  return std::max<uint64_t>(heartbeatIntervalNs(ft) / kBeatSamplesPerHeartbeat, 1'000'000);
}

Supervisor::Supervisor(Session &session, Logger &log, SupervisorOptions options)
    : session_(session), log_(log), options_(std::move(options)),
      group_(std::max(1u, options_.nprocPerNode), options_.nprocPerNode > 0),
      standby_(session, log, group_, [this](uint32_t attempt) { return attemptEnvironment(attempt, true); }) {
  const plan::FaultTolerance &ft = session_.plan().fault_tolerance();
  recoverable_ = ft.snapshot_every_steps() || ft.snapshot_interval_ns();
  heartbeatNs_ = heartbeatIntervalNs(ft);
  misses_ = heartbeatMisses(ft);
  hangAfterNs_ = hangBudgetNs(ft);
  beatSampleNs_ = beatSampleIntervalNs(ft);
  resetControllers();
}

std::vector<Session::GpuSample> Supervisor::lastSamples() const {
  std::vector<Session::GpuSample> out;
  for (auto &[entry, sample] : lastSamples_)
    out.push_back(sample);
  return out;
}

void Supervisor::resetControllers() {
  const plan::Plan &p = session_.plan();
  windowNs_ = p.scaling().window_ns() ? p.scaling().window_ns() : 10'000'000'000;
  slices_.clear();
  for (int i = 0; i < p.gpu_slices_size(); ++i)
    slices_.push_back({size_t(i), ResizeController(ResizePolicyConfig::fromPlan(
                                      p.scaling(), std::max(1u, p.gpu_slices(i).slices_per_gpu())))});
}

Supervisor::~Supervisor() { shutdown(); }

void Supervisor::shutdown() {
  standby_.discard("supervision ended");
  group_.reapDiscardedStandbys(); // nobody else waits for them once supervision is over
  if (!handOver_.active)
    return;
  session_.retireGpuSlices(handOver_.retiring);
  handOver_ = {};
}

void Supervisor::record(const std::string &kind, const std::string &text) {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  history_.push_back({int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000, kind, text});
}

std::map<std::string, std::string> Supervisor::attemptEnvironment(uint32_t attempt, bool restart) const {
  std::map<std::string, std::string> env = options_.environment;
  env["MSCALE_ATTEMPT"] = std::to_string(attempt);
  if (restart)
    env["MSCALE_RESUME"] = "1";
  if (!options_.planPath.empty())
    env["MSCALE_PLAN"] = options_.planPath;
  setSnapshotVariables(session_.plan().fault_tolerance(), env);
  return env;
}

RankLauncher Supervisor::launcher() {
  return [this](const std::vector<std::string> &argv, const std::map<std::string, std::string> &rankEnv,
                const std::vector<int> &fds, const std::string &label, DiagnosticEngine &d) {
    return session_.startWorkerProcess(argv, rankEnv, d, fds, label);
  };
}

bool Supervisor::startWorker(DiagnosticEngine &diags, const std::string &restartReason) {
  std::map<std::string, std::string> env = attemptEnvironment(restarts_, !restartReason.empty());
  if (!restartReason.empty())
    env["MSCALE_RESTART_REASON"] = restartReason;
  if (!group_.start(options_.command, env, launcher(), monotonicNs(), diags))
    return false;
  if (group_.ranked())
    log_.info(session_.contract(), "started " + std::to_string(group_.size()) + " rank(s): WORLD_SIZE " +
                                       std::to_string(group_.size()) + ", MASTER_ADDR 127.0.0.1, MASTER_PORT " +
                                       std::to_string(group_.masterPort()));
  return true;
}

std::string Supervisor::stepText(std::optional<unsigned> rank) const {
  uint64_t step = group_.step(rank);
  return step == mscale::worker::kStepRestoring ? std::string("restore") : "step " + std::to_string(step);
}

std::string Supervisor::rankText(std::optional<unsigned> rank) const {
  return rank && group_.size() > 1 ? " (rank " + std::to_string(*rank) + ")" : std::string();
}

void Supervisor::beginRecovery(const Fault &fault, uint64_t now, uint64_t lastGoodNs) {
  bool device = fault.kind == FaultClass::GpuLost || fault.kind == FaultClass::RdmaPortDown ||
                fault.kind == FaultClass::NvmeIoError;
  if (device && options_.deviceFailed)
    options_.deviceFailed();
  recovery_ = Recovery{};
  recovery_.fault = fault;
  RecoveryTimeline &t = recovery_.timeline;
  t.faultClass = faultClassName(fault.kind);
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  t.detectedUnixUs = int64_t(wall.tv_sec) * 1'000'000 + wall.tv_nsec / 1000;
  t.detectedNs = now;
  t.lastGoodNs = lastGoodNs;
  t.heartbeatNs = heartbeatNs_;
  t.misses = misses_;
}

void Supervisor::raise(Fault fault, uint64_t now, uint64_t lastGoodNs) {
  if (pendingFault_ || !group_.running())
    return;
  bool several = group_.size() > 1;
  log_.error(session_.contract(), std::string("fault ") + faultClassName(fault.kind) + " at " + stepText(fault.rank) +
                                      " (" + fault.detail + "); stopping the " + (several ? "ranks" : "worker"));
  beginRecovery(fault, now, lastGoodNs);
  std::optional<unsigned> rank = fault.rank;
  pendingFault_ = std::move(fault);
  // A fault of one rank: that rank is killed, the others get the grace a healthy rank deserves.
  // A fault of the job's resources (a GPU, a port) leaves nothing worth a grace: all go at once.
  if (several && rank)
    group_.stop(rank, after(now, options_.rankStopGraceNs));
  else
    session_.killWorkerTree(group_.liveStandbyPids());
}

void Supervisor::heartbeatTick(uint64_t now) {
  if (!group_.running() || pendingFault_)
    return;
  std::string period = std::to_string(misses_) + " heartbeats " + formatMillis(heartbeatNs_) + " apart";
  if (GpuBackend *gpu = session_.gpuBackend()) {
    for (const HeldSlice &h : session_.heldSlices()) {
      uint64_t key = h.id | (uint64_t(1) << 63);
      uint32_t &missed = qpMisses_[key];
      missed = gpu->heartbeat(h.id) ? 0 : missed + 1;
      if (!missed)
        lastGood_[key] = now;
      if (missed >= misses_) {
        missed = 0;
        raise({FaultClass::GpuLost,
               gpu->name().str() + " slice " + std::to_string(h.id) + " on gpu " + std::to_string(h.gpu) +
                   " of role '" + h.role + "' missed " + period,
               h.gpu},
              now, lastGood_[key]);
        return;
      }
    }
  }
  if (RdmaBackend *rdma = session_.rdmaBackend()) {
    for (const HeldQpGroup &g : session_.heldQpGroups()) {
      uint32_t &missed = qpMisses_[g.id];
      missed = rdma->portActive(g.id) ? 0 : missed + 1;
      if (!missed)
        lastGood_[g.id] = now;
      if (missed >= misses_) {
        missed = 0;
        raise({FaultClass::RdmaPortDown,
               rdma->name().str() + " port '" + g.device + "' port " + std::to_string(g.port) + " of role '" +
                   g.role + "' down for " + period},
              now, lastGood_[g.id]);
        return;
      }
    }
  }
}

void Supervisor::hangTick(uint64_t now) {
  if (!group_.running() || pendingFault_)
    return;
  if (group_.observeBeats(now))
    everBeat_ = true;
  if (std::optional<unsigned> hung = group_.hungRank(now, hangAfterNs())) {
    std::string period = std::to_string(misses_) + " heartbeats " + formatMillis(heartbeatNs_) + " apart";
    uint64_t lastBeatNs = group_.rank(*hung).lastBeatNs;
    Fault fault{FaultClass::WorkerHung, "no worker heartbeat for " + formatMillis(now - lastBeatNs) + ", " + period};
    if (group_.size() > 1)
      fault.detail = "rank " + std::to_string(*hung) + ": " + fault.detail;
    fault.rank = *hung;
    raise(std::move(fault), now, lastBeatNs);
  }
}

void Supervisor::noteProgress(uint64_t now) {
  RecoveryTimeline &t = recovery_.timeline;
  if (recovery_.active && now - t.startedNs > kRecoveryTimingLimitNs) {
    log_.warn(session_.contract(), std::string("recovery from ") + faultClassName(recovery_.fault.kind) +
                                       ": the worker reported no completed step within " +
                                       formatMillis(kRecoveryTimingLimitNs) + "; not timing it further");
    recovery_.active = false;
  }
  std::optional<uint64_t> common = recovery_.active ? group_.commonStep() : std::nullopt;
  if (!common)
    return; // not timing, or not every rank has beaten yet
  if (!t.firstBeatNs)
    t.firstBeatNs = now;
  uint64_t step = *common;
  if (step == mscale::worker::kStepRestoring)
    return; // beating while it restores: progress, but not restored yet
  if (!t.restoredNs) {
    t.restoredNs = now;
    recovery_.restoredStep = step;
    return;
  }
  if (step <= recovery_.restoredStep)
    return;
  t.step = step;
  t.firstStepNs = now;
  std::string text = formatRecoveryLine(t);
  log_.info(session_.contract(), text);
  record("recovered", text);
  recovery_.active = false;
}

void Supervisor::monitorTick(uint64_t now) {
  GpuBackend *gpu = session_.gpuBackend();
  if (!gpu || !group_.running() || pendingFault_ || handOver_.active)
    return;
  std::vector<HeldSlice> held = session_.heldSlices();
  for (SliceWatch &w : slices_) {
    auto h = std::find_if(held.begin(), held.end(), [&](const HeldSlice &x) { return size_t(x.planIndex) == w.entry; });
    if (h == held.end())
      continue;
    std::optional<SliceSample> s = gpu->sample(h->id);
    if (!s)
      continue;
    if (s->tflops <= 0 && group_.hasPages()) // the cuda driver has no per-slice counter: the ranks' own figures
      s->tflops = group_.reportedTflops();
    const plan::GpuSlice &entry = session_.plan().gpu_slices(int(w.entry));
    WindowSample ws{now, s->tflops, s->memoryBytes, s->utilisation, s->temperatureMilliC, std::max(1u, entry.slices())};
    lastSamples_[w.entry] = {entry.role(), gpu->name().str(), *s};
    ResizeDecision d = w.controller.observe(ws);
    char line[256];
    std::snprintf(line, sizeof line,
                  "monitor: role '%s' on gpu %u: %.1f TFLOP/s over %.2f GB = density %.3f (target %.3f), "
                  "utilisation %.0f%%, %.1f C, %u slice(s)",
                  entry.role().c_str(), h->gpu, s->tflops, double(s->memoryBytes) / 1e9, d.density,
                  w.controller.config().targetDensity, s->utilisation * 100, double(s->temperatureMilliC) / 1000,
                  ws.slices);
    log_.info(session_.contract(), line);
    if (d.kind == ResizeKind::Held) {
      log_.info(session_.contract(), "resize held for role '" + entry.role() + "': " + d.reason);
      record("held", "role '" + entry.role() + "': " + d.reason);
    } else if (d.acts()) {
      // A refused resize cools down too: the same request again next window would only flap.
      resize(w.entry, d.toSlices, std::string(resizeKindName(d.kind)) + ": " + d.reason, now);
      w.controller.applied(now);
      return; // one hand-over at a time
    }
  }
}

bool Supervisor::resize(size_t entry, unsigned toSlices, const std::string &why, uint64_t now) {
  plan::Plan next = session_.plan();
  plan::GpuSlice *g = next.mutable_gpu_slices(int(entry));
  unsigned from = std::max(1u, g->slices());
  unsigned perSlice = g->sm_count() / from;
  g->set_slices(toSlices);
  if (perSlice)
    g->set_sm_count(perSlice * toSlices);
  std::string head = "resize of role '" + g->role() + "' " + std::to_string(from) + " -> " + std::to_string(toSlices) +
                     " slice(s)";
  std::string error;
  return handOverTo(next, head, why, now, error);
}

bool Supervisor::resizeTo(const plan::Plan &next, const std::string &why, std::string &error) {
  // What a running contract can change: its GPU slices and the policy that sizes them.
  plan::Plan a = session_.plan(), b = next;
  for (plan::Plan *p : {&a, &b}) {
    p->clear_gpu_slices();
    p->clear_scaling();
    p->clear_provenance();
  }
  if (a.SerializeAsString() != b.SerializeAsString()) {
    std::string diff;
    llvm::raw_string_ostream os(diff);
    plan::diffPlans(a, b, os);
    os.flush();
    error = "the new plan changes more than GPU slices and scaling (" +
            llvm::StringRef(diff).split('\n').first.trim().str() + "); release and resubmit for that";
    record("refused", "resize to profile '" + next.provenance().profile() + "': " + error);
    return false;
  }
  if (next.gpu_slices_size() != session_.plan().gpu_slices_size()) {
    error = "the new plan has " + std::to_string(next.gpu_slices_size()) + " GPU slice entries, the contract holds " +
            std::to_string(session_.plan().gpu_slices_size());
    record("refused", "resize to profile '" + next.provenance().profile() + "': " + error);
    return false;
  }
  uint64_t now = monotonicNs();
  if (!handOverTo(next, "resize to profile '" + next.provenance().profile() + "'", why, now, error))
    return false;
  resetControllers(); // the new profile's policy, starting with its cool-down
  for (SliceWatch &w : slices_)
    w.controller.manual(now);
  if (nextWindow_ != UINT64_MAX)
    nextWindow_ = after(now, windowNs_);
  return true;
}

bool Supervisor::handOverTo(const plan::Plan &next, const std::string &head, const std::string &why, uint64_t now,
                            std::string &error) {
  auto refuse = [&](const std::string &reason) {
    LogDiagnosticPrinter printer(log_);
    printer.setContract(session_.contract());
    DiagnosticEngine d(nullptr, printer);
    d.report(DiagCode::WRN_EXEC_003) << session_.contract() << head + ": " + reason;
    record("refused", head + ": " + reason);
    error = reason;
    return false;
  };
  if (handOver_.active)
    return refuse("a hand-over is still in progress");
  CollectingConsumer checks;
  DiagnosticEngine diags(nullptr, checks);
  std::optional<hal::Topology> node = options_.loadTopology ? options_.loadTopology(diags) : std::nullopt;
  if (!node)
    return refuse("the node's topology cannot be read");
  admission::Held others = options_.admitted ? options_.admitted() : admission::Held{};
  if (!admission::recheckPlan(next, *node, others, diags, options_.recheck))
    return refuse("the re-check failed: " + firstErrorLine(checks));
  std::string diff;
  llvm::raw_string_ostream os(diff);
  plan::diffPlans(session_.plan(), next, os);
  os.flush();
  std::vector<SliceId> retiring;
  std::vector<std::string> changes;
  std::string why2;
  if (!session_.handOverGpuSlices(next, retiring, changes, why2))
    return refuse("hand-over failed: " + why2);
  log_.info(session_.contract(), head + " (" + why + ")");
  std::string summary;
  for (llvm::StringRef line : llvm::split(llvm::StringRef(diff).rtrim(), '\n')) {
    log_.info(session_.contract(), "plan diff: " + line.str());
    if (line.starts_with("~ gpu_slices") || line.starts_with("~ scaling"))
      summary += (summary.empty() ? "" : "; ") + line.drop_front(2).str();
  }
  for (const std::string &c : changes)
    log_.info(session_.contract(), "hand-over: " + c);
  record("resize", head + " (" + why + ")" + (summary.empty() ? "" : " [" + summary + "]"));
  if (options_.planChanged)
    options_.planChanged(session_.plan());
  handOver_ = {};
  handOver_.active = true;
  handOver_.retiring = std::move(retiring);
  handOver_.deadlineNs = after(now, std::max<uint64_t>(after(windowNs_, windowNs_), 2'000'000'000));
  if (group_.hasPages()) {
    auto it = session_.environment().variables.find("MSCALE_GPU_SLICES");
    handOver_.generation =
        group_.publishSlices(it == session_.environment().variables.end() ? std::string() : it->second);
    if (!handOver_.generation)
      log_.warn(session_.contract(), "the new MSCALE_GPU_SLICES does not fit the control page; the worker is not told");
  }
  return true;
}

void Supervisor::handOverTick(uint64_t now) {
  if (!handOver_.active)
    return;
  bool acked = group_.hasPages() && handOver_.generation && group_.acknowledged(handOver_.generation);
  // Workers that never beat never acknowledge either; a restarted one that has not beaten yet will.
  bool silent = !group_.hasPages() || !everBeat_;
  bool workerGone = !group_.running();
  if (!acked && !silent && !workerGone && now < handOver_.deadlineNs)
    return;
  std::string ids;
  for (SliceId id : handOver_.retiring)
    ids += (ids.empty() ? "" : ", ") + std::to_string(id);
  session_.retireGpuSlices(handOver_.retiring);
  std::string how = acked ? "the worker acknowledged generation " + std::to_string(handOver_.generation)
                    : workerGone ? std::string("the worker is gone")
                    : silent     ? std::string("the worker does not use the control page")
                                 : "the worker did not acknowledge generation " +
                                   std::to_string(handOver_.generation) + " in time";
  std::string released = ids.empty() ? std::string() : "; released slice(s) " + ids;
  if (acked || silent || workerGone)
    log_.info(session_.contract(), "hand-over complete: " + how + released);
  else
    log_.warn(session_.contract(), "hand-over forced: " + how + released);
  handOver_ = {};
}

bool Supervisor::moveOffLostGpu(unsigned lost, DiagnosticEngine &diags) {
  CollectingConsumer checks;
  DiagnosticEngine quiet(nullptr, checks);
  std::optional<hal::Topology> node = options_.loadTopology ? options_.loadTopology(quiet) : std::nullopt;
  const plan::Plan &current = session_.plan();
  std::string role;
  int lostNuma = -1;
  for (const plan::GpuSlice &g : current.gpu_slices())
    if (g.gpu_index() == lost) {
      role = g.role();
      lostNuma = g.numa_node();
    }
  if (!node) {
    diags.report(DiagCode::ERR_EXEC_024) << role << lost << "the node's topology cannot be read";
    return false;
  }
  // Same NUMA node first (the role's CPUs and memory stay local), then by index.
  std::vector<hal::GpuRef> candidates;
  for (const hal::GpuRef &g : node->gpus())
    if (g.index != lost)
      candidates.push_back(g);
  std::stable_sort(candidates.begin(), candidates.end(), [&](const hal::GpuRef &a, const hal::GpuRef &b) {
    auto local = [&](const hal::GpuRef &g) { return int(node->numaNodeOfDevice(g.vertex).value_or(-2)) == lostNuma; };
    return local(a) && !local(b);
  });
  std::string tried;
  for (const hal::GpuRef &c : candidates) {
    plan::Plan next = current;
    for (plan::GpuSlice &g : *next.mutable_gpu_slices()) {
      if (g.gpu_index() != lost)
        continue;
      g.set_gpu_index(c.index);
      g.set_pci_address(c.info->pci.str());
      g.clear_uuid(); // the UUID named the lost device
      g.set_model(c.info->model);
      if (c.info->smCount)
        g.set_gpu_sm_count(c.info->smCount);
      auto numa = node->numaNodeOfDevice(c.vertex);
      g.set_numa_node(numa ? int(*numa) : -1);
    }
    checks.diags.clear();
    if (!admission::recheckPlan(next, *node, options_.admitted ? options_.admitted() : admission::Held{}, quiet,
                             options_.recheck)) {
      tried += (tried.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(c.index) + ": " + firstErrorLine(checks);
      continue;
    }
    std::vector<SliceId> retiring;
    std::vector<std::string> changes;
    std::string error;
    if (!session_.handOverGpuSlices(next, retiring, changes, error)) {
      tried += (tried.empty() ? "" : "; ") + std::string("gpu ") + std::to_string(c.index) + ": " + error;
      continue;
    }
    session_.retireGpuSlices(retiring); // the worker is stopped: nothing runs on them
    for (const std::string &line : changes)
      log_.info(session_.contract(), "moved off lost gpu " + std::to_string(lost) + ": " + line);
    if (options_.planChanged)
      options_.planChanged(session_.plan());
    return true;
  }
  diags.report(DiagCode::ERR_EXEC_024) << role << lost
                                       << (candidates.empty() ? std::string("the node has no other GPU") : tried);
  return false;
}

bool Supervisor::recover(const Fault &fault, DiagnosticEngine &diags, int &status) {
  const std::string &contract = session_.contract();
  std::string what = std::string(faultClassName(fault.kind)) + " at " + stepText(fault.rank);
  record("fault", what + " (" + fault.detail + ")");
  if (!recoverable_) {
    log_.error(contract, "fault " + what + " (" + fault.detail +
                             "); the plan has no recovery point (fault_tolerance.recovery_point): not restarting");
    return false;
  }
  if (fault.kind == FaultClass::DiskFull) {
    diags.report(DiagCode::ERR_EXEC_025) << fault.detail;
    record("gave-up", "disk full");
    status = 1;
    return false;
  }
  if (++restarts_ > options_.maxRestarts) {
    diags.report(DiagCode::ERR_EXEC_023) << contract << options_.maxRestarts << "the last fault was " + what;
    record("gave-up", "after " + std::to_string(options_.maxRestarts) + " restarts");
    status = 1;
    return false;
  }
  if (fault.kind == FaultClass::GpuLost && !moveOffLostGpu(fault.gpu, diags)) {
    record("gave-up", "no healthy GPU");
    status = 1;
    return false;
  }
  if (fault.kind == FaultClass::RdmaPortDown) {
    std::vector<std::string> moved;
    std::string error;
    if (!session_.failOverRdma(moved, error)) {
      diags.report(DiagCode::ERR_EXEC_026) << error;
      record("gave-up", "RDMA port down, no failover");
      status = 1;
      return false;
    }
    for (const std::string &m : moved)
      log_.info(contract, "rdma failover: " + m);
  }
  recovery_.timeline.movedNs = monotonicNs();
  std::string who = group_.size() > 1 ? "all " + std::to_string(group_.size()) + " ranks" : std::string("the worker");
  log_.info(contract, "restarting " + who + " after " + what + " from the newest snapshot (restart " +
                          std::to_string(restarts_) + " of at most " + std::to_string(options_.maxRestarts) + ")");
  if (!standby_.takeOver(restarts_, what, monotonicNs()) && !startWorker(diags, what)) {
    status = 1;
    return false;
  }
  recovery_.timeline.startedNs = monotonicNs();
  recovery_.active = true;
  return true;
}

bool Supervisor::start(DiagnosticEngine &diags) {
  const std::string &contract = session_.contract();
  // The memory tier belongs to the executor so that it outlives the worker it protects.
  std::vector<std::string> warnings;
  group_.prepare(recoverable_ && session_.plan().fault_tolerance().in_memory_tier(), warnings);
  for (const std::string &w : warnings)
    log_.warn(contract, w);
  if (options_.resumeAfterNodeLoss)
    log_.info(contract, "resuming after a lost node: the in-memory tier went with it, the worker restores from disk");
  if (!startWorker(diags, options_.resumeAfterNodeLoss ? "node-lost" : ""))
    return false;
  uint64_t now = monotonicNs();
  nextHeartbeat_ = after(now, heartbeatNs_);
  nextBeatSample_ = after(now, beatSampleNs_);
  nextWindow_ = session_.gpuBackend() && !slices_.empty() ? after(now, windowNs_) : UINT64_MAX;
  return true;
}

uint64_t Supervisor::nextWakeNs(uint64_t now) const {
  uint64_t wake = std::min(nextHeartbeat_, nextWindow_);
  if (group_.running() && group_.hasPages() && !pendingFault_)
    wake = std::min(wake, nextBeatSample_);
  // Hand-over and resume are timed to the millisecond, while a worker runs to report them: from the
  // restart on, so that neither the worker's first heartbeat nor a quick restore waits for the next
  // heartbeat tick to be seen.
  bool timing = recovery_.active && group_.running() && group_.hasPages();
  if ((handOver_.active && group_.running()) || timing)
    wake = std::min(wake, after(now, 1'000'000));
  return std::min(wake, group_.stopDeadlineNs()); // ranks that outlive their grace are killed on time
}

bool Supervisor::steadyForStandby() const {
  if (!recoverable_ || !group_.running() || pendingFault_ || cannotResume_ || stopping_ || recovery_.active ||
      handOver_.active || restarts_ >= options_.maxRestarts)
    return false;
  std::optional<uint64_t> step = group_.commonStep();
  return step && *step != mscale::worker::kStepRestoring;
}

void Supervisor::forwardSignal(int sig) {
  standby_.discard(std::string("forwarding ") + strsignal(sig) + " to the worker");
  if (!group_.running())
    return;
  for (unsigned r = 0; r < group_.size(); ++r)
    if (pid_t pid = group_.rank(r).pid; pid > 0)
      log_.info(session_.contract(),
                std::string("forwarding ") + strsignal(sig) + " to worker " + std::to_string(pid) + rankText(r));
  stopping_ = true;
  group_.signalAll(sig);
}

void Supervisor::tick(uint64_t now) {
  if (now >= nextHeartbeat_) {
    heartbeatTick(now);
    nextHeartbeat_ = after(now, heartbeatNs_);
  }
  if (now >= nextBeatSample_) {
    hangTick(now);
    nextBeatSample_ = after(now, beatSampleNs_);
  } else if (!pendingFault_ && group_.observeBeats(now)) {
    everBeat_ = true;
  }
  if (group_.graceExpired(now)) {
    log_.warn(session_.contract(), "ranks still running " + formatMillis(options_.rankStopGraceNs) + " after SIGTERM: SIGKILL");
    session_.killWorkerTree(group_.liveStandbyPids());
  }
  noteProgress(now);
  standby_.tick(now, steadyForStandby(), restarts_ + 1, options_.command, launcher());
  handOverTick(now);
  if (now >= nextWindow_) {
    monitorTick(now);
    nextWindow_ = after(now, windowNs_);
  }
}

std::optional<int> Supervisor::onWorkerExit(int status, DiagnosticEngine &diags) {
  return onWorkerExit(session_.workerPid(), status, diags);
}

std::optional<int> Supervisor::onWorkerExit(pid_t pid, int status, DiagnosticEngine &diags) {
  const std::string &contract = session_.contract();
  uint64_t now = monotonicNs();
  if (standby_.exited(pid, status, now))
    return std::nullopt;
  std::optional<unsigned> rank = group_.exited(pid, status);
  if (!rank)
    return std::nullopt; // not a worker of this contract
  session_.workerExited(pid);
  log_.info(contract, "worker " + std::to_string(pid) + rankText(rank) +
                          (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                             : std::string(" killed by ") + strsignal(WTERMSIG(status))));
  if (handOver_.active)
    handOverTick(now);
  bool completed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // The first rank to fail on its own ends the attempt of the whole job; later ends are the stop's.
  if (!completed && !stopping_ && !pendingFault_ && !cannotResume_) {
    bool several = group_.size() > 1;
    if (WIFEXITED(status) && WEXITSTATUS(status) == kWorkerExitNoSnapshot &&
        (restarts_ > 0 || options_.resumeAfterNodeLoss)) {
      cannotResume_ = *rank;
    } else {
      Fault fault = classifyWorkerExit(status).value_or(Fault{});
      fault.rank = *rank;
      if (several)
        fault.detail = "rank " + std::to_string(*rank) + ": " + fault.detail;
      log_.error(contract, std::string("fault ") + faultClassName(fault.kind) + " at " + stepText(rank) + " (" +
                               fault.detail + ")" + (group_.running() ? "; stopping the other ranks" : ""));
      beginRecovery(fault, now, 0);
      pendingFault_ = std::move(fault);
    }
    if (group_.running())
      group_.stop(std::nullopt, after(now, options_.rankStopGraceNs));
  }
  if (group_.running())
    return std::nullopt;
  return finishAttempt(now, diags);
}

std::optional<int> Supervisor::finishAttempt(uint64_t now, DiagnosticEngine &diags) {
  std::optional<int> status = endAttempt(now, diags);
  if (status)
    standby_.discard("supervision ended");
  return status;
}

std::optional<int> Supervisor::endAttempt(uint64_t now, DiagnosticEngine &diags) {
  const std::string &contract = session_.contract();
  bool completed = group_.allCompleted(); // even if a fault was raised meanwhile
  std::optional<Fault> fault = completed ? std::nullopt : pendingFault_;
  pendingFault_.reset();
  std::optional<unsigned> noSnapshot = std::exchange(cannotResume_, std::nullopt);
  int code = group_.failingStatus(fault ? fault->rank : noSnapshot);
  if (completed || stopping_ || (!fault && !noSnapshot)) {
    recovery_.active = false;
    if (completed) {
      std::string afterRestarts = restarts_ ? " after " + std::to_string(restarts_) + " restart(s)" : std::string();
      log_.info(contract, group_.size() > 1
                              ? "all " + std::to_string(group_.size()) + " ranks completed" + afterRestarts
                              : "worker completed" + afterRestarts);
    }
    return code;
  }
  if (noSnapshot) {
    std::string who = group_.size() > 1 ? "rank " + std::to_string(*noSnapshot) : std::string("it");
    diags.report(DiagCode::ERR_EXEC_022)
        << contract << who + " exited with status 3: no valid snapshot in any tier (see the worker's message)";
    record("gave-up", "no valid snapshot");
    recovery_.active = false;
    return 1;
  }
  recovery_.timeline.stoppedNs = now;
  if (!recover(*fault, diags, code)) {
    recovery_.active = false;
    return code;
  }
  return std::nullopt;
}

int Supervisor::run(const sigset_t &signals, DiagnosticEngine &diags) {
  if (!start(diags))
    return 1;
  for (;;) {
    uint64_t now = monotonicNs();
    uint64_t wake = nextWakeNs(now);
    uint64_t wait = wake > now ? wake - now : 0;
    timespec ts{time_t(wait / 1'000'000'000), long(wait % 1'000'000'000)};
    siginfo_t info;
    int sig = sigtimedwait(&signals, &info, &ts);
    if (sig > 0 && sig != SIGCHLD) {
      forwardSignal(sig);
      continue;
    }
    // Every rank and standby that ended since the last wake-up (one SIGCHLD may stand for several).
    bool reaped = false;
    // Standbys first: a standby that ended with the worker must be known before a restart would
    // hand it the job.
    std::vector<pid_t> children = standby_.pids();
    for (pid_t pid : group_.runningPids())
      children.push_back(pid);
    for (pid_t pid : children) {
      int status = 0;
      if (::waitpid(pid, &status, WNOHANG) != pid)
        continue;
      reaped = true;
      if (std::optional<int> done = onWorkerExit(pid, status, diags))
        return *done;
    }
    if (!reaped)
      tick(monotonicNs());
  }
}

} // namespace msc::exec
