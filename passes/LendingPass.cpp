// lending: what a contract's phases lend, and what a borrower asks to borrow, are possible at all.
//   - an owner whose every phase keeps every lendable resource it holds lends nothing (WRN_SEM_003);
//   - a borrower that asks for more CPU cores or memory than the node has could never be lent
//     enough (ERR_HAL_LEND_001).
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include "hal/Render.h"
#include "ir/ValueFormat.h"
#include "support/Quantity.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::passes {

namespace {

bool isBorrower(const ir::Contract &c) { return c.body.compute.class_ && c.body.compute.class_->value == "opportunistic"; }

// "cpu and io of role 'loader'; gpu of role 'trainer'": what every phase keeps.
std::string keptEverywhere(const ir::Contract &c) {
  std::vector<std::string> parts;
  for (const ir::Role &role : c.body.roles) {
    std::vector<std::string> kinds;
    for (ir::ResourceKind k : ir::kResourceKinds)
      if (ir::roleHolds(role.fields, k))
        kinds.push_back(ir::resourceKindName(k).str());
    if (!kinds.empty())
      parts.push_back(llvm::join(kinds, " and ") + " of role '" + role.name + "'");
  }
  return "every phase keeps " + llvm::join(parts, "; ");
}

class LendingPass : public Pass {
public:
  llvm::StringRef name() const override { return "lending"; }
  llvm::StringRef summary() const override {
    return "an owner's phases lend something, and a borrower asks for no more than the node could lend";
  }
  bool needsTopology() const override { return false; }

  void run(PassContext &ctx) override {
    const ir::Contract &c = ctx.contract;
    if (isBorrower(c))
      return checkBorrower(ctx);
    if (c.body.phases.empty())
      return;
    bool lendsSomething = false;
    for (const ir::Phase &phase : c.body.phases)
      for (const ir::Role &role : c.body.roles)
        for (ir::ResourceKind k : ir::kResourceKinds) {
          const ir::PhaseUse *use = phase.use(role.name);
          bool kept = use && llvm::is_contained(use->exclusive, k);
          lendsSomething |= ir::roleHolds(role.fields, k) && !kept;
        }
    if (!lendsSomething)
      ctx.diags.report(DiagCode::WRN_SEM_003, at(c.body.phases.front().origin))
              .note(Location::none(), "a phase lends what it does not keep: keep in each only what it uses")
          << c.name << keptEverywhere(c);
  }

private:
  void checkBorrower(PassContext &ctx) {
    if (!ctx.topology)
      return;
    const ir::Contract &c = ctx.contract;
    const hal::Topology &topo = *ctx.topology;
    const std::string node = topo.name().empty() ? "this node" : topo.name();
    const hal::Summary summary = hal::summarize(topo);
    // GPU units and queue pairs are lent only from an owner's GPU slice or queue-pair group: a node
    // without the device lends none, whatever its owners.
    if (const auto &slices = c.body.compute.gpu_sm_slices; slices && slices->value > 0 && summary.gpus == 0)
      ctx.diags.report(DiagCode::ERR_HAL_LEND_001, at(slices->origin))
          << c.name << (std::to_string(slices->value) + " GPU SM slices") << node << "it has no GPU";
    if (const auto &qps = c.body.compute.rdma_qps; qps && qps->value > 0 && summary.rdma == 0)
      ctx.diags.report(DiagCode::ERR_HAL_LEND_001, at(qps->origin))
          << c.name << (std::to_string(qps->value) + " RDMA queue pairs") << node << "it has no RDMA device";
    if (const auto &cores = c.body.compute.cpu_cores) {
      size_t have = summary.cores;
      if (have && uint64_t(cores->value) > have)
        ctx.diags.report(DiagCode::ERR_HAL_LEND_001, at(cores->origin))
            << c.name << (std::to_string(cores->value) + " CPU cores") << node
            << ("it has " + std::to_string(have) + " physical cores");
    }
    if (const auto &memory = c.body.compute.memory) {
      uint64_t have = 0;
      for (unsigned n : topo.numaNodes())
        if (const hal::NumaInfo *info = topo.numaInfo(n))
          have += info->memoryBytes;
      if (have && memory->value.value > have)
        ctx.diags.report(DiagCode::ERR_HAL_LEND_001, at(memory->origin))
            << c.name << ir::formatBytes(memory->value) << node << ("it has " + formatMeasuredBytes(have) + " of memory");
    }
  }
};

} // namespace

std::unique_ptr<Pass> createLendingPass() { return std::make_unique<LendingPass>(); }

} // namespace msc::passes
