#include "render/Speedscope.h"

#include <llvm/Support/JSON.h>

#include <map>

namespace msc::render {

void writeSpeedscope(const FoldedProfile &profile, const SpeedscopeOptions &options, llvm::raw_ostream &os) {
  std::map<std::string, size_t> index;
  std::vector<std::string> names;
  std::vector<std::vector<size_t>> samples;
  for (const FoldedStack &s : profile.stacks) {
    std::vector<size_t> sample;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      std::string name = s.frames[i];
      if (s.implicitSync && i + 1 == s.frames.size())
        name += " [implicit sync]";
      auto [it, added] = index.emplace(name, names.size());
      if (added)
        names.push_back(name);
      sample.push_back(it->second);
    }
    samples.push_back(std::move(sample));
  }
  auto writeProfile = [&](llvm::json::OStream &j, llvm::StringRef name, llvm::StringRef unit, auto weightOf) {
    uint64_t total = 0;
    for (const FoldedStack &s : profile.stacks)
      total += weightOf(s);
    j.object([&] {
      j.attribute("type", "sampled");
      j.attribute("name", name);
      j.attribute("unit", unit);
      j.attribute("startValue", 0);
      j.attribute("endValue", total);
      j.attributeArray("samples", [&] {
        for (const std::vector<size_t> &sample : samples)
          j.array([&] {
            for (size_t f : sample)
              j.value(static_cast<uint64_t>(f));
          });
      });
      j.attributeArray("weights", [&] {
        for (const FoldedStack &s : profile.stacks)
          j.value(weightOf(s));
      });
    });
  };
  llvm::json::OStream j(os); // compact: real traces have thousands of stacks
  j.object([&] {
    j.attribute("$schema", kSpeedscopeSchema);
    j.attribute("name", options.name);
    j.attribute("activeProfileIndex", 0);
    j.attributeObject("shared", [&] {
      j.attributeArray("frames", [&] {
        for (const std::string &n : names)
          j.object([&] { j.attribute("name", n); });
      });
    });
    j.attributeArray("profiles", [&] {
      writeProfile(j, options.name + " (calls)", "none", [](const FoldedStack &s) { return s.count; });
      if (profile.hasTimes())
        writeProfile(j, options.name + " (time)", "nanoseconds",
                     [](const FoldedStack &s) { return s.totalNs.value_or(0); });
    });
  });
  os << "\n";
}

} // namespace msc::render
