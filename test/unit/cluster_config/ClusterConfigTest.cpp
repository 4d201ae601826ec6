// The cluster config's parser (cluster/config): every key read, and every kind of bad input an
// operator can write refused with ERR_CLUSTER_010 at its line, with carets.
#include "cluster/config/ClusterConfig.h"

#include <gtest/gtest.h>

#include <string>

namespace msc::cluster {
namespace {

struct Parsed {
  std::optional<ClusterConfig> config;
  std::string printed;
  std::vector<std::string> codes;
};

Parsed parse(const std::string &text) {
  ConfigSource source("cluster-config.yaml", text);
  Parsed p;
  p.config = parseClusterConfig(source);
  p.printed = source.printed();
  for (const etcd::Status &s : source.errors())
    p.codes.push_back(etcd::codeName(s.code));
  return p;
}

TEST(ClusterConfig, EveryKey) {
  Parsed p = parse("cluster: booster\n"
                   "scaling:\n"
                   "  affinity_policy: numa_first\n"
                   "  cross_domain_io: false\n"
                   "pcie_domains:\n"
                   "  reserved:\n"
                   "    - { node: \"*\", domain: \"0000:00\" }   # boot NVMe, management NIC\n"
                   "    - node: jwb0004\n"
                   "      domain: \"0000:e0\"\n"
                   "agents:\n"
                   "  contract_cache_ttl: 30s\n");
  ASSERT_TRUE(p.config) << p.printed;
  EXPECT_EQ(p.config->cluster, "booster");
  EXPECT_EQ(p.config->describe(), "cluster config 'booster'");
  EXPECT_EQ(p.config->affinityPolicy, "numa_first");
  EXPECT_EQ(p.config->crossDomainIo, false);
  ASSERT_EQ(p.config->reserved.size(), 2u);
  EXPECT_EQ(p.config->reserved[0].node, "*");
  EXPECT_EQ(p.config->reserved[0].domain, (PciBus{0, 0x00}));
  EXPECT_EQ(p.config->reserved[0].domainAt.line, 7u);
  EXPECT_EQ(p.config->reserved[1].node, "jwb0004");
  EXPECT_EQ(p.config->reserved[1].domain, (PciBus{0, 0xe0}));
  EXPECT_EQ(p.config->reserved[1].nodeAt.line, 8u);
  EXPECT_EQ(p.config->contractCacheTtlNs, 30ull * 1000000000);
  EXPECT_EQ(p.config->reservedOn("jwb0004"), (std::vector<PciBus>{{0, 0x00}, {0, 0xe0}}));
  EXPECT_EQ(p.config->reservedOn("jwb0005"), (std::vector<PciBus>{{0, 0x00}}));
}

TEST(ClusterConfig, OnlyTheNameIsRequired) {
  Parsed p = parse("cluster: c1\n");
  ASSERT_TRUE(p.config) << p.printed;
  EXPECT_FALSE(p.config->affinityPolicy);
  EXPECT_FALSE(p.config->crossDomainIo);
  EXPECT_TRUE(p.config->reserved.empty());
  EXPECT_FALSE(p.config->contractCacheTtlNs);
  Parsed missing = parse("scaling: { cross_domain_io: true }\n");
  EXPECT_FALSE(missing.config);
  EXPECT_NE(missing.printed.find("error[ERR_CLUSTER_010]: invalid cluster config: the key 'cluster' (the cluster's "
                                 "name) is missing"),
            std::string::npos)
      << missing.printed;
  EXPECT_FALSE(parse("").config);
}

TEST(ClusterConfig, PoliciesAreTheContractFieldsChoices) {
  EXPECT_EQ(affinityPolicies(), (std::vector<llvm::StringRef>{"pcie_domain_first", "numa_first", "none"}));
  for (llvm::StringRef policy : affinityPolicies())
    EXPECT_TRUE(parse("cluster: c\nscaling: { affinity_policy: " + policy.str() + " }\n").config) << policy.str();
}

TEST(ClusterConfig, UnknownKeyWithCaretsAndSuggestion) {
  Parsed p = parse("cluster: booster\nscaling:\n  afinity_policy: numa_first\n");
  EXPECT_FALSE(p.config);
  EXPECT_EQ(p.codes, std::vector<std::string>{"ERR_CLUSTER_010"});
  EXPECT_EQ(p.printed, "cluster-config.yaml:3:3: error[ERR_CLUSTER_010]: invalid cluster config: unknown key "
                       "'afinity_policy'\n"
                       "  afinity_policy: numa_first\n"
                       "  ^~~~~~~~~~~~~~\n"
                       "cluster-config.yaml:3:3: note: did you mean 'affinity_policy'?\n"
                       "  afinity_policy: numa_first\n"
                       "  ^~~~~~~~~~~~~~\n");
}

TEST(ClusterConfig, BadValues) {
  Parsed policy = parse("cluster: c\nscaling:\n  affinity_policy: numa_frist\n");
  EXPECT_NE(policy.printed.find("cluster-config.yaml:3:20: error[ERR_CLUSTER_010]: invalid cluster config: "
                                "scaling.affinity_policy is 'numa_frist', expected one of pcie_domain_first, "
                                "numa_first, none\n  affinity_policy: numa_frist\n                   ^~~~~~~~~~\n"),
            std::string::npos)
      << policy.printed;
  EXPECT_NE(policy.printed.find("note: did you mean 'numa_first'?"), std::string::npos) << policy.printed;
  Parsed cross = parse("cluster: c\nscaling: { cross_domain_io: maybe }\n");
  EXPECT_NE(cross.printed.find(":2:29: error[ERR_CLUSTER_010]: invalid cluster config: scaling.cross_domain_io is "
                               "'maybe', expected true or false"),
            std::string::npos)
      << cross.printed;
  Parsed ttl = parse("cluster: c\nagents: { contract_cache_ttl: soon }\n");
  EXPECT_NE(ttl.printed.find("agents.contract_cache_ttl is 'soon', expected a duration"), std::string::npos)
      << ttl.printed;
  EXPECT_NE(parse("cluster: c\nagents: { contract_cache_ttl: 90000s }\n").printed.find("more than a day"),
            std::string::npos);
  EXPECT_TRUE(parse("cluster: c\nagents: { contract_cache_ttl: 0s }\n").config);
  Parsed name = parse("cluster: \"my cluster\"\n");
  EXPECT_NE(name.printed.find("'my cluster' is not a cluster name"), std::string::npos) << name.printed;
  // A section of the wrong kind: YAML I/O's own words, still coded and placed.
  Parsed kind = parse("cluster: c\nscaling: fast\n");
  EXPECT_NE(kind.printed.find("cluster-config.yaml:2:10: error[ERR_CLUSTER_010]: invalid cluster config: "),
            std::string::npos)
      << kind.printed;
}

TEST(ClusterConfig, WhichVerdictsCordonANode) {
  Parsed p = parse("cluster: c\nhealth:\n  cordon_on: [failed, degraded]\n");
  ASSERT_TRUE(p.config) << p.printed;
  EXPECT_EQ(p.config->cordonOn, (std::vector<std::string>{"failed", "degraded"}));
  EXPECT_TRUE(parse("cluster: c\n").config->cordonOn.empty()) << "nothing is cordoned unless the config says so";
  Parsed healthy = parse("cluster: c\nhealth: { cordon_on: [healthy] }\n");
  EXPECT_NE(healthy.printed.find(":2:23: error[ERR_CLUSTER_010]: invalid cluster config: health.cordon_on holds "
                                 "'healthy', expected degraded or failed"),
            std::string::npos)
      << healthy.printed;
  EXPECT_NE(parse("cluster: c\nhealth: { cordon_on: [failed, failed] }\n").printed.find("'failed' twice"),
            std::string::npos);
  EXPECT_NE(parse("cluster: c\nhealth: { cordon_onn: [failed] }\n").printed.find("did you mean 'cordon_on'?"),
            std::string::npos);
}

TEST(ClusterConfig, WhichVerdictsDrainANodeAndByWhen) {
  Parsed p = parse("cluster: c\nhealth:\n  drain_on: [failed]\n  drain_deadline: 30min\n");
  ASSERT_TRUE(p.config) << p.printed;
  EXPECT_EQ(p.config->drainOn, (std::vector<std::string>{"failed"}));
  EXPECT_EQ(p.config->drainDeadlineNs, 1800ull * 1000000000);
  Parsed plain = parse("cluster: c\n");
  EXPECT_TRUE(plain.config->drainOn.empty()) << "nothing is drained unless the config says so";
  EXPECT_EQ(plain.config->drainDeadlineNs, 600ull * 1000000000) << "the CLI's default";
  EXPECT_NE(parse("cluster: c\nhealth: { drain_on: [sick] }\n").printed.find(
                "health.drain_on holds 'sick', expected degraded or failed"),
            std::string::npos);
  EXPECT_NE(parse("cluster: c\nhealth: { drain_on: [degraded, degraded] }\n").printed.find("'degraded' twice"),
            std::string::npos);
  Parsed soon = parse("cluster: c\nhealth: { drain_on: [failed], drain_deadline: soon }\n");
  EXPECT_FALSE(soon.config);
  EXPECT_NE(soon.printed.find("health.drain_deadline is 'soon', expected a duration of at least 1ms such as 10min"),
            std::string::npos)
      << soon.printed;
  EXPECT_NE(parse("cluster: c\nhealth: { drain_deadline: 8d }\n").printed.find("expected a duration"),
            std::string::npos)
      << "days are not a unit of the language";
  EXPECT_NE(parse("cluster: c\nhealth: { drain_deadline: 200h }\n").printed.find("more than 7 days"),
            std::string::npos);
}

TEST(ClusterConfig, TheLemonRuleIsAFaultCountWithinAWindow) {
  Parsed p = parse("cluster: c\nhealth:\n  lemon: { faults: 3, within: 24h }\n");
  ASSERT_TRUE(p.config) << p.printed;
  ASSERT_TRUE(p.config->lemon);
  EXPECT_EQ(p.config->lemon->faults, 3u);
  EXPECT_EQ(p.config->lemon->withinNs, 24ull * 3600 * 1000000000);
  EXPECT_FALSE(parse("cluster: c\n").config->lemon) << "no node is a lemon unless the config says so";

  auto error = [](const std::string &text) {
    Parsed bad = parse(text);
    EXPECT_FALSE(bad.config) << text;
    EXPECT_EQ(bad.codes, std::vector<std::string>{"ERR_CLUSTER_010"}) << bad.printed;
    return bad.printed;
  };
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 3 } }\n").find("health.lemon needs within"),
            std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { within: 1h } }\n").find("health.lemon needs faults"),
            std::string::npos);
  std::string zero = error("cluster: c\nhealth: { lemon: { faults: 0, within: 1h } }\n");
  EXPECT_NE(zero.find(":2:28: error[ERR_CLUSTER_010]: invalid cluster config: health.lemon.faults is '0', expected a "
                      "count from 1 to 64"),
            std::string::npos)
      << zero;
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 65, within: 1h } }\n").find("from 1 to 64"),
            std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: three, within: 1h } }\n").find("'three'"),
            std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 3, within: soon } }\n")
                .find("health.lemon.within is 'soon', expected a duration such as 24h or 90min"),
            std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 3, within: 0s } }\n").find("'0s'"), std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 3, within: 800h } }\n").find("'800h', more than 30 days"),
            std::string::npos);
  EXPECT_NE(error("cluster: c\nhealth: { lemon: { faults: 3, withn: 1h } }\n").find("did you mean 'within'?"),
            std::string::npos);
}

