// host_backend sim (HostBackend.h): the node is a recorded one, so the plan's CPUs, disks and
// hugepages are not this machine's. The re-check has already held the plan against the recorded
// topology; the appliers still tell the worker what the real ones would, and these backends change
// nothing of the host: no cgroup (so no MSCALE_CGROUP), no affinity, no sysfs file, no hugepage
// reservation. Each line says `sim`, so `contract status` never passes it off as applied. A pool
// is an ordinary memfd of the pool's size (sparse: ftruncate only, so a 64 GiB pool costs nothing
// until written), which a worker maps as it would the hugetlb one.
#include "executor/host/Backends.h"

#include "executor/core/Logger.h"
#include "executor/host/Sys.h"
#include "support/CpuList.h"
#include "support/Units.h"

#include <sys/mman.h>
#include <unistd.h>

namespace msc::exec {

namespace {

const char *const kNotApplied = " (host_backend sim: not applied)";

class SimCpuHost final : public CpuHost {
public:
  bool confine(ApplyContext &, const CpuRequest &request, std::vector<std::string> &lines) override {
    if (!request.cpus.empty())
      lines.push_back("sim cpuset: cpus " + formatCpuList(request.cpus) +
                      (request.mems.empty() ? "" : ", mems " + formatCpuList(request.mems)) + kNotApplied);
    if (request.weight)
      lines.push_back("sim cpu.weight " + std::to_string(request.weight) + kNotApplied);
    return true;
  }
  bool attach(ApplyContext &ctx, pid_t worker, const std::vector<unsigned> &cpus) override {
    if (!cpus.empty())
      ctx.log.info(ctx.contractId, "cpu: worker " + std::to_string(worker) + " not pinned to CPUs " +
                                       formatCpuList(cpus) + " (host_backend sim)");
    return true;
  }
  void release(ApplyContext &) override {}
  std::string cgroup2Dir() const override { return ""; }
};

class SimIoHost final : public IoHost {
public:
  // The depth is not tried on this kernel: the recorded node's limits are not this machine's.
  bool checkRingDepth(ApplyContext &, const plan::IoBinding &, std::string &note) override {
    note = " (host_backend sim: not checked)";
    return true;
  }
  bool applySettings(ApplyContext &, const plan::IoBinding &b, std::vector<std::string> &lines) override {
    if (b.io_weight())
      lines.push_back("sim io_weight " + std::to_string(b.io_weight()) + " of role " + b.role() + kNotApplied);
    if (b.io_limit_bps())
      lines.push_back("sim io_limit of role " + b.role() + ": " + std::to_string(b.io_limit_bps() / 8) + " B/s" +
                      (b.block_device().empty() ? "" : " on " + b.block_device()) + kNotApplied);
    return true;
  }
  bool attach(ApplyContext &, pid_t) override { return true; }
  void release(ApplyContext &) override {}
};

class SimMemoryHost final : public MemoryHost {
public:
  bool reserve(ApplyContext &, const plan::MemoryPool &m, std::vector<std::string> &lines) override {
    if (m.reserve_pages() > 0)
      lines.push_back("sim reservation of " + std::to_string(m.reserve_pages()) + " x " + formatBytes({m.page_size()}) +
                      " hugepages on NUMA node " +
                      (m.numa_node() < 0 ? std::string("(any)") : std::to_string(m.numa_node())) + kNotApplied);
    return true;
  }

  bool makePool(ApplyContext &ctx, const plan::MemoryPool &m, const std::string &name, MadePool &out) override {
    uint64_t pageSize = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    uint64_t bytes = m.pages() * m.page_size();
    int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
    if (fd < 0 || ::ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
      int err = errno;
      if (fd >= 0)
        ::close(fd);
      ctx.diags.report(DiagCode::ERR_EXEC_006) << m.role() << std::to_string(m.pages()) << formatBytes({m.page_size()})
                                               << std::string(fd < 0 ? "memfd_create" : "ftruncate") +
                                                      " (host_backend sim): " + errnoText(err);
      return false;
    }
    out = {fd, bytes, pageSize,
           "sim pool of role " + m.role() + ": " + std::to_string(m.pages()) + " x " + formatBytes({m.page_size()}) +
               " as " + formatBytes({bytes}) + " of " + formatBytes({pageSize}) + " pages (memfd fd " +
               std::to_string(fd) + "; host_backend sim: no hugepages)"};
    return true;
  }

  void release(ApplyContext &) override {}
};

} // namespace

std::unique_ptr<CpuHost> createSimCpuHost() { return std::make_unique<SimCpuHost>(); }
std::unique_ptr<IoHost> createSimIoHost() { return std::make_unique<SimIoHost>(); }
std::unique_ptr<MemoryHost> createSimMemoryHost() { return std::make_unique<SimMemoryHost>(); }

} // namespace msc::exec
