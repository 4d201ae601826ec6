// PCI addresses: the three accepted forms, what is refused and why, and printing.
#include "support/PciAddress.h"

#include <gtest/gtest.h>

namespace msc {
namespace {

TEST(PciAddress, ParsesFullAddress) {
  auto parsed = parsePci("0000:81:00.0");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->form, ParsedPci::Form::Full);
  EXPECT_EQ(parsed->address, (PciAddress{0, 0x81, 0, 0}));
  EXPECT_EQ(parsed->address.str(), "0000:81:00.0");
}

TEST(PciAddress, ParsesUpperAndLowerCaseHex) {
  auto parsed = parsePci("00aB:Af:1F.7");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->address, (PciAddress{0xab, 0xaf, 0x1f, 7}));
  EXPECT_EQ(parsed->address.str(), "00ab:af:1f.7");
}

TEST(PciAddress, ParsesAddressWithoutDomain) {
  auto parsed = parsePci("3b:00.1");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->form, ParsedPci::Form::NoDomain);
  EXPECT_EQ(parsed->address, (PciAddress{0, 0x3b, 0, 1}));
}

TEST(PciAddress, ParsesDomainAndBus) {
  auto parsed = parsePci("0001:81");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->form, ParsedPci::Form::BusOnly);
  EXPECT_EQ(parsed->address.domain, 1u);
  EXPECT_EQ(parsed->address.bus, 0x81);
  EXPECT_EQ((PciBus{parsed->address.domain, parsed->address.bus}).str(), "0001:81");
}

TEST(PciAddress, ParsesFiveDigitDomain) {
  // VMD and some hypervisors use domains above 0xffff.
  auto parsed = parsePci("10000:00:04.0");
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->form, ParsedPci::Form::Full);
  EXPECT_EQ(parsed->address.domain, 0x10000u);
  EXPECT_EQ(parsed->address.device, 4);
  EXPECT_EQ(parsed->address.str(), "10000:00:04.0");
  EXPECT_EQ((PciBus{0x10000, 0x3a}).str(), "10000:3a");
  auto widest = parsePci("ffffffff:ff:1f.7");
  ASSERT_TRUE(widest);
  EXPECT_EQ(widest->address.domain, 0xffffffffu);
}

struct Rejected {
  const char *text;
  const char *why;
};

class PciAddressRejects : public ::testing::TestWithParam<Rejected> {};

TEST_P(PciAddressRejects, WithAReason) {
  std::string why;
  EXPECT_FALSE(parsePci(GetParam().text, &why)) << GetParam().text;
  EXPECT_EQ(why, GetParam().why) << GetParam().text;
}

INSTANTIATE_TEST_SUITE_P(
    Bad, PciAddressRejects,
    ::testing::Values(Rejected{"0000:81:20.0", "device is not a hex number 00-1f"},
                      Rejected{"0000:81:ff.0", "device is not a hex number 00-1f"},
                      Rejected{"0000:81:00.8", "function is not 0-7"},
                      Rejected{"0000:81:00.10", "function is not 0-7"},
                      Rejected{"0000:81:00.", "function is not 0-7"},
                      Rejected{"0000:100:00.0", "bus is not 1-2 hex digits"},
                      Rejected{"0000:g1:00.0", "bus is not 1-2 hex digits"},
                      Rejected{"100000000:00:00.0", "domain is not 1-8 hex digits"},
                      Rejected{"0000:81:00", "missing '.function'"},
                      Rejected{"81", "expected DDDD:BB:DD.F"},
                      Rejected{"", "expected DDDD:BB:DD.F"},
                      Rejected{"0:0:0:0.0", "expected DDDD:BB:DD.F"},
                      Rejected{"0000:0x1:00.0", "bus is not 1-2 hex digits"},
                      Rejected{"-1:00:00.0", "domain is not 1-8 hex digits"}));

TEST(PciAddress, ParsePciAddressWantsTheDomain) {
  EXPECT_EQ(parsePciAddress("0000:81:00.0"), (PciAddress{0, 0x81, 0, 0}));
  EXPECT_EQ(parsePciAddress("  0000:81:00.0\n"), (PciAddress{0, 0x81, 0, 0}));
  EXPECT_FALSE(parsePciAddress("81:00.0"));
  EXPECT_FALSE(parsePciAddress("0000:81"));
  EXPECT_FALSE(parsePciAddress("0000:81:20.0"));
}

TEST(PciAddress, OrdersByDomainBusDeviceFunction) {
  EXPECT_LT((PciAddress{0, 0x81, 0, 7}), (PciAddress{0, 0x81, 1, 0}));
  EXPECT_LT((PciAddress{0, 0xff, 0x1f, 7}), (PciAddress{1, 0, 0, 0}));
  EXPECT_LT((PciBus{0, 0x81}), (PciBus{0, 0x82}));
}

} // namespace
} // namespace msc
