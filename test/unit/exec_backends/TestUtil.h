// Helpers shared by the backend tests: plan entries, a diagnostics sink, an apply context.
#pragma once

#include "executor/core/Applier.h"
#include "support/Diagnostic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>

namespace msc::exec::test {

inline plan::GpuSlice gpuSlice(unsigned gpu, unsigned sms, uint64_t limit = 0, std::string role = "trainer",
                               plan::GpuSlice::Mechanism m = plan::GpuSlice::GREEN_CONTEXT) {
  plan::GpuSlice s;
  s.set_role(std::move(role));
  s.set_gpu_index(gpu);
  s.set_sm_count(sms);
  s.set_memory_limit_bytes(limit);
  s.set_mechanism(m);
  s.set_numa_node(-1);
  return s;
}

// Owns everything an ApplyContext refers to. The agent's Logger is not used by these appliers
// (they log through a LogSink), so the reference points at storage that is never read.
struct ApplyFixture {
  plan::Plan plan;
  CollectingConsumer consumer;
  DiagnosticEngine diags{nullptr, consumer};
  WorkerEnvironment worker;
  FailureInjection inject;
  alignas(64) unsigned char loggerStorage[64] = {};
  std::vector<std::string> log;

  ApplyContext context(bool withInjection = false) {
    return ApplyContext{plan, "c-test", *reinterpret_cast<Logger *>(loggerStorage), diags, worker,
                        withInjection ? &inject : nullptr};
  }
  bool emitted(DiagCode code) const {
    return std::any_of(consumer.diags.begin(), consumer.diags.end(), [&](const Diagnostic &d) { return d.code == code; });
  }
  std::string message(DiagCode code) const {
    for (const Diagnostic &d : consumer.diags)
      if (d.code == code)
        return d.message;
    return {};
  }
  std::string env(const std::string &key) const {
    auto it = worker.variables.find(key);
    return it == worker.variables.end() ? std::string("<unset>") : it->second;
  }
};

// Environment variables set for one test and removed afterwards.
struct ScopedEnv {
  std::vector<std::string> names;
  void set(const std::string &name, const std::string &value) {
    ::setenv(name.c_str(), value.c_str(), 1);
    names.push_back(name);
  }
  ~ScopedEnv() {
    for (const std::string &n : names)
      ::unsetenv(n.c_str());
  }
};

} // namespace msc::exec::test
