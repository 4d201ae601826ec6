#include "passes/PlanCheck.h"

#include "ir/Units.h"
#include "passes/Lowering.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <map>
#include <set>

namespace msc::passes {

namespace {

std::string hex(uint64_t v) { return "0x" + llvm::utohexstr(v, /*LowerCase=*/true); }
std::string nodeName(llvm::StringRef name) { return name.empty() ? "(unnamed)" : name.str(); }

class PlanChecker {
public:
  PlanChecker(const plan::Plan &plan, const hal::Topology &live, const AdmittedSet &admitted,
              DiagnosticEngine &diags, const RecheckOptions &options)
      : plan_(plan), live_(live), admitted_(admitted), diags_(diags), options_(options) {}

  bool run() {
    unsigned errorsBefore = diags_.errorCount();
    const plan::Provenance &prov = plan_.provenance();
    uint64_t want = prov.topology_fingerprint(), have = live_.fingerprint();
    bool changed = want != have;
    if (changed && prov.topology_name() != live_.name()) {
      diags_.report(DiagCode::ERR_EXEC_001, where())
              .note(Location::none(), "CPUs, NUMA nodes and devices are numbered per machine; recompile the "
                                      "contract with 'mscalec --topology live' on this node")
          << options_.planName << nodeName(prov.topology_name()) << hex(want) << nodeName(live_.name()) << hex(have);
      return false;
    }
    checkCpus();
    checkMemory();
    checkGpus();
    checkRdma();
    checkBlockDevices();
    checkAdmission();
    bool resourcesOk = diags_.errorCount() == errorsBefore;
    if (changed && resourcesOk) {
      if (options_.strictFingerprint)
        diags_.report(DiagCode::ERR_EXEC_002, where())
                .note(Location::none(), "every resource the plan uses is still there; without "
                                        "--strict-fingerprint this is a warning")
            << nodeName(live_.name()) << options_.planName << hex(want) << hex(have);
      else
        diags_.report(DiagCode::WRN_EXEC_001, where())
                .note(Location::none(), "the fingerprint also covers free hugepages and temperatures, which "
                                        "change while the node runs")
            << nodeName(live_.name()) << options_.planName << hex(want) << hex(have);
    } else if (changed && !resourcesOk) {
      diags_.report(DiagCode::ERR_EXEC_002, where())
              .note(Location::none(), "the errors above say what changed; recompile the contract with "
                                      "'mscalec --topology live'")
          << nodeName(live_.name()) << options_.planName << hex(want) << hex(have);
    }
    return diags_.errorCount() == errorsBefore;
  }

private:
  Location where() const { return Location{{}, options_.planName, 0}; }

  void checkNuma(int32_t node, llvm::StringRef what) {
    if (node < 0)
      return;
    if (live_.numaVertex(static_cast<unsigned>(node)) == hal::NoVertex)
      diags_.report(DiagCode::ERR_HAL_NUMA_001, where())
              .note(Location::none(), ("used by " + what).str())
          << static_cast<unsigned>(node);
  }

