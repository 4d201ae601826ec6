// msc-gpu-check: exercises the cuda backend on a machine with a GPU (scripts/gpu_check.sh runs it).
// Creates two green-context slices on GPU 0 (half the SMs each, 1 GiB pools, two priorities),
// heartbeats, samples, resizes, destroys, and prints what happened. Exit 0 when all of it worked,
// 2 when no CUDA driver answers.
#include "executor/gpu/GpuBackends.h"

#include <cstdio>
#include <string>

using namespace msc;
using namespace msc::exec;

int main(int argc, char **argv) {
  BackendOptions options;
  options.gpu = "cuda";
  if (argc > 1)
    options.cudaLibrary = argv[1];
  CudaProbe probe = probeCuda(options);
  std::printf("probe: library=%s available=%d why='%s' driver=%d devices=%d green=%d\n", probe.library.c_str(),
              probe.available, probe.why.c_str(), probe.driverVersion, probe.devices, probe.greenContexts);
  std::string why;
  auto backend = createCudaBackend(options, why);
  if (!backend) {
    std::printf("cuda backend unavailable: %s\n", why.c_str());
    return 2;
  }
  int failures = 0;
  auto check = [&](bool ok, const std::string &what) {
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    failures += !ok;
  };
  std::vector<SliceId> ids;
  for (int i = 0; i < 2; ++i) {
    plan::GpuSlice s;
    s.set_role(i ? "decoder" : "trainer");
    s.set_gpu_index(0);
    s.set_slices_per_gpu(2);
    s.set_slices(1);
    s.set_memory_limit_bytes(1ull << 30);
    s.set_stream_priority(i ? 0 : -1);
    s.set_mechanism(plan::GpuSlice::GREEN_CONTEXT);
    std::string error;
    auto id = backend->createSlice(s, error);
    check(bool(id), "create slice " + std::to_string(i) + (id ? "" : ": " + error));
    if (id)
      ids.push_back(*id);
  }
  for (SliceId id : ids) {
    check(backend->heartbeat(id), "heartbeat slice " + std::to_string(id));
    auto sample = backend->sample(id);
    check(bool(sample), "sample slice " + std::to_string(id));
    if (sample)
      std::printf("     sms=%u memoryBytes=%llu utilisation=%.2f temperature=%s\n", sample->sms,
                  (unsigned long long)sample->memoryBytes, sample->utilisation,
                  sample->temperatureMilliC == kUnknownTemperature
                      ? "unknown"
                      : std::to_string(sample->temperatureMilliC / 1000.0).c_str());
    for (auto &[k, v] : backend->workerEnvironment(id))
      std::printf("     env %s=%s\n", k.c_str(), v.c_str());
  }
  if (!ids.empty()) {
    std::string error;
    auto before = backend->sample(ids[0]);
    bool ok = backend->resizeSlice(ids[0], before ? before->sms / 2 : 8, error);
    check(ok, "resize slice down" + (ok ? "" : ": " + error));
    if (auto after = backend->sample(ids[0]))
      std::printf("     sms after resize=%u\n", after->sms);
  }
  for (SliceId id : ids)
    backend->destroySlice(id);
  check(ids.empty() || !backend->heartbeat(ids[0]), "destroyed slices stop answering");
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
