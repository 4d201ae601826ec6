#include "executor/Run.h"

#include "executor/Session.h"
#include "executor/Supervisor.h"
#include "executor/WorkerVariables.h"
#include "hal/Loader.h"
#include "plan/PlanFile.h"
#include "admission/PlanRecheck.h"
#include "executor/claims/NodeClaims.h"

#include <llvm/ADT/ScopeExit.h>

#include <csignal>
#include <filesystem>
#include <unistd.h>

namespace msc::exec {

int runPlan(const RunOptions &o, Logger &log) {
  LogDiagnosticPrinter printer(log);
  DiagnosticEngine diags(nullptr, printer);
  NodeConfig config;
  if (!o.configPath.empty()) {
    std::optional<NodeConfig> c = readNodeConfig(o.configPath, diags);
    if (!c)
      return 1;
    config = *c;
  }
  std::optional<plan::Plan> p = plan::readPlanFile(o.planPath, diags);
  if (!p)
    return 1;
  std::string contract = p->provenance().contract();
  printer.setContract(contract);
  log.info(contract, "plan '" + o.planPath + "' for contract '" + contract + "' (profile '" +
                         p->provenance().profile() + "')");
  std::optional<hal::Topology> live = hal::loadTopology(hal::TopologySource::fromArgument(o.topology), diags);
  if (!live)
    return 1;
  admission::RecheckOptions ro{o.planPath, o.strictFingerprint || config.strictFingerprint, config.hugepageAutoAllocate};
  // Judged against everything the node holds (other runs, the agent's admissions), under the node's
  // lock, and claimed before the lock goes: of two runs racing for one core exactly one gets it. A
  // check alone against a recorded node is about that node, and a sim host backend's node is
  // simulated: neither is judged against this machine's ledger.
  bool liveNode = o.topology == "live";
  bool ledgerUsed = !(o.dryRun && !liveNode) && NodeClaims::used(config.hostBackend == HostBackend::Sim, config.claimsDir);
  std::string error, claimsDir = NodeClaims::dirFor(config.claimsDir);
  std::optional<NodeClaims> ledger;
  std::vector<NodeClaim> claims;
  if (ledgerUsed) {
    ledger = NodeClaims::lock(claimsDir, error);
    if (!ledger) {
      diags.report(DiagCode::ERR_EXEC_032) << claimsDir << error;
      return 1;
    }
    std::vector<std::string> dropped;
    claims = ledger->read(dropped);
    for (const std::string &line : dropped)
      log.warn(contract, line);
  }
  std::vector<const plan::Plan *> held;
  for (const NodeClaim &c : claims)
    held.push_back(&c.plan);
  if (!admission::recheckPlan(*p, *live, admission::heldByPlans(held, /*hugepagesTakenFromFree=*/liveNode), diags, ro)) {
    for (const NodeClaim &c : claims)
      log.error(contract, "held on this node: " + c.describe());
    log.error(contract, "plan refused; nothing was applied");
    return 1;
  }
  if (o.dryRun) {
    log.info(contract, "re-check passed (dry run: nothing applied)");
    return 0;
  }
  if (ledger && !ledger->claim(*p, "mscale-exec run", error)) {
    diags.report(DiagCode::ERR_EXEC_032) << claimsDir << error;
    return 1;
  }
  ledger.reset(); // the claim is made: others see it; the node is not held while this job runs
  auto unclaim = llvm::make_scope_exit([&] {
    if (!ledgerUsed)
      return;
    if (std::optional<NodeClaims> l = NodeClaims::lock(claimsDir, error))
      l->release(contract);
  });
  SessionOptions so;
  so.appliers.cgroups = CgroupLayout::discover();
  so.appliers.nvmeScheduler = config.nvmeScheduler;
  so.appliers.hugepageAutoAllocate = config.hugepageAutoAllocate;
  so.config = config;
  so.inject.failIn = o.injectFailure;
  so.topology = std::make_shared<const hal::Topology>(std::move(*live));
  log.info(contract, describeHostBackend(config.hostBackend, so.appliers.cgroups));
  Session session(*p, contract, o.planPath, log, so);
  if (!session.apply(diags))
    return 1;

  // Block the signals we forward before the worker exists, so none is lost; the child unblocks.
  sigset_t sigs, old;
  sigemptyset(&sigs);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD})
    sigaddset(&sigs, s);
  sigprocmask(SIG_BLOCK, &sigs, &old);
  SupervisorOptions sup;
  sup.command = o.command;
  sup.maxRestarts = o.maxRestarts;
  sup.crashLoopAfter = o.crashLoopAfter;
  sup.resumeAfterNodeLoss = o.resume;
  sup.nprocPerNode = o.nprocPerNode;
  if (!o.cudaCountersDir.empty()) {
    setCudaCounterVariables(o.cudaInterposerPath, o.cudaCountersDir, sup.environment);
    log.info(contract, "workers count their CUDA calls into '" + o.cudaCountersDir + "' (interposer '" +
                           o.cudaInterposerPath + "')");
  }
  // Absolute: the worker may change directory before it reads the plan it runs under.
  std::error_code cwdError;
  sup.planPath = std::filesystem::absolute(o.planPath, cwdError).lexically_normal().string();
  if (cwdError)
    sup.planPath = o.planPath;
  sup.recheck = ro;
  std::string topologyArgument = o.topology;
  sup.loadTopology = [topologyArgument](DiagnosticEngine &d) {
    return hal::loadTopology(hal::TopologySource::fromArgument(topologyArgument), d);
  };
  Supervisor supervisor(session, log, std::move(sup));
  int code = supervisor.run(sigs, diags);
  session.release(diags);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  return code;
}

} // namespace msc::exec
