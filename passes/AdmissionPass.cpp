// admission: the contract double-books nothing that admitted contracts already hold on the node:
// physical cores, GPU SMs and memory, hugepages, RDMA queue pairs (admission/HeldRules.cpp). The
// error names the holder.
#include "passes/Passes.h"

namespace msc::passes {

namespace {

class AdmissionPass : public Pass {
public:
  llvm::StringRef name() const override { return "admission"; }
  llvm::StringRef summary() const override {
    return "nothing the contract needs is already held by a contract admitted on the node";
  }

  void run(PassContext &ctx) override {
    admission::checkAgainstHeld(ctx.claims, ctx.held, ctx.rules(), ctx.decisions.hugepageReservations);
  }
};

} // namespace

std::unique_ptr<Pass> createAdmissionPass() { return std::make_unique<AdmissionPass>(); }

} // namespace msc::passes
