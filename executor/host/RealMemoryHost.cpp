// host_backend real, memory: the missing hugepages reserved on the pool's NUMA node, and each pool a
// memfd_create(MFD_HUGETLB) file allocated up front (fallocate under an MPOL_BIND policy for the
// node), so the worker never faults on a page the node does not have.
#include "executor/host/Backends.h"

#include "executor/core/Logger.h"
#include "executor/host/Hugepages.h"
#include "executor/host/Sys.h"
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

std::string nodeName(int node) { return node < 0 ? std::string("(any)") : std::to_string(node); }

class RealMemoryHost final : public MemoryHost {
public:
  explicit RealMemoryHost(const ApplierOptions &o) : opts_(o) {}

  bool reserve(ApplyContext &ctx, const plan::MemoryPool &m, std::vector<std::string> &lines) override {
    if (m.reserve_pages() == 0 || !opts_.hugepageAutoAllocate)
      return true;
    // Reserve what is missing now, not what was missing at compile time.
    int node = m.numa_node();
    uint64_t free = readHugepages(node, m.page_size(), "free_hugepages").value_or(0);
    if (free >= m.pages())
      return true;
    uint64_t want = m.pages() - free;
    std::string error;
    if (!reserveHugepages(node, m.page_size(), want, error)) {
      ctx.diags.report(DiagCode::ERR_EXEC_005) << want << formatBytes({m.page_size()}) << (node < 0 ? 0 : node) << error;
      return false;
    }
    reservations_.push_back({node, m.page_size(), want});
    lines.push_back("reserved " + std::to_string(want) + " x " + formatBytes({m.page_size()}) +
                    " hugepages on NUMA node " + nodeName(node));
    return true;
  }

  bool makePool(ApplyContext &ctx, const plan::MemoryPool &m, const std::string &name, MadePool &out) override {
    unsigned flags = MFD_HUGETLB | MFD_CLOEXEC | (static_cast<unsigned>(log2Exact(m.page_size())) << MFD_HUGE_SHIFT);
    int fd = static_cast<int>(syscall(SYS_memfd_create, name.c_str(), flags));
    auto fail = [&](const char *what) {
      int err = errno;
      if (fd >= 0)
        ::close(fd);
      ctx.diags.report(DiagCode::ERR_EXEC_006) << m.role() << std::to_string(m.pages()) << formatBytes({m.page_size()})
                                               << (std::string(what) + ": " + errnoText(err));
      return false;
    };
    if (fd < 0)
      return fail("memfd_create");
    off_t bytes = static_cast<off_t>(m.pages() * m.page_size());
    if (::ftruncate(fd, bytes) != 0)
      return fail("ftruncate");
    {
      NodeBinding bind(m.numa_node());
      int rc = 0;
      for (int attempt = 0; bytes && attempt < 100; ++attempt) // hugetlbfs fallocate returns EINTR
        if ((rc = ::fallocate(fd, 0, 0, bytes)) == 0 || errno != EINTR)   // while pages are being zeroed
          break;
      if (rc != 0)
        return fail("fallocate");
    }
    out = {fd, static_cast<uint64_t>(bytes), m.page_size(),
           "pool of role " + m.role() + ": " + std::to_string(m.pages()) + " x " + formatBytes({m.page_size()}) +
               " (memfd fd " + std::to_string(fd) + ")"};
    return true;
  }

  void release(ApplyContext &ctx) override {
    for (auto it = reservations_.rbegin(); it != reservations_.rend(); ++it) {
      std::string error;
      if (!unreserveHugepages(it->node, it->pageSize, it->pages, error))
        ctx.log.error(ctx.contractId, "memory: cannot give back " + std::to_string(it->pages) + " hugepages: " + error);
      else
        ctx.log.info(ctx.contractId, "memory: un-reserved " + std::to_string(it->pages) + " x " +
                                         formatBytes({it->pageSize}) + " hugepages on NUMA node " + nodeName(it->node));
    }
    reservations_.clear();
  }

private:
  struct Reservation {
    int node;
    uint64_t pageSize, pages;
  };

  ApplierOptions opts_;
  std::vector<Reservation> reservations_;
};

} // namespace

std::unique_ptr<MemoryHost> createRealMemoryHost(const ApplierOptions &options) {
  return std::make_unique<RealMemoryHost>(options);
}

} // namespace msc::exec
