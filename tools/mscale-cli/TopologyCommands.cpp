// mscale-cli topology show [--matrix] | export --format=yaml|json
#include "tools/mscale-cli/CommandGroup.h"

#include "hal/LinkMatrix.h"
#include "hal/Loader.h"
#include "hal/Render.h"
#include "hal/TopologyYaml.h"
#include "tools/common/OptionSpelling.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

namespace cl = llvm::cl;
using namespace msc;

namespace {

cl::SubCommand TopologyCmd("topology", "Show or export a node's hardware topology (show, export)");
cl::opt<std::string> Action(cl::Positional, cl::desc("<show|export>"), cl::Required, cl::sub(TopologyCmd));
cl::opt<std::string> Input("topology", cl::desc("hwloc XML, topology YAML, nvidia-smi topo -m text, or 'live'"),
                           cl::value_desc("file"), cl::sub(TopologyCmd));
cl::opt<std::string> InputOld("input", cl::desc("The older spelling of --topology"), cl::Hidden, cl::sub(TopologyCmd));
cl::opt<std::string> SysfsRoot("sysfs-root", cl::desc("Read a recorded sysfs/procfs tree instead of '/'"),
                               cl::value_desc("dir"), cl::sub(TopologyCmd));
cl::opt<std::string> Node("node", cl::desc("The node to take from a cluster description"), cl::sub(TopologyCmd));
cl::opt<bool> Matrix("matrix", cl::desc("show: GPU/NIC/NVMe link classes and affinity (like nvidia-smi topo -m)"),
                     cl::sub(TopologyCmd));
cl::opt<bool> Caches("caches", cl::desc("show: include caches in the tree"), cl::sub(TopologyCmd));
cl::opt<bool> Json("json", cl::desc("Write JSON for scripts"), cl::sub(TopologyCmd));
cl::opt<std::string> Format("format", cl::desc("export: yaml or json"), cl::init("yaml"), cl::sub(TopologyCmd));

int showMatrixOfFile(DiagnosticEngine &diags) {
  auto buf = llvm::MemoryBuffer::getFile(Input, /*IsText=*/true);
  if (!buf) {
    diags.report(DiagCode::ERR_HAL_TOPO_001, Location{{}, Input, 0}) << Input << buf.getError().message();
    return 1;
  }
  auto m = hal::parseNvidiaSmiTopo((*buf)->getBuffer(), Input, diags);
  if (!m)
    return 1;
  if (Json)
    llvm::outs() << llvm::formatv("{0:2}", hal::linkMatrixJson(*m)) << "\n";
  else
    hal::printLinkMatrix(*m, llvm::outs());
  return 0;
}

int run() {
  cli::Diagnostics diagnostics;
  DiagnosticEngine &diags = diagnostics.engine();
  if (Action != "show" && Action != "export") {
    diags.report(DiagCode::ERR_DRV_005) << ("unknown topology action '" + Action + "' (expected show or export)");
    return 2;
  }
  tools::takeOldSpelling(Input, InputOld, diags);
  if (Action == "show" && Matrix && !Input.empty() && Input != "live") {
    auto buf = llvm::MemoryBuffer::getFile(Input, /*IsText=*/true);
    if (buf && hal::detectFormat((*buf)->getBuffer(), Input) == hal::FileFormat::NvidiaSmiTopo)
      return showMatrixOfFile(diags);
  }
  auto topo = cli::loadTopologyFromOptions(Input, SysfsRoot, Node, diags);
  if (!topo)
    return 1;
  if (Action == "export") {
    if (Format == "yaml")
      llvm::outs() << hal::writeTopologyYaml(*topo);
    else if (Format == "json")
      llvm::outs() << llvm::formatv("{0:2}", hal::topologyJson(*topo)) << "\n";
    else {
      diags.report(DiagCode::ERR_DRV_005) << ("unknown export format '" + Format + "' (expected yaml or json)");
      return 2;
    }
    return 0;
  }
  if (Matrix) {
    hal::LinkMatrix m = hal::computeLinkMatrix(*topo);
    if (Json)
      llvm::outs() << llvm::formatv("{0:2}", hal::linkMatrixJson(m)) << "\n";
    else
      hal::printLinkMatrix(m, llvm::outs());
    return 0;
  }
  if (Json)
    llvm::outs() << llvm::formatv("{0:2}", hal::topologyJson(*topo)) << "\n";
  else
    hal::printTree(*topo, llvm::outs(), hal::TreeOptions{Caches});
  return 0;
}

cli::Registration registration(TopologyCmd, run);

} // namespace