TEST(ClusterConfig, BadDomains) {
  Parsed syntax = parse("cluster: c\npcie_domains:\n  reserved:\n    - { node: \"*\", domain: \"00:zz\" }\n");
  EXPECT_NE(syntax.printed.find("cluster-config.yaml:4:29: error[ERR_CLUSTER_010]: invalid cluster config: '00:zz' is "
                                "not a PCIe domain (DDDD:BB, e.g. 0000:40)"),
            std::string::npos)
      << syntax.printed;
  EXPECT_NE(syntax.printed.find("^~~~~"), std::string::npos) << syntax.printed;
  Parsed device = parse("cluster: c\npcie_domains:\n  reserved:\n    - { node: \"*\", domain: \"0000:40:00.0\" }\n");
  EXPECT_NE(device.printed.find("'0000:40:00.0' is a device address, not a PCIe domain"), std::string::npos)
      << device.printed;
  Parsed node = parse("cluster: c\npcie_domains:\n  reserved:\n    - { node: \"a/b\", domain: \"0000:40\" }\n");
  EXPECT_NE(node.printed.find(":4:16: error[ERR_CLUSTER_010]: invalid cluster config: 'a/b' is not a node name"),
            std::string::npos)
      << node.printed;
  Parsed half = parse("cluster: c\npcie_domains:\n  reserved:\n    - { domain: \"0000:40\" }\n");
  EXPECT_NE(half.printed.find("needs both 'node'"), std::string::npos) << half.printed;
}

