// The `sim` GPU backend (see SimGpuBackend.h for the model and the control-file format).
#include "executor/gpu/SimGpuBackend.h"

#include "executor/gpu/GpuBackends.h"
#include "executor/gpu/SliceMath.h"
#include "hal/Topology.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace msc::exec {

struct SimGpuBackend::Gpu {
  SimGpuConfig config;
  SimFault fault = SimFault::None;
  std::vector<DriftStep> drift; // sorted by window
  double temperatureMilliC = 0;
  bool pinned = false;
  std::optional<double> utilisationOverride;
  unsigned usedSms = 0;
  uint64_t window = 0;
};

struct SimGpuBackend::Slice {
  unsigned gpu = 0;
  unsigned sms = 0;
  uint64_t memoryLimit = 0;
  int streamPriority = 0;
  bool mps = false;
  std::string role;
  uint64_t window = 0;
};

namespace {

double driftAt(const std::vector<DriftStep> &schedule, uint64_t window) {
  double factor = 1.0;
  for (const DriftStep &s : schedule)
    if (s.window <= window)
      factor = s.factor;
  return factor;
}

bool parseUnsigned(const std::string &text, uint64_t &out) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  try {
    out = std::stoull(text);
  } catch (...) {
    return false;
  }
  return true;
}

bool parseDouble(const std::string &text, double &out) {
  if (text.empty())
    return false;
  char *end = nullptr;
  out = std::strtod(text.c_str(), &end);
  return end && *end == '\0' && std::isfinite(out);
}

} // namespace

bool parseSimGpuSpec(const std::string &spec, std::vector<SimGpuConfig> &out, std::string &error) {
  std::stringstream groups(spec);
  std::string group;
  unsigned index = static_cast<unsigned>(out.size());
  while (std::getline(groups, group, ',')) {
    if (group.empty())
      continue;
    std::stringstream fields(group);
    std::string field;
    std::vector<std::string> parts;
    while (std::getline(fields, field, ':'))
      parts.push_back(field);
    SimGpuConfig c;
    uint64_t count = 0, sms = 0;
    auto x = parts[0].find('x');
    if (x == std::string::npos || parts[0].size() < x + 3 || parts[0].substr(parts[0].size() - 2) != "sm" ||
        !parseUnsigned(parts[0].substr(0, x), count) ||
        !parseUnsigned(parts[0].substr(x + 1, parts[0].size() - x - 3), sms) || !count || !sms) {
      error = "expected '<count>x<sms>sm' in '" + group + "'";
      return false;
    }
    c.smCount = static_cast<unsigned>(sms);
    for (size_t i = 1; i < parts.size(); ++i) {
      uint64_t gib = 0;
      if (parts[i] == "nogreen")
        c.greenContexts = false;
      else if (parts[i].size() > 1 && parts[i].back() == 'g' &&
               parseUnsigned(parts[i].substr(0, parts[i].size() - 1), gib))
        c.memoryBytes = gib << 30;
      else {
        error = "unknown field '" + parts[i] + "' in '" + group + "' (expected '<GiB>g' or 'nogreen')";
        return false;
      }
    }
    for (uint64_t i = 0; i < count; ++i) {
      c.index = index++;
      out.push_back(c);
    }
  }
  return true;
}

std::vector<SimGpuConfig> simGpusFromTopology(const hal::Topology &topology) {
  std::vector<SimGpuConfig> out;
  for (const hal::GpuRef &g : topology.gpus()) {
    SimGpuConfig c;
    c.index = g.index;
    c.pciAddress = g.info->pci.str();
    if (!g.info->model.empty())
      c.model = g.info->model;
    if (g.info->smCount)
      c.smCount = g.info->smCount;
    if (g.info->memoryBytes)
      c.memoryBytes = g.info->memoryBytes;
    if (g.info->ccMajor > 0 && g.info->ccMajor < 9) // the driver's guideline per architecture
      c.minSmPartition = g.info->ccMajor == 8 ? 4 : 2, c.smAlignment = 2;
    if (g.info->greenContexts)
      c.greenContexts = *g.info->greenContexts;
    if (g.info->temperatureMilliC)
      c.baseTemperatureMilliC = *g.info->temperatureMilliC;
    out.push_back(c);
  }
  return out;
}

SimGpuBackend::SimGpuBackend(std::vector<SimGpuConfig> gpus, std::string controlFile)
    : control_(std::move(controlFile)) {
  for (SimGpuConfig &c : gpus) {
    auto g = std::make_unique<Gpu>();
    g->temperatureMilliC = static_cast<double>(c.baseTemperatureMilliC);
    g->config = std::move(c);
    gpus_.push_back(std::move(g));
  }
}

