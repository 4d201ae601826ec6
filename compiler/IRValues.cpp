// Value conversion for IR generation: each field kind's conversion from an AST value, with its
// units, bounds and diagnostics, and the assignment of a converted value to its IR struct member.
#include "compiler/IRValues.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/SmallVector.h>

#include <map>
#include <string>
#include <vector>

namespace msc::detail {

using ir::FieldKind;

namespace {

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

} // namespace

void ValueConverter::mismatch(const ast::Value &v, const FieldInfo &f) {
  diags_.report(DiagCode::ERR_SEM_005, v.range) << f.name << ir::fieldKindName(f.kind) << describe(v);
}

std::optional<int64_t> ValueConverter::integer(const ast::Value &v, llvm::StringRef text, llvm::SMRange range,
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

bool ValueConverter::inRange(int64_t value, const FieldInfo &f, llvm::SMRange range) {
  if (f.min < f.max && (value < f.min || value > f.max)) {
    diags_.report(DiagCode::ERR_SEM_009, range)
        << value << f.name << (std::to_string(f.min) + ".." + std::to_string(f.max));
    return false;
  }
  return true;
}

std::optional<uint64_t> ValueConverter::quantity(const ast::Value &v, const FieldInfo &f, Dimension dim) {
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

std::optional<PciAddress> ValueConverter::pciOf(const ast::Value &v, const FieldInfo &f, bool &domainGiven) {
  std::string why;
  auto parsed = parsePci(v.text, &why);
  if (!parsed || parsed->form == ParsedPci::Form::BusOnly) {
    diags_.report(DiagCode::ERR_SEM_018, v.range) << v.text << (parsed ? "expected a device address" : why);
    return std::nullopt;
  }
  domainGiven = parsed->form == ParsedPci::Form::Full;
  return parsed->address;
}

std::optional<uint32_t> ValueConverter::cpuNumber(llvm::StringRef text, llvm::SMRange range, const FieldInfo &f) {
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

// `N local`: N whole physical cores that placement binds near the role's device. The grammar reads
// `local` as the unit of the number, so it arrives as a quantity.
std::optional<ir::CpuCores> ValueConverter::localCores(const ast::Value &v, const FieldInfo &f) {
  auto count = integer(v, v.text, v.range, f);
  if (!count)
    return std::nullopt;
  if (*count < 1 || *count > 4096) {
    diags_.report(DiagCode::ERR_SEM_009, v.range) << (v.text + " local") << f.name << "1..4096 whole cores";
    return std::nullopt;
  }
  ir::CpuCores cores;
  cores.localCores = static_cast<uint32_t>(*count);
  return cores;
}

template <>
std::optional<ir::CpuCores> ValueConverter::convert<FieldKind::CpuList>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind == ast::Value::Kind::Number && v.unit == "local")
    return localCores(v, f);
  if (v.kind == ast::Value::Kind::Number && !v.unit.empty() && !dimensionOfUnit(v.unit)) {
    DiagBuilder d = diags_.report(DiagCode::ERR_SEM_006, v.unitRange);
    d << v.unit << ("'" + f.name.str() + "'");
    if (closestMatch(v.unit, {"local"}))
      d.noteWithFixIt(Location{v.unitRange, {}, 0}, "did you mean 'local'?", {v.unitRange, "local"});
    return std::nullopt;
  }
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
      if (!item->lowUnit.empty() || !item->highUnit.empty()) {
        const std::string &unit = item->lowUnit.empty() ? item->highUnit : item->lowUnit;
        diags_.report(DiagCode::ERR_SEM_006, item->lowUnit.empty() ? item->highUnitRange : item->lowUnitRange)
            << unit << ("'" + f.name.str() + "'");
        ok = false;
        continue;
      }
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
  return ir::CpuCores(cpus.begin(), cpus.end());
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
  if (v.kind == ast::Value::Kind::Ident && v.text == "any") {
    ref.form = ir::GpuRef::Form::Any;
    return ref;
  }
  DiagBuilder d = diags_.report(DiagCode::ERR_SEM_005, v.range);
  d << f.name << ir::fieldKindName(f.kind) << describe(v);
  if (v.kind == ast::Value::Kind::Ident && closestMatch(v.text, {"any"}))
    d.noteWithFixIt(Location{v.range, {}, 0}, "did you mean 'any'?", {v.range, "any"});
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
  // A bare `nearest` asks placement to bind the HCA; a device is named by a string or other word.
  if (v.kind == ast::Value::Kind::Ident && v.text == "nearest") {
    ref.nearest = true;
    return ref;
  }
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

template <>
std::optional<ir::LeadTime> ValueConverter::convert<FieldKind::Lead>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind == ast::Value::Kind::Ident && v.text == "auto")
    return ir::LeadTime{};
  if (v.kind == ast::Value::Kind::Ident) {
    DiagBuilder d = diags_.report(DiagCode::ERR_SEM_009, v.range);
    d << ("'" + v.text + "'") << f.name << "a duration, or auto";
    if (closestMatch(v.text, {"auto"}))
      d.noteWithFixIt(Location{v.range, {}, 0}, "did you mean 'auto'?", {v.range, "auto"});
    return std::nullopt;
  }
  if (auto d = convert<FieldKind::Duration>(v, f))
    return ir::LeadTime{false, *d};
  return std::nullopt;
}

template <>
std::optional<ir::CountRange> ValueConverter::convert<FieldKind::Count>(const ast::Value &v, const FieldInfo &f) {
  if (v.kind != ast::Value::Kind::Range) {
    auto n = convert<FieldKind::Int>(v, f);
    return n ? std::optional<ir::CountRange>(ir::CountRange{*n, *n}) : std::nullopt;
  }
  if (!v.lowUnit.empty() || !v.highUnit.empty()) {
    bool low = !v.lowUnit.empty();
    diags_.report(DiagCode::ERR_SEM_006, low ? v.lowUnitRange : v.highUnitRange)
        << (low ? v.lowUnit : v.highUnit) << ("'" + f.name.str() + "'");
    return std::nullopt;
  }
  auto lo = integer(v, v.lowText, v.lowRange, f);
  if (!lo || !inRange(*lo, f, v.lowRange))
    return std::nullopt;
  auto hi = integer(v, v.highText, v.highRange, f);
  if (!hi || !inRange(*hi, f, v.highRange))
    return std::nullopt;
  if (*hi < *lo) {
    diags_.report(DiagCode::ERR_SEM_014, v.range) << *lo << *hi;
    return std::nullopt;
  }
  return ir::CountRange{*lo, *hi};
}

template <>
std::optional<int64_t> ValueConverter::convert<FieldKind::Samples>(const ast::Value &v, const FieldInfo &f) {
  auto n = quantity(v, f, Dimension::Samples);
  if (!n)
    return std::nullopt;
  if (*n > uint64_t(INT64_MAX) || !inRange(int64_t(*n), f, v.range))
    return std::nullopt;
  return int64_t(*n);
}

std::optional<ir::PhaseWhen> ValueConverter::phaseWhen(const ast::Value &v, const std::string &phase) {
  auto refuse = [&](llvm::SMRange at, const std::string &why) {
    diags_.report(DiagCode::ERR_SEM_022, at) << phase << why;
    return std::nullopt;
  };
  const char *forms = "expected worker, every(N steps, for = M steps) or a window of wall time FROM..TO (e.g. 37min..42min)";
  ir::PhaseWhen when;
  if (v.kind == ast::Value::Kind::Ident) {
    if (v.text != "worker")
      return refuse(v.range, "'" + v.text + "': " + forms);
    return when; // Kind::Worker
  }
  if (v.kind == ast::Value::Kind::Range) {
    auto end = [&](llvm::StringRef text, llvm::StringRef unit, llvm::SMRange range) -> std::optional<ir::Nanoseconds> {
      ast::Value q;
      q.kind = ast::Value::Kind::Number;
      q.text = text.str();
      q.unit = unit.str();
      q.range = range;
      if (unit.empty() || dimensionOfUnit(unit) != Dimension::Duration) {
        refuse(range, "'" + text.str() + unit.str() + "' is not a time within the job (e.g. 37min)");
        return std::nullopt;
      }
      return convert<FieldKind::Duration>(q, FieldInfo{"when", FieldKind::Duration, 0, 0, ""});
    };
    auto from = end(v.lowText, v.lowUnit, v.lowUnitRange.isValid() ? v.lowUnitRange : v.lowRange);
    if (!from)
      return std::nullopt;
    auto to = end(v.highText, v.highUnit, v.highUnitRange.isValid() ? v.highUnitRange : v.highRange);
    if (!to)
      return std::nullopt;
    if (to->value <= from->value)
      return refuse(v.range, "the window " + ir::formatDuration(*from) + ".." + ir::formatDuration(*to) +
                                 " ends before it starts");
    when.kind = ir::PhaseWhen::Kind::WallTime;
    when.from = *from;
    when.to = *to;
    return when;
  }
  if (v.kind != ast::Value::Kind::Call)
    return refuse(v.range, forms);
  if (v.callee != "every")
    return refuse(v.range, "'" + v.callee + "(...)': " + forms);
  // every(N steps, for = M steps)
  auto steps = [&](const ast::Value &arg, const char *what) -> std::optional<uint64_t> {
    auto dim = arg.kind == ast::Value::Kind::Number ? dimensionOfUnit(arg.unit) : std::nullopt;
    if (dim != Dimension::Steps) {
      refuse(arg.range, std::string(what) + " is a number of steps (e.g. 500 steps)");
      return std::nullopt;
    }
    ast::Value plain;
    plain.kind = ast::Value::Kind::Number;
    plain.text = arg.text;
    plain.range = arg.range;
    auto n = convert<FieldKind::Int>(plain, FieldInfo{what, FieldKind::Int, 1, INT64_MAX, ""});
    return n ? std::optional<uint64_t>(uint64_t(*n)) : std::nullopt;
  };
  if (v.arguments.size() != 2 || !v.arguments[0].name.empty() || v.arguments[1].name != "for")
    return refuse(v.range, "expected every(N steps, for = M steps)");
  auto every = steps(*v.arguments[0].value, "the period");
  if (!every)
    return std::nullopt;
  auto length = steps(*v.arguments[1].value, "'for'");
  if (!length)
    return std::nullopt;
  if (*length >= *every)
    return refuse(v.range, "a phase of " + std::to_string(*length) + " steps in every " + std::to_string(*every) +
                               " never ends: 'for' must be shorter than the period");
  when.kind = ir::PhaseWhen::Kind::Steps;
  when.everySteps = *every;
  when.forSteps = *length;
  return when;
}

std::optional<std::vector<ir::ResourceKind>>
ValueConverter::exclusiveResources(const ast::Value &v, const std::string &role, std::vector<llvm::SMRange> &written) {
  std::vector<const ast::Value *> items;
  if (v.kind == ast::Value::Kind::List)
    for (const auto &e : v.elements)
      items.push_back(e.get());
  else
    items.push_back(&v);
  std::vector<llvm::StringRef> names;
  for (ir::ResourceKind k : ir::kResourceKinds)
    names.push_back(ir::resourceKindName(k));
  std::vector<ir::ResourceKind> out;
  bool ok = true;
  for (const ast::Value *item : items) {
    auto kind = llvm::find_if(ir::kResourceKinds, [&](ir::ResourceKind k) {
      return item->kind == ast::Value::Kind::Ident && ir::resourceKindName(k) == item->text;
    });
    if (kind == std::end(ir::kResourceKinds)) {
      std::string word = item->kind == ast::Value::Kind::Ident ? item->text : describe(*item);
      bool hugepages = word == "hugepages" || word == "memory_pool" || word == "memory";
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_023, item->range);
      d << word << (hugepages ? "hugepage pools and memory are never lent, so a phase need not keep them"
                              : "one of cpu, io, gpu, rdma");
      if (!hugepages && item->kind == ast::Value::Kind::Ident)
        if (auto fix = closestMatch(item->text, names))
          d.noteWithFixIt(Location{item->range, {}, 0}, "did you mean '" + *fix + "'?", {item->range, *fix});
      ok = false;
      continue;
    }
    if (llvm::is_contained(out, *kind)) {
      diags_.report(DiagCode::ERR_SEM_015, item->range) << item->text << role;
      ok = false;
      continue;
    }
    out.push_back(*kind);
    written.push_back(item->range);
  }
  if (!ok)
    return std::nullopt;
  return out;
}

// Assigns a converted value to the struct member named by `info`.
#define MSC_ASSIGN_FIELD(NAME, KIND, ...)                                                         \
  if (info.name == ir::fieldSpelling(#NAME)) {                                                    \
    if (auto value = convert<FieldKind::KIND>(v, info))                                           \
      fields.NAME = ir::Field<ir::KindType<FieldKind::KIND>::type>{std::move(*value), origin};    \
    return;                                                                                       \
  }
void ValueConverter::assign(ir::ComputeFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define COMPUTE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void ValueConverter::assign(ir::RoleFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define ROLE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void ValueConverter::assign(ir::FaultToleranceFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define FAULT_TOLERANCE_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void ValueConverter::assign(ir::ScalingFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define SCALING_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void ValueConverter::assign(ir::PolicyFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define POLICY_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
void ValueConverter::assign(ir::LendingFields &fields, const FieldInfo &info, const ast::Value &v,
                            const ir::Origin &origin) {
#define LENDING_FIELD MSC_ASSIGN_FIELD
#include "ir/Fields.def"
}
#undef MSC_ASSIGN_FIELD

} // namespace msc::detail
