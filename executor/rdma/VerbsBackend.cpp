// The `ibverbs` RDMA backend: per plan setting, the device's context, a protection domain, one
// completion queue and `queue_pairs` RC queue pairs with max_send_wr = max_outstanding, moved to
// INIT on the plan's port. retry_cnt and the ACK timeout exponent are kept for the RTR->RTS
// transition, which needs the remote side (done when the worker connects its peers).
#include "executor/rdma/RdmaBackends.h"

#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

namespace msc::exec {
namespace {

std::string errnoText(int e) { return std::string(std::strerror(e)); }

struct Group {
  ibv_context *ctx = nullptr;
  ibv_pd *pd = nullptr;
  ibv_cq *cq = nullptr;
  std::vector<ibv_qp *> qps;
  std::string device;
  unsigned port = 1;
  plan::RdmaSetting setting;
  uint8_t retryCount = 0, timeoutExponent = 0;

  void release() {
    for (ibv_qp *qp : qps)
      ibv_destroy_qp(qp);
    qps.clear();
    if (cq)
      ibv_destroy_cq(cq);
    if (pd)
      ibv_dealloc_pd(pd);
    if (ctx)
      ibv_close_device(ctx);
    cq = nullptr, pd = nullptr, ctx = nullptr;
  }
};

class VerbsBackend final : public RdmaBackend {
public:
  ~VerbsBackend() override {
    for (auto &[id, g] : groups_)
      g.release();
  }

  llvm::StringRef name() const override { return "ibverbs"; }

  std::optional<QpGroupId> createQueuePairs(const plan::RdmaSetting &setting, std::string &error) override {
    Group g;
    g.setting = setting;
    g.retryCount = ibRetryCount(setting.retry_count());
    g.timeoutExponent = ibTimeoutExponent(setting.timeout_ns());
    if (!open(g, setting.device(), setting.port() ? setting.port() : 1, error))
      return std::nullopt;
    std::lock_guard lock(mu_);
    QpGroupId id = next_++;
    groups_.emplace(id, std::move(g));
    return id;
  }

  void destroyQueuePairs(QpGroupId id) override {
    std::lock_guard lock(mu_);
    auto it = groups_.find(id);
    if (it == groups_.end())
      return;
    it->second.release();
    groups_.erase(it);
  }

  bool portActive(QpGroupId id) override {
    std::lock_guard lock(mu_);
    auto it = groups_.find(id);
    if (it == groups_.end())
      return false;
    ibv_port_attr attr{};
    return ibv_query_port(it->second.ctx, uint8_t(it->second.port), &attr) == 0 && attr.state == IBV_PORT_ACTIVE;
  }

  // A new group on the failover port is opened first; the old one goes only when that worked.
  bool failover(QpGroupId id, std::string &error) override {
    std::lock_guard lock(mu_);
    auto it = groups_.find(id);
    if (it == groups_.end()) {
      error = "ibverbs: no queue-pair group " + std::to_string(id);
      return false;
    }
    const plan::RdmaSetting &s = it->second.setting;
    if (s.failover_device().empty() && !s.failover_port()) {
      error = "the plan names no failover port";
      return false;
    }
    Group next;
    next.setting = s;
    next.retryCount = it->second.retryCount;
    next.timeoutExponent = it->second.timeoutExponent;
    if (!open(next, s.failover_device().empty() ? s.device() : s.failover_device(),
              s.failover_port() ? s.failover_port() : 1, error))
      return false;
    ibv_port_attr attr{};
    if (ibv_query_port(next.ctx, uint8_t(next.port), &attr) != 0 || attr.state != IBV_PORT_ACTIVE) {
      error = "failover port " + std::to_string(next.port) + " of '" + next.device + "' is not active";
      next.release();
      return false;
    }
    it->second.release();
    it->second = std::move(next);
    return true;
  }

