// nvme: the block device a role reads exists as written (device, namespace or partition) and
// its io_depth fits the device's queue (admission/DeviceRules.cpp).
#include "passes/Passes.h"

namespace msc::passes {

namespace {

class NvmePass : public Pass {
public:
  llvm::StringRef name() const override { return "nvme"; }
  llvm::StringRef summary() const override { return "block devices exist as written and io_depth fits their queues"; }

  void run(PassContext &ctx) override { admission::checkBlockDevices(ctx.claims, ctx.rules()); }
};

} // namespace

std::unique_ptr<Pass> createNvmePass() { return std::make_unique<NvmePass>(); }

} // namespace msc::passes
