// The key layout and the value formats (cluster/keys/Keys.h): no etcd needed.
#include "cluster/keys/Keys.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

using namespace msc::cluster;

TEST(ClusterKeys, Layout) {
  EXPECT_EQ(nodeKey("jrc0323"), "/mscale/nodes/jrc0323");
  EXPECT_EQ(assignmentKey("jrc0323", "train1"), "/mscale/assignments/jrc0323/train1");
  EXPECT_EQ(statusKey("jrc0323", "train1"), "/mscale/status/jrc0323/train1");
  EXPECT_EQ(contractOfKey("/mscale/assignments/a1/t", assignmentsPrefix("a1")), "t");
  // Node "a1" must not see node "a10"'s keys, nor keys nested deeper.
  EXPECT_EQ(contractOfKey("/mscale/assignments/a10/t", assignmentsPrefix("a1")), "");
  EXPECT_EQ(contractOfKey("/mscale/assignments/a1/t/x", assignmentsPrefix("a1")), "");
  EXPECT_EQ(contractOfKey("/mscale/assignments/a1/", assignmentsPrefix("a1")), "");
}

TEST(ClusterKeys, AssignmentRoundTrip) {
  Assignment a;
  a.leaderRevision = 42;
  a.plan = std::string("MSCP\0\x01binary", 12);
  a.command = {"python3", "train.py", "--lr=1e-4"};
  a.environment = {{"A", "1"}};
  std::string why;
  std::optional<Assignment> back = decodeAssignment(encodeAssignment(a), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->leaderRevision, 42);
  EXPECT_EQ(back->plan, a.plan);
  EXPECT_EQ(back->command, a.command);
  EXPECT_EQ(back->environment, a.environment);
}

// The same job placed anew on a node (another rank, another world size) is told from another job.
TEST(ClusterKeys, AnAssignmentThatDiffersInItsPlacementAloneIsTheSameJobPlacedAnew) {
  Assignment before;
  before.leaderRevision = 3;
  before.plan = "plan bytes";
  before.command = {"python3", "train.py"};
  before.environment = {{"RANK", "2"}, {"WORLD_SIZE", "4"}, {"MASTER_ADDR", "n1"}, {"MASTER_PORT", "29500"},
                        {"MSCALE_MICRO_BATCH", "8"}, {"MSCALE_ACCUMULATION_STEPS", "3"}, {"DATASET", "laion"}};
  Assignment after = before;
  after.leaderRevision = 4;
  after.environment["RANK"] = "1";
  after.environment["WORLD_SIZE"] = "3";
  after.environment["MASTER_ADDR"] = "n2";
  after.environment["MASTER_PORT"] = "29501";
  after.environment["MSCALE_ACCUMULATION_STEPS"] = "4";
  after.stop = PlannedStop{7, 1, 40, PlannedStop::Cause::Grow};
  EXPECT_TRUE(samePlacedJob(before, after));
  after.environment.erase("MSCALE_ACCUMULATION_STEPS");
  EXPECT_TRUE(samePlacedJob(before, after)) << "a placement variable gone is a placement too";

  Assignment other = after;
  other.environment["DATASET"] = "coco";
  EXPECT_FALSE(samePlacedJob(before, other)) << "the submission changed";
  other = after;
  other.environment.erase("DATASET");
  EXPECT_FALSE(samePlacedJob(before, other));
  other = after;
  other.plan = "another plan";
  EXPECT_FALSE(samePlacedJob(before, other));
  other = after;
  other.command.push_back("--epochs=3");
  EXPECT_FALSE(samePlacedJob(before, other));
}

TEST(ClusterKeys, MalformedAssignments) {
  std::string why;
  EXPECT_FALSE(decodeAssignment("not a protobuf \xff\xff", why));
  EXPECT_NE(why.find("not an encoded assignment"), std::string::npos) << why;
  EXPECT_FALSE(decodeAssignment("", why));
  Assignment a;
  a.plan = "x";
  a.leaderRevision = 0;
  EXPECT_FALSE(decodeAssignment(encodeAssignment(a), why));
  EXPECT_NE(why.find("leader revision 0 is not positive"), std::string::npos) << why;
  a.leaderRevision = 3;
  a.plan.clear();
  EXPECT_FALSE(decodeAssignment(encodeAssignment(a), why));
  EXPECT_NE(why.find("no plan"), std::string::npos) << why;
}

