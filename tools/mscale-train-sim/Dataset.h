// The workload's dataset: F shard files of variable-length records, and a loader that visits the
// files in a per-epoch shuffled order and keeps (epoch, file index, byte offset) so that a restored
// loader continues with exactly the next record.
//
// Record: u32 magic 'SAMP', u32 sample id, u16 padding length p, f32 label, f32 x[kFeatures], p bytes.
#pragma once

#include "tools/mscale-train-sim/DataReader.h"
#include "worker/snapshot/Snapshot.h"

#include <cstdint>
#include <string>
#include <vector>

namespace msc::workload {

constexpr int kFeatures = 16;

struct Sample {
  uint32_t id = 0;
  float label = 0;
  float x[kFeatures] = {};
};

// Writes `files` shards holding `samples` records (ids 0..samples-1) into dir; deterministic.
bool generateDataset(const std::string &dir, uint32_t samples, uint32_t files, std::string &error);
// The shard paths of a dataset directory, sorted.
std::vector<std::string> datasetFiles(const std::string &dir);

uint64_t splitmix64(uint64_t &state);

// The record index of a shard (worker::RecordIndex::Scanner): one pass over the record headers.
bool scanRecords(int fd, uint64_t size, std::vector<worker::RecordSpan> &out, std::string &error);

class Loader {
public:
  Loader(std::vector<std::string> files, uint64_t seed, DataReader &reader);
  // Reads the next `n` samples (crossing files and epochs). 0 or -errno; on error `failedFile` and
  // `failedOffset` say where.
  int next(size_t n, std::vector<Sample> &out);
  snapshot::LoaderState state() const;
  // Positions the loader where `s` says; false when `s` does not fit this dataset.
  bool restore(const snapshot::LoaderState &s, std::string &error);
  std::string failedFile;
  uint64_t failedOffset = 0;

private:
  void shuffle();
  std::vector<std::string> files_;
  std::vector<size_t> order_;
  uint64_t seed_;
  DataReader &reader_;
  uint64_t epoch_ = 0, fileIndex_ = 0, offset_ = 0, seen_ = 0;
};

} // namespace msc::workload
