// Reading a cluster description node by node: where the text is cut, that nodes of one machine shape
// share a graph, and that the result is always what reading the whole document gives, diagnostics
// included, on layouts that are cut and on layouts that only look as if they could be.
#include "HalTestUtil.h"

#include "hal/TopologyYaml.h"
#include "hal/detail/ClusterYamlReading.h"
#include "hal/detail/NodeSequence.h"

using namespace msc;
using namespace msc::hal;
using namespace msc::hal::test;
using msc::hal::detail::cutNodeSequence;
using msc::hal::detail::readClusterByNode;
using msc::hal::detail::readClusterWhole;

namespace {

const char *const kTwoShapes = R"(# two machine shapes, the first three times
cluster: pod
nodes:
  - name: a0
    numa_nodes:
      - id: 0
        cpus: "0-3"
  - name: "a1"
    numa_nodes:
      - id: 0
        cpus: "0-3"
  - name: b0
    numa_nodes:
      - id: 0
        cpus: "0-7"
  # a comment between nodes belongs to the node before it
  - name: 'a2'   # and one after a name
    numa_nodes:
      - id: 0
        cpus: "0-3"
)";

struct Read {
  CollectingConsumer consumer;
  DiagnosticEngine diags{nullptr, consumer};
  std::optional<Cluster> cluster;
};

std::unique_ptr<Read> whole(llvm::StringRef text) {
  auto r = std::make_unique<Read>();
  r->cluster = readClusterWhole(text, "c.yaml", r->diags);
  return r;
}

// Whatever the layout, readClusterYaml gives what the whole reading gives.
void expectSameAsWhole(llvm::StringRef text) {
  auto reference = whole(text);
  Read actual;
  actual.cluster = readClusterYaml(text, "c.yaml", actual.diags);
  ASSERT_EQ(actual.cluster.has_value(), reference->cluster.has_value()) << text.str();
  if (reference->cluster) {
    EXPECT_EQ(writeClusterYaml(*actual.cluster), writeClusterYaml(*reference->cluster)) << text.str();
    return;
  }
  ASSERT_EQ(actual.consumer.diags.size(), reference->consumer.diags.size()) << text.str();
  for (size_t i = 0; i < actual.consumer.diags.size(); ++i) {
    EXPECT_EQ(actual.consumer.diags[i].code, reference->consumer.diags[i].code);
    EXPECT_EQ(actual.consumer.diags[i].message, reference->consumer.diags[i].message);
    EXPECT_EQ(actual.consumer.diags[i].loc.line, reference->consumer.diags[i].loc.line);
  }
}

TEST(NodeSequence, CutsEachItemAndFindsItsNameLine) {
  auto seq = cutNodeSequence(kTwoShapes);
  ASSERT_TRUE(seq);
  EXPECT_TRUE(llvm::StringRef(seq->head).ends_with("nodes:\n"));
  ASSERT_EQ(seq->nodes.size(), 4u);
  EXPECT_TRUE(seq->nodes[0].item.starts_with("  - name: a0\n"));
  EXPECT_TRUE(seq->nodes[2].item.ends_with("# a comment between nodes belongs to the node before it\n"));
  for (const auto &node : seq->nodes)
    ASSERT_TRUE(node.named) << node.item.str();
  EXPECT_EQ(seq->nodes[1].named->firstLine, "  - name: \"a1\"\n");
  EXPECT_EQ(seq->nodes[0].named->rest, seq->nodes[1].named->rest);
  EXPECT_EQ(seq->nodes[0].named->rest, seq->nodes[3].named->rest);
  EXPECT_NE(seq->nodes[0].named->rest, seq->nodes[2].named->rest);
}

TEST(NodeSequence, LeavesOtherLayoutsToTheWholeReading) {
  const char *notCut[] = {
      "cluster: pod\nnodes: [ { name: a }, { name: b } ]\n",               // flow sequence
      "nodes:\n  - name: a\ncluster: pod\n",                                // a key after the nodes
      "cluster: pod\r\nnodes:\r\n  - name: a\r\n",                          // CRLF
      "%YAML 1.2\n---\nnodes:\n  - name: a\n",                              // a directive
      "name: lone\nnuma_nodes: []\n",                                       // a node description
      "nodes:\n  -\n    name: a\n",                                         // the item starts a line later
      "nodes:\n  - name: a\n---\nnodes:\n  - name: b\n",                    // a second document
      "nodes:\n  - name: a\n...\n---\nnodes:\n  - name: b\n",               // the same, ended first
      "cluster: \"abc\nnodes:\n  - name: a\n  - name: b\nend\"\n",          // `nodes:` inside a quoted value
  };
  for (const char *text : notCut)
    EXPECT_FALSE(cutNodeSequence(text)) << text;
}

TEST(ClusterByNode, NodesOfOneShapeShareAGraphAndKeepTheirNames) {
  auto cluster = readClusterByNode(kTwoShapes, "c.yaml");
  ASSERT_TRUE(cluster);
  EXPECT_EQ(cluster->name, "pod");
  ASSERT_EQ(cluster->nodes.size(), 4u);
  const char *names[] = {"a0", "a1", "b0", "a2"};
  for (size_t i = 0; i < 4; ++i)
    EXPECT_EQ(cluster->nodes[i].name(), names[i]);
  EXPECT_EQ(&cluster->nodes[0].graph(), &cluster->nodes[1].graph());
  EXPECT_EQ(&cluster->nodes[0].graph(), &cluster->nodes[3].graph());
  EXPECT_NE(&cluster->nodes[0].graph(), &cluster->nodes[2].graph());
  EXPECT_EQ(cluster->nodes[2].pus().size(), 8u);
  expectSameAsWhole(kTwoShapes);
}

