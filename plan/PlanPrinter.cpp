// Human views of a plan: a readable dump, the JSON mapping, and a settings-level diff.
#include "plan/PlanFile.h"
#include "support/Units.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/reflection.h>
#include <google/protobuf/util/json_util.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>

#include <map>

namespace msc::plan {

namespace {

std::string cpuList(const google::protobuf::RepeatedField<uint32_t> &cpus) {
  std::string out;
  for (int i = 0; i < cpus.size();) {
    int j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1)
      ++j;
    out += (out.empty() ? "" : ",") + std::to_string(cpus[i]);
    if (j > i)
      out += "-" + std::to_string(cpus[j]);
    i = j + 1;
  }
  return out.empty() ? "-" : out;
}

std::string numa(int32_t node) { return node < 0 ? "?" : std::to_string(node); }

llvm::StringRef mechanismName(GpuSlice::Mechanism m) {
  switch (m) {
  case GpuSlice::GREEN_CONTEXT: return "green-context";
  case GpuSlice::MPS: return "mps";
  case GpuSlice::MIG: return "mig";
  case GpuSlice::WHOLE_GPU: return "whole-gpu";
  default: return "unspecified";
  }
}

// What placement bound for a request that named no device, and why.
std::string bound(const std::string &why) { return why.empty() ? "" : " (bound: " + why + ")"; }

} // namespace

