// The typed IR of contracts and profiles. Profiles are resolved (inheritance and overrides
// applied), units are normalised, and every value remembers where it was set, so that later
// diagnostics can point at the line that asked for it.
#pragma once

#include "support/Units.h"
#include "support/PciAddress.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>
#include <llvm/Support/raw_ostream.h>

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

namespace msc::ir {

// The IR's quantities are the shared unit types (support/Units.h).
using msc::BitsPerSecond;
using msc::Bytes;
using msc::MilliCelsius;
using msc::Nanoseconds;
using msc::PartsPerMillion;
using msc::formatBandwidth;
using msc::formatBytes;
using msc::formatDuration;
using msc::formatPercent;
using msc::formatTemperature;

enum class FieldKind {
  Int, Bool, String, Size, Duration, Temperature, Percent, Bandwidth, Real,
  CpuList, PciBus, GpuRef, RdmaPort, HugepagePool, RecoveryPoint, StringList, Choice, Lead, Count, Samples
};
llvm::StringRef fieldKindName(FieldKind kind); // "an integer", "a size", ... for diagnostics

struct GpuRef {
  // Any: `gpu = any`, a GPU the placement binds on the node (passes/Binding.h); the others name one.
  enum class Form { Index, Pci, Uuid, Any };
  Form form = Form::Index;
  uint32_t index = 0;
  PciAddress pci;
  std::string uuid;
  bool domainGiven = true; // "81:00.0" was written without its PCI domain
  bool operator==(const GpuRef &) const = default;
};

struct RdmaPortRef {
  std::string device; // "mlx5_0"; empty when `nearest` until placement binds it
  uint32_t port = 1;  // ports are numbered from 1
  bool nearest = false; // `rdma_port = nearest`: the HCA closest to the role's GPU by PCIe path
  bool operator==(const RdmaPortRef &) const = default;
};

// A role's cpu_cores: logical CPUs as listed, or `N local`: N whole physical cores near the role's
// device, which placement binds on the node (passes/Binding.h). A vector underneath so that the
// listed form reads as the CPU list it always was.
struct CpuCores : std::vector<uint32_t> {
  using std::vector<uint32_t>::vector;
  CpuCores() = default;
  explicit CpuCores(const std::vector<uint32_t> &cpus) : std::vector<uint32_t>(cpus) {}
  uint32_t localCores = 0; // N of `N local`; the list is empty until bound
  bool operator==(const CpuCores &) const = default;
};

struct HugepagePool {
  Bytes pageSize;
  uint64_t count = 0;
  bool operator==(const HugepagePool &) const = default;
};

struct RecoveryPoint {
  uint64_t steps = 0;       // every N steps, or
  Nanoseconds interval;     // every DURATION; exactly one is non-zero
  bool operator==(const RecoveryPoint &) const = default;
};

// `lead`: a fixed time ahead of each phase, or `auto` (learnt from the job's phase rhythm).
struct LeadTime {
  bool automatic = true;
  Nanoseconds fixed; // when not automatic
  bool operator==(const LeadTime &) const = default;
};

// A count the job takes at any size of: `4` (min = max) or `2..4` (an elastic job, the largest size
// the cluster can give). MIN/MAX of the field's row bound both ends.
struct CountRange {
  int64_t min = 1;
  int64_t max = 1;
  bool elastic() const { return min < max; }
  bool operator==(const CountRange &) const = default;
};

// Fields.def names fields as C++ does: a trailing '_' escapes a keyword the language spells plainly.
inline llvm::StringRef fieldSpelling(llvm::StringRef name) { return name.endswith("_") ? name.drop_back() : name; }

template <FieldKind K> struct KindType;
template <> struct KindType<FieldKind::Int> { using type = int64_t; };
template <> struct KindType<FieldKind::Bool> { using type = bool; };
template <> struct KindType<FieldKind::String> { using type = std::string; };
template <> struct KindType<FieldKind::Size> { using type = Bytes; };
template <> struct KindType<FieldKind::Duration> { using type = Nanoseconds; };
template <> struct KindType<FieldKind::Temperature> { using type = MilliCelsius; };
template <> struct KindType<FieldKind::Percent> { using type = PartsPerMillion; };
template <> struct KindType<FieldKind::Bandwidth> { using type = BitsPerSecond; };
template <> struct KindType<FieldKind::Real> { using type = double; };
template <> struct KindType<FieldKind::CpuList> { using type = CpuCores; };
template <> struct KindType<FieldKind::PciBus> { using type = msc::PciBus; };
template <> struct KindType<FieldKind::GpuRef> { using type = GpuRef; };
template <> struct KindType<FieldKind::RdmaPort> { using type = RdmaPortRef; };
template <> struct KindType<FieldKind::HugepagePool> { using type = HugepagePool; };
template <> struct KindType<FieldKind::RecoveryPoint> { using type = RecoveryPoint; };
template <> struct KindType<FieldKind::StringList> { using type = std::vector<std::string>; };
template <> struct KindType<FieldKind::Choice> { using type = std::string; };
template <> struct KindType<FieldKind::Lead> { using type = LeadTime; };
template <> struct KindType<FieldKind::Count> { using type = CountRange; };
template <> struct KindType<FieldKind::Samples> { using type = int64_t; };

// Where a value came from: the declaration that set it and the source range of the value.
struct Origin {
  std::string declaration; // "profile mlvm_base", "contract qwen_vl_train"
  llvm::SMRange range;     // the value as written
  llvm::SMRange fieldRange; // the field name as written
};

template <typename T> struct Field {
  T value{};
  Origin origin;
};

#define MSC_DECLARE_FIELD(NAME, KIND, ...)                                                 \
  std::optional<Field<KindType<FieldKind::KIND>::type>> NAME;

struct ComputeFields {
#define COMPUTE_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
struct RoleFields {
#define ROLE_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
struct FaultToleranceFields {
#define FAULT_TOLERANCE_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
struct ScalingFields {
#define SCALING_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
struct PolicyFields {
#define POLICY_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
struct LendingFields {
#define LENDING_FIELD MSC_DECLARE_FIELD
#include "ir/Fields.def"
};
#undef MSC_DECLARE_FIELD

// What a role that `gpus = N` expanded (passes/GpuCount.h) was expanded from: the role as written
// and N, so that a diagnostic about one copy can count the GPUs the role asked for.
struct GpuCopyOf {
  std::string role;   // "trainer" of trainer_g2
  unsigned index = 0; // 2 of trainer_g2
  unsigned count = 0; // N
};

// What a role holds that a phase can keep for itself or leave to be lent. Hugepage pools are never
// lent (a borrower could not give them back without the owner's pages), so they are not one.
enum class ResourceKind { Cpu, Io, Gpu, Rdma };
inline constexpr ResourceKind kResourceKinds[] = {ResourceKind::Cpu, ResourceKind::Io, ResourceKind::Gpu,
                                                  ResourceKind::Rdma};
llvm::StringRef resourceKindName(ResourceKind kind); // "cpu", "io", "gpu", "rdma"
struct RoleFields;
// Whether a role holds a kind (cpu: cpu_cores; io: io_queue, io_limit, io_weight, io_depth; gpu: gpu,
// gpus, sm_slices, gpu_memory; rdma: rdma_port, queue_pairs), and that list for people.
bool roleHolds(const RoleFields &fields, ResourceKind kind);
extern const char *const kRoleHoldingFields;

// How a phase is entered: by the worker (its control page), by a step schedule (every N steps for
// M steps), or by wall time within the job (from..to after its start).
struct PhaseWhen {
  enum class Kind { Worker, Steps, WallTime };
  Kind kind = Kind::Worker;
  uint64_t everySteps = 0, forSteps = 0; // Steps
  Nanoseconds from, to;                  // WallTime, since the job started
  Origin origin;                         // the `when` as written; empty for the default
  bool operator==(const PhaseWhen &o) const {
    return kind == o.kind && everySteps == o.everySteps && forSteps == o.forSteps && from == o.from && to == o.to;
  }
};

// One role's share of a phase: the resources it keeps to itself while the phase lasts.
struct PhaseUse {
  std::string role;
  std::vector<ResourceKind> exclusive; // in the order written
  std::vector<llvm::SMRange> written;  // where each of `exclusive` is written
  Origin origin;                       // the role's line in the phase
};

// A phase of the job's demand curve: what it uses exclusively; what the contract holds beyond that
// is lendable while the phase lasts.
struct Phase {
  std::string name;
  Origin origin; // the phase's name as written
  std::vector<PhaseUse> uses;
  PhaseWhen when;
  const PhaseUse *use(llvm::StringRef role) const;
};

struct Role {
  std::string name;     // "image_loader", "patch_embed", any name the user gives
  Origin origin;        // where the role was first declared
  RoleFields fields;
  std::optional<GpuCopyOf> copyOf; // set on the copies of a role with `gpus = N`
};

// What a profile or a contract says, after merging its profile chain.
struct Body {
  ComputeFields compute;
  std::vector<Role> roles; // in order of first declaration
  FaultToleranceFields faultTolerance;
  ScalingFields scaling;
  PolicyFields policy;
  std::vector<Phase> phases; // in order of first declaration; a later body's phase replaces one by name
  LendingFields lending;

