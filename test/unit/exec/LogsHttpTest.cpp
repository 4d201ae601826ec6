// The logs route of the agent's HTTP endpoint: a LogsRequest spelled as a URL and read back, bad
// queries refused with why; and the agent's routes (metrics, logs as text or as the protocol's
// Response, 404 elsewhere) over worker output kept in a state directory, without a socket or root.
#include "ExecTestUtil.h"

#include "executor/agent/Agent.h"
#include "executor/client/LogsHttp.h"
#include "executor/WorkerOutput.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace msc;
using namespace msc::exec;

TEST(LogsHttp, TargetRoundTrip) {
  agent::LogsRequest r;
  r.set_contract("train");
  r.set_rank(3);
  r.set_attempt(-1);
  EXPECT_EQ(logsTarget(r), "/logs/train?rank=3");
  r.set_attempt(2);
  r.set_offset(4096);
  r.set_max_bytes(100);
  EXPECT_EQ(logsTarget(r), "/logs/train?rank=3&attempt=2&offset=4096&max_bytes=100");
  std::string why;
  std::optional<agent::LogsRequest> back = parseLogsTarget(logsTarget(r), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->SerializeAsString(), r.SerializeAsString());

  back = parseLogsTarget("/logs/train", why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->rank(), 0u);
  EXPECT_EQ(back->attempt(), -1); // the newest
}

TEST(LogsHttp, BadTargetsSayWhy) {
  std::string why;
  EXPECT_FALSE(parseLogsTarget("/metrics", why));
  EXPECT_NE(why.find("is not /logs/CONTRACT"), std::string::npos) << why;
  EXPECT_FALSE(parseLogsTarget("/logs/", why));
  EXPECT_FALSE(parseLogsTarget("/logs/a/b", why));
  EXPECT_FALSE(parseLogsTarget("/logs/a?rank=x", why));
  EXPECT_NE(why.find("'rank=x': rank is a whole number"), std::string::npos) << why;
  EXPECT_FALSE(parseLogsTarget("/logs/a?attempt=-1", why));
  EXPECT_FALSE(parseLogsTarget("/logs/a?rank=99999999999", why));
  EXPECT_FALSE(parseLogsTarget("/logs/a?follow=1", why));
  EXPECT_NE(why.find("unknown parameter 'follow'"), std::string::npos) << why;
}

namespace {
class AgentRoutes : public ::testing::Test {
protected:
  void SetUp() override {
    char tmpl[] = "/tmp/msc-routes-XXXXXX";
    dir_ = mkdtemp(tmpl);
    AgentOptions o;
    o.socketPath = dir_ + "/agent.sock"; // never listened on: the routes are called directly
    o.config.stateDir = dir_ + "/state";
    agent_ = std::make_unique<Agent>(o, log_);
    std::string logs = agent_->ledger().logDir("train");
    ASSERT_FALSE(logs.empty());
    std::filesystem::create_directories(logs);
    std::ofstream(logs + "/" + WorkerOutput::fileName(0, 0, false)) << "first run\n";
    std::ofstream(logs + "/" + WorkerOutput::fileName(0, 1, false)) << "step 1\nstep 2\n";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  std::string dir_;
  Logger log_{"routes-test", false};
  std::unique_ptr<Agent> agent_;
};
} // namespace

TEST_F(AgentRoutes, LogsAsTextAndAsTheProtocolsResponse) {
  HttpReply text = agent_->http({"/logs/train?rank=0&offset=7", ""});
  EXPECT_EQ(text.status, 200u);
  EXPECT_EQ(text.body, "step 2\n"); // the newest attempt, from the offset
  text = agent_->http({"/logs/train?attempt=0", "*/*"});
  EXPECT_EQ(text.body, "first run\n");

  HttpReply proto = agent_->http({"/logs/train", std::string("text/plain, ") + kProtobufType});
  EXPECT_EQ(proto.status, 200u);
  EXPECT_EQ(proto.contentType, kProtobufType);
  agent::Response r;
  ASSERT_TRUE(r.ParseFromString(proto.body));
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.log().file(), "rank0.attempt1.log");
  EXPECT_EQ(r.log().data(), "step 1\nstep 2\n");
  EXPECT_EQ(r.log().next_offset(), 14u);
  ASSERT_EQ(r.log().attempts_size(), 2);
  EXPECT_FALSE(r.log().running());
}

TEST_F(AgentRoutes, WhatIsNotKeptOrNotALogsRequestIsACodedRefusal) {
  HttpReply missing = agent_->http({"/logs/train?rank=4", ""});
  EXPECT_EQ(missing.status, 404u);
  EXPECT_NE(missing.body.find("error[ERR_EXEC_031]: no output of contract 'train' rank 4 is kept on this node"),
            std::string::npos)
      << missing.body;
  HttpReply bad = agent_->http({"/logs/train?color=red", ""});
  EXPECT_EQ(bad.status, 400u);
  EXPECT_NE(bad.body.find("error[ERR_EXEC_012]"), std::string::npos) << bad.body;
  EXPECT_NE(bad.body.find("unknown parameter 'color'"), std::string::npos) << bad.body;
  HttpReply badId = agent_->http({"/logs/..", ""});
  EXPECT_EQ(badId.status, 400u);
  EXPECT_NE(badId.body.find("error[ERR_EXEC_021]"), std::string::npos) << badId.body;

  // Over the protocol the refusal keeps its code and arguments.
  agent::Response r;
  ASSERT_TRUE(r.ParseFromString(agent_->http({"/logs/train?rank=4", kProtobufType}).body));
  EXPECT_FALSE(r.ok());
  ASSERT_EQ(r.diagnostics_size(), 1);
  EXPECT_EQ(r.diagnostics(0).code(), "ERR_EXEC_031");
}

TEST_F(AgentRoutes, MetricsAtTheRootAndAtMetricsNothingElse) {
  HttpReply metrics = agent_->http({"/metrics", ""});
  EXPECT_EQ(metrics.status, 200u);
  EXPECT_NE(metrics.contentType.find("version=0.0.4"), std::string::npos);
  EXPECT_NE(metrics.body.find("mscale_"), std::string::npos);
  EXPECT_EQ(agent_->http({"/", ""}).status, 200u);
  HttpReply other = agent_->http({"/debug/pprof", ""});
  EXPECT_EQ(other.status, 404u);
  EXPECT_NE(other.body.find("/metrics and /logs/CONTRACT"), std::string::npos) << other.body;
}
