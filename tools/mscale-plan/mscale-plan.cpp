// mscale-plan: read execution plans. dump (text or --json), diff (what would change), verify.
#include "plan/PlanFile.h"
#include "support/DiagnosticPrinters.h"
#include "support/Version.h"

#include <llvm/Support/CommandLine.h>
#include <llvm/Support/raw_ostream.h>

using namespace llvm;

namespace {

cl::OptionCategory category("mscale-plan options");
cl::SubCommand dumpCmd("dump", "Print a plan for people (or --json)");
cl::SubCommand diffCmd("diff", "Show what would change from the first plan to the second");
cl::SubCommand verifyCmd("verify", "Check plans: header, checksum, format version, invariants");

cl::list<std::string> dumpInputs(cl::Positional, cl::desc("<plan.msp>..."), cl::sub(dumpCmd));
cl::opt<bool> json("json", cl::desc("Print the protobuf JSON mapping"), cl::sub(dumpCmd));
cl::list<std::string> diffInputs(cl::Positional, cl::desc("<before.msp> <after.msp>"), cl::sub(diffCmd));
cl::list<std::string> verifyInputs(cl::Positional, cl::desc("<plan.msp>..."), cl::sub(verifyCmd));
cl::opt<msc::DiagnosticsFormat> diagFormat(
    "diagnostics-format", cl::desc("How diagnostics are printed (on stderr)"), cl::init(msc::DiagnosticsFormat::Text),
    cl::values(clEnumValN(msc::DiagnosticsFormat::Text, "text", "clang-style text"),
               clEnumValN(msc::DiagnosticsFormat::Json, "json", "a JSON array"),
               clEnumValN(msc::DiagnosticsFormat::Sarif, "sarif", "SARIF 2.1.0")),
    cl::sub(cl::SubCommand::getAll()));

// Exit statuses: 0 fine (diff: no change), 1 a plan is bad (diff: plans differ), 2 usage.
int run(msc::DiagnosticEngine &diags) {
  if (dumpCmd) {
    if (dumpInputs.empty()) {
      diags.report(msc::DiagCode::ERR_DRV_005) << "dump needs at least one plan";
      return 2;
    }
    for (const std::string &path : dumpInputs) {
      std::optional<msc::plan::Plan> plan = msc::plan::readPlanFile(path, diags);
      if (!plan)
        return 1;
      if (json)
        outs() << msc::plan::planToJson(*plan);
      else
        msc::plan::dumpPlan(*plan, outs());
    }
    return 0;
  }
  if (diffCmd) {
    if (diffInputs.size() != 2) {
      diags.report(msc::DiagCode::ERR_DRV_005) << "diff needs exactly two plans";
      return 2;
    }
    std::optional<msc::plan::Plan> before = msc::plan::readPlanFile(diffInputs[0], diags);
    std::optional<msc::plan::Plan> after = msc::plan::readPlanFile(diffInputs[1], diags);
    if (!before || !after)
      return 2;
    return msc::plan::diffPlans(*before, *after, outs()) ? 1 : 0;
  }
  if (verifyCmd) {
    if (verifyInputs.empty()) {
      diags.report(msc::DiagCode::ERR_DRV_005) << "verify needs at least one plan";
      return 2;
    }
    int status = 0;
    for (const std::string &path : verifyInputs) {
      if (std::optional<msc::plan::Plan> plan = msc::plan::readPlanFile(path, diags))
        outs() << path << ": ok (contract '" << plan->provenance().contract() << "', format "
               << plan->format_major() << "." << plan->format_minor() << ")\n";
      else
        status = 1;
    }
    return status;
  }
  diags.report(msc::DiagCode::ERR_DRV_005) << "name a subcommand: dump, diff or verify (see --help)";
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  cl::SetVersionPrinter([](raw_ostream &os) { os << "mscale-plan " << msc::kVersion << "\n"; });
  cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni execution plans\n");
  std::unique_ptr<msc::DiagnosticConsumer> printer =
      msc::makeDiagnosticPrinter(diagFormat, errs(), "mscale-plan", msc::kVersion);
  msc::DiagnosticEngine diags(nullptr, *printer);
  int status = run(diags);
  diags.finish();
  return status;
}
