// Assignments in, ledger admissions and releases out, status written back.
#include "cluster/agent/AssignmentWatcher.h"

#include "executor/agent/NodeLedger.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>

namespace msc::cluster {

namespace {

// The diagnostics as the tools print them, one line each ("error[ERR_HAL_CPU_001]: ..."), and the
// first error's code: what a status says and what the log shows.
std::vector<std::string> render(const std::vector<Diagnostic> &diags, std::string &firstCode) {
  std::vector<std::string> lines;
  for (const Diagnostic &d : diags) {
    if (firstCode.empty() && d.severity == Severity::Error)
      firstCode = diagInfo(d.code).name.str();
    std::string text;
    llvm::raw_string_ostream os(text);
    TextDiagnosticPrinter printer(os);
    printer.handle(d, nullptr);
    os.flush();
    llvm::StringRef rest(text);
    while (!rest.empty()) {
      auto [line, tail] = rest.split('\n');
      if (!line.empty())
        lines.push_back(line.str());
      rest = tail;
    }
  }
  return lines;
}

const char *workerName(exec::NodeLedger::WorkerState s) {
  switch (s) {
  case exec::NodeLedger::WorkerState::Running:
    return "running";
  case exec::NodeLedger::WorkerState::Exited:
    return "exited";
  case exec::NodeLedger::WorkerState::Killed:
    return "killed";
  case exec::NodeLedger::WorkerState::None:
    break;
  }
  return "none";
}

} // namespace

AssignmentWatcher::AssignmentWatcher(etcd::EtcdClient &client, std::string node, exec::Logger &log,
                                     std::function<void()> wake)
    : client_(client), node_(std::move(node)), log_(log), wake_(std::move(wake)) {}

etcd::Status AssignmentWatcher::start(exec::NodeLedger &ledger, int64_t statusLease) {
  watch_.reset();
  const std::string prefix = assignmentsPrefix(node_);
  etcd::RangeOptions ro;
  ro.rangeEnd = etcd::prefixEnd(prefix);
  etcd::Result<etcd::RangeResult> read = client_.range(prefix, ro);
  if (!read)
    return read.status();
  // The watch first, from the revision after the read: nothing written between the two is missed.
  etcd::WatchOptions wo;
  wo.rangeEnd = ro.rangeEnd;
  wo.startRevision = read->revision + 1;
  wo.onChange = wake_;
  etcd::Result<std::unique_ptr<etcd::Watch>> watch = client_.watch(prefix, wo);
  if (!watch)
    return watch.status();
  watch_ = std::move(*watch);
  std::vector<etcd::KeyValue> kvs = read->kvs;
  std::sort(kvs.begin(), kvs.end(),
            [](const etcd::KeyValue &a, const etcd::KeyValue &b) { return a.modRevision < b.modRevision; });
  // Admitted here before but gone from etcd meanwhile (deleted while the watch was down): release.
  std::vector<std::string> gone;
  for (const auto &[contract, a] : admitted_)
    if (std::none_of(kvs.begin(), kvs.end(),
                     [&](const etcd::KeyValue &kv) { return contractOfKey(kv.key, prefix) == contract; }))
      gone.push_back(contract);
  for (const std::string &contract : gone)
    onDelete(ledger, assignmentKey(node_, contract));
  for (const etcd::KeyValue &kv : kvs)
    onPut(ledger, kv, statusLease);
  return {};
}

void AssignmentWatcher::forgetAdmitted() { admitted_.clear(); }

etcd::Status AssignmentWatcher::poll(exec::NodeLedger &ledger, int64_t statusLease, std::chrono::milliseconds wait) {
  etcd::Status result;
  if (!watch_)
    return result;
  etcd::Result<std::vector<etcd::WatchEvent>> events = watch_->next(wait);
  if (!events) {
    result = events.status();
    log_.warn("", "assignment watch ended (" + result.str() + "); reading the assignments again");
    if (etcd::Status s = start(ledger, statusLease); !s.ok())
      watch_.reset(); // tried again at the next registration or start()
  } else {
    for (const etcd::WatchEvent &e : *events) {
      if (e.type == etcd::WatchEvent::Type::Put)
        onPut(ledger, e.kv, statusLease);
      else
        onDelete(ledger, e.kv.key);
    }
  }
  // Workers that exited or were killed since: their status says so. Compared with the last status
  // computed from the ledger, not with the last one written: a refused update of an admitted
  // contract (which keeps running as it was) stays visible until the worker itself changes.
  for (auto &[contract, a] : admitted_) {
    answerStop(ledger, contract);
    std::string encoded = encodeStatus(statusOf(ledger, contract));
    if (encoded != a.lastStatus) {
      a.lastStatus = encoded;
      if (etcd::Result<int64_t> put = client_.put(statusKey(node_, contract), encoded, statusLease); !put)
        log_.warn(contract, "cannot write the status: " + put.status().str());
    }
  }
  return result;
}

AssignmentStatus AssignmentWatcher::statusOf(const exec::NodeLedger &ledger, const std::string &contract) const {
  AssignmentStatus s;
  auto a = admitted_.find(contract);
  s.leaderRevision = a == admitted_.end() ? 0 : a->second.leaderRevision;
  const exec::NodeLedger::Contract *c = ledger.find(contract);
  if (!c) {
    s.state = "not-applied";
    return s;
  }
  s.state = c->session->applied() ? "applied" : "not-applied";
  s.worker = workerName(c->workerState);
  s.pid = c->session->workerPid() > 0 ? c->session->workerPid() : c->lastPid;
  s.exitStatus = c->exitStatus;
  if (a != admitted_.end())
    s.stop = a->second.answer;
  if (c->supervisor)
    for (const exec::HistoryEntry &h : c->supervisor->history())
      if (h.kind == "fault")
        ++s.faults, s.lastFault = h.text;
  // Why it ended, for `cluster status`: the last fault (with the worker's own error line) and the
  // supervisor's give-up, as its history says them.
  using WorkerState = exec::NodeLedger::WorkerState;
  if (c->supervisor && (c->workerState == WorkerState::Killed || (c->workerState == WorkerState::Exited && c->exitStatus))) {
    const std::vector<exec::HistoryEntry> &history = c->supervisor->history();
    for (const char *kind : {"fault", "gave-up"})
      for (auto it = history.rbegin(); it != history.rend(); ++it)
        if (it->kind == kind) {
          s.messages.push_back(it->kind + ": " + it->text);
          break;
        }
  }
  return s;
}

void AssignmentWatcher::answerStop(exec::NodeLedger &ledger, const std::string &contract) {
  Admitted &a = admitted_.at(contract);
  const exec::NodeLedger::Contract *c = ledger.find(contract);
  if (!a.stop || !c) {
    if (a.answer && c)
      ledger.requestStopAfter(contract, 0);
    a.answer.reset();
    return;
  }
  const PlannedStop &stop = *a.stop;
  const exec::Supervisor *supervisor = c->supervisor.get();
  if (!a.answer || a.answer->id != stop.id || a.answer->attempt != stop.attempt) {
    // The first answer to this ask: where the job is and its pace. A job without a worker has
    // neither and nothing to stop; one whose ranks have not all reported a step yet answers later.
    StopAnswer answer{stop.id, stop.attempt, 0, 0, 0, 0};
    if (supervisor && c->workerState == exec::NodeLedger::WorkerState::Running) {
      std::optional<uint64_t> step = supervisor->jobStep();
      if (!step)
        return;
      answer.step = *step;
      answer.stepMs = (supervisor->stepNs().value_or(0) + 999'999) / 1'000'000;
    }
    a.answer = answer;
    log_.info(contract, std::string("planned stop asked (") + (stop.cause == PlannedStop::Cause::Grow ? "grow " : "drain ") +
                            std::to_string(stop.id) + ", attempt " +
                            std::to_string(stop.attempt) + "): the job is at step " + std::to_string(answer.step) +
                            ", " + std::to_string(answer.stepMs) + " ms a step");
  }
  if (!stop.afterStep)
    return;
  ledger.requestStopAfter(contract, stop.afterStep);
  if (!supervisor) {
    a.answer->stoppedAt = stop.afterStep; // nothing runs: stopped wherever asked
    return;
  }
  // Stopped once every rank said so on its page and the job's workers are gone; missed when the
  // job is past the step while it still runs (the ask came too late for some rank).
  if (c->workerState != exec::NodeLedger::WorkerState::Running) {
    if (supervisor->stoppedAt() == stop.afterStep)
      a.answer->stoppedAt = stop.afterStep;
  } else if (std::optional<uint64_t> step = supervisor->jobStep(); step && *step > stop.afterStep && !a.answer->missedAt) {
    a.answer->missedAt = *step;
    log_.warn(contract, "planned stop after step " + std::to_string(stop.afterStep) + " missed: the job is at step " +
                            std::to_string(*step));
  }
}

void AssignmentWatcher::writeStatus(const std::string &contract, const AssignmentStatus &s, int64_t statusLease) {
  if (etcd::Result<int64_t> put = client_.put(statusKey(node_, contract), encodeStatus(s), statusLease); !put)
    log_.warn(contract, "cannot write the status: " + put.status().str());
}

void AssignmentWatcher::refuse(const std::string &contract, int64_t leaderRevision, const std::string &code,
                               const std::vector<std::string> &messages, int64_t statusLease) {
  for (const std::string &m : messages)
    log_.error(contract, m);
  AssignmentStatus s;
  s.state = "refused";
  s.code = code;
  s.leaderRevision = leaderRevision;
  s.messages = messages;
  writeStatus(contract, s, statusLease);
}

namespace {
// "rank 2 of 4 -> rank 1 of 3": where the node was in the job and where it is now.
std::string placeChange(const Assignment &previous, const Assignment &next) {
  auto place = [](const Assignment &a) {
    auto get = [&](const char *name) {
      auto it = a.environment.find(name);
      return it == a.environment.end() ? std::string("?") : it->second;
    };
    return "rank " + get("RANK") + " of " + get("WORLD_SIZE");
  };
  return place(previous) + " -> " + place(next);
}
} // namespace

bool AssignmentWatcher::keptAcrossPlacement(exec::NodeLedger &ledger, const std::string &contract,
                                            const Assignment &next, const std::string &value,
                                            const std::string &unstoppedBytes, int64_t statusLease) {
  auto a = admitted_.find(contract);
  if (a == admitted_.end() || !ledger.find(contract))
    return false;
  std::string why;
  std::optional<Assignment> previous = decodeAssignment(a->second.value, why);
  if (!previous || !samePlacedJob(*previous, next))
    return false;
  std::string change = placeChange(*previous, next), error;
  // The old placement's planned stop, if one was asked, ends with it (the supervisor withdraws it).
  Admitted kept{value, next.leaderRevision, {}, unstoppedBytes, next.stop, {}};
  if (!ledger.reassign(contract, next.environment, "the job placed anew: " + change, error)) {
    log_.info(contract, "placed anew (" + change + ") but not kept in place: " + error);
    return false;
  }
  log_.info(contract, "placed anew (" + change + ", leader revision " + std::to_string(next.leaderRevision) +
                          "): the worker restarts at its new place, the resources and the memory tier stay");
  a->second = std::move(kept);
  AssignmentStatus s = statusOf(ledger, contract);
  a->second.lastStatus = encodeStatus(s);
  writeStatus(contract, s, statusLease);
  return true;
}

void AssignmentWatcher::onPut(exec::NodeLedger &ledger, const etcd::KeyValue &kv, int64_t statusLease) {
  const std::string contract = contractOfKey(kv.key, assignmentsPrefix(node_));
  if (contract.empty()) {
    log_.warn("", "ignoring '" + kv.key + "': not an assignment key (" + assignmentsPrefix(node_) + "<contract>)");
    return;
  }
  if (auto a = admitted_.find(contract); a != admitted_.end() && a->second.value == kv.value)
    return; // the same assignment again (a re-read after a lost watch): nothing changes
  if (onContractChange_)
    onContractChange_(contract);
  std::string why;
  std::optional<Assignment> assignment = decodeAssignment(kv.value, why);
  if (!assignment) {
    etcd::Status s = etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_004, {kv.key, why});
    return refuse(contract, 0, etcd::codeName(s.code), {s.str()}, statusLease);
  }
  if (assignment->leaderRevision < highestLeaderRevision_) {
    etcd::Status s = etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_003,
                                        {kv.key, std::to_string(assignment->leaderRevision),
                                         std::to_string(highestLeaderRevision_)});
    return refuse(contract, assignment->leaderRevision, etcd::codeName(s.code), {s.str()}, statusLease);
  }
  highestLeaderRevision_ = assignment->leaderRevision;
  // Only its planned stop (or the leader that wrote it) changed: the contract runs on as it is.
  Assignment unstopped = *assignment;
  unstopped.stop.reset();
  unstopped.leaderRevision = 0;
  const std::string unstoppedBytes = encodeAssignment(unstopped);
  if (auto a = admitted_.find(contract); a != admitted_.end() && a->second.unstopped == unstoppedBytes &&
                                          ledger.find(contract)) {
    a->second.value = kv.value;
    a->second.leaderRevision = assignment->leaderRevision;
    a->second.stop = assignment->stop;
    if (!assignment->stop)
      log_.info(contract, "planned stop withdrawn");
    return;
  }

  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<plan::Plan> plan = plan::decodePlan(assignment->plan, kv.key, diags);
  if (plan && plan->provenance().contract() != contract) {
    etcd::Status s = etcd::Status::make(
        etcd::ErrorCode::ERR_CLUSTER_004,
        {kv.key, "the plan is for contract '" + plan->provenance().contract() + "', the key names '" + contract + "'"});
    return refuse(contract, assignment->leaderRevision, etcd::codeName(s.code), {s.str()}, statusLease);
  }
  if (plan && keptAcrossPlacement(ledger, contract, *assignment, kv.value, unstoppedBytes, statusLease))
    return;
  if (plan) {
    // A changed assignment replaces the old one: released, then admitted anew. So is a contract the
    // ledger holds without a running worker that this watcher did not admit: the agent re-applied
    // it from its state directory after a restart, and the controller's assignment is the authority.
    const exec::NodeLedger::Contract *held = ledger.find(contract);
    if (held && admitted_.count(contract)) {
      log_.info(contract, "assignment changed: releasing the contract before admitting the new plan");
      ledger.release(contract, diags);
    } else if (held && held->workerState != exec::NodeLedger::WorkerState::Running) {
      log_.info(contract, "held without a worker (re-applied from the state directory): releasing it to admit "
                          "the assignment with its worker");
      ledger.release(contract, diags);
    }
    admitted_.erase(contract);
    log_.info(contract, "assignment from leader revision " + std::to_string(assignment->leaderRevision) +
                            ": admitting");
    if (ledger.admit(*plan, kv.key, assignment->command, assignment->environment, diags)) {
      admitted_[contract] = Admitted{kv.value, assignment->leaderRevision, {}, unstoppedBytes, assignment->stop, {}};
      AssignmentStatus s = statusOf(ledger, contract);
      admitted_[contract].lastStatus = encodeStatus(s);
      writeStatus(contract, s, statusLease);
      return;
    }
  }
  std::string code;
  std::vector<std::string> lines = render(sink.diags, code);
  refuse(contract, assignment->leaderRevision, code, lines, statusLease);
}

void AssignmentWatcher::onDelete(exec::NodeLedger &ledger, const std::string &key) {
  const std::string contract = contractOfKey(key, assignmentsPrefix(node_));
  if (contract.empty())
    return;
  if (onContractChange_)
    onContractChange_(contract);
  if (admitted_.erase(contract) && ledger.find(contract)) {
    log_.info(contract, "assignment deleted: releasing");
    CollectingConsumer sink;
    DiagnosticEngine diags(nullptr, sink);
    ledger.release(contract, diags);
  }
  // The status of an assignment that no longer exists would only mislead; etcd errors are logged.
  if (etcd::Result<int64_t> n = client_.remove(statusKey(node_, contract)); !n)
    log_.warn(contract, "cannot remove the status: " + n.status().str());
}

} // namespace msc::cluster
