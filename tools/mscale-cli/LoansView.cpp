#include "tools/mscale-cli/LoansView.h"

#include "support/Quantity.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <map>

namespace msc::cli {

namespace {
constexpr const char *kKept = "kept by its owner";
constexpr const char *kBetween = "between phases (keeps all)";
} // namespace

render::TimelineChart loansTimeline(const agent::LoansResponse &loans) {
  render::TimelineChart chart;
  chart.endNs = loans.now_ns();
  chart.startNs = loans.timeline().empty() ? loans.now_ns() : std::min(loans.now_ns(), loans.timeline(0).at_ns());
  chart.title = "Lending on this node: phases and CPUs";
  chart.subtitle = "the last " + formatMeasuredNs(chart.endNs - chart.startNs) + " (" +
                   std::to_string(loans.timeline_size()) + " changes), taken back by " + loans.mechanism();
  chart.colours[kKept] = "#c8c8c8";
  chart.colours[kBetween] = "#9a9a9a";

  // Spans from the changes of each contract: each lasts until the contract's next change, or now.
  std::map<std::string, std::vector<const agent::TimelineChange *>> byContract;
  for (const agent::TimelineChange &c : loans.timeline())
    byContract[c.contract()].push_back(&c);
  auto until = [&](const std::vector<const agent::TimelineChange *> &v, size_t i) {
    return i + 1 < v.size() ? v[i + 1]->at_ns() : loans.now_ns();
  };
  // Who has each CPU from when: the borrowers' changes, merged.
  std::map<unsigned, std::vector<render::TimelineSpan>> lentSpans;
  for (auto &[contract, changes] : byContract)
    for (size_t i = 0; i < changes.size(); ++i)
      if (changes[i]->borrower())
        for (uint32_t cpu : changes[i]->cpus())
          lentSpans[cpu].push_back({changes[i]->at_ns(), until(changes, i), "lent to " + contract, "lent to " + contract});

  for (const agent::LendingOwner &o : loans.owners()) {
    render::TimelineLane phases{o.contract() + ": phase", {}};
    const std::vector<const agent::TimelineChange *> &changes = byContract[o.contract()];
    for (size_t i = 0; i < changes.size(); ++i) {
      std::vector<std::string> names;
      for (uint32_t n : changes[i]->phases())
        names.push_back(n >= 1 && int(n) <= o.phases_size() ? o.phases(int(n - 1)) : "#" + std::to_string(n));
      std::string label = names.empty() ? std::string(kBetween) : llvm::join(names, "+");
      phases.spans.push_back({changes[i]->at_ns(), until(changes, i), names.empty() ? kBetween : "phase " + label, label});
    }
    chart.lanes.push_back(std::move(phases));
    for (uint32_t cpu : o.cpus()) {
      render::TimelineLane lane{"CPU " + std::to_string(cpu) + " (" + o.contract() + ")", {}};
      std::vector<render::TimelineSpan> lent = lentSpans[cpu];
      std::sort(lent.begin(), lent.end(), [](const auto &a, const auto &b) { return a.fromNs < b.fromNs; });
      uint64_t at = chart.startNs;
      for (const render::TimelineSpan &s : lent) {
        if (s.fromNs > at)
          lane.spans.push_back({at, s.fromNs, kKept, ""});
        lane.spans.push_back(s);
        at = std::max(at, s.toNs);
      }
      if (at < chart.endNs)
        lane.spans.push_back({at, chart.endNs, kKept, ""});
      chart.lanes.push_back(std::move(lane));
    }
  }
  return chart;
}

} // namespace msc::cli
