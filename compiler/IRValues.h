// Value conversion for IR generation: one AST value -> the typed IR value of one field, units
// normalised to base units, bounds and choices checked, each misfit a coded diagnostic at the value.
// Private to compiler/: IRGen.cpp resolves declarations and hands each assignment to assign().
#pragma once

#include "compiler/AST.h"
#include "support/Quantity.h"
#include "ir/IR.h"
#include "support/Diagnostic.h"
#include "support/PciAddress.h"

#include <llvm/ADT/StringRef.h>

#include <cstdint>
#include <optional>

namespace msc::detail {

// One field a block may set: a row of ir/Fields.def.
struct FieldInfo {
  llvm::StringRef name;
  ir::FieldKind kind;
  int64_t min, max; // min < max bounds an Int field
  llvm::StringRef choices;
};

// Converts AST values to typed IR values for one field, reporting what does not fit.
class ValueConverter {
public:
  explicit ValueConverter(DiagnosticEngine &diags) : diags_(diags) {}

  // Converts `v` to the kind of `info` and, when it fits, sets the member of `fields` that `info`
  // names, with `origin`. A value that does not fit leaves the member unset.
  void assign(ir::ComputeFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin);
  void assign(ir::RoleFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin);
  void assign(ir::FaultToleranceFields &fields, const FieldInfo &info, const ast::Value &v,
              const ir::Origin &origin);
  void assign(ir::ScalingFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin);
  void assign(ir::PolicyFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin);
  void assign(ir::LendingFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin);

  // A phase's `when`: worker, every(N steps, for = M steps), or FROM..TO of wall time (37min..42min).
  // nullopt after ERR_SEM_022.
  std::optional<ir::PhaseWhen> phaseWhen(const ast::Value &v, const std::string &phase);
  // A role's line in a phase: a list of resource kinds ([cpu, io], [] for none). nullopt after
  // ERR_SEM_023 (a word that is no resource kind) or ERR_SEM_015 (one named twice).
  // `written` gets where each kind is written.
  std::optional<std::vector<ir::ResourceKind>> exclusiveResources(const ast::Value &v, const std::string &role,
                                                                  std::vector<llvm::SMRange> &written);

private:
  template <ir::FieldKind K>
  std::optional<typename ir::KindType<K>::type> convert(const ast::Value &v, const FieldInfo &f);

  void mismatch(const ast::Value &v, const FieldInfo &f);
  std::optional<int64_t> integer(const ast::Value &v, llvm::StringRef text, llvm::SMRange range,
                                 const FieldInfo &f);
  bool inRange(int64_t value, const FieldInfo &f, llvm::SMRange range);
  // A number with a unit of `dim`, in base units.
  std::optional<uint64_t> quantity(const ast::Value &v, const FieldInfo &f, Dimension dim);
  std::optional<PciAddress> pciOf(const ast::Value &v, const FieldInfo &f, bool &domainGiven);
  std::optional<ir::CpuCores> localCores(const ast::Value &v, const FieldInfo &f);
  std::optional<uint32_t> cpuNumber(llvm::StringRef text, llvm::SMRange range, const FieldInfo &f);

  DiagnosticEngine &diags_;
};

} // namespace msc::detail
