#include "passes/GpuCount.h"

#include "ir/ValueFormat.h"
#include "passes/PassUtil.h"

#include <llvm/ADT/STLExtras.h>
#include <llvm/ADT/StringMap.h>
#include <llvm/ADT/Twine.h>

namespace msc::passes {

namespace {

unsigned countOf(const ir::Role &role) {
  return role.fields.gpus ? static_cast<unsigned>(role.fields.gpus->value) : 0;
}

std::string copyName(llvm::StringRef role, unsigned index) { return (role + "_g" + llvm::Twine(index)).str(); }

// "trainer_g0 to trainer_g3", for notes.
std::string copiesText(const ir::Role &role) {
  return copyName(role.name, 0) + " to " + copyName(role.name, countOf(role) - 1);
}

} // namespace

std::vector<std::string> checkedRoleNames(const ir::Role &role) {
  unsigned count = countOf(role);
  if (count <= 1)
    return {role.name};
  std::vector<std::string> names;
  for (unsigned i = 0; i < count; ++i)
    names.push_back(copyName(role.name, i));
  return names;
}

bool hasGpuCounts(const ir::Contract &contract) {
  return llvm::any_of(contract.body.roles, [](const ir::Role &role) { return role.fields.gpus.has_value(); });
}

ir::Contract expandGpuCounts(const ir::Contract &contract, DiagnosticEngine &diags) {
  ir::Contract out = contract;
  out.body.roles.clear();
  // The roles that keep their names: a copy may not take one. Two copies never share a name: the
  // last `_g<digits>` of a copy's name gives back its role and its index.
  llvm::StringMap<const ir::Role *> kept;
  for (const ir::Role &role : contract.body.roles)
    if (countOf(role) <= 1)
      kept[role.name] = &role;

  for (const ir::Role &role : contract.body.roles) {
    if (!role.fields.gpus) {
      out.body.roles.push_back(role);
      continue;
    }
    const ir::Field<int64_t> &gpus = *role.fields.gpus;
    const std::string count = std::to_string(countOf(role));
    ir::Role one = role;
    one.fields.gpus.reset();
    if (role.fields.gpu && role.fields.gpu->value.form != ir::GpuRef::Form::Any) {
      diags.report(DiagCode::ERR_SEM_005, at(role.fields.gpu->origin))
              .note(atField(gpus.origin), "'gpus = " + count + "' set here: each of the role's GPUs is bound as gpu = any")
              .note(Location::none(), "remove 'gpu' to bind " + count + " free GPUs, or 'gpus' to keep GPU " +
                                          ir::formatValue(role.fields.gpu->value))
          << "gpu" << "any in a role that sets 'gpus'" << "GPU " + ir::formatValue(role.fields.gpu->value);
      out.body.roles.push_back(std::move(one));
      continue;
    }
    ir::Field<ir::GpuRef> any;
    any.value.form = ir::GpuRef::Form::Any;
    any.origin = gpus.origin;
    any.origin.declaration += ", gpus = " + count + " of role '" + role.name + "'";
    one.fields.gpu = std::move(any);
    std::vector<std::string> names = checkedRoleNames(role);
    if (names.size() == 1) {
      out.body.roles.push_back(std::move(one));
      continue;
    }

    bool clash = false;
    for (const std::string &name : names) {
      auto other = kept.find(name);
      if (other == kept.end())
        continue;
      clash = true;
      diags.report(DiagCode::ERR_SEM_016, atField(gpus.origin))
              .note(Location{other->second->origin.range, {}, 0}, "role '" + name + "' declared here")
              .note(Location::none(), "'gpus = " + count + "' checks role '" + role.name + "' as roles " +
                                          copiesText(role) + "; rename role '" + name + "' or '" + role.name + "'")
          << name;
    }
    if (clash) {
      out.body.roles.push_back(std::move(one));
      continue;
    }
    for (unsigned i = 0; i < names.size(); ++i) {
      ir::Role &copy = out.body.roles.emplace_back(one);
      copy.name = names[i];
      copy.copyOf = ir::GpuCopyOf{role.name, i, static_cast<unsigned>(names.size())};
    }
  }
  return out;
}

} // namespace msc::passes
