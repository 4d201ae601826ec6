// rdma: the RDMA device and port exist, the port is active with the link layer the contract asks
// for, and a role's hugepage pool sits on the NIC's NUMA node (admission/DeviceRules.cpp).
#include "passes/Passes.h"

namespace msc::passes {

namespace {

class RdmaPass : public Pass {
public:
  llvm::StringRef name() const override { return "rdma"; }
  llvm::StringRef summary() const override {
    return "RDMA ports exist and are active with the right link layer; pools sit on the NIC's NUMA node";
  }

  void run(PassContext &ctx) override { admission::checkRdmaPorts(ctx.claims, ctx.rules()); }
};

} // namespace

std::unique_ptr<Pass> createRdmaPass() { return std::make_unique<RdmaPass>(); }

} // namespace msc::passes