SimGpuBackend::~SimGpuBackend() = default;

SimGpuBackend::Gpu *SimGpuBackend::gpuAt(unsigned index) {
  for (auto &g : gpus_)
    if (g->config.index == index)
      return g.get();
  return nullptr;
}

const SimGpuBackend::Gpu *SimGpuBackend::gpuAt(unsigned index) const {
  return const_cast<SimGpuBackend *>(this)->gpuAt(index);
}

SimGpuBackend::Gpu *SimGpuBackend::findGpu(const plan::GpuSlice &slice) {
  if (!slice.pci_address().empty())
    for (auto &g : gpus_)
      if (g->config.pciAddress == slice.pci_address())
        return g.get();
  return gpuAt(slice.gpu_index());
}

unsigned SimGpuBackend::granule(unsigned gpu) const {
  std::lock_guard lock(mu_);
  const Gpu *g = gpuAt(gpu);
  return g ? smGranule(g->config.minSmPartition, g->config.smAlignment) : 0;
}

unsigned SimGpuBackend::freeSms(unsigned gpu) const {
  std::lock_guard lock(mu_);
  const Gpu *g = gpuAt(gpu);
  return g ? g->config.smCount - g->usedSms : 0;
}

size_t SimGpuBackend::liveSlices() const {
  std::lock_guard lock(mu_);
  return slices_.size();
}

std::optional<unsigned> SimGpuBackend::sliceSms(SliceId id) const {
  std::lock_guard lock(mu_);
  auto it = slices_.find(id);
  return it == slices_.end() ? std::nullopt : std::optional<unsigned>(it->second.sms);
}

std::optional<unsigned> SimGpuBackend::sliceGpu(SliceId id) const {
  std::lock_guard lock(mu_);
  auto it = slices_.find(id);
  return it == slices_.end() ? std::nullopt : std::optional<unsigned>(it->second.gpu);
}

int64_t SimGpuBackend::temperature(unsigned gpu) const {
  std::lock_guard lock(mu_);
  const Gpu *g = gpuAt(gpu);
  return g ? std::llround(g->temperatureMilliC) : kUnknownTemperature;
}

uint64_t SimGpuBackend::window(unsigned gpu) const {
  std::lock_guard lock(mu_);
  const Gpu *g = gpuAt(gpu);
  return g ? g->window : 0;
}

std::optional<SliceId> SimGpuBackend::createSlice(const plan::GpuSlice &slice, std::string &error) {
  std::lock_guard lock(mu_);
  pollControlFile();
  Gpu *g = findGpu(slice);
  if (!g) {
    error = "sim: no GPU " + std::to_string(slice.gpu_index()) +
            (slice.pci_address().empty() ? "" : " at " + slice.pci_address()) + " (" +
            std::to_string(gpus_.size()) + " sim GPUs)";
    return std::nullopt;
  }
  const SimGpuConfig &c = g->config;
  if (g->fault == SimFault::Lost) {
    error = "sim: GPU " + std::to_string(c.index) + " is lost (injected fault)";
    return std::nullopt;
  }
  if (g->fault == SimFault::CreateFails) {
    error = "sim: slice creation on GPU " + std::to_string(c.index) + " fails (injected fault)";
    return std::nullopt;
  }
  if (slice.mechanism() == plan::GpuSlice::MIG) {
    error = "sim: MIG slices are not modelled";
    return std::nullopt;
  }
  Slice s;
  s.gpu = c.index;
  s.role = slice.role();
  s.memoryLimit = slice.memory_limit_bytes();
  s.streamPriority = slice.stream_priority();
  s.window = g->window;
  unsigned want = requestedSms(slice, c.smCount);
  if (slice.mechanism() == plan::GpuSlice::WHOLE_GPU) {
    s.sms = c.smCount;
  } else if (!c.greenContexts || slice.mechanism() == plan::GpuSlice::MPS) {
    s.mps = true;
    s.sms = std::min(want, c.smCount);
  } else {
    unsigned gr = smGranule(c.minSmPartition, c.smAlignment);
    s.sms = granulesFor(want, gr) * gr;
  }
  if (s.sms > c.smCount - g->usedSms) {
    error = "sim: GPU " + std::to_string(c.index) + " has " + std::to_string(c.smCount - g->usedSms) +
            " free SMs, slice of role '" + slice.role() + "' needs " + std::to_string(s.sms);
    return std::nullopt;
  }
  uint64_t used = 0;
  for (auto &[id, other] : slices_)
    if (other.gpu == c.index)
      used += other.memoryLimit;
  if (s.memoryLimit > c.memoryBytes || used + s.memoryLimit > c.memoryBytes) {
    error = "sim: GPU " + std::to_string(c.index) + " cannot hold a memory limit of " +
            std::to_string(s.memoryLimit) + " bytes (" + std::to_string(c.memoryBytes - std::min(used, c.memoryBytes)) +
            " left)";
    return std::nullopt;
  }
  g->usedSms += s.sms;
  SliceId id = next_++;
  slices_.emplace(id, std::move(s));
  return id;
}

