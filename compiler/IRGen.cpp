// IR generation, resolution half: type-checks every declaration's own block once (each value
// through IRValues), then resolves imports and profile chains and merges them (base first,
// overrides after) with the contracts' roles into an ir::Module, keeping the origin of every value.
#include "compiler/Frontend.h"
#include "compiler/IRValues.h"
#include "ir/FieldDefaults.h"
#include "ir/ValueFormat.h"
#include "ir/WorldSize.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/ADT/StringMap.h>

#include <functional>
#include <map>
#include <set>

namespace msc {

using detail::FieldInfo;
using ir::FieldKind;

namespace {

// The fields each kind of block may set.
#define MSC_FIELD_INFO(NAME, KIND, MIN, MAX, CHOICES, ...) {ir::fieldSpelling(#NAME), FieldKind::KIND, MIN, MAX, CHOICES},
const FieldInfo kComputeFields[] = {
#define COMPUTE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kRoleFields[] = {
#define ROLE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kFaultToleranceFields[] = {
#define FAULT_TOLERANCE_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kScalingFields[] = {
#define SCALING_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kPolicyFields[] = {
#define POLICY_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
const FieldInfo kLendingFields[] = {
#define LENDING_FIELD MSC_FIELD_INFO
#include "ir/Fields.def"
};
#undef MSC_FIELD_INFO

template <size_t N> std::vector<llvm::StringRef> namesOf(const FieldInfo (&table)[N]) {
  std::vector<llvm::StringRef> names;
  for (const FieldInfo &f : table)
    names.push_back(f.name);
  return names;
}

template <size_t N> const FieldInfo *findField(const FieldInfo (&table)[N], llvm::StringRef name) {
  for (const FieldInfo &f : table)
    if (f.name == name)
      return &f;
  return nullptr;
}

const llvm::StringRef kSections[] = {"io_topology", "fault_tolerance", "scaling", "policy", "phases", "lending"};

class IRGen {
public:
  IRGen(const SourceSet &sources, DiagnosticEngine &diags, std::string profileOverride, std::string onlyContract,
        std::string defaultClass)
      : sources_(sources), diags_(diags), conv_(diags), defaultClass_(std::move(defaultClass)),
        profileOverride_(std::move(profileOverride)),
        overrideContract_(std::move(onlyContract)) {}

  std::optional<ir::Module> run();

private:
  struct Decl {
    const ast::Declaration *ast;
    bool imported;
    ir::Body own; // the declaration's own block, type-checked
    bool clean = true; // no error was reported while checking `own`
  };

  ir::Body checkBody(const ast::Declaration &decl);
  // Checks a block's assignments; sections go to `onSection` in source order (or are errors).
  template <typename Fields, size_t N>
  void checkFields(const ast::Block &block, const FieldInfo (&table)[N], Fields &fields, const std::string &where,
                   const ir::Origin &base, const std::function<void(const ast::Section &)> &onSection = {});
  void checkRoles(const ast::Block &block, ir::Body &body, const ir::Origin &base);
  void checkPhases(const ast::Block &block, ir::Body &body, const ir::Origin &base);
  // After the merge: each phase names roles the contract holds and resources they hold; a borrower
  // declares only what a borrower can.
  void checkPhasesAgainstRoles(const ir::Contract &c);
  void checkBorrower(const ir::Contract &c, const ast::Declaration &decl);
  void checkWorldSizes(const ir::Contract &c);
  const ir::Body *resolveProfile(const std::string &name);
  void checkContractComplete(const ir::Contract &c, const ast::Declaration &decl);

  const SourceSet &sources_;
  DiagnosticEngine &diags_;
  detail::ValueConverter conv_;
  std::string defaultClass_;    // FrontendOptions::defaultClass
  std::string profileOverride_; // FrontendOptions::profileOverride
  std::string overrideContract_; // FrontendOptions::profileOverrideContract
  std::vector<Decl> profiles_, contracts_;
  llvm::StringMap<size_t> profileIndex_;
  std::map<std::string, ir::Body> resolved_;
  std::map<std::string, std::vector<std::string>> chains_;
  std::set<std::string> resolving_, failed_;
};

template <typename Fields, size_t N>
void IRGen::checkFields(const ast::Block &block, const FieldInfo (&table)[N], Fields &fields,
                        const std::string &where, const ir::Origin &base,
                        const std::function<void(const ast::Section &)> &onSection) {
  llvm::StringMap<llvm::SMRange> firstSet;
  for (const ast::Member &m : block.members) {
    if (m.section) {
      if (onSection) {
        onSection(*m.section);
        continue;
      }
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_008, m.section->nameRange);
      d << m.section->name << where;
      continue;
    }
    const ast::Assignment &a = *m.assignment;
    const FieldInfo *info = findField(table, a.field);
    if (!info) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_004, a.fieldRange);
      d << a.field << where;
      if (auto fix = closestMatch(a.field, namesOf(table)))
        d.noteWithFixIt(Location{a.fieldRange, {}, 0}, "did you mean '" + *fix + "'?", {a.fieldRange, *fix});
      continue;
    }
    auto [it, inserted] = firstSet.try_emplace(a.field, a.fieldRange);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_007, a.fieldRange)
              .note(Location{it->second, {}, 0}, "field '" + a.field + "' first set here")
          << a.field;
      continue;
    }
    ir::Origin origin = base;
    origin.range = a.value->range;
    origin.fieldRange = a.fieldRange;
    conv_.assign(fields, *info, *a.value, origin);
  }
}

