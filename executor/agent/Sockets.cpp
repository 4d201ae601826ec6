// Listening sockets, peer credentials and non-blocking reads and writes for the agent (Sockets.h).
#include "executor/agent/Sockets.h"

#include "executor/host/Sys.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netdb.h>
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

int listenTcp(const std::string &host, unsigned port, std::string &error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo *found = nullptr;
  std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    error = "'" + host + "': " + ::gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  error = "'" + host + "' has no address";
  // The first address the name resolves to that binds: one socket, one address, as advertised.
  for (addrinfo *a = found; a && fd < 0; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) {
      error = errnoText(errno);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, 16) != 0) {
      error = errnoText(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(found);
  return fd;
}

std::string localAddress(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getsockname(fd, reinterpret_cast<sockaddr *>(&a), &len) != 0)
    return {};
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (::getnameinfo(reinterpret_cast<sockaddr *>(&a), len, host, sizeof host, port, sizeof port,
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    return {};
  return a.ss_family == AF_INET6 ? "[" + std::string(host) + "]:" + port : std::string(host) + ":" + port;
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
