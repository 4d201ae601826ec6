// Numbers with units to exact integers in base units: exactness, overflow, malformed input.
#include "support/Quantity.h"

#include <gtest/gtest.h>

namespace msc {
namespace {

std::optional<uint64_t> convert(llvm::StringRef number, llvm::StringRef unit, QuantityError *errorOut = nullptr) {
  QuantityError error = QuantityError::None;
  auto value = toBaseUnits(number, unit, error);
  if (errorOut)
    *errorOut = error;
  EXPECT_EQ(value.has_value(), error == QuantityError::None) << number.str() << unit.str();
  return value;
}

QuantityError errorOf(llvm::StringRef number, llvm::StringRef unit) {
  QuantityError error = QuantityError::None;
  EXPECT_FALSE(convert(number, unit, &error)) << number.str() << unit.str();
  return error;
}

TEST(ToBaseUnits, Sizes) {
  EXPECT_EQ(convert("1", "B"), 1u);
  EXPECT_EQ(convert("1.5", "KiB"), 1536u);
  EXPECT_EQ(convert("1536", "KiB"), 1572864u);
  EXPECT_EQ(convert("1.5", "GiB"), 1610612736u);
  EXPECT_EQ(convert("2", "MiB"), 2097152u);
  EXPECT_EQ(convert("0.25", "KiB"), 256u);
  EXPECT_EQ(convert("3", "TiB"), 3ull << 40);
  EXPECT_EQ(convert("1", "KB"), 1000u);
  EXPECT_EQ(convert("2.5", "GB"), 2500000000u);
  EXPECT_EQ(convert("0.000001", "TB"), 1000000u);
}

TEST(ToBaseUnits, DurationsTemperaturesSharesBandwidth) {
  EXPECT_EQ(convert("90", "s"), 90000000000u);
  EXPECT_EQ(convert("1.5", "ms"), 1500000u);
  EXPECT_EQ(convert("200", "ms"), 200000000u);
  EXPECT_EQ(convert("1.5", "min"), 90000000000u);
  EXPECT_EQ(convert("1", "h"), 3600000000000u);
  EXPECT_EQ(convert("7", "ns"), 7u);
  EXPECT_EQ(convert("70.5", "C"), 70500u);
  EXPECT_EQ(convert("15", "%"), 150000u);
  EXPECT_EQ(convert("12.5", "%"), 125000u);
  EXPECT_EQ(convert("0.0001", "%"), 1u);
  EXPECT_EQ(convert("100", "Gbps"), 100000000000u);
  EXPECT_EQ(convert("2.5", "Gbps"), 2500000000u);
  EXPECT_EQ(convert("128", "steps"), 128u);
  EXPECT_EQ(convert("1", "step"), 1u);
}

TEST(ToBaseUnits, NoUnitMeansFactorOne) {
  EXPECT_EQ(convert("42", ""), 42u);
  EXPECT_EQ(convert("0", ""), 0u);
  EXPECT_EQ(convert("007", ""), 7u);
  EXPECT_EQ(convert("2.0", ""), 2u);
  EXPECT_EQ(errorOf("2.5", ""), QuantityError::Inexact);
}

TEST(ToBaseUnits, InexactIsRefusedNotRounded) {
  EXPECT_EQ(errorOf("0.5", "B"), QuantityError::Inexact);
  EXPECT_EQ(errorOf("0.001", "KiB"), QuantityError::Inexact); // 1.024 bytes
  EXPECT_EQ(errorOf("0.0000000001", "s"), QuantityError::Inexact);
  EXPECT_EQ(errorOf("70.0005", "C"), QuantityError::Inexact);
  EXPECT_EQ(errorOf("0.00001", "%"), QuantityError::Inexact);
}

TEST(ToBaseUnits, TrailingZerosDoNotMakeAValueInexact) {
  EXPECT_EQ(convert("1.000000000000000000000000000000", "B"), 1u);
  EXPECT_EQ(convert("2.50000000000000000000000000", "GB"), 2500000000u);
}

TEST(ToBaseUnits, Overflow) {
  EXPECT_EQ(convert("18446744073709551615", ""), UINT64_MAX);
  EXPECT_EQ(errorOf("18446744073709551616", ""), QuantityError::Overflow);
  EXPECT_EQ(errorOf("99999999999999999999999999999999999999999", ""), QuantityError::Overflow);
  EXPECT_EQ(convert("16777215", "TiB"), (16777215ull << 40));
  EXPECT_EQ(errorOf("16777216", "TiB"), QuantityError::Overflow); // exactly 2^64 bytes
  EXPECT_EQ(errorOf("5124096", "h"), QuantityError::Overflow);
  EXPECT_EQ(convert("5124095", "h"), 5124095ull * 3600000000000ull);
}

TEST(ToBaseUnits, OverflowWithLongFractionsIsNotWrappedAround) {
  // The exact product of these does not fit in 128 bits; it must not wrap into a small number.
  EXPECT_EQ(errorOf("18446744073709551615.0000000000000000001", "h"), QuantityError::Overflow);
  EXPECT_EQ(errorOf("18446744073709551615.9999999999999999999", "TiB"), QuantityError::Overflow);
  EXPECT_EQ(errorOf("18446744073709551615.5", "KiB"), QuantityError::Overflow);
}

TEST(ToBaseUnits, Malformed) {
  EXPECT_EQ(errorOf("", ""), QuantityError::Malformed);
  EXPECT_EQ(errorOf("1.", "s"), QuantityError::Malformed);
  EXPECT_EQ(errorOf(".5", "s"), QuantityError::Malformed);
  EXPECT_EQ(errorOf("1.2.3", "s"), QuantityError::Malformed);
  EXPECT_EQ(errorOf("1e5", ""), QuantityError::Malformed);
  EXPECT_EQ(errorOf("-1", ""), QuantityError::Malformed);
  EXPECT_EQ(errorOf("12", "Mib"), QuantityError::Malformed);
}

TEST(Units, DimensionOfUnit) {
  EXPECT_EQ(dimensionOfUnit(""), Dimension::None);
  EXPECT_EQ(dimensionOfUnit("MiB"), Dimension::Size);
  EXPECT_EQ(dimensionOfUnit("GB"), Dimension::Size);
  EXPECT_EQ(dimensionOfUnit("min"), Dimension::Duration);
  EXPECT_EQ(dimensionOfUnit("C"), Dimension::Temperature);
  EXPECT_EQ(dimensionOfUnit("%"), Dimension::Percent);
  EXPECT_EQ(dimensionOfUnit("Gbps"), Dimension::Bandwidth);
  EXPECT_EQ(dimensionOfUnit("steps"), Dimension::Steps);
  EXPECT_EQ(dimensionOfUnit("step"), Dimension::Steps);
  EXPECT_EQ(dimensionOfUnit("samples"), Dimension::Samples);
  EXPECT_EQ(dimensionOfUnit("sample"), Dimension::Samples);
  EXPECT_FALSE(dimensionOfUnit("Mib"));
  EXPECT_FALSE(dimensionOfUnit("mb"));
  EXPECT_FALSE(dimensionOfUnit("F"));
}

TEST(Units, UnitsOfEachDimensionAreItsOwn) {
  for (Dimension d : {Dimension::Size, Dimension::Duration, Dimension::Temperature, Dimension::Percent,
                      Dimension::Bandwidth, Dimension::Steps, Dimension::Samples}) {
    ASSERT_FALSE(unitsOf(d).empty()) << dimensionName(d).str();
    for (llvm::StringRef unit : unitsOf(d))
      EXPECT_EQ(dimensionOfUnit(unit), d) << unit.str();
  }
  EXPECT_TRUE(unitsOf(Dimension::None).empty());
  EXPECT_EQ(unitsOf(Dimension::Size).size(), 9u);
  EXPECT_EQ(dimensionName(Dimension::Size), "a size");
  EXPECT_EQ(dimensionName(Dimension::Duration), "a duration");
}

// The tools' --duration and --min-latency take the contract language's duration units.
TEST(Quantity, CommandLineDurations) {
  EXPECT_EQ(parseDurationNs("500ms"), 500'000'000u);
  EXPECT_EQ(parseDurationNs("1.5s"), 1'500'000'000u);
  EXPECT_EQ(parseDurationNs("2min"), 120'000'000'000u);
  EXPECT_EQ(parseDurationNs("100us"), 100'000u);
  EXPECT_EQ(parseDurationNs(" 30 "), 30'000'000'000u); // a bare number: seconds
  EXPECT_EQ(parseDurationNs("0"), 0u);
  EXPECT_EQ(parseDurationNs("250", "ms"), 250'000'000u);
  EXPECT_FALSE(parseDurationNs("5fortnights"));
  EXPECT_FALSE(parseDurationNs("2GiB"));   // a size, not a duration
  EXPECT_FALSE(parseDurationNs("a"));
  EXPECT_FALSE(parseDurationNs(""));
  EXPECT_FALSE(parseDurationNs("0.5ns")); // not a whole number of nanoseconds
}

TEST(Quantity, MeasuredDurationsAreRoundedForPeople) {
  EXPECT_EQ(formatMeasuredNs(0), "0 ns");
  EXPECT_EQ(formatMeasuredNs(999), "999 ns");
  EXPECT_EQ(formatMeasuredNs(12345), "12.3 us");
  EXPECT_EQ(formatMeasuredNs(4560000), "4.56 ms");
  EXPECT_EQ(formatMeasuredNs(1200000000), "1.20 s");
}

} // namespace
} // namespace msc
