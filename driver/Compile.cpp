#include "driver/Compile.h"

#include "admission/PlanRecheck.h"
#include "compiler/Frontend.h"
#include "hal/Loader.h"
#include "ir/IR.h"
#include "passes/Lowering.h"
#include "passes/PassManager.h"
#include "plan/PlanFile.h"
#include "support/Version.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>

namespace msc::driver {

namespace {

// What every contract of a compile is checked against: the node, its admitted plans, the passes.
struct Node {
  std::optional<hal::Topology> topology;
  admission::Held held;
  passes::PassManager pipeline;
};

// Fills `node` in place: a topology is not cheap to move (Boost 1.74's adjacency_list copies
// itself on a move).
bool prepareNode(const CompileOptions &options, DiagnosticEngine &diags, Node &node) {
  if (!options.topology.empty()) {
    hal::TopologySource source = hal::TopologySource::fromArgument(options.topology);
    source.useCache = options.useCache;
    node.topology = hal::loadTopology(source, diags);
    if (!node.topology)
      return false;
  }
  std::optional<passes::PassManager> pipeline = options.passes.empty()
                                                    ? passes::PassManager::defaultPipeline()
                                                    : passes::PassManager::fromNames(options.passes, diags);
  if (!pipeline)
    return false;
  node.pipeline = std::move(*pipeline);
  std::vector<plan::Plan> admitted;
  for (const std::string &path : options.admittedPlanFiles) {
    std::optional<plan::Plan> plan = plan::readPlanFile(path, diags);
    if (!plan)
      return false;
    admitted.push_back(std::move(*plan));
  }
  // The compiler cannot know whether the topology was recorded before or after the admitted pools
  // were applied, so it counts them against the free hugepages itself.
  std::vector<const plan::Plan *> plans;
  for (const plan::Plan &p : admitted)
    plans.push_back(&p);
  node.held = admission::heldByPlans(plans, /*hugepagesTakenFromFree=*/false);
  return true;
}

// place -> claims -> passes -> lower, for one contract. Returns the plan when the stage asks for
// one and the contract is accepted.
// `bound` receives the contract with what named no device bound on the node (`gpu = any`, ...), when
// it had any: `--emit=ir` prints that, so the bindings and their reasons are visible.
std::optional<plan::Plan> compileContract(const ir::Contract &contract, Node &node, const CompileOptions &options,
                                          DiagnosticEngine &diags, std::optional<ir::Contract> &bound) {
  const hal::Topology *topo = node.topology ? &*node.topology : nullptr;
  passes::Instrumentation instrumentation{options.printAfter, options.timePasses, options.instrumentation};
  passes::CheckedContract checked = node.pipeline.check(contract, topo, node.held, diags, instrumentation);
  bound = std::move(checked.bound);
  if (!checked.accepted || options.stage != EmitStage::Plan)
    return std::nullopt;
  if (!topo) {
    diags.report(DiagCode::ERR_PLAN_007, contract.nameRange)
        << contract.name << "a plan is resolved against a node; add --topology live|FILE|DIR";
    return std::nullopt;
  }
  return passes::lowerToPlan(contract, checked.placement, checked.decisions, *topo, kVersion);
}

} // namespace

std::string defaultStdlibDir() {
  if (std::optional<std::string> env = llvm::sys::Process::GetEnv("MSCALE_STDLIB"))
    return *env;
  // Installed layout: bin/<tool> and share/megascale/stdlib.
  static int anchor;
  std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
  llvm::SmallString<256> installed(llvm::sys::path::parent_path(llvm::sys::path::parent_path(exe)));
  llvm::sys::path::append(installed, "share", "megascale", "stdlib");
  if (llvm::sys::fs::is_directory(installed))
    return installed.str().str();
  return MSC_STDLIB_DIR;
}

CompileResult compile(const CompileOptions &options, llvm::SourceMgr &sm, DiagnosticEngine &diags) {
  CompileResult result;
  if (options.inputs.empty()) {
    diags.report(DiagCode::ERR_DRV_005) << "no input files (see --help)";
    return result;
  }
  const ContentCache cache = options.useCache ? ContentCache::fromEnvironment() : ContentCache("");
  FrontendOptions frontend;
  frontend.includeDirs = options.includeDirs;
  frontend.stdlibDir = options.stdlibDir.empty() ? defaultStdlibDir() : options.stdlibDir;
  frontend.profileOverride = options.profileOverride;
  frontend.profileOverrideContract = options.onlyContract;
  frontend.defaultClass = options.defaultClass;
  frontend.cache = &cache;
  frontend.memoryFiles = &options.memoryFiles;
  Node node;
  if (!prepareNode(options, diags, node)) {
    result.setupFailed = true;
    return result;
  }

  llvm::raw_string_ostream text(result.text);
  std::vector<plan::Plan> plans;
  for (const std::string &input : options.inputs) {
    if (options.stage == EmitStage::Ast) {
      std::unique_ptr<SourceSet> sources = loadSources(input, frontend, sm, diags);
      if (sources && !sources->files.empty() && !diags.hasErrors())
        ast::dump(*sources->files.front(), sm, text);
      continue;
    }
    std::optional<ir::Module> module = compileContractFile(input, frontend, sm, diags);
    if (!module)
      continue;
    // The frontend's output is verified before anything else sees it; a failure is our bug.
    for (const std::string &problem : ir::verify(*module))
      llvm::errs() << "internal error: IR verifier: " << problem << "\n";
    for (ir::Contract &contract : module->contracts) {
      if (!options.onlyContract.empty() && contract.name != options.onlyContract)
        continue;
      std::optional<ir::Contract> bound;
      if (std::optional<plan::Plan> plan = compileContract(contract, node, options, diags, bound))
        plans.push_back(std::move(*plan));
      if (bound && options.stage == EmitStage::Ir)
        contract = std::move(*bound);
    }
    if (options.stage == EmitStage::Ir)
      ir::print(*module, text);
  }
  if (!diags.hasErrors())
    result.plans = std::move(plans);
  return result;
}

std::optional<ir::Module> loadContracts(const CompileOptions &options, llvm::SourceMgr &sm, DiagnosticEngine &diags) {
  if (options.inputs.size() != 1) {
    diags.report(DiagCode::ERR_DRV_005) << "expected one contract file, got " + std::to_string(options.inputs.size());
    return std::nullopt;
  }
  const ContentCache cache = options.useCache ? ContentCache::fromEnvironment() : ContentCache("");
  FrontendOptions frontend;
  frontend.includeDirs = options.includeDirs;
  frontend.stdlibDir = options.stdlibDir.empty() ? defaultStdlibDir() : options.stdlibDir;
  frontend.profileOverride = options.profileOverride;
  frontend.profileOverrideContract = options.onlyContract;
  frontend.defaultClass = options.defaultClass;
  frontend.cache = &cache;
  frontend.memoryFiles = &options.memoryFiles;
  std::optional<ir::Module> module = compileContractFile(options.inputs.front(), frontend, sm, diags);
  if (module)
    for (const std::string &problem : ir::verify(*module))
      llvm::errs() << "internal error: IR verifier: " << problem << "\n";
  if (diags.hasErrors())
    return std::nullopt;
  return module;
}

ExitStatus exitStatusOf(const CompileResult &result, const DiagnosticEngine &diags) {
  if (result.setupFailed || diags.emitted(DiagCode::ERR_DRV_001) || diags.emitted(DiagCode::ERR_DRV_004) ||
      diags.emitted(DiagCode::ERR_DRV_005))
    return kUsageOrIo;
  return diags.hasErrors() ? kContractErrors : kAccepted;
}

} // namespace msc::driver
