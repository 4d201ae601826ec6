// libFuzzer target: arbitrary bytes through the plan decoder, then the dump and JSON views.
#include "plan/PlanFile.h"

#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  msc::CollectingConsumer consumer;
  msc::DiagnosticEngine diags(nullptr, consumer);
  std::optional<msc::plan::Plan> plan =
      msc::plan::decodePlan(llvm::StringRef(reinterpret_cast<const char *>(data), size), "fuzz.msp", diags);
  if (!plan) {
    if (consumer.diags.empty())
      abort(); // a refusal always says why
    return 0;
  }
  // A decoded plan round-trips to the same bytes modulo unknown fields, and prints.
  std::string text;
  llvm::raw_string_ostream os(text);
  msc::plan::dumpPlan(*plan, os);
  (void)msc::plan::planToJson(*plan);
  (void)msc::plan::encodePlan(*plan);
  return 0;
}
