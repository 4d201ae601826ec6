// The exact binary form of a topology and the content cache that keeps an hwloc XML's conversion:
// a cached load gives the same topology as hwloc's import, a corrupt or foreign entry is rebuilt,
// and MSCALE_NO_CACHE turns the cache off.
#include "HalTestUtil.h"

#include "hal/Render.h"
#include "hal/TopologyBinary.h"
#include "hal/TopologyYaml.h"
#include "support/ContentCache.h"

#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdlib>
#include <fstream>

namespace msc::hal::test {
namespace {

// Everything a reader of a topology can see: the canonical YAML, the lstopo-like tree with caches,
// the JSON, the notes and the graph's shape edge by edge.
std::string observable(const Topology &t) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << writeTopologyYaml(t);
  printTree(t, os, TreeOptions{.caches = true});
  os << topologyJson(t);
  for (const std::string &note : t.notes())
    os << "note: " << note << "\n";
  for (auto [it, end] = boost::edges(t.graph()); it != end; ++it) {
    const Edge &e = t.graph()[*it];
    os << boost::source(*it, t.graph()) << "->" << boost::target(*it, t.graph()) << " " << int(e.kind) << " "
       << e.count << " " << e.value << "\n";
  }
  for (VertexId v = 0; v < t.vertexCount(); ++v)
    os << t.label(v) << " parent " << t.parent(v) << " numa " << t.vertex(v).numaNode << "\n";
  os << "fingerprint " << t.fingerprint() << "\n";
  return out;
}

std::string slurp(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

// A fresh cache directory in MSCALE_CACHE_DIR for one test; the environment is put back after.
class ScopedCacheDir {
public:
  ScopedCacheDir() {
    llvm::SmallString<128> dir;
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("msc-cache-test", dir));
    dir_ = std::string(dir);
    ::setenv("MSCALE_CACHE_DIR", dir_.c_str(), 1);
    ::unsetenv("MSCALE_NO_CACHE");
  }
  ~ScopedCacheDir() {
    ::unsetenv("MSCALE_CACHE_DIR");
    ::unsetenv("MSCALE_NO_CACHE");
    llvm::sys::fs::remove_directories(dir_);
  }
  const std::string &dir() const { return dir_; }

private:
  std::string dir_;
};

// What the tools do: loadTopology with the cache of the environment.
std::unique_ptr<Loaded> loadCached(const std::string &path) {
  auto l = std::make_unique<Loaded>();
  TopologySource source = TopologySource::file(path);
  source.useCache = true;
  l->topo = loadTopology(source, l->diags);
  return l;
}

bool isEmptyDirectory(const std::string &dir) {
  std::error_code ec;
  return llvm::sys::fs::directory_iterator(dir, ec) == llvm::sys::fs::directory_iterator();
}

const char *const kXmlFixtures[] = {
    "hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml",
    "hwloc-xml/hwloc-192em64t-24n8c2t.xml",
    "hwloc-xml/hwloc-32em64t-2n8c+dax+nvme+mic+dimms.gen-hwloc2.9.xml",
    "hwloc-xml/hwloc-nvidiaDGX2.xml",
    "hwloc-xml/mpibind-coral-lassen-power9-4xV100.xml",
    "hwloc-xml/hwloc-16intel64-manyVFs.xml",
};

TEST(TopologyBinary, RoundTripIsExactForEveryXmlFixture) {
  for (const char *name : kXmlFixtures) {
    SCOPED_TRACE(name);
    CollectingConsumer consumer;
    DiagnosticEngine diags(nullptr, consumer);
    std::optional<Topology> direct = loadHwlocXmlFile(fixture(name), diags);
    ASSERT_TRUE(direct) << codes(consumer.diags);
    std::optional<Topology> decoded = decodeTopologyBinary(encodeTopologyBinary(*direct));
    ASSERT_TRUE(decoded);
    EXPECT_EQ(observable(*decoded), observable(*direct));
    EXPECT_EQ(encodeTopologyBinary(*decoded), encodeTopologyBinary(*direct));
  }
}

TEST(TopologyBinary, RoundTripKeepsLiveOnlyFacts) {
  Topology t;
  t.setName("n1");
  t.setKernelCmdline("quiet isolcpus=2-3 nohz_full=3");
  t.addNote("CUDA driver: not present");
  VertexId m = t.addVertex(Vertex{VertexKind::Machine, "", 0, -1, {}});
  NumaInfo numa;
  numa.memoryBytes = 1ull << 34;
  numa.hugepages = {HugepagePool{2 << 20, 512, 100}, HugepagePool{1 << 30, 4, std::nullopt}};
  numa.cpus = {0, 1, 2, 3};
  t.addVertex(Vertex{VertexKind::NumaNode, "", 0, 0, numa}, m);
  RdmaInfo rdma;
  rdma.ports.push_back(RdmaPort{1, "ACTIVE", "InfiniBand", 200, {{"symbol_error", 3}}});
  rdma.maxQueuePairs = 1024;
  t.addVertex(Vertex{VertexKind::RdmaDevice, "mlx5_0", -1, 0, rdma}, m);
  GpuInfo gpu;
  gpu.pci = PciAddress{0, 0x81, 0, 0};
  gpu.model = "A100";
  gpu.greenContexts = true;
  gpu.temperatureMilliC = 41000;
  gpu.aliases = {"cuda0"};
  t.addVertex(Vertex{VertexKind::Gpu, "cuda0", 0, 0, gpu}, m);
  t.addVertex(Vertex{VertexKind::ThermalSensor, "tz0", 0, -1, ThermalInfo{45000, 95000, "thermal_zone0"}}, m);
  t.setNumaDistances({0}, {10});
  t.reindex();

  std::optional<Topology> back = decodeTopologyBinary(encodeTopologyBinary(t));
  ASSERT_TRUE(back);
  EXPECT_EQ(observable(*back), observable(t));
  EXPECT_EQ(back->kernelCmdline(), t.kernelCmdline());
  EXPECT_EQ(back->isolatedCpus(), (std::vector<unsigned>{2, 3}));
  EXPECT_EQ(back->freeHugepages(0, 2 << 20), std::optional<uint64_t>(100));
  ASSERT_NE(back->rdmaDevice("mlx5_0"), nullptr);
  EXPECT_EQ(back->rdmaDevice("mlx5_0")->ports, t.rdmaDevice("mlx5_0")->ports);
  EXPECT_EQ(back->numaDistance(0, 0), std::optional<uint64_t>(10));
}

TEST(TopologyBinary, EveryTruncationAndForeignBytesAreRefused) {
  CollectingConsumer consumer;
  DiagnosticEngine diags(nullptr, consumer);
  std::optional<Topology> t = loadHwlocXmlFile(fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml"), diags);
  ASSERT_TRUE(t);
  std::string bytes = encodeTopologyBinary(*t);
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 64)
    EXPECT_FALSE(decodeTopologyBinary(llvm::StringRef(bytes).take_front(n))) << "prefix of " << n << " bytes";
  EXPECT_FALSE(decodeTopologyBinary(bytes + "x")) << "trailing bytes";
  EXPECT_FALSE(decodeTopologyBinary("not a topology"));
  // An edge whose end is past the last vertex: the last edge's target is the last 17..21 bytes.
  std::string badEdge = bytes;
  badEdge[badEdge.size() - 17] = '\xff';
  badEdge[badEdge.size() - 16] = '\xff';
  EXPECT_FALSE(decodeTopologyBinary(badEdge));
}

TEST(TopologyCache, SecondLoadComesFromTheCacheAndIsIdentical) {
  ScopedCacheDir cacheDir;
  std::string path = fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml");
  ContentCache cache = ContentCache::fromEnvironment();
  ASSERT_FALSE(cache.disabled()) << "the test binary has no build ID";
  std::string entry = cache.entryPath("hwloc-xml", hwlocXmlCacheKey(slurp(path)));
  ASSERT_FALSE(llvm::sys::fs::exists(entry));

  auto first = loadCached(path);
  ASSERT_TRUE(first->topo) << codes(first->consumer.diags);
  ASSERT_TRUE(llvm::sys::fs::exists(entry)) << "the conversion was not stored";
  auto second = loadCached(path);
  ASSERT_TRUE(second->topo);
  EXPECT_EQ(observable(*second->topo), observable(*first->topo));

  ::setenv("MSCALE_NO_CACHE", "1", 1);
  auto uncached = loadCached(path);
  ASSERT_TRUE(uncached->topo);
  EXPECT_EQ(observable(*uncached->topo), observable(*first->topo));
}

TEST(TopologyCache, CorruptEntryIsIgnoredAndRebuilt) {
  ScopedCacheDir cacheDir;
  std::string path = fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml");
  ContentCache cache = ContentCache::fromEnvironment();
  ASSERT_FALSE(cache.disabled());
  std::string key = hwlocXmlCacheKey(slurp(path));
  std::string entry = cache.entryPath("hwloc-xml", key);

  auto reference = loadCached(path);
  ASSERT_TRUE(reference->topo);
  std::string good = slurp(entry);
  ASSERT_FALSE(good.empty());

  // A flipped payload byte (the checksum catches it), a truncated entry, an entry holding another
  // topology's (valid) conversion under this key: each is ignored, and the load rewrites it.
  std::string flipped = good;
  flipped[flipped.size() / 2] ^= 0x20;
  std::optional<std::string> other;
  {
    auto jureca = loadCached(fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml"));
    ASSERT_TRUE(jureca->topo);
    std::string otherPath = fixture("hwloc-xml/psmgmt-jrc0323-jurecadc-gpu-4xA100.xml");
    other = slurp(cache.entryPath("hwloc-xml", hwlocXmlCacheKey(slurp(otherPath))));
  }
  for (const std::string &bad : {flipped, good.substr(0, good.size() - 5), *other, std::string("garbage")}) {
    {
      std::ofstream out(entry, std::ios::binary | std::ios::trunc);
      out << bad;
    }
    auto reloaded = loadCached(path);
    ASSERT_TRUE(reloaded->topo);
    EXPECT_EQ(observable(*reloaded->topo), observable(*reference->topo));
    EXPECT_EQ(slurp(entry), good) << "the bad entry was not rebuilt";
  }
}

TEST(TopologyCache, NoCacheEnvironmentWritesNothing) {
  ScopedCacheDir cacheDir;
  ::setenv("MSCALE_NO_CACHE", "1", 1);
  EXPECT_TRUE(ContentCache::fromEnvironment().disabled());
  auto l = loadCached(fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(l->topo);
  EXPECT_TRUE(isEmptyDirectory(cacheDir.dir())) << "something was written to the cache directory";
}

TEST(TopologyCache, LibraryCallersDoNotUseTheCacheUnlessAsked) {
  ScopedCacheDir cacheDir;
  auto l = loadFile(fixture("hwloc-xml/hwloc-24em64t-2n6c2t-pci.xml"));
  ASSERT_TRUE(l->topo);
  EXPECT_TRUE(isEmptyDirectory(cacheDir.dir()));
}

} // namespace
} // namespace msc::hal::test
