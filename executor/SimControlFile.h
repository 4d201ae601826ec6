// The control file through which tests (and other processes) drive the sim backends: one
// command per line ("gpu 1 fault lost", "rdma mlx5_0 1 down"). Re-read only when it changed.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

namespace msc::exec {

class SimControlFile {
public:
  explicit SimControlFile(std::string path) : path_(std::move(path)) {}

  // The file's lines if it changed (size or mtime) since the last call; nullopt otherwise.
  std::optional<std::vector<std::string>> poll() {
    if (path_.empty())
      return std::nullopt;
    struct stat st {};
    if (::stat(path_.c_str(), &st) != 0)
      return std::nullopt;
    int64_t mtime = int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    if (mtime == mtimeNs_ && int64_t(st.st_size) == size_)
      return std::nullopt;
    mtimeNs_ = mtime;
    size_ = int64_t(st.st_size);
    std::ifstream in(path_);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
      lines.push_back(line);
    return lines;
  }

private:
  std::string path_;
  int64_t mtimeNs_ = -1;
  int64_t size_ = -1;
};

} // namespace msc::exec
