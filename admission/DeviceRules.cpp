// Block device and RDMA rules: the devices a role names are there, usable as asked, and
// suggestions name the closest device the node has.
#include "admission/Rules.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>

namespace msc::admission {

namespace {

// "nvme0n1p1" -> "nvme0n1"; "sda2" -> "sda"; otherwise empty.
std::string parentOfPartition(llvm::StringRef name) {
  if (name.starts_with("nvme")) {
    size_t p = name.rfind('p');
    if (p != llvm::StringRef::npos && p > 4 && p + 1 < name.size() &&
        llvm::all_of(name.substr(p + 1), [](char c) { return llvm::isDigit(c); }) && name.substr(0, p).contains('n'))
      return name.substr(0, p).str();
    return "";
  }
  llvm::StringRef base = name.rtrim("0123456789");
  return base.size() < name.size() ? base.str() : "";
}

std::vector<llvm::StringRef> blockDeviceNames(const hal::Topology &topo) {
  std::vector<llvm::StringRef> known;
  for (hal::VertexKind kind :
       {hal::VertexKind::NvmeNamespace, hal::VertexKind::NvmePartition, hal::VertexKind::BlockDevice})
    for (hal::VertexId v : topo.verticesOf(kind))
      if (!topo.vertex(v).name.empty())
        known.push_back(topo.vertex(v).name);
  return known;
}

// The device most likely meant: the parent of a partition that does not exist, the only
// partition of a namespace written instead, or the closest name.
std::string suggestBlockDevice(const hal::Topology &topo, llvm::StringRef name, llvm::ArrayRef<llvm::StringRef> known) {
  std::string parent = parentOfPartition(name);
  if (!parent.empty() && topo.blockDevice(parent) != hal::NoVertex)
    return parent;
  for (llvm::StringRef k : known)
    if (k.starts_with(name) && parentOfPartition(k) == name)
      return k.str();
  return closestMatch(name, known).value_or("");
}

std::optional<unsigned> queueDepthOf(const hal::Topology &topo, hal::VertexId v) {
  for (; v != hal::NoVertex; v = topo.parent(v))
    if (const auto *nvme = topo.vertex(v).as<hal::NvmeControllerInfo>())
      return nvme->queueDepth;
  return std::nullopt;
}

// "did you mean": a fix-it where the claim has a source range, a plain note otherwise.
void suggest(DiagBuilder &d, const Location &at, const std::string &message, const std::string &replacement) {
  if (at.hasRange())
    d.noteWithFixIt(at, message, {at.range, replacement});
  else
    d.note(Location::none(), message);
}

void checkBlockDevice(const BlockClaim &block, const RuleContext &ctx, llvm::ArrayRef<llvm::StringRef> known) {
  const hal::Topology &topo = ctx.topology;
  hal::VertexId device = topo.blockDevice(block.device);
  if (device == hal::NoVertex) {
    DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_NVME_001, ctx.at(block.at));
    d << block.written;
    std::string suggestion = suggestBlockDevice(topo, block.device, known);
    if (!suggestion.empty())
      suggest(d, block.at, "did you mean '/dev/" + suggestion + "'?", "\"/dev/" + suggestion + "\"");
    else
      d.note(Location::none(), known.empty() ? "this node has no block devices in its topology"
                                             : "block devices of this node: " + llvm::join(known, ", "));
    return;
  }
  std::optional<unsigned> depth = queueDepthOf(topo, device);
  if (block.ioDepth && depth && block.ioDepth > *depth)
    ctx.diags.report(DiagCode::ERR_HAL_NVME_002, ctx.at(block.ioDepthAt))
            .note(Location::none(), "cat /sys/block/" + block.device + "/queue/nr_requests shows the limit")
        << block.ioDepth << *depth << block.device;
}

// Returns the port's link layer when the device and port exist (empty when unknown), else nothing.
std::optional<std::string> checkPort(const RdmaPortClaim &claim, const RuleContext &ctx) {
  const hal::Topology &topo = ctx.topology;
  Location where = ctx.at(claim.at);
  const hal::RdmaInfo *device = topo.rdmaDevice(claim.device);
  if (!device) {
    std::vector<llvm::StringRef> names;
    for (hal::VertexId v : topo.verticesOf(hal::VertexKind::RdmaDevice))
      names.push_back(topo.vertex(v).name);
    DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_RDMA_001, where);
    d << claim.device;
    if (std::optional<std::string> fix = closestMatch(claim.device, names))
      suggest(d, claim.at, "did you mean '" + *fix + "'?", "\"" + *fix + ":" + std::to_string(claim.port) + "\"");
    else
      d.note(Location::none(), names.empty() ? "this node has no RDMA devices (ibv_devices lists none)"
                                             : "RDMA devices of this node: " + llvm::join(names, ", "));
    return std::nullopt;
  }
  // Sources without port details (hwloc XML) cannot confirm or refuse a port number.
  if (device->ports.empty())
    return std::string();
  // A claim on port 0 takes the device's first port.
  const hal::RdmaPort *port = claim.port == 0 ? &device->ports.front() : nullptr;
  for (const hal::RdmaPort &p : device->ports)
    if (p.number == claim.port)
      port = &p;
  if (!port) {
    std::vector<unsigned> numbers;
    for (const hal::RdmaPort &p : device->ports)
      numbers.push_back(p.number);
    ctx.diags.report(DiagCode::ERR_HAL_RDMA_002, where)
            .note(Location::none(), "'" + claim.device + "' has port(s) " + joinNumbers(numbers))
        << claim.device << claim.port;
    return std::nullopt;
  }
  llvm::StringRef state = port->state;
  if (!state.empty() && !state.contains_insensitive("active"))
    ctx.diags.report(DiagCode::ERR_HAL_RDMA_003, where)
            .note(Location::none(),
                  "ibstat " + claim.device + " " + std::to_string(port->number) + " shows the port state")
        << claim.device + ":" + std::to_string(port->number) << port->state;
  return port->linkLayer;
}

