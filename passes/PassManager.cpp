#include "passes/PassManager.h"

#include "passes/Binding.h"
#include "passes/ContractClaims.h"
#include "passes/GpuCount.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/Support/Format.h>

#include <chrono>

namespace msc::passes {

Pass::~Pass() = default;

PassManager PassManager::defaultPipeline() {
  PassManager pm;
  for (const PassInfo &info : registeredPasses())
    pm.addPass(info.create());
  return pm;
}

std::optional<PassManager> PassManager::fromNames(llvm::StringRef csv, DiagnosticEngine &diags) {
  PassManager pm;
  llvm::SmallVector<llvm::StringRef, 8> names;
  csv.split(names, ',', -1, false);
  std::vector<llvm::StringRef> known;
  for (const PassInfo &info : registeredPasses())
    known.push_back(info.name);
  for (llvm::StringRef name : names) {
    name = name.trim();
    const PassInfo *found = nullptr;
    for (const PassInfo &info : registeredPasses())
      if (info.name == name)
        found = &info;
    if (!found) {
      std::string message = "unknown pass '" + name.str() + "'";
      if (auto fix = closestMatch(name, known))
        message += "; did you mean '" + *fix + "'?";
      diags.report(DiagCode::ERR_DRV_005) << message;
      return std::nullopt;
    }
    pm.addPass(found->create());
  }
  return pm;
}

CheckedContract PassManager::check(const ir::Contract &contract, const hal::Topology *topology,
                                   const admission::Held &held, DiagnosticEngine &diags,
                                   const Instrumentation &instrumentation) {
  CheckedContract out;
  unsigned errorsBefore = diags.errorCount();
  // A role of `gpus = N` becomes N roles first, with or without a node: what they are called and
  // whether they clash with other roles does not depend on the node.
  std::optional<ir::Contract> expanded;
  if (hasGpuCounts(contract))
    expanded = expandGpuCounts(contract, diags);
  const ir::Contract &asked = expanded ? *expanded : contract;
  // Requests that name no device are bound on the node next; everything after sees the bound
  // contract, so a bound GPU, HCA or core is placed, claimed and checked like a named one.
  std::optional<BoundContract> bound;
  if (topology && hasUnboundRequests(asked))
    bound = bindContract(asked, *topology, held, diags);
  if (bound)
    out.bound = bound->contract;
  else if (expanded)
    out.bound = std::move(expanded);
  const ir::Contract &checked = out.bound ? *out.bound : contract;
  out.placement = place(checked, topology);
  if (bound)
    for (RolePlacement &r : out.placement.roles)
      if (auto it = bound->bindings.find(r.role); it != bound->bindings.end()) {
        r.gpuBound = it->second.gpu;
        r.rdmaBound = it->second.rdma;
        r.cpusBound = it->second.cpus;
      }
  out.claims = claimsOf(checked, out.placement, topology);
  PassContext ctx{checked, topology, held, diags, out.placement, out.claims, out.decisions};
  // Accepted: nothing at all refused it, the expansion and the binding included.
  out.accepted = run(ctx, instrumentation) && diags.errorCount() == errorsBefore;
  return out;
}

bool PassManager::run(PassContext &ctx, const Instrumentation &inst) {
  unsigned errorsBefore = ctx.diags.errorCount();
  std::vector<std::pair<llvm::StringRef, double>> timings;
  for (const std::unique_ptr<Pass> &pass : passes_) {
    if (pass->needsTopology() && !ctx.topology)
      continue;
    auto start = std::chrono::steady_clock::now();
    pass->run(ctx);
    auto elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    timings.emplace_back(pass->name(), elapsed);
    bool print = llvm::is_contained(inst.printAfter, "all") || llvm::is_contained(inst.printAfter, pass->name());
    if (print && inst.out) {
      *inst.out << "// -----// placement after '" << pass->name() << "' for contract '" << ctx.contract.name
                << "' //----- //\n";
      ctx.placement.print(*inst.out, ctx.decisions.hugepageReservations);
    }
  }
  if (inst.timePasses && inst.out) {
    double total = 0;
    for (const auto &t : timings)
      total += t.second;
    *inst.out << "===-- pass timing report for contract '" << ctx.contract.name << "' --===\n";
    for (const auto &[name, us] : timings)
      *inst.out << llvm::format("  %10.1f us  %5.1f%%  ", us, total > 0 ? 100.0 * us / total : 0.0) << name
                << "\n";
    *inst.out << llvm::format("  %10.1f us  100.0%%  total\n", total);
  }
  return ctx.diags.errorCount() == errorsBefore;
}

} // namespace msc::passes
