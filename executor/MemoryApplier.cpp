// Memory applier: per hugepage pool of the plan, reserve the missing pages on the pool's NUMA node
// when the plan says to (reserve_pages > 0: the contract set auto_allocate_hugepages), create the
// pool as a memfd_create(MFD_HUGETLB) file allocated up front (fallocate under an MPOL_BIND policy
// for the node), and hand it to the worker as an inherited fd (MSCALE_POOL_<ROLE>_FD). Roll-back
// closes the pools and gives the reserved pages back.
#include "executor/Appliers.h"
#include "executor/Hugepages.h"
#include "executor/Logger.h"
#include "executor/Sys.h"
#include "executor/WorkerVariables.h"

#include "support/Units.h"

#include <fcntl.h>
#include <linux/memfd.h>
#include <linux/mempolicy.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace msc::exec {

namespace {

// Binds the calling thread's allocations to `node` for its lifetime (hugetlbfs fallocate follows
// the task policy), then restores the default policy.
class NodeBinding {
public:
  explicit NodeBinding(int node) {
    if (node < 0 || node >= 64)
      return;
    unsigned long mask = 1ul << node;
    active_ = syscall(SYS_set_mempolicy, MPOL_BIND, &mask, 64) == 0;
  }
  ~NodeBinding() {
    if (active_)
      syscall(SYS_set_mempolicy, MPOL_DEFAULT, nullptr, 0);
  }

private:
  bool active_ = false;
};

int log2Exact(uint64_t v) {
  int n = 0;
  while (v > 1) {
    v >>= 1;
    ++n;
  }
  return n;
}

class MemoryApplier : public Applier {
public:
  explicit MemoryApplier(const ApplierOptions &o) : opts_(o) {}
  llvm::StringRef name() const override { return "memory"; }

  bool apply(ApplyContext &ctx) override {
    for (const plan::MemoryPool &m : ctx.plan.memory_pools())
      if (!applyPool(ctx, m)) {
        undo(ctx);
        return false;
      }
    if (ctx.injected("memory")) {
      ctx.diags.report(DiagCode::ERR_EXEC_008) << "memory";
      undo(ctx);
      return false;
    }
    for (const Pool &p : pools_) // reservations were logged as they were made
      ctx.log.info(ctx.contractId, "memory: pool of role " + p.role + ": " + std::to_string(p.pages) + " x " +
                                       formatBytes({p.pageSize}) + " (memfd fd " + std::to_string(p.fd) + ")");
    return true;
  }

  void rollback(ApplyContext &ctx) override {
    undo(ctx);
    ctx.log.info(ctx.contractId, "memory: released");
  }

  std::vector<std::string> describe() const override {
    std::vector<std::string> out;
    for (const Reservation &r : reservations_)
      out.push_back("reserved " + std::to_string(r.pages) + " x " + formatBytes({r.pageSize}) +
                    " hugepages on NUMA node " + (r.node < 0 ? std::string("(any)") : std::to_string(r.node)));
    for (const Pool &p : pools_)
      out.push_back("pool of role " + p.role + ": " + std::to_string(p.pages) + " x " + formatBytes({p.pageSize}) +
                    " (memfd fd " + std::to_string(p.fd) + ")");
    return out;
  }

private:
  struct Reservation {
    int node;
    uint64_t pageSize, pages;
  };
  struct Pool {
    std::string role;
    int fd;
    uint64_t pageSize, pages;
  };

  bool applyPool(ApplyContext &ctx, const plan::MemoryPool &m) {
    int node = m.numa_node();
    std::string size = formatBytes({m.page_size()});
    if (m.reserve_pages() > 0 && opts_.hugepageAutoAllocate) {
      // Reserve what is missing now, not what was missing at compile time.
      uint64_t free = readHugepages(node, m.page_size(), "free_hugepages").value_or(0);
      if (free < m.pages()) {
        uint64_t want = m.pages() - free;
        std::string error;
        if (!reserveHugepages(node, m.page_size(), want, error)) {
          ctx.diags.report(DiagCode::ERR_EXEC_005) << want << size << (node < 0 ? 0 : node) << error;
          return false;
        }
        reservations_.push_back({node, m.page_size(), want});
        ctx.log.info(ctx.contractId, "memory: reserved " + std::to_string(want) + " x " + size +
                                         " hugepages on NUMA node " + std::to_string(node));
      }
    }
    unsigned flags = MFD_HUGETLB | MFD_CLOEXEC | (static_cast<unsigned>(log2Exact(m.page_size())) << MFD_HUGE_SHIFT);
    std::string name = poolName(ctx.contractId, m.role());
    int fd = static_cast<int>(syscall(SYS_memfd_create, name.c_str(), flags));
    auto fail = [&](const char *what) {
      int err = errno;
      if (fd >= 0)
        ::close(fd);
      ctx.diags.report(DiagCode::ERR_EXEC_006) << m.role() << std::to_string(m.pages()) << size
                                               << (std::string(what) + ": " + errnoText(err));
      return false;
    };
    if (fd < 0)
      return fail("memfd_create");
    off_t bytes = static_cast<off_t>(m.pages() * m.page_size());
    if (::ftruncate(fd, bytes) != 0)
      return fail("ftruncate");
    {
      NodeBinding bind(node);
      int rc = 0;
      for (int attempt = 0; bytes && attempt < 100; ++attempt) // hugetlbfs fallocate returns EINTR
        if ((rc = ::fallocate(fd, 0, 0, bytes)) == 0 || errno != EINTR)   // while pages are being zeroed
          break;
      if (rc != 0)
        return fail("fallocate");
    }
    pools_.push_back({m.role(), fd, m.page_size(), m.pages()});
    handPoolToWorker(m.role(), fd, static_cast<uint64_t>(bytes), m.page_size(), ctx.worker);
    return true;
  }

  void undo(ApplyContext &ctx) {
    for (const Pool &p : pools_)
      closePool(p.fd, ctx.worker);
    pools_.clear();
    for (auto it = reservations_.rbegin(); it != reservations_.rend(); ++it) {
      std::string error;
      if (!unreserveHugepages(it->node, it->pageSize, it->pages, error))
        ctx.log.error(ctx.contractId, "memory: cannot give back " + std::to_string(it->pages) + " hugepages: " + error);
      else
        ctx.log.info(ctx.contractId, "memory: un-reserved " + std::to_string(it->pages) + " x " +
                                         formatBytes({it->pageSize}) + " hugepages on NUMA node " +
                                         std::to_string(it->node));
    }
    reservations_.clear();
  }

  ApplierOptions opts_;
  std::vector<Reservation> reservations_;
  std::vector<Pool> pools_;
};

} // namespace

std::unique_ptr<Applier> createMemoryApplier(const ApplierOptions &options) {
  return std::make_unique<MemoryApplier>(options);
}

} // namespace msc::exec
