// mscale-cli: the operator's tool. Each command group lives in its own file and registers itself
// (see CommandGroup.h); this file only parses the command line and dispatches.
#include "tools/mscale-cli/CommandGroup.h"

#include "support/Version.h"

#include <llvm/Support/InitLLVM.h>
#include <llvm/Support/raw_ostream.h>

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::SetVersionPrinter([](llvm::raw_ostream &os) { os << "mscale-cli " << msc::kVersion << "\n"; });
  llvm::cl::ParseCommandLineOptions(argc, argv, "MegaScale-Omni node tool\n");
  for (const msc::cli::CommandGroup &group : msc::cli::commandGroups())
    if (*group.sub)
      return group.run();
  llvm::errs() << "mscale-cli: no command given; see 'mscale-cli --help'\n";
  return 2;
}
