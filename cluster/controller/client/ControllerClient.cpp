#include "cluster/controller/client/ControllerClient.h"

#include "cluster/controller/client/controller.grpc.pb.h"
#include "cluster/etcd/Election.h"

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <functional>
#include <thread>

namespace msc::cluster {
namespace {

using Clock = std::chrono::steady_clock;
using etcd::ErrorCode;

// The coded error a controller put at the start of its refusal; nullopt for any other message.
std::optional<etcd::Status> codedRefusal(const grpc::Status &status) {
  const std::string &m = status.error_message();
  if (m.rfind("error[", 0) != 0)
    return std::nullopt;
  size_t close = m.find("]: ");
  if (close == std::string::npos)
    return std::nullopt;
  std::optional<ErrorCode> code = etcd::codeFromName(m.substr(6, close - 6));
  if (!code)
    return std::nullopt;
  std::string message = m.substr(close + 3);
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  return etcd::Status{*code, message};
}

// One write, called at whichever controller leads until it is answered or `deadline` passes.
using Call = std::function<grpc::Status(proto::Controller::Stub &, grpc::ClientContext &)>;

etcd::Result<std::string> leadingAddress(etcd::EtcdClient &etcd, std::string &leaderName) {
  auto l = etcd.election(kControllerElection).leader();
  if (!l)
    return l.status();
  std::string address;
  parseElectionValue(l->value, leaderName, address);
  if (address.empty())
    return etcd::Status::make(ErrorCode::ERR_CLUSTER_008, {leaderName, "it proclaims no service address"});
  return address;
}

etcd::Result<std::string> throughLeader(etcd::EtcdClient &etcd, const std::string &what, const WriteOptions &options,
                                        const Call &call) {
  using namespace std::chrono_literals;
  const etcd::Milliseconds deadline = options.deadline;
  const auto until = Clock::now() + deadline;
  std::string last = "no attempt";
  while (true) {
    std::string name = "the controller";
    auto address = options.controller.empty() ? leadingAddress(etcd, name) : etcd::Result<std::string>(options.controller);
    if (address) {
      auto channel = grpc::CreateChannel(*address, grpc::InsecureChannelCredentials());
      auto stub = proto::Controller::NewStub(channel);
      grpc::ClientContext context;
      // gRPC takes deadlines on the system clock; the loop measures on the steady one.
      auto left = std::min<Clock::duration>(until - Clock::now(), std::chrono::seconds(10));
      context.set_deadline(std::chrono::system_clock::now() + left);
      grpc::Status status = call(*stub, context);
      if (status.ok())
        return "'" + name + "' at " + *address;
      std::optional<etcd::Status> coded = codedRefusal(status);
      bool moved = coded && (coded->code == ErrorCode::ERR_CLUSTER_008 || coded->code == ErrorCode::ERR_CLUSTER_001);
      bool unreachable = !coded && (status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                                    status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
      if (coded && ((!moved && status.error_code() != grpc::StatusCode::UNAVAILABLE) || !options.controller.empty()))
        return *coded; // final: the leader refused the request itself (or the one controller asked did)
      if (!coded && !unreachable)
        return etcd::Status::make(ErrorCode::ERR_CLUSTER_009,
                                  {what, std::to_string(deadline.count()),
                                   "'" + name + "' at " + *address + " answered: " + status.error_message()});
      last = coded ? coded->message : "'" + name + "' at " + *address + ": " + status.error_message();
    } else {
      last = address.status().str();
    }
    if (Clock::now() + 200ms >= until || !options.controller.empty())
      return etcd::Status::make(ErrorCode::ERR_CLUSTER_009, {what, std::to_string(deadline.count()), last});
    std::this_thread::sleep_for(200ms);
  }
}

} // namespace

etcd::Result<WriteOutcome> submitContract(etcd::EtcdClient &etcd, const Submission &submission,
                                          const WriteOptions &options) {
  std::string why;
  if (std::string problem = submittedClassProblem(submission.contractClass); !problem.empty())
    return etcd::Status::make(ErrorCode::ERR_CLUSTER_023, {submission.contract, submission.contractClass, problem});
  if (!checkSubmission(submission, why))
    return etcd::Status::make(ErrorCode::ERR_CLUSTER_006, {submission.contract, why});
  proto::SubmitRequest request;
  request.set_contract(submission.contract);
  request.set_source(submission.source);
  for (const std::string &arg : submission.command)
    request.add_command(arg);
  for (const auto &[k, v] : submission.environment)
    (*request.mutable_environment())[k] = v;
  request.set_contract_class(submission.contractClass);
  proto::SubmitReply reply;
  auto leader = throughLeader(etcd, "Submit of contract '" + submission.contract + "'", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Submit(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return WriteOutcome{reply.revision(), reply.leader_revision(), *leader, reply.unchanged()};
}

etcd::Result<WriteOutcome> withdrawContract(etcd::EtcdClient &etcd, const std::string &contract,
                                            const WriteOptions &options) {
  std::string why;
  if (!isContractName(contract, why))
    return etcd::Status::make(ErrorCode::ERR_CLUSTER_006, {contract, why});
  proto::WithdrawRequest request;
  request.set_contract(contract);
  proto::WithdrawReply reply;
  auto leader = throughLeader(etcd, "Withdraw of contract '" + contract + "'", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Withdraw(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return WriteOutcome{reply.revision(), reply.leader_revision(), *leader, false};
}

etcd::Result<WriteOutcome> cordonNode(etcd::EtcdClient &etcd, const std::string &node, const std::string &reason,
                                      const WriteOptions &options) {
  proto::CordonRequest request;
  request.set_node(node);
  request.set_reason(reason);
  proto::CordonReply reply;
  auto leader = throughLeader(etcd, "Cordon of node '" + node + "'", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Cordon(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return WriteOutcome{reply.revision(), reply.leader_revision(), *leader, reply.unchanged()};
}

etcd::Result<WriteOutcome> uncordonNode(etcd::EtcdClient &etcd, const std::string &node, const WriteOptions &options) {
  proto::UncordonRequest request;
  request.set_node(node);
  proto::CordonReply reply;
  auto leader = throughLeader(etcd, "Uncordon of node '" + node + "'", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Uncordon(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return WriteOutcome{reply.revision(), reply.leader_revision(), *leader, reply.unchanged()};
}

etcd::Result<DrainOutcome> drainNode(etcd::EtcdClient &etcd, const std::string &node, etcd::Milliseconds deadline,
                                     bool force, const WriteOptions &options) {
  proto::DrainRequest request;
  request.set_node(node);
  request.set_deadline_ms(deadline.count());
  request.set_force(force);
  proto::DrainReply reply;
  auto leader = throughLeader(etcd, "Drain of node '" + node + "'", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Drain(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return DrainOutcome{{reply.revision(), reply.leader_revision(), *leader, reply.unchanged()},
                      {reply.jobs().begin(), reply.jobs().end()}};
}

etcd::Result<WriteOutcome> configureCluster(etcd::EtcdClient &etcd, const std::string &yaml, const std::string &file,
                                            const WriteOptions &options) {
  proto::ConfigureRequest request;
  request.set_config(yaml);
  request.set_file(file);
  proto::ConfigureReply reply;
  auto leader = throughLeader(etcd, "Configure of the cluster config", options,
                              [&](proto::Controller::Stub &stub, grpc::ClientContext &context) {
                                return stub.Configure(&context, request, &reply);
                              });
  if (!leader)
    return leader.status();
  return WriteOutcome{reply.revision(), reply.leader_revision(), *leader, reply.unchanged()};
}

} // namespace msc::cluster