void dumpPlan(const Plan &plan, llvm::raw_ostream &os) {
  const Provenance &p = plan.provenance();
  os << "plan for contract '" << p.contract() << "' (format " << plan.format_major() << "." << plan.format_minor()
     << ")\n";
  os << "  source     " << p.source_file() << " " << llvm::format_hex(p.source_hash(), 18) << "\n";
  os << "  compiler   " << p.compiler_version() << "\n";
  os << "  topology   " << (p.topology_name().empty() ? "(unnamed)" : p.topology_name()) << " "
     << llvm::format_hex(p.topology_fingerprint(), 18) << "\n";
  if (p.min_nodes() && p.min_nodes() < p.nodes())
    os << "  nodes      " << p.min_nodes() << ".." << p.nodes() << " (elastic; this plan is one node's)\n";
  else if (p.nodes() > 1)
    os << "  nodes      " << p.nodes() << " (this plan is one node's)\n";
  if (!p.profile().empty()) {
    os << "  profile    " << p.profile();
    if (p.profile_chain_size() > 1) {
      os << " (";
      for (int i = 0; i < p.profile_chain_size(); ++i)
        os << (i ? " <- " : "") << p.profile_chain(i);
      os << ")";
    }
    os << "\n";
  }
  if (plan.cpu_weight())
    os << "  cpu weight " << plan.cpu_weight() << "\n";
  if (plan.gpu_slices_size()) {
    os << "gpu slices\n";
    for (const GpuSlice &s : plan.gpu_slices()) {
      os << "  " << s.role() << ": GPU " << s.gpu_index() << " " << s.pci_address();
      if (!s.model().empty())
        os << " \"" << s.model() << "\"";
      os << ", " << s.slices() << "/" << s.slices_per_gpu() << " slices";
      if (s.sm_count())
        os << " = " << s.sm_count() << " of " << s.gpu_sm_count() << " SMs";
      if (s.memory_limit_bytes())
        os << ", memory limit " << formatBytes({s.memory_limit_bytes()});
      os << ", priority " << s.stream_priority() << ", " << mechanismName(s.mechanism()) << ", numa "
         << numa(s.numa_node()) << bound(s.bound()) << "\n";
    }
  }
  if (plan.io_bindings_size()) {
    os << "io bindings\n";
    for (const IoBinding &b : plan.io_bindings()) {
      os << "  " << b.role() << ": cpus " << cpuList(b.cpus()) << " (cores " << cpuList(b.physical_cores())
         << "), numa " << numa(b.numa_node());
      if (b.threads())
        os << ", " << b.threads() << " threads";
      if (!b.block_device().empty())
        os << ", " << b.block_device() << (b.block_pci().empty() ? "" : " @ " + b.block_pci());
      if (b.io_uring_depth())
        os << ", io_uring depth " << b.io_uring_depth();
      if (b.io_weight())
        os << ", io weight " << b.io_weight();
      if (b.io_limit_bps())
        os << ", io limit " << formatBandwidth({b.io_limit_bps()});
      if (!b.decoder().empty())
        os << ", decoder " << b.decoder();
      if (b.gpu_direct_storage())
        os << ", gds";
      os << bound(b.cpus_bound()) << "\n";
    }
  }
  if (plan.memory_pools_size()) {
    os << "memory pools\n";
    for (const MemoryPool &m : plan.memory_pools()) {
      os << "  " << m.role() << ": " << m.pages() << " x " << formatBytes({m.page_size()}) << " hugepages on numa "
         << numa(m.numa_node());
      if (m.reserve_pages())
        os << ", reserve " << m.reserve_pages() << " first";
      os << "\n";
    }
  }
  if (plan.rdma_size()) {
    os << "rdma\n";
    for (const RdmaSetting &r : plan.rdma()) {
      os << "  " << r.role() << ": " << r.device() << ":" << r.port() << " " << r.link_layer() << ", "
         << r.queue_pairs() << " QPs, " << r.max_outstanding() << " outstanding WRs, retry " << r.retry_count()
         << ", timeout " << formatDuration({r.timeout_ns()}) << ", numa " << numa(r.numa_node());
      if (!r.failover_device().empty())
        os << ", failover " << r.failover_device() << ":" << r.failover_port();
      os << bound(r.bound()) << "\n";
    }
  }
  const FaultTolerance &ft = plan.fault_tolerance();
  os << "fault tolerance\n  snapshot ";
  if (ft.snapshot_every_steps())
    os << "every " << ft.snapshot_every_steps() << " steps";
  else if (ft.snapshot_interval_ns())
    os << "every " << formatDuration({ft.snapshot_interval_ns()});
  else
    os << "never";
  os << ", keep " << ft.keep_snapshots() << ", capture:";
  if (ft.data_loader_offsets())
    os << " data-loader-offsets";
  if (ft.rng_state())
    os << " rng";
  if (ft.loss_scale())
    os << " loss-scale";
  if (ft.lr_scheduler())
    os << " lr-scheduler";
  os << "\n  heartbeat " << formatDuration({ft.heartbeat_ns()}) << " x " << ft.heartbeat_misses() << " misses"
     << (ft.in_memory_tier() ? ", in-memory tier" : "") << (ft.standby_worker() ? ", warm standby worker" : "")
     << "\n";
  const ScalingPolicy &s = plan.scaling();
  os << "scaling\n  target density " << llvm::format("%.3g", s.target_density()) << " TFLOP/s/GB, deviation "
     << formatPercent({s.deviation_ppm()}) << " over " << s.windows() << " x " << formatDuration({s.window_ns()})
     << ", cooldown " << formatDuration({s.cooldown_ns()}) << "\n  scale up below "
     << formatTemperature({s.scale_up_below_mc()}) << ", throttle at " << formatTemperature({s.throttle_at_mc()})
     << ", hysteresis " << formatTemperature({s.hysteresis_mc()});
  if (s.max_sm_slices())
    os << ", slices " << s.min_sm_slices() << ".." << s.max_sm_slices();
  os << "\n";
  if (plan.has_lending()) {
    const Lending &l = plan.lending();
    os << "lending\n  reclaim within " << formatDuration({l.reclaim_within_ns()}) << ", lead "
       << (l.lead_auto() ? std::string("auto") : formatDuration({l.lead_ns()})) << "\n";
    for (const Phase &phase : l.phases()) {
      os << "  phase " << phase.name() << ": ";
      switch (phase.trigger()) {
      case Phase::STEPS: os << "every " << phase.every_steps() << " steps for " << phase.for_steps() << " steps"; break;
      case Phase::WALL_TIME:
        os << formatDuration({phase.from_ns()}) << ".." << formatDuration({phase.to_ns()}) << " into the job";
        break;
      default: os << "entered by the worker"; break;
      }
      os << "; keeps";
      bool any = false;
      for (const Phase::Use &u : phase.uses()) {
        if (u.exclusive().empty())
          continue;
        os << (any ? ";" : "") << " " << u.role() << " " << llvm::join(u.exclusive(), ",");
        any = true;
      }
      os << (any ? "" : " nothing") << "\n";
    }
  }
  if (plan.has_borrow()) {
    const Borrow &b = plan.borrow();
    os << "borrower (class opportunistic): " << b.cpu_cores() << " CPU cores, "
       << (b.memory_bytes() ? formatBytes({b.memory_bytes()}) : std::string("no memory limit")) << ", "
       << b.gpu_sm_slices() << " SM slices, " << b.rdma_queue_pairs() << " RDMA queue pairs, on what other "
       << "contracts lend\n";
  }
}

