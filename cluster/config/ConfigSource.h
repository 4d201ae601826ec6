// The text of a cluster config and the coded errors found in it, printed the way the compiler
// prints its own diagnostics: "FILE:LINE:COL: error[ERR_CLUSTER_010]: MESSAGE", the line, carets
// under the range, notes after. The codes are the cluster's (support/DiagnosticsCluster.def), not
// the compiler's table, so this prints them itself with LLVM's SourceMgr.
//
// Errors are found in two steps: while the text is parsed (ClusterConfig.h), and later, by whoever
// checks the config against the cluster (mscale-deploy: a reserved domain a node lacks). A TextSpan
// keeps a place in the text across the two, as line and column, so a parsed config carries no
// pointers into a buffer.
#pragma once

#include "cluster/etcd/Status.h"

#include <llvm/ADT/StringRef.h>
#include <llvm/Support/SMLoc.h>
#include <llvm/Support/SourceMgr.h>

#include <string>
#include <vector>

namespace msc::cluster {

struct TextSpan {
  unsigned line = 0, column = 0, length = 0; // 1-based, for people; line 0: the text as a whole
  size_t offset = 0; // where it starts in the text: what rangeOf goes back by (line and column
                     // cannot be inverted exactly: SourceMgr counts lines at '\n' but columns
                     // from the last '\n' or '\r')
};

class ConfigSource {
public:
  // `name` is what errors print as the file ("cluster-config.yaml", "/mscale/config").
  ConfigSource(std::string name, llvm::StringRef text);
  ConfigSource(const ConfigSource &) = delete;
  ConfigSource &operator=(const ConfigSource &) = delete;

  const std::string &name() const { return name_; }
  // The text as the parser reads it: SMLocs from the parse point into it.
  llvm::StringRef text() const { return text_; }

  // A coded error at `range` (into text(); an invalid range: the text as a whole).
  void error(const etcd::Status &status, llvm::SMRange range = {});
  void error(const etcd::Status &status, const TextSpan &at) { error(status, rangeOf(at)); }
  // A note after the last error ("first reserved here", "did you mean ...").
  void note(const std::string &message, llvm::SMRange range = {});

  bool failed() const { return !errors_.empty(); }
  const std::vector<etcd::Status> &errors() const { return errors_; }
  // Every error and note as printed, each error with its line and carets.
  const std::string &printed() const { return printed_; }

  TextSpan spanOf(llvm::SMRange range) const;
  llvm::SMRange rangeOf(const TextSpan &at) const;

private:
  void print(llvm::SourceMgr::DiagKind kind, const std::string &message, llvm::SMRange range);

  std::string name_;
  mutable llvm::SourceMgr sm_; // FindLocForLineAndColumn caches line offsets
  llvm::StringRef text_;
  std::vector<etcd::Status> errors_;
  std::string printed_;
};

} // namespace msc::cluster
