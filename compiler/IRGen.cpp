// AST -> IR: type-checks every declaration's own block once, then resolves profile chains and
// merges them (base first, overrides after), keeping the origin of every value.
#include "compiler/Frontend.h"
#include "compiler/Quantity.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/StringSwitch.h>

#include <functional>
#include <map>
#include <set>

namespace msc {

using ir::FieldKind;

namespace {

struct FieldInfo {
  llvm::StringRef name;
  FieldKind kind;
  int64_t min, max; // min < max bounds an Int field
  llvm::StringRef choices;
};

std::vector<llvm::StringRef> choiceList(llvm::StringRef choices) {
  llvm::SmallVector<llvm::StringRef, 8> parts;
  choices.split(parts, '|', -1, false);
  return {parts.begin(), parts.end()};
}

std::string describe(const ast::Value &v) {
  switch (v.kind) {
  case ast::Value::Kind::Number: {
    if (v.unit.empty())
      return "a number";
    auto dim = dimensionOfUnit(v.unit);
    return dim ? dimensionName(*dim).str() : "a number with unit '" + v.unit + "'";
  }
  case ast::Value::Kind::String: return "a string";
  case ast::Value::Kind::Bool: return "true or false";
  case ast::Value::Kind::PciAddress: return "a PCI address";
  case ast::Value::Kind::List: return "a list";
  case ast::Value::Kind::Range: return "a range";
  case ast::Value::Kind::Call: return "a call to '" + v.callee + "'";
  case ast::Value::Kind::Ident: return "the name '" + v.text + "'";
  }
  return "a value";
}

// Converts AST values to typed IR values for one field, reporting what does not fit.
class ValueConverter {
public:
  explicit ValueConverter(DiagnosticEngine &diags) : diags_(diags) {}

  template <FieldKind K>
  std::optional<typename ir::KindType<K>::type> convert(const ast::Value &v, const FieldInfo &f);

private:
  void mismatch(const ast::Value &v, const FieldInfo &f) {
    diags_.report(DiagCode::ERR_SEM_005, v.range) << f.name << ir::fieldKindName(f.kind) << describe(v);
  }

  std::optional<int64_t> integer(const ast::Value &v, llvm::StringRef text, llvm::SMRange range,
                                 const FieldInfo &f) {
    if (text.contains('.')) {
      diags_.report(DiagCode::ERR_SYN_008, range) << text;
      return std::nullopt;
    }
    int64_t value = 0;
    if (text.getAsInteger(10, value)) {
      diags_.report(DiagCode::ERR_SYN_008, range) << text;
      return std::nullopt;
    }
    return value;
  }

  bool inRange(int64_t value, const FieldInfo &f, llvm::SMRange range) {
    if (f.min < f.max && (value < f.min || value > f.max)) {
      diags_.report(DiagCode::ERR_SEM_009, range)
          << value << f.name << (std::to_string(f.min) + ".." + std::to_string(f.max));
      return false;
    }
    return true;
  }

  // A number with a unit of `dim`, in base units.
  std::optional<uint64_t> quantity(const ast::Value &v, const FieldInfo &f, Dimension dim) {
    if (v.kind != ast::Value::Kind::Number) {
      mismatch(v, f);
      return std::nullopt;
    }
    auto actual = dimensionOfUnit(v.unit);
    if (!actual) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_006, v.unitRange);
      d << v.unit << ("'" + f.name.str() + "'");
      if (auto fix = closestMatch(v.unit, unitsOf(dim)))
        d.noteWithFixIt(Location{v.unitRange, {}, 0}, "did you mean '" + *fix + "'?", {v.unitRange, *fix});
      return std::nullopt;
    }
    if (*actual != dim) {
      if (*actual == Dimension::None) {
        DiagBuilder d = diags_.report(DiagCode::ERR_SEM_005, v.range);
        d << f.name << ir::fieldKindName(f.kind) << "a number without a unit";
        return std::nullopt;
      }
      mismatch(v, f);
      return std::nullopt;
    }
    QuantityError error;
    auto value = toBaseUnits(v.text, v.unit, error);
    if (!value) {
      if (error == QuantityError::Inexact)
        diags_.report(DiagCode::ERR_SEM_009, v.range)
            << (v.text + v.unit) << f.name << "not a whole number of base units";
      else
        diags_.report(DiagCode::ERR_SYN_008, v.range) << v.text;
    }
    return value;
  }

