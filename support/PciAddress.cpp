#include "support/PciAddress.h"

#include <llvm/ADT/SmallVector.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/Format.h>
#include <llvm/Support/raw_ostream.h>

namespace msc {

std::string PciAddress::str() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%04x:%02x:%02x.%x", domain, bus, device, function);
  return out;
}

std::string PciBus::str() const {
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::format("%04x:%02x", domain, bus);
  return out;
}

namespace {
bool parseHex(llvm::StringRef s, size_t maxDigits, uint64_t limit, uint64_t &out) {
  if (s.empty() || s.size() > maxDigits)
    return false;
  for (char c : s)
    if (!llvm::isHexDigit(c))
      return false;
  if (s.getAsInteger(16, out))
    return false;
  return out <= limit;
}
} // namespace

std::optional<ParsedPci> parsePci(llvm::StringRef text, std::string *why) {
  auto fail = [&](const char *reason) -> std::optional<ParsedPci> {
    if (why)
      *why = reason;
    return std::nullopt;
  };
  llvm::SmallVector<llvm::StringRef, 3> parts;
  text.split(parts, ':');
  if (parts.size() < 2 || parts.size() > 3)
    return fail("expected DDDD:BB:DD.F");
  ParsedPci result{ParsedPci::Form::Full, {}};
  llvm::StringRef last = parts.back();
  auto [dev, fn] = last.split('.');
  bool hasFunction = last.contains('.');
  uint64_t value = 0;
  if (!hasFunction) {
    if (parts.size() != 2)
      return fail("missing '.function'");
    // DDDD:BB (a bus)
    if (!parseHex(parts[0], 8, 0xffffffffu, value))
      return fail("domain is not 1-8 hex digits");
    result.address.domain = static_cast<uint32_t>(value);
    if (!parseHex(parts[1], 2, 0xff, value))
      return fail("bus is not 1-2 hex digits");
    result.address.bus = static_cast<uint8_t>(value);
    result.form = ParsedPci::Form::BusOnly;
    return result;
  }
  size_t busIndex = parts.size() == 3 ? 1 : 0;
  if (parts.size() == 3) {
    if (!parseHex(parts[0], 8, 0xffffffffu, value))
      return fail("domain is not 1-8 hex digits");
    result.address.domain = static_cast<uint32_t>(value);
  } else {
    result.form = ParsedPci::Form::NoDomain;
  }
  if (!parseHex(parts[busIndex], 2, 0xff, value))
    return fail("bus is not 1-2 hex digits");
  result.address.bus = static_cast<uint8_t>(value);
  if (!parseHex(dev, 2, 0x1f, value))
    return fail("device is not a hex number 00-1f");
  result.address.device = static_cast<uint8_t>(value);
  if (!parseHex(fn, 1, 7, value))
    return fail("function is not 0-7");
  result.address.function = static_cast<uint8_t>(value);
  return result;
}

std::optional<PciAddress> parsePciAddress(llvm::StringRef text) {
  auto parsed = parsePci(text.trim());
  if (!parsed || parsed->form != ParsedPci::Form::Full)
    return std::nullopt;
  return parsed->address;
}

} // namespace msc
