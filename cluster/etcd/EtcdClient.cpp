#include "cluster/etcd/ClientImpl.h"
#include "cluster/etcd/Election.h"
#include "cluster/etcd/Lease.h"
#include "cluster/etcd/Watch.h"

#include <sstream>

namespace msc::etcd {

Result<std::vector<std::string>> parseEndpoints(const std::string &commaSeparated) {
  std::vector<std::string> endpoints;
  std::stringstream in(commaSeparated);
  std::string item;
  while (std::getline(in, item, ',')) {
    while (!item.empty() && item.front() == ' ')
      item.erase(item.begin());
    while (!item.empty() && item.back() == ' ')
      item.pop_back();
    if (item.empty())
      continue;
    for (const char *scheme : {"http://", "https://"})
      if (item.rfind(scheme, 0) == 0)
        item = item.substr(std::string(scheme).size());
    size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size() ||
        item.find_first_not_of("0123456789", colon + 1) != std::string::npos)
      return Status::make(ErrorCode::ERR_ETCD_001, {commaSeparated, "'" + item + "' is not host:port"});
    endpoints.push_back(item);
  }
  if (endpoints.empty())
    return Status::make(ErrorCode::ERR_ETCD_001, {commaSeparated, "no endpoint given"});
  return endpoints;
}

std::string prefixEnd(const std::string &prefix) {
  // The smallest key greater than every key with the prefix: drop trailing 0xff bytes, increment
  // the last one. A prefix of only 0xff bytes (or an empty one) means "to the end": "\0".
  std::string end = prefix;
  while (!end.empty()) {
    auto last = static_cast<unsigned char>(end.back());
    if (last < 0xff) {
      end.back() = static_cast<char>(last + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

Compare Compare::onCreateRevision(std::string key, Op op, int64_t revision) {
  return Compare{std::move(key), Target::CreateRevision, op, revision, {}};
}
Compare Compare::onModRevision(std::string key, Op op, int64_t revision) {
  return Compare{std::move(key), Target::ModRevision, op, revision, {}};
}
Compare Compare::onValue(std::string key, Op op, std::string value) {
  return Compare{std::move(key), Target::Value, op, 0, std::move(value)};
}

TxnOp TxnOp::put(std::string key, std::string value, int64_t lease) {
  return TxnOp{Kind::Put, std::move(key), std::move(value), lease, {}};
}
TxnOp TxnOp::remove(std::string key, std::string rangeEnd) {
  return TxnOp{Kind::Delete, std::move(key), {}, 0, std::move(rangeEnd)};
}

bool isNoLeader(const grpc::Status &status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE &&
         status.error_message().find("no leader") != std::string::npos;
}

Status statusFromGrpc(const grpc::Status &status, const std::string &what, const std::string &endpoint,
                      Milliseconds timeout) {
  if (status.ok())
    return {};
  // The server's own copy of our deadline can fire first; etcd then answers with Go's context error
  // (code UNKNOWN), which is the same timeout.
  if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
      status.error_message() == "context deadline exceeded")
    return Status::make(ErrorCode::ERR_ETCD_003, {what, std::to_string(timeout.count()), endpoint});
  if (isNoLeader(status))
    return Status::make(ErrorCode::ERR_ETCD_004, {endpoint, what});
  return Status::make(ErrorCode::ERR_ETCD_005, {what, status.error_message()});
}

EtcdClient::Impl::Impl(ClientOptions clientOptions) : options(std::move(clientOptions)) {
  for (const std::string &address : options.endpoints) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, static_cast<int>(options.maxReconnectBackoff.count()));
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                static_cast<int>(std::min<int64_t>(100, options.maxReconnectBackoff.count())));
    // Long-lived streams (watches) notice a hung member by keepalive pings. etcd refuses pings more
    // often than every 5 s (--grpc-keepalive-min-time) with a GOAWAY, hence 10 s.
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10000);
    args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5000);
    args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 0);
    Endpoint endpoint;
    endpoint.address = address;
    endpoint.channel = grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
    endpoint.kv = etcdserverpb::KV::NewStub(endpoint.channel);
    endpoint.lease = etcdserverpb::Lease::NewStub(endpoint.channel);
    endpoint.watch = etcdserverpb::Watch::NewStub(endpoint.channel);
    endpoint.maintenance = etcdserverpb::Maintenance::NewStub(endpoint.channel);
    endpoint.election = v3electionpb::Election::NewStub(endpoint.channel);
    endpoints.push_back(std::move(endpoint));
  }
}

void EtcdClient::Impl::prepare(grpc::ClientContext &context, Clock::time_point deadline, Leader leader) const {
  context.set_deadline(deadline);
  if (leader == Leader::Required)
    context.AddMetadata("hasleader", "true");
}

