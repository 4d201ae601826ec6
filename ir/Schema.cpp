#include "ir/Schema.h"

namespace msc::ir {

llvm::ArrayRef<FieldSchema> allFields() {
  static const FieldSchema kFields[] = {
#define COMPUTE_FIELD(NAME, KIND, MIN, MAX, CHOICES, DOC)                                         \
  {"contract/profile", #NAME, FieldKind::KIND, MIN, MAX, CHOICES, DOC},
#define ROLE_FIELD(NAME, KIND, MIN, MAX, CHOICES, DOC)                                            \
  {"io_topology.<role>", #NAME, FieldKind::KIND, MIN, MAX, CHOICES, DOC},
#define FAULT_TOLERANCE_FIELD(NAME, KIND, MIN, MAX, CHOICES, DOC)                                 \
  {"fault_tolerance", #NAME, FieldKind::KIND, MIN, MAX, CHOICES, DOC},
#define SCALING_FIELD(NAME, KIND, MIN, MAX, CHOICES, DOC) {"scaling", #NAME, FieldKind::KIND, MIN, MAX, CHOICES, DOC},
#define POLICY_FIELD(NAME, KIND, MIN, MAX, CHOICES, DOC) {"policy", #NAME, FieldKind::KIND, MIN, MAX, CHOICES, DOC},
#include "ir/Fields.def"
  };
  return kFields;
}

void printFieldReference(llvm::raw_ostream &os) {
  os << "| section | field | value | meaning |\n|---|---|---|---|\n";
  for (const FieldSchema &f : allFields()) {
    std::string value = fieldKindName(f.kind).str();
    if (f.min < f.max)
      value += ", " + std::to_string(f.min) + ".." + std::to_string(f.max);
    if (!f.choices.empty())
      value += ": " + f.choices.str();
    os << "| " << f.section << " | `" << f.name << "` | " << value << " | " << f.doc << " |\n";
  }
}

} // namespace msc::ir
