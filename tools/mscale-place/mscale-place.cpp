// mscale-place: places a contract across nodes, as the cluster controller does, without etcd: the
// nodes are topology files, what each already holds is its admitted plans. A thin main over
// cluster/placement.
#include "cluster/placement/Placer.h"
#include "driver/Compile.h"
#include "hal/Loader.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"
#include "support/Version.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>

using namespace llvm;

namespace {

cl::OptionCategory category("mscale-place options");
cl::opt<std::string> input(cl::Positional, cl::desc("<contract.msc>"), cl::cat(category));
cl::list<std::string> nodeArgs("node", cl::desc("Register a node: its name and topology (hwloc XML, YAML, sysfs dir)"),
                               cl::value_desc("NAME=TOPOLOGY"), cl::cat(category));
cl::list<std::string> admittedArgs("admitted", cl::desc("A plan already admitted on a registered node"),
                                   cl::value_desc("NAME=PLAN"), cl::cat(category));
cl::opt<std::string> outputDir("o", cl::desc("Write DIR/<node>.msp for each chosen node"), cl::value_desc("dir"),
                               cl::cat(category));
cl::list<std::string> includeDirs("I", cl::desc("Add a directory to the import search path"), cl::Prefix,
                                  cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> stdlibDir("stdlib", cl::desc("Standard library directory (default: the installed one)"),
                               cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> contractName("contract", cl::desc("Place this contract of the file (default: its only one)"),
                                  cl::value_desc("name"), cl::cat(category));
cl::opt<msc::DiagnosticsFormat> diagFormat(
    "diagnostics-format", cl::desc("How diagnostics are printed (on stderr)"), cl::init(msc::DiagnosticsFormat::Text),
    cl::values(clEnumValN(msc::DiagnosticsFormat::Text, "text", "clang-style text"),
               clEnumValN(msc::DiagnosticsFormat::Json, "json", "a JSON array"),
               clEnumValN(msc::DiagnosticsFormat::Sarif, "sarif", "SARIF 2.1.0")),
    cl::cat(category));

// "NAME=VALUE" -> (NAME, VALUE); a usage error otherwise.
std::optional<std::pair<std::string, std::string>> splitArg(StringRef option, StringRef arg,
                                                            msc::DiagnosticEngine &diags) {
  auto [name, value] = arg.split('=');
  if (name.empty() || value.empty()) {
    diags.report(msc::DiagCode::ERR_DRV_005) << ("--" + option + "=" + arg + " (expected NAME=FILE)").str();
    return std::nullopt;
  }
  return std::make_pair(name.str(), value.str());
}

void printPlacement(const msc::cluster::PlacementResult &result, StringRef contract, raw_ostream &os) {
  os << "contract '" << contract << "' placed on " << result.nodes.size() << " of the registered nodes ("
     << (result.shape.ioHeavy ? "IO-heavy: " + result.shape.ioReason : std::string("compute-heavy")) << ")\n";
  for (const msc::cluster::NodePlacement &p : result.nodes) {
    os << "node " << p.node->name;
    if (p.crossedDomains)
      os << " (crosses PCIe domains: one domain per role did not fit, placed with the contract's own policy)";
    os << "\n";
    // Per role: the devices as the plan has them, then what binding chose and why.
    for (const msc::cluster::RoleSummary &r : p.roles) {
      os << "  " << r.role << ":";
      for (const auto &slice : p.plan.gpu_slices())
        if (slice.role() == r.role)
          os << " GPU " << slice.gpu_index() << " " << slice.pci_address();
      for (const auto &rdma : p.plan.rdma())
        if (rdma.role() == r.role)
          os << " " << rdma.device() << ":" << rdma.port();
      if (!r.gpu.empty())
        os << " [gpu: " << r.gpu << "]";
      if (!r.rdma.empty())
        os << " [rdma: " << r.rdma << "]";
      if (!r.cpus.empty())
        os << " [cpus: " << r.cpus << "]";
      os << "\n";
    }
  }
}

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-place " << msc::kVersion << "\n"; });
  std::string usageErrors;
  raw_string_ostream usageStream(usageErrors);
  bool parsed = cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni placement across nodes\n", &usageStream);
  std::unique_ptr<msc::DiagnosticConsumer> printer =
      msc::makeDiagnosticPrinter(diagFormat, errs(), "mscale-place", msc::kVersion);
  SourceMgr sm;
  msc::DiagnosticEngine diags(&sm, *printer);
  auto usage = [&](const std::string &message) {
    diags.report(msc::DiagCode::ERR_DRV_005) << message;
    diags.finish();
    return msc::driver::kUsageOrIo;
  };
  if (!parsed)
    return usage(usageErrors.empty() ? "invalid command line (see --help)" : StringRef(usageErrors).trim().str());
  if (input.empty())
    return usage("no input file (see --help)");
  if (nodeArgs.empty())
    return usage("no node registered: give --node NAME=TOPOLOGY at least once");

  // Nodes and what they hold are set up before the contract is read: a bad node is a usage error.
  msc::cluster::NodeRegistry registry;
  bool setup = true;
  for (const std::string &arg : nodeArgs) {
    auto kv = splitArg("node", arg, diags);
    if (!kv) {
      setup = false;
      continue;
    }
    std::optional<msc::hal::Topology> topo =
        msc::hal::loadTopology(msc::hal::TopologySource::fromArgument(kv->second), diags);
    if (!topo) {
      setup = false;
      continue;
    }
    // The node's name is what binding's diagnostics and the plan's provenance say.
    topo->setName(kv->first);
    setup &= registry.add(kv->first, std::make_shared<const msc::hal::Topology>(std::move(*topo)), diags);
  }
  for (const std::string &arg : admittedArgs) {
    auto kv = splitArg("admitted", arg, diags);
    if (!kv) {
      setup = false;
      continue;
    }
    std::optional<msc::plan::Plan> plan = msc::plan::readPlanFile(kv->second, diags);
    // Every bad --admitted is reported, not only the first.
    if (!plan || !registry.admit(kv->first, std::move(*plan), "--admitted", diags))
      setup = false;
  }
  if (!outputDir.empty() && !sys::fs::is_directory(outputDir.getValue()))
    return usage("-o " + outputDir + ": not a directory");
  if (!setup) {
    diags.finish();
    return msc::driver::kUsageOrIo;
  }

  msc::driver::CompileOptions options;
  options.useCache = true;
  options.inputs = {input};
  options.includeDirs = includeDirs;
  options.stdlibDir = stdlibDir;
  options.onlyContract = contractName;
  std::optional<msc::ir::Module> module = msc::driver::loadContracts(options, sm, diags);
  if (!module) {
    diags.finish();
    return diags.emitted(msc::DiagCode::ERR_DRV_001) ? msc::driver::kUsageOrIo : msc::driver::kContractErrors;
  }
  std::vector<const msc::ir::Contract *> contracts;
  for (const msc::ir::Contract &c : module->contracts)
    if (contractName.empty() || c.name == contractName)
      contracts.push_back(&c);
  if (contracts.size() != 1)
    return usage(std::to_string(contracts.size()) + " contracts match in " + input +
                 "; name the one to place with --contract");

  msc::cluster::Placer placer(registry, msc::kVersion);
  msc::cluster::PlacementResult result = placer.place(*contracts.front(), diags);
  if (result.placed()) {
    printPlacement(result, contracts.front()->name, outs());
    if (!outputDir.empty())
      for (const msc::cluster::NodePlacement &p : result.nodes) {
        SmallString<256> path(outputDir.getValue());
        sys::path::append(path, p.node->name + ".msp");
        msc::plan::writePlanFile(p.plan, path, diags);
      }
  }
  diags.finish();
  if (diags.emitted(msc::DiagCode::ERR_DRV_004))
    return msc::driver::kUsageOrIo;
  return diags.hasErrors() ? msc::driver::kContractErrors : msc::driver::kAccepted;
}
