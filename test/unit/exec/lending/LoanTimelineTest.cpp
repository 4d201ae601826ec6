// The node's timeline of phases and loans: only changes are kept, the newest `capacity` of them,
// in time order; LendingNode records each owner's phases and each borrower's lent CPUs as it ticks.
#include "executor/lending/LendingNode.h"
#include "executor/lending/LoanTimeline.h"
#include "executor/lending/SimLoans.h"

#include <gtest/gtest.h>

namespace msc::exec::lending {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(LoanTimeline, OnlyChangesAreKeptTheNewestAndInTimeOrder) {
  LoanTimeline t(4);
  t.owner("train", {1}, 10 * kMs);
  t.owner("train", {1}, 11 * kMs); // the same: not a change
  t.borrower("prep", {2, 3}, 12 * kMs);
  t.borrower("prep", {2, 3}, 13 * kMs);
  t.owner("train", {2}, 9 * kMs); // stamped before the last record: kept in order
  ASSERT_EQ(t.changes().size(), 3u);
  EXPECT_EQ(t.changes()[2].atNs, 12 * kMs);
  EXPECT_EQ(t.changes()[2].phases, (std::vector<unsigned>{2}));
  t.borrower("prep", {}, 14 * kMs);
  t.owner("train", {}, 15 * kMs);
  ASSERT_EQ(t.changes().size(), 4u) << "bounded";
  EXPECT_EQ(t.changes().front().contract, "prep") << "the oldest went first";
  EXPECT_TRUE(t.changes().back().phases.empty());
}

TEST(LoanTimeline, TheNodeRecordsPhasesAndLoansAsItTicks) {
  ManualClock clock(1000 * kMs);
  SimLoans loans(clock);
  LendingNode node(clock, loans);
  mscale::worker::ControlPage page{};
  Owner o;
  o.contract = "train";
  o.cpus = {0, 1, 2, 3};
  o.phases = {{"decode", {0, 1}}, {"compute", {2, 3}}};
  o.leadAuto = false;
  node.addOwner(o, &page);
  node.addBorrower("prep", 2);
  node.tick();
  auto enter = [&](unsigned phase) {
    page.phase.store(phase);
    page.phaseEnteredNs.store(clock.monotonicNs());
    page.phaseEntries.fetch_add(1);
  };
  clock.advance(kMs);
  enter(1);
  node.tick();
  clock.advance(kMs);
  enter(2);
  node.tick();
  const std::deque<TimelineChange> &c = node.timeline().changes();
  std::vector<std::string> seen;
  for (const TimelineChange &x : c) {
    std::string what = x.contract + "@" + std::to_string((x.atNs - 1000 * kMs) / kMs) + ":";
    for (unsigned n : x.borrower ? x.cpus : x.phases)
      what += std::to_string(n);
    seen.push_back(what);
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"train@0:", "prep@0:", "train@1:1", "prep@1:23", "train@2:2", "prep@2:01"}));
}

} // namespace
} // namespace msc::exec::lending
