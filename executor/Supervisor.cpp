#include "executor/Supervisor.h"

#include "admission/SliceBinding.h"
#include "executor/SessionWorkerHost.h"
#include "executor/WorkerVariables.h"
#include "executor/supervise/DeviceFailover.h"
#include "ir/FieldDefaults.h"
#include "executor/gpu/GpuBackend.h"
#include "executor/rdma/RdmaBackend.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"
#include "support/PciAddress.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace msc::exec {

namespace {

constexpr uint64_t kRecoveryTimingLimitNs = 60'000'000'000;

RestartPolicyConfig restartConfig(const plan::FaultTolerance &ft, const SupervisorOptions &o) {
  RestartPolicyConfig config;
  config.recoverable = ft.snapshot_every_steps() || ft.snapshot_interval_ns();
  config.maxRestarts = o.maxRestarts;
  config.crashLoopAfter = o.crashLoopAfter;
  config.backoffBaseNs = heartbeatIntervalNs(ft);
  config.backoffMaxNs = std::max(o.restartBackoffMaxNs, config.backoffBaseNs);
  return config;
}

} // namespace

struct Supervisor::SliceWatch {
  size_t entry;               // index in plan.gpu_slices()
  ResizeController controller;
};

Supervisor::Supervisor(Session &session, Logger &log, SupervisorOptions options)
    : session_(session), log_(log), options_(std::move(options)), clock_(*options_.clock),
      sessionHost_(options_.host ? nullptr : std::make_unique<SessionWorkerHost>(session, options_.output)),
      host_(options_.host ? *options_.host : *sessionHost_),
      group_(host_, std::max(1u, options_.nprocPerNode), options_.nprocPerNode > 0),
      standby_(session, log, group_, [this](uint32_t attempt) { return attemptEnvironment(attempt, true); }),
      restarts_(restartConfig(session.plan().fault_tolerance(), options_)),
      probes_(heartbeatMisses(session.plan().fault_tolerance())) {
  const plan::FaultTolerance &ft = session_.plan().fault_tolerance();
  heartbeatNs_ = heartbeatIntervalNs(ft);
  misses_ = heartbeatMisses(ft);
  hangAfterNs_ = hangBudgetNs(ft);
  startWithinNs_ = startBudgetNs(ft);
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
  windowNs_ = p.scaling().window_ns() ? p.scaling().window_ns() : uint64_t(ir::defaults::scaling::window);
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
  history_.push_back({clock_.unixMs(), kind, text});
}

std::map<std::string, std::string> Supervisor::attemptEnvironment(uint32_t attempt, bool restart) const {
  std::map<std::string, std::string> env = options_.environment;
  env["MSCALE_ATTEMPT"] = std::to_string(attempt);
  if (restart)
    env["MSCALE_RESUME"] = "1";
  if (!options_.planPath.empty())
    env["MSCALE_PLAN"] = options_.planPath;
  setPlanVariables(session_.plan(), env);
  return env;
}

bool Supervisor::startWorker(DiagnosticEngine &diags, const std::string &restartReason, std::optional<bool> resume) {
  std::map<std::string, std::string> env = attemptEnvironment(attemptNumber(), resume.value_or(!restartReason.empty()));
  if (!restartReason.empty())
    env["MSCALE_RESTART_REASON"] = restartReason;
  if (!group_.start(options_.command, env, diags))
    return false;
  if (stopAfter_)
    group_.requestStopAfter(stopAfter_); // a restart in the middle of a drain stops where its ranks were asked
  attemptStarted(clock_.monotonicNs());
  if (group_.ranked())
    log_.info(session_.contract(), "started " + std::to_string(group_.size()) + " rank(s): WORLD_SIZE " +
                                       std::to_string(group_.size()) + ", MASTER_ADDR 127.0.0.1, MASTER_PORT " +
                                       std::to_string(group_.masterPort()));
  return true;
}

std::optional<uint64_t> Supervisor::stepNs() const {
  if (!attemptFirstStep_ || attemptNewestStep_.first <= *attemptFirstStep_)
    return std::nullopt;
  return (attemptNewestStep_.second - attemptFirstStepNs_) / (attemptNewestStep_.first - *attemptFirstStep_);
}

void Supervisor::requestStopAfter(uint64_t step) {
  if (step == stopAfter_)
    return;
  stopAfter_ = step;
  group_.requestStopAfter(step);
  log_.info(session_.contract(), step ? "planned stop: every rank stops after step " + std::to_string(step) +
                                            " with its snapshot on disk (the job moves to other nodes)"
                                      : "planned stop withdrawn: the job runs on");
}

