// hugepages: a pool's page size exists on the node and enough pages are free on the NUMA node
// that uses the pool (admission/HugepageRules.cpp); with auto_allocate_hugepages the shortfall
// becomes a planned reservation, the pass's one decision for the plan.
#include "passes/Passes.h"

namespace msc::passes {

namespace {

class HugepagePass : public Pass {
public:
  llvm::StringRef name() const override { return "hugepages"; }
  llvm::StringRef summary() const override {
    return "hugepage pools use a supported page size and fit the free pages of their NUMA node";
  }

  void run(PassContext &ctx) override {
    ctx.decisions.hugepageReservations = admission::checkHugepages(ctx.claims, ctx.rules());
  }
};

} // namespace

std::unique_ptr<Pass> createHugepagePass() { return std::make_unique<HugepagePass>(); }

} // namespace msc::passes
