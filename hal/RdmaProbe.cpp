// RDMA devices and ports through libibverbs on the live machine. Without RDMA hardware,
// ibv_get_device_list returns NULL with errno ENOSYS on some systems and an empty list on others.
#include "hal/detail/Probes.h"

#include <infiniband/verbs.h>

#include <cerrno>
#include <cstring>

namespace msc::hal::detail {
namespace {

double laneGbps(unsigned speed) {
  switch (speed) {
  case 1: return 2.5;
  case 2: return 5;
  case 4: case 8: return 10;
  case 16: return 14;
  case 32: return 25;
  case 64: return 50;
  case 128: return 100;
  case 256: return 200;
  default: return 0;
  }
}
unsigned lanes(unsigned width) {
  switch (width) {
  case 1: return 1;
  case 2: return 4;
  case 4: return 8;
  case 8: return 12;
  case 16: return 2;
  default: return 0;
  }
}

} // namespace

void addVerbsFacts(Topology &t) {
  t.reindex();
  int n = 0;
  errno = 0;
  ibv_device **list = ibv_get_device_list(&n);
  if (!list) {
    int err = errno;
    t.addNote(std::string("RDMA: no devices (libibverbs: ") + (err ? std::strerror(err) : "no list") + ")");
    return;
  }
  if (n == 0)
    t.addNote("RDMA: no devices (libibverbs found none)");
  for (int i = 0; i < n; ++i) {
    const char *name = ibv_get_device_name(list[i]);
    VertexId v = name ? t.findDevice(name) : NoVertex;
    if (v == NoVertex || t.vertex(v).kind != VertexKind::RdmaDevice) {
      Vertex rv;
      rv.kind = VertexKind::RdmaDevice;
      rv.name = name ? name : "";
      rv.data = RdmaInfo{};
      v = t.addVertex(std::move(rv), t.root());
    }
    RdmaInfo &info = *t.mutableVertex(v).as<RdmaInfo>();
    ibv_context *ctx = ibv_open_device(list[i]);
    if (!ctx)
      continue;
    ibv_device_attr dattr;
    if (ibv_query_device(ctx, &dattr) == 0) {
      if (dattr.max_qp > 0)
        info.maxQueuePairs = static_cast<uint32_t>(dattr.max_qp);
      // sysfs may already have given the ports with their counters
      bool needPorts = info.ports.empty();
      for (uint8_t p = 1; needPorts && p <= dattr.phys_port_cnt; ++p) {
        ibv_port_attr pattr;
        if (ibv_query_port(ctx, p, &pattr) != 0)
          continue;
        RdmaPort port;
        port.number = p;
        llvm::StringRef state = ibv_port_state_str(pattr.state);
        state.consume_front("PORT_");
        port.state = state.str();
        port.linkLayer = pattr.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand";
        port.rateGbps = lanes(pattr.active_width) * laneGbps(pattr.active_speed);
        info.ports.push_back(port);
      }
    }
    ibv_close_device(ctx);
  }
  ibv_free_device_list(list);
}

} // namespace msc::hal::detail
