// Choosing and building an RDMA backend: `auto` takes `ibverbs` when the verbs library lists at
// least one device and `sim` otherwise (on machines without RDMA devices ibv_get_device_list
// returns NULL with errno ENOSYS, or an empty list: both mean "no device"), and says why.
#pragma once

#include "executor/rdma/RdmaBackend.h"
#include "executor/core/BackendOptions.h"
#include "support/Diagnostic.h"

#include <cstdint>
#include <memory>
#include <string>

namespace msc::exec {

// The IB local ACK timeout exponent t for a timeout in ns: the smallest t in 1..31 with
// 4.096 us * 2^t >= ns (0, "wait forever", only for ns == 0).
uint8_t ibTimeoutExponent(uint64_t ns);
// retry_cnt is 3 bits in the verbs API.
inline uint8_t ibRetryCount(uint32_t retries) { return retries > 7 ? 7 : uint8_t(retries); }

struct VerbsProbe {
  bool available = false;
  int devices = 0;
  std::string why; // "no RDMA devices (ibv_get_device_list: Function not implemented)"
};
VerbsProbe probeVerbs();

std::unique_ptr<RdmaBackend> createVerbsBackend(std::string &why);
// The sim backend: ports from options.topology's RDMA devices; with no topology any device and
// port is accepted (up). Reads `rdma <device> <port> up|down` lines of the sim control file.
std::unique_ptr<RdmaBackend> createSimRdmaBackend(const BackendOptions &options);

// As selectGpuBackend: null only for an explicit backend that cannot be had (ERR_RDMA_001) or an
// unknown name (ERR_RDMA_002).
std::unique_ptr<RdmaBackend> selectRdmaBackend(const BackendOptions &options, std::string &why,
                                               DiagnosticEngine *diags = nullptr);

} // namespace msc::exec
