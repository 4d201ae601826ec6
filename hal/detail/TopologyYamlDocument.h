// The YAML topology document as LLVM YAML I/O sees it: structs that mirror the file, and the traits
// that map them to keys and scalars. Internal to hal/: shared by the reader (TopologyYamlReader.cpp)
// and the writer (TopologyYamlWriter.cpp); the traits are defined in TopologyYamlDocument.cpp.
#pragma once

#include "hal/Topology.h"
#include "support/PciAddress.h"

#include <llvm/Support/SMLoc.h>
#include <llvm/Support/YAMLTraits.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace msc::hal {
namespace doc {

// Scalars that remember where they were in the input, for diagnostics after parsing.
struct Bdf {
  PciAddress addr;
  llvm::SMLoc loc;
  size_t len = 0;
};
struct DomainBus {
  PciBus bus;
  llvm::SMLoc loc;
  size_t len = 0;
};
struct CpuList {
  std::vector<unsigned> cpus;
  llvm::SMLoc loc;
  size_t len = 0;
};

struct U64 {
  uint64_t v = 0;
};
struct Hugepages {
  uint64_t page_size = 0, total = 0;
  std::optional<uint64_t> free;
};
struct Numa {
  unsigned id = 0;
  uint64_t memory_bytes = 0;
  CpuList cpus;
  std::string subtype;
  std::vector<U64> distances;
  std::vector<Hugepages> hugepages;
};
struct Package {
  unsigned id = 0;
  CpuList cpus;
};
struct Switch {
  Bdf bdf;
  std::vector<Bdf> gpus, nics, nvme, other;
  std::vector<Switch> switches;
};
struct Domain {
  DomainBus domain;
  std::optional<int> numa_node;
  std::vector<Bdf> gpus, nics, nvme, other;
  std::vector<Switch> switches;
};
struct Section {
  std::vector<Domain> pcie_domains;
};
struct Gpu {
  Bdf pci;
  std::string pci_id, vendor, model, compute_capability, mig;
  std::optional<unsigned> sm_count;
  std::optional<uint64_t> memory_bytes;
  std::optional<bool> green_contexts;
  std::optional<int64_t> temperature_mc;
  std::vector<std::string> names;
};
struct Port {
  unsigned port = 0;
  std::string state, link_layer;
  double rate_gbps = 0;
};
struct Nic {
  Bdf pci;
  std::string pci_id, rdma;
  std::optional<unsigned> max_qp;
  std::vector<std::string> netdevs;
  std::vector<Port> ports;
};
struct Namespace {
  std::string name;
  uint64_t size_bytes = 0;
  std::vector<std::string> partitions;
};
struct Nvme {
  Bdf pci;
  std::string pci_id, controller, model;
  std::optional<unsigned> queue_count, queue_depth;
  std::vector<Namespace> namespaces;
};
struct Thermal {
  std::string name;
  int64_t temp_mc = 0;
  std::optional<int64_t> limit_mc;
};
struct NvLink {
  Bdf a, b;
  unsigned links = 1;
};
struct NodeDoc {
  std::string name, kernel_cmdline;
  std::string offline_cpus; // kernel CPU-list syntax; PUs that exist but are offline
  std::vector<Package> packages;
  std::vector<Numa> numa_nodes;
  std::vector<CpuList> cores;
  Section topology;
  std::vector<Gpu> gpus;
  std::vector<Nic> nics;
  std::vector<Nvme> nvme;
  std::vector<Thermal> thermal;
  std::vector<NvLink> nvlinks;
};
struct File {
  std::string cluster;
  std::vector<NodeDoc> nodes;
  NodeDoc node;
};

// Which scalar failed, so the diagnostic handler can pick the code.
struct ParseContext {
  enum class Failure { None, Pci, CpuList } failure = Failure::None;
  std::string text, why;
};

} // namespace doc
} // namespace msc::hal

LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(msc::hal::doc::Bdf)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(msc::hal::doc::CpuList)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(msc::hal::doc::U64)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Hugepages)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Numa)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Package)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Switch)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Domain)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Gpu)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Port)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Nic)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Namespace)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Nvme)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::Thermal)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::NvLink)
LLVM_YAML_IS_SEQUENCE_VECTOR(msc::hal::doc::NodeDoc)

namespace llvm::yaml {

// Scalars print and parse themselves; one that fails to parse records why in the ParseContext given
// as the I/O context, so that the reader can pick the diagnostic code.
#define MSC_YAML_SCALAR(TYPE, QUOTING)                                                              \
  template <> struct ScalarTraits<msc::hal::doc::TYPE> {                                            \
    static void output(const msc::hal::doc::TYPE &v, void *ctx, raw_ostream &os);                   \
    static StringRef input(StringRef s, void *ctx, msc::hal::doc::TYPE &v);                         \
    static QuotingType mustQuote(StringRef) { return QuotingType::QUOTING; }                        \
  };
MSC_YAML_SCALAR(U64, None)
MSC_YAML_SCALAR(Bdf, Double)
MSC_YAML_SCALAR(DomainBus, Double)
MSC_YAML_SCALAR(CpuList, Double)
#undef MSC_YAML_SCALAR

// Which keys each struct has, and which of them are optional.
#define MSC_YAML_MAPPING(TYPE)                                                                      \
  template <> struct MappingTraits<msc::hal::doc::TYPE> {                                           \
    static void mapping(IO &io, msc::hal::doc::TYPE &value);                                        \
  };
MSC_YAML_MAPPING(Hugepages)
MSC_YAML_MAPPING(Numa)
MSC_YAML_MAPPING(Package)
MSC_YAML_MAPPING(Switch)
MSC_YAML_MAPPING(Domain)
MSC_YAML_MAPPING(Section)
MSC_YAML_MAPPING(Gpu)
MSC_YAML_MAPPING(Port)
MSC_YAML_MAPPING(Nic)
MSC_YAML_MAPPING(Namespace)
MSC_YAML_MAPPING(Nvme)
MSC_YAML_MAPPING(Thermal)
MSC_YAML_MAPPING(NvLink)
MSC_YAML_MAPPING(NodeDoc)
MSC_YAML_MAPPING(File)
#undef MSC_YAML_MAPPING

} // namespace llvm::yaml
