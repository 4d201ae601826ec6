// The agent's sockets: listening on a Unix path or a TCP port, who is on the other end of
// an accepted Unix connection (SO_PEERCRED, SO_PEERGROUPS), non-blocking reads and writes.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace msc::exec {

struct PeerCredentials {
  pid_t pid = 0;
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups; // supplementary groups
};

// A non-blocking, close-on-exec listening socket, or -1 with `error`. A Unix socket is born with
// `mode`, never wider; a socket file left by a dead agent is replaced, a live agent's is not.
int listenUnix(const std::string &path, mode_t mode, std::string &error);
// A TCP socket on the first address `host` (a name or a numeric address) resolves to; port 0: one
// the kernel picks (localAddress says which).
int listenTcp(const std::string &host, unsigned port, std::string &error);
// "HOST:PORT" ("[V6]:PORT") of a bound socket, numeric; empty when it has none.
std::string localAddress(int fd);
PeerCredentials peerCredentials(int fd);
// Appends what the socket holds now to `in`, without blocking, until `in` holds more than `limit`
// bytes (the rest stays in the socket). True at the end of the stream: the peer closed its side, or
// the connection failed.
bool receiveAvailable(int fd, std::string &in, size_t limit);
// Sends what `pending` holds without blocking and erases what went out; what the socket cannot take
// now stays for its next POLLOUT. False (and `pending` cleared) when the peer is gone.
bool sendPending(int fd, std::string &pending);

} // namespace msc::exec
