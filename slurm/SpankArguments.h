// Everything the plugin reads that it did not write, parsed by pure functions (no Slurm, no I/O) so
// that a fuzzer can reach them (test/fuzz/spank_options_fuzzer.cpp) and slurmstepd never crashes on
// them: the plugin's arguments in plugstack.conf, the --mscale-contract / MSCALE_CONTRACT value, and
// the two answers of mscale-cli it uses (the submitted contract's name, an attached task's
// environment and descriptors). Each failure is a coded message (SlurmDiagnostics.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace msc::slurm {

struct PluginConfig {
  std::string bindir;         // where mscalec and mscale-cli are (bindir=, default: the install's)
  std::string socket;         // the agent's socket (socket=, default: mscale-cli's own default; %h: the host)
  std::string stdlib;         // mscalec --stdlib (stdlib=, default: mscalec's own)
  unsigned timeoutSeconds = 60; // how long one tool may run (timeout=, 1..3600)
};

// `args` are the words after the plugin's path in plugstack.conf. nullopt with `error` set.
std::optional<PluginConfig> parsePluginArguments(const std::vector<std::string> &args, std::string defaultBindir,
                                                 std::string &error);

// `socket=` on host `host`: each "%h" becomes the host's name, "%%" a '%' (as in slurm.conf's paths);
// any other '%' stays. For hosts whose agents' sockets are named after them (one file system for
// several, or several emulated nodes on one machine, each in a UTS namespace of its own).
std::string socketForHost(std::string_view socket, std::string_view host);

// The contract file as the user gave it (`source` names where: "--mscale-contract",
// "MSCALE_CONTRACT"): not empty, at most 4095 bytes, no control characters.
std::optional<std::string> parseContractValue(std::string_view value, std::string_view source, std::string &error);

// mscale-cli contract submit's answer ("contract NAME" first): the contract's name, which must be a
// valid contract id (letters, digits, '_', '-', '.', not starting with '.', at most 128 bytes).
std::optional<std::string> parseSubmittedContract(std::string_view text, std::string &error);

// A descriptor of the node agent that the attached task is to take (pidfd_getfd) and name `variable`.
struct FdHandOver {
  std::string variable; // "MSCALE_CONTROL_FD"
  int agentPid = 0;
  int agentFd = 0;
  uint64_t device = 0, inode = 0; // the file it named when the agent answered
};

// mscale-cli contract attach's answer: NAME=VALUE lines, and "fd NAME /proc/PID/fd/N DEV:INO" lines
// for the agent's descriptors; every NAME an MSCALE_ variable of upper-case letters, digits and '_'
// and named once, PID and N decimal numbers that fit an int (PID > 0), DEV and INO decimal numbers
// that fit 64 bits. Empty lines are skipped.
struct AttachAnswer {
  std::vector<std::pair<std::string, std::string>> environment;
  std::vector<FdHandOver> fds;
};
std::optional<AttachAnswer> parseAttachAnswer(std::string_view text, std::string &error);

} // namespace msc::slurm
