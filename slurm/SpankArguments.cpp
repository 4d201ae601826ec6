#include "slurm/SpankArguments.h"

#include "slurm/SlurmDiagnostics.h"

#include <charconv>

namespace msc::slurm {

namespace {

bool hasControl(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return true;
  return false;
}

// Printable for a message: control characters as '?', at most 200 bytes.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 200))
    out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
  if (s.size() > 200)
    out += "...";
  return out;
}

bool absolutePath(std::string_view v) { return !v.empty() && v.front() == '/' && !hasControl(v) && v.size() < 4096; }

} // namespace

std::optional<PluginConfig> parsePluginArguments(const std::vector<std::string> &args, std::string defaultBindir,
                                                 std::string &error) {
  PluginConfig config;
  config.bindir = std::move(defaultBindir);
  for (const std::string &arg : args) {
    auto fail = [&](std::string_view why) {
      error = formatSlurmDiag(SlurmDiag::ERR_SLURM_001, {shown(arg), why});
      return std::nullopt;
    };
    size_t eq = arg.find('=');
    if (eq == std::string::npos)
      return fail("expected NAME=VALUE");
    std::string_view key = std::string_view(arg).substr(0, eq), value = std::string_view(arg).substr(eq + 1);
    if (key == "bindir" || key == "socket" || key == "stdlib") {
      if (!absolutePath(value))
        return fail("expected an absolute path");
      (key == "bindir" ? config.bindir : key == "socket" ? config.socket : config.stdlib) = std::string(value);
    } else if (key == "timeout") {
      unsigned seconds = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (ec != std::errc() || end != value.data() + value.size() || seconds < 1 || seconds > 3600)
        return fail("expected a number of seconds from 1 to 3600");
      config.timeoutSeconds = seconds;
    } else {
      return fail("unknown argument (expected bindir=, socket=, stdlib= or timeout=)");
    }
  }
  return config;
}

std::string socketForHost(std::string_view socket, std::string_view host) {
  std::string out;
  for (size_t i = 0; i < socket.size(); ++i) {
    if (socket[i] == '%' && i + 1 < socket.size() && (socket[i + 1] == 'h' || socket[i + 1] == '%')) {
      out += socket[++i] == 'h' ? std::string(host) : std::string("%");
      continue;
    }
    out += socket[i];
  }
  return out;
}

std::optional<std::string> parseContractValue(std::string_view value, std::string_view source, std::string &error) {
  std::string_view why;
  if (value.empty())
    why = "the file name is empty";
  else if (value.size() > 4095)
    why = "the file name is longer than 4095 bytes";
  else if (hasControl(value))
    why = "the file name holds control characters";
  if (!why.empty()) {
    error = formatSlurmDiag(SlurmDiag::ERR_SLURM_002, {shown(value), source, why});
    return std::nullopt;
  }
  return std::string(value);
}

std::optional<std::string> parseSubmittedContract(std::string_view text, std::string &error) {
  std::string_view first = text.substr(0, text.find('\n'));
  constexpr std::string_view prefix = "contract ";
  std::string_view name = first.substr(0, prefix.size()) == prefix ? first.substr(prefix.size()) : std::string_view();
  bool valid = !name.empty() && name.size() <= 128 && name.front() != '.';
  for (char c : name)
    valid = valid && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
                      c == '-' || c == '.');
  if (!valid) {
    error = "the agent's answer does not start with 'contract NAME' (it starts '" + shown(first) + "')";
    return std::nullopt;
  }
  return std::string(name);
}

namespace {

bool isVariableName(std::string_view name) {
  bool valid = name.size() > 7 && name.substr(0, 7) == "MSCALE_";
  for (char c : name)
    valid = valid && ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  return valid;
}

// A decimal number of 1..9 digits (so that it fits an int), or -1.
int smallNumber(std::string_view digits) {
  if (digits.empty() || digits.size() > 9)
    return -1;
  int n = 0;
  for (char c : digits) {
    if (c < '0' || c > '9')
      return -1;
    n = n * 10 + (c - '0');
  }
  return n;
}

// A decimal number that fits 64 bits (1..20 digits), or nullopt.
std::optional<uint64_t> number64(std::string_view digits) {
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
    return std::nullopt;
  return n;
}

// "fd NAME /proc/PID/fd/N DEV:INO"
std::optional<FdHandOver> parseFdLine(std::string_view line) {
  constexpr std::string_view fdPrefix = "fd ", procPrefix = "/proc/", fdDir = "/fd/";
  line.remove_prefix(fdPrefix.size());
  size_t space = line.find(' ');
  if (space == std::string_view::npos || !isVariableName(line.substr(0, space)))
    return std::nullopt;
  std::string_view path = line.substr(space + 1);
  size_t idSpace = path.find(' ');
  if (idSpace == std::string_view::npos)
    return std::nullopt;
  std::string_view id = path.substr(idSpace + 1);
  path = path.substr(0, idSpace);
  if (path.substr(0, procPrefix.size()) != procPrefix)
    return std::nullopt;
  path.remove_prefix(procPrefix.size());
  size_t dir = path.find(fdDir);
  if (dir == std::string_view::npos)
    return std::nullopt;
  int pid = smallNumber(path.substr(0, dir)), fd = smallNumber(path.substr(dir + fdDir.size()));
  size_t colon = id.find(':');
  if (pid <= 0 || fd < 0 || colon == std::string_view::npos)
    return std::nullopt;
  std::optional<uint64_t> device = number64(id.substr(0, colon)), inode = number64(id.substr(colon + 1));
  if (!device || !inode)
    return std::nullopt;
  return FdHandOver{std::string(line.substr(0, space)), pid, fd, *device, *inode};
}

} // namespace

std::optional<AttachAnswer> parseAttachAnswer(std::string_view text, std::string &error) {
  AttachAnswer out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    if (line.empty())
      continue;
    if (hasControl(line)) {
      error = "not an MSCALE_NAME=VALUE or 'fd MSCALE_NAME /proc/PID/fd/N DEV:INO' line: '" + shown(line) + "'";
      return std::nullopt;
    }
    if (line.substr(0, 3) == "fd ") {
      std::optional<FdHandOver> fd = parseFdLine(line);
      if (!fd) {
        error = "not an 'fd MSCALE_NAME /proc/PID/fd/N DEV:INO' line: '" + shown(line) + "'";
        return std::nullopt;
      }
      // A second descriptor under one name would leave the first open in the task, unnamed.
      for (const FdHandOver &seen : out.fds)
        if (seen.variable == fd->variable) {
          error = "the agent's answer names " + fd->variable + " twice";
          return std::nullopt;
        }
      out.fds.push_back(std::move(*fd));
      continue;
    }
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || !isVariableName(line.substr(0, eq))) {
      error = "not an MSCALE_NAME=VALUE line: '" + shown(line) + "'";
      return std::nullopt;
    }
    out.environment.emplace_back(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }
  return out;
}

} // namespace msc::slurm