Status EtcdClient::Impl::call(const std::string &what, const Attempt &attempt, Milliseconds timeout,
                              Leader leader) {
  const Clock::time_point deadline = Clock::now() + timeout;
  const size_t first = preferredIndex();
  std::string unreachable; // "a: reason; b: reason"
  Status noLeader;
  for (size_t i = 0; i < endpoints.size(); ++i) {
    const size_t index = (first + i) % endpoints.size();
    Endpoint &endpoint = endpoints[index];
    grpc::ClientContext context;
    prepare(context, deadline, leader);
    grpc::Status status = attempt(endpoint, context);
    if (status.ok()) {
      markPreferred(index);
      return {};
    }
    if (status.error_code() != grpc::StatusCode::UNAVAILABLE)
      return statusFromGrpc(status, what, endpoint.address, timeout);
    // Unreachable, or cut off from the quorum: another member may still serve.
    if (isNoLeader(status) && noLeader.ok())
      noLeader = statusFromGrpc(status, what, endpoint.address, timeout);
    if (!unreachable.empty())
      unreachable += "; ";
    unreachable += endpoint.address + ": " + status.error_message();
    if (Clock::now() >= deadline)
      return Status::make(ErrorCode::ERR_ETCD_003, {what, std::to_string(timeout.count()), endpoint.address});
  }
  // Quorum lost says more than "unreachable": the members that answered refused on purpose.
  if (!noLeader.ok())
    return noLeader;
  std::string all;
  for (const Endpoint &endpoint : endpoints)
    all += (all.empty() ? "" : ",") + endpoint.address;
  return Status::make(ErrorCode::ERR_ETCD_002, {all, what, unreachable});
}

Result<std::unique_ptr<EtcdClient>> EtcdClient::connect(ClientOptions options) {
  if (options.endpoints.empty())
    return Status::make(ErrorCode::ERR_ETCD_001, {"", "no endpoint given"});
  std::string joined;
  for (const std::string &endpoint : options.endpoints)
    joined += (joined.empty() ? "" : ",") + endpoint;
  auto parsed = parseEndpoints(joined);
  if (!parsed)
    return parsed.status();
  options.endpoints = *parsed;
  if (options.callTimeout.count() <= 0)
    return Status::make(ErrorCode::ERR_ETCD_001, {joined, "the call timeout must be positive"});
  return std::unique_ptr<EtcdClient>(new EtcdClient(std::make_unique<Impl>(std::move(options))));
}

EtcdClient::EtcdClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
EtcdClient::~EtcdClient() = default;

const ClientOptions &EtcdClient::options() const { return impl_->options; }

namespace {
KeyValue fromProto(const mvccpb::KeyValue &kv) {
  return KeyValue{kv.key(), kv.value(), kv.create_revision(), kv.mod_revision(), kv.version(), kv.lease()};
}

etcdserverpb::Compare toProto(const Compare &compare) {
  etcdserverpb::Compare out;
  out.set_key(compare.key);
  switch (compare.op) {
  case Compare::Op::Equal: out.set_result(etcdserverpb::Compare::EQUAL); break;
  case Compare::Op::NotEqual: out.set_result(etcdserverpb::Compare::NOT_EQUAL); break;
  case Compare::Op::Greater: out.set_result(etcdserverpb::Compare::GREATER); break;
  case Compare::Op::Less: out.set_result(etcdserverpb::Compare::LESS); break;
  }
  switch (compare.target) {
  case Compare::Target::CreateRevision:
    out.set_target(etcdserverpb::Compare::CREATE);
    out.set_create_revision(compare.number);
    break;
  case Compare::Target::ModRevision:
    out.set_target(etcdserverpb::Compare::MOD);
    out.set_mod_revision(compare.number);
    break;
  case Compare::Target::Version:
    out.set_target(etcdserverpb::Compare::VERSION);
    out.set_version(compare.number);
    break;
  case Compare::Target::Value:
    out.set_target(etcdserverpb::Compare::VALUE);
    out.set_value(compare.value);
    break;
  }
  return out;
}

etcdserverpb::RequestOp toProto(const TxnOp &op) {
  etcdserverpb::RequestOp out;
  if (op.kind == TxnOp::Kind::Put) {
    auto *put = out.mutable_request_put();
    put->set_key(op.key);
    put->set_value(op.value);
    put->set_lease(op.lease);
  } else {
    auto *del = out.mutable_request_delete_range();
    del->set_key(op.key);
    del->set_range_end(op.rangeEnd);
  }
  return out;
}
} // namespace

Result<RangeResult> EtcdClient::range(const std::string &key, const RangeOptions &options) {
  etcdserverpb::RangeRequest request;
  request.set_key(key);
  request.set_range_end(options.rangeEnd);
  request.set_limit(options.limit);
  request.set_revision(options.revision);
  request.set_serializable(options.consistency == Consistency::Serializable);
  etcdserverpb::RangeResponse response;
  const bool serializable = options.consistency == Consistency::Serializable;
  Status status = impl_->call(
      "Range",
      [&](Endpoint &endpoint, grpc::ClientContext &context) {
        return endpoint.kv->Range(&context, request, &response);
      },
      impl_->options.callTimeout, serializable ? Impl::Leader::NotRequired : Impl::Leader::Required);
  if (!status)
    return status;
  RangeResult result;
  for (const auto &kv : response.kvs())
    result.kvs.push_back(fromProto(kv));
  result.revision = response.header().revision();
  result.more = response.more();
  return result;
}