bool SimGpuBackend::resizeSlice(SliceId id, unsigned sms, std::string &error) {
  std::lock_guard lock(mu_);
  pollControlFile();
  auto it = slices_.find(id);
  if (it == slices_.end()) {
    error = "sim: no slice " + std::to_string(id);
    return false;
  }
  Slice &s = it->second;
  Gpu *g = gpuAt(s.gpu);
  if (g->fault == SimFault::Lost) {
    error = "sim: GPU " + std::to_string(s.gpu) + " is lost (injected fault)";
    return false;
  }
  unsigned target = sms;
  if (!s.mps) {
    unsigned gr = smGranule(g->config.minSmPartition, g->config.smAlignment);
    target = granulesFor(sms, gr) * gr;
  }
  if (target > g->config.smCount - g->usedSms + s.sms) {
    error = "sim: GPU " + std::to_string(s.gpu) + " cannot grow the slice to " + std::to_string(target) + " SMs";
    return false;
  }
  g->usedSms = g->usedSms - s.sms + target;
  s.sms = target;
  return true;
}

void SimGpuBackend::destroySlice(SliceId id) {
  std::lock_guard lock(mu_);
  auto it = slices_.find(id);
  if (it == slices_.end())
    return;
  if (Gpu *g = gpuAt(it->second.gpu))
    g->usedSms -= it->second.sms;
  slices_.erase(it);
}

bool SimGpuBackend::heartbeat(SliceId id) {
  std::lock_guard lock(mu_);
  pollControlFile();
  auto it = slices_.find(id);
  if (it == slices_.end())
    return false;
  const Gpu *g = gpuAt(it->second.gpu);
  return g && g->fault != SimFault::Lost;
}

void SimGpuBackend::advanceWindow(Gpu &g) {
  ++g.window;
  if (g.pinned)
    return;
  double busy = 0;
  for (auto &[id, s] : slices_)
    if (s.gpu == g.config.index)
      busy += s.sms * g.utilisationOverride.value_or(g.config.utilisation);
  double util = g.config.smCount ? std::min(1.0, busy / g.config.smCount) : 0;
  double target = double(g.config.baseTemperatureMilliC) + double(g.config.heatPerUtilisationMilliC) * util;
  g.temperatureMilliC += (target - g.temperatureMilliC) * g.config.thermalAlpha;
}

std::optional<SliceSample> SimGpuBackend::sample(SliceId id) {
  std::lock_guard lock(mu_);
  pollControlFile();
  auto it = slices_.find(id);
  if (it == slices_.end())
    return std::nullopt;
  Slice &s = it->second;
  Gpu *g = gpuAt(s.gpu);
  if (!g || g->fault == SimFault::Lost)
    return std::nullopt;
  // The slice's window moves one step per sample; the GPU's window is the furthest any slice got,
  // and the temperature steps once per GPU window.
  uint64_t w = s.window++;
  while (g->window < s.window)
    advanceWindow(*g);
  double util = g->utilisationOverride.value_or(g->config.utilisation);
  SliceSample out;
  out.sms = s.sms;
  out.utilisation = util;
  out.tflops = s.sms * g->config.tflopsPerSm * util * driftAt(g->drift, w);
  // The workload's memory does not follow its SMs: a slice without a limit may use the whole GPU's.
  uint64_t limit = s.memoryLimit ? s.memoryLimit : g->config.memoryBytes;
  out.memoryBytes = static_cast<uint64_t>(double(limit) * g->config.memoryFraction);
  out.temperatureMilliC = std::llround(g->temperatureMilliC);
  return out;
}

std::vector<std::pair<std::string, std::string>> SimGpuBackend::workerEnvironment(SliceId id) {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> env;
  auto it = slices_.find(id);
  if (it == slices_.end())
    return env;
  const Slice &s = it->second;
  const Gpu *g = gpuAt(s.gpu);
  env.emplace_back("MSCALE_GPU_BACKEND", "sim");
  if (s.mps)
    env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(mpsPercentage(s.sms, g->config.smCount)));
  return env;
}