  std::optional<PciAddress> pciOf(const ast::Value &v, const FieldInfo &f, bool &domainGiven) {
    std::string why;
    auto parsed = parsePci(v.text, &why);
    if (!parsed || parsed->form == ParsedPci::Form::BusOnly) {
      diags_.report(DiagCode::ERR_SEM_018, v.range) << v.text << (parsed ? "expected a device address" : why);
      return std::nullopt;
    }
    domainGiven = parsed->form == ParsedPci::Form::Full;
    return parsed->address;
  }

  std::optional<uint32_t> cpuNumber(llvm::StringRef text, llvm::SMRange range, const FieldInfo &f) {
    uint64_t value = 0;
    if (text.contains('.') || text.getAsInteger(10, value)) {
      diags_.report(DiagCode::ERR_SYN_008, range) << text;
      return std::nullopt;
    }
    if (value > 65535) {
      diags_.report(DiagCode::ERR_SEM_009, range) << static_cast<uint64_t>(value) << f.name << "0..65535";
      return std::nullopt;
    }
    return static_cast<uint32_t>(value);
  }

  DiagnosticEngine &diags_;
  friend class IRGen;
};

template <>
std::optional<int64_t> ValueConverter::convert<FieldKind::Int>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Number || !v.unit.empty()) {
    if (v.kind == ast::Value::Kind::Number && !dimensionOfUnit(v.unit)) {
      diags_.report(DiagCode::ERR_SEM_006, v.unitRange) << v.unit << ("'" + f.name.str() + "'");
      return std::nullopt;
    }
    mismatch(v, f);
    return std::nullopt;
  }
  auto value = integer(v, v.text, v.range, f);
  if (!value || !inRange(*value, f, v.range))
    return std::nullopt;
  return value;
}

template <>
std::optional<bool> ValueConverter::convert<FieldKind::Bool>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Bool) {
    mismatch(v, f);
    return std::nullopt;
  }
  return v.boolean;
}

template <>
std::optional<std::string> ValueConverter::convert<FieldKind::String>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::String) {
    mismatch(v, f);
    return std::nullopt;
  }
  return v.text;
}

template <>
std::optional<ir::Bytes> ValueConverter::convert<FieldKind::Size>(const ast::Value &v, const FieldInfo &f) {
  if (auto q = quantity(v, f, Dimension::Size))
    return ir::Bytes{*q};
  return std::nullopt;
}

template <>
std::optional<ir::Nanoseconds> ValueConverter::convert<FieldKind::Duration>(const ast::Value &v,
                                                                            const FieldInfo &f) {
  if (auto q = quantity(v, f, Dimension::Duration))
    return ir::Nanoseconds{*q};
  return std::nullopt;
}

template <>
std::optional<ir::MilliCelsius> ValueConverter::convert<FieldKind::Temperature>(const ast::Value &v,
                                                                                const FieldInfo &f) {
  auto q = quantity(v, f, Dimension::Temperature);
  if (!q)
    return std::nullopt;
  if (*q > 200000) {
    diags_.report(DiagCode::ERR_SEM_009, v.range) << (v.text + v.unit) << f.name << "0C..200C";
    return std::nullopt;
  }
  return ir::MilliCelsius{static_cast<int64_t>(*q)};
}

template <>
std::optional<ir::PartsPerMillion> ValueConverter::convert<FieldKind::Percent>(const ast::Value &v,
                                                                               const FieldInfo &f) {
  auto q = quantity(v, f, Dimension::Percent);
  if (!q)
    return std::nullopt;
  if (*q > 1000000) {
    diags_.report(DiagCode::ERR_SEM_009, v.range) << (v.text + v.unit) << f.name << "0%..100%";
    return std::nullopt;
  }
  return ir::PartsPerMillion{*q};
}

template <>
std::optional<ir::BitsPerSecond> ValueConverter::convert<FieldKind::Bandwidth>(const ast::Value &v,
                                                                               const FieldInfo &f) {
  if (auto q = quantity(v, f, Dimension::Bandwidth))
    return ir::BitsPerSecond{*q};
  return std::nullopt;
}

template <>
std::optional<double> ValueConverter::convert<FieldKind::Real>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Number || !v.unit.empty()) {
    mismatch(v, f);
    return std::nullopt;
  }
  double value = 0;
  if (llvm::StringRef(v.text).getAsDouble(value)) {
    diags_.report(DiagCode::ERR_SYN_008, v.range) << v.text;
    return std::nullopt;
  }
  return value;
}

