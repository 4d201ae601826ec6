// rdma: the RDMA device and port exist, the port is active with the link layer the contract asks
// for, and a role's hugepage pool sits on the NIC's NUMA node.
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::passes {

namespace {

class RdmaPass : public Pass {
public:
  llvm::StringRef name() const override { return "rdma"; }
  llvm::StringRef summary() const override {
    return "RDMA ports exist and are active with the right link layer; pools sit on the NIC's NUMA node";
  }

  void run(PassContext &ctx) override {
    for (const ir::Role &role : ctx.contract.body.roles) {
      if (role.fields.rdma_port && checkPort(ctx, role, *role.fields.rdma_port))
        checkPoolNode(ctx, role);
      if (role.fields.failover_port)
        checkPort(ctx, role, *role.fields.failover_port);
    }
  }

private:
  // Returns true when the port exists (further checks make sense).
  bool checkPort(PassContext &ctx, const ir::Role &role, const ir::Field<ir::RdmaPortRef> &field) {
    const hal::Topology &topo = *ctx.topology;
    const ir::RdmaPortRef &ref = field.value;
    const hal::RdmaInfo *device = topo.rdmaDevice(ref.device);
    if (!device) {
      std::vector<llvm::StringRef> names;
      for (hal::VertexId v : topo.verticesOf(hal::VertexKind::RdmaDevice))
        names.push_back(topo.vertex(v).name);
      DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_RDMA_001, at(field.origin));
      d << ref.device;
      if (auto fix = closestMatch(ref.device, names))
        d.noteWithFixIt(at(field.origin), "did you mean '" + *fix + "'?",
                        {field.origin.range, "\"" + *fix + ":" + std::to_string(ref.port) + "\""});
      else
        d.note(Location::none(), names.empty() ? "this node has no RDMA devices (ibv_devices lists none)"
                                               : "RDMA devices of this node: " + llvm::join(names, ", "));
      return false;
    }
    const hal::RdmaPort *port = nullptr;
    for (const hal::RdmaPort &p : device->ports)
      if (p.number == ref.port)
        port = &p;
    if (!port) {
      // Sources without port details (hwloc XML) cannot confirm or refuse a port number.
      if (device->ports.empty())
        return true;
      std::vector<unsigned> numbers;
      for (const hal::RdmaPort &p : device->ports)
        numbers.push_back(p.number);
      ctx.diags.report(DiagCode::ERR_HAL_RDMA_002, at(field.origin))
              .note(Location::none(), "'" + ref.device + "' has port(s) " + joinNumbers(numbers))
          << ref.device << ref.port;
      return false;
    }
    std::string portName = ref.device + ":" + std::to_string(ref.port);
    llvm::StringRef state = port->state;
    if (!state.empty() && !state.contains_insensitive("active"))
      ctx.diags.report(DiagCode::ERR_HAL_RDMA_003, at(field.origin))
              .note(Location::none(), "ibstat " + ref.device + " " + std::to_string(ref.port) + " shows the port state")
          << portName << port->state;
    if (role.fields.link_layer && !port->linkLayer.empty() &&
        !llvm::StringRef(port->linkLayer).equals_insensitive(role.fields.link_layer->value))
      ctx.diags.report(DiagCode::ERR_HAL_RDMA_004, at(role.fields.link_layer->origin))
          << portName << port->linkLayer << role.fields.link_layer->value;
    return true;
  }

  void checkPoolNode(PassContext &ctx, const ir::Role &role) {
    if (!role.fields.memory_pool || !role.fields.numa_node)
      return;
    const RolePlacement *r = ctx.placement.findRole(role.name);
    if (!r || !r->rdmaNumaNode)
      return;
    unsigned declared = static_cast<unsigned>(role.fields.numa_node->value);
    if (declared == *r->rdmaNumaNode)
      return;
    ctx.diags.report(DiagCode::ERR_HAL_RDMA_005, at(role.fields.numa_node->origin))
            .note(at(role.fields.memory_pool->origin), "pool declared here; RDMA buffers away from the NIC cross the "
                                                       "socket interconnect on every transfer")
        << role.name << declared << r->rdmaDevice << *r->rdmaNumaNode;
  }
};

} // namespace

std::unique_ptr<Pass> createRdmaPass() { return std::make_unique<RdmaPass>(); }

} // namespace msc::passes
