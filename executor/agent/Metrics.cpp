#include "executor/agent/Metrics.h"

#include "executor/client/AgentClient.h"
#include "executor/lending/ReclaimLedger.h"

#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace msc::exec {

namespace {

std::string label(const std::string &v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"')
      out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

} // namespace

std::string renderMetrics(const std::vector<agent::ContractStatus> &contracts,
                          const std::map<std::string, uint64_t> &requests,
                          const std::map<std::string, uint64_t> &refusals,
                          const agent::LoansResponse *loans) {
  std::string text;
  llvm::raw_string_ostream os(text);
  auto head = [&](const char *name, const char *type, const char *help) {
    os << "# HELP " << name << " " << help << "\n# TYPE " << name << " " << type << "\n";
  };
  head("mscale_contracts_admitted", "gauge", "Contracts admitted on this node");
  os << "mscale_contracts_admitted " << contracts.size() << "\n";
  head("mscale_contract_applied", "gauge", "1 when the contract's resources are applied");
  for (const agent::ContractStatus &c : contracts)
    os << "mscale_contract_applied{contract=\"" << label(c.contract()) << "\"} " << (c.applied() ? 1 : 0) << "\n";
  head("mscale_contract_worker", "gauge", "Worker state of the contract (1 for the current state)");
  for (const agent::ContractStatus &c : contracts)
    os << "mscale_contract_worker{contract=\"" << label(c.contract()) << "\",state=\""
       << workerStateName(c.worker().state()) << "\"} 1\n";
  head("mscale_contract_io_wait_ratio", "gauge", "PSI io 'some' avg10 of the contract's cgroup, 0..1");
  for (const agent::ContractStatus &c : contracts)
    if (c.io_wait_ratio() >= 0)
      os << "mscale_contract_io_wait_ratio{contract=\"" << label(c.contract()) << "\"} "
         << llvm::format("%.4f", c.io_wait_ratio()) << "\n";
  head("mscale_contract_gpu_utilisation", "gauge", "GPU slice utilisation reported by the backend, 0..1");
  for (const agent::ContractStatus &c : contracts)
    for (const agent::GpuUtilisation &g : c.gpus())
      os << "mscale_contract_gpu_utilisation{contract=\"" << label(c.contract()) << "\",role=\"" << label(g.role())
         << "\",backend=\"" << label(g.backend()) << "\"} " << llvm::format("%.4f", g.utilisation()) << "\n";
  auto gpuSeries = [&](const char *name, auto value) {
    for (const agent::ContractStatus &c : contracts)
      for (const agent::GpuUtilisation &g : c.gpus())
        os << name << "{contract=\"" << label(c.contract()) << "\",role=\"" << label(g.role()) << "\",backend=\""
           << label(g.backend()) << "\"} " << value(g) << "\n";
  };
  head("mscale_contract_gpu_tflops", "gauge", "TFLOP/s a GPU slice achieved over the monitor's last window");
  gpuSeries("mscale_contract_gpu_tflops", [](const agent::GpuUtilisation &g) { return llvm::format("%.4f", g.tflops()); });
  head("mscale_contract_gpu_memory_bytes", "gauge", "GPU slice memory in use");
  gpuSeries("mscale_contract_gpu_memory_bytes", [](const agent::GpuUtilisation &g) { return g.memory_bytes(); });
  head("mscale_contract_gpu_compute_density", "gauge",
       "TFLOP/s per GB of slice memory, the resize policy's measure (0 when no work was measured)");
  gpuSeries("mscale_contract_gpu_compute_density",
            [](const agent::GpuUtilisation &g) { return llvm::format("%.4f", g.compute_density()); });
  head("mscale_contract_gpu_temperature_celsius", "gauge", "Temperature of the GPU a slice is on");
  gpuSeries("mscale_contract_gpu_temperature_celsius",
            [](const agent::GpuUtilisation &g) { return llvm::format("%.3f", double(g.temperature_mc()) / 1000); });
  head("mscale_contract_rdma_retries_total", "counter",
       "Retries on an RDMA port a contract uses (hw_counters local_ack_timeout_err + rnr_nak_retry_err)");
  for (const agent::ContractStatus &c : contracts)
    for (const agent::RdmaRetries &r : c.rdma())
      if (r.available())
        os << "mscale_contract_rdma_retries_total{contract=\"" << label(c.contract()) << "\",role=\"" << label(r.role())
           << "\",port=\"" << label(r.port()) << "\"} " << r.retries_total() << "\n";
  head("mscale_contract_events_total", "counter", "Supervision events of a contract (fault, recovered, resize, ...)");
  for (const agent::ContractStatus &c : contracts) {
    std::map<std::string, uint64_t> kinds;
    for (const agent::HistoryEntry &h : c.history())
      ++kinds[h.kind()];
    for (auto &[kind, n] : kinds)
      os << "mscale_contract_events_total{contract=\"" << label(c.contract()) << "\",kind=\"" << label(kind) << "\"} "
         << n << "\n";
  }
  if (loans) {
    auto seconds = [](uint64_t ns) { return llvm::format("%.6f", double(ns) / 1e9); };
    head("mscale_lending_lent_core_seconds_total", "counter",
         "Core-seconds the contracts with phases lent to borrowers on this node");
    os << "mscale_lending_lent_core_seconds_total " << seconds(loans->lent_core_ns()) << "\n";
    head("mscale_lending_lent_gpu_unit_seconds_total", "counter",
         "GPU unit-seconds (SM slices) the contracts with phases lent to borrowers on this node");
    os << "mscale_lending_lent_gpu_unit_seconds_total " << seconds(loans->lent_gpu_unit_ns()) << "\n";
    head("mscale_lending_lent_queue_pair_seconds_total", "counter",
         "RDMA queue-pair-seconds the contracts with phases lent to borrowers on this node");
    os << "mscale_lending_lent_queue_pair_seconds_total " << seconds(loans->lent_queue_pair_ns()) << "\n";
    head("mscale_lending_yield_requests_total", "counter",
         "Requests to borrowers that cooperate to yield what they were lent, before they are frozen");
    os << "mscale_lending_yield_requests_total " << loans->yields().asked() << "\n";
    head("mscale_lending_yield_outcomes_total", "counter",
         "How requests to yield ended: yielded in time, expired (frozen when the time was up), withdrawn");
    for (auto [outcome, n] : {std::pair<const char *, uint64_t>{"yielded", loans->yields().yielded()},
                              {"expired", loans->yields().expired()},
                              {"withdrawn", loans->yields().withdrawn()}})
      os << "mscale_lending_yield_outcomes_total{outcome=\"" << outcome << "\"} " << n << "\n";
    head("mscale_lending_harvested_core_seconds_total", "counter",
         "CPU time a borrower ran on what was lent to it (its cgroup's count)");
    for (const agent::ContractStatus &c : contracts)
      if (c.lending().borrower() && c.lending().cpu_ns_known())
        os << "mscale_lending_harvested_core_seconds_total{borrower=\"" << label(c.contract()) << "\"} "
           << seconds(c.lending().cpu_ns()) << "\n";
    auto ownerSeries = [&](const char *name, const char *type, const char *help, auto value) {
      head(name, type, help);
      for (const agent::ContractStatus &c : contracts)
        if (c.has_lending() && !c.lending().borrower())
          os << name << "{owner=\"" << label(c.contract()) << "\"} " << value(c.lending()) << "\n";
    };
    ownerSeries("mscale_lending_phase_entries_total", "counter", "Phase entries of an owner that keep CPUs",
                [](const agent::Lending &l) { return l.entries(); });
    ownerSeries("mscale_lending_reclaims_total", "counter",
                "Phase entries that found a CPU the phase keeps lent, and waited for it",
                [](const agent::Lending &l) { return l.reclaims(); });
    ownerSeries("mscale_lending_missed_deadlines_total", "counter",
                "Reclaims that took longer than the owner's reclaim_within",
                [](const agent::Lending &l) { return l.missed(); });
    head("mscale_lending_reclaim_latency_seconds", "histogram",
         "From a phase entry until the CPUs it keeps were home (0 when taken back ahead of it)");
    for (const agent::ContractStatus &c : contracts) {
      const agent::Lending &l = c.lending();
      if (!c.has_lending() || l.borrower())
        continue;
      std::string owner = label(c.contract());
      uint64_t cumulative = 0;
      for (size_t b = 0; b < lending::kReclaimBuckets; ++b) {
        cumulative += b < size_t(l.reclaim_buckets_size()) ? l.reclaim_buckets(int(b)) : 0;
        os << "mscale_lending_reclaim_latency_seconds_bucket{owner=\"" << owner << "\",le=\"";
        if (b + 1 < lending::kReclaimBuckets)
          os << llvm::format("%g", double(lending::kReclaimBucketsNs[b]) / 1e9);
        else
          os << "+Inf";
        os << "\"} " << cumulative << "\n";
      }
      os << "mscale_lending_reclaim_latency_seconds_sum{owner=\"" << owner << "\"} " << seconds(l.reclaim_sum_ns())
         << "\n";
      os << "mscale_lending_reclaim_latency_seconds_count{owner=\"" << owner << "\"} " << cumulative << "\n";
    }
  }
  head("mscale_agent_requests_total", "counter", "Requests handled, by kind");
  for (auto &[k, v] : requests)
    os << "mscale_agent_requests_total{kind=\"" << label(k) << "\"} " << v << "\n";
  head("mscale_agent_refusals_total", "counter", "Connections or frames refused, by error code");
  for (auto &[k, v] : refusals)
    os << "mscale_agent_refusals_total{code=\"" << label(k) << "\"} " << v << "\n";
  os.flush();
  return text;
}

} // namespace msc::exec
