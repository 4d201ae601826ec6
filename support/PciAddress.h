// PCI addresses (domain:bus:device.function) as values, shared by the frontend and the HAL.
#pragma once

#include <llvm/ADT/StringRef.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <string>

namespace msc {

struct PciAddress {
  uint32_t domain = 0; // 16 bits usually; 32-bit domains exist (VMD, some hypervisors)
  uint8_t bus = 0;
  uint8_t device = 0;   // 0..31
  uint8_t function = 0; // 0..7

  auto operator<=>(const PciAddress &) const = default;
  // "0000:81:00.0"; domains above 0xffff print with as many digits as they need.
  std::string str() const;
};

// A domain and bus ("0000:81"): what people call a PCIe domain or root port bus.
struct PciBus {
  uint32_t domain = 0;
  uint8_t bus = 0;
  auto operator<=>(const PciBus &) const = default;
  std::string str() const;
};

// What a parse of "DDDD:BB:DD.F", "BB:DD.F" or "DDDD:BB" found.
struct ParsedPci {
  enum class Form { Full, NoDomain, BusOnly };
  Form form;
  PciAddress address; // for BusOnly only domain and bus are meaningful
};

// Parses any of the three forms; on failure returns nullopt and sets `why` to a short reason.
std::optional<ParsedPci> parsePci(llvm::StringRef text, std::string *why = nullptr);
// Parses exactly a full address (domain required).
std::optional<PciAddress> parsePciAddress(llvm::StringRef text);

} // namespace msc