template <>
std::optional<std::vector<uint32_t>> ValueConverter::convert<FieldKind::CpuList>(const ast::Value &v,
                                                                                 const FieldInfo &f) {
  std::vector<const ast::Value *> items;
  if (v.kind == ast::Value::Kind::List) {
    for (const auto &e : v.elements)
      items.push_back(e.get());
  } else {
    items.push_back(&v);
  }
  std::vector<uint32_t> cpus;
  std::map<uint32_t, llvm::SMRange> seen;
  bool ok = true;
  auto add = [&](uint32_t cpu, llvm::SMRange range) {
    auto [it, inserted] = seen.emplace(cpu, range);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_015, range)
          .note(Location{it->second, {}, 0}, "CPU " + std::to_string(cpu) + " first listed here")
          << std::to_string(cpu) << f.name;
      ok = false;
      return;
    }
    cpus.push_back(cpu);
  };
  for (const ast::Value *item : items) {
    if (item->kind == ast::Value::Kind::Number && item->unit.empty()) {
      if (auto cpu = cpuNumber(item->text, item->range, f))
        add(*cpu, item->range);
      else
        ok = false;
    } else if (item->kind == ast::Value::Kind::Range) {
      auto lo = cpuNumber(item->lowText, item->lowRange, f);
      auto hi = cpuNumber(item->highText, item->highRange, f);
      if (!lo || !hi) {
        ok = false;
        continue;
      }
      if (*hi < *lo) {
        diags_.report(DiagCode::ERR_SEM_014, item->range) << *lo << *hi;
        ok = false;
        continue;
      }
      for (uint32_t cpu = *lo; cpu <= *hi; ++cpu)
        add(cpu, item->range);
    } else {
      mismatch(*item, f);
      ok = false;
    }
  }
  if (!ok)
    return std::nullopt;
  if (cpus.empty()) {
    diags_.report(DiagCode::ERR_SEM_009, v.range) << "[]" << f.name << "at least one CPU";
    return std::nullopt;
  }
  return cpus;
}

template <>
std::optional<PciBus> ValueConverter::convert<FieldKind::PciBus>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::String && v.kind != ast::Value::Kind::PciAddress) {
    mismatch(v, f);
    return std::nullopt;
  }
  std::string why;
  auto parsed = parsePci(v.text, &why);
  if (!parsed || parsed->form != ParsedPci::Form::BusOnly) {
    diags_.report(DiagCode::ERR_SEM_018, v.range)
        << v.text << (parsed ? "a PCIe domain is written DDDD:BB (domain and bus)" : why);
    return std::nullopt;
  }
  return PciBus{parsed->address.domain, parsed->address.bus};
}

template <>
std::optional<ir::GpuRef> ValueConverter::convert<FieldKind::GpuRef>(const ast::Value &v, const FieldInfo &f) {
  ir::GpuRef ref;
  if (v.kind == ast::Value::Kind::Number && v.unit.empty()) {
    auto index = integer(v, v.text, v.range, f);
    if (!index)
      return std::nullopt;
    if (*index > 1023) {
      diags_.report(DiagCode::ERR_SEM_009, v.range) << *index << f.name << "0..1023";
      return std::nullopt;
    }
    ref.form = ir::GpuRef::Form::Index;
    ref.index = static_cast<uint32_t>(*index);
    return ref;
  }
  if (v.kind == ast::Value::Kind::PciAddress ||
      (v.kind == ast::Value::Kind::String && llvm::StringRef(v.text).contains(':') &&
       !llvm::StringRef(v.text).starts_with("GPU-") && !llvm::StringRef(v.text).starts_with("MIG-"))) {
    bool domainGiven = true;
    auto pci = pciOf(v, f, domainGiven);
    if (!pci)
      return std::nullopt;
    ref.form = ir::GpuRef::Form::Pci;
    ref.pci = *pci;
    ref.domainGiven = domainGiven;
    return ref;
  }
  if (v.kind == ast::Value::Kind::String &&
      (llvm::StringRef(v.text).starts_with("GPU-") || llvm::StringRef(v.text).starts_with("MIG-"))) {
    ref.form = ir::GpuRef::Form::Uuid;
    ref.uuid = v.text;
    return ref;
  }
  mismatch(v, f);
  return std::nullopt;
}

