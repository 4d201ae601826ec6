#include "ir/Schema.h"

#include "support/Units.h"

#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/JSON.h>

namespace msc::ir {

llvm::ArrayRef<FieldSchema> allFields() {
  static const FieldSchema kFields[] = {
#define MSC_SCHEMA_ROW(SECTION, NAME, KIND, MIN, MAX, CHOICES, DEFAULT, DOC)                      \
  {SECTION, fieldSpelling(#NAME), FieldKind::KIND, MIN, MAX, CHOICES, DEFAULT, DOC},
#define COMPUTE_FIELD(...) MSC_SCHEMA_ROW("contract/profile", __VA_ARGS__)
#define ROLE_FIELD(...) MSC_SCHEMA_ROW("io_topology.<role>", __VA_ARGS__)
#define FAULT_TOLERANCE_FIELD(...) MSC_SCHEMA_ROW("fault_tolerance", __VA_ARGS__)
#define SCALING_FIELD(...) MSC_SCHEMA_ROW("scaling", __VA_ARGS__)
#define POLICY_FIELD(...) MSC_SCHEMA_ROW("policy", __VA_ARGS__)
#define LENDING_FIELD(...) MSC_SCHEMA_ROW("lending", __VA_ARGS__)
#include "ir/Fields.def"
#undef MSC_SCHEMA_ROW
  };
  return kFields;
}

llvm::StringRef fieldKindId(FieldKind kind) {
  switch (kind) {
  case FieldKind::Int: return "int";
  case FieldKind::Bool: return "bool";
  case FieldKind::String: return "string";
  case FieldKind::Size: return "size";
  case FieldKind::Duration: return "duration";
  case FieldKind::Temperature: return "temperature";
  case FieldKind::Percent: return "percentage";
  case FieldKind::Bandwidth: return "bandwidth";
  case FieldKind::Real: return "number";
  case FieldKind::CpuList: return "cpus";
  case FieldKind::PciBus: return "pcie_domain";
  case FieldKind::GpuRef: return "gpu";
  case FieldKind::RdmaPort: return "rdma_port";
  case FieldKind::HugepagePool: return "pool";
  case FieldKind::RecoveryPoint: return "cadence";
  case FieldKind::StringList: return "names";
  case FieldKind::Choice: return "name";
  case FieldKind::Lead: return "lead";
  case FieldKind::Count: return "count";
  case FieldKind::Samples: return "samples";
  }
  return "raw";
}

std::string formatDefault(const FieldSchema &f) {
  if (f.defaultValue == kNoDefault)
    return {};
  uint64_t v = uint64_t(f.defaultValue);
  switch (f.kind) {
  case FieldKind::Bool: return f.defaultValue ? "true" : "false";
  case FieldKind::Size: return formatBytes({v});
  case FieldKind::Duration: return formatDuration({v});
  case FieldKind::Temperature: return formatTemperature({f.defaultValue});
  case FieldKind::Percent: return formatPercent({v});
  case FieldKind::Bandwidth: return formatBandwidth({v});
  case FieldKind::Lead: return f.defaultValue < 0 ? "auto" : formatDuration({v});
  case FieldKind::Samples: return std::to_string(f.defaultValue) + " samples";
  default: return std::to_string(f.defaultValue);
  }
}

namespace {
std::string valueText(const FieldSchema &f) {
  std::string value = fieldKindName(f.kind).str();
  if (f.min < f.max)
    value += ", " + std::to_string(f.min) + ".." + std::to_string(f.max);
  if (!f.choices.empty())
    value += ": " + f.choices.str();
  return value;
}
} // namespace

void printFieldReference(llvm::raw_ostream &os) {
  os << "| section | field | value | default | meaning |\n|---|---|---|---|---|\n";
  for (const FieldSchema &f : allFields()) {
    std::string def = formatDefault(f);
    os << "| " << f.section << " | `" << f.name << "` | " << valueText(f) << " | "
       << (def.empty() ? std::string("-") : "`" + def + "`") << " | " << f.doc << " |\n";
  }
}

void printFieldReferenceJson(llvm::raw_ostream &os) {
  llvm::json::OStream j(os, 2);
  j.array([&] {
    for (const FieldSchema &f : allFields())
      j.object([&] {
        j.attribute("section", f.section);
        j.attribute("name", f.name);
        j.attribute("kind", fieldKindId(f.kind));
        j.attribute("description", valueText(f));
        if (f.min < f.max) {
          j.attribute("min", f.min);
          j.attribute("max", f.max);
        }
        if (!f.choices.empty()) {
          llvm::SmallVector<llvm::StringRef, 8> choices;
          f.choices.split(choices, '|');
          j.attributeArray("choices", [&] {
            for (llvm::StringRef c : choices)
              j.value(c);
          });
        }
        if (f.defaultValue != kNoDefault) {
          j.attribute("default", formatDefault(f));
          j.attribute("default_value", f.defaultValue);
        }
        j.attribute("doc", f.doc);
      });
  });
  os << "\n";
}

} // namespace msc::ir
