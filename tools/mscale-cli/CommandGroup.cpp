#include "tools/mscale-cli/CommandGroup.h"

#include "hal/Loader.h"
#include "support/DiagnosticPrinters.h"

#include <llvm/Support/SourceMgr.h>

namespace msc::cli {

std::vector<CommandGroup> &commandGroups() {
  static std::vector<CommandGroup> groups;
  return groups;
}

struct Diagnostics::Impl {
  llvm::SourceMgr sm;
  TextDiagnosticPrinter printer{llvm::errs()};
  DiagnosticEngine engine{&sm, printer};
};

Diagnostics::Diagnostics() : impl_(std::make_unique<Impl>()) {}
Diagnostics::~Diagnostics() { impl_->engine.finish(); }
DiagnosticEngine &Diagnostics::engine() { return impl_->engine; }
llvm::SourceMgr &Diagnostics::sourceMgr() { return impl_->sm; }

std::optional<hal::Topology> loadTopologyFromOptions(llvm::StringRef input, llvm::StringRef sysfsRoot,
                                                     llvm::StringRef node, DiagnosticEngine &diags) {
  hal::TopologySource source;
  if (!input.empty())
    source = hal::TopologySource::fromArgument(input);
  else if (!sysfsRoot.empty())
    source = hal::TopologySource::sysfs(sysfsRoot.str());
  source.node = node.str();
  source.useCache = true;
  return hal::loadTopology(source, diags);
}

} // namespace msc::cli
