// The memory applier: per hugepage pool of the plan, what the pool lacks is reserved when the plan
// says so (reserve_pages > 0: the contract set auto_allocate_hugepages), the pool is made as a memfd
// (MemoryHost: hugetlb and allocated up front, or a plain sparse one on sim) and handed to the
// worker as an inherited fd (MSCALE_POOL_<ROLE>_FD, _BYTES, _PAGE_SIZE). Roll-back closes the pools
// and gives the reserved pages back.
#include "executor/host/HostAppliers.h"

#include "executor/core/Logger.h"
#include "worker/WorkerApi.h"

#include <algorithm>
#include <unistd.h>

namespace msc::exec {

namespace {

class MemoryApplier final : public Applier {
public:
  explicit MemoryApplier(std::unique_ptr<MemoryHost> host) : host_(std::move(host)) {}
  llvm::StringRef name() const override { return "memory"; }

  bool apply(ApplyContext &ctx) override {
    for (const plan::MemoryPool &m : ctx.plan.memory_pools()) {
      size_t reservedBefore = reserved_.size();
      if (!host_->reserve(ctx, m, reserved_))
        return undo(ctx), false;
      for (size_t i = reservedBefore; i < reserved_.size(); ++i) // logged as made: a later failure gives them back
        ctx.log.info(ctx.contractId, "memory: " + reserved_[i]);
      MadePool pool;
      if (!host_->makePool(ctx, m, poolName(ctx.contractId, m.role()), pool))
        return undo(ctx), false;
      handToWorker(ctx, m.role(), pool);
    }
    if (ctx.injected("memory")) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << "memory";
      undo(ctx);
      return false;
    }
    for (const MadePool &p : pools_)
      ctx.log.info(ctx.contractId, "memory: " + p.line);
    return true;
  }

  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, "memory: released");
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> out = reserved_;
    for (const MadePool &p : pools_)
      out.push_back(p.line);
    return out;
  }

private:
  void handToWorker(ApplyContext &ctx, const std::string &role, const MadePool &pool) {
    ctx.worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_FD")] = std::to_string(pool.fd);
    ctx.worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_BYTES")] = std::to_string(pool.bytes);
    ctx.worker.variables[mscale::worker::roleVariable(role.c_str(), "POOL_PAGE_SIZE")] = std::to_string(pool.pageSize);
    ctx.worker.inheritedFds.push_back(pool.fd);
    pools_.push_back(pool);
  }

  void undo(ApplyContext &ctx) {
    for (const MadePool &p : pools_) {
      ::close(p.fd);
      std::erase(ctx.worker.inheritedFds, p.fd);
    }
    pools_.clear();
    host_->release(ctx);
    reserved_.clear();
  }

  std::unique_ptr<MemoryHost> host_;
  std::vector<std::string> reserved_;
  std::vector<MadePool> pools_;
};

} // namespace

std::unique_ptr<Applier> createMemoryApplier(std::unique_ptr<MemoryHost> host) {
  return std::make_unique<MemoryApplier>(std::move(host));
}

std::string poolName(const std::string &contract, const std::string &role) {
  return "mscale-pool-" + contract + "-" + role;
}

} // namespace msc::exec
