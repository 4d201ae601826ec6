// Wiring of the registration and the assignment watcher into the agent's loop.
#include "cluster/agent/ClusterAgent.h"

#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "support/Version.h"

namespace msc::cluster {

ClusterAgent::ClusterAgent(ClusterAgentOptions options, exec::Logger &log) : options_(std::move(options)), log_(log) {}

ClusterAgent::~ClusterAgent() {
  watcher_.reset();
  registration_.reset(); // revokes the lease: the node leaves the cluster now, not after the TTL
}

bool ClusterAgent::start(exec::NodeLedger &ledger) {
  etcd::Result<std::vector<std::string>> endpoints = etcd::parseEndpoints(options_.endpoints);
  if (!endpoints) {
    log_.error("", endpoints.status().str());
    return false;
  }
  etcd::ClientOptions co;
  co.endpoints = *endpoints;
  etcd::Result<std::unique_ptr<etcd::EtcdClient>> client = etcd::EtcdClient::connect(co);
  if (!client) {
    log_.error("", client.status().str());
    return false;
  }
  client_ = std::move(*client);

  exec::LogDiagnosticPrinter printer(log_);
  DiagnosticEngine diags(nullptr, printer);
  std::optional<hal::Topology> topology =
      hal::loadTopology(hal::TopologySource::fromArgument(options_.topology), diags);
  if (!topology)
    return false;
  // The node is its registration: the controller compiles plans for a topology of this name, and
  // the ledger re-checks them against one (LedgerOptions::nodeName).
  topology->setName(options_.node);
  RegistrationOptions ro;
  ro.node = options_.node;
  ro.value = Registration{kVersion, hal::writeTopologyYaml(*topology)};
  ro.ttlSeconds = options_.leaseTtlSeconds;
  registration_ = std::make_unique<NodeRegistration>(*client_, ro, log_);
  if (etcd::Status s = registration_->registerNode(); !s.ok()) {
    log_.error("", s.str());
    return false;
  }
  watcher_ = std::make_unique<AssignmentWatcher>(*client_, options_.node, log_, wake_);
  if (etcd::Status s = watcher_->start(ledger, registration_->leaseId()); !s.ok()) {
    log_.error("", "cannot read the assignments: " + s.str());
    return false;
  }
  return true;
}

void ClusterAgent::tick(exec::NodeLedger &ledger) {
  if (!registration_)
    return;
  switch (registration_->poll(ledger)) {
  case NodeRegistration::Event::Lost:
    // The ledger released everything; nothing is admitted until the node is registered again.
    watcher_->stop();
    watcher_->forgetAdmitted();
    return;
  case NodeRegistration::Event::Registered:
    if (etcd::Status s = watcher_->start(ledger, registration_->leaseId()); !s.ok())
      log_.warn("", "cannot read the assignments: " + s.str() + "; trying again");
    return;
  case NodeRegistration::Event::None:
    break;
  }
  if (registration_->registered())
    watcher_->poll(ledger, registration_->leaseId());
}

} // namespace msc::cluster
