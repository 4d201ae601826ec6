#include "cluster/controller/ContractCheck.h"

#include "cluster/etcd/Status.h"
#include "driver/Compile.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/ADT/StringExtras.h>
#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Path.h>

#include <vector>

namespace msc::cluster {

std::string CapturedDiagnostics::firstLine() const {
  size_t at = text.find("error[");
  std::string line = at == std::string::npos ? text : text.substr(at);
  return line.substr(0, line.find('\n'));
}

std::optional<LoadedContract> loadSubmittedContract(const std::string &name, const std::string &source,
                                                    const ContractSourceOptions &options, CapturedDiagnostics &out) {
  // A directory per check: the leader checks submissions on the service's threads while it
  // reconciles on its own, and two contracts, or two versions of one, must not share a file.
  llvm::SmallString<256> dir;
  std::error_code ec = llvm::sys::fs::createUniqueDirectory(llvm::Twine(options.scratchDir) + "/check", dir);
  if (ec) {
    out.diags.report(DiagCode::ERR_DRV_004) << (options.scratchDir + "/check-*") << ec.message();
    return std::nullopt;
  }
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, name + ".msc");
  std::optional<ir::Module> module;
  {
    llvm::raw_fd_ostream file(path, ec);
    if (ec)
      out.diags.report(DiagCode::ERR_DRV_004) << path.str() << ec.message();
    else
      file << source;
  }
  if (!ec) {
    driver::CompileOptions co;
    co.inputs = {std::string(path)};
    co.stdlibDir = options.stdlibDir;
    co.onlyContract = name;
    module = driver::loadContracts(co, out.sm, out.diags);
  }
  llvm::sys::fs::remove_directories(dir);
  if (!module)
    return std::nullopt;
  std::vector<std::string> defined;
  for (size_t i = 0; i < module->contracts.size(); ++i) {
    if (module->contracts[i].name == name)
      return LoadedContract{std::move(*module), i};
    defined.push_back(module->contracts[i].name);
  }
  std::string why = "the source defines no contract '" + name + "'";
  why += defined.empty() ? " (it defines none)" : " (it defines " + llvm::join(defined, ", ") + ")";
  out.os << etcd::Status::make(etcd::ErrorCode::ERR_CLUSTER_007, {name, why}).str() << "\n";
  return std::nullopt;
}

} // namespace msc::cluster
