// Wiring of the registration and the assignment watcher into the agent's loop.
#include "cluster/agent/ClusterAgent.h"
#include "executor/agent/NodeLedger.h"

#include "cluster/config/ClusterConfig.h"
#include "cluster/config/ConfigSource.h"
#include "executor/client/Protocol.h"
#include "hal/Loader.h"
#include "hal/TopologyYaml.h"
#include "support/Version.h"

#include <llvm/Support/FileSystem.h>

#include <unistd.h>

namespace msc::cluster {

namespace {
// The host name stands in where the operator advertises no address: what other nodes of a cluster
// resolve this one by.
std::string advertisedAddress(const std::string &given) {
  if (!given.empty())
    return given;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || !validNodeAddress(host))
    return {};
  return host;
}

// What other machines connect to: a Unix socket is only for this machine, and a wildcard address
// (0.0.0.0, [::]) is reached at the node's advertised address.
std::string advertisedHttp(const std::string &bound, const std::string &address) {
  size_t colon = bound.rfind(':');
  if (bound.empty() || bound.compare(0, 5, "unix:") == 0 || colon == std::string::npos)
    return {};
  std::string host = bound.substr(0, colon);
  if ((host == "0.0.0.0" || host == "[::]") && !address.empty())
    host = address.find(':') != std::string::npos ? "[" + address + "]" : address;
  return validNodeAddress(host + bound.substr(colon)) ? host + bound.substr(colon) : std::string();
}
} // namespace

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
  std::string address = advertisedAddress(options_.address);
  ro.value = Registration{kVersion, hal::writeTopologyYaml(*topology), address, advertisedHttp(httpBound_, address)};
  ro.ttlSeconds = options_.leaseTtlSeconds;
  // The first registration already says how the node is: a failed node is never placed on first.
  std::string healthRoot = options_.healthRoot;
  if (healthRoot.empty() && options_.topology == "live")
    healthRoot = "/";
  else if (healthRoot.empty() && llvm::sys::fs::is_directory(options_.topology))
    healthRoot = options_.topology;
  if (!healthRoot.empty()) {
    health_ = std::make_unique<HealthReporter>(*topology, HealthReporterOptions{healthRoot, options_.healthInterval},
                                               *options_.clock);
    ro.value.health = health_->poll();
    logVerdict();
  }
  registration_ = std::make_unique<NodeRegistration>(*client_, ro, log_);
  if (etcd::Status s = registration_->registerNode(); !s.ok()) {
    log_.error("", s.str());
    return false;
  }
  lending_ = std::make_unique<LendingReporter>(LendingReporterOptions{options_.lendingInterval}, *options_.clock);
  watcher_ = std::make_unique<AssignmentWatcher>(*client_, options_.node, log_, wake_);
  watcher_->setOnContractChange([this](const std::string &contract) { cache_.forget(contract); });
  if (etcd::Status s = watcher_->start(ledger, registration_->leaseId()); !s.ok()) {
    log_.error("", "cannot read the assignments: " + s.str());
    return false;
  }
  return true;
}

void ClusterAgent::logVerdict() {
  const health::Verdict &v = health_->lastVerdict();
  std::string text = "health: " + health::levelName(v.level).str();
  for (const health::Reason &r : v.reasons)
    text += "; " + diagInfo(r.code).name.str() + " " + r.message + " (" + r.path + ": " + r.evidence + ")";
  if (v.level == health::Level::Healthy)
    log_.info("", text);
  else
    log_.warn("", text);
}

void ClusterAgent::judgeHealth() {
  if (!health_ || !registration_)
    return;
  if (std::optional<NodeHealth> changed = health_->poll()) {
    logVerdict();
    unpublished_ = std::move(changed);
  }
  // A put that failed (etcd unreachable for a moment) is tried again on the next tick.
  if (!unpublished_)
    return;
  if (etcd::Status s = registration_->publishHealth(*unpublished_); !s.ok()) {
    log_.warn("", "cannot publish the node's health: " + s.str() + "; trying again");
    return;
  }
  unpublished_.reset();
}

