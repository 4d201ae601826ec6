#include "tools/mscale-train-sim/Collective.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace msc::workload {
namespace {

constexpr uint32_t kMagic = 0x4543534d; // "MSCE"
constexpr uint32_t kVersion = 1;

struct Hello {
  uint32_t magic = kMagic, version = kVersion, rank = 0, world = 0, params = 0, microBatches = 0;
};

using Clock = std::chrono::steady_clock;

std::string errnoText(const char *what) { return std::string(what) + ": " + std::strerror(errno); }

// Whole reads and writes: a short one is the peer gone (or silent for longer than the timeout).
bool writeAll(int fd, const void *data, size_t size, std::string &error) {
  const char *p = static_cast<const char *>(data);
  while (size) {
    ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      error = errnoText("send");
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

bool readAll(int fd, void *data, size_t size, std::string &error) {
  char *p = static_cast<char *>(data);
  while (size) {
    ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n == 0) {
      error = "the connection ended";
      return false;
    }
    if (n < 0) {
      error = errno == EAGAIN || errno == EWOULDBLOCK ? "nothing came within the timeout" : errnoText("recv");
      return false;
    }
    p += n;
    size -= size_t(n);
  }
  return true;
}

template <class T> bool writeValue(int fd, const T &v, std::string &error) { return writeAll(fd, &v, sizeof v, error); }
template <class T> bool readValue(int fd, T &v, std::string &error) { return readAll(fd, &v, sizeof v, error); }

void setTimeouts(int fd, uint32_t timeoutMs) {
  timeval tv{time_t(timeoutMs / 1000), suseconds_t(timeoutMs % 1000) * 1000};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

std::unique_ptr<addrinfo, void (*)(addrinfo *)> resolve(const std::string &address, uint16_t port, bool passive,
                                                        std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo *out = nullptr;
  if (int rc = ::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints, &out); rc != 0) {
    error = "cannot resolve '" + address + "': " + ::gai_strerror(rc);
    out = nullptr;
  }
  return {out, [](addrinfo *a) {
            if (a)
              ::freeaddrinfo(a);
          }};
}

uint32_t remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? uint32_t(left) : 0;
}

} // namespace

std::pair<uint32_t, uint32_t> microBatchesOf(uint32_t rank, uint32_t world, uint32_t microBatches) {
  auto at = [&](uint32_t r) { return uint32_t(uint64_t(r) * microBatches / world); };
  return {at(rank), at(rank + 1)};
}

std::unique_ptr<Collective> Collective::join(uint32_t rank, uint32_t world, const std::string &address, uint16_t port,
                                             uint32_t params, uint32_t microBatches, uint32_t timeoutMs,
                                             std::string &error) {
  std::unique_ptr<Collective> c(new Collective(rank, world, params, microBatches));
  if (!(rank == 0 ? c->lead(address, port, timeoutMs, error) : c->follow(address, port, timeoutMs, error)))
    return nullptr;
  return c;
}

Collective::~Collective() {
  for (int fd : peers_)
    if (fd >= 0)
      ::close(fd);
}

