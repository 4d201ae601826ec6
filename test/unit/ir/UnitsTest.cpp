// Unit formatting: exact, in the largest unit that divides the value; and the value printers.
#include "support/Units.h"
#include "ir/ValueFormat.h"

#include <gtest/gtest.h>

namespace msc::ir {
namespace {

TEST(FormatBytes, LargestExactUnit) {
  EXPECT_EQ(formatBytes({0}), "0B");
  EXPECT_EQ(formatBytes({1}), "1B");
  EXPECT_EQ(formatBytes({1023}), "1023B");
  EXPECT_EQ(formatBytes({1024}), "1KiB");
  EXPECT_EQ(formatBytes({1536}), "1536B"); // 1.5KiB is not a whole number of KiB
  EXPECT_EQ(formatBytes({2u << 20}), "2MiB");
  EXPECT_EQ(formatBytes({1536u << 20}), "1536MiB");
  EXPECT_EQ(formatBytes({80ull << 30}), "80GiB");
  EXPECT_EQ(formatBytes({3ull << 40}), "3TiB");
  EXPECT_EQ(formatBytes({1000}), "1KB");
  EXPECT_EQ(formatBytes({1000000000}), "1GB");
  EXPECT_EQ(formatBytes({7000000000000ull}), "7TB");
  EXPECT_EQ(formatBytes({UINT64_MAX}), "18446744073709551615B");
}

TEST(FormatBytes, DecimalAndBinaryUnitsCompareBySize) {
  // 2e9 bytes is 1953125KiB as well as 2GB: the gigabyte is the larger unit.
  EXPECT_EQ(formatBytes({2000000000}), "2GB");
  // 4096000 bytes is 4000KiB and 4096KB: the kibibyte is the larger unit.
  EXPECT_EQ(formatBytes({4096000}), "4000KiB");
  EXPECT_EQ(formatBytes({16000000000000000000ull}), "16000000TB");
}

TEST(FormatDuration, LargestExactUnit) {
  EXPECT_EQ(formatDuration({0}), "0ns");
  EXPECT_EQ(formatDuration({7}), "7ns");
  EXPECT_EQ(formatDuration({1000}), "1us");
  EXPECT_EQ(formatDuration({1500000}), "1500us");
  EXPECT_EQ(formatDuration({200000000}), "200ms");
  EXPECT_EQ(formatDuration({10000000000ull}), "10s");
  EXPECT_EQ(formatDuration({60000000000ull}), "1min");
  EXPECT_EQ(formatDuration({90000000000ull}), "90s");
  EXPECT_EQ(formatDuration({3600000000000ull}), "1h");
  EXPECT_EQ(formatDuration({5400000000000ull}), "90min");
}

TEST(FormatBandwidth, LargestExactUnit) {
  EXPECT_EQ(formatBandwidth({0}), "0bps");
  EXPECT_EQ(formatBandwidth({100000000000ull}), "100Gbps");
  EXPECT_EQ(formatBandwidth({2500000000ull}), "2500Mbps");
  EXPECT_EQ(formatBandwidth({1000000000000ull}), "1Tbps");
  EXPECT_EQ(formatBandwidth({1001}), "1001bps");
}

TEST(FormatTemperature, DecimalsWithoutTrailingZeros) {
  EXPECT_EQ(formatTemperature({70000}), "70C");
  EXPECT_EQ(formatTemperature({70500}), "70.5C");
  EXPECT_EQ(formatTemperature({70050}), "70.05C");
  EXPECT_EQ(formatTemperature({1}), "0.001C");
  EXPECT_EQ(formatTemperature({0}), "0C");
  EXPECT_EQ(formatTemperature({-5000}), "-5C");
  EXPECT_EQ(formatTemperature({-2500}), "-2.5C");
}

TEST(FormatPercent, PartsPerMillion) {
  EXPECT_EQ(formatPercent({150000}), "15%");
  EXPECT_EQ(formatPercent({125000}), "12.5%");
  EXPECT_EQ(formatPercent({1000000}), "100%");
  EXPECT_EQ(formatPercent({1}), "0.0001%");
  EXPECT_EQ(formatPercent({0}), "0%");
}

TEST(ValueFormat, CpuListsPrintAsRuns) {
  EXPECT_EQ(formatValue(std::vector<uint32_t>{}), "[]");
  EXPECT_EQ(formatValue(std::vector<uint32_t>{6}), "[6]");
  EXPECT_EQ(formatValue(std::vector<uint32_t>{2, 3}), "[2, 3]");
  EXPECT_EQ(formatValue(std::vector<uint32_t>{2, 3, 4, 5}), "[2..5]");
  EXPECT_EQ(formatValue(std::vector<uint32_t>{0, 1, 2, 3, 5, 7, 8, 10, 11, 12}), "[0..3, 5, 7, 8, 10..12]");
  // Kept in the order written: a list is not sorted.
  EXPECT_EQ(formatValue(std::vector<uint32_t>{5, 4, 3}), "[5, 4, 3]");
}

TEST(ValueFormat, Scalars) {
  EXPECT_EQ(formatValue(int64_t(-16)), "-16");
  EXPECT_EQ(formatValue(true), "true");
  EXPECT_EQ(formatValue(false), "false");
  EXPECT_EQ(formatValue(0.8), "0.8");
  EXPECT_EQ(formatValue(2.4), "2.4");
  EXPECT_EQ(formatValue(std::string("a\"b\\c\nd")), "\"a\\\"b\\\\c\\nd\"");
  EXPECT_EQ(formatValue(std::vector<std::string>{"bf16", "fp8"}), "[bf16, fp8]");
  EXPECT_EQ(formatValue(Bytes{2u << 20}), "2MiB");
  EXPECT_EQ(formatValue(MilliCelsius{75000}), "75C");
}

TEST(ValueFormat, Compounds) {
  EXPECT_EQ(formatValue(msc::PciBus{0x10000, 0x81}), "\"10000:81\"");
  EXPECT_EQ(formatValue(RdmaPortRef{"mlx5_0", 1}), "\"mlx5_0:1\"");
  EXPECT_EQ(formatValue(HugepagePool{Bytes{2u << 20}, 2048}), "hugepages(2MiB, count = 2048)");
  EXPECT_EQ(formatValue(RecoveryPoint{128, {}}), "every(128 steps)");
  EXPECT_EQ(formatValue(RecoveryPoint{0, Nanoseconds{1800000000000ull}}), "every(30min)");
  GpuRef index;
  index.index = 3;
  EXPECT_EQ(formatValue(index), "3");
  GpuRef pci;
  pci.form = GpuRef::Form::Pci;
  pci.pci = PciAddress{0, 0x81, 0, 0};
  EXPECT_EQ(formatValue(pci), "0000:81:00.0");
  GpuRef uuid;
  uuid.form = GpuRef::Form::Uuid;
  uuid.uuid = "GPU-1234";
  EXPECT_EQ(formatValue(uuid), "\"GPU-1234\"");
}

} // namespace
} // namespace msc::ir