std::string planToJson(const Plan &plan) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(plan, &json, options);
  return json;
}

namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

std::string scalarText(const Message &m, const Reflection &r, const FieldDescriptor *f, int index) {
  bool repeated = f->is_repeated();
  switch (f->cpp_type()) {
  case FieldDescriptor::CPPTYPE_INT32: return std::to_string(repeated ? r.GetRepeatedInt32(m, f, index) : r.GetInt32(m, f));
  case FieldDescriptor::CPPTYPE_INT64: return std::to_string(repeated ? r.GetRepeatedInt64(m, f, index) : r.GetInt64(m, f));
  case FieldDescriptor::CPPTYPE_UINT32:
    return std::to_string(repeated ? r.GetRepeatedUInt32(m, f, index) : r.GetUInt32(m, f));
  case FieldDescriptor::CPPTYPE_UINT64:
    return std::to_string(repeated ? r.GetRepeatedUInt64(m, f, index) : r.GetUInt64(m, f));
  case FieldDescriptor::CPPTYPE_DOUBLE: {
    std::string out;
    llvm::raw_string_ostream os(out);
    os << llvm::format("%g", repeated ? r.GetRepeatedDouble(m, f, index) : r.GetDouble(m, f));
    return out;
  }
  case FieldDescriptor::CPPTYPE_FLOAT: return std::to_string(repeated ? r.GetRepeatedFloat(m, f, index) : r.GetFloat(m, f));
  case FieldDescriptor::CPPTYPE_BOOL: return (repeated ? r.GetRepeatedBool(m, f, index) : r.GetBool(m, f)) ? "true" : "false";
  case FieldDescriptor::CPPTYPE_ENUM: return (repeated ? r.GetRepeatedEnum(m, f, index) : r.GetEnum(m, f))->name();
  case FieldDescriptor::CPPTYPE_STRING: return "\"" + (repeated ? r.GetRepeatedString(m, f, index) : r.GetString(m, f)) + "\"";
  case FieldDescriptor::CPPTYPE_MESSAGE: break;
  }
  return "";
}

// Flattens a message into "path = value" settings. Repeated messages with a `role` field are keyed
// by role (so reordering is no change); others by index.
void flatten(const Message &m, const std::string &prefix, std::map<std::string, std::string> &out) {
  const Reflection &r = *m.GetReflection();
  const auto *d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor *f = d->field(i);
    std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    if (f->is_repeated()) {
      int n = r.FieldSize(m, f);
      if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        std::map<std::string, int> seen;
        for (int k = 0; k < n; ++k) {
          const Message &child = r.GetRepeatedMessage(m, f, k);
          const FieldDescriptor *role = child.GetDescriptor()->FindFieldByName("role");
          std::string key = role ? child.GetReflection()->GetString(child, role) : std::to_string(k);
          if (int dup = seen[key]++)
            key += "#" + std::to_string(dup);
          flatten(child, path + "[" + key + "]", out);
        }
      } else if (n) {
        std::string joined;
        for (int k = 0; k < n; ++k)
          joined += (k ? "," : "") + scalarText(m, r, f, k);
        out[path] = joined;
      }
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (r.HasField(m, f))
        flatten(r.GetMessage(m, f), path, out);
      continue;
    }
    out[path] = scalarText(m, r, f, 0);
  }
}

} // namespace

bool diffPlans(const Plan &before, const Plan &after, llvm::raw_ostream &os) {
  std::map<std::string, std::string> a, b;
  flatten(before, "", a);
  flatten(after, "", b);
  unsigned added = 0, removed = 0, changed = 0;
  auto ia = a.begin(), ib = b.begin();
  while (ia != a.end() || ib != b.end()) {
    if (ib == b.end() || (ia != a.end() && ia->first < ib->first)) {
      os << "- " << ia->first << " = " << ia->second << "\n";
      ++removed, ++ia;
    } else if (ia == a.end() || ib->first < ia->first) {
      os << "+ " << ib->first << " = " << ib->second << "\n";
      ++added, ++ib;
    } else {
      if (ia->second != ib->second) {
        os << "~ " << ia->first << ": " << ia->second << " -> " << ib->second << "\n";
        ++changed;
      }
      ++ia, ++ib;
    }
  }
  os << "plan: " << added << " to add, " << changed << " to change, " << removed << " to remove\n";
  return added + removed + changed != 0;
}

} // namespace msc::plan
