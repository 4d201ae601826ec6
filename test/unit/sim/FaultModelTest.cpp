// The fault model against its sources: Llama 3's table read back as its paper printed it, scaled
// with the cluster by each cause's scope, and drawn by seed with the counts and the mix the rates
// promise.
#include "sim/Estimate.h"
#include "sim/FaultModel.h"

#include <gtest/gtest.h>

#include <map>

using namespace msc::sim;

namespace {
constexpr uint64_t kDayNs = 86'400'000'000'000ull;
const ClusterShape kLlama3{2048, 8}; // 16,384 H100 GPUs

// The interruptions of `days` on `model`, drawn with `seed`.
std::vector<Fault> draw(const FaultModel &model, uint64_t seed, uint64_t days) {
  std::mt19937_64 rng(seed);
  std::vector<Fault> out;
  for (Fault f = model.next(0, rng); f.atNs < days * kDayNs; f = model.next(f.atNs, rng))
    out.push_back(f);
  return out;
}
} // namespace

TEST(FaultModel, Llama3sTableIsItsPapersAtItsScale) {
  FaultModel model(faultCauses(RateTable::Llama3), kLlama3);
  ASSERT_EQ(model.causes().size(), 18u);
  double events = 0;
  for (size_t i = 0; i < model.causes().size(); ++i)
    events += model.perHour(i) * 54 * 24;
  EXPECT_NEAR(events, 419, 1e-9) << "the 419 unexpected interruptions of the 54 days";
  EXPECT_NEAR(model.perHour() * 54 * 24, 419, 1e-9);
  EXPECT_EQ(model.causes()[0].name, "faulty GPU");
  EXPECT_NEAR(model.perHour(0) * 54 * 24, 148, 1e-9);
  EXPECT_NE(model.causes()[0].source.find("Table 5"), std::string::npos);
}

TEST(FaultModel, EachCauseScalesWithWhatItStrikes) {
  FaultModel at16k(faultCauses(RateTable::Llama3), kLlama3);
  FaultModel at131k(faultCauses(RateTable::Llama3), {16384, 8});
  for (size_t i = 0; i < at16k.causes().size(); ++i) {
    double ratio = at131k.perHour(i) / at16k.perHour(i);
    EXPECT_NEAR(ratio, at16k.causes()[i].scope == Scope::Job ? 1.0 : 8.0, 1e-12) << at16k.causes()[i].name;
  }
  // 54 software bugs + 7 watchdogs + 2 IO network + 2 dependency stay; the rest grow eightfold.
  EXPECT_NEAR(at131k.perHour() * 54 * 24, 65 + (419 - 65) * 8, 1e-6);
}

TEST(FaultModel, TheSeedsRates) {
  FaultModel model(faultCauses(RateTable::Seed), kLlama3);
  ASSERT_EQ(model.causes().size(), 2u);
  EXPECT_NEAR(model.perHour(0) * 30 * 24, 0.007 * 16384, 1e-9) << "0.7% of the GPUs a month";
  EXPECT_NEAR(model.perHour(1) * 91.25 * 24, 1.2 * 2048, 1e-9) << "1.2 per node a quarter";
  EXPECT_EQ(rateTableNamed("seed"), RateTable::Seed);
  EXPECT_EQ(rateTableNamed("llama3"), RateTable::Llama3);
  EXPECT_FALSE(rateTableNamed("Llama3"));
}

TEST(FaultModel, ThirtySeedsOf54DaysDrawTheCountAndTheMixPublished) {
  FaultModel model(faultCauses(RateTable::Llama3), kLlama3);
  std::vector<double> counts;
  std::map<size_t, double> byCause;
  double all = 0;
  for (uint64_t seed = 1; seed <= 30; ++seed) {
    std::vector<Fault> faults = draw(model, seed, 54);
    counts.push_back(double(faults.size()));
    for (const Fault &f : faults) {
      ++byCause[f.cause];
      ++all;
      const FaultCause &c = model.causes()[f.cause];
      ASSERT_LT(f.node, kLlama3.nodes);
      ASSERT_LT(f.gpu, kLlama3.gpusPerNode);
      if (c.scope == Scope::Job) {
        ASSERT_EQ(f.node, 0u);
      }
      if (c.scope != Scope::Gpu) {
        ASSERT_EQ(f.gpu, 0u);
      }
    }
  }
  Estimate e = estimate(counts);
  EXPECT_LE(e.low(), 419) << formatEstimate(e);
  EXPECT_GE(e.high(), 419) << formatEstimate(e);
  EXPECT_LT(e.halfWidth, 12) << "a Poisson count of 419 varies by about 20 a run";
  EXPECT_NEAR(byCause[0] / all, 148.0 / 419, 0.02) << "faulty GPUs' share";
  EXPECT_NEAR(byCause[1] / all, 72.0 / 419, 0.02) << "HBM3's share";
}

TEST(FaultModel, TheSameSeedDrawsTheSameFaults) {
  FaultModel model(faultCauses(RateTable::Llama3), kLlama3);
  std::vector<Fault> a = draw(model, 7, 10), b = draw(model, 7, 10), c = draw(model, 8, 10);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].atNs, b[i].atNs);
    EXPECT_EQ(a[i].cause, b[i].cause);
    EXPECT_EQ(a[i].node, b[i].node);
    EXPECT_EQ(a[i].gpu, b[i].gpu);
  }
  ASSERT_FALSE(c.empty());
  EXPECT_NE(a.front().atNs, c.front().atNs);
}

TEST(FaultModel, NoCausesNoFaults) {
  FaultModel model({}, kLlama3);
  std::mt19937_64 rng(1);
  EXPECT_EQ(model.perHour(), 0);
  EXPECT_EQ(model.next(5, rng).atNs, UINT64_MAX);
}