TEST(ClusterKeys, StatusAndRegistrationRoundTrip) {
  AssignmentStatus s;
  s.state = "refused";
  s.code = "ERR_CLUSTER_003";
  s.leaderRevision = 7;
  s.messages = {"error[ERR_CLUSTER_003]: ..."};
  std::optional<AssignmentStatus> back = decodeStatus(encodeStatus(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, "refused");
  EXPECT_EQ(back->code, "ERR_CLUSTER_003");
  EXPECT_EQ(back->leaderRevision, 7);
  EXPECT_EQ(back->messages, s.messages);
  EXPECT_FALSE(decodeStatus("leader-rev x\n"));

  std::string why;
  std::optional<Registration> r = decodeRegistration(encodeRegistration({"0.1.0", "node: a\n"}), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->agentVersion, "0.1.0");
  EXPECT_EQ(r->topologyYaml, "node: a\n");
  EXPECT_FALSE(decodeRegistration("node: a\n", why));
  EXPECT_EQ(r->address, "");

  // The advertised address (MASTER_ADDR of jobs whose rank 0 runs there) travels on a line of its own.
  r = decodeRegistration(encodeRegistration({"0.1.0", "node: a\n", "10.0.0.7"}), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->address, "10.0.0.7");
  EXPECT_EQ(r->topologyYaml, "node: a\n");
  EXPECT_FALSE(decodeRegistration("# mscale node registration; agent 0.1.0\n# address two words\nnode: a\n", why));
  EXPECT_NE(why.find("no usable address"), std::string::npos) << why;
  EXPECT_FALSE(validNodeAddress(""));
  EXPECT_FALSE(validNodeAddress("a b"));
  EXPECT_TRUE(validNodeAddress("node1.example.org"));

  // The HTTP endpoint (where `cluster logs` reads a node's worker output) on the line after it.
  r = decodeRegistration(encodeRegistration({"0.1.0", "node: a\n", "10.0.0.7", "10.0.0.7:41234"}), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->address, "10.0.0.7");
  EXPECT_EQ(r->http, "10.0.0.7:41234");
  EXPECT_EQ(r->topologyYaml, "node: a\n");
  r = decodeRegistration(encodeRegistration({"0.1.0", "node: a\n", "", "[::1]:9100"}), why);
  ASSERT_TRUE(r) << why;
  EXPECT_EQ(r->address, "");
  EXPECT_EQ(r->http, "[::1]:9100");
  EXPECT_FALSE(decodeRegistration("# mscale node registration; agent 0.1.0\n# http \nnode: a\n", why));
  EXPECT_NE(why.find("'# http '"), std::string::npos) << why;
}

TEST(ClusterKeys, SubmissionRoundTrip) {
  Submission s{"train1", "contract train1 { cpu_cores = 2; }\n", {"python3", "train.py"}, {{"STEPS", "40"}}};
  std::string why;
  std::optional<Submission> back = decodeSubmission(encodeSubmission(s), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->contract, "train1");
  EXPECT_EQ(back->source, s.source);
  EXPECT_EQ(back->command, s.command);
  EXPECT_EQ(back->environment, s.environment);
}

TEST(ClusterKeys, MalformedSubmissions) {
  std::string why;
  EXPECT_FALSE(decodeSubmission("not a submission", why));
  EXPECT_NE(why.find("not an encoded submission"), std::string::npos) << why;
  auto refused = [&](Submission s, const char *what) {
    EXPECT_FALSE(checkSubmission(s, why)) << what;
    EXPECT_FALSE(decodeSubmission(encodeSubmission(s), why)) << what;
    return why;
  };
  Submission good{"c1", "contract c1 {}", {}, {}};
  EXPECT_TRUE(checkSubmission(good, why)) << why;
  Submission s = good;
  s.contract = "9lives";
  EXPECT_NE(refused(s, "name").find("is not a contract name"), std::string::npos);
  s = good;
  s.contract = "a/b";
  refused(s, "slash in the name: it is a key component");
  s = good;
  s.contract = std::string(129, 'a');
  refused(s, "long name");
  s = good;
  s.source = " \n\t";
  EXPECT_EQ(refused(s, "empty source"), "the source is empty");
  s = good;
  s.environment = {{"A=B", "1"}};
  refused(s, "'=' in a variable name");
  s = good;
  s.environment = {{"", "1"}};
  refused(s, "empty variable name");
  s = good;
  s.command = {"", "x"};
  refused(s, "empty program");
  s = good;
  s.command = {"prog", std::string("a\0b", 3)};
  refused(s, "NUL in an argument");
  s = good;
  s.source = std::string(kMaxSubmissionBytes, 'x');
  EXPECT_NE(refused(s, "too large").find("more than the"), std::string::npos);
}

TEST(ClusterKeys, TheHealthVerdictTravelsWithTheRegistration) {
  Registration sent{"0.1.0", "node: a\n", "10.0.0.7", "10.0.0.7:9100"};
  sent.health = NodeHealth{HealthLevel::Failed,
                           {{"ERR_HEALTH_001", "thermal sensor 'x86_pkg_temp' at 105.0 C is at or above its critical "
                                               "limit 100.0 C"},
                            {"WRN_HEALTH_004", "hugepage pool of 2 MiB on NUMA node 0 shrank from 8 to 4 page(s)"}}};
  std::string value = encodeRegistration(sent), why;
  EXPECT_NE(value.find("\n# health failed\n# health-reason ERR_HEALTH_001 thermal sensor"), std::string::npos) << value;
  std::optional<Registration> r = decodeRegistration(value, why);
  ASSERT_TRUE(r) << why;
  ASSERT_TRUE(r->health);
  EXPECT_EQ(*r->health, *sent.health);
  EXPECT_EQ(r->healthUnreadable, "");
  EXPECT_EQ(r->http, "10.0.0.7:9100");
  EXPECT_EQ(r->topologyYaml, "node: a\n");
  // A reason's message is one line: a newline would end the comment and break the YAML.
  sent.health = NodeHealth{HealthLevel::Degraded, {{"WRN_HEALTH_007", "two\nlines"}}};
  r = decodeRegistration(encodeRegistration(sent), why);
  ASSERT_TRUE(r && r->health) << why;
  EXPECT_EQ(r->health->reasons.front().message, "two lines");
  // No health lines (an older agent, a recorded topology file): no verdict, and nothing wrong.
  r = decodeRegistration(encodeRegistration({"0.1.0", "node: a\n"}), why);
  ASSERT_TRUE(r) << why;
  EXPECT_FALSE(r->health);
  EXPECT_EQ(r->healthUnreadable, "");
}

TEST(ClusterKeys, AHealthRecordThatDoesNotReadLeavesTheTopologyReadable) {
  const std::string head = "# mscale node registration; agent 0.1.0\n";
  for (auto [lines, expected] : std::vector<std::pair<std::string, std::string>>{
           {"# health overheated\n", "names no verdict"},
           {"# health-reason ERR_HEALTH_001 hot\n", "before the health line"},
           {"# health failed\n# health-reason hot\n", "is not a coded reason"},
           {"# health failed\n# health-reason ERR_HEALTH_001\n", "is not a coded reason"},
           {"# health failed\n", "verdict 'failed' with 0 reason(s)"},
           {"# health healthy\n# health-reason WRN_HEALTH_001 warm\n", "verdict 'healthy' with 1 reason(s)"},
           {"# health healthy\n# health healthy\n", "twice"},
           {"# health healthy\n# healthy\n", "is not a health line"}}) {
    std::string why;
    std::optional<Registration> r = decodeRegistration(head + lines + "node: a\n", why);
    ASSERT_TRUE(r) << lines << why;
    EXPECT_FALSE(r->health) << lines;
    EXPECT_NE(r->healthUnreadable.find(expected), std::string::npos) << lines << r->healthUnreadable;
    EXPECT_EQ(r->topologyYaml, lines + "node: a\n") << "kept as YAML comments, so that the value encodes to itself";
    std::optional<Registration> again = decodeRegistration(encodeRegistration(*r), why);
    ASSERT_TRUE(again) << why;
    EXPECT_EQ(again->topologyYaml, r->topologyYaml);
  }
  // An address line after health lines that do not read is the topology's (found by the fuzzer: it
  // came out as the registration's address line after a round trip, and did not read as one).
  std::string why;
  std::optional<Registration> r = decodeRegistration(head + "# health#x\n# address #'A\n" + "node: a\n", why);
  ASSERT_TRUE(r) << why;
  EXPECT_TRUE(r->address.empty());
  std::optional<Registration> again = decodeRegistration(encodeRegistration(*r), why);
  ASSERT_TRUE(again) << why;
  EXPECT_EQ(again->topologyYaml, r->topologyYaml);
}

TEST(ClusterKeys, CordonRoundTripAndMalformedCordons) {
  Cordon c{"operator", "PSU swap, ticket 4711", 9, 1764950400000};
  std::string why;
  std::optional<Cordon> back = decodeCordon(encodeCordon(c), why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(*back, c);
  EXPECT_EQ(cordonKey("node1"), "/mscale/cordons/node1");
  EXPECT_FALSE(decodeCordon("by operator\nleader-rev 9\nsince-ms 1\n", why));
  EXPECT_NE(why.find("'reason TEXT'"), std::string::npos) << why;
  EXPECT_FALSE(decodeCordon("by someone\nleader-rev 9\nsince-ms 1\nreason x\n", why));
  EXPECT_FALSE(decodeCordon("by policy\nleader-rev 0\nsince-ms 1\nreason x\n", why));
  EXPECT_FALSE(decodeCordon("by policy\nleader-rev 3\nsince-ms 1\nreason  \n", why));
  // A '\r' is written as a blank (one line a field): it reads as one too, so a cordon that reads
  // encodes to itself (found by cluster_keys_fuzzer); a reason of blanks only does not read.
  std::optional<Cordon> cr = decodeCordon("by policy\nleader-rev 3\nsince-ms 1\nreason PSU\rswap\n", why);
  ASSERT_TRUE(cr) << why;
  EXPECT_EQ(cr->reason, "PSU swap");
  EXPECT_EQ(decodeCordon(encodeCordon(*cr), why), cr);
  EXPECT_FALSE(decodeCordon("by policy\nleader-rev 3\nsince-ms 1\nreason \r\n", why));
  EXPECT_TRUE(isNodeName("jwb0004", why));
  EXPECT_FALSE(isNodeName("", why));
  EXPECT_FALSE(isNodeName("a/b", why));
  EXPECT_FALSE(isNodeName("a b", why));
}

TEST(ClusterKeys, ANodesFaultHistoryKeepsTheNewestOnesOneLineEach) {
  std::vector<NodeFault> faults;
  for (int i = 0; i < 70; ++i)
    faults.push_back({1764950400000 + i, "worker:train:9:" + std::to_string(i + 1), "train: worker-crashed\nat step " +
                                                                                         std::to_string(i)});
  std::string why;
  std::optional<std::vector<NodeFault>> back = decodeFaults(encodeFaults(faults), why);
  ASSERT_TRUE(back) << why;
  ASSERT_EQ(back->size(), kNodeFaultsKept);
  EXPECT_EQ(back->front().id, "worker:train:9:7") << "the oldest go";
  EXPECT_EQ(back->back().text, "train: worker-crashed at step 69") << "one line each";
  EXPECT_EQ(nodeFaultsKey("jwb0004"), "/mscale/faults/jwb0004");
  EXPECT_TRUE(decodeFaults("", why)->empty());

  EXPECT_FALSE(decodeFaults("1764950400000 lost:train:9\n", why)) << "no text";
  EXPECT_NE(why.find("is not 'UNIX_MS ID TEXT'"), std::string::npos) << why;
  EXPECT_FALSE(decodeFaults("yesterday lost:train:9 node lost\n", why));
  EXPECT_FALSE(decodeFaults("-5 lost:train:9 node lost\n", why));
  EXPECT_FALSE(decodeFaults("5  node lost\n", why)) << "an empty ID";
  EXPECT_FALSE(decodeFaults("5 lost:\x01 node lost\n", why));
  EXPECT_NE(why.find("not printable"), std::string::npos) << why;
}

TEST(ClusterKeys, AStatusCarriesItsWorkersFaults) {
  AssignmentStatus s;
  s.state = "applied";
  s.leaderRevision = 9;
  s.worker = "running";
  s.pid = 77;
  s.faults = 2;
  s.lastFault = "worker-hung at step 3\n(no heartbeat)";
  std::optional<AssignmentStatus> back = decodeStatus(encodeStatus(s));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->faults, 2);
  EXPECT_EQ(back->lastFault, "worker-hung at step 3 (no heartbeat)");
  EXPECT_EQ(encodeStatus(AssignmentStatus{"applied", "", 9, "running", 77, 0, {}, 0, ""}).find("faults"),
            std::string::npos)
      << "no faults, no lines";
  EXPECT_FALSE(decodeStatus("state applied\nleader-rev 9\nfaults -1\n"));
  EXPECT_FALSE(decodeStatus("state applied\nleader-rev 9\nfaults many\n"));
}

TEST(ClusterKeys, APlannedStopTravelsInTheAssignmentAndChangesNothingElse) {
  Assignment a;
  a.leaderRevision = 4;
  a.plan = "plan bytes";
  a.command = {"train"};
  // Many variables: the encoding must not depend on the order a hash table keeps them in.
  for (int i = 0; i < 40; ++i)
    a.environment["V" + std::to_string(i * 7919 % 97)] = std::to_string(i);
  std::string unstopped = encodeAssignment(a);
  a.stop = PlannedStop{17, 2, 60};
  std::string why;
  std::optional<Assignment> back = decodeAssignment(encodeAssignment(a), why);
  ASSERT_TRUE(back) << why;
  ASSERT_TRUE(back->stop);
  EXPECT_EQ(back->stop->id, 17);
  EXPECT_EQ(back->stop->attempt, 2u);
  EXPECT_EQ(back->stop->afterStep, 60u);
  EXPECT_EQ(back->stop->cause, PlannedStop::Cause::Drain);
  a.stop = PlannedStop{18, 1, 0, PlannedStop::Cause::Grow};
  back = decodeAssignment(encodeAssignment(a), why);
  ASSERT_TRUE(back && back->stop) << why;
  EXPECT_EQ(*back->stop, *a.stop) << "a grow's stop reads back as a grow's";
  back->stop.reset();
  EXPECT_EQ(encodeAssignment(*back), unstopped); // the same bytes once the stop is taken out
  a.stop = PlannedStop{0, 1, 0};
  EXPECT_FALSE(decodeAssignment(encodeAssignment(a), why));
  EXPECT_NE(why.find("planned stop names id 0 attempt 1"), std::string::npos) << why;
  a.stop = PlannedStop{3, 0, 0};
  EXPECT_FALSE(decodeAssignment(encodeAssignment(a), why));
  // A cause this agent does not know (from a newer leader): the stop's field 6 again, with cause 7,
  // which protobuf merges into the stop already there.
  a.stop = PlannedStop{3, 1, 0};
  std::string unknownCause = encodeAssignment(a) + std::string("\x32\x02\x20\x07", 4);
  EXPECT_FALSE(decodeAssignment(unknownCause, why));
  EXPECT_NE(why.find("cause 7"), std::string::npos) << why;
}

TEST(ClusterKeys, TheAgentsAnswerToAStopRoundTripsInItsStatus) {
  AssignmentStatus s;
  s.state = "applied";
  s.leaderRevision = 7;
  s.worker = "running";
  s.stop = StopAnswer{17, 1, 42, 120, 0, 0};
  std::optional<AssignmentStatus> back = decodeStatus(encodeStatus(s));
  ASSERT_TRUE(back && back->stop);
  EXPECT_EQ(*back->stop, *s.stop);
  s.stop->stoppedAt = 60;
  s.stop->missedAt = 61;
  back = decodeStatus(encodeStatus(s));
  ASSERT_TRUE(back && back->stop);
  EXPECT_EQ(*back->stop, *s.stop);
  // An answer's lines without the ask they answer, or an ask naming no drain, do not read.
  std::string encoded = encodeStatus(s);
  std::string noAsk = encoded;
  noAsk.erase(noAsk.find("stop-asked"), noAsk.find('\n', noAsk.find("stop-asked")) - noAsk.find("stop-asked") + 1);
  EXPECT_FALSE(decodeStatus(noAsk));
  std::string zero = encoded;
  zero.replace(zero.find("stop-asked 17 1"), 15, "stop-asked 0 1");
  EXPECT_FALSE(decodeStatus(zero));
}

TEST(ClusterKeys, LendingRecordRoundTripAndMalformedRecords) {
  EXPECT_EQ(lendingKey("node1"), "/mscale/lending/node1");
  for (LendingRecord r :
       {LendingRecord{}, LendingRecord{2, 6, 3, 640, 1}, LendingRecord{1, 4, 0, 1000, 4}, LendingRecord{1, 2, 0, 500, 0, 7},
        LendingRecord{1, 2, 4, 500, 1, 3, 250, 4, 1000, 2}}) {
    std::string why;
    std::optional<LendingRecord> back = decodeLending(encodeLending(r), why);
    ASSERT_TRUE(back) << why;
    EXPECT_EQ(*back, r);
  }
  const std::string good = encodeLending({1, 4, 0, 500, 0});
  std::string why;
  EXPECT_FALSE(decodeLending("", why));
  EXPECT_EQ(why, "no 'owners N' line");
  EXPECT_FALSE(decodeLending(good + "cpus 4\n", why));
  EXPECT_EQ(why, "the 'cpus' line is there twice");
  EXPECT_FALSE(decodeLending(good + "color blue\n", why));
  EXPECT_EQ(why, "the line 'color blue' does not read");
  for (const char *bad : {"cpus -1", "cpus +4", "cpus 04", "cpus 4 ", "cpus 99999999999"}) {
    std::string value = good;
    value.replace(value.find("cpus 4"), 6, bad);
    EXPECT_FALSE(decodeLending(value, why)) << bad;
  }
  EXPECT_FALSE(decodeLending(encodeLending({1, 4, 0, 1001, 0}), why));
  EXPECT_EQ(why, "a share of 1001 permille is more than the whole");
  for (LendingRecord over : {LendingRecord{1, 4, 2, 500, 0, 0, 1001}, LendingRecord{1, 4, 0, 500, 0, 2, 0, 0, 1200}}) {
    EXPECT_FALSE(decodeLending(encodeLending(over), why));
    EXPECT_EQ(why, "a share of " + std::to_string(std::max(over.gpuSharePermille, over.rdmaSharePermille)) +
                       " permille is more than the whole");
  }
  EXPECT_FALSE(decodeLending(encodeLending({0, 4, 0, 0, 0}), why));
  EXPECT_EQ(why, "it lends 4 CPUs, 0 GPU units and 0 queue pairs with no owner");
  EXPECT_FALSE(decodeLending(encodeLending({0, 0, 0, 0, 0, 2}), why));
  EXPECT_EQ(why, "it lends 0 CPUs, 0 GPU units and 2 queue pairs with no owner");
  // An older agent's record ends before the rdma-queue-pairs line: it reads, lending no queue pairs,
  // none lent, its GPU units lendable as its CPUs are.
  std::string older = encodeLending({1, 4, 2, 500, 1, 0});
  older.erase(older.find("rdma-queue-pairs"));
  std::optional<LendingRecord> back = decodeLending(older, why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(*back, (LendingRecord{1, 4, 2, 500, 1, 0, 500, 0, 0, 0}));
  EXPECT_FALSE(decodeLending(good + "gpu-share-permille 5\n", why));
  EXPECT_EQ(why, "the 'gpu-share-permille' line is there twice");
}

TEST(ClusterKeys, ASubmissionCarriesItsClass) {
  for (const char *cls : {"", "guaranteed", "opportunistic"}) {
    Submission s{"infer", "contract infer { cpu_cores = 1; }", {}, {}, cls};
    std::string why;
    std::optional<Submission> back = decodeSubmission(encodeSubmission(s), why);
    ASSERT_TRUE(back) << why;
    EXPECT_EQ(back->contractClass, cls);
  }
  std::string why;
  EXPECT_FALSE(isSubmittedClass("borrower"));
  EXPECT_FALSE(checkSubmission({"infer", "contract infer {}", {}, {}, "borrower"}, why));
  EXPECT_EQ(why, "class 'borrower' is not guaranteed or opportunistic");
}

TEST(ClusterKeys, DrainRoundTripAndMalformedDrains) {
  EXPECT_EQ(drainKey("node1"), "/mscale/drains/node1");
  for (bool force : {false, true})
    for (bool timedOut : {false, true}) {
      Drain d{9, 1764950400000, 1764950460000, force, timedOut};
      std::string why;
      std::optional<Drain> back = decodeDrain(encodeDrain(d), why);
      ASSERT_TRUE(back) << why;
      EXPECT_EQ(*back, d);
    }
  std::string why;
  const std::string good = encodeDrain({9, 100, 200, false, false});
  EXPECT_FALSE(decodeDrain("", why));
  EXPECT_NE(why.find("no 'leader-rev N' line"), std::string::npos) << why;
  EXPECT_FALSE(decodeDrain(good + "color blue\n", why));
  EXPECT_NE(why.find("'color blue' does not read"), std::string::npos) << why;
  EXPECT_FALSE(decodeDrain(encodeDrain({0, 100, 200, false, false}), why));
  EXPECT_FALSE(decodeDrain(encodeDrain({9, 300, 200, false, false}), why));
  EXPECT_NE(why.find("before its start"), std::string::npos) << why;
  std::string badState = good;
  badState.replace(badState.find("state draining"), 14, "state paused");
  EXPECT_FALSE(decodeDrain(badState, why));
  std::string noForce = good;
  noForce.erase(noForce.find("force no\n"), 9);
  EXPECT_FALSE(decodeDrain(noForce, why));
  EXPECT_NE(why.find("'force yes|no'"), std::string::npos) << why;
}