void checkPoolNearNic(const RoleClaims &role, const RuleContext &ctx) {
  if (!role.hugepages || !role.numaNode)
    return;
  const std::string &device = role.rdma->primary.device;
  std::optional<unsigned> nicNode = ctx.topology.numaNodeOfDevice(llvm::StringRef(device));
  if (!nicNode || *nicNode == *role.numaNode)
    return;
  DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_RDMA_005, ctx.at(role.numaAt));
  if (role.hugepages->at.hasRange())
    d.note(role.hugepages->at, "pool declared here; RDMA buffers away from the NIC cross the socket interconnect "
                               "on every transfer");
  d << role.role << *role.numaNode << device << *nicNode;
}

} // namespace

void checkBlockDevices(const Claims &claims, const RuleContext &ctx) {
  std::vector<llvm::StringRef> known = blockDeviceNames(ctx.topology);
  for (const RoleClaims &role : claims.roles)
    if (role.block)
      checkBlockDevice(*role.block, ctx, known);
}

void checkRdmaPorts(const Claims &claims, const RuleContext &ctx) {
  for (const RoleClaims &role : claims.roles) {
    if (!role.rdma)
      continue;
    const RdmaClaim &rdma = *role.rdma;
    if (std::optional<std::string> linkLayer = checkPort(rdma.primary, ctx)) {
      if (!rdma.linkLayer.empty() && !linkLayer->empty() &&
          !llvm::StringRef(*linkLayer).equals_insensitive(rdma.linkLayer))
        ctx.diags.report(DiagCode::ERR_HAL_RDMA_004, ctx.at(rdma.linkLayerAt))
            << rdma.primary.device + ":" + std::to_string(rdma.primary.port) << *linkLayer << rdma.linkLayer;
      checkPoolNearNic(role, ctx);
    }
    if (rdma.failover)
      checkPort(*rdma.failover, ctx);
  }
}

} // namespace msc::admission