TEST(ClusterConfig, DuplicateEntries) {
  Parsed twice = parse("cluster: c\npcie_domains:\n  reserved:\n"
                       "    - { node: n1, domain: \"0000:40\" }\n"
                       "    - { node: n1, domain: \"0000:40\" }\n");
  EXPECT_FALSE(twice.config);
  EXPECT_NE(twice.printed.find("cluster-config.yaml:5:28: error[ERR_CLUSTER_010]: invalid cluster config: PCIe domain "
                               "0000:40 is reserved twice for node 'n1'"),
            std::string::npos)
      << twice.printed;
  EXPECT_NE(twice.printed.find("cluster-config.yaml:4:28: note: first reserved here"), std::string::npos)
      << twice.printed;
  Parsed overlap = parse("cluster: c\npcie_domains:\n  reserved:\n"
                         "    - { node: \"*\", domain: \"0000:40\" }\n"
                         "    - { node: n1, domain: \"0000:40\" }\n");
  EXPECT_NE(overlap.printed.find("note: reserved here for every node"), std::string::npos) << overlap.printed;
  // The same domain on two different nodes is two reservations, not one twice.
  EXPECT_TRUE(parse("cluster: c\npcie_domains:\n  reserved:\n"
                    "    - { node: n1, domain: \"0000:40\" }\n"
                    "    - { node: n2, domain: \"0000:40\" }\n")
                  .config);
  Parsed key = parse("cluster: c\nscaling:\n  cross_domain_io: true\n  cross_domain_io: false\n");
  EXPECT_FALSE(key.config);
  EXPECT_EQ(key.codes, std::vector<std::string>{"ERR_CLUSTER_010"}) << key.printed;
  EXPECT_NE(key.printed.find("cluster-config.yaml:4:3: error[ERR_CLUSTER_010]: invalid cluster config: the key "
                             "'cross_domain_io' is given twice"),
            std::string::npos)
      << key.printed;
  EXPECT_NE(key.printed.find("cluster-config.yaml:3:3: note: first given here"), std::string::npos) << key.printed;
}