  // Fewer: the newest queue pairs are destroyed. More: made as open() made the first, on the same
  // protection domain and completion queue (sized for the group's queue pairs when it was opened: a
  // group grows back only to what it was).
  bool resizeQueuePairs(QpGroupId id, unsigned queuePairs, std::string &error) override {
    std::lock_guard lock(mu_);
    auto it = groups_.find(id);
    if (it == groups_.end()) {
      error = "ibverbs: no queue-pair group " + std::to_string(id);
      return false;
    }
    Group &g = it->second;
    unsigned want = std::max(1u, queuePairs);
    if (want > std::max(1u, g.setting.queue_pairs())) {
      error = "ibverbs: a group of " + std::to_string(g.setting.queue_pairs()) + " queue pairs cannot grow to " +
              std::to_string(want);
      return false;
    }
    while (g.qps.size() > want) {
      ibv_destroy_qp(g.qps.back());
      g.qps.pop_back();
    }
    size_t had = g.qps.size();
    while (g.qps.size() < want)
      if (!addQueuePair(g, error)) {
        while (g.qps.size() > had) { // the group as it was
          ibv_destroy_qp(g.qps.back());
          g.qps.pop_back();
        }
        return false;
      }
    return true;
  }

private:
  // One reliable-connection queue pair of the group's depth, brought to INIT on its port.
  static bool addQueuePair(Group &g, std::string &error) {
    unsigned depth = std::max(1u, g.setting.max_outstanding());
    ibv_qp_init_attr init{};
    init.send_cq = g.cq;
    init.recv_cq = g.cq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = depth;
    init.cap.max_recv_wr = depth;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    ibv_qp *qp = ibv_create_qp(g.pd, &init);
    if (!qp) {
      error = "ibverbs: '" + g.device + "' port " + std::to_string(g.port) + ": ibv_create_qp: " + errnoText(errno);
      return false;
    }
    ibv_qp_attr attr{};
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = uint8_t(g.port);
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
    if (int rc = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
      ibv_destroy_qp(qp);
      error = "ibverbs: '" + g.device + "' port " + std::to_string(g.port) + ": ibv_modify_qp(INIT): " + errnoText(rc);
      return false;
    }
    g.qps.push_back(qp);
    return true;
  }

  static bool open(Group &g, const std::string &device, unsigned port, std::string &error) {
    g.device = device;
    g.port = port;
    int n = 0;
    errno = 0;
    ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
      error = "ibverbs: ibv_get_device_list: " + errnoText(errno);
      return false;
    }
    ibv_device *found = nullptr;
    for (int i = 0; i < n; ++i)
      if (device == ibv_get_device_name(list[i]))
        found = list[i];
    if (!found) {
      ibv_free_device_list(list);
      error = "ibverbs: no device '" + device + "'";
      return false;
    }
    g.ctx = ibv_open_device(found);
    int openErrno = errno;
    ibv_free_device_list(list);
    auto fail = [&](const std::string &what, int e) {
      error = "ibverbs: '" + device + "' port " + std::to_string(port) + ": " + what + ": " + errnoText(e);
      g.release();
      return false;
    };
    if (!g.ctx)
      return fail("ibv_open_device", openErrno);
    ibv_port_attr pattr{};
    if (int rc = ibv_query_port(g.ctx, uint8_t(port), &pattr))
      return fail("ibv_query_port", rc);
    std::string layer = pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
    const std::string &want = g.setting.link_layer();
    if (!want.empty() && !llvm::StringRef(want).equals_insensitive(layer)) { // plans say "infiniband"
      error = "ibverbs: port " + std::to_string(port) + " of '" + device + "' is " + layer + ", the plan expects " + want;
      g.release();
      return false;
    }
    ibv_device_attr dattr{};
    if (int rc = ibv_query_device(g.ctx, &dattr))
      return fail("ibv_query_device", rc);
    unsigned qps = std::max(1u, g.setting.queue_pairs());
    unsigned depth = std::max(1u, g.setting.max_outstanding());
    if (depth > unsigned(dattr.max_qp_wr)) {
      error = "ibverbs: '" + device + "' allows " + std::to_string(dattr.max_qp_wr) +
              " outstanding work requests per queue pair, the plan asks " + std::to_string(depth);
      g.release();
      return false;
    }
    if (!(g.pd = ibv_alloc_pd(g.ctx)))
      return fail("ibv_alloc_pd", errno);
    int cqe = int(std::min<uint64_t>(uint64_t(qps) * depth * 2, uint64_t(dattr.max_cqe)));
    if (!(g.cq = ibv_create_cq(g.ctx, cqe, nullptr, nullptr, 0)))
      return fail("ibv_create_cq", errno);
    for (unsigned i = 0; i < qps; ++i)
      if (!addQueuePair(g, error)) {
        g.release();
        return false;
      }
    return true;
  }

  std::mutex mu_;
  std::map<QpGroupId, Group> groups_;
  QpGroupId next_ = 1;
};

} // namespace

VerbsProbe probeVerbs() {
  VerbsProbe probe;
  int n = 0;
  errno = 0;
  ibv_device **list = ibv_get_device_list(&n);
  if (!list) {
    int e = errno;
    probe.why = "no RDMA devices (ibv_get_device_list: " + (e ? errnoText(e) : std::string("no list")) + ")";
    return probe;
  }
  ibv_free_device_list(list);
  if (n == 0) {
    probe.why = "no RDMA devices (ibv_get_device_list: empty list)";
    return probe;
  }
  probe.available = true;
  probe.devices = n;
  probe.why = std::to_string(n) + " RDMA device(s)";
  return probe;
}

std::unique_ptr<RdmaBackend> createVerbsBackend(std::string &why) {
  VerbsProbe probe = probeVerbs();
  why = probe.why;
  if (!probe.available)
    return nullptr;
  return std::make_unique<VerbsBackend>();
}

} // namespace msc::exec
