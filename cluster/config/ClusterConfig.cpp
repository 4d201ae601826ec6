#include "cluster/config/ClusterConfig.h"

#include "cluster/keys/Keys.h"
#include "ir/Schema.h"
#include "support/Diagnostic.h"
#include "support/Quantity.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/SmallString.h>
#include <llvm/Support/YAMLParser.h>
#include <llvm/Support/YAMLTraits.h>

#include <map>
#include <utility>

namespace msc::cluster::configdoc {

// A scalar as written, with where it was: values are checked after the parse, with carets.
struct Scalar {
  std::string text;
  llvm::SMLoc loc;
  size_t length = 0;
  llvm::SMRange range() const {
    return loc.isValid() ? llvm::SMRange(loc, llvm::SMLoc::getFromPointer(loc.getPointer() + length))
                         : llvm::SMRange();
  }
};
struct Scaling {
  std::optional<Scalar> affinity_policy, cross_domain_io;
};
struct Reserved {
  std::optional<Scalar> node, domain;
};
struct PcieDomains {
  std::vector<Reserved> reserved;
};
struct Agents {
  std::optional<Scalar> contract_cache_ttl;
};
struct Lemon {
  std::optional<Scalar> faults, within;
};
struct Health {
  std::optional<std::vector<Scalar>> cordon_on, drain_on;
  std::optional<Scalar> drain_deadline;
  std::optional<Lemon> lemon;
};
struct ConfigDoc {
  std::optional<Scalar> cluster;
  std::optional<Scaling> scaling;
  std::optional<PcieDomains> pcie_domains;
  std::optional<Agents> agents;
  std::optional<Health> health;
};

} // namespace msc::cluster::configdoc

using namespace msc::cluster::configdoc;

LLVM_YAML_IS_SEQUENCE_VECTOR(Reserved)
LLVM_YAML_IS_FLOW_SEQUENCE_VECTOR(Scalar)

namespace llvm::yaml {
template <> struct ScalarTraits<Scalar> {
  static void output(const Scalar &v, void *, raw_ostream &os) { os << v.text; }
  static StringRef input(StringRef s, void *, Scalar &v) {
    v.text = s.str();
    // A plain or simply quoted scalar is a slice of the text; one with escapes is not, and its
    // errors point at the file as a whole.
    v.loc = SMLoc::getFromPointer(s.data());
    v.length = s.size();
    return {};
  }
  static QuotingType mustQuote(StringRef) { return QuotingType::Double; }
};
template <> struct MappingTraits<Scaling> {
  static void mapping(IO &io, Scaling &s) {
    io.mapOptional("affinity_policy", s.affinity_policy);
    io.mapOptional("cross_domain_io", s.cross_domain_io);
  }
};
template <> struct MappingTraits<Reserved> {
  static void mapping(IO &io, Reserved &r) {
    io.mapOptional("node", r.node);
    io.mapOptional("domain", r.domain);
  }
};
template <> struct MappingTraits<PcieDomains> {
  static void mapping(IO &io, PcieDomains &p) { io.mapOptional("reserved", p.reserved); }
};
template <> struct MappingTraits<Agents> {
  static void mapping(IO &io, Agents &a) { io.mapOptional("contract_cache_ttl", a.contract_cache_ttl); }
};
template <> struct MappingTraits<Lemon> {
  static void mapping(IO &io, Lemon &l) {
    io.mapOptional("faults", l.faults);
    io.mapOptional("within", l.within);
  }
};
template <> struct MappingTraits<Health> {
  static void mapping(IO &io, Health &h) {
    io.mapOptional("cordon_on", h.cordon_on);
    io.mapOptional("drain_on", h.drain_on);
    io.mapOptional("drain_deadline", h.drain_deadline);
    io.mapOptional("lemon", h.lemon);
  }
};
template <> struct MappingTraits<ConfigDoc> {
  static void mapping(IO &io, ConfigDoc &d) {
    io.mapOptional("cluster", d.cluster);
    io.mapOptional("scaling", d.scaling);
    io.mapOptional("pcie_domains", d.pcie_domains);
    io.mapOptional("agents", d.agents);
    io.mapOptional("health", d.health);
  }
};
} // namespace llvm::yaml

