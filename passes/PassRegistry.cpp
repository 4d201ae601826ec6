// The one place passes are registered, in default pipeline order: topology-free checks first,
// then the devices (GPU before what is placed relative to it), admission last.
#include "passes/Passes.h"

namespace msc::passes {

llvm::ArrayRef<PassInfo> registeredPasses() {
  static const PassInfo kPasses[] = {
      {"profile", createProfilePass},     {"thermal-policy", createThermalPolicyPass},
      {"lending", createLendingPass},
      {"gpu", createGpuPass},             {"pcie", createPciePass},
      {"cpu-numa", createCpuNumaPass},    {"nvme", createNvmePass},
      {"rdma", createRdmaPass},           {"hugepages", createHugepagePass},
      {"thermal", createThermalPass},     {"admission", createAdmissionPass},
  };
  return kPasses;
}

} // namespace msc::passes
