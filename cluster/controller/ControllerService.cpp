#include "cluster/controller/ControllerService.h"

#include "cluster/config/ClusterConfig.h"
#include "cluster/controller/Drain.h"
#include "cluster/controller/client/controller.grpc.pb.h"
#include "cluster/keys/Keys.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>

namespace msc::cluster {
namespace {

using etcd::ErrorCode;

// Uncordon reads the node's fault history and writes it with the cordon's removal while it is as
// read; the leader records a fault at most once a reconciliation, so a few tries always suffice.
constexpr int kUncordonAttempts = 5;
// The longest drain: a week. A planned move that takes longer is not a drain.
constexpr int64_t kMaxDrainDeadlineMs = 7ll * 24 * 3600 * 1000;

// A refusal as the client reads it: the gRPC code says whether another controller could do better
// (FAILED_PRECONDITION, UNAVAILABLE: it retries at the leader), the message is the coded error.
grpc::Status refuse(grpc::StatusCode code, const etcd::Status &why, const std::string &details = {}) {
  return grpc::Status(code, why.str() + (details.empty() ? "" : "\n" + details));
}

// A failed fenced write: the leadership went (a standby now, the client asks the new leader) or
// etcd failed (unavailable: the client may retry).
grpc::Status writeFailed(const etcd::Status &why) {
  return refuse(why.code == ErrorCode::ERR_CLUSTER_001 ? grpc::StatusCode::FAILED_PRECONDITION
                                                       : grpc::StatusCode::UNAVAILABLE,
                why);
}

class Service final : public proto::Controller::Service {
public:
  Service(Controller &controller, etcd::EtcdClient &client, ContractSourceOptions sources)
      : controller_(controller), client_(client), sources_(std::move(sources)) {}

