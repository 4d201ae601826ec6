// The workload's large optimizer state (--state-mib): one anonymous mapping, populated when it is
// made (MAP_POPULATE). A restarted worker fills its whole state from the snapshot before its first
// step, so every page is touched anyway; populating in one call saves the ~262k page-fault traps per
// GiB that first-touch costs (expensive in a VM), which sit on the path from a fault to the first
// resumed step. (Transparent huge pages were tried: on the project's VM zeroing 2 MiB pages made the
// restart slower, not faster; see docs/PERFORMANCE.md, recovery.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace msc::workload {

class StateBuffer {
public:
  // `bytes` zeroed bytes; size() == 0 when `bytes` is 0 or the mapping failed (check ok()).
  explicit StateBuffer(size_t bytes);
  ~StateBuffer();
  StateBuffer(const StateBuffer &) = delete;
  StateBuffer &operator=(const StateBuffer &) = delete;

  bool ok() const { return data_ != nullptr || requested_ == 0; }
  uint8_t *data() { return data_; }
  size_t size() const { return data_ ? requested_ : 0; }

private:
  uint8_t *data_ = nullptr;
  size_t requested_ = 0;
};

} // namespace msc::workload
