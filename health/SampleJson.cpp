// A sample as JSON and back, for `hardware health --state FILE`; see Sample.h.
#include "health/Sample.h"

namespace msc::health {

namespace json = llvm::json;

json::Value sampleToJson(const Sample &s) {
  json::Array thermal, rdma, edac, pools, nvme, gpus, xids, klog, malformed, notes;
  for (const ThermalReading &t : s.thermal) {
    json::Object o{{"name", t.name}, {"path", t.path}, {"temp_mc", t.tempMilliC}};
    if (t.limitMilliC)
      o["limit_mc"] = *t.limitMilliC;
    thermal.push_back(std::move(o));
  }
  for (const RdmaReading &r : s.rdma) {
    json::Object counters;
    for (auto &[name, value] : r.errorCounters)
      counters[name] = int64_t(value);
    rdma.push_back(json::Object{{"device", r.device},
                                {"port", int64_t(r.port)},
                                {"path", r.path},
                                {"state", r.state},
                                {"error_counters", std::move(counters)}});
  }
  for (const EdacReading &e : s.edac)
    edac.push_back(json::Object{{"controller", e.controller},
                                {"path", e.path},
                                {"ce_count", int64_t(e.corrected)},
                                {"ue_count", int64_t(e.uncorrected)}});
  for (const HugepageReading &h : s.hugepages)
    pools.push_back(json::Object{{"numa_node", int64_t(h.numaNode)},
                                 {"page_size", int64_t(h.pageSize)},
                                 {"path", h.path},
                                 {"total", int64_t(h.total)}});
  for (const NvmeReading &n : s.nvme)
    nvme.push_back(json::Object{{"controller", n.controller},
                                {"path", n.path},
                                {"critical_warning", int64_t(n.criticalWarning)},
                                {"available_spare", int64_t(n.availableSpare)},
                                {"spare_threshold", int64_t(n.spareThreshold)},
                                {"media_errors", int64_t(n.mediaErrors)}});
  for (const GpuMemoryReading &g : s.gpus) {
    json::Object o{{"pci", g.pci},
                   {"library", g.library},
                   {"retirement_pending", g.retirementPending},
                   {"remap_pending", g.remapPending},
                   {"remap_failed", g.remapFailed}};
    if (g.eccCorrected)
      o["ecc_corrected"] = int64_t(*g.eccCorrected);
    if (g.eccUncorrected)
      o["ecc_uncorrected"] = int64_t(*g.eccUncorrected);
    gpus.push_back(std::move(o));
  }
  for (const GpuXidReading &x : s.gpuXids)
    xids.push_back(json::Object{{"pci", x.pci},
                                {"library", x.library},
                                {"xid", int64_t(x.xid)},
                                {"events", int64_t(x.events)},
                                {"first_ns", int64_t(x.firstNs)},
                                {"last_ns", int64_t(x.lastNs)}});
  for (const KernelLogClass &k : s.kernelLog)
    klog.push_back(json::Object{{"class", k.name}, {"lines", int64_t(k.lines)}, {"last", k.last}});
  for (const Malformed &m : s.malformed)
    malformed.push_back(json::Object{{"path", m.path}, {"text", m.text}, {"expected", m.expected}});
  for (const std::string &n : s.notes)
    notes.push_back(n);
  json::Object out{{"monotonic_ns", int64_t(s.monotonicNs)},
                   {"thermal", std::move(thermal)},
                   {"rdma", std::move(rdma)},
                   {"edac", std::move(edac)},
                   {"hugepages", std::move(pools)},
                   {"nvme", std::move(nvme)},
                   {"gpus", std::move(gpus)},
                   {"gpu_xids", std::move(xids)},
                   {"kernel_log", std::move(klog)},
                   {"malformed", std::move(malformed)},
                   {"notes", std::move(notes)}};
  if (s.kernelLogPath)
    out["kernel_log_path"] = *s.kernelLogPath;
  return out;
}

namespace {

// Reads fields with a path for the message; the first problem wins.
class Reader {
public:
  template <typename T> void num(const json::Object &o, llvm::StringRef key, T &out) {
    std::optional<int64_t> v = o.getInteger(key);
    if (!v || *v < 0) {
      fail("'" + key.str() + "' is not a non-negative integer");
      return;
    }
    out = T(*v);
  }
  void str(const json::Object &o, llvm::StringRef key, std::string &out) {
    std::optional<llvm::StringRef> v = o.getString(key);
    if (!v) {
      fail("'" + key.str() + "' is not a string");
      return;
    }
    out = v->str();
  }
  template <typename F> void each(const json::Object &o, llvm::StringRef key, F f) {
    const json::Array *a = o.getArray(key);
    if (!a) {
      fail("'" + key.str() + "' is not an array");
      return;
    }
    for (const json::Value &v : *a) {
      const json::Object *item = v.getAsObject();
      if (!item) {
        fail("an item of '" + key.str() + "' is not an object");
        return;
      }
      f(*item);
    }
  }
  void fail(std::string why) {
    if (error.empty())
      error = std::move(why);
  }
  std::string error;
};

} // namespace

llvm::Expected<Sample> sampleFromJson(const json::Value &value) {
  const json::Object *o = value.getAsObject();
  if (!o)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "a sample is not an object");
  Sample s;
  Reader r;
  r.num(*o, "monotonic_ns", s.monotonicNs);
  r.each(*o, "thermal", [&](const json::Object &t) {
    ThermalReading x;
    r.str(t, "name", x.name);
    r.str(t, "path", x.path);
    x.tempMilliC = t.getInteger("temp_mc").value_or(0);
    x.limitMilliC = t.getInteger("limit_mc");
    s.thermal.push_back(std::move(x));
  });
  r.each(*o, "rdma", [&](const json::Object &p) {
    RdmaReading x;
    r.str(p, "device", x.device);
    r.num(p, "port", x.port);
    r.str(p, "path", x.path);
    r.str(p, "state", x.state);
    if (const json::Object *c = p.getObject("error_counters"))
      for (auto &[name, v] : *c) {
        std::optional<int64_t> n = v.getAsInteger();
        if (!n || *n < 0)
          r.fail("counter '" + name.str() + "' is not a non-negative integer");
        else
          x.errorCounters[name.str()] = uint64_t(*n);
      }
    else
      r.fail("'error_counters' is not an object");
    s.rdma.push_back(std::move(x));
  });
  r.each(*o, "edac", [&](const json::Object &e) {
    EdacReading x;
    r.str(e, "controller", x.controller);
    r.str(e, "path", x.path);
    r.num(e, "ce_count", x.corrected);
    r.num(e, "ue_count", x.uncorrected);
    s.edac.push_back(std::move(x));
  });
  r.each(*o, "hugepages", [&](const json::Object &h) {
    HugepageReading x;
    r.num(h, "numa_node", x.numaNode);
    r.num(h, "page_size", x.pageSize);
    r.str(h, "path", x.path);
    r.num(h, "total", x.total);
    s.hugepages.push_back(std::move(x));
  });
  r.each(*o, "nvme", [&](const json::Object &n) {
    NvmeReading x;
    r.str(n, "controller", x.controller);
    r.str(n, "path", x.path);
    r.num(n, "critical_warning", x.criticalWarning);
    r.num(n, "available_spare", x.availableSpare);
    r.num(n, "spare_threshold", x.spareThreshold);
    r.num(n, "media_errors", x.mediaErrors);
    s.nvme.push_back(std::move(x));
  });
  // Absent in a state file kept before GPUs were read: none then.
  if (o->get("gpus"))
    r.each(*o, "gpus", [&](const json::Object &g) {
      GpuMemoryReading x;
      r.str(g, "pci", x.pci);
      r.str(g, "library", x.library);
      for (auto [key, flag] : {std::pair{"retirement_pending", &x.retirementPending},
                               std::pair{"remap_pending", &x.remapPending}, std::pair{"remap_failed", &x.remapFailed}})
        if (std::optional<bool> b = g.getBoolean(key))
          *flag = *b;
        else
          r.fail("'" + std::string(key) + "' is not a boolean");
      for (auto [key, counter] : {std::pair{"ecc_corrected", &x.eccCorrected}, std::pair{"ecc_uncorrected", &x.eccUncorrected}})
        if (g.get(key)) {
          uint64_t n = 0;
          r.num(g, key, n);
          *counter = n;
        }
      s.gpus.push_back(std::move(x));
    });
  // Absent in a state file kept before Xid events were read through NVML: none then.
  if (o->get("gpu_xids"))
    r.each(*o, "gpu_xids", [&](const json::Object &g) {
      GpuXidReading x;
      r.str(g, "pci", x.pci);
      r.str(g, "library", x.library);
      r.num(g, "xid", x.xid);
      r.num(g, "events", x.events);
      r.num(g, "first_ns", x.firstNs);
      r.num(g, "last_ns", x.lastNs);
      s.gpuXids.push_back(std::move(x));
    });
  r.each(*o, "kernel_log", [&](const json::Object &k) {
    KernelLogClass x;
    r.str(k, "class", x.name);
    r.num(k, "lines", x.lines);
    r.str(k, "last", x.last);
    s.kernelLog.push_back(std::move(x));
  });
  if (std::optional<llvm::StringRef> p = o->getString("kernel_log_path"))
    s.kernelLogPath = p->str();
  if (!r.error.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), r.error);
  return s;
}

} // namespace msc::health