  grpc::Status Submit(grpc::ServerContext *, const proto::SubmitRequest *request, proto::SubmitReply *reply) override {
    Submission s;
    s.contract = request->contract();
    s.source = request->source();
    s.command.assign(request->command().begin(), request->command().end());
    s.environment.insert(request->environment().begin(), request->environment().end());
    s.contractClass = request->contract_class();
    std::string why;
    if (std::string problem = submittedClassProblem(s.contractClass); !problem.empty())
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_023, {s.contract, s.contractClass, problem}));
    if (!checkSubmission(s, why))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT, etcd::Status::make(ErrorCode::ERR_CLUSTER_006, {s.contract, why}));
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    CapturedDiagnostics check;
    std::optional<LoadedContract> loaded = loadSubmittedContract(s.contract, s.source, sources_, check, s.contractClass);
    check.done();
    if (!loaded) {
      // The frontend's own diagnostics follow the coded refusal (unless it is the refusal itself).
      if (check.text.rfind("error[ERR_CLUSTER_007]", 0) == 0 || check.text.rfind("error[ERR_CLUSTER_023]", 0) == 0)
        return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, check.text);
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_007, {s.contract, "its source does not compile"}),
                    check.text);
    }
    const std::string key = kContractsPrefix + s.contract, value = encodeSubmission(s);
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::absent(key));
    txn.success.push_back(etcd::TxnOp::put(key, value));
    auto written = term->commit(txn);
    if (!written)
      return writeFailed(written.status());
    reply->set_leader_revision(term->leader().rev);
    if (written->succeeded) {
      reply->set_revision(written->revision);
      return grpc::Status::OK;
    }
    // The name is taken: a Submit retried after its reply was lost is no error; another one is.
    auto present = client_.range(key);
    if (!present)
      return writeFailed(present.status());
    if (!present->kvs.empty() && present->kvs.front().value == value) {
      reply->set_revision(present->kvs.front().modRevision);
      reply->set_unchanged(true);
      return grpc::Status::OK;
    }
    std::string since = present->kvs.empty() ? "" : " since revision " + std::to_string(present->kvs.front().modRevision);
    return refuse(grpc::StatusCode::ALREADY_EXISTS,
                  etcd::Status::make(ErrorCode::ERR_CLUSTER_007,
                                     {s.contract, "another submission of it is in place" + since + "; withdraw it first"}));
  }

  grpc::Status Withdraw(grpc::ServerContext *, const proto::WithdrawRequest *request,
                        proto::WithdrawReply *reply) override {
    std::string why;
    if (!isContractName(request->contract(), why))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_006, {request->contract(), why}));
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    // The submission goes; the next reconciliation removes its assignments and its status.
    const std::string key = kContractsPrefix + request->contract();
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::onCreateRevision(key, etcd::Compare::Op::Greater, 0));
    txn.success.push_back(etcd::TxnOp::remove(key));
    auto written = term->commit(txn);
    if (!written)
      return writeFailed(written.status());
    if (!written->succeeded)
      return refuse(grpc::StatusCode::NOT_FOUND,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_007, {request->contract(), "no such contract is submitted"}));
    reply->set_revision(written->revision);
    reply->set_leader_revision(term->leader().rev);
    return grpc::Status::OK;
  }

  grpc::Status Configure(grpc::ServerContext *, const proto::ConfigureRequest *request,
                         proto::ConfigureReply *reply) override {
    // Checked as mscale-deploy checks it, so a client that skipped that cannot publish what the
    // leader then fails to read at every reconciliation.
    ConfigSource source(request->file().empty() ? std::string("cluster config") : request->file(), request->config());
    if (!parseClusterConfig(source))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT, source.errors().front(), source.printed());
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    reply->set_leader_revision(term->leader().rev);
    // The same config again changes nothing and wakes no reconciliation (a retried Configure).
    auto present = client_.range(kConfigKey);
    if (!present)
      return writeFailed(present.status());
    std::string why;
    if (!present->kvs.empty())
      if (std::optional<PublishedConfig> old = decodeConfig(present->kvs.front().value, why);
          old && old->yaml == request->config()) {
        reply->set_revision(present->kvs.front().modRevision);
        reply->set_unchanged(true);
        return grpc::Status::OK;
      }
    PublishedConfig published{"controller '" + name_() + "' (leader-rev " + std::to_string(term->leader().rev) + ")",
                              request->config()};
    etcd::Txn txn;
    txn.success.push_back(etcd::TxnOp::put(kConfigKey, encodeConfig(published)));
    auto written = term->commit(txn);
    if (!written)
      return writeFailed(written.status());
    reply->set_revision(written->revision);
    return grpc::Status::OK;
  }

  grpc::Status Cordon(grpc::ServerContext *, const proto::CordonRequest *request, proto::CordonReply *reply) override {
    const std::string &node = request->node();
    std::string why, reason = request->reason();
    std::replace(reason.begin(), reason.end(), '\n', ' '); // the value holds it as one line
    std::replace(reason.begin(), reason.end(), '\r', ' ');
    if (!isNodeName(node, why))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT, etcd::Status::make(ErrorCode::ERR_CLUSTER_017, {node, why}));
    if (reason.find_first_not_of(" \t") == std::string::npos)
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_017,
                                       {node, "the reason is empty; say why the node is taken out (--reason TEXT)"}));
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    reply->set_leader_revision(term->leader().rev);
    // The same cordon again changes nothing (a retried Cordon); another reason replaces the old one.
    auto present = client_.range(cordonKey(node));
    if (!present)
      return writeFailed(present.status());
    if (!present->kvs.empty())
      if (std::optional<cluster::Cordon> old = decodeCordon(present->kvs.front().value, why);
          old && old->by == "operator" && old->reason == reason) {
        reply->set_revision(present->kvs.front().modRevision);
        reply->set_unchanged(true);
        return grpc::Status::OK;
      }
    cluster::Cordon cordon{"operator", reason, term->leader().rev, controller_.clock().unixMs()};
    // Only while the node is registered: checked in the same transaction as the write.
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::onCreateRevision(nodeKey(node), etcd::Compare::Op::Greater, 0));
    txn.success.push_back(etcd::TxnOp::put(cordonKey(node), encodeCordon(cordon)));
    auto written = term->commit(txn);
    if (!written)
      return writeFailed(written.status());
    if (!written->succeeded)
      return refuse(grpc::StatusCode::NOT_FOUND,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_017, {node, "it is not registered; " + registeredNodes()}));
    reply->set_revision(written->revision);
    return grpc::Status::OK;
  }

  grpc::Status Uncordon(grpc::ServerContext *, const proto::UncordonRequest *request,
                        proto::CordonReply *reply) override {
    const std::string &node = request->node();
    std::string why;
    if (!isNodeName(node, why))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT, etcd::Status::make(ErrorCode::ERR_CLUSTER_018, {node, why}));
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    reply->set_leader_revision(term->leader().rev);
    // The cordon goes, and the node's fault history is marked in the same transaction: the lemon
    // rule counts from the uncordon on (Keys.h). Applied only while the history is as read; a fault
    // the leader records in between makes it read again, a few times at most.
    for (int attempt = 0; attempt < kUncordonAttempts; ++attempt) {
      auto history = client_.range(nodeFaultsKey(node));
      if (!history)
        return writeFailed(history.status());
      etcd::Txn txn;
      txn.compares.push_back(etcd::Compare::onCreateRevision(cordonKey(node), etcd::Compare::Op::Greater, 0));
      txn.success.push_back(etcd::TxnOp::remove(cordonKey(node)));
      if (!history->kvs.empty()) {
        const etcd::KeyValue &kv = history->kvs.front();
        // A history that does not read decides nothing (ERR_CLUSTER_019): it is left as it is.
        if (std::optional<std::vector<NodeFault>> faults = decodeFaults(kv.value, why); faults && !faults->empty()) {
          faults->push_back({controller_.clock().unixMs(),
                             kUncordonedMark + std::to_string(term->leader().rev) + ":" + std::to_string(kv.modRevision),
                             "uncordoned by an operator: the lemon rule counts the faults after this"});
          txn.compares.push_back(etcd::Compare::onModRevision(kv.key, etcd::Compare::Op::Equal, kv.modRevision));
          txn.success.push_back(etcd::TxnOp::put(kv.key, encodeFaults(*faults)));
        }
      }
      txn.success.push_back(etcd::TxnOp::remove(drainKey(node))); // a drain ends with its cordon
      auto written = term->commit(txn);
      if (!written)
        return writeFailed(written.status());
      if (written->succeeded) {
        reply->set_revision(written->revision);
        return grpc::Status::OK;
      }
      auto cordon = client_.range(cordonKey(node));
      if (!cordon)
        return writeFailed(cordon.status());
      if (cordon->kvs.empty())
        break; // not cordoned (any more): below
    }
    if (auto cordon = client_.range(cordonKey(node)); cordon && !cordon->kvs.empty())
      return refuse(grpc::StatusCode::ABORTED,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_018,
                                       {node, "its fault history changed under each of " +
                                                  std::to_string(kUncordonAttempts) + " tries; try again"}));
    // Not cordoned: no error for a node that is registered (a retried uncordon, a script that
    // uncordons after every repair), but a name that is neither is a typo to report.
    auto registered = client_.range(nodeKey(node));
    if (!registered)
      return writeFailed(registered.status());
    if (registered->kvs.empty())
      return refuse(grpc::StatusCode::NOT_FOUND,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_018, {node, "it is neither registered nor cordoned"}));
    reply->set_revision(registered->revision);
    reply->set_unchanged(true);
    return grpc::Status::OK;
  }

  grpc::Status Drain(grpc::ServerContext *, const proto::DrainRequest *request, proto::DrainReply *reply) override {
    const std::string &node = request->node();
    std::string why;
    if (!isNodeName(node, why))
      return refuse(grpc::StatusCode::INVALID_ARGUMENT, etcd::Status::make(ErrorCode::ERR_CLUSTER_020, {node, why}));
    if (request->deadline_ms() <= 0 || request->deadline_ms() > kMaxDrainDeadlineMs)
      return refuse(grpc::StatusCode::INVALID_ARGUMENT,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_020,
                                       {node, "its deadline of " + std::to_string(request->deadline_ms()) +
                                                  " ms is not from 1 ms to 7 days"}));
    std::optional<etcd::Fencing> term = controller_.currentTerm();
    if (!term)
      return notLeader();
    reply->set_leader_revision(term->leader().rev);
    ReconcileMemory memory;
    auto state = readClusterState(client_, memory);
    if (!state)
      return writeFailed(state.status());
    if (!state->nodes.count(node))
      return refuse(grpc::StatusCode::NOT_FOUND,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_020, {node, "it is not registered; " + registeredNodes()}));
    std::vector<std::string> jobs = jobsToDrain(*state, node);
    if (auto d = state->drains.find(node); d != state->drains.end() && !d->second.drain.timedOut) {
      reply->set_revision(d->second.modRevision); // the drain's id
      reply->set_unchanged(true);
      for (const std::string &job : jobs)
        reply->add_jobs(job);
      return grpc::Status::OK;
    }
    if (!request->force())
      if (std::vector<std::string> blockers = drainBlockers(*state, node, memory, controller_.clock(),
                                                            controller_.reconcileOptions(), term->leader().rev);
          !blockers.empty())
        return refuse(grpc::StatusCode::FAILED_PRECONDITION,
                      etcd::Status::make(ErrorCode::ERR_CLUSTER_020,
                                         {node, "a job there cannot be placed whole on the other nodes (" +
                                                    blockers.front() + (blockers.size() > 1 ? ", and " +
                                                    std::to_string(blockers.size() - 1) + " more" : "") +
                                                    "); --force moves it anyway, as a lost node's jobs move"}));
    int64_t now = controller_.clock().unixMs();
    cluster::Drain drain{term->leader().rev, now, now + request->deadline_ms(), request->force(), false};
    // Only while the node is registered and its drain as read: one writer of a node's drain wins.
    etcd::Txn txn;
    txn.compares.push_back(etcd::Compare::onCreateRevision(nodeKey(node), etcd::Compare::Op::Greater, 0));
    auto d = state->drains.find(node);
    txn.compares.push_back(d == state->drains.end() ? etcd::Compare::absent(drainKey(node))
                                                    : etcd::Compare::onModRevision(drainKey(node), etcd::Compare::Op::Equal,
                                                                                   d->second.modRevision));
    txn.success.push_back(etcd::TxnOp::put(drainKey(node), encodeDrain(drain)));
    // A cordon already there (the operator's words, or the policy's) stays as written.
    if (!state->cordons.count(node))
      txn.success.push_back(etcd::TxnOp::put(
          cordonKey(node), encodeCordon({"operator", "drained", term->leader().rev, now})));
    auto written = term->commit(txn);
    if (!written)
      return writeFailed(written.status());
    if (!written->succeeded)
      return refuse(grpc::StatusCode::ABORTED,
                    etcd::Status::make(ErrorCode::ERR_CLUSTER_020,
                                       {node, "it was unregistered or drained by someone else meanwhile; try again"}));
    reply->set_revision(written->revision);
    for (const std::string &job : jobs)
      reply->add_jobs(job);
    return grpc::Status::OK;
  }