void ClusterAgent::publishLending(exec::NodeLedger &ledger) {
  if (!lending_ || !registration_ || !registration_->registered())
    return;
  exec::NodeLending *lending = ledger.lending();
  if (lending_->due() || lending_->movesOwners(lending ? lending->most() : exec::LendingOffer{}))
    if (lending_->sample(lending ? lending->offer() : exec::LendingOffer{}))
      lendingUnpublished_ = true;
  const int64_t lease = registration_->leaseId();
  if (lending_->published() && lease != lendingLease_)
    lendingUnpublished_ = true;
  if (!lendingUnpublished_)
    return;
  if (etcd::Result<int64_t> put = client_->put(lendingKey(options_.node), encodeLending(*lending_->published()), lease);
      !put) {
    log_.warn("", "cannot publish what the node lends: " + put.status().str() + "; trying again");
    return;
  }
  lendingUnpublished_ = false;
  lendingLease_ = lease;
}

void ClusterAgent::tick(exec::NodeLedger &ledger) {
  if (!registration_)
    return;
  judgeHealth();
  publishLending(ledger);
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

namespace {

// agents.contract_cache_ttl of the published cluster config; 0 (no cache) when nothing is published
// or the config sets none. A config that does not read (the leader checks what it publishes, so only
// a value written past it) leaves the TTL as it was, with a warning.
std::optional<std::chrono::nanoseconds> publishedCacheTtl(etcd::EtcdClient &client, exec::Logger &log,
                                                         const etcd::RangeOptions &read) {
  etcd::Result<etcd::RangeResult> r = client.range(kConfigKey, read);
  if (!r || r->kvs.empty())
    return r ? std::optional<std::chrono::nanoseconds>(std::chrono::nanoseconds(0)) : std::nullopt;
  std::string why;
  std::optional<PublishedConfig> published = decodeConfig(r->kvs.front().value, why);
  ConfigSource source(kConfigKey, published ? published->yaml : std::string());
  std::optional<ClusterConfig> config = published ? parseClusterConfig(source) : std::nullopt;
  if (!config) {
    log.warn("", std::string(kConfigKey) + " does not read (" + (published ? source.printed() : why) +
                     "); the contract cache keeps its TTL");
    return std::nullopt;
  }
  return std::chrono::nanoseconds(config->contractCacheTtlNs.value_or(0));
}

} // namespace

etcd::Result<ClusterAgent::LookedUp> ClusterAgent::lookupContract(const std::string &contract) {
  std::string why;
  if (!isContractName(contract, why))
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_014, {contract, why});
  if (!client_)
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_014, {contract, "the agent has not joined the cluster"});
  ContractCache::Clock::time_point now = ContractCache::Clock::now();
  if (const ContractCache::Entry *hit = cache_.find(contract, now))
    return LookedUp{hit->submission, hit->modRevision, true, now - hit->readAt};

  etcd::RangeOptions read;
  read.consistency = etcd::Consistency::Serializable;
  if (std::optional<std::chrono::nanoseconds> ttl = publishedCacheTtl(*client_, log_, read))
    cache_.setTtl(*ttl);
  const std::string key = kContractsPrefix + contract;
  etcd::Result<etcd::RangeResult> r = client_->range(key, read);
  if (!r)
    return r.status();
  if (r->kvs.empty())
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_014,
                              {contract, "it is not submitted (no key " + key + ")"});
  std::optional<Submission> submission = decodeSubmission(r->kvs.front().value, why);
  if (submission && submission->contract != contract)
    why = "the value is for contract '" + submission->contract + "'";
  if (!submission || submission->contract != contract)
    return etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_006, {contract, why});
  ContractCache::Entry entry{*submission, r->kvs.front().modRevision, ContractCache::Clock::now()};
  cache_.put(contract, entry);
  return LookedUp{std::move(*submission), entry.modRevision, false, std::chrono::nanoseconds(0)};
}

bool ClusterAgent::answerLookup(const std::string &contract, agent::ClusterContract &found, agent::Diagnostic &error) {
  etcd::Result<LookedUp> r = lookupContract(contract);
  if (!r) {
    log_.warn(contract, "lookup: " + r.status().str());
    error.set_code(etcd::codeName(r.status().code));
    error.set_severity("error");
    error.set_message(r.status().message);
    return false;
  }
  found.set_contract(r->submission.contract);
  found.set_source(r->submission.source);
  for (const std::string &arg : r->submission.command)
    found.add_command(arg);
  for (const auto &[k, v] : r->submission.environment)
    (*found.mutable_environment())[k] = v;
  found.set_mod_revision(r->modRevision);
  found.set_from_cache(r->fromCache);
  found.set_age_ms(std::chrono::duration_cast<std::chrono::milliseconds>(r->age).count());
  found.set_cache_ttl_ms(std::chrono::duration_cast<std::chrono::milliseconds>(cache_.ttl()).count());
  return true;
}

} // namespace msc::cluster