namespace msc::cluster {

namespace {

using etcd::ErrorCode;

// Every key of the format, for "did you mean" on an unknown one.
const llvm::StringRef kKeys[] = {"cluster",     "scaling",  "affinity_policy",    "cross_domain_io", "pcie_domains",
                                 "reserved",    "node",     "domain",             "agents",          "contract_cache_ttl",
                                 "health",      "cordon_on", "lemon",              "faults",          "within",
                                 "drain_on",    "drain_deadline"};

// The lemon rule counts what a node's history keeps (Keys.h), over at most a month.
constexpr uint64_t kMaxNodeFaultsCounted = kNodeFaultsKept;
constexpr uint64_t kMaxLemonWindowNs = 30ull * 24 * 3600 * 1000000000;
// A drain's deadline, as `mscale-cli cluster drain --deadline` takes it: 1 ms to 7 days.
constexpr uint64_t kMaxDrainDeadlineNs = 7ull * 24 * 3600 * 1000000000;
// A day: a cache entry older than that is no cache but a stale copy.
constexpr uint64_t kMaxCacheTtlNs = 24ull * 3600 * 1000000000;

struct Parse {
  ConfigSource &source;
  void bad(const std::string &why, llvm::SMRange at = {}) {
    source.error(etcd::Status::make(ErrorCode::ERR_CLUSTER_010, {why}), at);
  }
};

void yamlDiagnostic(const llvm::SMDiagnostic &d, void *context) {
  Parse &parse = *static_cast<Parse *>(context);
  if (d.getKind() != llvm::SourceMgr::DK_Error)
    return;
  llvm::SMLoc at = d.getLoc();
  llvm::SMRange range(at, at);
  llvm::StringRef message = d.getMessage();
  // "unknown key 'scalng'": carets under the key, and the key it probably is.
  std::optional<std::string> near;
  if (message.consume_front("unknown key '") && message.consume_back("'")) {
    range.End = llvm::SMLoc::getFromPointer(at.getPointer() + message.size());
    near = closestMatch(message, kKeys);
  }
  parse.bad(d.getMessage().str(), range);
  if (near)
    parse.source.note("did you mean '" + *near + "'?", range);
}

// LLVM's YAML parser recurses on nesting; a value written around the leader may be anything.
bool tooDeep(llvm::StringRef text) {
  unsigned depth = 0;
  for (char c : text)
    if ((c == '[' || c == '{') && ++depth > 64)
      return true;
    else if ((c == ']' || c == '}') && depth)
      --depth;
  for (llvm::StringRef rest = text; !rest.empty();) {
    auto [line, next] = rest.split('\n');
    if (line.size() - line.ltrim(" -").size() > 256)
      return true;
    rest = next;
  }
  return false;
}

// YAML I/O keeps the last of two equal keys in a mapping without a word; an operator who wrote
// `cluster:` twice meant one of them, and which one is not ours to guess.
void refuseDuplicateKeys(llvm::yaml::Node *node, Parse &parse) {
  if (auto *mapping = llvm::dyn_cast_or_null<llvm::yaml::MappingNode>(node)) {
    std::map<std::string, llvm::SMRange> keys;
    for (llvm::yaml::KeyValueNode &kv : *mapping) {
      if (auto *key = llvm::dyn_cast_or_null<llvm::yaml::ScalarNode>(kv.getKey())) {
        llvm::SmallString<32> storage;
        std::string name = key->getValue(storage).str();
        auto [first, fresh] = keys.emplace(name, key->getSourceRange());
        if (!fresh) {
          parse.bad("the key '" + name + "' is given twice", key->getSourceRange());
          parse.source.note("first given here", first->second);
        }
      }
      refuseDuplicateKeys(kv.getValue(), parse);
    }
  } else if (auto *sequence = llvm::dyn_cast_or_null<llvm::yaml::SequenceNode>(node)) {
    for (llvm::yaml::Node &item : *sequence)
      refuseDuplicateKeys(&item, parse);
  }
}

bool isName(llvm::StringRef name) {
  if (name.empty() || name.size() > 253 || !llvm::isAlnum(name.front()))
    return false;
  return llvm::all_of(name, [](char c) { return llvm::isAlnum(c) || c == '.' || c == '_' || c == '-'; });
}

std::optional<bool> boolean(llvm::StringRef text) {
  if (text == "true")
    return true;
  if (text == "false")
    return false;
  return std::nullopt;
}

} // namespace

std::vector<llvm::StringRef> affinityPolicies() {
  std::vector<llvm::StringRef> out;
  for (const ir::FieldSchema &f : ir::allFields())
    if (f.section == "policy" && f.name == "affinity_policy")
      for (llvm::StringRef rest = f.choices; !rest.empty();) {
        auto [choice, next] = rest.split('|');
        out.push_back(choice);
        rest = next;
      }
  return out;
}

std::vector<PciBus> ClusterConfig::reservedOn(llvm::StringRef node) const {
  std::vector<PciBus> out;
  for (const ReservedDomain &r : reserved)
    if ((r.node == kEveryNode || r.node == node) && !llvm::is_contained(out, r.domain))
      out.push_back(r.domain);
  return out;
}

std::optional<ClusterConfig> parseClusterConfig(ConfigSource &source) {
  Parse parse{source};
  llvm::StringRef text = source.text();
  if (text.size() > kMaxClusterConfigBytes) {
    parse.bad(std::to_string(text.size()) + " bytes, more than the " + std::to_string(kMaxClusterConfigBytes) +
              " a cluster config may have");
    return std::nullopt;
  }
  if (tooDeep(text)) {
    parse.bad("nesting deeper than 64 levels or 256 columns");
    return std::nullopt;
  }
  // A text of blanks and comments has no YAML document at all: a config without its name.
  bool content = false;
  for (llvm::StringRef rest = text; !rest.empty() && !content;) {
    auto [line, next] = rest.split('\n');
    line = line.trim();
    content = !line.empty() && !line.starts_with("#");
    rest = next;
  }
  if (!content) {
    parse.bad("the file is empty; a cluster config has at least 'cluster: NAME'");
    return std::nullopt;
  }
  ConfigDoc doc;
  {
    llvm::yaml::Input in(text, nullptr, yamlDiagnostic, &parse);
    in >> doc;
    if (in.error() && !source.failed())
      parse.bad(in.error().message());
  }
  if (!source.failed()) {
    // A second look at the same text, as nodes: keys given twice, documents after the first (YAML
    // I/O reads the first alone; its own way to ask for the next one crashes on some texts).
    llvm::SourceMgr quiet;
    quiet.setDiagHandler([](const llvm::SMDiagnostic &, void *) {});
    llvm::yaml::Stream stream(text, quiet);
    unsigned documents = 0;
    for (llvm::yaml::Document &document : stream)
      if (++documents == 1)
        refuseDuplicateKeys(document.getRoot(), parse);
    if (documents > 1)
      parse.bad("more than one YAML document; a cluster config is one");
  }
  if (source.failed())
    return std::nullopt;

  ClusterConfig config;
  if (!doc.cluster || doc.cluster->text.empty()) {
    parse.bad("the key 'cluster' (the cluster's name) is missing", doc.cluster ? doc.cluster->range() : llvm::SMRange());
  } else if (!isName(doc.cluster->text)) {
    parse.bad("'" + doc.cluster->text + "' is not a cluster name (a letter or digit, then letters, digits, '.', '_' "
                                        "or '-')",
              doc.cluster->range());
  } else {
    config.cluster = doc.cluster->text;
  }

  if (doc.scaling && doc.scaling->affinity_policy) {
    const Scalar &v = *doc.scaling->affinity_policy;
    std::vector<llvm::StringRef> choices = affinityPolicies();
    if (llvm::is_contained(choices, v.text)) {
      config.affinityPolicy = v.text;
    } else {
      parse.bad("scaling.affinity_policy is '" + v.text + "', expected one of " + llvm::join(choices, ", "), v.range());
      if (std::optional<std::string> near = closestMatch(v.text, choices))
        source.note("did you mean '" + *near + "'?", v.range());
    }
  }
  if (doc.scaling && doc.scaling->cross_domain_io) {
    const Scalar &v = *doc.scaling->cross_domain_io;
    if (std::optional<bool> b = boolean(v.text))
      config.crossDomainIo = *b;
    else
      parse.bad("scaling.cross_domain_io is '" + v.text + "', expected true or false", v.range());
  }

  if (doc.pcie_domains) {
    // (node, domain) -> where it was first reserved: a second entry is a mistake (a copy edited for
    // another node whose name was not changed), not a harmless repetition.
    std::map<std::pair<std::string, PciBus>, llvm::SMRange> seen;
    for (const Reserved &entry : doc.pcie_domains->reserved) {
      if (!entry.node || !entry.domain) {
        const std::optional<Scalar> &present = entry.node ? entry.node : entry.domain;
        parse.bad("a reserved PCIe domain needs both 'node' (a node's name or \"*\") and 'domain' (e.g. \"0000:40\")",
                  present ? present->range() : llvm::SMRange());
        continue;
      }
      const Scalar &node = *entry.node, &domain = *entry.domain;
      bool ok = true;
      if (node.text != kEveryNode && !isName(node.text)) {
        parse.bad("'" + node.text + "' is not a node name (\"*\" for every node)", node.range());
        ok = false;
      }
      std::string why;
      std::optional<ParsedPci> pci = parsePci(domain.text, &why);
      if (!pci) {
        parse.bad("'" + domain.text + "' is not a PCIe domain (DDDD:BB, e.g. 0000:40): " + why, domain.range());
        ok = false;
      } else if (pci->form != ParsedPci::Form::BusOnly) {
        PciBus root{pci->address.domain, pci->address.bus};
        parse.bad("'" + domain.text + "' is a device address, not a PCIe domain; the domain is its host bridge's "
                                      "root bus as `pcie_domains` of the node's topology lists it (e.g. " +
                      root.str() + " when that bus is a root bus)",
                  domain.range());
        ok = false;
      }
      if (!ok)
        continue;
      PciBus bus{pci->address.domain, pci->address.bus};
      // An entry for every node and one for a single node overlap as much as two equal ones.
      auto first = llvm::find_if(seen, [&](const auto &earlier) {
        const auto &[earlierNode, earlierBus] = earlier.first;
        return earlierBus == bus && (earlierNode == node.text || earlierNode == kEveryNode || node.text == kEveryNode);
      });
      if (first != seen.end()) {
        const std::string &earlierNode = first->first.first;
        parse.bad("PCIe domain " + bus.str() + " is reserved twice for node '" +
                      (node.text == kEveryNode ? earlierNode : node.text) + "'",
                  domain.range());
        source.note(earlierNode == node.text ? std::string("first reserved here")
                                             : "reserved here for " + (earlierNode == kEveryNode
                                                                          ? std::string("every node")
                                                                          : "node '" + earlierNode + "'"),
                    first->second);
        continue;
      }
      seen.emplace(std::make_pair(node.text, bus), domain.range());
      config.reserved.push_back({node.text, bus, source.spanOf(node.range()), source.spanOf(domain.range())});
    }
  }

  if (doc.agents && doc.agents->contract_cache_ttl) {
    const Scalar &v = *doc.agents->contract_cache_ttl;
    std::optional<uint64_t> ns = parseDurationNs(v.text);
    if (!ns)
      parse.bad("agents.contract_cache_ttl is '" + v.text + "', expected a duration such as 30s, 500ms or 2min",
                v.range());
    else if (*ns > kMaxCacheTtlNs)
      parse.bad("agents.contract_cache_ttl is '" + v.text + "', more than a day", v.range());
    else
      config.contractCacheTtlNs = *ns;
  }
  auto verdicts = [&](const std::optional<std::vector<Scalar>> &list, const char *key, std::vector<std::string> &out) {
    for (const Scalar &v : list ? *list : std::vector<Scalar>{}) {
      if (v.text != "degraded" && v.text != "failed")
        parse.bad(std::string("health.") + key + " holds '" + v.text + "', expected degraded or failed", v.range());
      else if (llvm::is_contained(out, v.text))
        parse.bad(std::string("health.") + key + " holds '" + v.text + "' twice", v.range());
      else
        out.push_back(v.text);
    }
  };
  if (doc.health) {
    verdicts(doc.health->cordon_on, "cordon_on", config.cordonOn);
    verdicts(doc.health->drain_on, "drain_on", config.drainOn);
  }
  if (doc.health && doc.health->drain_deadline) {
    const Scalar &v = *doc.health->drain_deadline;
    std::optional<uint64_t> ns = parseDurationNs(v.text);
    if (!ns || *ns < 1000000)
      parse.bad("health.drain_deadline is '" + v.text + "', expected a duration of at least 1ms such as 10min",
                v.range());
    else if (*ns > kMaxDrainDeadlineNs)
      parse.bad("health.drain_deadline is '" + v.text + "', more than 7 days", v.range());
    else
      config.drainDeadlineNs = *ns;
  }
  if (doc.health && doc.health->lemon) {
    const Lemon &l = *doc.health->lemon;
    uint64_t faults = 0;
    if (!l.faults || !l.within)
      parse.bad(std::string("health.lemon needs ") + (!l.faults ? "faults (how many)" : "within (a duration such as 24h)"));
    if (l.faults && (!llvm::to_integer(l.faults->text, faults, 10) || faults < 1 || faults > kMaxNodeFaultsCounted))
      parse.bad("health.lemon.faults is '" + l.faults->text + "', expected a count from 1 to " +
                    std::to_string(kMaxNodeFaultsCounted),
                l.faults->range());
    std::optional<uint64_t> ns = l.within ? parseDurationNs(l.within->text) : std::nullopt;
    if (l.within && (!ns || *ns == 0))
      parse.bad("health.lemon.within is '" + l.within->text + "', expected a duration such as 24h or 90min",
                l.within->range());
    else if (l.within && *ns > kMaxLemonWindowNs)
      parse.bad("health.lemon.within is '" + l.within->text + "', more than 30 days", l.within->range());
    if (l.faults && l.within && faults >= 1 && faults <= kMaxNodeFaultsCounted && ns && *ns && *ns <= kMaxLemonWindowNs)
      config.lemon = ClusterConfig::Lemon{uint32_t(faults), *ns};
  }
  if (source.failed())
    return std::nullopt;
  return config;
}

} // namespace msc::cluster
