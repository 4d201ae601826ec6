// What the file-reading unit tests share: a private directory removed at the end, and file content
// whose every byte depends on its offset and a seed, so that a block delivered at the wrong place shows.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace msc::test {

struct TempDir {
  std::string path;
  // `prefix` names the test in the directory ("/tmp/<prefix>-XXXXXX").
  explicit TempDir(const std::string &prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    path = ::mkdtemp(tmpl.data()) ? tmpl : std::string();
  }
  ~TempDir() {
    if (!path.empty())
      std::filesystem::remove_all(path);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  // Writes `content` to `name` in the directory; returns the file's path.
  std::string write(const std::string &name, const std::string &content) const {
    std::string p = path + "/" + name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }
};

inline std::string pattern(size_t n, unsigned seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i)
    s[i] = static_cast<char>((i * 131 + seed + i / 4093) & 0xff);
  return s;
}

} // namespace msc::test