void IRGen::checkRoles(const ast::Block &block, ir::Body &body, const ir::Origin &base) {
  llvm::StringMap<llvm::SMRange> seen;
  for (const ast::Member &m : block.members) {
    if (m.assignment) {
      diags_.report(DiagCode::ERR_SEM_004, m.assignment->fieldRange)
              .note(Location::none(), "every block inside 'io_topology' is a named role, e.g. 'data { ... }'")
          << m.assignment->field << "section 'io_topology'";
      continue;
    }
    const ast::Section &s = *m.section;
    auto [it, inserted] = seen.try_emplace(s.name, s.nameRange);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_016, s.nameRange)
              .note(Location{it->second, {}, 0}, "role '" + s.name + "' first declared here")
          << s.name;
      continue;
    }
    ir::Role role;
    role.name = s.name;
    role.origin = base;
    role.origin.range = s.nameRange;
    role.origin.fieldRange = s.nameRange;
    checkFields(*s.body, kRoleFields, role.fields, "role '" + s.name + "'", base);
    body.roles.push_back(std::move(role));
  }
}

// phases { NAME { ROLE = [cpu, io, ...]; ... when = ...; } ... }
void IRGen::checkPhases(const ast::Block &block, ir::Body &body, const ir::Origin &base) {
  llvm::StringMap<llvm::SMRange> seen;
  for (const ast::Member &m : block.members) {
    if (m.assignment) {
      diags_.report(DiagCode::ERR_SEM_004, m.assignment->fieldRange)
              .note(Location::none(), "every block inside 'phases' is a named phase, e.g. 'compute { trainer = [gpu, rdma]; }'")
          << m.assignment->field << "section 'phases'";
      continue;
    }
    const ast::Section &s = *m.section;
    auto [it, inserted] = seen.try_emplace(s.name, s.nameRange);
    if (!inserted) {
      diags_.report(DiagCode::ERR_SEM_019, s.nameRange)
              .note(Location{it->second, {}, 0}, "phase '" + s.name + "' first declared here")
          << s.name;
      continue;
    }
    if (body.phases.size() == ir::kMaxPhases) {
      diags_.report(DiagCode::ERR_SEM_009, s.nameRange)
          << ("phase " + std::to_string(ir::kMaxPhases + 1)) << "phases" << ("at most " + std::to_string(ir::kMaxPhases));
      break;
    }
    ir::Phase phase;
    phase.name = s.name;
    phase.origin = base;
    phase.origin.range = s.nameRange;
    phase.origin.fieldRange = s.nameRange;
    llvm::StringMap<llvm::SMRange> lines;
    for (const ast::Member &pm : s.body->members) {
      if (pm.section) {
        diags_.report(DiagCode::ERR_SEM_008, pm.section->nameRange) << pm.section->name << ("phase '" + s.name + "'");
        continue;
      }
      const ast::Assignment &a = *pm.assignment;
      auto [first, fresh] = lines.try_emplace(a.field, a.fieldRange);
      if (!fresh) {
        diags_.report(DiagCode::ERR_SEM_007, a.fieldRange)
                .note(Location{first->second, {}, 0}, "field '" + a.field + "' first set here")
            << a.field;
        continue;
      }
      ir::Origin origin = base;
      origin.range = a.value->range;
      origin.fieldRange = a.fieldRange;
      if (a.field == "when") {
        if (auto when = conv_.phaseWhen(*a.value, s.name)) {
          phase.when = *when;
          phase.when.origin = origin;
        }
        continue;
      }
      std::vector<llvm::SMRange> written;
      if (auto kinds = conv_.exclusiveResources(*a.value, a.field, written))
        phase.uses.push_back({a.field, std::move(*kinds), std::move(written), origin});
    }
    body.phases.push_back(std::move(phase));
  }
}

