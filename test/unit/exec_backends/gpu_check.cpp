// msc-gpu-check: exercises the cuda backend on a machine with a GPU (scripts/gpu_check.sh runs it).
// Creates two green-context slices on GPU 0 (half the SMs each, 1 GiB pools, two priorities),
// heartbeats, samples, resizes, destroys; then lends half of an owner's slice to a borrower and
// takes it back through the node's lending (executor/lending/GpuLoans.h), timing each hand-over,
// and prints what happened. Exit 0 when all of it worked, 2 when no CUDA driver answers.
#include "executor/gpu/GpuBackends.h"
#include "executor/lending/GpuLoans.h"
#include "worker/ControlPage.h"

#include <chrono>
#include <cstdio>
#include <cstring>
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

  // Lending (issue 27): an owner's slice of 4 units lends 2 to a borrower and takes them back, as
  // LendingNode does at a phase entry; what the borrower is told is read from its control page.
  plan::GpuSlice owner;
  owner.set_role("owner");
  owner.set_gpu_index(0);
  owner.set_slices_per_gpu(1);
  owner.set_slices(1);
  owner.set_mechanism(plan::GpuSlice::GREEN_CONTEXT);
  std::string error;
  std::optional<SliceId> ownerId = backend->createSlice(owner, error);
  check(bool(ownerId), "create the owner's slice" + (ownerId ? "" : ": " + error));
  if (ownerId) {
    auto micros = [](auto from) {
      return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - from).count();
    };
    lending::BackendGpuLoans loans;
    mscale::worker::ControlPage page{};
    std::optional<SliceSample> whole = backend->sample(*ownerId);
    error.clear();
    check(loans.addShare("owner", 0, *backend, *ownerId, 4, 0, error), "owner's slice as a share of 4 units" +
                                                                          (error.empty() ? "" : ": " + error));
    loans.setPage("borrower", &page);
    auto start = std::chrono::steady_clock::now();
    bool lent = loans.lend("borrower", {"owner", 0, 2}, error);
    double lendUs = micros(start);
    check(lent, "lend 2 of 4 units" + (lent ? "" : ": " + error));
    std::printf("     lend took %.1f us: owner sms=%u, borrower sms=%u, told '%s'\n", lendUs, loans.ownerSms("owner", 0),
                loans.smsOf("borrower"), std::string(page.slices, strnlen(page.slices, sizeof page.slices)).c_str());
    start = std::chrono::steady_clock::now();
    bool back = loans.takeBack("borrower", error);
    double backUs = micros(start);
    check(back, "take the units back" + (back ? "" : ": " + error));
    std::optional<SliceSample> after = backend->sample(*ownerId);
    check(whole && after && after->sms == whole->sms, "the owner's slice is whole again (" +
                                                          std::to_string(after ? after->sms : 0) + " of " +
                                                          std::to_string(whole ? whole->sms : 0) + " SMs)");
    check(!loans.released("borrower"), "a let-go is awaited until the borrower acknowledges");
    page.ackGeneration.store(page.sliceGeneration.load());
    check(loans.released("borrower"), "released once acknowledged");
    std::printf("     take-back took %.1f us (the bound a contract may promise starts above it)\n", backUs);
    backend->destroySlice(*ownerId);
  }
  std::printf("%d failure(s)\n", failures);
  return failures ? 1 : 0;
}
