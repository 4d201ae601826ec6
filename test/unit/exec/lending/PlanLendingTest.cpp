// What the node's lending reads of a plan (executor/lending/PlanLending.h): an owner's CPUs and what
// each phase keeps (the CPUs of the roles whose use names `cpu`, the block devices of those that name
// `io`), its triggers and bound; a borrower's ask.
#include "executor/lending/PlanLending.h"

#include <gtest/gtest.h>

namespace msc::exec::lending {
namespace {

plan::Plan owner() {
  plan::Plan p;
  p.mutable_provenance()->set_contract("train");
  auto role = [&](const char *name, std::vector<uint32_t> cpus) {
    plan::IoBinding *b = p.add_io_bindings();
    b->set_role(name);
    for (uint32_t c : cpus)
      b->add_cpus(c);
  };
  role("loader", {18, 19, 20, 21});
  p.mutable_io_bindings(0)->set_block_device("nvme0n1p1");
  role("trainer", {22, 23});
  role("trainer2", {23, 24}); // a second role on CPU 23: kept once
  plan::Lending *l = p.mutable_lending();
  plan::Phase *decode = l->add_phases();
  decode->set_name("decode");
  plan::Phase::Use *u = decode->add_uses();
  u->set_role("loader");
  u->add_exclusive("io");
  u->add_exclusive("cpu");
  plan::Phase *compute = l->add_phases();
  compute->set_name("compute");
  for (const char *r : {"trainer", "trainer2"}) {
    plan::Phase::Use *t = compute->add_uses();
    t->set_role(r);
    t->add_exclusive("cpu");
  }
  plan::Phase::Use *gpuOnly = compute->add_uses();
  gpuOnly->set_role("loader");
  gpuOnly->add_exclusive("gpu"); // not `cpu`: the loader's CPUs are lendable in compute
  plan::Phase *eval = l->add_phases();
  eval->set_name("eval");
  eval->set_trigger(plan::Phase::STEPS);
  eval->set_every_steps(500);
  eval->set_for_steps(20);
  plan::Phase *snapshot = l->add_phases();
  snapshot->set_name("snapshot");
  snapshot->set_trigger(plan::Phase::WALL_TIME);
  snapshot->set_from_ns(37ull * 60 * 1'000'000'000);
  snapshot->set_to_ns(42ull * 60 * 1'000'000'000);
  l->set_lead_auto(true);
  return p;
}

TEST(PlanLending, APhaseKeepsTheCpusOfTheRolesWhoseUseNamesCpu) {
  std::optional<Owner> o = ownerOf(owner());
  ASSERT_TRUE(o);
  EXPECT_EQ(o->contract, "train");
  EXPECT_EQ(o->cpus, (CpuSet{18, 19, 20, 21, 22, 23, 24}));
  ASSERT_EQ(o->phases.size(), 4u);
  EXPECT_EQ(o->phases[0].name, "decode");
  EXPECT_EQ(o->phases[0].keptCpus, (CpuSet{18, 19, 20, 21}));
  EXPECT_EQ(o->phases[0].keptDevices, (std::vector<std::string>{"nvme0n1p1"})) << "decode names the loader's io";
  EXPECT_TRUE(o->phases[1].keptDevices.empty()) << "compute names the loader's gpu, not its io";
  EXPECT_EQ(o->ioDevices, (std::vector<std::string>{"nvme0n1p1"}));
  EXPECT_EQ(o->phases[1].keptCpus, (CpuSet{22, 23, 24}));
  EXPECT_EQ(o->phases[2].trigger, PhaseSpec::Trigger::Steps);
  EXPECT_EQ(o->phases[2].everySteps, 500u);
  EXPECT_EQ(o->phases[2].forSteps, 20u);
  EXPECT_TRUE(o->phases[2].keptCpus.empty());
  EXPECT_EQ(o->phases[3].trigger, PhaseSpec::Trigger::WallTime);
  EXPECT_EQ(o->phases[3].fromNs, 37ull * 60 * 1'000'000'000);
  EXPECT_EQ(o->reclaimWithinNs, Owner{}.reclaimWithinNs) << "a plan without a bound gets the default";
  EXPECT_TRUE(o->leadAuto);
  EXPECT_EQ(mostLent(*o), 7u) << "eval and snapshot keep no CPU";
}

TEST(PlanLending, APlanWithoutPhasesLendsNothingAndABorrowerIsItsAsk) {
  plan::Plan plain;
  plain.mutable_provenance()->set_contract("static");
  plain.add_io_bindings()->add_cpus(3);
  EXPECT_FALSE(ownerOf(plain));
  EXPECT_FALSE(isBorrower(plain));
  plan::Plan prep;
  prep.mutable_borrow()->set_cpu_cores(2);
  EXPECT_TRUE(isBorrower(prep));
  EXPECT_FALSE(ownerOf(prep));
}

} // namespace
} // namespace msc::exec::lending