void IRGen::checkPhasesAgainstRoles(const ir::Contract &c) {
  for (const ir::Phase &phase : c.body.phases) {
    for (const ir::PhaseUse &use : phase.uses) {
      const ir::Role *role = c.body.role(use.role);
      if (!role) {
        DiagBuilder d = diags_.report(DiagCode::ERR_SEM_020, use.origin.fieldRange);
        d << phase.name << use.role << c.name;
        std::vector<llvm::StringRef> names;
        for (const ir::Role &r : c.body.roles)
          names.push_back(r.name);
        if (auto fix = closestMatch(use.role, names))
          d.noteWithFixIt(Location{use.origin.fieldRange, {}, 0}, "did you mean '" + *fix + "'?",
                          {use.origin.fieldRange, *fix});
        else if (!names.empty())
          d.note(Location::none(), "its roles: " + llvm::join(names, ", "));
        continue;
      }
      for (size_t k = 0; k < use.exclusive.size(); ++k)
        if (!ir::roleHolds(role->fields, use.exclusive[k]))
          diags_.report(DiagCode::ERR_SEM_021, use.written[k])
                  .note(Location::none(), std::string("a role holds ") + ir::kRoleHoldingFields)
              << phase.name << ir::resourceKindName(use.exclusive[k]) << use.role;
    }
  }
}

// A borrower holds nothing: it asks for amounts (cpu_cores, memory, gpu_sm_slices, rdma_qps) and
// runs on what owners lend, where the node puts it.
void IRGen::checkBorrower(const ir::Contract &c, const ast::Declaration &decl) {
  auto refuse = [&](llvm::SMRange at, const std::string &what, const std::string &why) {
    diags_.report(DiagCode::ERR_SEM_024, at).note(Location::none(), why) << c.name << what;
  };
  const char *holdsNothing = "a borrower holds nothing of its own: it asks for amounts (cpu_cores, memory, "
                             "gpu_sm_slices, rdma_qps) and the node runs it on what other contracts lend";
  for (const ir::Role &role : c.body.roles) {
    const ir::RoleFields &f = role.fields;
    if (f.cpu_cores || f.gpu || f.gpus || f.rdma_port || f.io_queue || f.pcie_domain)
      refuse(role.origin.range, "pins resources in role '" + role.name + "'", holdsNothing);
    else if (f.memory_pool)
      refuse(f.memory_pool->origin.range, "asks for hugepages in role '" + role.name + "'",
             "hugepage pools are never lent: a borrower could not give them back without the owner's pages");
  }
  if (!c.body.phases.empty())
    refuse(c.body.phases.front().origin.range, "declares phases", "a borrower lends nothing, so it has no phases");
  if (c.body.lending.reclaim_within || c.body.lending.lead) {
    const ir::Origin &o = c.body.lending.reclaim_within ? c.body.lending.reclaim_within->origin : c.body.lending.lead->origin;
    refuse(o.fieldRange, "sets lending", "lending is what an owner promises; a borrower is what is reclaimed");
  }
  if (!c.body.compute.cpu_cores && !c.body.compute.gpu_sm_slices && !c.body.compute.memory && !c.body.compute.rdma_qps)
    refuse(decl.nameRange, "asks for nothing to borrow",
           "say what it needs: cpu_cores = N, memory = SIZE, gpu_sm_slices = N, rdma_qps = N");
}