private:
  // "registered nodes: n1, n2" (the first 20), for a refusal that names a node that is not one.
  std::string registeredNodes() {
    etcd::RangeOptions o;
    o.rangeEnd = etcd::prefixEnd(kNodesPrefix);
    auto r = client_.range(kNodesPrefix, o);
    if (!r)
      return "the registered nodes cannot be read: " + r.status().str();
    std::string names;
    size_t shown = 0;
    for (const etcd::KeyValue &kv : r->kvs)
      if (shown++ < 20)
        names += (names.empty() ? "" : ", ") + kv.key.substr(std::string(kNodesPrefix).size());
    if (r->kvs.size() > 20)
      names += " and " + std::to_string(r->kvs.size() - 20) + " more";
    return "registered nodes: " + (names.empty() ? std::string("none") : names);
  }

  grpc::Status notLeader() {
    std::string leader = "no controller leads now";
    auto l = client_.election(kControllerElection).leader();
    if (l) {
      std::string name, address;
      parseElectionValue(l->value, name, address);
      leader = "the leader is '" + name + "'" + (address.empty() ? "" : " at " + address);
    }
    return refuse(grpc::StatusCode::FAILED_PRECONDITION, etcd::Status::make(ErrorCode::ERR_CLUSTER_008, {name_(), leader}));
  }
  std::string name_() const { return controller_.name(); }

  Controller &controller_;
  etcd::EtcdClient &client_;
  ContractSourceOptions sources_;
};

} // namespace

