// The agent's poll loop: accept and check peers, decode frames, hand requests over, queue responses.
#include "executor/agent/AgentServer.h"

#include "executor/host/Sys.h"

#include <llvm/ADT/StringRef.h>

#include <algorithm>
#include <cerrno>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace msc::exec {

struct AgentServer::Connection {
  int fd = -1;
  PeerCredentials peer;
  FrameDecoder decoder;
  std::string out;
  bool closeAfterWrite = false;
  explicit Connection(uint64_t max) : decoder(max) {}
};

AgentServer::AgentServer(ServerOptions options, Logger &log, ServerHandlers handlers)
    : options_(std::move(options)), log_(log), handlers_(std::move(handlers)), http_(handlers_.http) {}

AgentServer::~AgentServer() {
  for (auto &[fd, c] : connections_)
    ::close(fd);
  for (int fd : {listenFd_, wakeRead_, wakeWrite_})
    if (fd >= 0)
      ::close(fd);
  if (listenFd_ >= 0)
    ::unlink(options_.socketPath.c_str());
}

bool AgentServer::listen(DiagnosticEngine &diags) {
  std::string error;
  listenFd_ = listenUnix(options_.socketPath, 0660, error);
  if (listenFd_ < 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << error;
    return false;
  }
  if (options_.socketGid && ::chown(options_.socketPath.c_str(), static_cast<uid_t>(-1), *options_.socketGid) != 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << ("chown: " + errnoText(errno));
    return false;
  }
  if (!options_.http.empty() && !http_.listen(options_.http, error)) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.http << error;
    return false;
  }
  int p[2];
  if (::pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0) {
    diags.report(DiagCode::ERR_EXEC_014) << options_.socketPath << ("pipe: " + errnoText(errno));
    return false;
  }
  wakeRead_ = p[0];
  wakeWrite_ = p[1];
  return true;
}

void AgentServer::stop() {
  stopping_ = true;
  wake();
}

void AgentServer::wake() {
  if (wakeWrite_ >= 0) {
    char c = 1;
    ssize_t n = ::write(wakeWrite_, &c, 1);
    (void)n;
  }
}

bool AgentServer::allowed(const PeerCredentials &peer) const {
  if (peer.uid == 0 || peer.uid == ::geteuid())
    return true;
  auto has = [](const auto &list, auto id) { return std::find(list.begin(), list.end(), id) != list.end(); };
  if (has(options_.allowedUids, peer.uid) || has(options_.allowedGids, peer.gid))
    return true;
  return std::any_of(peer.groups.begin(), peer.groups.end(),
                     [&](gid_t g) { return has(options_.allowedGids, g); });
}

int AgentServer::serve() {
  while (!stopping_) {
    std::vector<pollfd> fds;
    fds.push_back({listenFd_, POLLIN, 0});
    fds.push_back({wakeRead_, POLLIN, 0});
    http_.addPollFds(fds);
    for (auto &[fd, c] : connections_)
      fds.push_back({fd, static_cast<short>(c->out.empty() ? POLLIN : POLLIN | POLLOUT), 0});
    int n = ::poll(fds.data(), fds.size(), handlers_.wakeInMs ? handlers_.wakeInMs() : 200);
    handlers_.tick();
    http_.expire(std::chrono::steady_clock::now());
    if (n < 0 && errno != EINTR) {
      log_.error("", "poll: " + errnoText(errno));
      return 1;
    }
    if (n <= 0)
      continue;
    for (const pollfd &p : fds) {
      if (!p.revents)
        continue;
      if (p.fd == listenFd_)
        accept();
      else if (p.fd == wakeRead_) {
        char buf[64];
        while (::read(wakeRead_, buf, sizeof buf) > 0) {
        }
      } else if (http_.onReady(p)) {
      } else if (auto it = connections_.find(p.fd); it != connections_.end()) {
        Connection &c = *it->second;
        if (p.revents & (POLLIN | POLLHUP | POLLERR))
          onReadable(c);
        if (connections_.count(p.fd) && (p.revents & POLLOUT))
          onWritable(c);
      }
    }
  }
  return 0;
}

void AgentServer::accept() {
  for (;;) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0)
      return;
    auto c = std::make_unique<Connection>(options_.maxFrameBytes);
    c->fd = fd;
    c->peer = peerCredentials(fd);
    Connection &ref = *c;
    connections_[fd] = std::move(c);
    if (!allowed(ref.peer)) {
      ProtocolError e{DiagCode::ERR_EXEC_013,
                      formatDiag(diagInfo(DiagCode::ERR_EXEC_013).format,
                                 {std::to_string(ref.peer.uid), std::to_string(ref.peer.gid), std::to_string(ref.peer.pid)})};
      refuse(ref, e, /*close=*/true);
    }
  }
}

void AgentServer::refuse(Connection &c, const ProtocolError &e, bool close) {
  agent::Response r;
  addError(r, e);
  ++refusals_[diagInfo(e.code).name.str()];
  log_.warn("", "refused: " + e.message);
  if (close)
    c.closeAfterWrite = true;
  queue(c, r);
}

void AgentServer::queue(Connection &c, const agent::Response &r) {
  c.out += encodeFrame(r);
  onWritable(c);
}

void AgentServer::onWritable(Connection &c) {
  if (!sendPending(c.fd, c.out))
    c.closeAfterWrite = true;
  if (c.closeAfterWrite && c.out.empty()) {
    int fd = c.fd;
    ::close(fd);
    connections_.erase(fd); // c is gone from here on
  }
}

void AgentServer::onReadable(Connection &c) {
  if (c.closeAfterWrite)
    return;
  // No more than one frame's worth at a time: next() reports an oversized frame from its length.
  std::string in;
  bool eof = receiveAvailable(c.fd, in, options_.maxFrameBytes + kFrameHeaderBytes);
  c.decoder.append(in);
  // Whole frames first: a client may send its request and close its side in one go.
  std::string payload;
  ProtocolError error;
  for (;;) {
    FrameDecoder::Result res = c.decoder.next(payload, error);
    if (res == FrameDecoder::Result::NeedMore)
      break;
    if (res == FrameDecoder::Result::Error)
      return refuse(c, error, /*close=*/true); // the length is not trusted: no resynchronising
    int fd = c.fd;
    if (std::optional<agent::Request> req = decodeRequest(payload, error))
      queue(c, handlers_.handle(*req, c.peer));
    else
      refuse(c, error, /*close=*/false); // the frame was whole: the connection stays usable
    if (!connections_.count(fd))
      return;
  }
  if (!eof)
    return;
  // End of stream: a partial frame left is a truncated request.
  if (std::optional<ProtocolError> e = c.decoder.finish())
    return refuse(c, *e, /*close=*/true);
  c.closeAfterWrite = true;
  onWritable(c);
}

} // namespace msc::exec
