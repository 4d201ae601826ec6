// mscalec: compiles MegaScale-Omni contracts. A thin main over the libraries.
#include "driver/Compile.h"
#include "ir/Schema.h"
#include "passes/Passes.h"
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"
#include "support/ErrorIndex.h"
#include "support/Version.h"

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
cl::opt<std::string> listFields("list-fields", cl::ValueOptional, cl::value_desc("markdown|json"),
                                cl::desc("Print every field of the contract language (Markdown, or JSON for tools: "
                                         "kinds, bounds, choices, defaults) and exit"),
                                cl::cat(category));
cl::opt<bool> listPasses("list-passes", cl::desc("List the passes with their summaries and exit"), cl::cat(category));

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

} // namespace

using msc::driver::EmitStage;
using msc::driver::kAccepted;
using msc::driver::kUsageOrIo;

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscalec " << msc::kVersion << "\n"; });
  std::string usageErrors;
  raw_string_ostream usageStream(usageErrors);
  bool parsed = cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni contract compiler\n", &usageStream);

  std::unique_ptr<msc::DiagnosticConsumer> printer =
      msc::makeDiagnosticPrinter(diagFormat, errs(), "mscalec", msc::kVersion);
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
  if (listFields.getNumOccurrences()) {
    if (listFields.empty() || listFields == "markdown") {
      msc::ir::printFieldReference(outs());
      return kAccepted;
    }
    if (listFields == "json") {
      msc::ir::printFieldReferenceJson(outs());
      return kAccepted;
    }
    diags.report(msc::DiagCode::ERR_DRV_005) << ("--list-fields=" + listFields + " (expected markdown or json)");
    diags.finish();
    return kUsageOrIo;
  }
  if (listPasses) {
    for (const msc::passes::PassInfo &info : msc::passes::registeredPasses()) {
      auto pass = info.create();
      outs() << format("  %-16s", info.name.str().c_str()) << pass->summary()
             << (pass->needsTopology() ? "" : " [no topology needed]") << "\n";
    }
    return kAccepted;
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

  msc::driver::CompileOptions options;
  options.useCache = true;
  options.inputs = inputs;
  options.includeDirs = includeDirs;
  options.stdlibDir = stdlibDir;
  options.profileOverride = profileOverride;
  options.stage = stage;
  options.topology = topologyArg;
  options.passes = passList;
  options.admittedPlanFiles = admittedPlans;
  options.printAfter = printAfter;
  options.timePasses = timePasses;
  options.instrumentation = &errs();
  msc::driver::CompileResult result = msc::driver::compile(options, sm, diags);

  // After any error nothing is written: no plan, no half an output.
  bool accepted = !result.setupFailed && !diags.hasErrors();
  if (accepted && stage == EmitStage::Plan) {
    writePlans(result.plans, diags);
  } else if (accepted) {
    std::error_code ec;
    ToolOutputFile file(outputFile, ec, sys::fs::OF_None);
    if (ec) {
      diags.report(msc::DiagCode::ERR_DRV_004) << outputFile << ec.message();
    } else {
      file.os() << result.text;
      file.keep();
    }
  }
  diags.finish();
  return msc::driver::exitStatusOf(result, diags);
}
