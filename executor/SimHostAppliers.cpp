// The `sim` host backend (node config host_backend: sim): CPU, IO and memory appliers for a recorded
// node served on a machine that lacks its CPUs, block devices and hugepages (several node agents on
// one laptop, each serving a 48-core node). The re-check has already held the plan against the
// recorded topology; what is left is what the worker sees. It gets the variables the real appliers
// give (WorkerVariables.h), with the plan's recorded CPUs, and per pool an ordinary memfd of the
// pool's size (sparse: ftruncate only, so a 64 GiB pool costs nothing until written), which a worker
// maps as it would the hugetlb one. Nothing of the host is changed: no cgroup (so no MSCALE_CGROUP),
// no affinity, no sysfs file, no hugepage reservation. describe() says `sim` on every line, so
// `contract status` never passes these off as applied.
#include "executor/Appliers.h"
#include "executor/Logger.h"
#include "executor/Sys.h"
#include "executor/WorkerVariables.h"

#include "support/CpuList.h"
#include "support/Units.h"

#include <sys/mman.h>
#include <unistd.h>

namespace msc::exec {

namespace {

const char *const kNotApplied = " (host_backend sim: not applied)";

// Every sim applier: the same injected failure and the same log lines as its real counterpart.
class SimHostApplier : public Applier {
public:
  std::vector<std::string> describe() const override { return described_; }
  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, name().str() + ": released");
  }

protected:
  // Finishes apply(): fails on an injected failure, else logs what was described.
  bool finishApply(ApplyContext &ctx) {
    if (ctx.injected(name())) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << name();
      undo(ctx);
      return false;
    }
    for (const std::string &line : described_)
      ctx.log.info(ctx.contractId, name().str() + ": " + line);
    return true;
  }
  // Closes what apply opened and forgets what it described.
  virtual void undo(ApplyContext &) { described_.clear(); }

  std::vector<std::string> described_;
};

class SimCpuApplier : public SimHostApplier {
public:
  llvm::StringRef name() const override { return "cpu"; }

  bool apply(ApplyContext &ctx) override {
    PlanCpus planCpus = setCpuVariables(ctx.plan, ctx.contractId, ctx.worker);
    cpus_ = formatCpuList(planCpus.cpus);
    if (!planCpus.cpus.empty())
      described_.push_back("sim cpuset: cpus " + cpus_ +
                           (planCpus.mems.empty() ? "" : ", mems " + formatCpuList(planCpus.mems)) + kNotApplied);
    for (std::string &line : describeRoleCpus(ctx.plan))
      described_.push_back(std::move(line));
    return finishApply(ctx);
  }

  bool attach(ApplyContext &ctx, pid_t worker) override {
    if (!cpus_.empty())
      ctx.log.info(ctx.contractId, "cpu: worker " + std::to_string(worker) + " not pinned to CPUs " + cpus_ +
                                       " (host_backend sim)");
    return true;
  }

private:
  std::string cpus_;
};

class SimIoApplier : public SimHostApplier {
public:
  llvm::StringRef name() const override { return "io"; }

  bool apply(ApplyContext &ctx) override {
    for (const plan::IoBinding &b : ctx.plan.io_bindings()) {
      // The depth is not tried on this kernel: the recorded node's limits are not this machine's.
      std::string depth = setIoDepthVariable(b, ctx.worker);
      if (!depth.empty())
        described_.push_back(depth + " (host_backend sim: not checked)");
      if (b.io_weight())
        described_.push_back("sim io_weight " + std::to_string(b.io_weight()) + " of role " + b.role() + kNotApplied);
      if (b.io_limit_bps())
        described_.push_back("sim io_limit of role " + b.role() + ": " + std::to_string(b.io_limit_bps() / 8) +
                             " B/s" + (b.block_device().empty() ? "" : " on " + b.block_device()) + kNotApplied);
    }
    return finishApply(ctx);
  }
};

class SimMemoryApplier : public SimHostApplier {
public:
  llvm::StringRef name() const override { return "memory"; }

  bool apply(ApplyContext &ctx) override {
    uint64_t pageSize = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    for (const plan::MemoryPool &m : ctx.plan.memory_pools()) {
      std::string hugepages = std::to_string(m.pages()) + " x " + formatBytes({m.page_size()});
      if (m.reserve_pages() > 0)
        described_.push_back("sim reservation of " + std::to_string(m.reserve_pages()) + " x " +
                             formatBytes({m.page_size()}) + " hugepages on NUMA node " +
                             (m.numa_node() < 0 ? std::string("(any)") : std::to_string(m.numa_node())) +
                             kNotApplied);
      int fd = ::memfd_create(poolName(ctx.contractId, m.role()).c_str(), MFD_CLOEXEC);
      uint64_t bytes = m.pages() * m.page_size();
      if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
        int err = errno;
        if (fd >= 0)
          ::close(fd);
        ctx.diags.report(DiagCode::ERR_EXEC_006) << m.role() << std::to_string(m.pages()) << formatBytes({m.page_size()})
                                                 << std::string(fd < 0 ? "memfd_create" : "ftruncate") +
                                                        " (host_backend sim): " + errnoText(err);
        undo(ctx);
        return false;
      }
      handPoolToWorker(m.role(), fd, bytes, pageSize, ctx.worker);
      fds_.push_back(fd);
      described_.push_back("sim pool of role " + m.role() + ": " + hugepages + " as " + formatBytes({bytes}) + " of " +
                           formatBytes({pageSize}) + " pages (memfd fd " + std::to_string(fd) +
                           "; host_backend sim: no hugepages)");
    }
    return finishApply(ctx);
  }

private:
  void undo(ApplyContext &ctx) override {
    for (int fd : fds_)
      closePool(fd, ctx.worker);
    fds_.clear();
    SimHostApplier::undo(ctx);
  }

  std::vector<int> fds_;
};

} // namespace

std::unique_ptr<Applier> createSimCpuApplier() { return std::make_unique<SimCpuApplier>(); }
std::unique_ptr<Applier> createSimIoApplier() { return std::make_unique<SimIoApplier>(); }
std::unique_ptr<Applier> createSimMemoryApplier() { return std::make_unique<SimMemoryApplier>(); }

} // namespace msc::exec
