#include "slurm/SlurmDiagnostics.h"

#include "support/DiagFormat.h"

#include <vector>

namespace msc::slurm {

namespace {

struct Entry {
  const char *code;
  const char *format;
};

constexpr Entry kTable[] = {
#define DIAG(CODE, SEVERITY, FORMAT, SUMMARY) {#CODE, FORMAT},
#include "support/DiagnosticsSlurm.def"
#undef DIAG
};

} // namespace

std::string formatSlurmDiag(SlurmDiag code, std::initializer_list<std::string_view> args) {
  const Entry &e = kTable[static_cast<size_t>(code)];
  std::vector<std::string_view> a(args);
  return std::string(e.code) + ": " + fillDiagFormat(e.format, a);
}

} // namespace msc::slurm
