// The IR: merging a profile chain (override semantics, roles by name), lookups, the verifier's
// invariants, and the printer's stable text.
#include "ir/IR.h"

#include <llvm/ADT/StringRef.h>

#include <gtest/gtest.h>

namespace msc::ir {
namespace {

template <typename T> Field<T> field(T value, std::string from) { return Field<T>{std::move(value), {from, {}, {}}}; }

Role role(std::string name, std::string from) {
  Role r;
  r.name = std::move(name);
  r.origin.declaration = std::move(from);
  return r;
}

bool mentions(const std::vector<std::string> &problems, llvm::StringRef what) {
  for (const std::string &p : problems)
    if (llvm::StringRef(p).contains(what))
      return true;
  return false;
}

TEST(MergeInto, SetFieldsOverrideAndUnsetFieldsInherit) {
  Body base;
  base.compute.cpu_cores = field<int64_t>(2, "profile base");
  base.compute.rdma_qps = field<int64_t>(1, "profile base");
  base.scaling.window = field(Nanoseconds{10000000000ull}, "profile base");
  base.scaling.windows = field<int64_t>(3, "profile base");
  Body over;
  over.compute.cpu_cores = field<int64_t>(4, "contract c");
  over.scaling.window = field(Nanoseconds{20000000000ull}, "contract c");
  over.policy.cross_domain_io = field(false, "contract c");

  mergeInto(base, over);
  ASSERT_TRUE(base.compute.cpu_cores);
  EXPECT_EQ(base.compute.cpu_cores->value, 4);
  EXPECT_EQ(base.compute.cpu_cores->origin.declaration, "contract c");
  ASSERT_TRUE(base.compute.rdma_qps);
  EXPECT_EQ(base.compute.rdma_qps->value, 1);
  EXPECT_EQ(base.compute.rdma_qps->origin.declaration, "profile base");
  // Sections merge field by field, not wholesale.
  EXPECT_EQ(base.scaling.window->value.value, 20000000000ull);
  EXPECT_EQ(base.scaling.window->origin.declaration, "contract c");
  EXPECT_EQ(base.scaling.windows->value, 3);
  EXPECT_EQ(base.scaling.windows->origin.declaration, "profile base");
  ASSERT_TRUE(base.policy.cross_domain_io);
  EXPECT_FALSE(base.policy.cross_domain_io->value);
  EXPECT_FALSE(base.compute.gpu_memory);
}

TEST(MergeInto, FalseAndZeroAreValuesNotAbsence) {
  Body base;
  base.faultTolerance.stateful_io = field(true, "profile base");
  base.compute.gpu_sm_slices = field<int64_t>(3, "profile base");
  Body over;
  over.faultTolerance.stateful_io = field(false, "contract c");
  over.compute.gpu_sm_slices = field<int64_t>(0, "contract c");
  mergeInto(base, over);
  EXPECT_FALSE(base.faultTolerance.stateful_io->value);
  EXPECT_EQ(base.compute.gpu_sm_slices->value, 0);
}

TEST(MergeInto, RolesMergeByNameAndKeepFirstDeclarationOrder) {
  Body base;
  Role data = role("data", "profile base");
  data.fields.cpu_cores = field(CpuCores(std::vector<uint32_t>{1}), "profile base");
  data.fields.io_depth = field<int64_t>(8, "profile base");
  base.roles.push_back(data);
  base.roles.push_back(role("net", "profile base"));

  Body over;
  over.roles.push_back(role("gpu0", "contract c"));
  Role overData = role("data", "contract c");
  overData.fields.io_depth = field<int64_t>(16, "contract c");
  overData.fields.numa_node = field<int64_t>(1, "contract c");
  over.roles.push_back(overData);

  mergeInto(base, over);
  ASSERT_EQ(base.roles.size(), 3u);
  EXPECT_EQ(base.roles[0].name, "data");
  EXPECT_EQ(base.roles[1].name, "net");
  EXPECT_EQ(base.roles[2].name, "gpu0");
  const Role *merged = base.role("data");
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->origin.declaration, "profile base") << "a role's origin is where it was first declared";
  EXPECT_EQ(merged->fields.cpu_cores->value, std::vector<uint32_t>{1});
  EXPECT_EQ(merged->fields.io_depth->value, 16);
  EXPECT_EQ(merged->fields.io_depth->origin.declaration, "contract c");
  EXPECT_EQ(merged->fields.numa_node->value, 1);
}

TEST(MergeInto, ChainsApplyInOrder) {
  // base <- mid <- top, then the contract: each layer overrides what is below it.
  Body base, mid, top, contract;
  base.compute.cpu_cores = field<int64_t>(1, "profile base");
  base.compute.rdma_qps = field<int64_t>(1, "profile base");
  base.compute.nvme_queues = field<int64_t>(1, "profile base");
  mid.compute.rdma_qps = field<int64_t>(2, "profile mid");
  mid.compute.nvme_queues = field<int64_t>(2, "profile mid");
  top.compute.nvme_queues = field<int64_t>(3, "profile top");
  contract.compute.cpu_cores = field<int64_t>(9, "contract c");
  Body resolved;
  for (const Body *layer : {&base, &mid, &top, &contract})
    mergeInto(resolved, *layer);
  EXPECT_EQ(resolved.compute.cpu_cores->origin.declaration, "contract c");
  EXPECT_EQ(resolved.compute.rdma_qps->origin.declaration, "profile mid");
  EXPECT_EQ(resolved.compute.nvme_queues->origin.declaration, "profile top");
  EXPECT_EQ(resolved.compute.nvme_queues->value, 3);
}

TEST(MergeInto, MergingAnEmptyBodyChangesNothing) {
  Body base;
  base.compute.cpu_cores = field<int64_t>(2, "profile base");
  base.roles.push_back(role("data", "profile base"));
  mergeInto(base, Body{});
  EXPECT_EQ(base.compute.cpu_cores->value, 2);
  EXPECT_EQ(base.roles.size(), 1u);
}

// A phase is one decision about the job's demand: the contract's replaces the profile's of its name
// whole (no half of each), keeps its place; new phases follow; lending merges field by field.
TEST(MergeInto, APhaseIsReplacedWholeByNameAndLendingMergesByField) {
  auto phase = [](std::string name, std::string role, std::vector<ResourceKind> kinds) {
    Phase p;
    p.name = std::move(name);
    p.uses.push_back({std::move(role), std::move(kinds), {}, {}});
    return p;
  };
  Body base, over;
  base.phases = {phase("decode", "loader", {ResourceKind::Cpu, ResourceKind::Io}),
                 phase("compute", "trainer", {ResourceKind::Gpu})};
  base.lending.reclaim_within = field(Nanoseconds{2'000'000}, "profile base");
  base.lending.lead = field(LeadTime{false, Nanoseconds{500'000}}, "profile base");
  over.phases = {phase("compute", "loader", {}), phase("eval", "trainer", {ResourceKind::Gpu})};
  over.phases[1].when.kind = PhaseWhen::Kind::Steps;
  over.lending.lead = field(LeadTime{}, "contract c");
  mergeInto(base, over);
  ASSERT_EQ(base.phases.size(), 3u);
  EXPECT_EQ(base.phases[0].name, "decode");
  EXPECT_EQ(base.phases[1].name, "compute");
  EXPECT_EQ(base.phases[1].use("trainer"), nullptr) << "the profile's half of 'compute' is gone";
  ASSERT_NE(base.phases[1].use("loader"), nullptr);
  EXPECT_TRUE(base.phases[1].use("loader")->exclusive.empty());
  EXPECT_EQ(base.phases[2].name, "eval");
  EXPECT_EQ(base.phases[2].when.kind, PhaseWhen::Kind::Steps);
  EXPECT_EQ(base.phase("eval"), &base.phases[2]);
  EXPECT_EQ(base.lending.reclaim_within->value.value, 2'000'000u);
  EXPECT_TRUE(base.lending.lead->value.automatic);
  EXPECT_EQ(base.lending.lead->origin.declaration, "contract c");
}

TEST(RoleHolds, EachKindByTheFieldsThatHoldIt) {
  RoleFields f;
  for (ResourceKind k : kResourceKinds)
    EXPECT_FALSE(roleHolds(f, k)) << resourceKindName(k).str();
  f.io_weight = field<int64_t>(200, "c");
  f.queue_pairs = field<int64_t>(4, "c");
  EXPECT_TRUE(roleHolds(f, ResourceKind::Io));
  EXPECT_TRUE(roleHolds(f, ResourceKind::Rdma));
  EXPECT_FALSE(roleHolds(f, ResourceKind::Cpu));
  EXPECT_FALSE(roleHolds(f, ResourceKind::Gpu));
  EXPECT_EQ(fieldSpelling("class_"), "class");
  EXPECT_EQ(fieldSpelling("cpu_cores"), "cpu_cores");
}

TEST(Lookups, FindByName) {
  Module m;
  Profile p;
  p.name = "light";
  p.chain = {"light"};
  m.profiles.push_back(p);
  Contract c;
  c.name = "train";
  c.body.roles.push_back(role("data", "contract train"));
  m.contracts.push_back(c);
  ASSERT_TRUE(m.profile("light"));
  EXPECT_FALSE(m.profile("heavy"));
  ASSERT_TRUE(m.contract("train"));
  EXPECT_FALSE(m.contract("light"));
  EXPECT_TRUE(m.contract("train")->body.role("data"));
  EXPECT_FALSE(m.contract("train")->body.role("net"));
}

Module wellFormed() {
  Module m;
  Profile base;
  base.name = "base";
  base.chain = {"base"};
  m.profiles.push_back(base);
  Profile light;
  light.name = "light";
  light.base = "base";
  light.chain = {"light", "base"};
  m.profiles.push_back(light);
  Contract c;
  c.name = "train";
  c.profile = "light";
  c.chain = {"light", "base"};
  Role data = role("data", "contract train");
  data.fields.cpu_cores = field(CpuCores(std::vector<uint32_t>{2, 3}), "contract train");
  data.fields.memory_pool = field(HugepagePool{Bytes{2u << 20}, 16}, "contract train");
  c.body.roles.push_back(data);
  c.body.faultTolerance.recovery_point = field(RecoveryPoint{128, {}}, "contract train");
  m.contracts.push_back(c);
  return m;
}

TEST(Verify, AcceptsAWellFormedModule) { EXPECT_TRUE(verify(wellFormed()).empty()); }

TEST(Verify, CatchesProfileInvariants) {
  Module m = wellFormed();
  m.profiles[0].name = "";
  EXPECT_TRUE(mentions(verify(m), "profile without a name"));

  m = wellFormed();
  m.profiles[1].name = "base";
  EXPECT_TRUE(mentions(verify(m), "profile 'base' defined twice"));

  m = wellFormed();
  m.profiles[1].chain = {"base"};
  EXPECT_TRUE(mentions(verify(m), "profile 'light' has a chain that does not start with itself"));

  m = wellFormed();
  m.profiles[1].chain.clear();
  EXPECT_TRUE(mentions(verify(m), "profile 'light' has a chain that does not start with itself"));
}

TEST(Verify, CatchesContractInvariants) {
  Module m = wellFormed();
  m.contracts.push_back(m.contracts[0]);
  EXPECT_TRUE(mentions(verify(m), "contract 'train' defined twice"));

  m = wellFormed();
  m.contracts[0].profile = "heavy";
  EXPECT_TRUE(mentions(verify(m), "contract 'train' uses unresolved profile 'heavy'"));
}

TEST(Verify, CatchesBodyInvariants) {
  Module m = wellFormed();
  m.contracts[0].body.roles.push_back(role("data", "contract train"));
  EXPECT_TRUE(mentions(verify(m), "contract 'train': role 'data' appears twice"));

  m = wellFormed();
  m.contracts[0].body.roles[0].fields.cpu_cores->value = {2, 3, 2};
  EXPECT_TRUE(mentions(verify(m), "role 'data' lists a CPU twice"));

  for (uint64_t bad : {uint64_t(0), uint64_t(3000), uint64_t(3) << 20}) {
    m = wellFormed();
    m.contracts[0].body.roles[0].fields.memory_pool->value.pageSize = Bytes{bad};
    EXPECT_TRUE(mentions(verify(m), "page size that is not a power of two")) << bad;
  }

  m = wellFormed();
  m.contracts[0].body.faultTolerance.recovery_point->value = RecoveryPoint{128, Nanoseconds{1000}};
  EXPECT_TRUE(mentions(verify(m), "recovery point must be steps or an interval"));
  m.contracts[0].body.faultTolerance.recovery_point->value = RecoveryPoint{0, {}};
  EXPECT_TRUE(mentions(verify(m), "recovery point must be steps or an interval"));

  // Profiles' bodies are checked too.
  m = wellFormed();
  m.profiles[0].body.roles = {role("x", "profile base"), role("x", "profile base")};
  EXPECT_TRUE(mentions(verify(m), "profile 'base': role 'x' appears twice"));
}

TEST(Verify, ReportsEveryProblem) {
  Module m = wellFormed();
  m.profiles[0].name = "";
  m.contracts[0].profile = "heavy";
  m.contracts[0].body.roles[0].fields.cpu_cores->value = {1, 1};
  EXPECT_EQ(verify(m).size(), 4u) << "the unnamed profile, its chain, the unresolved profile, the repeated CPU";
}

TEST(Print, StableTextWithOrigins) {
  Module m = wellFormed();
  m.profiles[0].imported = true; // imported profiles are not printed
  m.profiles[1].body.compute.cpu_cores = field<int64_t>(2, "profile light");
  std::string out;
  llvm::raw_string_ostream os(out);
  print(m, os);
  EXPECT_EQ(out, "profile light extends base (light <- base) {\n"
                 "  cpu_cores = 2                             // profile light\n"
                 "}\n"
                 "contract train uses profile light (light <- base) {\n"
                 "  role data {\n"
                 "    cpu_cores = [2, 3]                      // contract train\n"
                 "    memory_pool = hugepages(2MiB, count = 16) // contract train\n"
                 "  }\n"
                 "  fault_tolerance {\n"
                 "    recovery_point = every(128 steps)       // contract train\n"
                 "  }\n"
                 "}\n");
}

TEST(FieldKindName, DescribesEveryKind) {
  EXPECT_EQ(fieldKindName(FieldKind::Int), "an integer");
  EXPECT_EQ(fieldKindName(FieldKind::Duration), "a duration (e.g. 10s)");
  EXPECT_EQ(fieldKindName(FieldKind::Choice), "one of the listed names");
}

} // namespace
} // namespace msc::ir