Result<int64_t> EtcdClient::put(const std::string &key, const std::string &value, int64_t lease) {
  etcdserverpb::PutRequest request;
  request.set_key(key);
  request.set_value(value);
  request.set_lease(lease);
  etcdserverpb::PutResponse response;
  Status status = impl_->call("Put", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.kv->Put(&context, request, &response);
  });
  if (!status)
    return status;
  return response.header().revision();
}

Result<int64_t> EtcdClient::remove(const std::string &key, const std::string &rangeEnd) {
  etcdserverpb::DeleteRangeRequest request;
  request.set_key(key);
  request.set_range_end(rangeEnd);
  etcdserverpb::DeleteRangeResponse response;
  Status status = impl_->call("DeleteRange", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.kv->DeleteRange(&context, request, &response);
  });
  if (!status)
    return status;
  return response.deleted();
}

Result<TxnResult> EtcdClient::txn(const Txn &txn) {
  etcdserverpb::TxnRequest request;
  for (const Compare &compare : txn.compares)
    *request.add_compare() = toProto(compare);
  for (const TxnOp &op : txn.success)
    *request.add_success() = toProto(op);
  for (const TxnOp &op : txn.failure)
    *request.add_failure() = toProto(op);
  etcdserverpb::TxnResponse response;
  Status status = impl_->call("Txn", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.kv->Txn(&context, request, &response);
  });
  if (!status)
    return status;
  return TxnResult{response.succeeded(), response.header().revision()};
}

Status EtcdClient::compact(int64_t revision) {
  etcdserverpb::CompactionRequest request;
  request.set_revision(revision);
  request.set_physical(true);
  etcdserverpb::CompactionResponse response;
  return impl_->call("Compact", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.kv->Compact(&context, request, &response);
  });
}

Result<LeaseGrant> EtcdClient::grantLease(int64_t ttlSeconds) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(ttlSeconds);
  etcdserverpb::LeaseGrantResponse response;
  Status status = impl_->call("LeaseGrant", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.lease->LeaseGrant(&context, request, &response);
  });
  if (!status)
    return status;
  if (!response.error().empty())
    return Status::make(ErrorCode::ERR_ETCD_005, {"LeaseGrant", response.error()});
  return LeaseGrant{response.id(), response.ttl()};
}

Status EtcdClient::revokeLease(int64_t id) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(id);
  etcdserverpb::LeaseRevokeResponse response;
  return impl_->call("LeaseRevoke", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.lease->LeaseRevoke(&context, request, &response);
  });
}

Result<int64_t> EtcdClient::leaseTimeToLive(int64_t id) {
  etcdserverpb::LeaseTimeToLiveRequest request;
  request.set_id(id);
  etcdserverpb::LeaseTimeToLiveResponse response;
  Status status = impl_->call("LeaseTimeToLive", [&](Endpoint &endpoint, grpc::ClientContext &context) {
    return endpoint.lease->LeaseTimeToLive(&context, request, &response);
  });
  if (!status)
    return status;
  // etcd answers an unknown or expired lease with TTL -1 rather than an error.
  if (response.ttl() <= 0)
    return Status::make(ErrorCode::ERR_ETCD_006, {std::to_string(id), "it expired or was revoked"});
  return response.ttl();
}

std::unique_ptr<LeaseKeepAlive> EtcdClient::keepAlive(const LeaseGrant &lease) {
  return std::unique_ptr<LeaseKeepAlive>(new LeaseKeepAlive(*impl_, lease));
}

Result<std::unique_ptr<Watch>> EtcdClient::watch(const std::string &key, const WatchOptions &options) {
  return Watch::start(*impl_, key, options);
}

Election EtcdClient::election(std::string name) { return Election(*impl_, std::move(name)); }

Result<MemberStatus> EtcdClient::memberStatus(const std::string &address) {
  for (Endpoint &endpoint : impl_->endpoints) {
    if (endpoint.address != address)
      continue;
    grpc::ClientContext context;
    // No hasleader here: the point is to ask a member that may have lost its leader.
    context.set_deadline(Clock::now() + impl_->options.callTimeout);
    etcdserverpb::StatusRequest request;
    etcdserverpb::StatusResponse response;
    grpc::Status status = endpoint.maintenance->Status(&context, request, &response);
    if (!status.ok()) {
      if (status.error_code() == grpc::StatusCode::UNAVAILABLE)
        return Status::make(ErrorCode::ERR_ETCD_002, {address, "Status", status.error_message()});
      return statusFromGrpc(status, "Status", address, impl_->options.callTimeout);
    }
    return MemberStatus{address, response.header().member_id(), response.leader(), response.raftterm(),
                        response.version()};
  }
  return Status::make(ErrorCode::ERR_ETCD_001, {address, "not one of the client's endpoints"});
}

} // namespace msc::etcd