std::string Supervisor::stepText(std::optional<unsigned> rank) const {
  uint64_t step = group_.step(rank);
  return step == mscale::worker::kStepRestoring ? std::string("restore") : "step " + std::to_string(step);
}

std::string Supervisor::rankText(std::optional<unsigned> rank) const {
  return rank && group_.size() > 1 ? " (rank " + std::to_string(*rank) + ")" : std::string();
}

std::string Supervisor::detectionPeriod() const {
  return std::to_string(misses_) + " heartbeats " + formatMillis(heartbeatNs_) + " apart";
}

void Supervisor::attemptStarted(uint64_t now) {
  liveness_.restart(group_.size(), now);
  attemptStartedNs_ = now;
  attemptFirstStep_.reset();
}

std::optional<uint64_t> Supervisor::attemptStep() const {
  // From the pages, not from what the ticks saw: an attempt that resumes and fails within a few
  // milliseconds may end before a tick samples its first beat. A page's beats start at 0 with each
  // worker, so a step is there only when this attempt reported one.
  std::optional<uint64_t> step = group_.commonStep();
  if (!step || *step == mscale::worker::kStepRestoring)
    return std::nullopt;
  return step;
}

bool Supervisor::attemptSteppedOn() const {
  std::optional<uint64_t> step = attemptStep();
  return attemptFirstStep_ && step && *step > *attemptFirstStep_;
}

void Supervisor::beginRecovery(const Fault &fault, uint64_t now, uint64_t lastGoodNs) {
  if (options_.faulted)
    options_.faulted();
  if (isDeviceFault(fault.kind) && options_.deviceFailed)
    options_.deviceFailed();
  recovery_ = Recovery{};
  recovery_.fault = fault;
  RecoveryTimeline &t = recovery_.timeline;
  t.faultClass = faultClassName(fault.kind);
  t.detectedUnixUs = clock_.unixUs();
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
    host_.killWorkers(group_.liveStandbyPids());
}

void Supervisor::probeDevices(uint64_t now) {
  if (!group_.running() || pendingFault_)
    return;
  GpuBackend *gpu = session_.gpuBackend();
  RdmaBackend *rdma = session_.rdmaBackend();
  std::vector<HeldSlice> slices = gpu ? session_.heldSlices() : std::vector<HeldSlice>{};
  std::vector<HeldQpGroup> groups = rdma ? session_.heldQpGroups() : std::vector<HeldQpGroup>{};
  std::vector<ProbedDevice> devices;
  for (const HeldSlice &h : slices)
    devices.push_back({ProbedKind::GpuSlice, h.id});
  for (const HeldQpGroup &g : groups)
    devices.push_back({ProbedKind::RdmaQpGroup, g.id});
  std::optional<DeviceLoss> loss = probes_.probe(
      devices,
      [&](const ProbedDevice &d) {
        return d.kind == ProbedKind::GpuSlice ? gpu->heartbeat(d.id) : rdma->portActive(d.id);
      },
      now);
  if (!loss)
    return;
  if (loss->device.kind == ProbedKind::GpuSlice) {
    const HeldSlice &h =
        *std::find_if(slices.begin(), slices.end(), [&](const HeldSlice &x) { return x.id == loss->device.id; });
    raise({FaultClass::GpuLost,
           gpu->name().str() + " slice " + std::to_string(h.id) + " on gpu " + std::to_string(h.gpu) + " of role '" +
               h.role + "' missed " + detectionPeriod(),
           h.gpu},
          now, loss->lastGoodNs);
    return;
  }
  const HeldQpGroup &g =
      *std::find_if(groups.begin(), groups.end(), [&](const HeldQpGroup &x) { return x.id == loss->device.id; });
  raise({FaultClass::RdmaPortDown, rdma->name().str() + " port '" + g.device + "' port " + std::to_string(g.port) +
                                       " of role '" + g.role + "' down for " + detectionPeriod()},
        now, loss->lastGoodNs);
}

