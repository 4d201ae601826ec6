#include "executor/client/AgentClient.h"
#include "executor/agent/Metrics.h"
#include "executor/NodeConfig.h"
#include "executor/client/Protocol.h"

#include <gtest/gtest.h>

using namespace msc;
using namespace msc::exec;

TEST(Protocol, RoundTrip) {
  agent::Request r = statusRequest("t1");
  r.set_id(7);
  std::string frame = encodeFrame(r);
  FrameDecoder d;
  // Byte by byte: the decoder only yields whole frames.
  std::string payload;
  ProtocolError e;
  for (size_t i = 0; i + 1 < frame.size(); ++i) {
    d.append(frame.substr(i, 1));
    EXPECT_EQ(d.next(payload, e), FrameDecoder::Result::NeedMore);
  }
  d.append(frame.substr(frame.size() - 1));
  ASSERT_EQ(d.next(payload, e), FrameDecoder::Result::Frame);
  std::optional<agent::Request> back = decodeRequest(payload, e);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id(), 7u);
  EXPECT_EQ(back->status().contract(), "t1");
  EXPECT_FALSE(d.finish());
}

TEST(Protocol, OversizedFrameIsErrExec010) {
  FrameDecoder d(1024);
  d.append(std::string("\x01\x10\x00\x00", 4)); // 4097 bytes announced
  std::string payload;
  ProtocolError e;
  ASSERT_EQ(d.next(payload, e), FrameDecoder::Result::Error);
  EXPECT_EQ(e.code, DiagCode::ERR_EXEC_010);
  EXPECT_EQ(e.message, "agent frame of 4097 bytes exceeds the limit of 1024 bytes");
}

TEST(Protocol, TruncatedFrameIsErrExec011) {
  FrameDecoder d;
  d.append(std::string("\x10\x00\x00\x00" "abc", 7));
  std::string payload;
  ProtocolError e;
  EXPECT_EQ(d.next(payload, e), FrameDecoder::Result::NeedMore);
  std::optional<ProtocolError> t = d.finish();
  ASSERT_TRUE(t);
  EXPECT_EQ(t->code, DiagCode::ERR_EXEC_011);
  EXPECT_EQ(t->message, "agent frame is truncated: 3 of 16 payload bytes arrived");
  FrameDecoder d2;
  d2.append(std::string("\x10\x00", 2));
  ASSERT_TRUE(d2.finish());
  EXPECT_EQ(d2.finish()->message, "agent frame is truncated: 2 byte(s) of a 4-byte length prefix");
}

TEST(Protocol, MalformedPayloadIsErrExec012) {
  ProtocolError e;
  EXPECT_FALSE(decodeRequest(std::string("\xff\xff\xff", 3), e));
  EXPECT_EQ(e.code, DiagCode::ERR_EXEC_012);
  EXPECT_FALSE(decodeRequest("", e)); // no command
  EXPECT_EQ(e.message, "agent message does not decode: the request carries no command");
  agent::Request r;
  r.mutable_release();
  EXPECT_FALSE(decodeRequest(r.SerializeAsString(), e));
  EXPECT_EQ(e.message, "agent message does not decode: release request without a contract");
  agent::Request logs;
  logs.mutable_logs()->set_attempt(0);
  EXPECT_FALSE(decodeRequest(logs.SerializeAsString(), e));
  EXPECT_EQ(e.message, "agent message does not decode: logs request without a contract");
  logs.mutable_logs()->set_contract("c");
  logs.mutable_logs()->set_attempt(-2);
  EXPECT_FALSE(decodeRequest(logs.SerializeAsString(), e));
  EXPECT_EQ(e.message, "agent message does not decode: logs request for attempt -2 (expected -1, the newest, or an attempt >= 0)");
  logs.mutable_logs()->set_attempt(-1);
  EXPECT_TRUE(decodeRequest(logs.SerializeAsString(), e)) << "the newest attempt";
}

TEST(Protocol, DiagnosticsTravelWithCodes) {
  agent::Response r;
  addError(r, ProtocolError{DiagCode::ERR_EXEC_016, "no contract 'x' is admitted on this node"});
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  emitDiagnostics(r, diags);
  ASSERT_EQ(sink.diags.size(), 1u);
  EXPECT_EQ(sink.diags[0].code, DiagCode::ERR_EXEC_016);
  EXPECT_FALSE(r.ok());
}

