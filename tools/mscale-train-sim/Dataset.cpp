#include "tools/mscale-train-sim/Dataset.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace msc::workload {
namespace {
constexpr uint32_t kMagic = 0x504D4153; // "SAMP"
constexpr size_t kHead = 4 + 4 + 2 + 4;

float uniform(uint64_t &s) { return static_cast<float>(splitmix64(s) >> 40) / static_cast<float>(1 << 24) * 2.f - 1.f; }
} // namespace

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

bool generateDataset(const std::string &dir, uint32_t samples, uint32_t files, std::string &error) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    error = "cannot create '" + dir + "': " + std::strerror(errno);
    return false;
  }
  float wTrue[kFeatures];
  uint64_t ws = 12345;
  for (float &w : wTrue)
    w = uniform(ws);
  std::vector<std::vector<uint8_t>> shards(files);
  for (uint32_t id = 0; id < samples; ++id) {
    uint64_t s = 0xDA7A0000ULL + id;
    Sample smp;
    smp.id = id;
    float dot = 0;
    for (int k = 0; k < kFeatures; ++k) {
      smp.x[k] = uniform(s);
      dot += smp.x[k] * wTrue[k];
    }
    smp.label = dot + 0.3f * uniform(s) > 0 ? 1.f : 0.f;
    uint16_t pad = static_cast<uint16_t>(splitmix64(s) % 13);
    auto &b = shards[id % files];
    auto put = [&b](const void *p, size_t n) { b.insert(b.end(), (const uint8_t *)p, (const uint8_t *)p + n); };
    put(&kMagic, 4);
    put(&smp.id, 4);
    put(&pad, 2);
    put(&smp.label, 4);
    put(smp.x, sizeof smp.x);
    b.insert(b.end(), pad, static_cast<uint8_t>(id));
  }
  for (uint32_t f = 0; f < files; ++f) {
    char name[32];
    std::snprintf(name, sizeof name, "/shard-%03u.dat", f);
    std::string path = dir + name;
    FILE *fp = std::fopen(path.c_str(), "wb");
    if (!fp || std::fwrite(shards[f].data(), 1, shards[f].size(), fp) != shards[f].size() || std::fclose(fp) != 0) {
      error = "cannot write '" + path + "'";
      return false;
    }
  }
  return true;
}

std::vector<std::string> datasetFiles(const std::string &dir) {
  std::vector<std::string> out;
  if (DIR *d = ::opendir(dir.c_str())) {
    while (dirent *e = ::readdir(d))
      if (std::strncmp(e->d_name, "shard-", 6) == 0)
        out.push_back(dir + "/" + e->d_name);
    ::closedir(d);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool scanRecords(int fd, uint64_t size, std::vector<worker::RecordSpan> &out, std::string &error) {
  constexpr size_t kChunk = 1 << 20;
  std::vector<uint8_t> buf;
  uint64_t bufStart = 0;
  for (uint64_t off = 0; off < size;) {
    if (off + kHead > bufStart + buf.size()) { // the header is not in the buffer: read on from it
      buf.resize(static_cast<size_t>(std::min<uint64_t>(kChunk, size - off)));
      int64_t got = worker::preadFully(fd, off, buf.data(), buf.size());
      if (got < 0) {
        error = std::string("read failed: ") + std::strerror(static_cast<int>(-got));
        return false;
      }
      buf.resize(static_cast<size_t>(got));
      bufStart = off;
    }
    if (off + kHead > bufStart + buf.size()) {
      error = "a record header is cut off at offset " + std::to_string(off);
      return false;
    }
    const uint8_t *h = buf.data() + (off - bufStart);
    uint32_t magic;
    uint16_t pad;
    std::memcpy(&magic, h, 4);
    std::memcpy(&pad, h + 8, 2);
    uint64_t length = kHead + sizeof(Sample::x) + pad;
    if (magic != kMagic || off + length > size) {
      error = "no record at offset " + std::to_string(off);
      return false;
    }
    out.push_back({off, length});
    off += length;
  }
  return true;
}

Loader::Loader(std::vector<std::string> files, uint64_t seed, DataReader &reader)
    : files_(std::move(files)), seed_(seed), reader_(reader) {
  shuffle();
}

void Loader::shuffle() {
  order_.resize(files_.size());
  for (size_t i = 0; i < order_.size(); ++i)
    order_[i] = i;
  uint64_t s = seed_ ^ (epoch_ * 0x9E3779B97F4A7C15ULL);
  for (size_t i = order_.size(); i > 1; --i)
    std::swap(order_[i - 1], order_[splitmix64(s) % i]);
}

int Loader::next(size_t n, std::vector<Sample> &out) {
  out.clear();
  while (out.size() < n) {
    const std::string &path = files_[order_[fileIndex_]];
    uint8_t head[kHead];
    int64_t got = reader_.read(path, offset_, head, kHead);
    if (got < 0) {
      failedFile = path, failedOffset = offset_;
      return static_cast<int>(got);
    }
    if (got == 0) { // end of this file: next file, or next epoch
      offset_ = 0;
      if (++fileIndex_ == files_.size()) {
        fileIndex_ = 0, seen_ = 0, ++epoch_;
        shuffle();
      }
      continue;
    }
    uint32_t magic;
    uint16_t pad;
    Sample s;
    std::memcpy(&magic, head, 4);
    std::memcpy(&s.id, head + 4, 4);
    std::memcpy(&pad, head + 8, 2);
    std::memcpy(&s.label, head + 10, 4);
    if (got != static_cast<int64_t>(kHead) || magic != kMagic) {
      failedFile = path, failedOffset = offset_;
      return -EBADMSG;
    }
    got = reader_.read(path, offset_ + kHead, s.x, sizeof s.x);
    if (got != static_cast<int64_t>(sizeof s.x)) {
      failedFile = path, failedOffset = offset_ + kHead;
      return got < 0 ? static_cast<int>(got) : -EBADMSG;
    }
    offset_ += kHead + sizeof s.x + pad;
    ++seen_;
    out.push_back(s);
  }
  return 0;
}

snapshot::LoaderState Loader::state() const {
  snapshot::LoaderState s;
  s.file = files_[order_[fileIndex_]];
  s.byteOffset = offset_;
  s.shuffleSeed = seed_;
  s.epoch = epoch_;
  s.fileIndex = fileIndex_;
  s.samplesSeen = seen_;
  return s;
}

bool Loader::restore(const snapshot::LoaderState &s, std::string &error) {
  if (s.shuffleSeed != seed_) {
    error = "the snapshot's shuffle seed " + std::to_string(s.shuffleSeed) + " is not this run's " +
            std::to_string(seed_);
    return false;
  }
  epoch_ = s.epoch;
  shuffle();
  if (s.fileIndex >= files_.size() || files_[order_[s.fileIndex]] != s.file) {
    error = "the snapshot's loader file '" + s.file + "' is not file " + std::to_string(s.fileIndex) +
            " of epoch " + std::to_string(s.epoch) + " in this dataset";
    return false;
  }
  fileIndex_ = s.fileIndex;
  offset_ = s.byteOffset;
  seen_ = s.samplesSeen;
  return true;
}

} // namespace msc::workload