ir::Body IRGen::checkBody(const ast::Declaration &decl) {
  ir::Body body;
  std::string kind = decl.kind == ast::Declaration::Kind::Profile ? "profile" : "contract";
  ir::Origin base{kind + " " + decl.name, {}, {}};
  std::string where = kind + " '" + decl.name + "'";
  checkFields(decl.body, kComputeFields, body.compute, where, base, [&](const ast::Section &s) {
    if (!llvm::is_contained(kSections, llvm::StringRef(s.name))) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_008, s.nameRange);
      d << s.name << where;
      if (auto fix = closestMatch(s.name, kSections))
        d.noteWithFixIt(Location{s.nameRange, {}, 0}, "did you mean '" + *fix + "'?", {s.nameRange, *fix});
      return;
    }
    // A section may appear twice (say, in two halves of a long contract); fields still may not.
    if (s.name == "io_topology")
      checkRoles(*s.body, body, base);
    else if (s.name == "fault_tolerance")
      checkFields(*s.body, kFaultToleranceFields, body.faultTolerance, "section 'fault_tolerance'", base);
    else if (s.name == "scaling")
      checkFields(*s.body, kScalingFields, body.scaling, "section 'scaling'", base);
    else if (s.name == "policy")
      checkFields(*s.body, kPolicyFields, body.policy, "section 'policy'", base);
    else if (s.name == "phases")
      checkPhases(*s.body, body, base);
    else if (s.name == "lending")
      checkFields(*s.body, kLendingFields, body.lending, "section 'lending'", base);
  });
  return body;
}

const ir::Body *IRGen::resolveProfile(const std::string &name) {
  if (auto it = resolved_.find(name); it != resolved_.end())
    return &it->second;
  if (failed_.count(name))
    return nullptr;
  auto idx = profileIndex_.find(name);
  if (idx == profileIndex_.end())
    return nullptr;
  const Decl &decl = profiles_[idx->second];
  if (resolving_.count(name)) {
    diags_.report(DiagCode::ERR_SEM_003, decl.ast->baseRange) << name;
    failed_.insert(name);
    return nullptr;
  }
  resolving_.insert(name);
  ir::Body body;
  std::vector<std::string> chain{name};
  bool ok = true;
  if (!decl.ast->base.empty()) {
    if (!profileIndex_.count(decl.ast->base)) {
      DiagBuilder d = diags_.report(DiagCode::ERR_SEM_002, decl.ast->baseRange);
      d << decl.ast->base;
      std::vector<llvm::StringRef> names;
      for (const Decl &p : profiles_)
        if (p.ast->name != decl.ast->name) // a profile cannot extend itself
          names.push_back(p.ast->name);
      if (auto fix = closestMatch(decl.ast->base, names))
        d.noteWithFixIt(Location{decl.ast->baseRange, {}, 0}, "did you mean '" + *fix + "'?",
                        {decl.ast->baseRange, *fix});
      ok = false;
    } else if (const ir::Body *base = resolveProfile(decl.ast->base)) {
      body = *base;
      const auto &baseChain = chains_[decl.ast->base];
      chain.insert(chain.end(), baseChain.begin(), baseChain.end());
    } else {
      ok = false;
    }
  }
  resolving_.erase(name);
  if (!ok) {
    failed_.insert(name);
    return nullptr;
  }
  ir::mergeInto(body, decl.own);
  chains_[name] = chain;
  return &(resolved_[name] = std::move(body));
}

