#include "worker/snapshot/Format.h"

#include "worker/snapshot/ChunkCopy.h"
#include "worker/snapshot/Hash.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <system_error>
#include <thread>

namespace msc::snapshot::format {
namespace {

constexpr char kHeaderMagic[8] = {'M', 'S', 'C', 'S', 'N', 'A', 'P', '1'};
constexpr char kTrailerMagic[8] = {'M', 'S', 'C', 'S', 'E', 'N', 'D', '1'};
constexpr size_t kHeaderUsed = 64; // magic 8, version 4, header size 4, step, total, moff, msize, mhash, hhash
constexpr size_t kChunk = 4u << 20; // the unit of write()/read() when the image is not in memory
static_assert(kChunk % kDigestChunk == 0, "a write/read unit holds whole digest chunks");

uint64_t alignUp(uint64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

class Writer {
public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(const std::string &s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  void raw(const void *p, size_t n) {
    auto *b = static_cast<const uint8_t *>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  std::vector<uint8_t> bytes;
};

class Reader {
public:
  Reader(const uint8_t *p, size_t n) : p_(p), n_(n) {}
  bool u32(uint32_t &v) { return raw(&v, 4); }
  bool u64(uint64_t &v) { return raw(&v, 8); }
  bool f64(double &v) { return raw(&v, 8); }
  bool str(std::string &s) {
    uint32_t len;
    if (!u32(len) || len > n_ - pos_)
      return false;
    s.assign(reinterpret_cast<const char *>(p_ + pos_), len);
    pos_ += len;
    return true;
  }
  bool raw(void *dst, size_t n) {
    if (n > n_ - pos_)
      return false;
    std::memcpy(dst, p_ + pos_, n);
    pos_ += n;
    return true;
  }
  bool atEnd() const { return pos_ == n_; }
  size_t remaining() const { return n_ - pos_; }

private:
  const uint8_t *p_;
  size_t n_;
  size_t pos_ = 0;
};

struct BlobEntry {
  std::string name;
  uint32_t kind;
  uint64_t offset, size, hash;
};

std::vector<uint8_t> manifest(const SnapshotMeta &m, const std::vector<BlobView> &blobs,
                              const std::vector<uint64_t> &offsets, const std::vector<uint64_t> &hashes) {
  Writer w;
  w.u64(m.step);
  w.str(m.loader.file);
  w.u64(m.loader.byteOffset);
  w.u64(m.loader.shuffleSeed);
  w.u64(m.loader.epoch);
  w.u64(m.loader.fileIndex);
  w.u64(m.loader.samplesSeen);
  w.str(m.lr.name);
  w.f64(m.lr.baseLr);
  w.f64(m.lr.currentLr);
  w.u64(m.lr.lastStep);
  w.u32(static_cast<uint32_t>(m.lr.params.size()));
  for (double p : m.lr.params)
    w.f64(p);
  w.f64(m.lossScale.scale);
  w.u64(m.lossScale.growthTracker);
  w.u32(static_cast<uint32_t>(m.lossScale.history.size()));
  for (const auto &e : m.lossScale.history) {
    w.u64(e.step);
    w.f64(e.scale);
  }
  w.u32(static_cast<uint32_t>(blobs.size()));
  for (size_t i = 0; i < blobs.size(); ++i) {
    w.str(blobs[i].name);
    w.u32(static_cast<uint32_t>(blobs[i].kind));
    w.u64(offsets[i]);
    w.u64(blobs[i].size);
    w.u64(hashes[i]);
  }
  return std::move(w.bytes);
}

bool parseManifest(const std::vector<uint8_t> &bytes, SnapshotMeta &m, std::vector<BlobEntry> &entries) {
  Reader r(bytes.data(), bytes.size());
  uint32_t n;
  if (!r.u64(m.step) || !r.str(m.loader.file) || !r.u64(m.loader.byteOffset) || !r.u64(m.loader.shuffleSeed) ||
      !r.u64(m.loader.epoch) || !r.u64(m.loader.fileIndex) || !r.u64(m.loader.samplesSeen) || !r.str(m.lr.name) ||
      !r.f64(m.lr.baseLr) || !r.f64(m.lr.currentLr) || !r.u64(m.lr.lastStep) || !r.u32(n) || n > r.remaining() / 8)
    return false;
  m.lr.params.resize(n);
  for (auto &p : m.lr.params)
    if (!r.f64(p))
      return false;
  if (!r.f64(m.lossScale.scale) || !r.u64(m.lossScale.growthTracker) || !r.u32(n) || n > r.remaining() / 16)
    return false;
  m.lossScale.history.resize(n);
  for (auto &e : m.lossScale.history)
    if (!r.u64(e.step) || !r.f64(e.scale))
      return false;
  if (!r.u32(n) || n > r.remaining() / 32)
    return false;
  entries.resize(n);
  for (auto &e : entries)
    if (!r.str(e.name) || !r.u32(e.kind) || !r.u64(e.offset) || !r.u64(e.size) || !r.u64(e.hash))
      return false;
  return r.atEnd();
}

// Reads [offset, offset + size) of `src` into p and hashes its chunks. A helper thread reads ahead
// while this one hashes what has arrived, so a disk is never idle waiting for the hash (reading and
// hashing one after the other cost up to half the read speed).
Status readAndHashChunks(Source &src, uint64_t offset, uint8_t *p, uint64_t size, uint64_t *chunkHashes) {
  std::mutex m;
  std::condition_variable arrived;
  uint64_t readUpTo = 0;
  bool stopped = false; // the reader failed
  Status readStatus;
  auto readAll = [&] {
    for (uint64_t done = 0; done < size;) {
      size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
      Status s = src.read(offset + done, p + done, n);
      std::lock_guard<std::mutex> lock(m);
      if (!s) {
        readStatus = std::move(s);
        stopped = true;
        arrived.notify_one();
        return;
      }
      done += n;
      readUpTo = done;
      arrived.notify_one();
    }
  };
  std::thread reader;
  try {
    reader = std::thread(readAll);
  } catch (const std::system_error &) { // no thread to be had: read everything first
    readAll();
  }
  for (uint64_t hashed = 0; hashed < size;) {
    uint64_t upTo;
    {
      std::unique_lock<std::mutex> lock(m);
      arrived.wait(lock, [&] { return readUpTo > hashed || stopped; });
      if (readUpTo <= hashed)
        break; // the read failed
      upTo = readUpTo;
    }
    copyAndHashChunks(nullptr, p + hashed, upTo - hashed, 1, chunkHashes + hashed / kDigestChunk);
    hashed = upTo;
  }
  if (reader.joinable())
    reader.join();
  return readStatus;
}

struct Header {
  uint32_t version = 0, headerSize = 0;
  uint64_t step = 0, total = 0, manifestOffset = 0, manifestSize = 0, manifestHash = 0;
};

Status torn(const std::string &what, const std::string &why) { return Status::make(ErrorCode::ERR_SNAP_005, {what, why}); }
Status corrupt(const std::string &what, const std::string &part) {
  return Status::make(ErrorCode::ERR_SNAP_006, {what, part});
}

Status readHeaderAndTrailer(Source &src, const std::string &what, Header &h) {
  uint64_t size = src.size();
  if (size < kHeaderSize + kTrailerSize)
    return torn(what, std::to_string(size) + " bytes is shorter than a header and a trailer");
  uint8_t buf[kHeaderUsed];
  if (Status s = src.read(0, buf, sizeof buf); !s)
    return s;
  if (std::memcmp(buf, kHeaderMagic, 8) != 0)
    return torn(what, "no header (the write did not finish)");
  uint64_t stored;
  std::memcpy(&stored, buf + 56, 8);
  if (hash64(buf, 56) != stored)
    return corrupt(what, "the header");
  std::memcpy(&h.version, buf + 8, 4);
  std::memcpy(&h.headerSize, buf + 12, 4);
  std::memcpy(&h.step, buf + 16, 8);
  std::memcpy(&h.total, buf + 24, 8);
  std::memcpy(&h.manifestOffset, buf + 32, 8);
  std::memcpy(&h.manifestSize, buf + 40, 8);
  std::memcpy(&h.manifestHash, buf + 48, 8);
  if (h.version < kOldestVersion || h.version > kVersion)
    return Status::make(ErrorCode::ERR_SNAP_010, {what, std::to_string(h.version),
                                                  std::to_string(kOldestVersion) + " or " + std::to_string(kVersion)});
  if (h.total != size)
    return torn(what, "it is " + std::to_string(size) + " bytes, its header says " + std::to_string(h.total));
  if (h.headerSize != kHeaderSize || h.manifestOffset < kHeaderSize || h.manifestSize > size ||
      h.manifestOffset + h.manifestSize + kTrailerSize != size)
    return corrupt(what, "the header (inconsistent layout)");
  uint8_t t[kTrailerSize];
  if (Status s = src.read(size - kTrailerSize, t, sizeof t); !s)
    return s;
  uint64_t tStep, tManifest, tHash;
  std::memcpy(&tStep, t + 8, 8);
  std::memcpy(&tManifest, t + 16, 8);
  std::memcpy(&tHash, t + 24, 8);
  if (std::memcmp(t, kTrailerMagic, 8) != 0 || hash64(t, 24) != tHash || tStep != h.step ||
      tManifest != h.manifestHash)
    return torn(what, "the trailer does not match the header");
  return {};
}

} // namespace

Layout layout(const SnapshotMeta &meta, const std::vector<BlobView> &blobs) {
  Layout l;
  uint64_t off = kHeaderSize;
  for (const auto &b : blobs) {
    l.blobOffsets.push_back(off);
    off = alignUp(off + b.size);
  }
  l.manifestOffset = off;
  l.manifestSize = manifest(meta, blobs, l.blobOffsets, std::vector<uint64_t>(blobs.size())).size();
  l.totalSize = l.manifestOffset + l.manifestSize + kTrailerSize;
  return l;
}

Status encode(const SnapshotMeta &meta, const std::vector<BlobView> &blobs, Sink &sink, uint64_t crashAfterBytes,
              const std::string &what, unsigned threads) {
  Layout l = layout(meta, blobs);
  std::vector<uint64_t> hashes;
  uint64_t written = 0;
  for (size_t i = 0; i < blobs.size(); ++i) {
    const auto *p = static_cast<const uint8_t *>(blobs[i].data);
    const uint64_t size = blobs[i].size;
    std::vector<uint64_t> chunkHashes(chunkCount(size));
    if (uint8_t *dst = crashAfterBytes ? nullptr : sink.direct(l.blobOffsets[i], size)) {
      copyAndHashChunks(dst, p, size, threads ? threads : threadsFor(size), chunkHashes.data());
    } else if (!crashAfterBytes && size > kChunk) {
      // A file: hash on a helper thread while this one writes, so the device never waits for the hash.
      std::thread hasher;
      try {
        hasher = std::thread(copyAndHashChunks, nullptr, p, size, 1u, chunkHashes.data());
      } catch (const std::system_error &) { // no thread to be had: hash here first
        copyAndHashChunks(nullptr, p, size, 1, chunkHashes.data());
      }
      Status s;
      for (uint64_t done = 0; done < size && s;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
        s = sink.write(l.blobOffsets[i] + done, p + done, n);
        done += n;
      }
      if (hasher.joinable())
        hasher.join();
      if (!s)
        return s;
    } else {
      for (uint64_t done = 0; done < size;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, size - done));
        // hash, then write while the chunk is still in cache
        copyAndHashChunks(nullptr, p + done, n, 1, chunkHashes.data() + done / kDigestChunk);
        if (crashAfterBytes && written + n >= crashAfterBytes) {
          size_t part = static_cast<size_t>(crashAfterBytes - written);
          (void)sink.write(l.blobOffsets[i] + done, p + done, part);
          _exit(86);
        }
        if (Status s = sink.write(l.blobOffsets[i] + done, p + done, n); !s)
          return s;
        done += n;
        written += n;
      }
    }
    hashes.push_back(combineChunkHashes(chunkHashes));
  }
  std::vector<uint8_t> man = manifest(meta, blobs, l.blobOffsets, hashes);
  uint64_t manHash = hash64(man.data(), man.size());
  if (Status s = sink.write(l.manifestOffset, man.data(), man.size()); !s)
    return s;
  uint8_t t[kTrailerSize];
  std::memcpy(t, kTrailerMagic, 8);
  std::memcpy(t + 8, &meta.step, 8);
  std::memcpy(t + 16, &manHash, 8);
  uint64_t th = hash64(t, 24);
  std::memcpy(t + 24, &th, 8);
  if (Status s = sink.write(l.totalSize - kTrailerSize, t, sizeof t); !s)
    return s;
  uint8_t hdr[kHeaderUsed] = {};
  std::memcpy(hdr, kHeaderMagic, 8);
  uint32_t version = kVersion, hsize = kHeaderSize;
  std::memcpy(hdr + 8, &version, 4);
  std::memcpy(hdr + 12, &hsize, 4);
  std::memcpy(hdr + 16, &meta.step, 8);
  std::memcpy(hdr + 24, &l.totalSize, 8);
  std::memcpy(hdr + 32, &l.manifestOffset, 8);
  std::memcpy(hdr + 40, &l.manifestSize, 8);
  std::memcpy(hdr + 48, &manHash, 8);
  uint64_t hh = hash64(hdr, 56);
  std::memcpy(hdr + 56, &hh, 8);
  return sink.write(0, hdr, sizeof hdr);
}

Status peek(Source &src, const std::string &what, uint64_t &step) {
  Header h;
  if (Status s = readHeaderAndTrailer(src, what, h); !s)
    return s;
  step = h.step;
  return {};
}

Status decode(Source &src, const std::string &what, const BlobDestination &dest, Restored &out,
              unsigned threads) {
  Header h;
  if (Status s = readHeaderAndTrailer(src, what, h); !s)
    return s;
  std::vector<uint8_t> man(h.manifestSize);
  if (Status s = src.read(h.manifestOffset, man.data(), man.size()); !s)
    return s;
  if (hash64(man.data(), man.size()) != h.manifestHash)
    return corrupt(what, "the manifest");
  std::vector<BlobEntry> entries;
  out.meta = SnapshotMeta{};
  if (!parseManifest(man, out.meta, entries) || out.meta.step != h.step)
    return corrupt(what, "the manifest (cannot be parsed)");
  out.blobs.clear();
  out.blobs.reserve(entries.size());
  for (const auto &e : entries) {
    if (e.offset < kHeaderSize || e.size > h.manifestOffset || e.offset > h.manifestOffset - e.size)
      return corrupt(what, "the manifest (blob '" + e.name + "' out of bounds)");
    RestoredBlob &b = out.blobs.emplace_back();
    b.name = e.name;
    b.kind = static_cast<BlobKind>(e.kind);
    b.size = e.size;
    b.data = dest ? dest(e.name, b.kind, e.size) : nullptr;
    if (!b.data) {
      b.owned.resize(e.size);
      b.data = b.owned.data();
    }
    auto *p = static_cast<uint8_t *>(b.data);
    uint64_t digest;
    if (h.version == 1) {
      Hash64 hs;
      for (uint64_t done = 0; done < e.size;) {
        size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, e.size - done));
        if (Status s = src.read(e.offset + done, p + done, n); !s)
          return s;
        hs.update(p + done, n);
        done += n;
      }
      digest = hs.digest();
    } else {
      std::vector<uint64_t> chunkHashes(chunkCount(e.size));
      if (const uint8_t *from = src.direct(e.offset, e.size)) {
        copyAndHashChunks(p, from, e.size, threads ? threads : threadsFor(e.size), chunkHashes.data());
      } else {
        if (Status s = readAndHashChunks(src, e.offset, p, e.size, chunkHashes.data()); !s)
          return s;
      }
      digest = combineChunkHashes(chunkHashes);
    }
    if (digest != e.hash)
      return corrupt(what, "blob '" + e.name + "'");
  }
  return {};
}

} // namespace msc::snapshot::format
