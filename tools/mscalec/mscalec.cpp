// mscalec: compiles MegaScale-Omni contracts. A thin main over the libraries.
#include "compiler/Frontend.h"
#include "hal/Loader.h"
#include "ir/IR.h"
#include "ir/PlanFile.h"
#include "ir/Schema.h"
#include "passes/Lowering.h"
#include "passes/PassManager.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"
#include "support/DiagnosticPrinters.h"
#include "support/ErrorIndex.h"

#include <llvm/ADT/StringSwitch.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/Process.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/ToolOutputFile.h>
#include <llvm/Support/raw_ostream.h>

using namespace llvm;

namespace {

// How far the pipeline runs is one ordered value, not a web of flags.
enum class EmitStage { Ast, Ir, Plan };

cl::OptionCategory category("mscalec options");
cl::list<std::string> inputs(cl::Positional, cl::desc("<contract.msc>..."), cl::cat(category));
cl::list<std::string> includeDirs("I", cl::desc("Add a directory to the import search path"), cl::Prefix,
                                  cl::value_desc("dir"), cl::cat(category));
cl::opt<std::string> stdlibDir("stdlib", cl::desc("Standard library directory (default: the installed one)"),
                               cl::value_desc("dir"), cl::cat(category));
// A string, mapped below, so that a bad value is a coded usage error like every other.
cl::opt<std::string> emit("emit",
                          cl::desc("What to produce: ast, ir (the checked, resolved IR; default) or plan "
                                   "(the binary execution plan; default with -o FILE.msp)"),
                          cl::value_desc("stage"), cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Output file (default: stdout)"), cl::value_desc("file"),
                                cl::init("-"), cl::cat(category));
cl::opt<msc::DiagnosticsFormat> diagFormat(
    "diagnostics-format", cl::desc("How diagnostics are printed (on stderr)"), cl::init(msc::DiagnosticsFormat::Text),
    cl::values(clEnumValN(msc::DiagnosticsFormat::Text, "text", "clang-style text"),
               clEnumValN(msc::DiagnosticsFormat::Json, "json", "a JSON array"),
               clEnumValN(msc::DiagnosticsFormat::Sarif, "sarif", "SARIF 2.1.0")),
    cl::cat(category));
cl::opt<std::string> explain("explain", cl::desc("Print the long explanation of an error code"),
                             cl::value_desc("CODE"), cl::cat(category));
cl::opt<unsigned> errorLimit("error-limit", cl::desc("Stop printing errors after this many (0: no limit)"),
                             cl::init(50), cl::cat(category));
cl::opt<bool> warningsAsErrors("Werror", cl::desc("Treat warnings as errors"), cl::cat(category));
cl::opt<std::string> topologyArg("topology",
                                 cl::desc("Check against a node: 'live', a topology file (hwloc XML, YAML) or a "
                                          "recorded sysfs directory"),
                                 cl::value_desc("live|file|dir"), cl::cat(category));
cl::opt<std::string> passList("passes", cl::desc("Run only these passes, comma-separated (default: all)"),
                              cl::value_desc("a,b"), cl::cat(category));
cl::list<std::string> printAfter("print-after", cl::desc("Print the placement after this pass ('all' for every pass)"),
                                 cl::value_desc("pass"), cl::CommaSeparated, cl::cat(category));
cl::opt<std::string> profileOverride("profile",
                                     cl::desc("Compile the contracts on this profile instead of the one they use"),
                                     cl::value_desc("name"), cl::cat(category));
cl::opt<bool> timePasses("time-passes", cl::desc("Report the time each pass took (stderr)"), cl::cat(category));
cl::list<std::string> admittedPlans("admitted", cl::desc("Plans already admitted on the node (admission check)"),
                                    cl::value_desc("plan.msp"), cl::CommaSeparated, cl::cat(category));
cl::opt<bool> listFields("list-fields", cl::desc("Print every field of the contract language (Markdown) and exit"),
                         cl::cat(category));
cl::opt<bool> listPasses("list-passes", cl::desc("List the passes with their summaries and exit"), cl::cat(category));

constexpr const char *kVersion = "0.1.0";

// Installed layout: bin/mscalec and share/megascale/stdlib; in the build tree the stdlib is
// found through the MSC_STDLIB_DIR the build wrote in.
std::string defaultStdlib(const char *argv0) {
  if (auto env = sys::Process::GetEnv("MSCALE_STDLIB"))
    return *env;
  std::string exe = sys::fs::getMainExecutable(argv0, reinterpret_cast<void *>(&defaultStdlib));
  SmallString<256> installed(sys::path::parent_path(sys::path::parent_path(exe)));
  sys::path::append(installed, "share", "megascale", "stdlib");
  if (sys::fs::is_directory(installed))
    return installed.str().str();
  return MSC_STDLIB_DIR;
}

// One contract: -o FILE. Several: -o DIR gets DIR/<contract>.msp each.
void writePlans(const std::vector<msc::plan::Plan> &plans, msc::DiagnosticEngine &diags) {
  if (plans.size() == 1 && !sys::fs::is_directory(outputFile.getValue())) {
    msc::plan::writePlanFile(plans.front(), outputFile, diags);
    return;
  }
  if (!sys::fs::is_directory(outputFile.getValue())) {
    diags.report(msc::DiagCode::ERR_DRV_005)
        << (std::to_string(plans.size()) + " contracts give " + std::to_string(plans.size()) +
            " plans: -o must name an existing directory");
    return;
  }
  for (const msc::plan::Plan &plan : plans) {
    SmallString<256> path(outputFile.getValue());
    sys::path::append(path, plan.provenance().contract() + ".msp");
    msc::plan::writePlanFile(plan, path, diags);
  }
}

enum ExitStatus { kAccepted = 0, kContractErrors = 1, kUsageOrIo = 2 };

} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscalec " << kVersion << "\n"; });
  std::string usageErrors;
  raw_string_ostream usageStream(usageErrors);
  bool parsed = cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni contract compiler\n", &usageStream);

  std::unique_ptr<msc::DiagnosticConsumer> printer =
      msc::makeDiagnosticPrinter(diagFormat, errs(), "mscalec", kVersion);
  SourceMgr sm;
  msc::DiagnosticEngine diags(&sm, *printer);
  if (!parsed && usageErrors.empty())
    usageStream << "invalid command line (see the message above and --help)";
  if (!parsed) {
    // cl reports "mscalec: for the --emit option: ..." lines; each becomes one coded diagnostic.
    SmallVector<StringRef, 4> lines;
    StringRef(usageErrors).split(lines, '\n', -1, false);
    for (StringRef line : lines)
      diags.report(msc::DiagCode::ERR_DRV_005) << line.trim().str();
    diags.finish();
    return kUsageOrIo;
  }
  diags.setErrorLimit(errorLimit);
  diags.setWarningsAsErrors(warningsAsErrors);

  if (!explain.empty()) {
    bool explained = msc::printExplanation(explain, outs(), diags);
    diags.finish();
    return explained ? kAccepted : kUsageOrIo;
  }
  if (listFields) {
    msc::ir::printFieldReference(outs());
    return kAccepted;
  }
  if (listPasses) {
    for (const msc::passes::PassInfo &info : msc::passes::registeredPasses()) {
      auto pass = info.create();
      outs() << format("  %-16s", info.name.str().c_str()) << pass->summary()
             << (pass->needsTopology() ? "" : " [no topology needed]") << "\n";
    }
    return kAccepted;
  }
  if (inputs.empty()) {
    diags.report(msc::DiagCode::ERR_DRV_005) << "no input files (see --help)";
    diags.finish();
    return kUsageOrIo;
  }

  std::optional<EmitStage> chosen = StringSwitch<std::optional<EmitStage>>(emit)
                                        .Case("ast", EmitStage::Ast)
                                        .Case("ir", EmitStage::Ir)
                                        .Case("plan", EmitStage::Plan)
                                        .Case("", std::nullopt)
                                        .Default(std::nullopt);
  if (!emit.empty() && !chosen) {
    diags.report(msc::DiagCode::ERR_DRV_005) << ("--emit=" + emit + " (expected ast, ir or plan)");
    diags.finish();
    return kUsageOrIo;
  }
  EmitStage stage = chosen ? *chosen : StringRef(outputFile).ends_with(".msp") ? EmitStage::Plan : EmitStage::Ir;

  msc::FrontendOptions options;
  options.includeDirs = includeDirs;
  options.stdlibDir = stdlibDir.empty() ? defaultStdlib(argv[0]) : stdlibDir;
  options.profileOverride = profileOverride;

  std::optional<msc::hal::Topology> topology;
  if (!topologyArg.empty()) {
    topology = msc::hal::loadTopology(msc::hal::TopologySource::fromArgument(topologyArg), diags);
    if (!topology) {
      diags.finish();
      return kUsageOrIo;
    }
  }
  std::optional<msc::passes::PassManager> pipeline =
      passList.empty() ? msc::passes::PassManager::defaultPipeline() : msc::passes::PassManager::fromNames(passList, diags);
  if (!pipeline) {
    diags.finish();
    return kUsageOrIo;
  }
  msc::passes::Instrumentation instrumentation{printAfter, timePasses, &errs()};
  msc::passes::AdmittedSet admitted;
  for (const std::string &path : admittedPlans) {
    std::optional<msc::plan::Plan> plan = msc::plan::readPlanFile(path, diags);
    if (!plan) {
      diags.finish();
      return kUsageOrIo;
    }
    admitted.holdings.push_back(msc::passes::holdingFromPlan(*plan));
  }
  std::vector<msc::plan::Plan> plans;

  std::string output;
  raw_string_ostream out(output);
  for (const std::string &input : inputs) {
    if (stage == EmitStage::Ast) {
      auto sources = msc::loadSources(input, options, sm, diags);
      if (sources && !sources->files.empty() && !diags.hasErrors())
        msc::ast::dump(*sources->files.front(), sm, out);
      continue;
    }
    std::optional<msc::ir::Module> module = msc::compileContractFile(input, options, sm, diags);
    if (!module)
      continue;
    for (const std::string &problem : msc::ir::verify(*module))
      errs() << "mscalec: internal error: IR verifier: " << problem << "\n";
    for (const msc::ir::Contract &contract : module->contracts) {
      msc::passes::Placement placement = msc::passes::place(contract, topology ? &*topology : nullptr);
      msc::passes::PassContext ctx{contract, topology ? &*topology : nullptr, admitted, diags, placement};
      if (!pipeline->run(ctx, instrumentation) || stage != EmitStage::Plan)
        continue;
      if (!topology) {
        diags.report(msc::DiagCode::ERR_PLAN_007, contract.nameRange)
            << contract.name << "a plan is resolved against a node; add --topology live|FILE|DIR";
        continue;
      }
      plans.push_back(msc::passes::lowerToPlan(contract, placement, *topology, kVersion));
    }
    if (stage == EmitStage::Ir)
      msc::ir::print(*module, out);
  }

  if (stage == EmitStage::Plan) {
    if (!diags.hasErrors())
      writePlans(plans, diags);
  } else if (!diags.hasErrors()) {
    std::error_code ec;
    ToolOutputFile file(outputFile, ec, sys::fs::OF_None);
    if (ec) {
      diags.report(msc::DiagCode::ERR_DRV_004) << outputFile << ec.message();
    } else {
      file.os() << output;
      file.keep();
    }
  }
  diags.finish();
  if (diags.emitted(msc::DiagCode::ERR_DRV_001) || diags.emitted(msc::DiagCode::ERR_DRV_004) ||
      diags.emitted(msc::DiagCode::ERR_DRV_005))
    return kUsageOrIo;
  return diags.hasErrors() ? kContractErrors : kAccepted;
}
