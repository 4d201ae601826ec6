// `gpus = N`: a role expanded into N copies of one GPU each, named NAME_g0.., its other fields copied;
// the errors of a count that cannot expand; lowering the contract as written gives the copies' plan.
#include "PassesTestUtil.h"

#include "passes/GpuCount.h"
#include "passes/Lowering.h"
#include "plan/PlanFile.h"

namespace msc::passes::test {
namespace {

std::vector<std::string> roleNames(const ir::Contract &contract) {
  std::vector<std::string> names;
  for (const ir::Role &role : contract.body.roles)
    names.push_back(role.name);
  return names;
}

TEST(GpuCount, CopiesTakeTheRolesPlaceWithItsFields) {
  auto c = compile(R"(contract c {
  io_topology {
    loader { cpu_cores = [0]; }
    trainer { gpus = 3; threads = 2; rdma_port = nearest; memory_pool = hugepages(2MiB, count = 16); }
    cache { cpu_cores = [1]; }
  }
}
)",
                   "");
  ASSERT_TRUE(c->module);
  ASSERT_TRUE(hasGpuCounts(c->contract()));
  EXPECT_EQ(checkedRoleNames(c->contract().body.roles[1]),
            (std::vector<std::string>{"trainer_g0", "trainer_g1", "trainer_g2"}));
  ir::Contract expanded = expandGpuCounts(c->contract(), c->diags);
  EXPECT_TRUE(c->codes().empty());
  EXPECT_FALSE(hasGpuCounts(expanded));
  EXPECT_EQ(roleNames(expanded),
            (std::vector<std::string>{"loader", "trainer_g0", "trainer_g1", "trainer_g2", "cache"}));
  for (unsigned i = 0; i < 3; ++i) {
    const ir::Role &copy = expanded.body.roles[1 + i];
    ASSERT_TRUE(copy.fields.gpu);
    EXPECT_EQ(copy.fields.gpu->value.form, ir::GpuRef::Form::Any);
    EXPECT_FALSE(copy.fields.gpus);
    ASSERT_TRUE(copy.fields.threads && copy.fields.memory_pool && copy.fields.rdma_port);
    EXPECT_EQ(copy.fields.threads->value, 2);
    EXPECT_EQ(copy.fields.memory_pool->value.count, 16u);
    EXPECT_TRUE(copy.fields.rdma_port->value.nearest);
    ASSERT_TRUE(copy.copyOf);
    EXPECT_EQ(copy.copyOf->role, "trainer");
    EXPECT_EQ(copy.copyOf->index, i);
    EXPECT_EQ(copy.copyOf->count, 3u);
  }
  EXPECT_FALSE(expanded.body.roles[0].copyOf);
}

TEST(GpuCount, OneGpuIsGpuAnyUnderTheRolesOwnName) {
  auto c = compile("contract c { io_topology { trainer { gpus = 1; } } }\n", "");
  ASSERT_TRUE(c->module);
  ir::Contract expanded = expandGpuCounts(c->contract(), c->diags);
  EXPECT_TRUE(c->codes().empty());
  EXPECT_EQ(roleNames(expanded), (std::vector<std::string>{"trainer"}));
  const ir::RoleFields &f = expanded.body.roles[0].fields;
  ASSERT_TRUE(f.gpu);
  EXPECT_EQ(f.gpu->value.form, ir::GpuRef::Form::Any);
  EXPECT_FALSE(f.gpus);
  EXPECT_FALSE(expanded.body.roles[0].copyOf);
}

TEST(GpuCount, ANamedGpuBesideACountIsRefusedAndKept) {
  auto c = compile("contract c { io_topology { trainer { gpus = 2; gpu = 1; } } }\n", "");
  ASSERT_TRUE(c->module);
  ir::Contract expanded = expandGpuCounts(c->contract(), c->diags);
  EXPECT_EQ(c->codes(), (std::vector<std::string>{"ERR_SEM_005"}));
  ASSERT_EQ(roleNames(expanded), (std::vector<std::string>{"trainer"}));
  const ir::RoleFields &f = expanded.body.roles[0].fields;
  ASSERT_TRUE(f.gpu);
  EXPECT_EQ(f.gpu->value.form, ir::GpuRef::Form::Index);
  EXPECT_EQ(f.gpu->value.index, 1u);
}

TEST(GpuCount, ACopyNamedLikeAnotherRoleIsRefusedAndTheRoleStaysOne) {
  auto c = compile("contract c { io_topology { trainer { gpus = 4; } trainer_g2 { cpu_cores = [0]; } } }\n", "");
  ASSERT_TRUE(c->module);
  ir::Contract expanded = expandGpuCounts(c->contract(), c->diags);
  EXPECT_EQ(c->codes(), (std::vector<std::string>{"ERR_SEM_016"}));
  EXPECT_EQ(roleNames(expanded), (std::vector<std::string>{"trainer", "trainer_g2"}));
  ASSERT_TRUE(expanded.body.roles[0].fields.gpu);
  EXPECT_EQ(expanded.body.roles[0].fields.gpu->value.form, ir::GpuRef::Form::Any);
}

TEST(GpuCount, CopiesOfTwoRolesNeverClash) {
  // trainer_g1 with gpus = 2 is trainer_g1_g0 and trainer_g1_g1, not a copy of trainer.
  auto c = compile("contract c { io_topology { trainer { gpus = 2; } trainer_g1 { gpus = 2; } } }\n", "");
  ASSERT_TRUE(c->module);
  ir::Contract expanded = expandGpuCounts(c->contract(), c->diags);
  EXPECT_TRUE(c->codes().empty());
  EXPECT_EQ(roleNames(expanded),
            (std::vector<std::string>{"trainer_g0", "trainer_g1", "trainer_g1_g0", "trainer_g1_g1"}));
}

TEST(GpuCount, LoweringTheContractAsWrittenGivesTheCopiesPlan) {
  auto c = compile(R"(import "profiles/mlvm.msc";
contract quad uses profile mlvm_light {
  io_topology { trainer { gpus = 4; rdma_port = nearest; cpu_cores = 2 local; } }
  policy { affinity_policy = pcie_domain_first; cross_domain_io = false; }
}
)",
                   fixture("hwloc-xml/psmgmt-jwb0004-juwelsbooster-4xA100.xml"));
  ASSERT_TRUE(c->module && c->topology);
  PassManager pm = PassManager::defaultPipeline();
  CheckedContract checked = pm.check(c->contract(), &*c->topology, admission::Held{}, c->diags);
  ASSERT_TRUE(checked.accepted && !c->diags.hasErrors()) << llvm::join(c->codes(), ", ");
  ASSERT_TRUE(checked.bound);
  plan::Plan asWritten = lowerToPlan(c->contract(), checked.placement, checked.decisions, *c->topology, "test");
  plan::Plan asChecked = lowerToPlan(*checked.bound, checked.placement, checked.decisions, *c->topology, "test");
  EXPECT_EQ(plan::encodePlan(asWritten), plan::encodePlan(asChecked));
  ASSERT_EQ(asWritten.gpu_slices_size(), 4);
  ASSERT_EQ(asWritten.rdma_size(), 4);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(asWritten.gpu_slices(i).role(), "trainer_g" + std::to_string(i));
    EXPECT_EQ(asWritten.gpu_slices(i).gpu_index(), static_cast<uint32_t>(i));
    EXPECT_EQ(asWritten.rdma(i).role(), "trainer_g" + std::to_string(i));
    EXPECT_EQ(asWritten.rdma(i).device(), "mlx5_" + std::to_string(i));
  }
}

} // namespace
} // namespace msc::passes::test