bool SimGpuBackend::injectFault(unsigned gpu, SimFault fault) {
  std::lock_guard lock(mu_);
  Gpu *g = gpuAt(gpu);
  if (g)
    g->fault = fault;
  return g;
}

bool SimGpuBackend::setDensityDrift(unsigned gpu, std::vector<DriftStep> schedule) {
  std::lock_guard lock(mu_);
  Gpu *g = gpuAt(gpu);
  if (!g)
    return false;
  std::stable_sort(schedule.begin(), schedule.end(),
                   [](const DriftStep &a, const DriftStep &b) { return a.window < b.window; });
  g->drift = std::move(schedule);
  return true;
}

bool SimGpuBackend::setTemperature(unsigned gpu, int64_t milliC) {
  std::lock_guard lock(mu_);
  Gpu *g = gpuAt(gpu);
  if (g) {
    g->temperatureMilliC = double(milliC);
    g->pinned = true;
  }
  return g;
}

bool SimGpuBackend::unpinTemperature(unsigned gpu) {
  std::lock_guard lock(mu_);
  Gpu *g = gpuAt(gpu);
  if (g)
    g->pinned = false;
  return g;
}

bool SimGpuBackend::setUtilisation(unsigned gpu, double utilisation) {
  std::lock_guard lock(mu_);
  Gpu *g = gpuAt(gpu);
  if (g)
    g->utilisationOverride = std::clamp(utilisation, 0.0, 1.0);
  return g;
}

bool SimGpuBackend::applyControl(const std::string &line, std::string &error) {
  std::stringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;)
    words.push_back(w);
  if (words.empty() || words[0][0] == '#' || words[0] == "rdma")
    return true; // rdma lines belong to the sim RDMA backend
  uint64_t index = 0;
  if (words[0] != "gpu" || words.size() < 4 || !parseUnsigned(words[1], index)) {
    error = "expected 'gpu <index> <setting> <value>' in '" + line + "'";
    return false;
  }
  unsigned gpu = static_cast<unsigned>(index);
  bool known = false;
  {
    std::lock_guard lock(mu_);
    known = gpuAt(gpu) != nullptr;
  }
  if (!known) {
    error = "no sim GPU " + words[1];
    return false;
  }
  const std::string &what = words[2];
  if (what == "fault") {
    static const std::map<std::string, SimFault> faults = {
        {"none", SimFault::None}, {"lost", SimFault::Lost}, {"create-fails", SimFault::CreateFails}};
    auto f = faults.find(words[3]);
    if (f == faults.end()) {
      error = "unknown fault '" + words[3] + "' (expected none, lost or create-fails)";
      return false;
    }
    return injectFault(gpu, f->second);
  }
  if (what == "temperature") {
    uint64_t mc = 0;
    if (words[3] == "unpin")
      return unpinTemperature(gpu);
    if (!parseUnsigned(words[3], mc)) {
      error = "expected a temperature in millidegrees or 'unpin', got '" + words[3] + "'";
      return false;
    }
    return setTemperature(gpu, int64_t(mc));
  }
  if (what == "utilisation") {
    double u = 0;
    if (!parseDouble(words[3], u) || u < 0 || u > 1) {
      error = "expected a utilisation in 0..1, got '" + words[3] + "'";
      return false;
    }
    return setUtilisation(gpu, u);
  }
  if (what == "drift") {
    std::vector<DriftStep> steps;
    for (size_t i = 3; i < words.size(); ++i) {
      auto colon = words[i].find(':');
      DriftStep s;
      if (colon == std::string::npos || !parseUnsigned(words[i].substr(0, colon), s.window) ||
          !parseDouble(words[i].substr(colon + 1), s.factor) || s.factor < 0) {
        error = "expected '<window>:<factor>', got '" + words[i] + "'";
        return false;
      }
      steps.push_back(s);
    }
    return setDensityDrift(gpu, std::move(steps));
  }
  error = "unknown setting '" + what + "' (expected fault, temperature, utilisation or drift)";
  return false;
}

// Called with mu_ held; applyControl takes the lock itself, so it is released around it.
void SimGpuBackend::pollControlFile() {
  std::optional<std::vector<std::string>> changed = control_.poll();
  if (!changed)
    return;
  std::vector<std::string> lines = std::move(*changed);
  mu_.unlock();
  for (const std::string &line : lines) {
    std::string error;
    applyControl(line, error); // a bad line is skipped; tests check applyControl directly
  }
  mu_.lock();
}

} // namespace msc::exec
