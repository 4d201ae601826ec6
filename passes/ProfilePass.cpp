// profile: the contract's compute profile and what its roles pin agree.
#include "passes/PassUtil.h"
#include "passes/Passes.h"

#include <set>

namespace msc::passes {

namespace {

class ProfilePass : public Pass {
public:
  llvm::StringRef name() const override { return "profile"; }
  llvm::StringRef summary() const override {
    return "the contract has a compute profile and its roles pin as many cores as the profile asks";
  }
  bool needsTopology() const override { return false; }

  void run(PassContext &ctx) override {
    const ir::Contract &c = ctx.contract;
    // A borrower takes nothing of a profile: it has no roles, recovery or scaling of its own here.
    if (c.body.compute.class_ && c.body.compute.class_->value == "opportunistic")
      return;
    if (c.profile.empty()) {
      ctx.diags.report(DiagCode::WRN_SEM_001, c.nameRange)
              .note(Location::none(), "without a profile, recovery and scaling use built-in defaults; "
                                      "write 'contract " + c.name + " uses profile mlvm_light { ... }'")
          << c.name;
      return;
    }
    const auto &wanted = c.body.compute.cpu_cores;
    if (!wanted)
      return;
    // Count physical cores where the topology says which CPUs are siblings, else logical CPUs.
    std::set<unsigned> pinned;
    bool anyPinned = false;
    for (const RolePlacement &r : ctx.placement.roles) {
      anyPinned |= !r.cpus.empty();
      if (!r.physicalCores.empty())
        pinned.insert(r.physicalCores.begin(), r.physicalCores.end());
      else
        pinned.insert(r.cpus.begin(), r.cpus.end());
    }
    if (anyPinned && static_cast<int64_t>(pinned.size()) < wanted->value)
      ctx.diags.report(DiagCode::WRN_SEM_002, at(wanted->origin))
              .note(Location{c.nameRange, {}, 0}, "contract '" + c.name + "' pins " + std::to_string(pinned.size()) +
                                                      " core(s) in its roles")
          << c.profile << wanted->value << static_cast<uint64_t>(pinned.size());
  }
};

} // namespace

std::unique_ptr<Pass> createProfilePass() { return std::make_unique<ProfilePass>(); }

} // namespace msc::passes