struct ControllerServer::Impl {
  std::unique_ptr<Service> service;
  std::unique_ptr<grpc::Server> server;
};

std::unique_ptr<ControllerServer> ControllerServer::start(Controller &controller, etcd::EtcdClient &client,
                                                         const std::string &listen, ContractSourceOptions sources,
                                                         std::string &error) {
  auto impl = std::make_unique<Impl>();
  impl->service = std::make_unique<Service>(controller, client, std::move(sources));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(listen, grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(impl->service.get());
  // A request larger than a submission may be is refused by gRPC before it is read whole.
  builder.SetMaxReceiveMessageSize(static_cast<int>(kMaxSubmissionBytes + (64u << 10)));
  impl->server = builder.BuildAndStart();
  if (!impl->server || port == 0) {
    error = "cannot listen on '" + listen + "'";
    return nullptr;
  }
  std::string host = listen.substr(0, listen.rfind(':'));
  return std::unique_ptr<ControllerServer>(new ControllerServer(std::move(impl), host + ":" + std::to_string(port)));
}

ControllerServer::ControllerServer(std::unique_ptr<Impl> impl, std::string address)
    : impl_(std::move(impl)), address_(std::move(address)) {}

ControllerServer::~ControllerServer() {
  if (impl_ && impl_->server)
    impl_->server->Shutdown();
}

} // namespace msc::cluster
