#include "cluster/controller/Rendezvous.h"

#include <charconv>

namespace msc::cluster {

namespace {
uint32_t fnv1a(const std::string &text) {
  uint32_t h = 2166136261u;
  for (unsigned char c : text)
    h = (h ^ c) * 16777619u;
  return h;
}

std::optional<uint16_t> portOf(const Assignment &a) {
  auto it = a.environment.find("MASTER_PORT");
  uint16_t port = 0;
  if (it == a.environment.end())
    return std::nullopt;
  auto [end, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), port);
  if (ec != std::errc() || end != it->second.data() + it->second.size())
    return std::nullopt;
  return port;
}
} // namespace

uint16_t rendezvousPort(const std::string &contract, const std::vector<AssignedPlan> &previous) {
  for (const AssignedPlan &a : previous)
    if (std::optional<uint16_t> port = portOf(a.assignment);
        port && *port >= kRendezvousPortBase && *port < kRendezvousPortBase + kRendezvousPorts)
      return uint16_t(kRendezvousPortBase + (*port - kRendezvousPortBase + 1) % kRendezvousPorts);
  return uint16_t(kRendezvousPortBase + fnv1a(contract) % kRendezvousPorts);
}

std::map<std::string, std::string> rendezvousEnvironment(unsigned nodeRank, unsigned nodes,
                                                         const std::string &masterAddress, uint16_t masterPort) {
  return {{"RANK", std::to_string(nodeRank)},
          {"LOCAL_RANK", "0"},
          {"WORLD_SIZE", std::to_string(nodes)},
          {"LOCAL_WORLD_SIZE", "1"},
          {"NODE_RANK", std::to_string(nodeRank)},
          {"MASTER_ADDR", masterAddress},
          {"MASTER_PORT", std::to_string(masterPort)}};
}

std::map<std::string, std::string> batchEnvironment(const ir::WorldSizes &sizes, unsigned worldSize) {
  std::optional<ir::BatchSplit> split = ir::splitAt(sizes, worldSize);
  if (!split)
    return {};
  std::map<std::string, std::string> env = {{"MSCALE_GLOBAL_BATCH", std::to_string(sizes.globalBatch)},
                                            {"MSCALE_RANK_BATCH", std::to_string(split->rankBatch)},
                                            {"MSCALE_MICRO_BATCH", std::to_string(split->microBatch)},
                                            {"MSCALE_ACCUMULATION_STEPS", std::to_string(split->accumulation)}};
  if (sizes.deterministicReduction)
    env["MSCALE_DETERMINISTIC_REDUCTION"] = "1";
  return env;
}

} // namespace msc::cluster
