// RDMA backend selection and the helpers both backends share.
#include "executor/rdma/RdmaBackends.h"

namespace msc::exec {

RdmaBackend::~RdmaBackend() = default;

uint8_t ibTimeoutExponent(uint64_t ns) {
  if (ns == 0)
    return 0;
  // 4.096 us * 2^t >= ns  <=>  4096 << t >= ns
  for (uint8_t t = 1; t < 31; ++t)
    if ((uint64_t(4096) << t) >= ns)
      return t;
  return 31;
}

std::unique_ptr<RdmaBackend> selectRdmaBackend(const BackendOptions &options, std::string &why,
                                               DiagnosticEngine *diags) {
  if (options.rdma == "sim") {
    why = "sim: asked for";
    return createSimRdmaBackend(options);
  }
  if (options.rdma != "auto" && options.rdma != "ibverbs") {
    why = "unknown RDMA backend '" + options.rdma + "'";
    if (diags)
      diags->report(DiagCode::ERR_RDMA_002) << options.rdma;
    return nullptr;
  }
  std::string verbsWhy;
  if (auto verbs = createVerbsBackend(verbsWhy)) {
    why = "ibverbs: " + verbsWhy;
    return verbs;
  }
  if (options.rdma == "ibverbs") {
    why = "ibverbs unavailable: " + verbsWhy;
    if (diags)
      diags->report(DiagCode::ERR_RDMA_001) << verbsWhy;
    return nullptr;
  }
  why = "sim: " + verbsWhy;
  return createSimRdmaBackend(options);
}

} // namespace msc::exec