void Supervisor::sampleBeats(uint64_t now) {
  if (!group_.running() || pendingFault_)
    return;
  if (options_.paused && options_.paused()) {
    liveness_.restart(group_.size(), now);
    return;
  }
  liveness_.observe(group_, now);
  std::optional<Liveness::Hang> hang = liveness_.hung(group_, now, hangAfterNs_, startWithinNs_);
  if (!hang)
    return;
  Fault fault{FaultClass::WorkerHung,
              hang->neverBeat ? "no first worker heartbeat within " + formatMillis(now - hang->lastBeatNs) +
                                    " of its start (start_within " + formatMillis(startWithinNs_) +
                                    "): stuck starting up or at its rendezvous"
                              : "no worker heartbeat for " + formatMillis(now - hang->lastBeatNs) + ", " + detectionPeriod()};
  if (group_.size() > 1)
    fault.detail = "rank " + std::to_string(hang->rank) + ": " + fault.detail;
  fault.rank = hang->rank;
  raise(std::move(fault), now, hang->lastBeatNs);
}

void Supervisor::noteProgress(uint64_t now) {
  RecoveryTimeline &t = recovery_.timeline;
  if (recovery_.active && now - t.startedNs > kRecoveryTimingLimitNs) {
    log_.warn(session_.contract(), std::string("recovery from ") + faultClassName(recovery_.fault.kind) +
                                       ": the worker reported no completed step within " +
                                       formatMillis(kRecoveryTimingLimitNs) + "; not timing it further");
    recovery_.active = false;
  }
  if (std::optional<uint64_t> step = attemptStep()) {
    if (!attemptFirstStep_)
      attemptFirstStep_ = *step, attemptFirstStepNs_ = now, attemptNewestStep_ = {*step, now};
    else if (*step > attemptNewestStep_.first)
      attemptNewestStep_ = {*step, now};
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
  CollectingConsumer checks;
  DiagnosticEngine quiet(nullptr, checks);
  std::optional<hal::Topology> node = loadNode(quiet);
  plan::Plan next = session_.plan();
  plan::GpuSlice *g = next.mutable_gpu_slices(int(entry));
  unsigned from = std::max(1u, g->slices());
  g->set_slices(toSlices);
  std::optional<hal::GpuRef> gpu;
  if (node)
    if (std::optional<PciAddress> pci = parsePciAddress(g->pci_address()))
      gpu = node->gpuByPci(*pci);
  admission::shapeSlice(*g, gpu ? gpu->info : nullptr);
  std::string head = "resize of role '" + g->role() + "' " + std::to_string(from) + " -> " + std::to_string(toSlices) +
                     " slice(s)";
  std::string error;
  return handOverTo(next, node, head, why, now, error);
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
  uint64_t now = clock_.monotonicNs();
  CollectingConsumer checks;
  DiagnosticEngine quiet(nullptr, checks);
  if (!handOverTo(next, loadNode(quiet), "resize to profile '" + next.provenance().profile() + "'", why, now, error))
    return false;
  resetControllers(); // the new profile's policy, starting with its cool-down
  for (SliceWatch &w : slices_)
    w.controller.manual(now);
  if (nextWindow_ != UINT64_MAX)
    nextWindow_ = after(now, windowNs_);
  return true;
}

std::optional<hal::Topology> Supervisor::loadNode(DiagnosticEngine &diags) const {
  return options_.loadTopology ? options_.loadTopology(diags) : std::nullopt;
}

bool Supervisor::handOverTo(const plan::Plan &next, const std::optional<hal::Topology> &node, const std::string &head,
                            const std::string &why, uint64_t now, std::string &error) {
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
  if (!node)
    return refuse("the node's topology cannot be read");
  CollectingConsumer checks;
  DiagnosticEngine diags(nullptr, checks);
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
    handOver_.generation = group_.publishSlices(session_.appliedState().gpuSlices);
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
  bool silent = !group_.hasPages() || !liveness_.everBeat();
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
  std::optional<hal::Topology> node = loadNode(quiet);
  if (!node) {
    diags.report(DiagCode::ERR_EXEC_024) << roleOnGpu(session_.plan(), lost) << lost
                                         << "the node's topology cannot be read";
    return false;
  }
  admission::Held others = options_.admitted ? options_.admitted() : admission::Held{};
  std::vector<std::string> changes;
  GpuFailover moved = exec::moveOffLostGpu(
      session_.plan(), lost, *node, [&](const hal::GpuRef &, const plan::Plan &next) -> std::optional<std::string> {
        checks.diags.clear();
        if (!admission::recheckPlan(next, *node, others, quiet, options_.recheck))
          return firstErrorLine(checks);
        std::vector<SliceId> retiring;
        std::string error;
        changes.clear();
        if (!session_.handOverGpuSlices(next, retiring, changes, error))
          return error;
        session_.retireGpuSlices(retiring); // the worker is stopped: nothing runs on them
        return std::nullopt;
      });
  if (!moved.moved) {
    diags.report(DiagCode::ERR_EXEC_024) << moved.role << lost << moved.why;
    return false;
  }
  for (const std::string &line : changes)
    log_.info(session_.contract(), "moved off lost gpu " + std::to_string(lost) + ": " + line);
  if (options_.planChanged)
    options_.planChanged(session_.plan());
  return true;
}

bool Supervisor::recover(const Fault &fault, DiagnosticEngine &diags, int &status) {
  const std::string &contract = session_.contract();
  std::string what = std::string(faultClassName(fault.kind)) + " at " + stepText(fault.rank);
  record("fault", what + " (" + fault.detail + ")");
  uint64_t now = clock_.monotonicNs();
  RestartDecision decision = restarts_.onFault(fault.kind, attemptSteppedOn(), attemptStartedNs_, now, attemptStep());
  switch (decision.verdict) {
  case RestartVerdict::NoRecoveryPoint:
    log_.error(contract, "fault " + what + " (" + fault.detail +
                             "); the plan has no recovery point (fault_tolerance.recovery_point): not restarting");
    return false;
  case RestartVerdict::DiskFull:
    diags.report(DiagCode::ERR_EXEC_025) << fault.detail;
    record("gave-up", "disk full");
    status = 1;
    return false;
  case RestartVerdict::BudgetSpent:
    diags.report(DiagCode::ERR_EXEC_023) << contract << options_.maxRestarts
                                         << "the last fault was " + what + " (" + fault.detail + ")";
    record("gave-up", "after " + std::to_string(options_.maxRestarts) + " restarts");
    status = 1;
    return false;
  case RestartVerdict::CrashLoop:
    diags.report(DiagCode::ERR_EXEC_029) << contract << decision.loopFailures << decision.loopStep
                                         << "the last was " + what + " (" + fault.detail + ")";
    record("gave-up", "crash loop at step " + std::to_string(decision.loopStep));
    status = 1;
    return false;
  case RestartVerdict::Restart:
    break;
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
  recovery_.timeline.movedNs = clock_.monotonicNs();
  if (decision.delayNs) {
    log_.warn(contract, "back-off: " + std::to_string(restarts_.failuresWithoutProgress()) +
                            " attempts in a row failed without progress; restart " + std::to_string(decision.restart) +
                            " in " + formatMillis(decision.delayNs));
    pendingRestart_ = PendingRestart{what, decision.notBeforeNs};
    return true;
  }
  if (!restart(what, diags)) {
    status = 1;
    return false;
  }
  return true;
}

bool Supervisor::restart(const std::string &what, DiagnosticEngine &diags) {
  uint32_t attempt = attemptNumber();
  std::string who = group_.size() > 1 ? "all " + std::to_string(group_.size()) + " ranks" : std::string("the worker");
  // The budget counts restarts after faults; the attempt number counts new placements too.
  log_.info(session_.contract(), "restarting " + who + " after " + what + " from the newest snapshot (restart " +
                                     std::to_string(restarts_.restarts()) + " of at most " +
                                     std::to_string(options_.maxRestarts) + ")");
  if (standby_.takeOver(attempt, what, clock_.monotonicNs()))
    attemptStarted(clock_.monotonicNs());
  else if (!startWorker(diags, what))
    return false;
  recovery_.timeline.startedNs = clock_.monotonicNs();
  recovery_.active = true;
  return true;
}

void Supervisor::restartAfterBackoff(uint64_t now) {
  if (!pendingRestart_ || now < pendingRestart_->atNs)
    return;
  std::string what = std::move(pendingRestart_->what);
  pendingRestart_.reset();
  LogDiagnosticPrinter printer(log_);
  printer.setContract(session_.contract());
  DiagnosticEngine diags(nullptr, printer);
  if (!restart(what, diags)) {
    recovery_.active = false;
    finished_ = 1;
    standby_.discard("supervision ended");
  }
}

bool Supervisor::start(DiagnosticEngine &diags) {
  const std::string &contract = session_.contract();
  // The memory tier belongs to the executor so that it outlives the worker it protects.
  std::vector<std::string> warnings;
  group_.prepare(restarts_.config().recoverable && session_.plan().fault_tolerance().in_memory_tier(), warnings);
  for (const std::string &w : warnings)
    log_.warn(contract, w);
  if (options_.resumeAfterNodeLoss) {
    log_.info(contract, "resuming after a lost node: the in-memory tier went with it, the worker restores from disk");
    // Timed and logged as every recovery is (recovered from node-lost ... timeline: ...), from this
    // executor's start: when the node was lost is the previous executor's, which nothing here saw.
    uint64_t startNs = clock_.monotonicNs();
    beginRecovery(Fault{FaultClass::NodeLost, "the executor before this one was lost (--resume)"}, startNs, 0);
    recovery_.timeline.stoppedNs = recovery_.timeline.movedNs = startNs;
  }
  if (!startWorker(diags, options_.resumeAfterNodeLoss ? "node-lost" : ""))
    return false;
  uint64_t now = clock_.monotonicNs();
  if (options_.resumeAfterNodeLoss) {
    recovery_.timeline.startedNs = now;
    recovery_.active = true;
  }
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
  if (pendingRestart_)
    wake = std::min(wake, pendingRestart_->atNs);
  return std::min(wake, group_.stopDeadlineNs()); // ranks that outlive their grace are killed on time
}

bool Supervisor::steadyForStandby() const {
  if (!restarts_.budgetLeft() || !group_.running() || pendingFault_ || giveUp_ || stopping_ || reassigning_ ||
      recovery_.active || handOver_.active)
    return false;
  std::optional<uint64_t> step = group_.commonStep();
  return step && *step != mscale::worker::kStepRestoring;
}

void Supervisor::forwardSignal(int sig) {
  standby_.discard(std::string("forwarding ") + signalName(sig) + " to the worker");
  if (pendingRestart_) { // nothing runs to forward it to: the restart is off, and so is supervision
    log_.info(session_.contract(), signalName(sig) + " during the back-off: not restarting");
    pendingRestart_.reset();
    recovery_.active = false;
    finished_ = 128 + sig;
    return;
  }
  if (!group_.running())
    return;
  for (unsigned r = 0; r < group_.size(); ++r)
    if (pid_t pid = group_.rank(r).pid; pid > 0)
      log_.info(session_.contract(),
                std::string("forwarding ") + signalName(sig) + " to worker " + std::to_string(pid) + rankText(r));
  stopping_ = true;
  group_.signalAll(sig);
}

void Supervisor::tick(uint64_t now) {
  restartAfterBackoff(now);
  if (now >= nextHeartbeat_) {
    probeDevices(now);
    nextHeartbeat_ = after(now, heartbeatNs_);
  }
  if (now >= nextBeatSample_) {
    sampleBeats(now);
    nextBeatSample_ = after(now, beatSampleNs_);
  } else if (!pendingFault_ && group_.running()) {
    liveness_.observe(group_, now);
  }
  if (group_.graceExpired(now)) {
    log_.warn(session_.contract(), "ranks still running " + formatMillis(options_.rankStopGraceNs) + " after SIGTERM: SIGKILL");
    host_.killWorkers(group_.liveStandbyPids());
  }
  noteProgress(now);
  standby_.tick(now, steadyForStandby(), attemptNumber() + 1, options_.command);
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
  uint64_t now = clock_.monotonicNs();
  if (standby_.exited(pid, status, now))
    return std::nullopt;
  std::optional<unsigned> rank = group_.exited(pid, status);
  if (!rank)
    return std::nullopt; // not a worker of this contract
  WorkerGroup::SaidFailure said = group_.failureSaid(*rank);
  // A worker that said nothing on its page is named by the last line it printed (when kept).
  if (said.line.empty() && options_.output && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    said.line = options_.output->lastLine(*rank);
  log_.info(contract, "worker " + std::to_string(pid) + rankText(rank) +
                          (WIFEXITED(status) ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                             : " killed by " + signalName(WTERMSIG(status))) +
                          (said.line.empty() ? "" : ": " + said.line));
  if (handOver_.active)
    handOverTick(now);
  bool completed = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  // The first rank to fail on its own ends the attempt of the whole job; later ends are the stop's.
  if (!completed && !stopping_ && !pendingFault_ && !giveUp_ && !reassigning_) {
    bool several = group_.size() > 1;
    using mscale::worker::Failure;
    if (said.kind == Failure::NothingToResume || said.kind == Failure::RetryCannotFix) {
      giveUp_ = GiveUp{*rank, std::move(said)};
    } else {
      Fault fault = classifyWorkerExit(status).value_or(Fault{});
      fault.rank = *rank;
      if (!said.line.empty())
        fault.detail += ": " + said.line;
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
  if (reassigning_)
    return startReassigned(now, diags);
  const std::string &contract = session_.contract();
  bool completed = group_.allCompleted(); // even if a fault was raised meanwhile
  std::optional<Fault> fault = completed ? std::nullopt : pendingFault_;
  pendingFault_.reset();
  std::optional<GiveUp> giveUp = std::exchange(giveUp_, std::nullopt);
  int code = group_.failingStatus(fault ? fault->rank : giveUp ? std::optional<unsigned>(giveUp->rank) : std::nullopt);
  if (completed || stopping_ || (!fault && !giveUp)) {
    recovery_.active = false;
    if (completed) {
      uint32_t n = restarts_.restarts();
      std::string afterRestarts = n ? " after " + std::to_string(n) + " restart(s)" : std::string();
      log_.info(contract, group_.size() > 1
                              ? "all " + std::to_string(group_.size()) + " ranks completed" + afterRestarts
                              : "worker completed" + afterRestarts);
    }
    return code;
  }
  if (giveUp) {
    std::string who = group_.size() > 1 ? "rank " + std::to_string(giveUp->rank) : std::string("it");
    const std::string &line = giveUp->said.line;
    if (giveUp->said.kind == mscale::worker::Failure::NothingToResume) {
      diags.report(DiagCode::ERR_EXEC_022)
          << contract << who + " found no valid snapshot in any tier" + (line.empty() ? " (see the worker's message)" : ": " + line);
      record("gave-up", "no valid snapshot");
    } else {
      // The line is the worker's own; a rank is named where there are several.
      std::string rank = group_.size() > 1 ? "rank " + std::to_string(giveUp->rank) + ": " : std::string();
      diags.report(DiagCode::ERR_EXEC_030) << contract << (line.empty() ? who + " gave no error line" : rank + line);
      record("gave-up", "a restart cannot fix it" + (line.empty() ? std::string() : ": " + line));
    }
    recovery_.active = false;
    return code ? code : 1;
  }
  recovery_.timeline.stoppedNs = now;
  if (!recover(*fault, diags, code)) {
    recovery_.active = false;
    return code;
  }
  return std::nullopt;
}

bool Supervisor::reassign(std::map<std::string, std::string> environment, const std::string &why,
                          std::string &error) {
  if (options_.command.empty()) {
    error = "the contract runs no worker";
    return false;
  }
  if (!restarts_.config().recoverable) {
    error = "the plan has no recovery point (fault_tolerance.recovery_point): the job cannot resume at its new place";
    return false;
  }
  const std::string &contract = session_.contract();
  uint64_t now = clock_.monotonicNs();
  options_.environment = std::move(environment);
  record("reassigned", why);
  // What the old place was doing is over: its fault, its restart, its planned stop, its end.
  pendingFault_.reset();
  giveUp_.reset();
  pendingRestart_.reset();
  recovery_.active = false;
  stopping_ = false;
  finished_.reset();
  stopAfter_ = 0;
  group_.requestStopAfter(0);
  reassigning_ = why;
  if (group_.running()) {
    log_.info(contract, "reassigned (" + why + "): stopping the running attempt to start at the new place");
    group_.stop(std::nullopt, after(now, options_.rankStopGraceNs));
    return true;
  }
  LogDiagnosticPrinter printer(log_);
  printer.setContract(contract);
  DiagnosticEngine diags(nullptr, printer);
  if (std::optional<int> status = startReassigned(now, diags))
    finished_ = status; // it could not start: supervision is over, as after a restart that fails
  return true;
}

std::optional<int> Supervisor::startReassigned(uint64_t now, DiagnosticEngine &diags) {
  std::string why = std::exchange(reassigning_, std::nullopt).value_or(std::string());
  ++reassignments_;
  standby_.discard("the job was placed anew");
  log_.info(session_.contract(), "starting attempt " + std::to_string(attemptNumber()) + " at the new place (" + why +
                                     "), keeping the applied resources and the memory tier");
  if (!startWorker(diags, "reassigned", /*resume=*/false))
    return 1;
  nextHeartbeat_ = after(now, heartbeatNs_);
  nextBeatSample_ = after(now, beatSampleNs_);
  return std::nullopt;
}

int Supervisor::run(const sigset_t &signals, DiagnosticEngine &diags) {
  if (!start(diags))
    return 1;
  for (;;) {
    if (finished_)
      return *finished_;
    uint64_t now = clock_.monotonicNs();
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
      tick(clock_.monotonicNs());
  }
}

} // namespace msc::exec