template <>
std::optional<ir::RdmaPortRef> ValueConverter::convert<FieldKind::RdmaPort>(const ast::Value &v,
                                                                            const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::String && v.kind != ast::Value::Kind::Ident) {
    mismatch(v, f);
    return std::nullopt;
  }
  ir::RdmaPortRef ref;
  auto [device, port] = llvm::StringRef(v.text).rsplit(':');
  ref.device = device.str();
  if (device.empty()) {
    mismatch(v, f);
    return std::nullopt;
  }
  if (llvm::StringRef(v.text).contains(':')) {
    unsigned number = 0;
    if (port.getAsInteger(10, number) || number < 1 || number > 255) {
      diags_.report(DiagCode::ERR_SEM_009, v.range) << v.text << f.name << "ports are numbered 1..255";
      return std::nullopt;
    }
    ref.port = number;
  }
  return ref;
}

template <>
std::optional<ir::HugepagePool> ValueConverter::convert<FieldKind::HugepagePool>(const ast::Value &v,
                                                                                 const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Call) {
    mismatch(v, f);
    return std::nullopt;
  }
  if (v.callee != "hugepages") {
    DiagBuilder d = diags_.report(DiagCode::ERR_SEM_012, v.range);
    d << v.callee;
    if (auto fix = closestMatch(v.callee, {"hugepages"}))
      d.noteWithFixIt(Location{v.range, {}, 0}, "did you mean 'hugepages'?",
                      {{v.range.Start, llvm::SMLoc::getFromPointer(v.range.Start.getPointer() + v.callee.size())},
                       "hugepages"});
    return std::nullopt;
  }
  const ast::Value *size = nullptr;
  const ast::Value *count = nullptr;
  size_t positional = 0;
  for (const ast::Argument &arg : v.arguments) {
    llvm::StringRef name = arg.name;
    if (name.empty())
      name = positional++ == 0 ? "page_size" : "count";
    if (name == "page_size" && !size)
      size = arg.value.get();
    else if (name == "count" && !count)
      count = arg.value.get();
    else {
      diags_.report(DiagCode::ERR_SEM_013, arg.value->range) << "hugepages" << ("unexpected argument '" + name.str() + "'");
      return std::nullopt;
    }
  }
  if (!size || !count) {
    diags_.report(DiagCode::ERR_SEM_013, v.range)
        << "hugepages" << (size ? "missing 'count = N'" : "missing the page size, e.g. hugepages(2MiB, count = N)");
    return std::nullopt;
  }
  FieldInfo sizeInfo{"page_size", FieldKind::Size, 0, 0, ""};
  FieldInfo countInfo{"count", FieldKind::Int, 1, int64_t(1) << 40, ""};
  auto pageSize = convert<FieldKind::Size>(*size, sizeInfo);
  auto pages = convert<FieldKind::Int>(*count, countInfo);
  if (!pageSize || !pages)
    return std::nullopt;
  if (pageSize->value < 4096 || (pageSize->value & (pageSize->value - 1))) {
    diags_.report(DiagCode::ERR_SEM_009, size->range)
        << ir::formatBytes(*pageSize) << "page_size" << "a power of two, at least 4KiB";
    return std::nullopt;
  }
  return ir::HugepagePool{*pageSize, static_cast<uint64_t>(*pages)};
}

template <>
std::optional<ir::RecoveryPoint> ValueConverter::convert<FieldKind::RecoveryPoint>(const ast::Value &v,
                                                                                   const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Call) {
    mismatch(v, f);
    return std::nullopt;
  }
  if (v.callee != "every") {
    DiagBuilder d = diags_.report(DiagCode::ERR_SEM_012, v.range);
    d << v.callee;
    if (closestMatch(v.callee, {"every"}))
      d.noteWithFixIt(Location{v.range, {}, 0}, "did you mean 'every'?",
                      {{v.range.Start, llvm::SMLoc::getFromPointer(v.range.Start.getPointer() + v.callee.size())},
                       "every"});
    return std::nullopt;
  }
  if (v.arguments.size() != 1 || !v.arguments[0].name.empty() ||
      v.arguments[0].value->kind != ast::Value::Kind::Number) {
    diags_.report(DiagCode::ERR_SEM_013, v.range) << "every" << "expected every(N steps) or every(DURATION)";
    return std::nullopt;
  }
  const ast::Value &arg = *v.arguments[0].value;
  auto dim = dimensionOfUnit(arg.unit);
  ir::RecoveryPoint rp;
  if (dim == Dimension::Steps || dim == Dimension::None) {
    FieldInfo stepsInfo{"steps", FieldKind::Int, 1, INT64_MAX, ""};
    ast::Value plain;
    plain.kind = ast::Value::Kind::Number;
    plain.text = arg.text;
    plain.range = arg.range;
    auto steps = convert<FieldKind::Int>(plain, stepsInfo);
    if (!steps)
      return std::nullopt;
    rp.steps = static_cast<uint64_t>(*steps);
    return rp;
  }
  FieldInfo durationInfo{f.name, FieldKind::Duration, 0, 0, ""};
  auto interval = convert<FieldKind::Duration>(arg, durationInfo);
  if (!interval)
    return std::nullopt;
  if (interval->value == 0) {
    diags_.report(DiagCode::ERR_SEM_009, arg.range) << (arg.text + arg.unit) << f.name << "a positive interval";
    return std::nullopt;
  }
  rp.interval = *interval;
  return rp;
}