// A job's global batch is split over its ranks at every size it may run at (ir/WorldSize.h): a
// contract none of whose sizes can split it would never be placed.
void IRGen::checkWorldSizes(const ir::Contract &c) {
  const ir::ComputeFields &f = c.body.compute;
  if (f.micro_batch && !f.global_batch) {
    diags_.report(DiagCode::ERR_SEM_017, f.micro_batch->origin.fieldRange)
            .note(Location::none(), "micro_batch splits each rank's share of the global batch")
        << c.name << "global_batch, which micro_batch needs";
    return;
  }
  if (f.deterministic_reduction && f.deterministic_reduction->value && !f.micro_batch) {
    diags_.report(DiagCode::ERR_SEM_017, f.deterministic_reduction->origin.fieldRange)
            .note(Location::none(), "the canonical order is over the step's micro-batches, the same at every size")
        << c.name << "micro_batch, which deterministic_reduction needs";
    return;
  }
  if (!f.global_batch)
    return;
  const ir::WorldSizes sizes = ir::worldSizesOf(f);
  if (!ir::allowedSizes(sizes).empty())
    return;
  const std::string range = f.nodes ? ir::formatValue(f.nodes->value) : std::string("1");
  const std::string how = sizes.microBatch ? "into whole micro-batches of micro_batch = " +
                                                 std::to_string(sizes.microBatch) + " samples per rank"
                                           : std::string("evenly over its ranks");
  DiagBuilder d = diags_.report(DiagCode::ERR_SEM_025, f.global_batch->origin.range);
  d << range << static_cast<uint64_t>(sizes.globalBatch) << how;
  if (f.nodes)
    d.note(Location{f.nodes->origin.range, {}, 0}, "nodes = " + range + " set here");
  // Every size says why, up to a few: a range of hundreds of sizes would bury the reason.
  unsigned said = 0;
  for (unsigned size = sizes.max; size >= sizes.min && size > 0 && said < 4; --size, ++said)
    d.note(Location::none(), "at " + std::to_string(size) + (size == 1 ? " node: " : " nodes: ") +
                                 ir::whyNotAllowed(sizes, size));
}

void IRGen::checkContractComplete(const ir::Contract &c, const ast::Declaration &decl) {
  if (c.body.compute.class_ && c.body.compute.class_->value == "opportunistic")
    return checkBorrower(c, decl);
  checkPhasesAgainstRoles(c);
  checkWorldSizes(c);
  if (c.body.roles.empty()) {
    diags_.report(DiagCode::ERR_SEM_017, decl.nameRange) << c.name << "io_topology roles (what should it hold?)";
    return;
  }
  for (const ir::Role &role : c.body.roles) {
    const ir::RoleFields &f = role.fields;
    if (!f.cpu_cores && !f.gpu && !f.gpus && !f.rdma_port && !f.io_queue && !f.memory_pool && !f.pcie_domain)
      diags_.report(DiagCode::ERR_SEM_017, role.origin.range)
              .note(Location::none(),
                    "a role needs at least one of cpu_cores, gpu, gpus, pcie_domain, rdma_port, io_queue, memory_pool")
          << c.name << ("resource for role '" + role.name + "'");
  }
}