  const Role *role(llvm::StringRef name) const;
  const Phase *phase(llvm::StringRef name) const;
  Role *role(llvm::StringRef name);
};

struct Profile {
  std::string name;
  std::string base;               // empty at the root of a chain
  std::vector<std::string> chain; // this profile first, then its ancestors
  llvm::SMRange nameRange;
  bool imported = false;          // defined in an imported file, not the one compiled
  Body body;                      // resolved: the chain's values with overrides applied
};

struct Contract {
  std::string name;
  std::string profile;            // empty when the contract uses none
  std::vector<std::string> chain; // the profile and its ancestors
  llvm::SMRange nameRange;
  std::string sourceFile;
  uint64_t sourceHash = 0;        // FNV-1a of the contract's file and its imports, for provenance
  Body body;
};

struct Module {
  std::vector<Profile> profiles;
  std::vector<Contract> contracts;

  const Profile *profile(llvm::StringRef name) const;
  const Contract *contract(llvm::StringRef name) const;
};

// Applies `over` on top of `base`: fields set in `over` replace those of `base`; roles merge
// by name. This is how a profile chain and a contract's own body combine.
void mergeInto(Body &base, const Body &over);

// `--emit=ir`: a stable, FileCheck-friendly text form.
void print(const Module &module, llvm::raw_ostream &os);
void print(const Contract &contract, llvm::raw_ostream &os);

// Checks the IR's invariants (not user errors: the frontend reports those). Returns a list of
// violations, empty when the module is well formed.
std::vector<std::string> verify(const Module &module);

} // namespace msc::ir