template <>
std::optional<std::string> ValueConverter::convert<FieldKind::Choice>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Ident && v.kind != ast::Value::Kind::String) {
    mismatch(v, f);
    return std::nullopt;
  }
  std::vector<llvm::StringRef> choices = choiceList(f.choices);
  if (llvm::is_contained(choices, llvm::StringRef(v.text)))
    return v.text;
  DiagBuilder d = diags_.report(DiagCode::ERR_SEM_009, v.range);
  d << ("'" + v.text + "'") << f.name << ("one of " + f.choices.str());
  if (auto fix = closestMatch(v.text, choices))
    d.noteWithFixIt(Location{v.range, {}, 0}, "did you mean '" + *fix + "'?", {v.range, *fix});
  return std::nullopt;
}

template <>
std::optional<std::vector<std::string>> ValueConverter::convert<FieldKind::StringList>(const ast::Value &v,
                                                                                       const FieldInfo &f) {
  std::vector<const ast::Value *> items;
  if (v.kind == ast::Value::Kind::List)
    for (const auto &e : v.elements)
      items.push_back(e.get());
  else
    items.push_back(&v);
  std::vector<llvm::StringRef> choices = choiceList(f.choices);
  std::vector<std::string> out;
  bool ok = true;
  for (const ast::Value *item : items) {
    if (item->kind != ast::Value::Kind::Ident && item->kind != ast::Value::Kind::String) {
      mismatch(*item, f);
      ok = false;
      continue;
    }
    if (!choices.empty() && !llvm::is_contained(choices, llvm::StringRef(item->text))) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_009, item->range);
      d << ("'" + item->text + "'") << f.name << ("one of " + f.choices.str());
      if (auto fix = closestMatch(item->text, choices))
        d.noteWithFixIt(Location{item->range, {}, 0}, "did you mean '" + *fix + "'?", {item->range, *fix});
      ok = false;
      continue;
    }
    if (llvm::is_contained(out, item->text)) {
      diags_.report(DiagCode::ERR_SEM_015, item->range) << item->text << f.name;
      ok = false;
      continue;
    }
    out.push_back(item->text);
  }
  if (!ok)
    return std::nullopt;
  return out;
}

// ---------------------------------------------------------------------------------------------

