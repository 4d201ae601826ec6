// Each host applier over a backend that records what it is asked and fails where a test says.
#include "executor/core/Logger.h"
#include "executor/host/HostAppliers.h"
#include "executor/host/Sys.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

using namespace msc;
using namespace msc::exec;

namespace {

// What the recording backends were asked, shared by the test and the backend the applier owns.
struct Record {
  std::vector<CpuRequest> confined;
  std::vector<pid_t> attached;
  std::vector<std::string> settings; // io roles whose settings were applied
  std::vector<std::string> pools;    // names of the pools made
  int released = 0;
  bool failConfine = false, failRing = false;
  int failPoolAt = -1; // the index of the pool whose makePool fails
};

class RecordingCpuHost final : public CpuHost {
public:
  explicit RecordingCpuHost(Record &r) : r_(r) {}
  bool confine(ApplyContext &ctx, const CpuRequest &request, std::vector<std::string> &lines) override {
    r_.confined.push_back(request);
    if (r_.failConfine) {
      ctx.diags.report(DiagCode::ERR_EXEC_003) << "/recorded/cgroup" << "refused by the test";
      return false;
    }
    dir_ = "/recorded/mscale/" + ctx.contractId;
    lines.push_back("recorded cpuset");
    return true;
  }
  bool attach(ApplyContext &, pid_t worker, const std::vector<unsigned> &) override {
    r_.attached.push_back(worker);
    return true;
  }
  void release(ApplyContext &) override {
    ++r_.released;
    dir_.clear();
  }
  std::string cgroup2Dir() const override { return dir_; }

private:
  Record &r_;
  std::string dir_;
};

class RecordingIoHost final : public IoHost {
public:
  explicit RecordingIoHost(Record &r) : r_(r) {}
  bool checkRingDepth(ApplyContext &ctx, const plan::IoBinding &b, std::string &note) override {
    if (r_.failRing) {
      ctx.diags.report(DiagCode::ERR_EXEC_007) << b.io_uring_depth() << b.role() << "refused by the test";
      return false;
    }
    note = " (recorded)";
    return true;
  }
  bool applySettings(ApplyContext &, const plan::IoBinding &b, std::vector<std::string> &) override {
    r_.settings.push_back(b.role());
    return true;
  }
  bool attach(ApplyContext &, pid_t) override { return true; }
  void release(ApplyContext &) override { ++r_.released; }

private:
  Record &r_;
};

class RecordingMemoryHost final : public MemoryHost {
public:
  explicit RecordingMemoryHost(Record &r) : r_(r) {}
  bool reserve(ApplyContext &, const plan::MemoryPool &m, std::vector<std::string> &lines) override {
    lines.push_back("recorded reservation for " + m.role());
    return true;
  }
  bool makePool(ApplyContext &ctx, const plan::MemoryPool &m, const std::string &name, MadePool &out) override {
    if (static_cast<int>(r_.pools.size()) == r_.failPoolAt) {
      ctx.diags.report(DiagCode::ERR_EXEC_006) << m.role() << std::to_string(m.pages()) << "4KiB" << "refused by the test";
      return false;
    }
    r_.pools.push_back(name);
    int fd = ::memfd_create(name.c_str(), MFD_CLOEXEC);
    out = {fd, m.pages() * 4096, 4096, "recorded pool " + m.role()};
    return fd >= 0;
  }
  void release(ApplyContext &) override { ++r_.released; }

private:
  Record &r_;
};

plan::Plan twoRolePlan() {
  plan::Plan p;
  p.mutable_provenance()->set_contract("c1");
  for (auto [role, cpu, node] : {std::tuple{"data", 3u, 0}, std::tuple{"trainer", 1u, 1}}) {
    plan::IoBinding *b = p.add_io_bindings();
    b->set_role(role);
    b->add_cpus(cpu);
    b->add_cpus(cpu + 4);
    b->set_numa_node(node);
    b->set_io_uring_depth(16);
  }
  for (const char *role : {"data", "trainer"}) {
    plan::MemoryPool *m = p.add_memory_pools();
    m->set_role(role);
    m->set_page_size(4096);
    m->set_pages(4);
    m->set_numa_node(-1);
  }
  return p;
}

struct Fixture : ::testing::Test {
  plan::Plan plan = twoRolePlan();
  Logger log{"test", false};
  CollectingConsumer sink;
  DiagnosticEngine diags{nullptr, sink};
  WorkerEnvironment worker;
  FailureInjection inject;
  ApplyContext ctx{plan, "c1", log, diags, worker, &inject};
  Record record;
};

using CpuApplierOverAHost = Fixture;
using IoApplierOverAHost = Fixture;
using MemoryApplierOverAHost = Fixture;

TEST_F(CpuApplierOverAHost, ConfinesToEveryRolesCpusAndTellsTheWorkerEachRolesOwn) {
  auto applier = createCpuApplier(std::make_unique<RecordingCpuHost>(record));
  ASSERT_TRUE(applier->apply(ctx));
  ASSERT_EQ(record.confined.size(), 1u);
  EXPECT_EQ(record.confined[0].cpus, (std::vector<unsigned>{1, 3, 5, 7})) << "all roles together, sorted";
  EXPECT_EQ(record.confined[0].mems, (std::vector<unsigned>{0, 1}));
  EXPECT_EQ(worker.variables.at("MSCALE_CPUS"), "1,3,5,7");
  EXPECT_EQ(worker.variables.at("MSCALE_ROLE_DATA_CPUS"), "3,7");
  EXPECT_EQ(worker.variables.at("MSCALE_ROLE_TRAINER_CPUS"), "1,5");
  EXPECT_EQ(worker.variables.at("MSCALE_ROLES"), "data,trainer");
  EXPECT_EQ(worker.variables.at("MSCALE_CGROUP"), "/recorded/mscale/c1") << "where the backend made one";
  AppliedState state;
  applier->state(state);
  EXPECT_EQ(state.cgroup2Dir, "/recorded/mscale/c1");
  EXPECT_EQ(applier->describe(),
            (std::vector<std::string>{"recorded cpuset", "role data: CPUs 3,7", "role trainer: CPUs 1,5"}));
  ASSERT_TRUE(applier->attach(ctx, 4242));
  EXPECT_EQ(record.attached, std::vector<pid_t>{4242});
  applier->rollback(ctx);
  EXPECT_EQ(record.released, 1);
  EXPECT_TRUE(applier->describe().empty());
  applier->state(state = {});
  EXPECT_TRUE(state.cgroup2Dir.empty());
}

TEST_F(CpuApplierOverAHost, ABackendThatCannotConfineIsReleasedAndNothingIsDescribed) {
  record.failConfine = true;
  auto applier = createCpuApplier(std::make_unique<RecordingCpuHost>(record));
  EXPECT_FALSE(applier->apply(ctx));
  ASSERT_EQ(sink.diags.size(), 1u);
  EXPECT_EQ(sink.diags[0].code, DiagCode::ERR_EXEC_003);
  EXPECT_EQ(record.released, 1);
  EXPECT_TRUE(applier->describe().empty());
}

TEST_F(CpuApplierOverAHost, AnInjectedFailureComesAfterTheBackendActedAndUndoesIt) {
  inject.failIn = "cpu";
  auto applier = createCpuApplier(std::make_unique<RecordingCpuHost>(record));
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(record.confined.size(), 1u);
  EXPECT_EQ(record.released, 1);
  EXPECT_EQ(sink.diags.at(0).code, DiagCode::ERR_EXEC_008);
}

TEST_F(IoApplierOverAHost, EachRolesDepthIsToldWithTheBackendsNoteThenItsSettingsApplied) {
  auto applier = createIoApplier(std::make_unique<RecordingIoHost>(record));
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(worker.variables.at("MSCALE_ROLE_DATA_IO_DEPTH"), "16");
  EXPECT_EQ(worker.variables.at("MSCALE_ROLE_TRAINER_IO_DEPTH"), "16");
  EXPECT_EQ(record.settings, (std::vector<std::string>{"data", "trainer"}));
  EXPECT_EQ(applier->describe().at(0), "role data: io_uring depth 16 (recorded)");
}

TEST_F(IoApplierOverAHost, ARefusedDepthStopsBeforeAnySettingAndReleases) {
  record.failRing = true;
  auto applier = createIoApplier(std::make_unique<RecordingIoHost>(record));
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_TRUE(record.settings.empty());
  EXPECT_EQ(record.released, 1);
  EXPECT_EQ(sink.diags.at(0).code, DiagCode::ERR_EXEC_007);
}

TEST_F(MemoryApplierOverAHost, EachPoolIsHandedOverAsAnInheritedFdAndClosedOnRollback) {
  size_t fdsBefore = countOpenFds();
  auto applier = createMemoryApplier(std::make_unique<RecordingMemoryHost>(record));
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(record.pools, (std::vector<std::string>{"mscale-pool-c1-data", "mscale-pool-c1-trainer"}));
  ASSERT_EQ(worker.inheritedFds.size(), 2u);
  EXPECT_EQ(worker.variables.at("MSCALE_POOL_DATA_FD"), std::to_string(worker.inheritedFds[0]));
  EXPECT_EQ(worker.variables.at("MSCALE_POOL_DATA_BYTES"), "16384");
  EXPECT_EQ(worker.variables.at("MSCALE_POOL_TRAINER_PAGE_SIZE"), "4096");
  EXPECT_EQ(countOpenFds(), fdsBefore + 2);
  EXPECT_EQ(applier->describe(),
            (std::vector<std::string>{"recorded reservation for data", "recorded reservation for trainer",
                                      "recorded pool data", "recorded pool trainer"}));
  applier->rollback(ctx);
  EXPECT_TRUE(worker.inheritedFds.empty());
  EXPECT_EQ(countOpenFds(), fdsBefore);
  EXPECT_EQ(record.released, 1);
}

TEST_F(MemoryApplierOverAHost, APoolThatCannotBeMadeClosesTheOnesBeforeIt) {
  size_t fdsBefore = countOpenFds();
  record.failPoolAt = 1;
  auto applier = createMemoryApplier(std::make_unique<RecordingMemoryHost>(record));
  EXPECT_FALSE(applier->apply(ctx));
  EXPECT_EQ(sink.diags.at(0).code, DiagCode::ERR_EXEC_006);
  EXPECT_TRUE(worker.inheritedFds.empty()) << "the first pool is not left to the worker";
  EXPECT_EQ(countOpenFds(), fdsBefore);
  EXPECT_EQ(record.released, 1) << "the reservations are given back";
  EXPECT_TRUE(applier->describe().empty());
}

TEST(HostBackends, SimTouchesNothingAndSaysSoOnEveryLineOfTheHost) {
  plan::Plan plan = twoRolePlan();
  plan.mutable_io_bindings(0)->set_io_weight(300);
  plan.set_cpu_weight(300);
  Logger log("test", false);
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  WorkerEnvironment worker;
  ApplyContext ctx{plan, "c1", log, diags, worker};
  for (auto &applier : createHostAppliers(HostBackend::Sim, {})) {
    ASSERT_TRUE(applier->apply(ctx)) << applier->name().str();
    for (const std::string &line : applier->describe()) { // "role data: CPUs 3,7" is what the worker is told
      if (line.rfind("role ", 0) != 0 || line.find("io_uring") != std::string::npos) {
        EXPECT_NE(line.find("host_backend sim"), std::string::npos) << line;
      }
    }
    applier->rollback(ctx);
  }
  EXPECT_EQ(worker.variables.count("MSCALE_CGROUP"), 0u);
  EXPECT_TRUE(sink.diags.empty());
}

TEST_F(CpuApplierOverAHost, ThePlansCpuWeightIsPartOfWhatTheBackendConfines) {
  plan.set_cpu_weight(250);
  auto applier = createCpuApplier(std::make_unique<RecordingCpuHost>(record));
  ASSERT_TRUE(applier->apply(ctx));
  EXPECT_EQ(record.confined.at(0).weight, 250u);
}

} // namespace
