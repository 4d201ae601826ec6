// nvme: the block device a role reads exists as written (device, namespace or partition) and
// its io_depth fits the device's queue.
#include "passes/PassUtil.h"
#include "passes/Passes.h"
#include "passes/Resolve.h"

#include <llvm/ADT/StringExtras.h>

namespace msc::passes {

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

class NvmePass : public Pass {
public:
  llvm::StringRef name() const override { return "nvme"; }
  llvm::StringRef summary() const override { return "block devices exist as written and io_depth fits their queues"; }

  void run(PassContext &ctx) override {
    const hal::Topology &topo = *ctx.topology;
    std::vector<llvm::StringRef> known;
    for (hal::VertexKind kind : {hal::VertexKind::NvmeNamespace, hal::VertexKind::NvmePartition, hal::VertexKind::BlockDevice})
      for (hal::VertexId v : topo.verticesOf(kind))
        if (!topo.vertex(v).name.empty())
          known.push_back(topo.vertex(v).name);
    for (const ir::Role &role : ctx.contract.body.roles) {
      if (!role.fields.io_queue)
        continue;
      const ir::Origin &origin = role.fields.io_queue->origin;
      std::string name = blockDeviceName(role.fields.io_queue->value);
      hal::VertexId device = topo.blockDevice(name);
      if (device == hal::NoVertex) {
        DiagBuilder d = ctx.diags.report(DiagCode::ERR_HAL_NVME_001, at(origin));
        d << role.fields.io_queue->value;
        std::string suggestion = parentOfPartition(name);
        if (suggestion.empty() || topo.blockDevice(suggestion) == hal::NoVertex) {
          suggestion.clear();
          // A namespace written where its only partition was meant, or a typo.
          for (llvm::StringRef k : known)
            if (k.starts_with(name) && parentOfPartition(k) == name) {
              suggestion = k.str();
              break;
            }
          if (suggestion.empty())
            if (auto close = closestMatch(name, known))
              suggestion = *close;
        }
        if (!suggestion.empty())
          d.noteWithFixIt(at(origin), "did you mean '/dev/" + suggestion + "'?", {origin.range, "\"/dev/" + suggestion + "\""});
        else
          d.note(Location::none(), known.empty() ? "this node has no block devices in its topology"
                                                 : "block devices of this node: " + llvm::join(known, ", "));
        continue;
      }
      if (!role.fields.io_depth)
        continue;
      std::optional<unsigned> depth = queueDepthOf(topo, device);
      if (depth && role.fields.io_depth->value > static_cast<int64_t>(*depth))
        ctx.diags.report(DiagCode::ERR_HAL_NVME_002, at(role.fields.io_depth->origin))
                .note(Location::none(), "cat /sys/block/" + name + "/queue/nr_requests shows the limit")
            << role.fields.io_depth->value << *depth << name;
    }
  }

private:
  static std::optional<unsigned> queueDepthOf(const hal::Topology &topo, hal::VertexId v) {
    for (; v != hal::NoVertex; v = topo.parent(v))
      if (const auto *nvme = topo.vertex(v).as<hal::NvmeControllerInfo>())
        return nvme->queueDepth;
    return std::nullopt;
  }
};

} // namespace

std::unique_ptr<Pass> createNvmePass() { return std::make_unique<NvmePass>(); }

} // namespace msc::passes
