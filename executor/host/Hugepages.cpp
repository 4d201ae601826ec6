#include "executor/host/Hugepages.h"

#include "executor/host/Sys.h"

#include <mutex>

namespace msc::exec {

namespace {
std::mutex &sysfsMutex() {
  static std::mutex mu; // read-modify-write of nr_hugepages within this process
  return mu;
}
} // namespace

std::string hugepageDir(int node, uint64_t pageSize) {
  std::string leaf = "/hugepages-" + std::to_string(pageSize / 1024) + "kB";
  if (node < 0)
    return "/sys/kernel/mm/hugepages" + leaf;
  return "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages" + leaf;
}

std::optional<uint64_t> readHugepages(int node, uint64_t pageSize, const char *file) {
  return readFileU64(hugepageDir(node, pageSize) + "/" + file);
}

bool reserveHugepages(int node, uint64_t pageSize, uint64_t pages, std::string &error) {
  std::lock_guard<std::mutex> lock(sysfsMutex());
  std::string path = hugepageDir(node, pageSize) + "/nr_hugepages";
  std::optional<uint64_t> before = readFileU64(path);
  if (!before) {
    error = "cannot read " + path;
    return false;
  }
  if (!writeFileText(path, std::to_string(*before + pages), error)) {
    error = path + ": " + error;
    return false;
  }
  std::optional<uint64_t> after = readFileU64(path);
  if (!after || *after < *before + pages) {
    uint64_t granted = after && *after > *before ? *after - *before : 0;
    std::string ignored;
    writeFileText(path, std::to_string(*before), ignored);
    error = "the kernel granted " + std::to_string(granted) + " (" + path + ")";
    return false;
  }
  return true;
}

bool unreserveHugepages(int node, uint64_t pageSize, uint64_t pages, std::string &error) {
  std::lock_guard<std::mutex> lock(sysfsMutex());
  std::string path = hugepageDir(node, pageSize) + "/nr_hugepages";
  std::optional<uint64_t> now = readFileU64(path);
  if (!now) {
    error = "cannot read " + path;
    return false;
  }
  uint64_t target = *now > pages ? *now - pages : 0;
  if (!writeFileText(path, std::to_string(target), error)) {
    error = path + ": " + error;
    return false;
  }
  return true;
}

} // namespace msc::exec
