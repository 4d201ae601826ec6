// mscale-cli hardware health: temperatures against limits, hugepages, RDMA ports, NVMe, GPUs.
#include "tools/mscale-cli/CommandGroup.h"

#include "hal/Render.h"
#include "tools/common/OptionSpelling.h"

#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand HardwareCmd("hardware", "Check a node's hardware health (health)");
cl::opt<std::string> Action(cl::Positional, cl::desc("<health>"), cl::Required, cl::sub(HardwareCmd));
cl::opt<std::string> Input("topology", cl::desc("A recorded topology (hwloc XML, YAML) or 'live'"), cl::value_desc("file"),
                           cl::sub(HardwareCmd));
cl::opt<std::string> InputOld("input", cl::desc("The older spelling of --topology"), cl::Hidden, cl::sub(HardwareCmd));
cl::opt<std::string> SysfsRoot("sysfs-root", cl::desc("Read a recorded sysfs/procfs tree instead of '/'"),
                               cl::value_desc("dir"), cl::sub(HardwareCmd));
cl::opt<bool> Json("json", cl::desc("Write JSON for scripts"), cl::sub(HardwareCmd));

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  if (Action != "health") {
    diags.report(DiagCode::ERR_DRV_005) << ("unknown hardware action '" + Action + "' (expected health)");
    return 2;
  }
  tools::takeOldSpelling(Input, InputOld, diags);
  auto topo = cli::loadTopologyFromOptions(Input, SysfsRoot, "", diags);
  if (!topo)
    return 1;
  if (Json)
    llvm::outs() << llvm::formatv("{0:2}", hal::healthJson(*topo)) << "\n";
  else
    hal::printHealth(*topo, llvm::outs());
  return 0;
}

cli::Registration registration(HardwareCmd, run);

} // namespace