bool Collective::lead(const std::string &address, uint16_t port, uint32_t timeoutMs, std::string &error) {
  peers_.assign(world_, -1);
  if (world_ == 1)
    return true; // alone: nothing to listen for
  auto where = resolve(address, port, true, error);
  if (!where)
    return false;
  int listener = ::socket(where->ai_family, where->ai_socktype | SOCK_CLOEXEC, where->ai_protocol);
  if (listener < 0) {
    error = errnoText("socket");
    return false;
  }
  // The previous attempt's connections may linger in TIME_WAIT on the same port.
  int one = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  std::string at = address + ":" + std::to_string(port);
  if (::bind(listener, where->ai_addr, where->ai_addrlen) != 0 || ::listen(listener, int(world_)) != 0) {
    error = errnoText(("listen on " + at).c_str());
    ::close(listener);
    return false;
  }
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  uint32_t joined = 1;
  while (joined < world_) {
    pollfd p{listener, POLLIN, 0};
    int ready = ::poll(&p, 1, int(remainingMs(deadline)));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0) {
      std::string missing;
      for (uint32_t r = 1; r < world_; ++r)
        if (peers_[r] < 0)
          missing += (missing.empty() ? "" : ", ") + std::to_string(r);
      error = "rendezvous on " + at + ": rank(s) " + missing + " of " + std::to_string(world_) + " did not join within " +
              std::to_string(timeoutMs) + " ms";
      ::close(listener);
      return false;
    }
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0)
      continue;
    setTimeouts(fd, std::max<uint32_t>(remainingMs(deadline), 1));
    Hello h;
    std::string why;
    if (!readValue(fd, h, why) || h.magic != kMagic) { // not one of ours: it is not the job's business
      ::close(fd);
      continue;
    }
    if (h.version != kVersion || h.world != world_ || h.params != params_ || h.microBatches != microBatches_ ||
        h.rank == 0 || h.rank >= world_ || peers_[h.rank] >= 0) {
      error = "rendezvous on " + at + ": a rank says it is rank " + std::to_string(h.rank) + " of " +
              std::to_string(h.world) + " with " + std::to_string(h.microBatches) + " micro-batches a step; this job is " +
              std::to_string(world_) + " ranks with " + std::to_string(microBatches_) +
              (h.rank > 0 && h.rank < world_ && peers_[h.rank] >= 0 ? " and that rank has joined already" : "");
      ::close(fd);
      ::close(listener);
      return false;
    }
    setTimeouts(fd, timeoutMs);
    peers_[h.rank] = fd;
    ++joined;
  }
  ::close(listener);
  return true;
}

bool Collective::follow(const std::string &address, uint16_t port, uint32_t timeoutMs, std::string &error) {
  peers_.assign(1, -1);
  std::string at = address + ":" + std::to_string(port);
  Clock::time_point deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  std::string last;
  // Rank 0 may not listen yet: retry until it does, or the rendezvous times out.
  while (true) {
    auto where = resolve(address, port, false, error);
    if (!where)
      return false;
    int fd = ::socket(where->ai_family, where->ai_socktype | SOCK_CLOEXEC, where->ai_protocol);
    if (fd < 0) {
      error = errnoText("socket");
      return false;
    }
    if (::connect(fd, where->ai_addr, where->ai_addrlen) == 0) {
      setTimeouts(fd, timeoutMs);
      Hello h;
      h.rank = rank_;
      h.world = world_;
      h.params = params_;
      h.microBatches = microBatches_;
      if (!writeValue(fd, h, error)) {
        ::close(fd);
        error = "rendezvous on " + at + ": " + error;
        return false;
      }
      peers_[0] = fd;
      return true;
    }
    last = std::strerror(errno);
    ::close(fd);
    if (!remainingMs(deadline)) {
      error = "rendezvous on " + at + ": rank 0 did not accept within " + std::to_string(timeoutMs) + " ms (" + last + ")";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::min<uint32_t>(20, remainingMs(deadline))));
  }
}

bool Collective::agreeOnResume(uint64_t &step, std::string &error) {
  if (rank_ != 0)
    return readValue(peers_[0], step, error) || (error = "rank 0 did not say where to resume: " + error, false);
  for (uint32_t r = 1; r < world_; ++r)
    if (!writeValue(peers_[r], step, error)) {
      error = "telling rank " + std::to_string(r) + " where to resume: " + error;
      return false;
    }
  return true;
}

bool Collective::restored(std::string &error) {
  uint8_t done = 1;
  if (rank_ != 0)
    return (writeValue(peers_[0], done, error) && readValue(peers_[0], done, error)) ||
           (error = "waiting for every rank to restore: " + error, false);
  for (uint32_t r = 1; r < world_; ++r)
    if (!readValue(peers_[r], done, error)) {
      error = "rank " + std::to_string(r) + " did not restore: " + error;
      return false;
    }
  for (uint32_t r = 1; r < world_; ++r)
    if (!writeValue(peers_[r], done, error)) {
      error = "rank " + std::to_string(r) + ": " + error;
      return false;
    }
  return true;
}

