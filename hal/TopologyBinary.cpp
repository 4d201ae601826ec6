// The exact binary form of a Topology. One description of each struct's fields (`fields`) serves
// both directions, so writer and reader cannot drift apart. Integers are little-endian; strings
// and vectors are a u32 count then the items. The reader checks every count against the bytes
// left and every enum against its range.
#include "hal/TopologyBinary.h"

#include <llvm/Support/Endian.h>

#include <cstring>
#include <type_traits>

namespace msc::hal {
namespace {

constexpr llvm::StringLiteral kMagic = "MSCTOPO2";

template <class T> constexpr uint8_t enumMax();
template <> constexpr uint8_t enumMax<VertexKind>() { return uint8_t(VertexKind::ThermalSensor); }
template <> constexpr uint8_t enumMax<EdgeKind>() { return uint8_t(EdgeKind::NumaDistance); }
template <> constexpr uint8_t enumMax<BridgeRole>() { return uint8_t(BridgeRole::Other); }
template <> constexpr uint8_t enumMax<MigMode>() { return uint8_t(MigMode::Enabled); }

class Writer {
public:
  std::string out;

  template <class... Ts> void operator()(const Ts &...values) { (put(values), ...); }

private:
  void raw(const void *p, size_t n) { out.append(static_cast<const char *>(p), n); }
  void put(bool v) { out.push_back(v ? 1 : 0); }
  void put(char v) { out.push_back(v); }
  template <class T> std::enable_if_t<std::is_integral_v<T>> put(T v) {
    using U = std::make_unsigned_t<T>;
    char b[sizeof(T)];
    llvm::support::endian::write<U, llvm::support::little, 1>(b, static_cast<U>(v));
    raw(b, sizeof b);
  }
  template <class T> std::enable_if_t<std::is_enum_v<T>> put(T v) { put(static_cast<uint8_t>(v)); }
  void put(float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put(bits);
  }
  void put(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    put(bits);
  }
  void put(const std::string &s) {
    put(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void put(const PciAddress &a) { (*this)(a.domain, a.bus, a.device, a.function); }
  template <class T> void put(const std::optional<T> &o) {
    put(o.has_value());
    if (o)
      put(*o);
  }
  template <class A, class B> void put(const std::pair<A, B> &p) { (*this)(p.first, p.second); }
  template <class T> void put(const std::vector<T> &v) {
    put(static_cast<uint32_t>(v.size()));
    for (const T &x : v)
      put(x);
  }
  template <class T> auto put(const T &x) -> decltype(fields(*this, x)) { fields(*this, x); }
};

class Reader {
public:
  explicit Reader(llvm::StringRef bytes) : rest_(bytes) {}
  bool ok() const { return ok_; }
  bool atEnd() const { return rest_.empty(); }
  void fail() { ok_ = false; }

  template <class... Ts> void operator()(Ts &...values) { (get(values), ...); }

  // A count of items each at least `minItemBytes` long: fails rather than allocate for a count
  // the remaining bytes cannot hold.
  uint32_t count(size_t minItemBytes) {
    uint32_t n = 0;
    get(n);
    if (ok_ && uint64_t(n) * minItemBytes > rest_.size())
      fail();
    return ok_ ? n : 0;
  }

private:
  const char *take(size_t n) {
    if (!ok_ || rest_.size() < n) {
      fail();
      return nullptr;
    }
    const char *p = rest_.data();
    rest_ = rest_.drop_front(n);
    return p;
  }
  void get(bool &v) {
    uint8_t b = 0;
    get(b);
    if (b > 1)
      fail();
    v = b == 1;
  }
  void get(char &v) {
    if (const char *p = take(1))
      v = *p;
  }
  template <class T> std::enable_if_t<std::is_integral_v<T>> get(T &v) {
    using U = std::make_unsigned_t<T>;
    if (const char *p = take(sizeof(T)))
      v = static_cast<T>(llvm::support::endian::read<U, llvm::support::little, 1>(p));
  }
  template <class T> std::enable_if_t<std::is_enum_v<T>> get(T &v) {
    uint8_t b = 0;
    get(b);
    if (b > enumMax<T>())
      fail();
    v = static_cast<T>(b);
  }
  void get(float &v) {
    uint32_t bits = 0;
    get(bits);
    std::memcpy(&v, &bits, sizeof v);
  }
  void get(double &v) {
    uint64_t bits = 0;
    get(bits);
    std::memcpy(&v, &bits, sizeof v);
  }
  void get(std::string &s) {
    uint32_t n = count(1);
    if (const char *p = take(n))
      s.assign(p, n);
  }
  void get(PciAddress &a) { (*this)(a.domain, a.bus, a.device, a.function); }
  template <class T> void get(std::optional<T> &o) {
    bool has = false;
    get(has);
    if (has && ok_) {
      T x{};
      get(x);
      o = std::move(x);
    }
  }
  template <class A, class B> void get(std::pair<A, B> &p) { (*this)(p.first, p.second); }
  template <class T> void get(std::vector<T> &v) {
    uint32_t n = count(1);
    v.resize(n);
    for (T &x : v)
      get(x);
  }
  template <class T> auto get(T &x) -> decltype(fields(*this, x)) { fields(*this, x); }

  llvm::StringRef rest_;
  bool ok_ = true;
};

// The fields of each struct, in order; `A` is Writer (T const) or Reader.
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, HugepagePool>> {
  a(x.pageSize, x.total, x.free);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, NumaInfo>> {
  a(x.memoryBytes, x.hugepages, x.cpus, x.subtype);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, CacheInfo>> {
  a(x.level, x.sizeBytes, x.type);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, PuInfo>> {
  a(x.online);
}
template <class A, class T>
auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, HostBridgeInfo>> {
  a(x.domain, x.firstBus, x.lastBus);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, PciInfo>> {
  a(x.address, x.vendorId, x.deviceId, x.classId, x.linkGBps, x.role, x.vendorName, x.deviceName);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, GpuInfo>> {
  a(x.pci, x.vendor, x.model, x.smCount, x.memoryBytes, x.ccMajor, x.ccMinor, x.mig, x.greenContexts,
    x.temperatureMilliC, x.aliases);
}
template <class A, class T>
auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, NvmeControllerInfo>> {
  a(x.pci, x.model, x.queueCount, x.queueDepth);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, BlockInfo>> {
  a(x.sizeBytes, x.subtype);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, RdmaPort>> {
  a(x.number, x.state, x.linkLayer, x.rateGbps, x.errorCounters);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, RdmaInfo>> {
  a(x.ports, x.maxQueuePairs);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, NetInfo>> {
  a(x.address);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, ThermalInfo>> {
  a(x.tempMilliC, x.limitMilliC, x.source);
}
template <class A, class T> auto fields(A &a, T &x) -> std::enable_if_t<std::is_same_v<std::remove_const_t<T>, Edge>> {
  a(x.kind, x.count, x.value);
}

void writeVertex(Writer &w, const Vertex &v) {
  w(v.kind, v.name, v.osIndex, v.numaNode, static_cast<uint8_t>(v.data.index()));
  std::visit(
      [&](const auto &data) {
        if constexpr (!std::is_same_v<std::decay_t<decltype(data)>, std::monostate>)
          w(data);
      },
      v.data);
}

// Reads the alternative with index `index` into `data`.
template <size_t I = 0> void readData(Reader &r, size_t index, decltype(Vertex::data) &data) {
  using Data = decltype(Vertex::data);
  if constexpr (I < std::variant_size_v<Data>) {
    if (index != I)
      return readData<I + 1>(r, index, data);
    using T = std::variant_alternative_t<I, Data>;
    if constexpr (std::is_same_v<T, std::monostate>) {
      data = std::monostate{};
    } else {
      T x{};
      r(x);
      data = std::move(x);
    }
  } else {
    r.fail();
  }
}

} // namespace

std::string encodeTopologyBinary(const Topology &t) {
  Writer w;
  w.out.append(kMagic.data(), kMagic.size());
  w(t.name(), t.kernelCmdline(), t.notes(), t.numaDistanceOrder(), t.numaDistanceMatrix());
  const Graph &g = t.graph();
  w(static_cast<uint32_t>(t.vertexCount()));
  for (VertexId v = 0; v < t.vertexCount(); ++v)
    writeVertex(w, g[v]);
  w(static_cast<uint32_t>(boost::num_edges(g)));
  // A bidirectional adjacency_list lists its edges in the order they were added.
  for (auto [it, end] = boost::edges(g); it != end; ++it)
    w(static_cast<uint32_t>(boost::source(*it, g)), static_cast<uint32_t>(boost::target(*it, g)), g[*it]);
  return std::move(w.out);
}

std::optional<Topology> decodeTopologyBinary(llvm::StringRef bytes) {
  if (!bytes.consume_front(kMagic))
    return std::nullopt;
  Reader r(bytes);
  std::string name, cmdline;
  std::vector<std::string> notes;
  std::vector<unsigned> distOrder;
  std::vector<uint64_t> distMatrix;
  r(name, cmdline, notes, distOrder, distMatrix);
  if (!r.ok() || distMatrix.size() != distOrder.size() * distOrder.size())
    return std::nullopt;
  Topology t;
  t.setName(std::move(name));
  t.setKernelCmdline(std::move(cmdline));
  for (std::string &note : notes)
    t.addNote(std::move(note));
  if (!distOrder.empty())
    t.setNumaDistances(std::move(distOrder), std::move(distMatrix));

  constexpr size_t kMinVertexBytes = 1 + 4 + 8 + 4 + 1, kEdgeBytes = 4 + 4 + 1 + 4 + 8;
  uint32_t vertices = r.count(kMinVertexBytes);
  for (uint32_t i = 0; i < vertices && r.ok(); ++i) {
    Vertex v;
    uint8_t index = 0;
    r(v.kind, v.name, v.osIndex, v.numaNode, index);
    readData(r, index, v.data);
    t.addVertex(std::move(v));
  }
  uint32_t edges = r.count(kEdgeBytes);
  for (uint32_t i = 0; i < edges && r.ok(); ++i) {
    uint32_t source = 0, target = 0;
    Edge e;
    r(source, target, e);
    if (source >= vertices || target >= vertices)
      r.fail();
    if (r.ok())
      t.addEdge(source, target, e);
  }
  if (!r.ok() || !r.atEnd())
    return std::nullopt;
  t.reindex();
  return t;
}

} // namespace msc::hal