#define MSC_FIELD_INFO(NAME, KIND, MIN, MAX, CHOICES, DOC) {#NAME, FieldKind::KIND, MIN, MAX, CHOICES},
const FieldInfo kComputeFields[] = {
#define COMPUTE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kRoleFields[] = {
#define ROLE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kFaultToleranceFields[] = {
#define FAULT_TOLERANCE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kScalingFields[] = {
#define SCALING_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kPolicyFields[] = {
#define POLICY_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
#undef MSC_FIELD_INFO

template <size_t N> std::vector<llvm::StringRef> namesOf(const FieldInfo (&table)[N]) {
  std::vector<llvm::StringRef> names;
  for (const FieldInfo &f : table)
    names.push_back(f.name);
  return names;
}

template <size_t N> const FieldInfo *findField(const FieldInfo (&table)[N], llvm::StringRef name) {
  for (const FieldInfo &f : table)
    if (f.name == name)
      return &f;
  return nullptr;
}

// Assigns a converted value to the struct member named by `info`.
#define MSC_ASSIGN_FIELD(NAME, KIND, ...)                                                         \
  if (info.name == #NAME) {                                                                       \
    if (auto value = conv.convert<FieldKind::KIND>(v, info))                                      \
      fields.NAME = ir::Field<ir::KindType<FieldKind::KIND>::type>{std::move(*value), origin};    \
    return;                                                                                       \
  }
void assign(ir::ComputeFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin,
            ValueConverter &conv) {
#define COMPUTE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void assign(ir::RoleFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin,
            ValueConverter &conv) {
#define ROLE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void assign(ir::FaultToleranceFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin,
            ValueConverter &conv) {
#define FAULT_TOLERANCE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void assign(ir::ScalingFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin,
            ValueConverter &conv) {
#define SCALING_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void assign(ir::PolicyFields &fields, const FieldInfo &info, const ast::Value &v, const ir::Origin &origin,
            ValueConverter &conv) {
#define POLICY_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
#undef MSC_ASSIGN_FIELD

const llvm::StringRef kSections[] = {"io_topology", "fault_tolerance", "scaling", "policy"};

class IRGen {
public:
  IRGen(const SourceSet &sources, DiagnosticEngine &diags, std::string profileOverride, std::string onlyContract)
      : sources_(sources), diags_(diags), conv_(diags), profileOverride_(std::move(profileOverride)),
        overrideContract_(std::move(onlyContract)) {}

  std::optional<ir::Module> run();

private:
  struct Decl {
    const ast::Declaration *ast;
    bool imported;
    ir::Body own; // the declaration's own block, type-checked
    bool clean = true; // no error was reported while checking `own`
  };

  ir::Body checkBody(const ast::Declaration &decl);
  // Checks a block's assignments; sections go to `onSection` in source order (or are errors).
  template <typename Fields, size_t N>
  void checkFields(const ast::Block &block, const FieldInfo (&table)[N], Fields &fields, const std::string &where,
                   const ir::Origin &base, const std::function<void(const ast::Section &)> &onSection = {});
  void checkRoles(const ast::Block &block, ir::Body &body, const ir::Origin &base);
  const ir::Body *resolveProfile(const std::string &name);
  void checkContractComplete(const ir::Contract &c, const ast::Declaration &decl);

  const SourceSet &sources_;
  DiagnosticEngine &diags_;
  ValueConverter conv_;
  std::string profileOverride_; // FrontendOptions::profileOverride
  std::string overrideContract_; // FrontendOptions::profileOverrideContract
  std::vector<Decl> profiles_, contracts_;
  llvm::StringMap<size_t> profileIndex_;
  std::map<std::string, ir::Body> resolved_;
  std::map<std::string, std::vector<std::string>> chains_;
  std::set<std::string> resolving_, failed_;
};

template <typename Fields, size_t N>
void IRGen::checkFields(const ast::Block &block, const FieldInfo (&table)[N], Fields &fields,
                        const std::string &where, const ir::Origin &base,
                        const std::function<void(const ast::Section &)> &onSection) {
  llvm::StringMap<llvm::SMRange> firstSet;
  for (const ast::Member &m : block.members) {
    if (m.section) {
      if (onSection) {
        onSection(*m.section);
        continue;
      }
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_008, m.section->nameRange);
      d << m.section->name << where;
      continue;
    }
    const ast::Assignment &a = *m.assignment;
    const FieldInfo *info = findField(table, a.field);
    if (!info) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_004, a.fieldRange);
      d << a.field << where;
      if (auto fix = closestMatch(a.field, namesOf(table)))
        d.noteWithFixIt(Location{a.fieldRange, {}, 0}, "did you mean '" + *fix + "'?", {a.fieldRange, *fix});
      continue;
    }
    auto [it, inserted] = firstSet.try_emplace(a.field, a.fieldRange);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_007, a.fieldRange)
              .note(Location{it->second, {}, 0}, "field '" + a.field + "' first set here")
          << a.field;
      continue;
    }
    ir::Origin origin = base;
    origin.range = a.value->range;
    origin.fieldRange = a.fieldRange;
    assign(fields, *info, *a.value, origin, conv_);
  }
}

void IRGen::checkRoles(const ast::Block &block, ir::Body &body, const ir::Origin &base) {
  llvm::StringMap<llvm::SMRange> seen;
  for (const ast::Member &m : block.members) {
    if (m.assignment) {
      diags_.report(DiagCode::ERR_SEM_004, m.assignment->fieldRange)
              .note(Location::none(), "every block inside 'io_topology' is a named role, e.g. 'data { ... }'")
          << m.assignment->field << "section 'io_topology'";
      continue;
    }
    const ast::Section &s = *m.section;
    auto [it, inserted] = seen.try_emplace(s.name, s.nameRange);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_016, s.nameRange)
              .note(Location{it->second, {}, 0}, "role '" + s.name + "' first declared here")
          << s.name;
      continue;
    }
    ir::Role role;
    role.name = s.name;
    role.origin = base;
    role.origin.range = s.nameRange;
    role.origin.fieldRange = s.nameRange;
    checkFields(*s.body, kRoleFields, role.fields, "role '" + s.name + "'", base);
    body.roles.push_back(std::move(role));
  }
}

