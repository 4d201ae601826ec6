#include "executor/WorkerOutput.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

namespace msc::exec {

std::string WorkerOutput::fileName(unsigned rank, uint32_t attempt, bool standby) {
  return "rank" + std::to_string(rank) + (standby ? ".standby" : "") + ".attempt" + std::to_string(attempt) + ".log";
}

std::unique_ptr<WorkerOutput> WorkerOutput::create(std::string dir, WorkerOutputOptions options, std::string &error) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    error = "cannot make '" + dir + "': " + ec.message();
    return nullptr;
  }
  std::unique_ptr<WorkerOutput> out(new WorkerOutput(std::move(dir), options));
  out->wakeFd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (out->wakeFd_ < 0) {
    error = std::string("eventfd: ") + std::strerror(errno);
    return nullptr;
  }
  out->thread_ = std::thread([w = out.get()] { w->pump(); });
  return out;
}

WorkerOutput::~WorkerOutput() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  uint64_t one = 1;
  if (wakeFd_ >= 0 && ::write(wakeFd_, &one, sizeof one) < 0) {
  }
  if (thread_.joinable())
    thread_.join();
  for (auto &s : streams_) {
    drain(*s);
    close(*s);
  }
  if (wakeFd_ >= 0)
    ::close(wakeFd_);
}

int WorkerOutput::open(unsigned rank, uint32_t attempt, bool standby, std::string &error) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return -1;
  }
  auto s = std::make_unique<Stream>();
  s->path = dir_ + "/" + fileName(rank, attempt, standby);
  s->fileFd = ::open(s->path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
  if (s->fileFd < 0) {
    error = "cannot write '" + s->path + "': " + std::strerror(errno);
    ::close(p[0]);
    ::close(p[1]);
    return -1;
  }
  ::fcntl(p[0], F_SETFL, O_NONBLOCK);
  s->readFd = p[0];
  s->rank = rank, s->attempt = attempt, s->standby = standby;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!standby) {
      std::vector<uint32_t> &kept = attempts_[rank];
      if (std::find(kept.begin(), kept.end(), attempt) == kept.end())
        kept.push_back(attempt);
      forgetOldAttempts(rank);
    }
    streams_.push_back(std::move(s));
  }
  uint64_t one = 1;
  if (::write(wakeFd_, &one, sizeof one) < 0) {
  }
  return p[1];
}

void WorkerOutput::forgetOldAttempts(unsigned rank) {
  std::vector<uint32_t> &kept = attempts_[rank];
  while (kept.size() > std::max(1u, options_.attemptsKept)) {
    for (const char *suffix : {"", ".1"}) {
      std::error_code ec;
      std::filesystem::remove(dir_ + "/" + fileName(rank, kept.front(), false) + suffix, ec);
      std::filesystem::remove(dir_ + "/" + fileName(rank, kept.front(), true) + suffix, ec);
    }
    kept.erase(kept.begin());
  }
}

void WorkerOutput::write(Stream &s, const char *data, size_t n) {
  uint64_t max = std::max<uint64_t>(1, options_.maxFileBytes);
  for (size_t done = 0; done < n;) {
    if (s.bytes >= max) {
      // Bounded: the older piece is kept as .1, the file starts again.
      ::close(s.fileFd);
      std::error_code ec;
      std::filesystem::rename(s.path, s.path + ".1", ec);
      s.fileFd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
      s.bytes = 0;
    }
    size_t piece = size_t(std::min<uint64_t>(n - done, max - s.bytes));
    for (size_t written = 0; s.fileFd >= 0 && written < piece;) {
      ssize_t w = ::write(s.fileFd, data + done + written, piece - written);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0)
        break; // a full disk loses output, never the worker
      written += size_t(w);
    }
    s.bytes += piece;
    done += piece;
  }
  for (size_t i = 0; i < n; ++i) {
    if (data[i] == '\n') {
      if (s.partial.find_first_not_of(" \t\r") != std::string::npos)
        s.last = s.partial;
      s.partial.clear();
    } else if (s.partial.size() < 4096) {
      s.partial += data[i];
    }
  }
}

bool WorkerOutput::drain(Stream &s) {
  if (s.readFd < 0)
    return false;
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(s.readFd, buf, sizeof buf);
    if (n > 0) {
      write(s, buf, size_t(n));
      continue;
    }
    if (n < 0 && errno == EINTR)
      continue;
    return n < 0 && errno == EAGAIN; // 0: every writer is gone
  }
}

void WorkerOutput::close(Stream &s) {
  if (s.partial.find_first_not_of(" \t\r") != std::string::npos)
    s.last = s.partial;
  s.partial.clear();
  if (!s.standby && !s.last.empty())
    lastLines_[s.rank] = s.last;
  if (s.readFd >= 0)
    ::close(s.readFd);
  if (s.fileFd >= 0)
    ::close(s.fileFd);
  s.readFd = s.fileFd = -1;
}

std::string WorkerOutput::lastLine(unsigned rank) {
  std::lock_guard<std::mutex> lock(mutex_);
  Stream *newest = nullptr;
  for (auto &s : streams_)
    if (!s->standby && s->rank == rank && (!newest || s->attempt >= newest->attempt))
      newest = s.get();
  if (newest && newest->readFd >= 0) {
    if (!drain(*newest))
      close(*newest);
    std::string line = newest->partial.find_first_not_of(" \t\r") != std::string::npos ? newest->partial : newest->last;
    if (!line.empty())
      return line;
  }
  auto it = lastLines_.find(rank);
  return it == lastLines_.end() ? std::string() : it->second;
}

void WorkerOutput::pump() {
  for (;;) {
    std::vector<pollfd> fds{{wakeFd_, POLLIN, 0}};
    std::vector<Stream *> watched;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopping_)
        return;
      std::erase_if(streams_, [](const std::unique_ptr<Stream> &s) { return s->readFd < 0; });
      for (auto &s : streams_) {
        fds.push_back({s->readFd, POLLIN, 0});
        watched.push_back(s.get());
      }
    }
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      return;
    if (fds[0].revents) {
      uint64_t n;
      while (::read(wakeFd_, &n, sizeof n) > 0) {
      }
    }
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 1; i < fds.size(); ++i)
      if (fds[i].revents && watched[i - 1]->readFd == fds[i].fd && !drain(*watched[i - 1]))
        close(*watched[i - 1]);
  }
}

} // namespace msc::exec