  void checkCpus() {
    std::set<unsigned> isolated(live_.isolatedCpus().begin(), live_.isolatedCpus().end());
    std::set<unsigned> nohz(live_.nohzFullCpus().begin(), live_.nohzFullCpus().end());
    for (const plan::IoBinding &b : plan_.io_bindings()) {
      checkNuma(b.numa_node(), "role '" + b.role() + "'");
      for (unsigned cpu : b.cpus()) {
        if (!live_.hasPu(cpu)) {
          diags_.report(DiagCode::ERR_HAL_CPU_001, where())
                  .note(Location::none(), "CPUs of this node: " + hal::formatCpuList(live_.pus()))
              << cpu;
          continue;
        }
        if (!live_.isPuOnline(cpu)) {
          diags_.report(DiagCode::ERR_HAL_CPU_002, where())
                  .note(Location::none(), "echo 1 > /sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                                              "/online brings it back")
              << cpu;
          continue;
        }
        if (isolated.count(cpu))
          diags_.report(DiagCode::ERR_HAL_CPU_003, where()) << cpu << b.role() << "isolcpus=";
        else if (nohz.count(cpu))
          diags_.report(DiagCode::ERR_HAL_CPU_003, where()) << cpu << b.role() << "nohz_full=";
        if (b.numa_node() >= 0)
          if (std::optional<unsigned> n = live_.numaNodeOfPu(cpu); n && *n != static_cast<unsigned>(b.numa_node()))
            diags_.report(DiagCode::ERR_HAL_CPU_006, where()) << cpu << b.role() << *n << b.numa_node();
      }
    }
  }

  void checkMemory() {
    for (const plan::MemoryPool &m : plan_.memory_pools()) {
      checkNuma(m.numa_node(), "the hugepage pool of role '" + m.role() + "'");
      std::vector<unsigned> nodes = live_.numaNodes();
      int32_t node = m.numa_node();
      if (node < 0 && nodes.size() == 1)
        node = static_cast<int32_t>(nodes.front());
      if (node < 0 || live_.numaVertex(static_cast<unsigned>(node)) == hal::NoVertex)
        continue;
      std::string pageSize = ir::formatBytes({m.page_size()});
      const hal::NumaInfo *info = live_.numaInfo(static_cast<unsigned>(node));
      bool sizeKnown = false;
      for (const hal::HugepagePool &p : info ? info->hugepages : std::vector<hal::HugepagePool>{})
        sizeKnown |= p.pageSize == m.page_size();
      if (info && !info->hugepages.empty() && !sizeKnown) {
        diags_.report(DiagCode::ERR_HAL_HUGE_001, where()) << pageSize;
        continue;
      }
      std::optional<uint64_t> free = live_.freeHugepages(static_cast<unsigned>(node), m.page_size());
      if (!free) {
        diags_.report(DiagCode::WRN_HAL_HUGE_003, where()) << pageSize << node;
        continue;
      }
      // The live count already excludes the pools of admitted contracts: the executor allocates a
      // pool's pages when it applies the plan, so held pages are not counted twice here.
      if (*free >= m.pages() || (options_.allowReservation && m.reserve_pages() > 0))
        continue;
      auto d = diags_.report(DiagCode::ERR_HAL_HUGE_002, where());
      d.note(Location::none(), "the hugepages were taken since the plan was compiled; cat "
                               "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/hugepages-" +
                               std::to_string(m.page_size() / 1024) + "kB/free_hugepages");
      if (m.reserve_pages() > 0 && !options_.allowReservation)
        d.note(Location::none(), "the plan asks for a reservation but the node config sets "
                                 "hugepages.auto_allocate: false");
      d << m.role() << m.pages() << pageSize << node << *free;
    }
  }

  void checkGpus() {
    for (const plan::GpuSlice &s : plan_.gpu_slices()) {
      checkNuma(s.numa_node(), "GPU " + s.pci_address());
      std::optional<PciAddress> pci = parsePciAddress(s.pci_address());
      std::optional<hal::GpuRef> gpu = pci ? live_.gpuByPci(*pci) : std::nullopt;
      if (!gpu) {
        diags_.report(DiagCode::ERR_HAL_GPU_001, where())
                .note(Location::none(), "role '" + s.role() + "' was placed on GPU " + std::to_string(s.gpu_index()) +
                                            " (" + s.model() + ") at compile time; it is gone")
            << s.pci_address();
        continue;
      }
      const hal::GpuInfo &info = *gpu->info;
      if (info.memoryBytes && s.memory_limit_bytes() > info.memoryBytes)
        diags_.report(DiagCode::ERR_HAL_GPU_004, where())
            << ir::formatBytes({s.memory_limit_bytes()}) << s.pci_address() << ir::formatBytes({info.memoryBytes});
      if (info.smCount && s.gpu_sm_count() && info.smCount < s.sm_count())
        diags_.report(DiagCode::ERR_HAL_GPU_003, where())
            << s.pci_address() << info.smCount << s.slices() << (s.sm_count() / std::max(1u, s.slices()));
    }
  }

  void checkRdma() {
    for (const plan::RdmaSetting &r : plan_.rdma()) {
      checkPort(r.device(), r.port());
      if (!r.failover_device().empty())
        checkPort(r.failover_device(), r.failover_port());
    }
  }

  void checkPort(const std::string &device, unsigned port) {
    const hal::RdmaInfo *info = live_.rdmaDevice(device);
    if (!info) {
      diags_.report(DiagCode::ERR_HAL_RDMA_001, where()) << device;
      return;
    }
    for (const hal::RdmaPort &p : info->ports)
      if (p.number == port || port == 0) {
        if (p.state != "ACTIVE")
          diags_.report(DiagCode::ERR_HAL_RDMA_003, where()) << device + ":" + std::to_string(p.number) << p.state;
        return;
      }
    diags_.report(DiagCode::ERR_HAL_RDMA_002, where()) << device << port;
  }

  void checkBlockDevices() {
    for (const plan::IoBinding &b : plan_.io_bindings())
      if (!b.block_device().empty() && live_.blockDevice(b.block_device()) == hal::NoVertex)
        diags_.report(DiagCode::ERR_HAL_NVME_001, where()) << b.block_device();
  }

  void checkAdmission() {
    const std::string &name = plan_.provenance().contract();
    for (const Holding &h : admitted_.holdings)
      if (h.contract == name) {
        diags_.report(DiagCode::ERR_HAL_ADMIT_005, where())
                .note(Location::none(), "release it first (mscale-cli contract release " + name + ")")
            << name;
        return;
      }
    std::map<unsigned, const Holding *> cores;
    for (const Holding &h : admitted_.holdings)
      for (unsigned core : h.physicalCores)
        cores.emplace(core, &h);
    for (const plan::IoBinding &b : plan_.io_bindings())
      for (unsigned core : b.physical_cores())
        if (auto it = cores.find(core); it != cores.end())
          diags_.report(DiagCode::ERR_HAL_ADMIT_001, where()) << core << b.role() << it->second->contract;
    Holding mine = holdingFromPlan(plan_);
    for (const Holding::Gpu &g : mine.gpus) {
      std::optional<hal::GpuRef> gpu = live_.gpuByPci(g.pci);
      if (!gpu)
        continue;
      unsigned heldSms = 0;
      uint64_t heldMemory = 0;
      const Holding *bySms = nullptr, *byMemory = nullptr;
      unsigned maxSms = 0;
      uint64_t maxMemory = 0;
      for (const Holding &h : admitted_.holdings)
        for (const Holding::Gpu &o : h.gpus)
          if (o.pci == g.pci) {
            heldSms += o.sms;
            heldMemory += o.memoryBytes;
            if (o.sms > maxSms)
              bySms = &h, maxSms = o.sms;
            if (o.memoryBytes > maxMemory)
              byMemory = &h, maxMemory = o.memoryBytes;
          }
      unsigned total = gpu->info->smCount;
      std::string role;
      for (const plan::GpuSlice &s : plan_.gpu_slices())
        if (parsePciAddress(s.pci_address()) == g.pci)
          role = s.role();
      if (total && bySms && heldSms + g.sms > total)
        diags_.report(DiagCode::ERR_HAL_ADMIT_002, where())
            << g.pci.str() << (total > heldSms ? total - heldSms : 0u) << role << g.sms << bySms->contract << maxSms;
      uint64_t memory = gpu->info->memoryBytes;
      if (memory && byMemory && heldMemory + g.memoryBytes > memory)
        diags_.report(DiagCode::ERR_HAL_ADMIT_003, where())
            << g.pci.str() << ir::formatBytes({memory > heldMemory ? memory - heldMemory : 0})
            << ir::formatBytes({g.memoryBytes}) << byMemory->contract << ir::formatBytes({maxMemory});
    }
  }

  const plan::Plan &plan_;
  const hal::Topology &live_;
  const AdmittedSet &admitted_;
  DiagnosticEngine &diags_;
  const RecheckOptions &options_;
};

} // namespace

bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const AdmittedSet &admitted,
                 DiagnosticEngine &diags, const RecheckOptions &options) {
  return PlanChecker(plan, live, admitted, diags, options).run();
}

bool recheckPlan(const plan::Plan &plan, const hal::Topology &live, const AdmittedSet &admitted,
                 DiagnosticEngine &diags) {
  return recheckPlan(plan, live, admitted, diags, RecheckOptions{});
}

} // namespace msc::passes
