#include "ir/IR.h"
#include "ir/ValueFormat.h"

namespace msc::ir {

namespace {

class Printer {
public:
  explicit Printer(llvm::raw_ostream &os) : os_(os) {}

  void printBody(const Body &body, unsigned indent) {
    printFields(body.compute, indent);
    for (const Role &role : body.roles) {
      line(indent) << "role " << role.name << " {\n";
      printFields(role.fields, indent + 2);
      line(indent) << "}\n";
    }
    printSection("fault_tolerance", body.faultTolerance, indent);
    printSection("scaling", body.scaling, indent);
    printSection("policy", body.policy, indent);
    for (const Phase &phase : body.phases)
      printPhase(phase, indent);
    printSection("lending", body.lending, indent);
  }

private:
  llvm::raw_ostream &line(unsigned indent) { return os_.indent(indent); }

  template <typename T>
  void printField(llvm::StringRef name, const std::optional<Field<T>> &field, unsigned indent, FieldKind kind) {
    if (!field)
      return;
    std::string value;
    if constexpr (std::is_same_v<T, std::string>)
      value = kind == FieldKind::Choice ? field->value : formatValue(field->value); // a bare word
    else
      value = formatValue(field->value);
    if (kind == FieldKind::Samples) // a plain integer underneath, written with its unit
      value += " samples";
    std::string text = name.str() + " = " + value;
    line(indent) << text;
    // Origins line up in a column so that FileCheck patterns and people read them easily.
    size_t width = indent + text.size();
    os_.indent(width < 44 ? static_cast<unsigned>(44 - width) : 1) << "// " << field->origin.declaration << "\n";
  }

#define MSC_PRINT_FIELD(NAME, KIND, ...)                                                          \
  printField(fieldSpelling(#NAME), fields.NAME, indent, FieldKind::KIND);
  void printFields(const ComputeFields &fields, unsigned indent) {
#define COMPUTE_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }
  void printFields(const RoleFields &fields, unsigned indent) {
#define ROLE_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }
  void printFields(const FaultToleranceFields &fields, unsigned indent) {
#define FAULT_TOLERANCE_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }
  void printFields(const ScalingFields &fields, unsigned indent) {
#define SCALING_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }
  void printFields(const PolicyFields &fields, unsigned indent) {
#define POLICY_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }
  void printFields(const LendingFields &fields, unsigned indent) {
#define LENDING_FIELD MSC_PRINT_FIELD
#include "ir/Fields.def"
  }

  void printPhase(const Phase &phase, unsigned indent) {
    line(indent) << "phase " << phase.name << " {";
    os_ << "  // when " << formatValue(phase.when) << "\n";
    for (const PhaseUse &use : phase.uses) {
      std::string kinds;
      for (ResourceKind k : use.exclusive)
        kinds += (kinds.empty() ? "" : ", ") + resourceKindName(k).str();
      line(indent + 2) << use.role << " = [" << kinds << "]\n";
    }
    line(indent) << "}\n";
  }
#undef MSC_PRINT_FIELD

  template <typename Fields> void printSection(llvm::StringRef name, const Fields &fields, unsigned indent) {
    std::string text;
    llvm::raw_string_ostream inner(text);
    Printer(inner).printFields(fields, indent + 2);
    if (text.empty())
      return;
    line(indent) << name << " {\n" << text;
    line(indent) << "}\n";
  }

  llvm::raw_ostream &os_;
};

void printChain(llvm::raw_ostream &os, const std::vector<std::string> &chain) {
  if (chain.size() < 2)
    return;
  os << " (";
  for (size_t i = 0; i < chain.size(); ++i)
    os << (i ? " <- " : "") << chain[i];
  os << ")";
}

} // namespace

void print(const Contract &contract, llvm::raw_ostream &os) {
  os << "contract " << contract.name;
  if (!contract.profile.empty())
    os << " uses profile " << contract.profile;
  printChain(os, contract.chain);
  os << " {\n";
  Printer(os).printBody(contract.body, 2);
  os << "}\n";
}

void print(const Module &module, llvm::raw_ostream &os) {
  for (const Profile &profile : module.profiles) {
    if (profile.imported)
      continue;
    os << "profile " << profile.name;
    if (!profile.base.empty())
      os << " extends " << profile.base;
    printChain(os, profile.chain);
    os << " {\n";
    Printer(os).printBody(profile.body, 2);
    os << "}\n";
  }
  for (const Contract &contract : module.contracts)
    print(contract, os);
}

} // namespace msc::ir
