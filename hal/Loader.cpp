// The single entry point: choose the loader from the source kind and the file's content.
#include "hal/Loader.h"
#include "hal/TopologyBinary.h"
#include "hal/TopologyYaml.h"
#include "support/ContentCache.h"

#include <hwloc.h>

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>

namespace msc::hal {

TopologySource TopologySource::sysfs(std::string root) {
  TopologySource s;
  s.live.sysfsRoot = std::move(root);
  return s;
}

TopologySource TopologySource::file(std::string path) {
  TopologySource s;
  s.kind = Kind::File;
  s.path = std::move(path);
  return s;
}

TopologySource TopologySource::fromArgument(llvm::StringRef arg) {
  if (arg == "live")
    return liveMachine();
  if (llvm::sys::fs::is_directory(arg))
    return sysfs(arg.str());
  return file(arg.str());
}

FileFormat detectFormat(llvm::StringRef contents, llvm::StringRef fileName) {
  llvm::StringRef head = contents.ltrim();
  if (head.starts_with("<?xml") || head.starts_with("<!DOCTYPE topology") || head.starts_with("<topology"))
    return FileFormat::HwlocXml;
  // nvidia-smi topo -m: a header line whose first column is GPU0 (after '#' comment lines).
  llvm::StringRef rest = contents;
  while (!rest.empty()) {
    auto [line, next] = rest.split('\n');
    rest = next;
    llvm::StringRef t = line.trim();
    if (t.empty() || t.starts_with("#"))
      continue;
    if (t.starts_with("GPU0") && (t.contains("CPU Affinity") || t.contains("GPU1") || t.contains("NIC0")))
      return FileFormat::NvidiaSmiTopo;
    break;
  }
  llvm::StringRef ext = llvm::sys::path::extension(fileName);
  if (ext == ".yaml" || ext == ".yml")
    return FileFormat::Yaml;
  if (ext == ".xml")
    return FileFormat::HwlocXml;
  // YAML: a mapping at the top level.
  for (llvm::StringRef key : {"name:", "numa_nodes:", "packages:", "topology:", "cluster:", "nodes:", "---"})
    if (head.starts_with(key) || contents.contains(("\n" + key).str()))
      return FileFormat::Yaml;
  return FileFormat::Unknown;
}

std::string hwlocXmlCacheKey(llvm::StringRef xml) {
  return ContentCache::key("hwloc-xml", xml, std::to_string(hwloc_get_api_version()));
}

namespace {

// hwloc's XML import was most of a compile against an XML node (docs/PERFORMANCE.md, "Start-up
// and compile"): the converted topology is cached by the XML's bytes (and hwloc's version), so
// the import runs once per file and build. Only a successful import is stored.
std::optional<Topology> loadHwlocXmlCached(llvm::StringRef xml, llvm::StringRef path, DiagnosticEngine &diags) {
  constexpr llvm::StringLiteral kKind = "hwloc-xml";
  const ContentCache cache = ContentCache::fromEnvironment();
  std::string key;
  if (!cache.disabled()) {
    key = hwlocXmlCacheKey(xml);
    if (std::optional<std::string> bytes = cache.load(kKind, key))
      if (std::optional<Topology> cached = decodeTopologyBinary(*bytes))
        return cached;
  }
  std::optional<Topology> t = loadHwlocXmlBuffer(xml, path, diags);
  if (t && !cache.disabled())
    cache.store(kKind, key, encodeTopologyBinary(*t));
  return t;
}

} // namespace

std::optional<Topology> loadTopology(const TopologySource &source, DiagnosticEngine &diags) {
  if (source.kind == TopologySource::Kind::Live)
    return discoverLive(source.live, diags);
  auto buf = llvm::MemoryBuffer::getFile(source.path, /*IsText=*/true);
  if (!buf) {
    diags.report(DiagCode::ERR_HAL_TOPO_001, Location{{}, source.path, 0})
        << source.path << buf.getError().message();
    return std::nullopt;
  }
  llvm::StringRef text = (*buf)->getBuffer();
  switch (detectFormat(text, source.path)) {
  case FileFormat::HwlocXml:
    return source.useCache ? loadHwlocXmlCached(text, source.path, diags)
                           : loadHwlocXmlBuffer(text, source.path, diags);
  case FileFormat::Yaml:
    return readTopologyYaml(text, source.path, diags, source.node);
  case FileFormat::NvidiaSmiTopo:
    diags.report(DiagCode::ERR_HAL_TOPO_007, Location{{}, source.path, 0})
        << source.path << "this is nvidia-smi topo -m output: a link matrix, not a topology (use "
                          "'topology show --matrix' to read it)";
    return std::nullopt;
  case FileFormat::Unknown:
    break;
  }
  diags.report(DiagCode::ERR_HAL_TOPO_007, Location{{}, source.path, 1})
      << source.path << "expected hwloc XML (<?xml ...>) or a topology YAML mapping";
  return std::nullopt;
}

} // namespace msc::hal