ir::Body IRGen::checkBody(const ast::Declaration &decl) {
  ir::Body body;
  std::string kind = decl.kind == ast::Declaration::Kind::Profile ? "profile" : "contract";
  ir::Origin base{kind + " " + decl.name, {}, {}};
  std::string where = kind + " '" + decl.name + "'";
  checkFields(decl.body, kComputeFields, body.compute, where, base, [&](const ast::Section &s) {
    if (!llvm::is_contained(kSections, llvm::StringRef(s.name))) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_008, s.nameRange);
      d << s.name << where;
      if (auto fix = closestMatch(s.name, kSections))
        d.noteWithFixIt(Location{s.nameRange, {}, 0}, "did you mean '" + *fix + "'?", {s.nameRange, *fix});
      return;
    }
    // A section may appear twice (say, in two halves of a long contract); fields still may not.
    if (s.name == "io_topology")
      checkRoles(*s.body, body, base);
    else if (s.name == "fault_tolerance")
      checkFields(*s.body, kFaultToleranceFields, body.faultTolerance, "section 'fault_tolerance'", base);
    else if (s.name == "scaling")
      checkFields(*s.body, kScalingFields, body.scaling, "section 'scaling'", base);
    else if (s.name == "policy")
      checkFields(*s.body, kPolicyFields, body.policy, "section 'policy'", base);
  });
  return body;
}

const ir::Body *IRGen::resolveProfile(const std::string &name) {
  if (auto it = resolved_.find(name); it != resolved_.end())
    return &it->second;
  if (failed_.count(name))
    return nullptr;
  auto idx = profileIndex_.find(name);
  if (idx == profileIndex_.end())
    return nullptr;
  const Decl &decl = profiles_[idx->second];
  if (resolving_.count(name)) {
    diags_.report(DiagCode::ERR_SEM_003, decl.ast->baseRange) << name;
    failed_.insert(name);
    return nullptr;
  }
  resolving_.insert(name);
  ir::Body body;
  std::vector<std::string> chain{name};
  bool ok = true;
  if (!decl.ast->base.empty()) {
    if (!profileIndex_.count(decl.ast->base)) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_002, decl.ast->baseRange);
      d << decl.ast->base;
      std::vector<llvm::StringRef> names;
      for (const Decl &p : profiles_)
        if (p.ast->name != decl.ast->name) // a profile cannot extend itself
          names.push_back(p.ast->name);
      if (auto fix = closestMatch(decl.ast->base, names))
        d.noteWithFixIt(Location{decl.ast->baseRange, {}, 0}, "did you mean '" + *fix + "'?",
                        {decl.ast->baseRange, *fix});
      ok = false;
    } else if (const ir::Body *base = resolveProfile(decl.ast->base)) {
      body = *base;
      const auto &baseChain = chains_[decl.ast->base];
      chain.insert(chain.end(), baseChain.begin(), baseChain.end());
    } else {
      ok = false;
    }
  }
  resolving_.erase(name);
  if (!ok) {
    failed_.insert(name);
    return nullptr;
  }
  ir::mergeInto(body, decl.own);
  chains_[name] = chain;
  return &(resolved_[name] = std::move(body));
}

void IRGen::checkContractComplete(const ir::Contract &c, const ast::Declaration &decl) {
  if (c.body.roles.empty()) {
    diags_.report(DiagCode::ERR_SEM_017, decl.nameRange) << c.name << "io_topology roles (what should it hold?)";
    return;
  }
  for (const ir::Role &role : c.body.roles) {
    const ir::RoleFields &f = role.fields;
    if (!f.cpu_cores && !f.gpu && !f.rdma_port && !f.io_queue && !f.memory_pool && !f.pcie_domain)
      diags_.report(DiagCode::ERR_SEM_017, role.origin.range)
              .note(Location::none(),
                    "a role needs at least one of cpu_cores, gpu, pcie_domain, rdma_port, io_queue, memory_pool")
          << c.name << ("resource for role '" + role.name + "'");
  }
}

