// Small helpers over sysfs, cgroupfs and procfs files: whole-file reads and writes with the
// kernel's reason on failure. Used by the appliers, the agent and the tests.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

// Reads the whole file; nullopt (and `error` = strerror) when it cannot.
std::optional<std::string> readFileText(const std::string &path, std::string *error = nullptr);
// Writes `value` with one write() (as control files need); false with `error` set on failure.
bool writeFileText(const std::string &path, llvm::StringRef value, std::string &error);
std::optional<uint64_t> readFileU64(const std::string &path);
bool pathExists(const std::string &path);
std::string errnoText(int err);

// Contract ids name cgroups and state files: [A-Za-z0-9_.-]{1,128}, not starting with '.'.
bool validContractId(llvm::StringRef id, std::string &why);

// Number of open file descriptors of this process (/proc/self/fd), for leak checks.
size_t countOpenFds();

} // namespace msc::exec
