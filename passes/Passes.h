// Factories of every pass; the registry (PassRegistry.cpp) lists them in pipeline order.
#pragma once

#include "passes/Pass.h"

namespace msc::passes {

std::unique_ptr<Pass> createProfilePass();
std::unique_ptr<Pass> createLendingPass();
std::unique_ptr<Pass> createThermalPolicyPass();
std::unique_ptr<Pass> createGpuPass();
std::unique_ptr<Pass> createPciePass();
std::unique_ptr<Pass> createCpuNumaPass();
std::unique_ptr<Pass> createNvmePass();
std::unique_ptr<Pass> createRdmaPass();
std::unique_ptr<Pass> createHugepagePass();
std::unique_ptr<Pass> createThermalPass();
std::unique_ptr<Pass> createAdmissionPass();

struct PassInfo {
  llvm::StringRef name;
  std::unique_ptr<Pass> (*create)();
};
// In the order the default pipeline runs them.
llvm::ArrayRef<PassInfo> registeredPasses();

} // namespace msc::passes