std::optional<ir::Module> IRGen::run() {
  unsigned errorsBefore = diags_.errorCount();
  // Pass 1: every declaration's own block, checked once; duplicate names.
  llvm::StringMap<llvm::SMRange> contractNames;
  // Imported files first: a name the main file defines again is reported in the main file.
  for (size_t n = 0; n < sources_.files.size(); ++n) {
    size_t fileIndex = (n + 1) % sources_.files.size();
    const ast::File &file = *sources_.files[fileIndex];
    for (const auto &declPtr : file.declarations) {
      const ast::Declaration &decl = *declPtr;
      bool isProfile = decl.kind == ast::Declaration::Kind::Profile;
      if (isProfile) {
        auto [it, inserted] = profileIndex_.try_emplace(decl.name, profiles_.size());
        if (!inserted) {
          diags_.report(DiagCode::ERR_SEM_001, decl.nameRange)
                  .note(Location{profiles_[it->second].ast->nameRange, {}, 0}, "first defined here")
              << "profile" << decl.name;
          continue;
        }
        profiles_.push_back({&decl, fileIndex != 0, checkBody(decl)});
      } else {
        auto [it, inserted] = contractNames.try_emplace(decl.name, decl.nameRange);
        if (!inserted) {
          diags_.report(DiagCode::ERR_SEM_001, decl.nameRange)
                  .note(Location{it->second, {}, 0}, "first defined here")
              << "contract" << decl.name;
          continue;
        }
        // Contracts of imported files are not compiled: imports bring profiles.
        if (fileIndex == 0) {
          unsigned before = diags_.errorCount();
          contracts_.push_back({&decl, false, checkBody(decl)});
          contracts_.back().clean = diags_.errorCount() == before;
        }
      }
    }
  }

  // Pass 2: resolve every profile chain, then every contract on top of its profile.
  ir::Module module;
  for (const Decl &p : profiles_) {
    const ir::Body *body = resolveProfile(p.ast->name);
    if (!body)
      continue;
    ir::Profile profile;
    profile.name = p.ast->name;
    profile.base = p.ast->base;
    profile.chain = chains_[p.ast->name];
    profile.nameRange = p.ast->nameRange;
    profile.imported = p.imported;
    profile.body = *body;
    module.profiles.push_back(std::move(profile));
  }
  const std::string mainFile = sources_.files.empty() ? "" : sources_.files.front()->path;
  for (const Decl &c : contracts_) {
    ir::Contract contract;
    contract.name = c.ast->name;
    // A resize on another profile compiles the same contract on top of it.
    bool overridden = !profileOverride_.empty() && (overrideContract_.empty() || overrideContract_ == c.ast->name);
    const std::string &baseName = overridden ? profileOverride_ : c.ast->base;
    contract.profile = baseName;
    contract.nameRange = c.ast->nameRange;
    contract.sourceFile = mainFile;
    contract.sourceHash = sources_.hash;
    if (!baseName.empty()) {
      if (!profileIndex_.count(baseName)) {
        DiagBuilder d = diags_.report(DiagCode::ERR_SEM_002, c.ast->baseRange);
        d << baseName;
        std::vector<llvm::StringRef> names;
        for (const Decl &p : profiles_)
          names.push_back(p.ast->name);
        if (auto fix = closestMatch(baseName, names))
          d.noteWithFixIt(Location{c.ast->baseRange, {}, 0}, "did you mean '" + *fix + "'?",
                          {c.ast->baseRange, *fix});
        else if (!names.empty())
          d.note(Location::none(), "known profiles: " + [&] {
            std::string all;
            for (llvm::StringRef n : names)
              all += (all.empty() ? "" : ", ") + n.str();
            return all;
          }());
        continue;
      }
      const ir::Body *base = resolveProfile(baseName);
      if (!base)
        continue;
      contract.body = *base;
      contract.chain = chains_[baseName];
    }
    ir::mergeInto(contract.body, c.own);
    // A field that failed to convert is missing from the IR; do not report it missing again.
    if (c.clean)
      checkContractComplete(contract, *c.ast);
    module.contracts.push_back(std::move(contract));
  }
  if (diags_.errorCount() != errorsBefore)
    return std::nullopt;
  return module;
}

} // namespace

std::optional<ir::Module> buildModule(const SourceSet &sources, DiagnosticEngine &diags,
                                      llvm::StringRef profileOverride, llvm::StringRef onlyContract) {
  return IRGen(sources, diags, profileOverride.str(), onlyContract.str()).run();
}

} // namespace msc
