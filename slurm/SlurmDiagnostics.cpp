#include "slurm/SlurmDiagnostics.h"

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
  std::string out = std::string(e.code) + ": ";
  for (const char *p = e.format; *p; ++p) {
    if (p[0] == '%' && p[1] >= '0' && p[1] <= '9' && size_t(p[1] - '0') < a.size()) {
      out += a[size_t(p[1] - '0')];
      ++p;
    } else {
      out += *p;
    }
  }
  return out;
}

} // namespace msc::slurm
