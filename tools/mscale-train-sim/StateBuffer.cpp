#include "tools/mscale-train-sim/StateBuffer.h"

#include <sys/mman.h>

namespace msc::workload {

StateBuffer::StateBuffer(size_t bytes) : requested_(bytes) {
  if (!bytes)
    return;
  // Populated where it can be; where the kernel cannot populate all of it now, the rest faults in
  // on first touch as any allocation would.
  void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (p == MAP_FAILED)
    return;
  data_ = static_cast<uint8_t *>(p);
}

StateBuffer::~StateBuffer() {
  if (data_)
    ::munmap(data_, requested_);
}

} // namespace msc::workload
