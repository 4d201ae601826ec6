// The `sim` RDMA backend (see SimRdmaBackend.h).
#include "executor/rdma/SimRdmaBackend.h"

#include "executor/rdma/RdmaBackends.h"
#include "hal/Topology.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include <sys/stat.h>

namespace msc::exec {

SimRdmaBackend::SimRdmaBackend(std::vector<SimRdmaPort> ports, std::string controlFile)
    : strict_(!ports.empty()), ports_(std::move(ports)), control_(std::move(controlFile)) {}

SimRdmaPort *SimRdmaBackend::find(const std::string &device, unsigned port) {
  for (SimRdmaPort &p : ports_)
    if (p.device == device && p.port == port)
      return &p;
  if (strict_)
    return nullptr;
  ports_.push_back({device, port, true, "InfiniBand"});
  return &ports_.back();
}

void SimRdmaBackend::setPortState(const std::string &device, unsigned port, bool active) {
  std::lock_guard lock(mu_);
  if (SimRdmaPort *p = find(device, port))
    p->active = active;
}

// Called with mu_ held.
void SimRdmaBackend::pollControlFile() {
  std::optional<std::vector<std::string>> lines = control_.poll();
  if (!lines)
    return;
  for (const std::string &line : *lines) {
    std::stringstream words(line);
    std::string kind, device, state;
    unsigned port = 0;
    if (!(words >> kind >> device >> port >> state) || kind != "rdma" || (state != "up" && state != "down"))
      continue;
    if (SimRdmaPort *p = find(device, port))
      p->active = state == "up";
  }
}

std::optional<QpGroupId> SimRdmaBackend::createQueuePairs(const plan::RdmaSetting &setting, std::string &error) {
  std::lock_guard lock(mu_);
  pollControlFile();
  if (!failNext_.empty()) {
    error = "sim: " + failNext_;
    failNext_.clear();
    return std::nullopt;
  }
  unsigned port = setting.port() ? setting.port() : 1;
  SimRdmaPort *p = find(setting.device(), port);
  if (!p) {
    error = "sim: no RDMA device '" + setting.device() + "' port " + std::to_string(port);
    return std::nullopt;
  }
  if (!setting.link_layer().empty() && !llvm::StringRef(setting.link_layer()).equals_insensitive(p->linkLayer)) {
    error = "sim: port " + std::to_string(port) + " of '" + setting.device() + "' is " + p->linkLayer +
            ", the plan expects " + setting.link_layer();
    return std::nullopt;
  }
  SimQpGroup g;
  g.device = setting.device();
  g.port = port;
  g.queuePairs = setting.queue_pairs() ? setting.queue_pairs() : 1;
  g.maxSendWr = setting.max_outstanding() ? setting.max_outstanding() : 1;
  g.retryCount = ibRetryCount(setting.retry_count());
  g.timeoutExponent = ibTimeoutExponent(setting.timeout_ns());
  g.failoverDevice = setting.failover_device();
  g.failoverPort = setting.failover_port();
  QpGroupId id = next_++;
  groups_.emplace(id, std::move(g));
  return id;
}

void SimRdmaBackend::destroyQueuePairs(QpGroupId id) {
  std::lock_guard lock(mu_);
  groups_.erase(id);
}

bool SimRdmaBackend::portActive(QpGroupId id) {
  std::lock_guard lock(mu_);
  pollControlFile();
  auto it = groups_.find(id);
  if (it == groups_.end())
    return false;
  SimRdmaPort *p = find(it->second.device, it->second.port);
  return p && p->active;
}

bool SimRdmaBackend::failover(QpGroupId id, std::string &error) {
  std::lock_guard lock(mu_);
  pollControlFile();
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    error = "sim: no queue-pair group " + std::to_string(id);
    return false;
  }
  SimQpGroup &g = it->second;
  if (g.failoverDevice.empty() && !g.failoverPort) {
    error = "the plan names no failover port";
    return false;
  }
  std::string device = g.failoverDevice.empty() ? g.device : g.failoverDevice;
  unsigned port = g.failoverPort ? g.failoverPort : 1;
  SimRdmaPort *p = find(device, port);
  if (!p || !p->active) {
    error = "failover port " + std::to_string(port) + " of '" + device + "' is " + (p ? "down" : "missing");
    return false;
  }
  g.device = device;
  g.port = port;
  g.failedOver = true;
  return true;
}

bool SimRdmaBackend::resizeQueuePairs(QpGroupId id, unsigned queuePairs, std::string &error) {
  std::lock_guard lock(mu_);
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    error = "sim: no queue-pair group " + std::to_string(id);
    return false;
  }
  it->second.queuePairs = std::max(1u, queuePairs);
  return true;
}

std::optional<SimQpGroup> SimRdmaBackend::group(QpGroupId id) const {
  std::lock_guard lock(mu_);
  auto it = groups_.find(id);
  return it == groups_.end() ? std::nullopt : std::optional<SimQpGroup>(it->second);
}

size_t SimRdmaBackend::liveGroups() const {
  std::lock_guard lock(mu_);
  return groups_.size();
}

std::unique_ptr<RdmaBackend> createSimRdmaBackend(const BackendOptions &options) {
  std::vector<SimRdmaPort> ports;
  if (options.topology)
    for (hal::VertexId v : options.topology->verticesOf(hal::VertexKind::RdmaDevice)) {
      const hal::Vertex &dev = options.topology->vertex(v);
      if (const auto *info = dev.as<hal::RdmaInfo>())
        for (const hal::RdmaPort &p : info->ports)
          ports.push_back({dev.name, p.number, p.state.empty() || p.state.find("ACTIVE") != std::string::npos,
                           p.linkLayer.empty() ? "InfiniBand" : p.linkLayer});
    }
  std::string control = options.simControlFile;
  if (control.empty())
    if (const char *v = std::getenv("MSCALE_SIM_CONTROL"))
      control = v;
  return std::make_unique<SimRdmaBackend>(std::move(ports), std::move(control));
}

} // namespace msc::exec
