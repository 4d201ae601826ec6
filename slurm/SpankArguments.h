// Everything the plugin reads that it did not write, parsed by pure functions (no Slurm, no I/O) so
// that a fuzzer can reach them (test/fuzz/spank_options_fuzzer.cpp) and slurmstepd never crashes on
// them: the plugin's arguments in plugstack.conf, the --mscale-contract / MSCALE_CONTRACT value, and
// the two answers of mscale-cli it uses (the submitted contract's name, an attached task's
// environment). Each failure is a coded message (SlurmDiagnostics.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace msc::slurm {

struct PluginConfig {
  std::string bindir;         // where mscalec and mscale-cli are (bindir=, default: the install's)
  std::string socket;         // the agent's socket (socket=, default: mscale-cli's own default)
  std::string stdlib;         // mscalec --stdlib (stdlib=, default: mscalec's own)
  unsigned timeoutSeconds = 60; // how long one tool may run (timeout=, 1..3600)
};

// `args` are the words after the plugin's path in plugstack.conf. nullopt with `error` set.
std::optional<PluginConfig> parsePluginArguments(const std::vector<std::string> &args, std::string defaultBindir,
                                                 std::string &error);

// The contract file as the user gave it (`source` names where: "--mscale-contract",
// "MSCALE_CONTRACT"): not empty, at most 4095 bytes, no control characters.
std::optional<std::string> parseContractValue(std::string_view value, std::string_view source, std::string &error);

// mscale-cli contract submit's answer ("contract NAME" first): the contract's name, which must be a
// valid contract id (letters, digits, '_', '-', '.', not starting with '.', at most 128 bytes).
std::optional<std::string> parseSubmittedContract(std::string_view text, std::string &error);

// mscale-cli contract attach's answer: NAME=VALUE lines, every NAME an MSCALE_ variable of
// upper-case letters, digits and '_'. Empty lines are skipped.
std::optional<std::vector<std::pair<std::string, std::string>>> parseEnvironmentLines(std::string_view text,
                                                                                      std::string &error);

} // namespace msc::slurm