std::optional<ir::Module> IRGen::run() {
  unsigned errorsBefore = diags_.errorCount();
  // Pass 1: every declaration's own block, checked once; duplicate names.
  llvm::StringMap<llvm::SMRange> contractNames;
  // Imported files first: a name the main file defines again is reported in the main file.
  for (size_t n = 0; n < sources_.files.size(); ++n) {
    size_t fileIndex = (n + 1) % sources_.files.size();
    const ast::File &file = *sources_.files[fileIndex];
    for (const auto &declPtr : file.declarations) {
      const ast::Declaration &decl = *declPtr;
      bool isProfile = decl.kind == ast::Declaration::Kind::Profile;
      if (isProfile) {
        auto [it, inserted] = profileIndex_.try_emplace(decl.name, profiles_.size());
        if (!inserted) {
          diags_.report(DiagCode::ERR_SEM_001, decl.nameRange)
                  .note(Location{profiles_[it->second].ast->nameRange, {}, 0}, "first defined here")
              << "profile" << decl.name;
          continue;
        }
        profiles_.push_back({&decl, fileIndex != 0, checkBody(decl)});
      } else {
        auto [it, inserted] = contractNames.try_emplace(decl.name, decl.nameRange);
        if (!inserted) {
          diags_.report(DiagCode::ERR_SEM_001, decl.nameRange)
                  .note(Location{it->second, {}, 0}, "first defined here")
              << "contract" << decl.name;
          continue;
        }
        // Contracts of imported files are not compiled: imports bring profiles.
        if (fileIndex == 0) {
          unsigned before = diags_.errorCount();
          contracts_.push_back({&decl, false, checkBody(decl)});
          contracts_.back().clean = diags_.errorCount() == before;
        }
      }
    }
  }

  // Pass 2: resolve every profile chain, then every contract on top of its profile.
  ir::Module module;
  for (const Decl &p : profiles_) {
    const ir::Body *body = resolveProfile(p.ast->name);
    if (!body)
      continue;
    ir::Profile profile;
    profile.name = p.ast->name;
    profile.base = p.ast->base;
    profile.chain = chains_[p.ast->name];
    profile.nameRange = p.ast->nameRange;
    profile.imported = p.imported;
    profile.body = *body;
    module.profiles.push_back(std::move(profile));
  }
  const std::string mainFile = sources_.files.empty() ? "" : sources_.files.front()->path;
  for (const Decl &c : contracts_) {
    ir::Contract contract;
    contract.name = c.ast->name;
    // A resize on another profile compiles the same contract on top of it.
    bool overridden = !profileOverride_.empty() && (overrideContract_.empty() || overrideContract_ == c.ast->name);
    const std::string &baseName = overridden ? profileOverride_ : c.ast->base;
    contract.profile = baseName;
    contract.nameRange = c.ast->nameRange;
    contract.sourceFile = mainFile;
    contract.sourceHash = sources_.hash;
    if (!baseName.empty()) {
      if (!profileIndex_.count(baseName)) {
        DiagBuilder d = diags_.report(DiagCode::ERR_SEM_002, c.ast->baseRange);
        d << baseName;
        std::vector<llvm::StringRef> names;
        for (const Decl &p : profiles_)
          names.push_back(p.ast->name);
        if (auto fix = closestMatch(baseName, names))
          d.noteWithFixIt(Location{c.ast->baseRange, {}, 0}, "did you mean '" + *fix + "'?",
                          {c.ast->baseRange, *fix});
        else if (!names.empty())
          d.note(Location::none(), "known profiles: " + [&] {
            std::string all;
            for (llvm::StringRef n : names)
              all += (all.empty() ? "" : ", ") + n.str();
            return all;
          }());
        continue;
      }
      const ir::Body *base = resolveProfile(baseName);
      if (!base)
        continue;
      contract.body = *base;
      contract.chain = chains_[baseName];
    }
    ir::mergeInto(contract.body, c.own);
    if (!defaultClass_.empty() && !contract.body.compute.class_ &&
        (overrideContract_.empty() || overrideContract_ == c.ast->name))
      contract.body.compute.class_ = ir::Field<std::string>{defaultClass_, {"submission", {}, {}}};
    // A field that failed to convert is missing from the IR; do not report it missing again.
    if (c.clean)
      checkContractComplete(contract, *c.ast);
    module.contracts.push_back(std::move(contract));
  }
  if (diags_.errorCount() != errorsBefore)
    return std::nullopt;
  return module;
}

} // namespace

std::optional<ir::Module> buildModule(const SourceSet &sources, DiagnosticEngine &diags,
                                      llvm::StringRef profileOverride, llvm::StringRef onlyContract,
                                      llvm::StringRef defaultClass) {
  return IRGen(sources, diags, profileOverride.str(), onlyContract.str(), defaultClass.str()).run();
}

} // namespace msc