TEST(ClusterConfig, SyntaxAndShape) {
  Parsed syntax = parse("cluster: [c\n");
  EXPECT_FALSE(syntax.config);
  EXPECT_EQ(syntax.codes.size(), 1u) << syntax.printed;
  EXPECT_NE(syntax.printed.find("error[ERR_CLUSTER_010]"), std::string::npos) << syntax.printed;
  EXPECT_FALSE(parse("cluster: c\n---\ncluster: d\n").config);
  EXPECT_NE(parse(std::string(100, '[')).printed.find("nesting deeper than 64"), std::string::npos);
  EXPECT_NE(parse("cluster: c\n#" + std::string(kMaxClusterConfigBytes, 'x') + "\n").printed.find("bytes, more than"),
            std::string::npos);
}

TEST(ClusterConfig, SpansFindTheirTextAgain) {
  ConfigSource source("c.yaml", "cluster: c\npcie_domains:\n  reserved:\n    - { node: n1, domain: \"0000:40\" }\n");
  std::optional<ClusterConfig> config = parseClusterConfig(source);
  ASSERT_TRUE(config) << source.printed();
  // A problem found later (mscale-deploy: the node has no such domain) is shown at the entry.
  source.error(etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_013, {"0000:40", "n1", "0000:00"}),
               config->reserved[0].domainAt);
  EXPECT_EQ(source.printed(), "c.yaml:4:28: error[ERR_CLUSTER_013]: the cluster config reserves PCIe domain 0000:40 "
                              "on node 'n1', which has no such domain (its domains: 0000:00)\n"
                              "    - { node: n1, domain: \"0000:40\" }\n"
                              "                           ^~~~~~~\n");
}

TEST(ClusterConfig, SpansSurviveCarriageReturnLineEnds) {
  // YAML reads a lone '\r' as a line break; the spans count lines at '\n' only, both ways, so an
  // entry after one is still found again (the fuzzer's case: a config saved with old Mac line ends).
  ConfigSource source("c.yaml", "cluster: c\npcie_domains:\n  reserved:\r    - { node: n1, domain: \"0000:40\" }\n");
  std::optional<ClusterConfig> config = parseClusterConfig(source);
  ASSERT_TRUE(config) << source.printed();
  ASSERT_EQ(config->reserved.size(), 1u);
  llvm::SMRange at = source.rangeOf(config->reserved[0].domainAt);
  ASSERT_TRUE(at.isValid());
  EXPECT_EQ(llvm::StringRef(at.Start.getPointer(), at.End.getPointer() - at.Start.getPointer()), "0000:40");
}

} // namespace
} // namespace msc::cluster