TEST(NodeConfig, ParsesAndRefuses) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  auto c = parseNodeConfig("gpus: [0, 1]\ngpu_backend: sim\nrdma: { enabled: false }\nnvme_scheduler: bfq\n"
                           "hugepages: { auto_allocate: false }\nallowed_users: [root, 1234]\nallowed_groups: [0]\n"
                           "state_dir: /tmp/x\nstrict_fingerprint: true\n",
                           "node.yaml", diags);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpus.size(), 2u);
  EXPECT_FALSE(c->rdmaEnabled);
  EXPECT_FALSE(c->hugepageAutoAllocate);
  EXPECT_EQ(c->allowedUids, (std::vector<uid_t>{0, 1234}));
  EXPECT_TRUE(c->strictFingerprint);
  EXPECT_FALSE(parseNodeConfig("allowed_users: [no-such-user-xyz]\n", "node.yaml", diags));
  EXPECT_FALSE(parseNodeConfig("gpu_backend: quantum\n", "node.yaml", diags));
  EXPECT_FALSE(parseNodeConfig("unknown_key: 1\n", "node.yaml", diags));
  for (const Diagnostic &d : sink.diags)
    EXPECT_EQ(d.code, DiagCode::ERR_EXEC_017);
  EXPECT_EQ(sink.diags.size(), 3u);
}

TEST(NodeConfig, HostBackendIsRealUnlessSimAndABadValueIsRefusedWhereItIs) {
  CollectingConsumer sink;
  DiagnosticEngine diags(nullptr, sink);
  std::optional<NodeConfig> defaults = parseNodeConfig("gpus: [0]\n", "node.yaml", diags);
  ASSERT_TRUE(defaults);
  EXPECT_EQ(defaults->hostBackend, HostBackend::Real);
  std::optional<NodeConfig> sim = parseNodeConfig("host_backend: sim\n", "node.yaml", diags);
  ASSERT_TRUE(sim);
  EXPECT_EQ(sim->hostBackend, HostBackend::Sim);
  std::optional<NodeConfig> real = parseNodeConfig("host_backend: real\n", "node.yaml", diags);
  ASSERT_TRUE(real);
  EXPECT_EQ(real->hostBackend, HostBackend::Real);
  EXPECT_TRUE(sink.diags.empty());
  EXPECT_FALSE(parseNodeConfig("gpus: [0]\nhost_backend: simulated\n", "node.yaml", diags));
  ASSERT_EQ(sink.diags.size(), 1u);
  EXPECT_EQ(sink.diags[0].code, DiagCode::ERR_EXEC_017);
  EXPECT_EQ(sink.diags[0].loc.line, 2u);
  EXPECT_NE(sink.diags[0].message.find("host_backend must be real or sim (at node.yaml:2:15)"), std::string::npos)
      << sink.diags[0].message;
}

TEST(Metrics, PrometheusText) {
  agent::ContractStatus s;
  s.set_contract("t\"1");
  s.set_applied(true);
  s.set_io_wait_ratio(0.25);
  s.mutable_worker()->set_state(agent::Worker::RUNNING);
  std::string text = renderMetrics({s}, {{"list", 3}}, {{"ERR_EXEC_013", 1}});
  EXPECT_NE(text.find("mscale_contracts_admitted 1\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_applied{contract=\"t\\\"1\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_worker{contract=\"t\\\"1\",state=\"running\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_io_wait_ratio{contract=\"t\\\"1\"} 0.2500\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_agent_refusals_total{code=\"ERR_EXEC_013\"} 1\n"), std::string::npos);
}