// Every recorded machine, each under three names, as the writer lays a cluster out.
TEST(ClusterByNode, TheWritersLayoutReadsAsTheWholeDocumentDoes) {
  Cluster c;
  c.name = "recorded";
  for (const char *file : {"hwloc-24em64t-2n6c2t-pci.xml", "mpibind-g4dnmetal-8xT4.xml", "hwloc-nvidiaDGX2.xml",
                           "psmgmt-jrc0323-jurecadc-gpu-4xA100.xml", "hwloc-power8gpudistances.xml",
                           "psmgmt-dp-intelmax01-flat-xeonmax-hbm.xml"}) {
    auto l = loadFile(fixture(std::string("hwloc-xml/") + file));
    ASSERT_TRUE(l->topo) << file;
    for (int i = 0; i < 3; ++i) {
      c.nodes.push_back(*l->topo);
      c.nodes.back().setName(std::string(file) + "-" + std::to_string(i));
    }
  }
  std::string text = writeClusterYaml(c);
  auto byNode = readClusterByNode(text, "c.yaml");
  ASSERT_TRUE(byNode) << "the writer's layout must be cut";
  EXPECT_EQ(writeClusterYaml(*byNode), text);
  for (size_t i = 0; i < byNode->nodes.size(); ++i)
    EXPECT_EQ(&byNode->nodes[i].graph(), &byNode->nodes[i - i % 3].graph()) << i;
  expectSameAsWhole(text);
}

TEST(ClusterByNode, AgreesWithTheWholeReadingOnEdgeCases) {
  const char *cases[] = {
      // names that are not plain, or that a comment follows
      "nodes:\n  - name: \"x y\"\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n"
      "  - name: 'p''q'  # quoted\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n",
      // a plain name continued on the next, deeper line: not shared, read as YAML reads it
      "nodes:\n  - name: a\n      continued\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n"
      "  - name: b\n      continued\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n",
      // a quoted name left open into the next item
      "nodes:\n  - name: \"a\n  - name: b\"\n",
      // an open flow sequence that the next "- " line is inside
      "nodes:\n  - name: a\n    cores: [ \"0,1\",\n  - \"2,3\" ]\n",
      // an item with only a name, items at column 0, the name last
      "cluster: c\nnodes:\n- name: a\n- name: b\n- numa_nodes: [ { id: 0, cpus: \"0\" } ]\n  name: c\n",
      // a tag, an anchor and an alias in name lines
      "nodes:\n  - name: !!str a\n  - name: &n b\n  - name: *n\n",
      // the head: a document start, comments, a repeated key, a value that is not a string
      "---\n# c\ncluster: x\nnodes: # here\n  - name: a\n",
      "cluster: x\ncluster: y\nnodes:\n  - name: a\n",
      "cluster: [ x ]\nnodes:\n  - name: a\n",
      // an end of document, then comments
      "nodes:\n  - name: a\n  - name: b\n...\n# done\n\n",
      // a carriage return alone is a line break to YAML, not to a reader of lines: here it puts
      // `cpus` at column 0, which ends the sequence
      "nodes:\n  - name: n0\n  - name: n1\n    numa_nodes:\n      - id: 0\n    \rcpus: \"0\"\n",
      "nodes:\n  - name: n0\n  - name: n1\r  - name: n2\n",
      // a name set again further down an item: the last one counts, also for items of its shape
      "cluster: c\nnodes:\n  - name: a\n    name: x\n  - name: b\n    name: x\n",
      "cluster: c\nnodes:\n  - name: a\n    \"name\": a\n  - name: b\n    \"name\": a\n",
      // a quoted `cluster:` value left open over the `nodes:` line
      "cluster: \"pod\nnodes: # \"\n  - name: a\n  - name: b\n",
      "cluster: \"pod\nnodes:\n# \"\n  - name: a\n  - name: b\n",
      // a name that is not one as an item's first line: a value indicator at its end
      "---\ncluster: c\nnodes:\n  - name: 2  ''jj\n  - name: 2  ''jj:\n",
      // names that start with an indicator, or run on into a nested sequence
      "nodes:\n  - name: a\n  - name: -b\n  - name: :c\n  - name: d\n    - e\n",
      // errors in a later node: the whole reading's diagnostics, in its order
      "nodes:\n  - name: a\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n"
      "  - name: b\n    numa_nodes: [ { id: 0, cpus: \"0-x\" } ]\n",
      "nodes:\n  - name: a\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n"
      "  - name: b\n    numa_nodes: [ { id: 0, cpus: \"0\" }, { id: 0, cpus: \"1\" } ]\n"
      "  - name: c\n    numa_nodes: [ { id: 0, cpus: \"0\" } ]\n    nonsense: 1\n",
      // empty items, one of them with a line of spaces (the fuzzer's)
      "---\n# N-\n# een the thr\nnodes:\n  - \n    \n  - \n      \n...\n",
      "nodes:\n  - \n  - \n",
      // items that are a tag or an anchor on nothing: null too (the fuzzer's, again)
      "---\n# N-\n# een the thr\nnodes:\n  - \n   !\n  - \n    !  \n...\n",
      "nodes:\n  - &a\n  - !!null\n",
  };
  for (const char *text : cases) {
    SCOPED_TRACE(text);
    expectSameAsWhole(text);
  }
}

} // namespace