bool Collective::logged(uint64_t step, std::string &error) {
  if (rank_ != 0)
    return writeValue(peers_[0], step, error) || (error = "telling rank 0 step " + std::to_string(step) + " is logged: " + error, false);
  for (uint32_t r = 1; r < world_; ++r) {
    uint64_t theirs = 0;
    if (!readValue(peers_[r], theirs, error) || theirs != step) {
      error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + " did not log it: " +
              (error.empty() ? "it logged step " + std::to_string(theirs) : error);
      return false;
    }
  }
  return true;
}

bool Collective::reduce(uint64_t step, const std::vector<MicroBatchGradient> &mine, float &loss,
                        std::vector<float> &grad, std::string &error) {
  const size_t bytes = size_t(params_) * sizeof(float);
  if (rank_ != 0) {
    uint32_t count = uint32_t(mine.size());
    bool sent = writeValue(peers_[0], step, error) && writeValue(peers_[0], count, error);
    for (size_t i = 0; sent && i < mine.size(); ++i)
      sent = writeValue(peers_[0], mine[i].index, error) && writeValue(peers_[0], mine[i].loss, error) &&
             writeAll(peers_[0], mine[i].grad.data(), bytes, error);
    uint64_t summed = 0;
    grad.resize(params_);
    if (!sent || !readValue(peers_[0], summed, error) || !readValue(peers_[0], loss, error) ||
        !readAll(peers_[0], grad.data(), bytes, error)) {
      error = "step " + std::to_string(step) + ": rank 0: " + error;
      return false;
    }
    if (summed != step) {
      error = "step " + std::to_string(step) + ": rank 0 sent the sum of step " + std::to_string(summed);
      return false;
    }
    return true;
  }
  // Rank 0: every micro-batch in its slot, then one sum in index order.
  std::vector<const MicroBatchGradient *> slots(microBatches_, nullptr);
  for (const MicroBatchGradient &g : mine)
    slots[g.index] = &g;
  std::vector<MicroBatchGradient> &theirs = received_;
  theirs.resize(microBatches_); // kept across steps: no allocation per step once sized
  for (uint32_t r = 1; r < world_; ++r) {
    uint64_t theirStep = 0;
    uint32_t count = 0;
    std::string why;
    auto [first, last] = microBatchesOf(r, world_, microBatches_);
    if (!readValue(peers_[r], theirStep, why) || !readValue(peers_[r], count, why)) {
      error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + ": " + why;
      return false;
    }
    if (theirStep != step || count != last - first) {
      error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + " sent " + std::to_string(count) +
              " micro-batches of step " + std::to_string(theirStep) + ", not its " + std::to_string(last - first);
      return false;
    }
    for (uint32_t i = 0; i < count; ++i) {
      uint32_t index = 0;
      if (!readValue(peers_[r], index, why)) {
        error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + ": " + why;
        return false;
      }
      if (index < first || index >= last || slots[index]) {
        error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + " sent micro-batch " +
                std::to_string(index) + ", not one of its [" + std::to_string(first) + ", " + std::to_string(last) + ")";
        return false;
      }
      MicroBatchGradient &g = theirs[index];
      g.index = index;
      g.grad.resize(params_);
      if (!readValue(peers_[r], g.loss, why) || !readAll(peers_[r], g.grad.data(), bytes, why)) {
        error = "step " + std::to_string(step) + ": rank " + std::to_string(r) + ": " + why;
        return false;
      }
      slots[index] = &g;
    }
  }
  loss = 0;
  grad.assign(params_, 0.f);
  for (uint32_t m = 0; m < microBatches_; ++m) {
    if (!slots[m] || slots[m]->grad.size() != params_) {
      error = "step " + std::to_string(step) + ": micro-batch " + std::to_string(m) + " is missing";
      return false;
    }
    loss += slots[m]->loss;
    for (uint32_t i = 0; i < params_; ++i)
      grad[i] += slots[m]->grad[i];
  }
  for (uint32_t r = 1; r < world_; ++r)
    if (!writeValue(peers_[r], step, error) || !writeValue(peers_[r], loss, error) ||
        !writeAll(peers_[r], grad.data(), bytes, error)) {
      error = "step " + std::to_string(step) + ": sending rank " + std::to_string(r) + " the sum: " + error;
      return false;
    }
  return true;
}

} // namespace msc::workload
