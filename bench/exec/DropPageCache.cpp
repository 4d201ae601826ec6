#include "bench/exec/DropPageCache.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace msc::bench {

std::string dropPageCache(const std::vector<std::string> &paths) {
  ::sync();
  if (FILE *f = std::fopen("/proc/sys/vm/drop_caches", "w")) {
    bool ok = std::fputs("3\n", f) >= 0;
    if (std::fclose(f) == 0 && ok)
      return "echo 3 > /proc/sys/vm/drop_caches";
  }
  for (const std::string &p : paths) {
    int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      ::close(fd);
    }
  }
  return "posix_fadvise(POSIX_FADV_DONTNEED) per file (drop_caches refused)";
}

} // namespace msc::bench
