#include "plan/PlanFile.h"

#include "support/PciAddress.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/Path.h>
#include <llvm/Support/raw_ostream.h>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <cstring>
#include <set>

namespace msc::plan {

namespace {

constexpr char kMagic[8] = {'M', 'S', 'C', 'P', 'L', 'A', 'N', '\0'};

uint64_t fnv1a(llvm::StringRef bytes) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    hash ^= c;
    hash *= 0x100000001b3ull;
  }
  return hash;
}

template <typename T> void putLE(std::string &out, T value) {
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((static_cast<uint64_t>(value) >> (8 * i)) & 0xff));
}

template <typename T> T getLE(const char *p) {
  uint64_t value = 0;
  for (size_t i = 0; i < sizeof(T); ++i)
    value |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return static_cast<T>(value);
}

std::string hex(uint64_t v) {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format_hex(v, 18);
  return out;
}

} // namespace

std::string encodePlan(const Plan &plan) {
  std::string payload;
  {
    google::protobuf::io::StringOutputStream stream(&payload);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    plan.SerializeToCodedStream(&coded);
  }
  std::string out(kMagic, sizeof(kMagic));
  putLE<uint16_t>(out, kFormatMajor);
  putLE<uint16_t>(out, kFormatMinor);
  putLE<uint32_t>(out, 0);
  putLE<uint64_t>(out, payload.size());
  putLE<uint64_t>(out, fnv1a(payload));
  out += payload;
  return out;
}

std::optional<Plan> decodePlan(llvm::StringRef bytes, llvm::StringRef name, DiagnosticEngine &diags) {
  Location where{{}, name.str(), 0};
  if (bytes.size() < sizeof(kMagic) || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    if (bytes.size() < sizeof(kMagic) && llvm::StringRef(kMagic, bytes.size()) == bytes)
      diags.report(DiagCode::ERR_PLAN_002, where) << name << ("the header is " + std::to_string(bytes.size()) +
                                                              " bytes, a plan header is " + std::to_string(kHeaderSize));
    else
      diags.report(DiagCode::ERR_PLAN_001, where) << name;
    return std::nullopt;
  }
  if (bytes.size() < kHeaderSize) {
    diags.report(DiagCode::ERR_PLAN_002, where)
        << name << ("the header is " + std::to_string(bytes.size()) + " bytes, a plan header is " +
                    std::to_string(kHeaderSize));
    return std::nullopt;
  }
  uint16_t major = getLE<uint16_t>(bytes.data() + 8);
  uint16_t minor = getLE<uint16_t>(bytes.data() + 10);
  uint64_t size = getLE<uint64_t>(bytes.data() + 16);
  uint64_t checksum = getLE<uint64_t>(bytes.data() + 24);
  if (major > kFormatMajor || major == 0) {
    diags.report(DiagCode::ERR_PLAN_004, where)
        << name << (std::to_string(major) + "." + std::to_string(minor))
        << (std::to_string(kFormatMajor) + "." + std::to_string(kFormatMinor));
    return std::nullopt;
  }
  if (size > kMaxPayload) {
    diags.report(DiagCode::ERR_PLAN_005, where) << name << ("payload size " + std::to_string(size) + " exceeds " +
                                                            std::to_string(kMaxPayload));
    return std::nullopt;
  }
  llvm::StringRef payload = bytes.drop_front(kHeaderSize);
  if (payload.size() < size) {
    diags.report(DiagCode::ERR_PLAN_002, where)
        << name << ("the payload is " + std::to_string(payload.size()) + " of " + std::to_string(size) + " bytes");
    return std::nullopt;
  }
  if (payload.size() > size) {
    diags.report(DiagCode::ERR_PLAN_005, where)
        << name << (std::to_string(payload.size() - size) + " unexpected bytes after the payload");
    return std::nullopt;
  }
  uint64_t actual = fnv1a(payload);
  if (actual != checksum) {
    diags.report(DiagCode::ERR_PLAN_003, where) << name << hex(actual) << hex(checksum);
    return std::nullopt;
  }
  Plan plan;
  if (!plan.ParseFromArray(payload.data(), static_cast<int>(payload.size()))) {
    diags.report(DiagCode::ERR_PLAN_005, where) << name << "the payload is not a Plan message";
    return std::nullopt;
  }
  std::vector<std::string> problems = verifyPlan(plan);
  if (!problems.empty()) {
    diags.report(DiagCode::ERR_PLAN_006, where) << name << problems.front();
    return std::nullopt;
  }
  return plan;
}

std::optional<Plan> readPlanFile(llvm::StringRef path, DiagnosticEngine &diags) {
  auto buffer = llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!buffer) {
    diags.report(DiagCode::ERR_DRV_001, Location{{}, path.str(), 0}) << path << buffer.getError().message();
    return std::nullopt;
  }
  return decodePlan((*buffer)->getBuffer(), path, diags);
}

