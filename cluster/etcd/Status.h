// Outcomes of etcd calls: ok, or a coded error (support/DiagnosticsCluster.def) with its message.
// The codes are the project's diagnostics codes, so `mscalec --explain ERR_ETCD_004` explains them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace msc::etcd {

enum class ErrorCode : uint16_t {
  None = 0,
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) CODE,
#include "support/DiagnosticsCluster.def"
#undef DIAG
};

const char *codeName(ErrorCode code); // "ERR_ETCD_004"; "ok" for None
// The code called `name` ("ERR_CLUSTER_007"); nullopt for a name that is not one of these codes.
std::optional<ErrorCode> codeFromName(const std::string &name);

struct Status {
  ErrorCode code = ErrorCode::None;
  std::string message; // "etcd member '127.0.0.1:2379' has no leader (quorum lost): Put refused"

  bool ok() const { return code == ErrorCode::None; }
  explicit operator bool() const { return ok(); }
  // "error[ERR_ETCD_004]: etcd member ..."; "ok" when ok.
  std::string str() const;
  static Status make(ErrorCode code, const std::vector<std::string> &args);
};

// A value or the coded error that prevented it.
template <class T> class Result {
public:
  Result(T value) : value_(std::move(value)) {}
  Result(Status error) : status_(std::move(error)) {}

  bool ok() const { return status_.ok(); }
  explicit operator bool() const { return ok(); }
  const Status &status() const { return status_; }
  T &operator*() { return *value_; }
  const T &operator*() const { return *value_; }
  T *operator->() { return &*value_; }
  const T *operator->() const { return &*value_; }

private:
  Status status_;
  std::optional<T> value_;
};

} // namespace msc::etcd
