#include "executor/host/Sys.h"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace msc::exec {

std::string errnoText(int err) { return std::strerror(err); }

std::optional<std::string> readFileText(const std::string &path, std::string *error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error)
      *error = errnoText(errno);
    return std::nullopt;
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      if (error)
        *error = errnoText(errno);
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0)
      break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

bool writeFileText(const std::string &path, llvm::StringRef value, std::string &error) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    error = errnoText(errno);
    return false;
  }
  ssize_t n;
  do
    n = ::write(fd, value.data(), value.size());
  while (n < 0 && errno == EINTR);
  int err = errno;
  ::close(fd);
  if (n < 0) {
    error = errnoText(err);
    return false;
  }
  if (static_cast<size_t>(n) != value.size()) {
    error = "short write";
    return false;
  }
  return true;
}

std::optional<uint64_t> readFileU64(const std::string &path) {
  std::optional<std::string> text = readFileText(path);
  if (!text)
    return std::nullopt;
  uint64_t v;
  if (llvm::StringRef(*text).trim().getAsInteger(10, v))
    return std::nullopt;
  return v;
}

bool pathExists(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool validContractId(llvm::StringRef id, std::string &why) {
  if (id.empty()) {
    why = "it is empty";
    return false;
  }
  if (id.size() > 128) {
    why = "it is longer than 128 characters";
    return false;
  }
  if (id.front() == '.') {
    why = "it starts with '.'";
    return false;
  }
  for (char c : id)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.')) {
      why = std::string("it contains '") + c + "'";
      return false;
    }
  return true;
}

size_t countOpenFds() {
  size_t n = 0;
  if (DIR *d = ::opendir("/proc/self/fd")) {
    while (dirent *e = ::readdir(d))
      if (e->d_name[0] != '.')
        ++n;
    ::closedir(d);
    --n; // the directory stream itself
  }
  return n;
}

} // namespace msc::exec
