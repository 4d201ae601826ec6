// Listening sockets, peer credentials and non-blocking reads and writes for the agent (Sockets.h).
#include "executor/agent/Sockets.h"

#include "executor/host/Sys.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

namespace msc::exec {

int listenUnix(const std::string &path, mode_t mode, std::string &error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) {
    error = "the path is longer than " + std::to_string(sizeof addr.sun_path - 1) + " bytes";
    return -1;
  }
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errnoText(errno);
    return -1;
  }
  // A socket file left by a dead agent is replaced; a live agent is not.
  if (pathExists(path)) {
    int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    bool live = ::connect(probe, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    ::close(probe);
    if (live) {
      error = "another agent is listening there";
      ::close(fd);
      return -1;
    }
    ::unlink(path.c_str());
  }
  mode_t old = ::umask(~mode & 0777); // the socket is born with `mode`, never wider
  int rc = ::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr);
  int err = errno;
  ::umask(old);
  if (rc != 0 || ::chmod(path.c_str(), mode) != 0 || ::listen(fd, 64) != 0) {
    error = errnoText(rc != 0 ? err : errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int listenLoopback(unsigned port, std::string &error) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    error = errnoText(errno);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<sockaddr *>(&a), sizeof a) != 0 || ::listen(fd, 16) != 0) {
    error = errnoText(errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

PeerCredentials peerCredentials(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len);
  PeerCredentials peer{cred.pid, cred.uid, cred.gid, {}};
  gid_t groups[256];
  socklen_t glen = sizeof groups;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) == 0)
    peer.groups.assign(groups, groups + glen / sizeof(gid_t));
  return peer;
}

bool receiveAvailable(int fd, std::string &in, size_t limit) {
  char buf[65536];
  while (in.size() <= limit) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return false;
    if (n <= 0)
      return true;
    in.append(buf, static_cast<size_t>(n));
  }
  return false;
}

bool sendPending(int fd, std::string &pending) {
  while (!pending.empty()) {
    ssize_t n = ::send(fd, pending.data(), pending.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
      return true;
    if (n < 0) {
      pending.clear();
      return false;
    }
    pending.erase(0, static_cast<size_t>(n));
  }
  return true;
}

} // namespace msc::exec
