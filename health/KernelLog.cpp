// Kernel log classes; see KernelLog.h.
#include "health/KernelLog.h"

#include <llvm/ADT/StringExtras.h>

#include <algorithm>
#include <array>

namespace msc::health {

llvm::StringRef kernelLogMessage(llvm::StringRef line) {
  // "PRIORITY,SEQUENCE,TIMESTAMP,FLAGS[,...];MESSAGE"
  size_t semi = line.find(';');
  if (semi == llvm::StringRef::npos)
    return line;
  llvm::StringRef prefix = line.take_front(semi);
  llvm::SmallVector<llvm::StringRef, 6> fields;
  prefix.split(fields, ',');
  unsigned n = 0;
  if (fields.size() < 4 || fields[0].getAsInteger(10, n) || fields[1].getAsInteger(10, n))
    return line;
  return line.drop_front(semi + 1);
}

bool isFatalXid(unsigned xid) {
  static constexpr std::array<unsigned, 9> fatal = {48, 62, 64, 74, 79, 94, 95, 119, 120};
  return std::find(fatal.begin(), fatal.end(), xid) != fatal.end();
}

namespace {

bool hasWord(llvm::StringRef text, llvm::StringRef word) {
  for (size_t at = text.find(word); at != llvm::StringRef::npos; at = text.find(word, at + 1)) {
    bool startOk = at == 0 || !llvm::isAlnum(text[at - 1]);
    bool endOk = at + word.size() == text.size() || !llvm::isAlnum(text[at + word.size()]);
    if (startOk && endOk)
      return true;
  }
  return false;
}

} // namespace

std::optional<LogClass> classifyKernelLogLine(llvm::StringRef line) {
  llvm::StringRef msg = kernelLogMessage(line).trim();
  std::string lower = msg.lower();
  llvm::StringRef low = lower;

  // "NVRM: Xid (PCI:0000:3b:00): 79, pid=..., GPU has fallen off the bus."
  if (size_t at = msg.find("Xid ("); at != llvm::StringRef::npos && msg.contains("NVRM")) {
    llvm::StringRef rest = msg.drop_front(at).split("):").second.trim();
    unsigned xid = 0;
    llvm::StringRef digits = rest.take_while([](char c) { return llvm::isDigit(c); });
    if (!digits.empty() && !digits.getAsInteger(10, xid) && isFatalXid(xid))
      return LogClass{"nvidia-xid-fatal", true};
    return LogClass{"nvidia-xid", false};
  }
  // "EDAC MC0: 1 UE ...", "EDAC skx MC1: HANDLING MCE MEMORY ERROR ... Uncorrected"
  if (msg.contains("EDAC")) {
    if (hasWord(msg, "UE") || low.contains("uncorrected"))
      return LogClass{"edac-ue", true};
    if (hasWord(msg, "CE") || low.contains("corrected"))
      return LogClass{"edac-ce", false};
    return std::nullopt;
  }
  // "nvme nvme0: I/O 123 QID 4 timeout, aborting", "I/O error, dev nvme0n1, sector 2048 ...",
  // "nvme nvme0: controller is down; will reset"
  if (low.contains("nvme") &&
      (low.contains("i/o error") || (low.contains("i/o ") && low.contains("timeout")) ||
       low.contains("controller is down") || low.contains("media error")))
    return LogClass{"nvme-io-error", false};
  // "mlx5_core 0000:81:00.0: poll_health:... device's health compromised - reached miss count",
  // "mlx5_core 0000:81:00.0: mlx5_cmd_out_err:... failed, status bad parameter(0x3), syndrome ..."
  if (msg.contains("mlx5_core") || msg.starts_with("mlx5_")) {
    if (low.contains("health compromised") || low.contains("fatal") || low.contains("internal error"))
      return LogClass{"mlx5-fatal", true};
    if (low.contains("err") || low.contains("syndrome") || low.contains("fail") || low.contains("timeout"))
      return LogClass{"mlx5-error", false};
  }
  return std::nullopt;
}

} // namespace msc::health
