#include "cluster/controller/ContractCheck.h"
#include "cluster/keys/Keys.h"

#include "cluster/etcd/Status.h"
#include "driver/Compile.h"

#include <llvm/ADT/StringExtras.h>

#include <vector>

namespace msc::cluster {

std::string CapturedDiagnostics::firstLine() const {
  size_t at = text.find("error[");
  std::string line = at == std::string::npos ? text : text.substr(at);
  return line.substr(0, line.find('\n'));
}

std::optional<LoadedContract> loadSubmittedContract(const std::string &name, const std::string &source,
                                                    const ContractSourceOptions &options, CapturedDiagnostics &out,
                                                    const std::string &contractClass) {
  driver::CompileOptions co;
  co.inputs = {name + ".msc"};
  co.memoryFiles[co.inputs.front()] = source;
  co.stdlibDir = options.stdlibDir;
  co.onlyContract = name;
  co.defaultClass = contractClass;
  std::optional<ir::Module> module = driver::loadContracts(co, *out.sm, out.diags);
  if (!module)
    return std::nullopt;
  std::vector<std::string> defined;
  for (size_t i = 0; i < module->contracts.size(); ++i) {
    if (module->contracts[i].name != name) {
      defined.push_back(module->contracts[i].name);
      continue;
    }
    const auto &own = module->contracts[i].body.compute.class_;
    if (std::string problem = submittedClassProblem(contractClass, own ? own->value : std::string()); !problem.empty()) {
      out.os << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_023, {name, contractClass, problem}).str() << "\n";
      return std::nullopt;
    }
    return LoadedContract{std::move(*module), i};
  }
  std::string why = "the source defines no contract '" + name + "'";
  why += defined.empty() ? " (it defines none)" : " (it defines " + llvm::join(defined, ", ") + ")";
  out.os << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_007, {name, why}).str() << "\n";
  return std::nullopt;
}

} // namespace msc::cluster