// The lending families: the node's lent core-seconds, each borrower's harvest where its cgroup
// counts it, each owner's entries, reclaims, misses and a cumulative latency histogram.
TEST(Metrics, LendingSeriesOfOwnersAndBorrowers) {
  agent::ContractStatus owner;
  owner.set_contract("train");
  agent::Lending *l = owner.mutable_lending();
  l->set_entries(10);
  l->set_ahead(7);
  l->set_reclaims(3);
  l->set_missed(1);
  l->set_reclaim_sum_ns(2'600'000);
  for (uint64_t n : {7, 0, 1, 0, 0, 1, 0, 1, 0, 0, 0})
    l->add_reclaim_buckets(n);
  agent::ContractStatus borrower;
  borrower.set_contract("prep");
  borrower.mutable_lending()->set_borrower(true);
  borrower.mutable_lending()->set_cpu_ns(1'500'000'000);
  borrower.mutable_lending()->set_cpu_ns_known(true);
  agent::ContractStatus simBorrower;
  simBorrower.set_contract("sim_prep");
  simBorrower.mutable_lending()->set_borrower(true);
  agent::LoansResponse loans;
  loans.set_lent_core_ns(4'250'000'000);
  loans.mutable_yields()->set_asked(5);
  loans.mutable_yields()->set_yielded(3);
  loans.mutable_yields()->set_expired(1);
  std::string text = renderMetrics({owner, borrower, simBorrower}, {}, {}, &loans);
  EXPECT_NE(text.find("mscale_lending_yield_requests_total 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mscale_lending_yield_outcomes_total{outcome=\"yielded\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_yield_outcomes_total{outcome=\"expired\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_yield_outcomes_total{outcome=\"withdrawn\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_lent_core_seconds_total 4.250000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mscale_lending_harvested_core_seconds_total{borrower=\"prep\"} 1.500000\n"), std::string::npos);
  EXPECT_EQ(text.find("borrower=\"sim_prep\""), std::string::npos) << "not counted: no series, not a zero";
  EXPECT_NE(text.find("mscale_lending_phase_entries_total{owner=\"train\"} 10\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaims_total{owner=\"train\"} 3\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_missed_deadlines_total{owner=\"train\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaim_latency_seconds_bucket{owner=\"train\",le=\"1e-05\"} 7\n"),
            std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaim_latency_seconds_bucket{owner=\"train\",le=\"0.0001\"} 8\n"),
            std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaim_latency_seconds_bucket{owner=\"train\",le=\"0.002\"} 9\n"),
            std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaim_latency_seconds_bucket{owner=\"train\",le=\"+Inf\"} 10\n"),
            std::string::npos);
  EXPECT_NE(text.find("mscale_lending_reclaim_latency_seconds_count{owner=\"train\"} 10\n"), std::string::npos);
  EXPECT_EQ(text.find("owner=\"prep\""), std::string::npos);
  EXPECT_EQ(renderMetrics({owner}, {}, {}).find("mscale_lending_"), std::string::npos)
      << "no lending on the node: no families";
}

TEST(Metrics, GpuRdmaAndEventSeriesOnlyWhereMeasured) {
  agent::ContractStatus s;
  s.set_contract("c");
  s.set_io_wait_ratio(-1);
  agent::GpuUtilisation *g = s.add_gpus();
  g->set_role("trainer");
  g->set_backend("sim");
  g->set_tflops(31.5);
  g->set_memory_bytes(10'000'000'000);
  g->set_compute_density(3.15);
  g->set_temperature_mc(64'500);
  agent::RdmaRetries *up = s.add_rdma();
  up->set_role("cache");
  up->set_port("mlx5_0:1");
  up->set_available(true);
  up->set_retries_total(42);
  agent::RdmaRetries *down = s.add_rdma();
  down->set_role("cache2");
  down->set_port("mlx5_1:1");
  down->set_unavailable_reason("no RDMA device");
  for (const char *kind : {"fault", "recovered", "resize", "resize"}) {
    agent::HistoryEntry *h = s.add_history();
    h->set_kind(kind);
  }
  std::string text = renderMetrics({s}, {}, {});
  const std::string gl = "{contract=\"c\",role=\"trainer\",backend=\"sim\"} ";
  EXPECT_NE(text.find("mscale_contract_gpu_tflops" + gl + "31.5000\n"), std::string::npos) << text;
  EXPECT_NE(text.find("mscale_contract_gpu_memory_bytes" + gl + "10000000000\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_gpu_compute_density" + gl + "3.1500\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_gpu_temperature_celsius" + gl + "64.500\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_rdma_retries_total{contract=\"c\",role=\"cache\",port=\"mlx5_0:1\"} 42\n"),
            std::string::npos);
  EXPECT_EQ(text.find("mlx5_1:1"), std::string::npos); // unavailable: no series, not a zero
  EXPECT_EQ(text.find("mscale_contract_io_wait_ratio{"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_events_total{contract=\"c\",kind=\"resize\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("mscale_contract_events_total{contract=\"c\",kind=\"fault\"} 1\n"), std::string::npos);
}
