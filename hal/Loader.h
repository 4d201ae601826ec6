// Where a Topology comes from: the live machine (hwloc + sysfs/procfs + CUDA/NVML + verbs), a
// recorded sysfs tree, an hwloc XML export (v1, v2), or the project's YAML description.
// Every loader reports problems as coded diagnostics (ERR_HAL_TOPO_*) and returns nullopt on error.
#pragma once

#include "hal/Topology.h"
#include "support/Diagnostic.h"

#include <llvm/ADT/StringRef.h>

#include <optional>
#include <string>

namespace msc::hal {

struct LiveOptions {
  std::string sysfsRoot = "/"; // a recorded tree (hwloc-gather-topology) instead of the machine
  bool probeGpus = true;       // CUDA driver / NVML through dlopen (only when sysfsRoot is "/")
  bool probeVerbs = true;      // libibverbs (only when sysfsRoot is "/")
};

// What --topology / --input names: "live", a file, or a sysfs root directory.
struct TopologySource {
  enum class Kind { Live, File } kind = Kind::Live;
  std::string path;      // the file, for Kind::File
  LiveOptions live;      // for Kind::Live
  std::string node;      // cluster descriptions: the node to take (empty: the only one)
  // Keep an hwloc XML's conversion in the content cache of the environment
  // (support/ContentCache.h) and take it from there next time. The tools turn it on.
  bool useCache = false;

  static TopologySource liveMachine() { return {}; }
  static TopologySource sysfs(std::string root);
  static TopologySource file(std::string path);
  // "live" -> live machine; a directory -> sysfs root; anything else -> file.
  static TopologySource fromArgument(llvm::StringRef arg);
};

// The one entry point: picks the loader by source kind and, for files, by content
// (<?xml/<topology -> hwloc XML, a matrix header with GPU0 -> rejected here (see NvidiaSmi.h),
// otherwise YAML).
std::optional<Topology> loadTopology(const TopologySource &source, DiagnosticEngine &diags);

std::optional<Topology> discoverLive(const LiveOptions &options, DiagnosticEngine &diags);
std::optional<Topology> loadHwlocXmlFile(llvm::StringRef path, DiagnosticEngine &diags);
std::optional<Topology> loadHwlocXmlBuffer(llvm::StringRef xml, llvm::StringRef name, DiagnosticEngine &diags);

// The content-cache key (support/ContentCache.h) under which loadTopology keeps an hwloc XML's
// conversion: the XML's bytes, hwloc's version and the running build.
std::string hwlocXmlCacheKey(llvm::StringRef xml);

enum class FileFormat { HwlocXml, Yaml, NvidiaSmiTopo, Unknown };
FileFormat detectFormat(llvm::StringRef contents, llvm::StringRef fileName);

} // namespace msc::hal