bool writePlanFile(const Plan &plan, llvm::StringRef path, DiagnosticEngine &diags) {
  std::string bytes = encodePlan(plan);
  if (path == "-") {
    llvm::outs().write(bytes.data(), bytes.size());
    llvm::outs().flush();
    return true;
  }
  // What the path leads to decides where the bytes go. A device or a FIFO (`-o /dev/null`) is
  // written to: renaming a file over it would replace /dev/null for every process on the machine.
  // Anything else gets a temporary file renamed over it, so that no reader sees half a plan; over a
  // symbolic link's target, keeping the link.
  llvm::SmallString<256> target(path), temp;
  llvm::sys::fs::file_status status;
  bool exists = !llvm::sys::fs::status(path, status);
  bool inPlace = exists && status.type() != llvm::sys::fs::file_type::regular_file &&
                 status.type() != llvm::sys::fs::file_type::directory_file;
  int fd = -1;
  std::error_code ec;
  if (inPlace) {
    ec = llvm::sys::fs::openFileForWrite(path, fd, llvm::sys::fs::CD_OpenExisting);
  } else {
    if (exists)
      ec = llvm::sys::fs::real_path(path, target);
    llvm::StringRef dir = llvm::sys::path::parent_path(target);
    if (!ec)
      ec = llvm::sys::fs::createUniqueFile((dir.empty() ? llvm::Twine(".") : llvm::Twine(dir)) + "/.plan-%%%%%%.tmp",
                                           fd, temp);
  }
  if (!ec) {
    llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
    os.write(bytes.data(), bytes.size());
    os.close();
    if (os.has_error()) {
      ec = os.error();
      os.clear_error();
    }
  }
  if (!ec && !inPlace)
    ec = llvm::sys::fs::rename(temp, target);
  if (ec) {
    if (!temp.empty())
      llvm::sys::fs::remove(temp);
    diags.report(DiagCode::ERR_DRV_004, Location{{}, path.str(), 0}) << path << ec.message();
    return false;
  }
  return true;
}

std::vector<std::string> verifyPlan(const Plan &plan) {
  std::vector<std::string> problems;
  auto fail = [&](std::string what) { problems.push_back(std::move(what)); };
  if (plan.format_major() != kFormatMajor)
    fail("payload format " + std::to_string(plan.format_major()) + " differs from its header");
  if (plan.provenance().contract().empty())
    fail("no contract name in the provenance");
  std::set<std::string> roles;
  for (const GpuSlice &s : plan.gpu_slices()) {
    if (s.role().empty())
      fail("a GPU slice has no role");
    if (!parsePciAddress(s.pci_address()))
      fail("GPU slice of role '" + s.role() + "' has an invalid PCI address '" + s.pci_address() + "'");
    if (s.slices_per_gpu() == 0 || s.slices() > s.slices_per_gpu())
      fail("GPU slice of role '" + s.role() + "' holds " + std::to_string(s.slices()) + " of " +
           std::to_string(s.slices_per_gpu()) + " slices");
    if (s.gpu_sm_count() && s.sm_count() > s.gpu_sm_count())
      fail("GPU slice of role '" + s.role() + "' holds more SMs than the GPU has");
    if (s.numa_node() < -1)
      fail("GPU slice of role '" + s.role() + "' has NUMA node " + std::to_string(s.numa_node()));
  }
  for (const IoBinding &b : plan.io_bindings()) {
    if (b.role().empty())
      fail("an IO binding has no role");
    if (!roles.insert(b.role()).second)
      fail("role '" + b.role() + "' has two IO bindings");
    std::set<uint32_t> cpus(b.cpus().begin(), b.cpus().end());
    if (cpus.size() != static_cast<size_t>(b.cpus_size()))
      fail("IO binding of role '" + b.role() + "' lists a CPU twice");
    for (uint32_t core : b.physical_cores())
      if (!cpus.count(core) && !b.cpus().empty())
        fail("IO binding of role '" + b.role() + "' holds core " + std::to_string(core) + " outside its CPUs");
    if (b.numa_node() < -1)
      fail("IO binding of role '" + b.role() + "' has NUMA node " + std::to_string(b.numa_node()));
  }
  for (const MemoryPool &p : plan.memory_pools()) {
    if (p.page_size() < 4096 || (p.page_size() & (p.page_size() - 1)))
      fail("memory pool of role '" + p.role() + "' has page size " + std::to_string(p.page_size()));
    if (p.pages() == 0 || p.reserve_pages() > p.pages())
      fail("memory pool of role '" + p.role() + "' reserves more pages than it uses");
  }
  for (const RdmaSetting &r : plan.rdma())
    if (r.device().empty() || r.port() == 0)
      fail("RDMA setting of role '" + r.role() + "' names no device or port");
  const FaultTolerance &ft = plan.fault_tolerance();
  if (ft.snapshot_every_steps() && ft.snapshot_interval_ns())
    fail("fault tolerance sets both a step and a time cadence");
  if (plan.scaling().scale_up_below_mc() && plan.scaling().throttle_at_mc() &&
      plan.scaling().scale_up_below_mc() >= plan.scaling().throttle_at_mc())
    fail("scaling thresholds are inverted");
  return problems;
}

} // namespace msc::plan
