// The leading controller's service (controller.proto): the cluster's writes. Every controller
// serves it; only the one that leads accepts, and writes what it accepts fenced by its leader key,
// so a write reaches etcd only through a leader that still leads. A standby refuses with
// ERR_CLUSTER_008 and names the leader it knows; the client (client/ControllerClient.h) goes there.
#pragma once

#include "cluster/controller/ContractCheck.h"
#include "cluster/controller/Controller.h"
#include "cluster/etcd/Status.h"

#include <memory>
#include <string>

namespace msc::cluster {

class ControllerServer {
public:
  // Listens on `listen` ("127.0.0.1:0" picks a free port; see address()). Fails with the reason in
  // `error` when the address cannot be listened on.
  static std::unique_ptr<ControllerServer> start(Controller &controller, etcd::EtcdClient &client,
                                                 const std::string &listen, ContractSourceOptions sources,
                                                 std::string &error);
  ~ControllerServer(); // stops serving; calls in flight finish first
  ControllerServer(const ControllerServer &) = delete;
  ControllerServer &operator=(const ControllerServer &) = delete;

  // "host:port" as bound: what the controller proclaims in the election for clients to call.
  const std::string &address() const { return address_; }

  struct Impl;

private:
  explicit ControllerServer(std::unique_ptr<Impl> impl, std::string address);
  std::unique_ptr<Impl> impl_;
  std::string address_;
};

} // namespace msc::cluster
