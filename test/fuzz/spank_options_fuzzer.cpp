// Fuzzes what the SPANK plugin (slurm/) parses inside srun and slurmstepd: plugstack.conf arguments
// (the input split at NUL bytes), a --mscale-contract value, and mscale-cli's answers (the submitted
// contract's name, an attached task's environment). Nothing may crash or hang slurmstepd; whatever
// is accepted must hold what the plugin relies on.
#include "slurm/SpankArguments.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace msc::slurm;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string input(reinterpret_cast<const char *>(data), size);
  std::vector<std::string> args;
  for (size_t start = 0; start <= input.size();) {
    size_t end = input.find('\0', start);
    args.push_back(input.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  std::string error;
  if (std::optional<PluginConfig> c = parsePluginArguments(args, "/usr/local/bin", error)) {
    if (c->bindir.empty() || c->bindir.front() != '/' || c->timeoutSeconds < 1 || c->timeoutSeconds > 3600)
      std::abort();
  } else if (error.rfind("ERR_SLURM_001: ", 0) != 0) {
    std::abort();
  }
  if (std::optional<std::string> v = parseContractValue(input, "--mscale-contract", error)) {
    if (v->empty() || v->size() > 4095 || v->find('\n') != std::string::npos)
      std::abort();
  } else if (error.rfind("ERR_SLURM_002: ", 0) != 0) {
    std::abort();
  }
  if (std::optional<std::string> name = parseSubmittedContract(input, error))
    if (name->empty() || name->size() > 128 || name->find('/') != std::string::npos)
      std::abort();
  if (auto answer = parseAttachAnswer(input, error)) {
    for (auto &[k, v] : answer->environment)
      if (k.rfind("MSCALE_", 0) != 0 || v.find('\n') != std::string::npos)
        std::abort();
    for (const FdHandOver &fd : answer->fds)
      if (fd.variable.rfind("MSCALE_", 0) != 0 || fd.agentPid <= 0 || fd.agentFd < 0)
        std::abort();
  }
  return 0;
}
